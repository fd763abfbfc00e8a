//! The small traits the use cases run over; infrastructure implements them,
//! tests swap in fakes.

use std::sync::Arc;
use std::time::Duration;

use super::busy::BusySignals;
use super::host::{Host, HostRelay};
use super::log::LogSink;
use super::runtime_state::RuntimeStates;
use crate::domain::decision::RuntimeActivity;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::status::MemberStatus;
use crate::domain::team::TeamSnapshot;
use crate::domain::time::EpochMs;
use crate::domain::token::TokenCheck;

/// Failures of a port.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// The file system failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Every port of one addon instance: built once by the composition root and
/// shared (as `Arc<Ports>`) by the reconciler, the nudge use cases and the
/// engine, so all of them see the same stores, clock and in-memory signals.
pub struct Ports {
    /// What every timestamp, lease, token expiry and queue delay is read
    /// from (a fixed one under `options.clock`).
    pub clock: Arc<dyn Clock>,
    /// Reads a team's roster and board, once per reconcile or drain.
    pub teams: Arc<dyn TeamSource>,
    /// Resolves the members a `task` change event touches.
    pub impacts: Arc<dyn TaskImpactSource>,
    /// Reads and rewrites each member's `status.json` (under the member lock).
    pub store: Arc<dyn StatusStore>,
    /// Appends one journal line per step of a reconcile, report or queue run.
    pub journal: Arc<dyn AuditJournal>,
    /// Issues a token on each persisted reconcile and verifies it on `report`.
    pub tokens: Arc<dyn ReportTokens>,
    /// Counts status and report events per team for `getMetrics`.
    pub metrics: Arc<dyn MetricsStore>,
    /// Holds report intents the controller recorded until `replayPendingReports`.
    pub intents: Arc<dyn ReportIntentStore>,
    /// Holds planned nudges until the dispatcher claims and delivers them.
    pub outbox: Arc<dyn OutboxStore>,
    /// Writes a claimed nudge into the member's inbox file.
    pub inbox: Arc<dyn InboxSink>,
    /// Alerts the dispatcher checks right before delivering a nudge.
    pub watchdog: Arc<dyn WatchdogJournal>,
    /// What `setTeamRuntimeState` last reported, per team.
    pub runtime: Arc<RuntimeStates>,
    /// Tool calls in flight per member (a busy member is not nudged).
    pub busy: Arc<BusySignals>,
    /// Receives background failures for `onLog` (dropped while none is connected).
    pub log: Arc<dyn LogSink>,
    /// The host app's answers at decision time (none while none is connected).
    pub host: Arc<HostRelay>,
    /// Deletes a team's stored state when `prepareTeamDeletion` admits it.
    pub purge: Arc<dyn TeamPurge>,
}

impl Ports {
    /// Runtime activity of a member at decision time: the host's
    /// `isTeamActive` / `isMemberActive` answers where it gives them, else
    /// what `setTeamRuntimeState` last reported. The member is asked about
    /// only when its team is active, as the app's lifecycle port is.
    pub fn activity(&self, team_name: &TeamName, member_name: &MemberName) -> RuntimeActivity {
        let team_active = self.team_active(team_name);
        RuntimeActivity {
            team_active,
            member_active: team_active && self.member_active(team_name, member_name),
        }
    }

    /// Whether a member's runtime is active at decision time, asked only
    /// once its team is (the member half of [`Ports::activity`]).
    pub fn member_active(&self, team_name: &TeamName, member_name: &MemberName) -> bool {
        self.host
            .member_active(team_name, member_name)
            .unwrap_or_else(|| self.runtime.activity(team_name, member_name).member_active)
    }

    /// Whether a team's runtime is active at decision time (the team half of
    /// [`Ports::activity`]).
    pub fn team_active(&self, team_name: &TeamName) -> bool {
        self.host
            .team_active(team_name)
            .unwrap_or_else(|| self.runtime.team_active(team_name))
    }
}

/// The app clock. Leases and tokens are timed by it only.
pub trait Clock: Send + Sync {
    /// Now, in epoch milliseconds.
    fn now_ms(&self) -> EpochMs;

    /// Time since a fixed point of this clock that never goes back (wall
    /// clock changes do not move it): what budgets and ages within one pass
    /// are measured in.
    fn monotonic(&self) -> Duration;
}

