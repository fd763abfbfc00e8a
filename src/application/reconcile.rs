//! The level-triggered reconciler: rebuild the agenda from the board, decide,
//! persist the status, audit each step.

mod journal;
mod preview;
pub(super) mod status_write;
mod team;

use std::sync::Arc;

use self::status_write::with_previous;
use super::index_cache::IndexCache;
use super::nudges::Nudges;
use super::ports::{PortError, Ports, StatusStore, StoredStatus};
use super::queue::Trigger;
use crate::domain::agenda::{Agenda, TeamIndex};
use crate::domain::audit::AuditSource;
use crate::domain::decision::staleness_diagnostics;
use crate::domain::names::{normalize_member_name, MemberName, TeamName};
use crate::domain::nudge::OutboxItem;
use crate::domain::nudge_suppression::{self, SuppressedNudge, SuppressionHistory};
use crate::domain::recovery::Recovery;
use crate::domain::status::{MemberStatus, ReconciledBy, Shadow};
use crate::domain::status_assembly::{assemble, grant_token, StatusInputs, TokenGrant};
use crate::domain::team::TeamSnapshot;
use crate::domain::time::{format_iso, EpochMs};

/// Why a use case failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkSyncError {
    /// A caller passed an unusable argument.
    #[error("invalid {what}: {reason}")]
    InvalidArgument {
        /// Which argument.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading or writing a store failed.
    #[error("store IO failed: {0}")]
    Io(#[from] PortError),
    /// The team is being deleted (`prepareTeamDeletion`); no new work for it.
    #[error("team {0} is being deleted")]
    TeamQuiesced(String),
}

impl From<std::io::Error> for WorkSyncError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(PortError::Io(error))
    }
}

/// A team name from the caller, checked (`invalid teamName: ...` otherwise).
pub fn team_name(name: &str) -> Result<TeamName, WorkSyncError> {
    TeamName::parse(name).map_err(|e| WorkSyncError::InvalidArgument {
        what: "teamName",
        reason: e.to_string(),
    })
}

/// A member name from the caller, checked (`invalid memberName: ...` otherwise).
pub fn member_name(name: &str) -> Result<MemberName, WorkSyncError> {
    MemberName::parse(name).map_err(|e| WorkSyncError::InvalidArgument {
        what: "memberName",
        reason: e.to_string(),
    })
}

/// What `getStatus` read.
#[derive(Debug)]
pub(crate) struct StatusRead {
    /// The status returned to the caller.
    pub status: MemberStatus,
    /// True when `status` is a stale stored one (its diagnostics say why)
    /// that the queue should refresh with a `manual_refresh`.
    pub queue_refresh: bool,
    /// True when `status` was reconciled and persisted by this read: like
    /// every persisted reconcile, it is then due for nudge planning.
    pub reconciled: bool,
}

impl StatusRead {
    /// A status that was just reconciled and persisted.
    fn reconciled(status: MemberStatus) -> Self {
        Self {
            status,
            queue_refresh: false,
            reconciled: true,
        }
    }

    /// A status computed without anything stored to refresh.
    fn unpersisted(status: MemberStatus) -> Self {
        Self {
            status,
            queue_refresh: false,
            reconciled: false,
        }
    }
}

/// Member store folders a team may hold before a name off its roster stops
/// getting one (twice the roster cap of the team reader): past it such a
/// name is answered with an unpersisted status.
pub const MAX_MEMBER_STORES: usize = 512;

/// Whether `member` of `snapshot`'s team may have a store folder (its
/// status, journal and metrics): only in an existing team folder (with or
/// without its config.json). As in the
/// app, any name that is safe on disk gets one (a reserved name like `user`,
/// one off the roster), but a name that is neither on the roster nor already
/// stored gets one only while the team holds fewer than
/// [`MAX_MEMBER_STORES`]: agents can make names up at will, and the store
/// must stay bounded.
pub(super) fn may_store_member(
    store: &dyn StatusStore,
    team: &TeamName,
    snapshot: &TeamSnapshot,
    member: &MemberName,
) -> Result<bool, PortError> {
    if !snapshot.folder_found {
        // No team dir to write into: answer without creating one (and
        // without resurrecting a deleted team's directory). A folder whose
        // config.json is missing is written into, as the app does.
        return Ok(false);
    }
    if snapshot.member(&normalize_member_name(member)).is_some() {
        return Ok(true);
    }
    // A legacy status lives in the team's shared file: the member's own
    // folder does not exist yet, so it counts against the cap.
    if matches!(
        store.read(team, member)?,
        StoredStatus::Current(_) | StoredStatus::Quarantined { .. }
    ) {
        return Ok(true);
    }
    Ok(store.member_count(team)? < MAX_MEMBER_STORES)
}

