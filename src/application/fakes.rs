//! In-memory fakes of the ports, for unit tests of the use cases: a settable
//! clock, a board held in memory, a status store that can fail or hold an
//! update, plain-text report tokens, report intents and an outbox in memory,
//! and recorders for the journal and the log. Nothing touches disk.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::busy::BusySignals;
use super::engine::{Engine, EngineDeps};
use super::log::{LogCode, LogEntry, LogSink};
use super::nudges::Nudges;
use super::ports::{
    AuditEvent, AuditJournal, Claimed, Clock, InboxFailure, InboxOutcome, InboxSink, IntentStatus,
    MetricsStore, OutboxStore, PendingIntents, PortError, Ports, ReportIntent, ReportIntentStore,
    ReportTokens, StatusBuild, StatusStore, StoredStatus, TaskImpactSource, TeamSource,
    WatchdogJournal,
};
use super::reconcile::Reconciler;
use super::runtime_state::RuntimeStates;
use super::turn_settled::SettledTurns;
use crate::domain::metrics::{MetricEvent, MetricsIndex};
use crate::domain::names::{normalize_member_name, MemberName, TeamName};
use crate::domain::nudge::{
    ensure_pending, AttemptEnd, EnsureOutcome, OutboxItem, PlannedNudge, WatchdogAlert,
};
use crate::domain::status::MemberStatus;
use crate::domain::team::{ProviderId, ReviewState, Task, TaskStatus, TeamMember, TeamSnapshot};
use crate::domain::time::EpochMs;
use crate::domain::token::TokenCheck;

/// A clock that moves only when told to, for both epoch and monotonic time.
pub(super) struct FakeClock {
    now_ms: AtomicI64,
}

impl FakeClock {
    /// Starts at `now_ms`.
    pub(super) fn new(now_ms: EpochMs) -> Self {
        Self {
            now_ms: AtomicI64::new(now_ms),
        }
    }

    /// Moves to `now_ms`.
    pub(super) fn set(&self, now_ms: EpochMs) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now_ms(&self) -> EpochMs {
        self.now_ms.load(Ordering::SeqCst)
    }

    fn monotonic(&self) -> Duration {
        Duration::from_millis(self.now_ms().max(0) as u64)
    }
}

/// Teams held in memory; a task impacts nobody in particular (the engine
/// then falls back to the whole active roster).
#[derive(Default)]
pub(super) struct MemoryTeams {
    teams: Mutex<HashMap<String, TeamSnapshot>>,
}

impl MemoryTeams {
    /// Adds (or replaces) an active team with these members.
    pub(crate) fn put(&self, team: &str, members: &[&str]) {
        let snapshot = TeamSnapshot {
            folder_found: true,
            config_found: true,
            members: members
                .iter()
                .map(|name| TeamMember {
                    name: name.to_string(),
                    ..TeamMember::default()
                })
                .collect(),
            ..TeamSnapshot::empty(TeamName::parse(team).unwrap())
        };
        self.teams
            .lock()
            .unwrap()
            .insert(team.to_string(), snapshot);
    }

    /// Gives `owner` a pending task `id` on the team's board.
    pub(crate) fn give_task(&self, team: &str, id: &str, owner: &str) {
        let task = Task {
            id: id.into(),
            display_id: format!("#{id}"),
            subject: format!("Task {id}"),
            status: TaskStatus::Pending,
            owner: Some(owner.into()),
            blocked_by: vec![],
            blocks: vec![],
            needs_clarification: None,
            review_state: ReviewState::None,
            history: vec![],
        };
        let mut teams = self.teams.lock().unwrap();
        if let Some(snapshot) = teams.get_mut(team) {
            Arc::make_mut(&mut snapshot.tasks).push(Arc::new(task));
        }
    }

    /// Names `provider` as the provider of `member` of `team`.
    pub(crate) fn set_provider(&self, team: &str, member: &str, provider: ProviderId) {
        let mut teams = self.teams.lock().unwrap();
        if let Some(snapshot) = teams.get_mut(team) {
            for m in snapshot.members.iter_mut().filter(|m| m.name == member) {
                m.provider_id = Some(provider);
            }
        }
    }
}

impl TeamSource for MemoryTeams {
    fn load(&self, team_name: &TeamName) -> TeamSnapshot {
        self.teams
            .lock()
            .unwrap()
            .get(team_name.as_str())
            .cloned()
            .unwrap_or_else(|| TeamSnapshot::empty(team_name.clone()))
    }