/// Reads a consistent snapshot of a team from wherever the team lives.
pub trait TeamSource: Send + Sync {
    /// Loads the team; missing or broken inputs degrade to defaults plus diagnostics.
    fn load(&self, team_name: &TeamName) -> TeamSnapshot;
    /// Names of the active roster members (roster only, no tasks); empty for
    /// a missing or deleted team. A roster name unsafe as a store folder is
    /// not listed: nothing can be reconciled for it.
    fn active_members(&self, team_name: &TeamName) -> Vec<MemberName>;

    /// Loads only what identifies the roster (config and members meta), no
    /// tasks or board: enough to check who is an active member.
    fn load_roster(&self, team_name: &TeamName) -> TeamSnapshot {
        self.load(team_name)
    }
}

/// A stored status and how it was found.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredStatus {
    /// No status stored for the member yet (never reconciled, or purged).
    Missing,
    /// The member's own status file.
    Current(MemberStatus),
    /// Found only in the legacy v1 team-level file.
    Legacy(MemberStatus),
    /// The member file was corrupt or from a future version and was moved
    /// aside (by [`StatusStore::read`]; [`StatusStore::peek`] leaves it).
    Quarantined {
        /// Why (`invalid_json`, `future_schema_version:3`, ...).
        reason: String,
    },
}

impl StoredStatus {
    /// The status, wherever it came from, borrowed.
    pub fn status(&self) -> Option<&MemberStatus> {
        match self {
            Self::Missing | Self::Quarantined { .. } => None,
            Self::Current(s) | Self::Legacy(s) => Some(s),
        }
    }

    /// The status, wherever it came from.
    pub(crate) fn into_status(self) -> Option<MemberStatus> {
        match self {
            Self::Missing | Self::Quarantined { .. } => None,
            Self::Current(s) | Self::Legacy(s) => Some(s),
        }
    }
}

/// What [`StatusStore::update`] builds a member's status with: the stored
/// status in, the status to write out.
pub type StatusBuild<'a> = Box<dyn FnOnce(StoredStatus) -> MemberStatus + 'a>;

/// Per-member status persistence.
pub trait StatusStore: Send + Sync {
    /// Reads the stored status of a member (corrupt files are quarantined and read as missing).
    fn read(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
    ) -> Result<StoredStatus, PortError>;
    /// [`StatusStore::read`] without side effects: nothing is moved, locked
    /// or created; a bad file reads as [`StoredStatus::Quarantined`] with the
    /// reason a writing read would quarantine it for, and stays in place.
    fn peek(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
    ) -> Result<StoredStatus, PortError>;
    /// Read-modify-write of a member's status under the member's store lock:
    /// `build` gets what is stored and returns what to write. It is called
    /// once, so it may move what it builds from (an agenda of hundreds of
    /// items) instead of copying it.
    fn update(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        build: StatusBuild<'_>,
    ) -> Result<MemberStatus, PortError>;

    /// How many member folders the team's store holds (real folders only),
    /// so names off the roster can be given a store only up to a cap.
    fn member_count(&self, team_name: &TeamName) -> Result<usize, PortError>;

    /// [`StatusStore::update`] of several members of one team, made durable
    /// together (one group commit where the store can): each member's lock
    /// is held from its read until every status is written, and each stored
    /// status is afterwards either the old or the new one, also after a
    /// crash. `build` gets the member and what is stored for it; results
    /// come in `members` order.
    fn update_all(
        &self,
        team_name: &TeamName,
        members: &[&MemberName],
        build: &mut dyn FnMut(&MemberName, StoredStatus) -> MemberStatus,
    ) -> Result<Vec<MemberStatus>, PortError> {
        members
            .iter()
            .map(|member| self.update(team_name, member, Box::new(|stored| build(member, stored))))
            .collect()
    }
}

/// One audit journal event.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    /// What the line records (`event`).
    pub kind: crate::domain::audit::AuditKind,
    /// Which part of the addon wrote the line (`source`).
    pub source: crate::domain::audit::AuditSource,
    /// Team whose journal gets the line.
    pub team_name: TeamName,
    /// Member whose journal gets the line (normalized), as the use case
    /// names it: a checked name where it has one, else the name as an
    /// outbox item or a spool payload stored it, or a member folder's key
    /// (a line is still written for those; its folder is the name's
    /// [`member_key`](crate::domain::names::member_key), safe whatever the name).
    pub member_name: String,
    /// When it happened, by the instance clock.
    pub at_ms: EpochMs,
    /// The status or agenda diagnostics at that step.
    pub diagnostics: Vec<String>,
    /// Kind-specific fields, written as they are (e.g. `triggerReasons`).
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// Append-only audit trail. Audit failures never fail the use case.
pub trait AuditJournal: Send + Sync {
    /// Appends `event` to the trail; a failure is the journal's to report,
    /// never the caller's.
    fn record(&self, event: AuditEvent);