/// Source tag of reconciler audit events.
const SOURCE: AuditSource = AuditSource::Reconciler;

/// How one reconcile differs from a plain one.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct ReconcileOptions<'a> {
    /// Reset nudge suppression (`getStatus({ forceNudge: true })`).
    pub force_nudge: bool,
    /// The targeted recovery the reconcile was queued for.
    pub recovery: Option<&'a Recovery>,
}

/// Whether building a status may touch the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Effects<'a> {
    /// Journal what happened and issue a report token (every real reconcile)
    /// to this member of this team.
    Record(&'a TeamName, &'a MemberName),
    /// Neither: a preview writes nothing and hands out no token.
    Withhold,
}

/// A team as [`Reconciler::preview_team`] sees it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TeamPreview {
    /// Team name as requested.
    pub team_name: String,
    /// Whether the team has a usable `config.json` (with a name).
    pub config_found: bool,
    /// What the team reader had to degrade (`team_config_invalid`, ...).
    pub diagnostics: Vec<String>,
    /// Previews of every roster member, sorted by name.
    pub statuses: Vec<MemberStatus>,
}

/// Where a reconcile gets a member's agenda from.
pub(super) trait AgendaSource {
    /// The agenda of `member`, stamped with `generated_at`.
    fn agenda_for(&self, member: &MemberName, generated_at: &str) -> Agenda;
}

impl AgendaSource for TeamIndex<'_> {
    fn agenda_for(&self, member: &MemberName, generated_at: &str) -> Agenda {
        TeamIndex::agenda_for(self, member, generated_at)
    }
}

/// Agendas of one snapshot from the reconciler's kept team indexes.
pub(super) struct KeptAgendas<'a> {
    indexes: &'a IndexCache,
    snapshot: &'a TeamSnapshot,
}

impl AgendaSource for KeptAgendas<'_> {
    fn agenda_for(&self, member: &MemberName, generated_at: &str) -> Agenda {
        self.indexes.agenda_for(self.snapshot, member, generated_at)
    }
}

/// Reconciles members, takes their reports and answers status queries.
pub struct Reconciler {
    pub(super) ports: Arc<Ports>,
    /// Plans the nudge of a status a rejected report reconciled.
    pub(super) planner: Nudges,
    /// Task indexes kept between reconciles (one member's reconcile costs
    /// the change since the last one, not the board).
    indexes: IndexCache,
}

impl Reconciler {
    /// Wires the use cases to their ports.
    pub fn new(ports: Arc<Ports>) -> Self {
        Self {
            planner: Nudges::new(ports.clone()),
            ports,
            indexes: IndexCache::default(),
        }
    }

    /// Agendas of `snapshot` through the kept team indexes.
    pub(super) fn agendas<'a>(&'a self, snapshot: &'a TeamSnapshot) -> KeptAgendas<'a> {
        KeptAgendas {
            indexes: &self.indexes,
            snapshot,
        }
    }

    /// Reconciles one member now and persists the result.
    pub fn refresh_status(
        &self,
        team: &TeamName,
        member: &MemberName,
        by: ReconciledBy,
        triggers: &[Trigger],
    ) -> Result<MemberStatus, WorkSyncError> {
        self.refresh_status_with(team, member, by, triggers, false, None)
    }

    /// [`Reconciler::refresh_status`]; `force_nudge` resets nudge suppression,
    /// `recovery` is the targeted recovery the reconcile was queued for (it
    /// lands in `shadow.recovery`, where the nudge planner reads it).
    pub(crate) fn refresh_status_with(
        &self,
        team: &TeamName,
        member: &MemberName,
        by: ReconciledBy,
        triggers: &[Trigger],
        force_nudge: bool,
        recovery: Option<&Recovery>,
    ) -> Result<MemberStatus, WorkSyncError> {
        let snapshot = self.ports.teams.load(team);
        let options = ReconcileOptions {
            force_nudge,
            recovery,
        };
        let agendas = self.agendas(&snapshot);
        self.reconcile_with(team, &snapshot, &agendas, member, by, triggers, options)
    }

    /// The stored status; stale ones are refreshed.
    /// `force_nudge` reconciles now and resets nudge suppression.
    pub fn get_status(
        &self,
        team: &TeamName,
        member: &MemberName,
        force_nudge: bool,
    ) -> Result<MemberStatus, WorkSyncError> {
        self.read_status(team, member, force_nudge)
            .map(|read| read.status)
    }