    fn active_members(&self, team_name: &TeamName) -> Vec<MemberName> {
        let snapshot = self.load(team_name);
        let names = snapshot.active_member_names();
        names
            .iter()
            .filter_map(|name| MemberName::parse(name).ok())
            .collect()
    }
}

impl TaskImpactSource for MemoryTeams {
    fn impacted_members(&self, _: &TeamName, _: &str) -> Option<Vec<MemberName>> {
        None
    }
}

/// One update held inside the store: `entered` fires when it starts, and it
/// finishes once `release` is sent.
pub(super) struct HeldUpdate {
    /// Receives once the held update has started.
    pub entered: Receiver<()>,
    /// Send to let the held update finish.
    pub release: Sender<()>,
}

/// Statuses in memory. The next `failures` updates fail; an update can be
/// held until the test releases it.
#[derive(Default)]
pub(super) struct MemoryStatusStore {
    statuses: Mutex<HashMap<(String, String), MemberStatus>>,
    failures: AtomicU32,
    hold: Mutex<Option<(Sender<()>, Receiver<()>)>>,
    /// What happened, in order (`update finished` when a held update ends).
    pub trail: Arc<Mutex<Vec<&'static str>>>,
}

impl MemoryStatusStore {
    /// Makes the next `count` updates fail with an IO error.
    pub(crate) fn fail_next(&self, count: u32) {
        self.failures.store(count, Ordering::SeqCst);
    }

    /// Holds the next update until released.
    pub(crate) fn hold_next_update(&self) -> HeldUpdate {
        let (entered_tx, entered) = channel();
        let (release, release_rx) = channel();
        *self.hold.lock().unwrap() = Some((entered_tx, release_rx));
        HeldUpdate { entered, release }
    }

    fn key(team: &TeamName, member: &MemberName) -> (String, String) {
        (team.to_string(), normalize_member_name(member))
    }
}

impl StatusStore for MemoryStatusStore {
    fn read(&self, team: &TeamName, member: &MemberName) -> Result<StoredStatus, PortError> {
        self.peek(team, member)
    }

    fn peek(&self, team: &TeamName, member: &MemberName) -> Result<StoredStatus, PortError> {
        let statuses = self.statuses.lock().unwrap();
        Ok(statuses
            .get(&Self::key(team, member))
            .cloned()
            .map_or(StoredStatus::Missing, StoredStatus::Current))
    }

    fn member_count(&self, team: &TeamName) -> Result<usize, PortError> {
        let statuses = self.statuses.lock().unwrap();
        Ok(statuses.keys().filter(|(t, _)| t == team.as_str()).count())
    }

    fn update(
        &self,
        team: &TeamName,
        member: &MemberName,
        build: StatusBuild<'_>,
    ) -> Result<MemberStatus, PortError> {
        let held = self.hold.lock().unwrap().take();
        if let Some((entered, release)) = held {
            let _ = entered.send(());
            let _ = release.recv();
            self.trail.lock().unwrap().push("update finished");
        }
        let failing = self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(PortError::Io(std::io::Error::other("fake store failure")));
        }
        let status = build(self.peek(team, member)?);
        // The file store keeps what it wrote as its next read's answer
        // (`FsStatusStore`'s kept decodes) instead of decoding the bytes:
        // sound only while every status reads back as written, which each
        // status these tests build is checked for here.
        let text = serde_json::to_string(&status).expect("a status serializes");
        let read_back: MemberStatus = serde_json::from_str(&text).expect("a status reads back");
        assert_eq!(
            read_back, status,
            "a status must read back as it was written"
        );
        self.statuses
            .lock()
            .unwrap()
            .insert(Self::key(team, member), status.clone());
        Ok(status)
    }
}

/// Keeps every journal line.
#[derive(Default)]
pub(super) struct RecordingJournal {
    /// The recorded events, oldest first.
    pub events: Mutex<Vec<AuditEvent>>,
}

impl AuditJournal for RecordingJournal {
    fn record(&self, event: AuditEvent) {
        self.events.lock().unwrap().push(event);
    }
}

/// Keeps every log entry's code.
#[derive(Default)]
pub(super) struct RecordingLog {
    /// The codes logged so far.
    pub codes: Mutex<Vec<LogCode>>,
}

impl LogSink for RecordingLog {
    fn log(&self, entry: LogEntry) {
        self.codes.lock().unwrap().push(entry.code);
    }
}

/// Tokens in plain text naming what they were issued for (team, member,
/// fingerprint, expiry): valid for exactly that until their expiry, expired
/// from then on, invalid for anything else; no token is `Missing`.
struct PlainTokens;