    /// Records events of one member and moment, in order; one write where the
    /// store can (a drain journals two lines per event).
    fn record_all(&self, events: Vec<AuditEvent>) {
        for event in events {
            self.record(event);
        }
    }

    /// Records, in order, the two lines of each drained turn-settled event
    /// in `turns`, all of them `member`'s of `team`: the lines
    /// [`SettledTurnLines::events`] gives, with one write where the store
    /// can. A store may write them straight from their fields, as long as
    /// it writes the same lines.
    fn record_settled_turns(&self, team: &TeamName, member: &str, turns: &[SettledTurnLines<'_>]) {
        let events = turns.iter().flat_map(|turn| turn.events(team, member));
        self.record_all(events.collect());
    }
}

/// A drained turn-settled event's two journal lines, by their fields: the
/// claim (`turn_settled_claimed` at the claim's time, with the spool file)
/// and its outcome (`outcome` at `at_ms`, with the event's time and
/// `reason`). A drain journals two lines per Stop event; a line built as an
/// [`AuditEvent`] cost a map of owned keys and values per line, and its drop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettledTurnLines<'a> {
    /// The outcome line's kind (`turn_settled_resolved|ignored|unresolved`).
    pub outcome: crate::domain::audit::AuditKind,
    /// The outcome's cause; none for a resolved event, whose reason is the
    /// provider (the claim's reason is always the provider), as the app's.
    pub reason: Option<String>,
    /// When the spool file was claimed (the claim line's time).
    pub claimed_at_ms: EpochMs,
    /// When the outcome was decided (the outcome line's time).
    pub at_ms: EpochMs,
    /// The runtime that emitted the event.
    pub provider: &'static str,
    /// The event's `sourceId`.
    pub source_id: String,
    /// The claimed spool file's name.
    pub spool_file: &'a str,
    /// When the turn settled (`recordedAt`).
    pub recorded_at: String,
}

impl SettledTurnLines<'_> {
    /// Which part of the addon writes these lines.
    pub const SOURCE: crate::domain::audit::AuditSource =
        crate::domain::audit::AuditSource::RuntimeTurnSettledIngestor;

    /// The two lines as events of `member` of `team`: the claim, then the
    /// outcome, each with `provider` and `sourceId`, and in this order the
    /// claim's reason and spool file, the outcome's time and reason.
    pub fn events(&self, team: &TeamName, member: &str) -> [AuditEvent; 2] {
        use serde_json::Value;
        let entry = |kind, at_ms, fields: [(&str, &str); 2]| {
            // Four fields each: room for them at once.
            let mut metadata = serde_json::Map::with_capacity(4);
            metadata.insert("provider".into(), Value::from(self.provider));
            metadata.insert("sourceId".into(), Value::from(self.source_id.as_str()));
            for (key, value) in fields {
                metadata.insert(key.into(), Value::from(value));
            }
            AuditEvent {
                kind,
                source: Self::SOURCE,
                team_name: team.clone(),
                member_name: member.to_string(),
                at_ms,
                diagnostics: vec![],
                metadata,
            }
        };
        let claimed = [("reason", self.provider), ("spoolFile", self.spool_file)];
        let reason = self.reason.as_deref().unwrap_or(self.provider);
        let outcome = [
            ("recordedAt", self.recorded_at.as_str()),
            ("reason", reason),
        ];
        [
            entry(
                crate::domain::audit::AuditKind::TurnSettledClaimed,
                self.claimed_at_ms,
                claimed,
            ),
            entry(self.outcome, self.at_ms, outcome),
        ]
    }
}

/// Issues and verifies report tokens bound to team, member and fingerprint.
pub trait ReportTokens: Send + Sync {
    /// A token for `member` of `team` and `fingerprint`, expiring at `expires_ms`.
    fn issue(
        &self,
        team: &TeamName,
        member: &MemberName,
        fingerprint: &str,
        expires_ms: EpochMs,
    ) -> Result<String, PortError>;
    /// Checks `token` (signature in constant time, then exact claims and
    /// expiry). An error means the team secret could not be read: that is an
    /// IO failure to report, not a verdict on the token.
    fn verify(
        &self,
        token: Option<&str>,
        team: &TeamName,
        member: &MemberName,
        fingerprint: &str,
        now_ms: EpochMs,
    ) -> Result<TokenCheck, PortError>;
}