    /// [`Reconciler::get_status`], saying whether the status returned is a
    /// stale stored one the queue should refresh.
    pub(crate) fn read_status(
        &self,
        team: &TeamName,
        member: &MemberName,
        force_nudge: bool,
    ) -> Result<StatusRead, WorkSyncError> {
        if force_nudge {
            // The app's refresh route with `forceNudge`: a plain request
            // reconcile (no trigger reasons) that resets nudge suppression.
            return self
                .refresh_status_with(team, member, ReconciledBy::Request, &[], true, None)
                .map(StatusRead::reconciled);
        }
        let now = self.ports.clock.now_ms();
        let stored = self.ports.store.read(team, member)?;
        let Some(mut status) = stored.into_status() else {
            return Ok(StatusRead::unpersisted(
                self.unpersisted_status(team, member, now),
            ));
        };
        let stale = staleness_diagnostics(&status, now);
        if stale.iter().any(|s| s.refreshes_at_once()) {
            match self.refresh_status(
                team,
                member,
                ReconciledBy::Request,
                &[Trigger::ManualRefresh],
            ) {
                Ok(fresh) => return Ok(StatusRead::reconciled(fresh)),
                // The stored status plus why it is stale; the queue retries.
                Err(WorkSyncError::Io(_)) => {}
                Err(other) => return Err(other),
            }
        }
        // A stale caught-up status is refreshed through the queue (Engine::get_status).
        status
            .diagnostics
            .extend(stale.iter().map(|s| s.as_str().to_string()));
        Ok(StatusRead {
            status,
            queue_refresh: stale.iter().any(|s| s.queues_refresh()),
            reconciled: false,
        })
    }

    /// Whether a status of `member` may be written (with its journal and
    /// metrics): [`may_store_member`].
    pub(super) fn may_persist(
        &self,
        team: &TeamName,
        snapshot: &TeamSnapshot,
        member: &MemberName,
    ) -> Result<bool, WorkSyncError> {
        Ok(may_store_member(
            self.ports.store.as_ref(),
            team,
            snapshot,
            member,
        )?)
    }

    /// A status computed from the board but not written (no stored status yet).
    pub(super) fn unpersisted_status(
        &self,
        team: &TeamName,
        member: &MemberName,
        now: EpochMs,
    ) -> MemberStatus {
        self.unpersisted_from(team, &self.ports.teams.load(team), member, now)
    }

    /// [`Reconciler::unpersisted_status`] from a snapshot the caller already read.
    pub(super) fn unpersisted_from(
        &self,
        team: &TeamName,
        snapshot: &TeamSnapshot,
        member: &MemberName,
        now: EpochMs,
    ) -> MemberStatus {
        let agenda = self.agendas(snapshot).agenda_for(member, &format_iso(now));
        // Nothing stored: nothing to journal; the token comes after the
        // snapshot's diagnostic, as the app lists them, and only into an
        // existing team folder (its secret must not create one).
        let token = if snapshot.folder_found {
            self.grant_token(team, member, &agenda, now)
        } else {
            TokenGrant::Withheld
        };
        let mut status = self.board_status(snapshot, member, agenda, StoredStatus::Missing, now);
        status
            .diagnostics
            .push("status_snapshot_not_persisted".into());
        grant_token(&mut status, token);
        status.shadow = Some(Shadow::quiet(ReconciledBy::Request));
        status
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn reconcile_with(
        &self,
        team_name: &TeamName,
        snapshot: &TeamSnapshot,
        index: &dyn AgendaSource,
        member: &MemberName,
        by: ReconciledBy,
        triggers: &[Trigger],
        options: ReconcileOptions<'_>,
    ) -> Result<MemberStatus, WorkSyncError> {
        let now = self.ports.clock.now_ms();
        if !self.may_persist(team_name, snapshot, member)? {
            return Ok(self.unpersisted_from(team_name, snapshot, member, now));
        }
        let agenda = self.start_reconcile(index, team_name, member, now, triggers);
        let prepared = self.prepare(
            team_name, member, snapshot, agenda, now, by, triggers, options,
        );
        let mut found = Found::default();
        let status = self.ports.store.update(
            team_name,
            member,
            Box::new(|previous| {
                let reconciled = self.reconciled_status(prepared, previous);
                found = Found::of(&reconciled);
                reconciled.status
            }),
        )?;
        self.after_write(team_name, member, &status, &found, now);
        Ok(status)
    }

    /// What a reconcile of `agenda`'s member reads before it takes the
    /// member's status lock: the status inputs and, when the status can be
    /// a suppression candidate, the member's outbox.
    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &self,
        team: &TeamName,
        member: &MemberName,
        snapshot: &TeamSnapshot,
        agenda: Agenda,
        now: EpochMs,
        by: ReconciledBy,
        triggers: &[Trigger],
        options: ReconcileOptions<'_>,
    ) -> Prepared {
        let mut inputs = self.status_inputs(
            snapshot,
            member,
            agenda,
            now,
            by,
            triggers,
            Effects::Record(team, member),
        );
        inputs.recovery = options.recovery.cloned();
        let outbox = (!options.force_nudge && inputs.can_need_sync())
            .then(|| self.ports.outbox.member_items(team, member).ok())
            .flatten();
        Prepared {
            inputs,
            outbox,
            force_nudge: options.force_nudge,
        }
    }