impl PlainTokens {
    fn token(team: &TeamName, member: &MemberName, fp: &str, expires_ms: EpochMs) -> String {
        format!("token|{team}|{member}|{expires_ms}|{fp}")
    }
}

impl ReportTokens for PlainTokens {
    fn issue(
        &self,
        team: &TeamName,
        member: &MemberName,
        fp: &str,
        expires_ms: EpochMs,
    ) -> Result<String, PortError> {
        Ok(Self::token(team, member, fp, expires_ms))
    }

    fn verify(
        &self,
        token: Option<&str>,
        team: &TeamName,
        member: &MemberName,
        fp: &str,
        now_ms: EpochMs,
    ) -> Result<TokenCheck, PortError> {
        let Some(token) = token else {
            return Ok(TokenCheck::Missing);
        };
        let expires = token.split('|').nth(3).and_then(|e| e.parse().ok());
        Ok(match expires {
            Some(expires) if token == Self::token(team, member, fp, expires) => {
                if now_ms < expires {
                    TokenCheck::Valid
                } else {
                    TokenCheck::Expired
                }
            }
            _ => TokenCheck::Invalid,
        })
    }
}

/// Metrics that are accepted and forgotten.
struct NoMetrics;

impl MetricsStore for NoMetrics {
    fn record(&self, _: &MemberStatus, _: Vec<MetricEvent>) -> Result<(), PortError> {
        Ok(())
    }

    fn read(&self, _: &TeamName) -> Result<Arc<MetricsIndex>, PortError> {
        Ok(Arc::default())
    }

    fn peek(&self, _: &TeamName) -> Result<Arc<MetricsIndex>, PortError> {
        Ok(Arc::default())
    }
}

/// Report intents in memory: `pending` lists a team's pending ones, oldest
/// first; `finish` stores an intent's outcome over the one of its id.
#[derive(Default)]
pub(super) struct MemoryIntents {
    intents: Mutex<Vec<ReportIntent>>,
}

impl MemoryIntents {
    /// Every intent held, in the order recorded.
    pub(crate) fn all(&self) -> Vec<ReportIntent> {
        self.intents.lock().unwrap().clone()
    }
}

impl ReportIntentStore for MemoryIntents {
    fn record(&self, intent: &ReportIntent) -> Result<(), PortError> {
        let mut intents = self.intents.lock().unwrap();
        if !intents.iter().any(|i| i.id == intent.id) {
            intents.push(intent.clone());
        }
        Ok(())
    }

    fn pending(&self, team: &TeamName) -> Result<PendingIntents, PortError> {
        let intents = self.intents.lock().unwrap();
        Ok(PendingIntents {
            intents: intents
                .iter()
                .filter(|i| i.team_name == team.as_str() && i.status == IntentStatus::Pending)
                .cloned()
                .collect(),
            migrated_members: Vec::new(),
        })
    }

    fn finish(&self, intent: &ReportIntent) -> Result<(), PortError> {
        let mut intents = self.intents.lock().unwrap();
        for held in intents.iter_mut().filter(|i| i.id == intent.id) {
            *held = intent.clone();
        }
        Ok(())
    }
}

/// An outbox in memory: a planned nudge is ensured as the stores do
/// ([`ensure_pending`] on the item of its id); a test may also put items.
#[derive(Default)]
pub(super) struct MemoryOutbox {
    items: Mutex<Vec<OutboxItem>>,
}

impl MemoryOutbox {
    /// Holds `item` (as if it had been planned and dispatched).
    pub(crate) fn put(&self, item: OutboxItem) {
        self.items.lock().unwrap().push(item);
    }

    /// Every item held, in the order they were first put or ensured.
    pub(crate) fn items(&self) -> Vec<OutboxItem> {
        self.items.lock().unwrap().clone()
    }
}

impl OutboxStore for MemoryOutbox {
    fn ensure(
        &self,
        team: &TeamName,
        member: &MemberName,
        planned: &PlannedNudge,
        now: EpochMs,
    ) -> Result<(OutboxItem, EnsureOutcome), PortError> {
        let mut items = self.items.lock().unwrap();
        let at = items.iter().position(|i| i.id == planned.id);
        let existing = at.map(|at| items[at].clone());
        let (item, outcome) = ensure_pending(existing, planned, team, member, now);
        match at {
            Some(at) => items[at] = item.clone(),
            None => items.push(item.clone()),
        }
        Ok((item, outcome))
    }