/// The team's metrics index (`indexes/metrics.json`).
pub trait MetricsStore: Send + Sync {
    /// Adds the events of one status write under the index lock.
    fn record(
        &self,
        status: &MemberStatus,
        events: Vec<crate::domain::metrics::MetricEvent>,
    ) -> Result<(), PortError>;
    /// [`MetricsStore::record`] of several status writes of one team, in
    /// order, with one index write where the store can.
    fn record_all(
        &self,
        writes: Vec<(&MemberStatus, Vec<crate::domain::metrics::MetricEvent>)>,
    ) -> Result<(), PortError> {
        writes
            .into_iter()
            .try_for_each(|(status, events)| self.record(status, events))
    }
    /// Reads the index (missing or corrupt: empty; a corrupt one is moved
    /// aside). Shared, not copied: a store may answer every read of the
    /// same content with the one index it keeps.
    fn read(
        &self,
        team_name: &TeamName,
    ) -> Result<std::sync::Arc<crate::domain::metrics::MetricsIndex>, PortError>;
    /// Reads the index like [`MetricsStore::read`], but moves nothing: a
    /// corrupt index also reads as empty and stays where it is.
    fn peek(
        &self,
        team_name: &TeamName,
    ) -> Result<std::sync::Arc<crate::domain::metrics::MetricsIndex>, PortError>;
}

/// Lifecycle of a recorded report intent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntentStatus {
    /// Waiting for validation.
    Pending,
    /// Validated and accepted.
    Accepted,
    /// Validated and rejected.
    Rejected,
    /// Overtaken by lifecycle (member or team not running).
    Superseded,
}

/// A report recorded for later validation (`reports.json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct ReportIntent {
    pub id: String,
    pub team_name: String,
    pub member_name: String,
    /// The report request as received.
    pub request: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub status: IntentStatus,
    pub recorded_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejection_code: Option<String>,
    /// The replay's outcome code, as the app records it: `accepted` or the
    /// rejection code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_code: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retried_with_fresh_token: bool,
}

/// What [`ReportIntentStore::pending`] found.
#[derive(Debug, Default)]
pub struct PendingIntents {
    /// Pending intents, oldest first.
    pub intents: Vec<ReportIntent>,
    /// Members whose intents this call moved out of the controller's legacy
    /// `pending-reports.json` into their own files (the app journals that).
    pub migrated_members: Vec<String>,
}

/// Per-member report intents plus the team index.
pub trait ReportIntentStore: Send + Sync {
    /// Records an intent; an existing id is left as it is (idempotent).
    fn record(&self, intent: &ReportIntent) -> Result<(), PortError>;
    /// Pending intents of a team, oldest first, after migrating the
    /// controller's legacy `pending-reports.json`.
    fn pending(&self, team_name: &TeamName) -> Result<PendingIntents, PortError>;
    /// Stores the outcome of an intent.
    fn finish(&self, intent: &ReportIntent) -> Result<(), PortError>;
}

/// Which members a task change touches (read from the board on demand).
pub trait TaskImpactSource: Send + Sync {
    /// Owner, reviewers, the lead where it oversees the task, and owners of
    /// the tasks it blocks and of every open task whose `blockedBy` names it
    /// (by id or `#displayId`); `None` when the task cannot be read (route team-wide).
    fn impacted_members(&self, team_name: &TeamName, task_id: &str) -> Option<Vec<MemberName>>;
}

/// What one [`OutboxStore::claim_due`] took.
#[derive(Debug, Default)]
pub struct Claimed {
    /// The claimed items, each now held by the claimer.
    pub items: Vec<crate::domain::nudge::OutboxItem>,
    /// Member outboxes skipped because reading or claiming from them failed;
    /// the other members were still claimed from.
    pub failures: Vec<MemberFailure>,
}

/// A member outbox that could not be read or written.
#[derive(Debug)]
pub struct MemberFailure {
    /// The member's folder name (`teams/<team>/members/<key>`).
    pub member_key: String,
    /// The member's name, for the journal: the name the failed item was
    /// planned for, or the one the folder name is the key of
    /// ([`member_name_of_key`](crate::domain::names::member_name_of_key));
    /// `None` for a folder no name maps back to (a cut long key, a folder
    /// no member key spells).
    pub member_name: Option<String>,
    /// What failed; the message names the path.
    pub error: PortError,
}