    /// The status a reconcile writes, from what it read and the stored
    /// status (under the member's status lock: no store call here):
    /// assembled, then suppressed.
    fn reconciled_status(&self, prepared: Prepared, previous: StoredStatus) -> Reconciled {
        let history = previous.status().map(SuppressionHistory::of);
        let previous_evaluated_at = evaluated_at_of(&previous);
        let (inputs, legacy) = with_previous(prepared.inputs, previous);
        let mut status = assemble(inputs);
        let suppressed = self.apply_suppression(
            &mut status,
            history.as_ref(),
            prepared.force_nudge,
            prepared.outbox.as_deref(),
        );
        Reconciled {
            status,
            suppressed,
            previous_evaluated_at,
            legacy,
        }
    }

    /// Journals what a reconcile's locked update found beside its status
    /// (a legacy fallback read), then records its metrics and journals the
    /// decision ([`Reconciler::finish_reconcile`]).
    fn after_write(
        &self,
        team: &TeamName,
        member: &MemberName,
        status: &MemberStatus,
        found: &Found,
        now: EpochMs,
    ) {
        if found.legacy {
            self.journal_legacy_read(team, member, now);
        }
        self.record_metrics(team, member, status);
        self.finish_reconcile(
            team,
            member,
            status,
            found.previous_evaluated_at.as_deref(),
            found.suppressed.as_ref(),
            now,
        );
    }

    /// A status built from `snapshot`'s board alone with nothing stored
    /// (no journal line, no token).
    fn board_status(
        &self,
        snapshot: &TeamSnapshot,
        member: &MemberName,
        agenda: Agenda,
        previous: StoredStatus,
        now: EpochMs,
    ) -> MemberStatus {
        let inputs = self.status_inputs(
            snapshot,
            member,
            agenda,
            now,
            ReconciledBy::Request,
            &[],
            Effects::Withhold,
        );
        assemble(with_previous(inputs, previous).0)
    }

    /// Nudge suppression (see [`nudge_suppression`]) over the member's
    /// outbox, read before the status lock (`None` when it could not be
    /// read: nothing is suppressed).
    fn apply_suppression(
        &self,
        status: &mut MemberStatus,
        history: Option<&SuppressionHistory>,
        force_nudge: bool,
        outbox: Option<&[OutboxItem]>,
    ) -> Option<SuppressedNudge> {
        let count = nudge_suppression::reset_count(status, history, force_nudge)?;
        nudge_suppression::suppress(status, &count, outbox?)
    }
}

/// What a reconcile read before taking the member's status lock.
#[derive(Debug)]
struct Prepared {
    /// Every status input but the stored status.
    inputs: StatusInputs,
    /// The member's outbox, read when the status can be a suppression candidate.
    outbox: Option<Vec<OutboxItem>>,
    /// Reset nudge suppression at this evaluation.
    force_nudge: bool,
}

/// A status a reconcile assembled under the lock, with what it found.
struct Reconciled {
    status: MemberStatus,
    suppressed: Option<SuppressedNudge>,
    previous_evaluated_at: Option<String>,
    legacy: bool,
}

/// What a reconcile's locked update found beside the status it wrote, for
/// the journal after the lock.
#[derive(Default)]
struct Found {
    /// The suppression decided on the status.
    suppressed: Option<SuppressedNudge>,
    /// When the replaced status was evaluated.
    previous_evaluated_at: Option<String>,
    /// The stored status was read from the legacy team file.
    legacy: bool,
}

impl Found {
    fn of(reconciled: &Reconciled) -> Self {
        Self {
            suppressed: reconciled.suppressed.clone(),
            previous_evaluated_at: reconciled.previous_evaluated_at.clone(),
            legacy: reconciled.legacy,
        }
    }
}

/// When a stored status was evaluated, if one is readable.
fn evaluated_at_of(previous: &StoredStatus) -> Option<String> {
    previous
        .status()
        .map(|status| status.evaluated_at.as_str().to_string())
}
/// Names of the roster members a team-wide pass covers: not removed, valid
/// names, sorted and deduplicated by normalized name.
fn roster_names(snapshot: &TeamSnapshot) -> Vec<MemberName> {
    let mut members: Vec<MemberName> = snapshot
        .members
        .iter()
        .filter(|m| !m.is_removed())
        .filter_map(|m| m.store_name())
        .collect();
    members.sort_by_key(|name| normalize_member_name(name));
    members.dedup_by_key(|name| normalize_member_name(name));
    members
}