    fn member_items(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<Vec<OutboxItem>, PortError> {
        let member = normalize_member_name(member);
        let items = self.items.lock().unwrap();
        Ok(items
            .iter()
            .filter(|i| {
                i.team_name == team.as_str() && normalize_member_name(&i.member_name) == member
            })
            .cloned()
            .collect())
    }

    fn claim_due(&self, _: &TeamName, _: &str, _: usize, _: EpochMs) -> Result<Claimed, PortError> {
        Ok(Claimed::default())
    }

    fn finish(
        &self,
        _: &TeamName,
        _: &OutboxItem,
        _: &AttemptEnd,
        _: EpochMs,
    ) -> Result<bool, PortError> {
        Ok(true)
    }

    fn refresh_index(&self, _: &TeamName) -> Result<(), PortError> {
        Ok(())
    }

    fn teams_with_outbox(&self) -> Vec<TeamName> {
        Vec::new()
    }
}

/// An inbox nothing is ever delivered to.
struct NoInbox;

impl InboxSink for NoInbox {
    fn deliver(
        &self,
        _: &TeamName,
        _: &MemberName,
        _: &OutboxItem,
        _: EpochMs,
    ) -> Result<InboxOutcome, InboxFailure> {
        Err(InboxFailure {
            retryable: false,
            reason: "fake inbox".into(),
        })
    }
}

/// No watchdog alerts.
struct NoAlerts;

impl WatchdogJournal for NoAlerts {
    fn alerts(&self, _: &TeamName) -> Result<Vec<WatchdogAlert>, PortError> {
        Ok(Vec::new())
    }
}

/// An engine over in-memory ports, with handles on the fakes a test drives.
pub(crate) struct FakeWorld {
    /// The engine under test.
    pub engine: Arc<Engine>,
    /// The engine's clock; a test moves it by hand.
    pub clock: Arc<FakeClock>,
    /// Its status store.
    pub store: Arc<MemoryStatusStore>,
    /// The engine's journal, recording every event for the test to read.
    pub journal: Arc<RecordingJournal>,
    /// Its operator log.
    pub log: Arc<RecordingLog>,
    /// The turns the drain handled.
    pub settled_turns: Arc<SettledTurns>,
    /// Its board.
    pub teams: Arc<MemoryTeams>,
    /// Its outbox.
    pub outbox: Arc<MemoryOutbox>,
    /// Its report intents.
    pub intents: Arc<MemoryIntents>,
}

impl FakeWorld {
    /// `(member, trigger reasons)` of every queued item, in queue order.
    pub(super) fn queued(&self) -> Vec<(String, Vec<&'static str>)> {
        self.engine
            .diagnostics()
            .queued_items
            .into_iter()
            .map(|i| (i.member_name, i.trigger_reasons))
            .collect()
    }

    /// An engine at `now_ms` whose team `forge` has `members`.
    pub(super) fn new(now_ms: EpochMs, members: &[&str]) -> Self {
        let clock = Arc::new(FakeClock::new(now_ms));
        let teams = Arc::new(MemoryTeams::default());
        teams.put("forge", members);
        let store = Arc::new(MemoryStatusStore::default());
        let journal = Arc::new(RecordingJournal::default());
        let log = Arc::new(RecordingLog::default());
        let outbox = Arc::new(MemoryOutbox::default());
        let intents = Arc::new(MemoryIntents::default());
        let ports = Arc::new(Ports {
            clock: clock.clone(),
            teams: teams.clone(),
            impacts: teams.clone(),
            store: store.clone(),
            journal: journal.clone(),
            tokens: Arc::new(PlainTokens),
            metrics: Arc::new(NoMetrics),
            intents: intents.clone(),
            outbox: outbox.clone(),
            inbox: Arc::new(NoInbox),
            watchdog: Arc::new(NoAlerts),
            runtime: Arc::new(RuntimeStates::default()),
            busy: Arc::new(BusySignals::default()),
            log: log.clone(),
            host: Arc::default(),
            purge: Arc::new(crate::application::ports::KeepOnDeletion),
        });
        let settled_turns = Arc::new(SettledTurns::default());
        let engine = Arc::new(Engine::new(
            Arc::new(Reconciler::new(ports.clone())),
            EngineDeps {
                ports: ports.clone(),
                nudges: Arc::new(Nudges::new(ports)),
                settled_turns: settled_turns.clone(),
            },
        ));
        Self {
            engine,
            clock,
            store,
            journal,
            log,
            settled_turns,
            teams,
            outbox,
            intents,
        }
    }
}