/// Per-member durable nudges (`outbox.json`) plus the team index.
pub trait OutboxStore: Send + Sync {
    /// Puts a planned nudge into the member's outbox (`ensurePending`).
    fn ensure(
        &self,
        team: &TeamName,
        member: &MemberName,
        planned: &crate::domain::nudge::PlannedNudge,
        now: EpochMs,
    ) -> Result<
        (
            crate::domain::nudge::OutboxItem,
            crate::domain::nudge::EnsureOutcome,
        ),
        PortError,
    >;
    /// Every item of a member.
    fn member_items(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<Vec<crate::domain::nudge::OutboxItem>, PortError>;
    /// Claims up to `limit` claimable items of a team (oldest due first),
    /// each under its member file lock, so two dispatchers never hold one claim.
    /// A member outbox that cannot be read or claimed from is skipped and
    /// reported in [`Claimed::failures`]; `Err` when the team's members
    /// cannot be listed at all.
    fn claim_due(
        &self,
        team: &TeamName,
        claimed_by: &str,
        limit: usize,
        now: EpochMs,
    ) -> Result<Claimed, PortError>;
    /// Ends a claimed attempt of an item of `team`'s outbox (the team that
    /// claimed it, whatever team the stored item names; its member as
    /// stored finds its file); `Ok(false)` when the claim was lost
    /// (generation moved on).
    fn finish(
        &self,
        team: &TeamName,
        item: &crate::domain::nudge::OutboxItem,
        end: &crate::domain::nudge::AttemptEnd,
        now: EpochMs,
    ) -> Result<bool, PortError>;
    /// Rewrites the team index from the member files (once per dispatch pass,
    /// not per transition: the member files are the truth).
    fn refresh_index(&self, team: &TeamName) -> Result<(), PortError>;
    /// Teams that have an outbox (for the dispatch scheduler); a stored
    /// team name unsafe as a folder is not listed (nothing could ever be
    /// dispatched for it).
    fn teams_with_outbox(&self) -> Vec<TeamName>;
}

/// Outcome of writing a nudge into an inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxOutcome {
    /// A new row was written.
    Inserted,
    /// The row was already there (an earlier attempt wrote it).
    AlreadyPresent,
    /// A row with this id but another payload exists; never overwritten.
    PayloadConflict,
}

/// Why an inbox write failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxFailure {
    /// Worth trying again later (lock timeout, corrupt inbox, IO); false for
    /// a missing team dir, a symlinked inbox or an invalid name.
    pub retryable: bool,
    /// The failure as text; the item's `lastError` carries it after
    /// `inbox_write_failed:` or `inbox_unavailable:`.
    pub reason: String,
}

/// Writes nudges into member inboxes.
pub trait InboxSink: Send + Sync {
    /// Delivers `item` (idempotent by its id) into the inbox of `member` of
    /// `team`: the dispatched team and the item's member as the dispatch
    /// checked it, whatever names the stored item holds.
    fn deliver(
        &self,
        team: &TeamName,
        member: &MemberName,
        item: &crate::domain::nudge::OutboxItem,
        now: EpochMs,
    ) -> Result<InboxOutcome, InboxFailure>;
}

/// Where a deleted team's stored state goes (the app's `purgeTeam`).
pub trait TeamPurge: Send + Sync {
    /// Deletes `team`'s stored member-work-sync state durably, for the
    /// generation `deletion_id` names (`config.json._backupIdentityId`)
    /// when given. Runs after the team is fenced and idle.
    fn purge_team(&self, team: &TeamName, deletion_id: Option<&str>) -> Result<(), PortError>;
}

/// The JSON files' store keeps a deleted team's state, as the app's JSON
/// store does: its files go with the team folder the app deletes.
pub(crate) struct KeepOnDeletion;

impl TeamPurge for KeepOnDeletion {
    fn purge_team(&self, _team: &TeamName, _deletion_id: Option<&str>) -> Result<(), PortError> {
        Ok(())
    }
}

/// The app watchdog's recent alerts (`stall-monitor-journal.json`).
pub trait WatchdogJournal: Send + Sync {
    /// Alerts of a team (missing or corrupt file: none); `Err` when the
    /// journal cannot be read (a FIFO or link in its place, too large, IO).
    fn alerts(
        &self,
        team: &TeamName,
    ) -> Result<Vec<crate::domain::nudge::WatchdogAlert>, PortError>;
}
