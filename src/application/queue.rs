//! The per-member coalescing reconcile queue.
//!
//! [`QueueCore`] is the pure state machine: every rule (delays, coalescing,
//! max-wait bound, follow-up pass, retries, concurrency) is decided here with
//! an explicit `now`, so tests drive it with a fake clock. The worker that
//! sleeps, runs reconciles and calls back lives in infrastructure.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::domain::diagnostic::StallTrigger;
use crate::domain::names::{normalize_member_name, team_runtime_key, MemberName, TeamName};
use crate::domain::recovery::Recovery;
use crate::domain::time::EpochMs;

/// Reconciles running at once, across all teams, unless configured
/// (`tuning.queueConcurrency`).
const CONCURRENCY: usize = 2;
/// Delay before a failed reconcile is retried.
pub(crate) const RETRY_DELAY_MS: EpochMs = 30_000;
/// Retries after the first failure before the item is dropped.
pub(crate) const MAX_RETRIES: u32 = 3;
/// Longest a single reconcile may run before it counts as failed.
pub(crate) const RECONCILE_TIMEOUT_MS: EpochMs = 120_000;
/// Cap of the follow-up pass delay.
const FOLLOW_UP_MAX_DELAY_MS: EpochMs = 5_000;

/// Why a member is queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[allow(missing_docs)]
pub enum Trigger {
    ManualRefresh,
    ProofMissingRecovery,
    TurnSettled,
    ToolFinished,
    TaskChanged,
    InboxChanged,
    RuntimeActivity,
    StartupScan,
    ConfigChanged,
    MemberSpawned,
}

impl Trigger {
    /// Every trigger (the reference's ten).
    pub(crate) const ALL: [Trigger; 10] = [
        Self::ManualRefresh,
        Self::ProofMissingRecovery,
        Self::TurnSettled,
        Self::ToolFinished,
        Self::TaskChanged,
        Self::InboxChanged,
        Self::RuntimeActivity,
        Self::StartupScan,
        Self::ConfigChanged,
        Self::MemberSpawned,
    ];

    /// The trigger a wire spelling names (a stored status's
    /// `shadow.triggerReasons`); `None` for one outside the set.
    pub fn parse(spelling: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == spelling)
    }

    /// The spelling in a stored status's `shadow.triggerReasons` and in the
    /// journal; [`Self::parse`] reads it back.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ManualRefresh => "manual_refresh",
            Self::ProofMissingRecovery => "proof_missing_recovery",
            Self::TurnSettled => "turn_settled",
            Self::ToolFinished => "tool_finished",
            Self::TaskChanged => "task_changed",
            Self::InboxChanged => "inbox_changed",
            Self::RuntimeActivity => "runtime_activity",
            Self::StartupScan => "startup_scan",
            Self::ConfigChanged => "config_changed",
            Self::MemberSpawned => "member_spawned",
        }
    }

    /// `(runAfter, maxWait)` in ms.
    pub(crate) fn policy(self) -> (EpochMs, EpochMs) {
        match self {
            Self::ManualRefresh => (0, 0),
            Self::ProofMissingRecovery | Self::TurnSettled | Self::ToolFinished => (5_000, 30_000),
            Self::TaskChanged | Self::InboxChanged | Self::RuntimeActivity => (15_000, 60_000),
            Self::StartupScan | Self::ConfigChanged | Self::MemberSpawned => (30_000, 90_000),
        }
    }
}

impl Trigger {
    /// The runtime signal a trigger is, as a stall names it (none for a
    /// trigger that is no runtime signal).
    pub(crate) fn runtime_signal(self) -> Option<StallTrigger> {
        match self {
            Self::TurnSettled => Some(StallTrigger::TurnSettled),
            Self::ToolFinished => Some(StallTrigger::ToolFinished),
            Self::RuntimeActivity => Some(StallTrigger::RuntimeActivity),
            _ => None,
        }
    }
}

/// Queue key: normalized team + normalized member (`team\0member-lc`).
pub(crate) type QueueKey = (String, String);

/// Builds the key of a member.
pub(crate) fn queue_key(team: &TeamName, member: &MemberName) -> QueueKey {
    (team_runtime_key(team), normalize_member_name(member))
}

/// One queued member.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueItem {
    /// The team as the first trigger named it (the key uses its runtime
    /// key).
    pub team_name: TeamName,
    /// Member as first enqueued.
    pub member_name: MemberName,
    /// When it was first queued (this round).
    pub first_queued_at: EpochMs,
    /// When a trigger last joined it (this round).
    pub last_queued_at: EpochMs,
    /// How many triggers of each reason joined it (this round).
    pub trigger_counts: BTreeMap<Trigger, u32>,
    /// When its running reconcile started; `None` while not running.
    pub started_at: Option<EpochMs>,
    /// When it should run.
    pub run_at: EpochMs,
    /// Never later than this.
    pub max_run_at: EpochMs,
    /// Reasons collected while queued.
    pub triggers: BTreeSet<Trigger>,
    /// A reconcile is running now.
    pub running: bool,
    /// A trigger arrived while running: one follow-up pass is owed.
    pub rerun: Option<BTreeSet<Trigger>>,
    /// The follow-up pass's trigger counts.
    pub rerun_counts: BTreeMap<Trigger, u32>,
    /// Failed attempts so far.
    pub retries: u32,
    /// Waiting to run (false while only running).
    pub queued: bool,
    /// Its team's queue was dropped while it ran: forget it when it ends.
    pub dropped: bool,
    /// The targeted recovery the next run is for (the latest one requested).
    pub recovery: Option<Recovery>,
    /// A recovery requested while running: it goes with the follow-up pass.
    pub rerun_recovery: Option<Recovery>,
}

/// Counters for diagnostics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct QueueCounters {
    pub enqueued: u64,
    pub coalesced: u64,
    pub reconciled: u64,
    pub dropped: u64,
    pub failed: u64,
}

/// What the caller should record after a finished reconcile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishOutcome {
    /// Done; nothing more owed.
    Done,
    /// Done; a follow-up pass was queued.
    FollowUp,
    /// Failed; retry scheduled at the given time.
    RetryScheduled(EpochMs),
    /// Failed too often; dropped.
    DroppedAfterRetries,
}

/// The queue state machine.
#[derive(Debug)]
pub struct QueueCore {
    items: HashMap<QueueKey, QueueItem>,
    /// Counters since start.
    pub counters: QueueCounters,
    /// Reconciles running at once (at least 1).
    concurrency: usize,
    /// The app's `queueQuietWindowMs`: the delay of every trigger but a
    /// manual refresh, with five windows as its longest wait.
    quiet_window: Option<EpochMs>,
}

impl Default for QueueCore {
    fn default() -> Self {
        Self::with_concurrency(CONCURRENCY)
    }
}

impl QueueCore {
    /// An empty queue running at most `concurrency` reconciles at once (0 counts as 1).
    pub(crate) fn with_concurrency(concurrency: usize) -> Self {
        Self {
            items: HashMap::new(),
            counters: QueueCounters::default(),
            concurrency: concurrency.max(1),
            quiet_window: None,
        }
    }

    /// Changes the concurrency; items already running keep running.
    pub(crate) fn set_concurrency(&mut self, concurrency: usize) {
        self.concurrency = concurrency.max(1);
    }

    /// Sets the quiet window (`None`: each trigger's own delay).
    pub(crate) fn set_quiet_window(&mut self, quiet_window: Option<EpochMs>) {
        self.quiet_window = quiet_window;
    }

    /// `(runAfter, maxWait)` of `trigger` under the quiet window, as the
    /// app's queue times it: a startup scan and a spawned member keep the
    /// 30 s its router asks for; every other trigger but a manual refresh
    /// waits the window.
    fn policy(&self, trigger: Trigger) -> (EpochMs, EpochMs) {
        let (delay, max_wait) = trigger.policy();
        match self.quiet_window {
            Some(_) if trigger == Trigger::ManualRefresh => (delay, max_wait),
            Some(window) => {
                let delay = match trigger {
                    Trigger::StartupScan | Trigger::MemberSpawned => delay,
                    _ => window,
                };
                (delay, delay.max(window.saturating_mul(5)))
            }
            None => (delay, max_wait),
        }
    }

    /// Queues or coalesces a trigger for a member. Returns false when it coalesced.
    pub fn enqueue(
        &mut self,
        team: &TeamName,
        member: &MemberName,
        trigger: Trigger,
        now: EpochMs,
    ) -> bool {
        let (delay, max_wait) = self.policy(trigger);
        let key = queue_key(team, member);
        let new_run = now + delay;
        match self.items.get_mut(&key) {
            Some(item) if item.running && !item.queued => {
                item.rerun.get_or_insert_with(BTreeSet::new).insert(trigger);
                *item.rerun_counts.entry(trigger).or_default() += 1;
                self.counters.coalesced += 1;
                false
            }
            Some(item) => {
                item.triggers.insert(trigger);
                item.last_queued_at = now;
                *item.trigger_counts.entry(trigger).or_default() += 1;
                item.max_run_at = item.max_run_at.max(item.first_queued_at + max_wait);
                let old = item.run_at;
                item.run_at = if old <= now || trigger == Trigger::ManualRefresh || new_run < old {
                    old.min(new_run)
                } else {
                    old.max(new_run).min(item.max_run_at)
                };
                self.counters.coalesced += 1;
                false
            }
            None => {
                self.items.insert(
                    key,
                    QueueItem {
                        team_name: team.clone(),
                        member_name: member.clone(),
                        first_queued_at: now,
                        last_queued_at: now,
                        trigger_counts: BTreeMap::from([(trigger, 1)]),
                        started_at: None,
                        run_at: new_run,
                        max_run_at: now + max_wait,
                        triggers: BTreeSet::from([trigger]),
                        running: false,
                        rerun: None,
                        rerun_counts: BTreeMap::new(),
                        retries: 0,
                        queued: true,
                        dropped: false,
                        recovery: None,
                        rerun_recovery: None,
                    },
                );
                self.counters.enqueued += 1;
                true
            }
        }
    }

    /// Whether the member already waits for `trigger`: queued with it, or
    /// running with a follow-up pass owed for it. Another `trigger` then
    /// changes nothing but the debounce of its due time.
    pub fn holds(&self, team: &TeamName, member: &MemberName, trigger: Trigger) -> bool {
        match self.items.get(&queue_key(team, member)) {
            Some(item) if item.queued => item.triggers.contains(&trigger),
            Some(item) => item.rerun.as_ref().is_some_and(|r| r.contains(&trigger)),
            None => false,
        }
    }

    /// Queues a `proof_missing_recovery` reconcile carrying `recovery`
    /// (coalesced like any trigger; the latest recovery wins). Returns false
    /// when it coalesced.
    pub(crate) fn enqueue_recovery(
        &mut self,
        team: &TeamName,
        member: &MemberName,
        recovery: Recovery,
        now: EpochMs,
    ) -> bool {
        let fresh = self.enqueue(team, member, Trigger::ProofMissingRecovery, now);
        if let Some(item) = self.items.get_mut(&queue_key(team, member)) {
            if item.running && !item.queued {
                item.rerun_recovery = Some(recovery);
            } else {
                item.recovery = Some(recovery);
            }
        }
        fresh
    }

    fn running_count(&self) -> usize {
        self.items.values().filter(|i| i.running).count()
    }

    /// Takes the due items that may start now (concurrency and one-per-member
    /// respected), marking them running. Earliest first.
    pub fn take_due(&mut self, now: EpochMs) -> Vec<(QueueKey, QueueItem)> {
        let free = self.concurrency.saturating_sub(self.running_count());
        let mut due: Vec<(&QueueKey, &QueueItem)> = self
            .items
            .iter()
            .filter(|(_, i)| i.queued && !i.running && i.run_at <= now)
            .collect();
        due.sort_by(|a, b| (a.1.run_at, a.0).cmp(&(b.1.run_at, b.0)));
        let keys: Vec<QueueKey> = due.into_iter().take(free).map(|(k, _)| k.clone()).collect();
        keys.into_iter()
            .filter_map(|key| {
                let item = self.items.get_mut(&key)?;
                item.running = true;
                item.queued = false;
                item.started_at = Some(now);
                Some((key, item.clone()))
            })
            .collect()
    }

    /// Records the end of a reconcile started by [`QueueCore::take_due`].
    pub fn finish(&mut self, key: &QueueKey, succeeded: bool, now: EpochMs) -> FinishOutcome {
        let Some(item) = self.items.get_mut(key) else {
            return FinishOutcome::Done;
        };
        item.running = false;
        item.started_at = None;
        if item.dropped {
            self.items.remove(key);
            return FinishOutcome::Done;
        }
        if succeeded {
            self.counters.reconciled += 1;
            item.retries = 0;
        } else {
            self.counters.failed += 1;
            item.retries += 1;
        }
        if let Some(rerun) = item.rerun.take() {
            // One follow-up pass, led by the most urgent reason.
            let lead = [
                Trigger::ManualRefresh,
                Trigger::TurnSettled,
                Trigger::ToolFinished,
            ]
            .into_iter()
            .find(|t| rerun.contains(t))
            .or_else(|| rerun.iter().next().copied())
            .unwrap_or(Trigger::ManualRefresh);
            let (delay, max_wait) = lead.policy();
            let delay = delay.min(FOLLOW_UP_MAX_DELAY_MS);
            item.triggers = rerun;
            item.trigger_counts = std::mem::take(&mut item.rerun_counts);
            item.recovery = item.rerun_recovery.take();
            item.first_queued_at = now;
            item.last_queued_at = now;
            item.run_at = now + delay;
            item.max_run_at = now + max_wait.max(delay);
            item.queued = true;
            return FinishOutcome::FollowUp;
        }
        if succeeded {
            self.items.remove(key);
            return FinishOutcome::Done;
        }
        if item.retries > MAX_RETRIES {
            self.items.remove(key);
            self.counters.dropped += 1;
            return FinishOutcome::DroppedAfterRetries;
        }
        item.run_at = now + RETRY_DELAY_MS;
        item.max_run_at = item.run_at;
        item.queued = true;
        FinishOutcome::RetryScheduled(item.run_at)
    }

    /// Drops every queued (not running) item of a team; running ones lose their follow-up.
    pub(crate) fn drop_team(&mut self, team: &TeamName) -> usize {
        let team_key = team_runtime_key(team);
        let mut dropped = 0;
        self.items.retain(|(t, _), item| {
            if *t != team_key {
                return true;
            }
            item.rerun = None;
            item.rerun_counts.clear();
            item.rerun_recovery = None;
            if item.running {
                item.queued = false;
                item.dropped = true;
                return true;
            }
            dropped += 1;
            false
        });
        self.counters.dropped += dropped as u64;
        dropped
    }

    /// Drops an item handed out by [`QueueCore::take_due`] without running it.
    pub(crate) fn drop_taken(&mut self, key: &QueueKey) {
        if self.items.remove(key).is_some() {
            self.counters.dropped += 1;
        }
    }

    /// Pulls a waiting item's run forward to `at` (never later).
    pub(crate) fn expedite(&mut self, key: &QueueKey, at: EpochMs) {
        if let Some(item) = self.items.get_mut(key).filter(|i| i.queued) {
            item.run_at = item.run_at.min(at);
        }
    }

    /// Items of a team that are running now.
    pub(crate) fn running_in_team(&self, team: &TeamName) -> usize {
        let team = team_runtime_key(team);
        self.items
            .values()
            .filter(|i| i.running && normalize_member_name(&i.team_name) == team)
            .count()
    }

    /// Earliest `run_at` among waiting items; `None` while saturated (nothing
    /// can start before a run finishes, and finishing wakes the driver).
    pub(crate) fn next_run_at(&self) -> Option<EpochMs> {
        if self.running_count() >= CONCURRENCY {
            return None;
        }
        self.items
            .values()
            .filter(|i| i.queued && !i.running)
            .map(|i| i.run_at)
            .min()
    }

    /// Waiting items, earliest first.
    pub fn queued_items(&self) -> Vec<&QueueItem> {
        let mut items: Vec<&QueueItem> = self.items.values().filter(|i| i.queued).collect();
        items.sort_by_key(|i| {
            (
                i.run_at,
                i.team_name.clone(),
                normalize_member_name(&i.member_name),
            )
        });
        items
    }

    /// Running items, earliest started first.
    pub(crate) fn running_items(&self) -> Vec<&QueueItem> {
        let mut items: Vec<&QueueItem> = self.items.values().filter(|i| i.running).collect();
        items.sort_by_key(|i| {
            (
                i.started_at,
                i.team_name.clone(),
                normalize_member_name(&i.member_name),
            )
        });
        items
    }

    /// Number of running reconciles.
    pub fn running(&self) -> usize {
        self.running_count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(name: &str) -> TeamName {
        TeamName::parse(name).unwrap()
    }

    fn member(name: &str) -> MemberName {
        MemberName::parse(name).unwrap()
    }

    const T0: EpochMs = 1_000_000;

    fn key(name: &str) -> QueueKey {
        queue_key(&team("forge"), &member(name))
    }

    #[test]
    fn every_trigger_round_trips_through_its_one_spelling() {
        let mut seen = std::collections::HashSet::new();
        for trigger in Trigger::ALL {
            assert!(seen.insert(trigger.as_str()), "{trigger:?} spelled twice");
            assert_eq!(Trigger::parse(trigger.as_str()), Some(trigger));
        }
        assert_eq!(Trigger::parse("Turn_Settled"), None);
    }

    #[test]
    fn items_keep_their_first_and_last_trigger_times_and_reason_counts() {
        let mut q = QueueCore::default();
        q.enqueue(&team("forge"), &member("jack"), Trigger::TaskChanged, T0);
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::TaskChanged,
            T0 + 1_000,
        );
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::InboxChanged,
            T0 + 2_000,
        );
        let item = q.queued_items()[0].clone();
        assert_eq!(
            (item.first_queued_at, item.last_queued_at),
            (T0, T0 + 2_000)
        );
        assert_eq!(item.max_run_at, T0 + 60_000);
        assert_eq!(
            item.trigger_counts,
            BTreeMap::from([(Trigger::TaskChanged, 2), (Trigger::InboxChanged, 1)])
        );
        let started = T0 + 60_000;
        q.take_due(started);
        assert_eq!(q.running_items()[0].started_at, Some(started));
        // Triggers during the run count towards the follow-up pass only.
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::TurnSettled,
            started + 10,
        );
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::TurnSettled,
            started + 20,
        );
        assert_eq!(
            q.finish(&key("jack"), true, started + 30),
            FinishOutcome::FollowUp
        );
        let follow_up = q.queued_items()[0].clone();
        assert_eq!(follow_up.started_at, None);
        assert_eq!(follow_up.first_queued_at, started + 30);
        assert_eq!(
            follow_up.trigger_counts,
            BTreeMap::from([(Trigger::TurnSettled, 2)])
        );
    }

    #[test]
    fn a_quiet_window_times_every_trigger_but_a_manual_refresh_and_the_routers_30_s() {
        let mut q = QueueCore::default();
        q.set_quiet_window(Some(1_000));
        // (trigger, runAfter, maxWait)
        let cases = [
            (Trigger::TaskChanged, 1_000, 5_000),
            (Trigger::TurnSettled, 1_000, 5_000),
            (Trigger::ManualRefresh, 0, 0),
            (Trigger::StartupScan, 30_000, 30_000),
            (Trigger::MemberSpawned, 30_000, 30_000),
        ];
        for (trigger, run_after, max_wait) in cases {
            assert_eq!(q.policy(trigger), (run_after, max_wait), "{trigger:?}");
        }
        q.set_quiet_window(None);
        assert_eq!(
            q.policy(Trigger::TaskChanged),
            Trigger::TaskChanged.policy()
        );
    }

    #[test]
    fn each_trigger_waits_its_delay() {
        let mut q = QueueCore::default();
        assert!(q.enqueue(&team("forge"), &member("jack"), Trigger::TaskChanged, T0));
        assert!(q.take_due(T0 + 14_999).is_empty());
        let due = q.take_due(T0 + 15_000);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].1.triggers, BTreeSet::from([Trigger::TaskChanged]));
    }

    #[test]
    fn coalescing_adds_reasons_and_debounces_but_never_past_max_wait() {
        let mut q = QueueCore::default();
        q.enqueue(&team("forge"), &member("Jack"), Trigger::TaskChanged, T0);
        // Each new task event pushes the run later (debounce) ...
        for t in (10_000..=50_000).step_by(10_000) {
            assert!(!q.enqueue(
                &team("forge"),
                &member("jack"),
                Trigger::TaskChanged,
                T0 + t
            ));
        }
        // ... but never past first + maxWait (60 s).
        assert_eq!(q.next_run_at(), Some(T0 + 60_000));
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::InboxChanged,
            T0 + 55_000,
        );
        assert_eq!(q.next_run_at(), Some(T0 + 60_000));
        assert_eq!(q.counters.enqueued, 1);
        assert_eq!(q.counters.coalesced, 6);
        let due = q.take_due(T0 + 60_000);
        assert_eq!(
            due[0].1.triggers,
            BTreeSet::from([Trigger::TaskChanged, Trigger::InboxChanged])
        );
    }

    #[test]
    fn an_earlier_trigger_pulls_the_run_forward() {
        let mut q = QueueCore::default();
        q.enqueue(&team("forge"), &member("jack"), Trigger::StartupScan, T0);
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::TurnSettled,
            T0 + 1_000,
        );
        assert_eq!(q.next_run_at(), Some(T0 + 6_000));
    }

    #[test]
    fn manual_refresh_runs_now() {
        let mut q = QueueCore::default();
        q.enqueue(&team("forge"), &member("jack"), Trigger::StartupScan, T0);
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::ManualRefresh,
            T0 + 10,
        );
        assert_eq!(q.take_due(T0 + 10).len(), 1);
    }

    #[test]
    fn a_trigger_during_a_run_owes_exactly_one_follow_up() {
        let mut q = QueueCore::default();
        q.enqueue(&team("forge"), &member("jack"), Trigger::ManualRefresh, T0);
        assert_eq!(q.take_due(T0).len(), 1);
        // Never two reconciles for one member at once.
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::TaskChanged,
            T0 + 1,
        );
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::TurnSettled,
            T0 + 2,
        );
        assert!(q.take_due(T0 + 100_000).is_empty());
        assert_eq!(
            q.finish(&key("jack"), true, T0 + 10),
            FinishOutcome::FollowUp
        );
        // Follow-up led by turn_settled: min(5 s, 5 s).
        assert_eq!(q.next_run_at(), Some(T0 + 5_010));
        let due = q.take_due(T0 + 5_010);
        assert_eq!(
            due[0].1.triggers,
            BTreeSet::from([Trigger::TaskChanged, Trigger::TurnSettled])
        );
        assert_eq!(
            q.finish(&key("jack"), true, T0 + 6_000),
            FinishOutcome::Done
        );
        assert_eq!(q.next_run_at(), None);
        assert_eq!(q.counters.reconciled, 2);
    }

    #[test]
    fn follow_up_delay_is_capped_at_five_seconds() {
        let mut q = QueueCore::default();
        q.enqueue(&team("forge"), &member("jack"), Trigger::ManualRefresh, T0);
        q.take_due(T0);
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::ConfigChanged,
            T0 + 1,
        );
        q.finish(&key("jack"), true, T0 + 2);
        assert_eq!(q.next_run_at(), Some(T0 + 5_002));
    }

    #[test]
    fn concurrency_is_two_and_saturation_does_not_spin() {
        let mut q = QueueCore::default();
        for m in ["a", "b", "c", "d"] {
            q.enqueue(&team("forge"), &member(m), Trigger::ManualRefresh, T0);
        }
        assert_eq!(q.take_due(T0).len(), 2);
        // Saturated: nothing more is handed out however often we ask.
        for _ in 0..100 {
            assert!(q.take_due(T0).is_empty());
        }
        assert_eq!(q.running(), 2);
        assert_eq!(
            q.next_run_at(),
            None,
            "saturated: the driver sleeps until a run finishes"
        );
        q.finish(&key("a"), true, T0 + 1);
        assert_eq!(q.next_run_at(), Some(T0));
        assert_eq!(q.take_due(T0 + 1).len(), 1);
    }

    #[test]
    fn configured_concurrency_caps_the_running_items() {
        // (configured, handed out of 5 due items; 0 counts as 1)
        for (concurrency, running) in [(0, 1), (1, 1), (3, 3), (8, 5)] {
            let mut q = QueueCore::with_concurrency(concurrency);
            for m in ["a", "b", "c", "d", "e"] {
                q.enqueue(&team("forge"), &member(m), Trigger::ManualRefresh, T0);
            }
            assert_eq!(q.take_due(T0).len(), running, "concurrency {concurrency}");
            assert!(q.take_due(T0).is_empty(), "concurrency {concurrency}");
            assert_eq!(q.running(), running, "concurrency {concurrency}");
        }
        let mut q = QueueCore::default();
        q.set_concurrency(1);
        for m in ["a", "b"] {
            q.enqueue(&team("forge"), &member(m), Trigger::ManualRefresh, T0);
        }
        assert_eq!(q.take_due(T0).len(), 1);
    }

    #[test]
    fn failures_retry_every_30s_three_times_then_drop() {
        let mut q = QueueCore::default();
        q.enqueue(&team("forge"), &member("jack"), Trigger::ManualRefresh, T0);
        let mut now = T0;
        for attempt in 1..=3 {
            assert_eq!(q.take_due(now).len(), 1);
            assert_eq!(
                q.finish(&key("jack"), false, now),
                FinishOutcome::RetryScheduled(now + 30_000),
                "{attempt}"
            );
            assert!(q.take_due(now + 29_999).is_empty());
            now += 30_000;
        }
        q.take_due(now);
        assert_eq!(
            q.finish(&key("jack"), false, now),
            FinishOutcome::DroppedAfterRetries
        );
        assert_eq!(q.counters.failed, 4);
        assert_eq!(q.counters.dropped, 1);
        assert_eq!(q.next_run_at(), None);
    }

    #[test]
    fn success_resets_the_retry_budget() {
        let mut q = QueueCore::default();
        q.enqueue(&team("forge"), &member("jack"), Trigger::ManualRefresh, T0);
        q.take_due(T0);
        q.finish(&key("jack"), false, T0);
        q.take_due(T0 + 30_000);
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::TaskChanged,
            T0 + 30_001,
        );
        assert_eq!(
            q.finish(&key("jack"), true, T0 + 30_002),
            FinishOutcome::FollowUp
        );
        let due = q.take_due(T0 + 40_000);
        assert_eq!(due[0].1.retries, 0);
    }

    #[test]
    fn team_names_are_compared_normalized() {
        let mut q = QueueCore::default();
        q.enqueue(&team("Forge"), &member("jack"), Trigger::ManualRefresh, T0);
        assert!(
            !q.enqueue(&team("forge"), &member("JACK"), Trigger::TaskChanged, T0),
            "one member, one item"
        );
        q.take_due(T0);
        assert_eq!(q.running_in_team(&team("FORGE")), 1);
        q.enqueue(&team("forge"), &member("jill"), Trigger::TaskChanged, T0);
        assert_eq!(q.drop_team(&team("FORGE")), 1);
    }

    #[test]
    fn a_recovery_rides_with_its_run_or_the_follow_up() {
        let recovery = |id: &str| Recovery::proof_missing(id, &[]);
        let mut q = QueueCore::default();
        assert!(q.enqueue_recovery(&team("forge"), &member("jack"), recovery("m1"), T0));
        // 5 s delay, like a settled turn.
        assert!(q.take_due(T0 + 4_999).is_empty());
        // A later request before the run replaces the recovery.
        assert!(!q.enqueue_recovery(&team("forge"), &member("jack"), recovery("m2"), T0 + 1));
        let due = q.take_due(T0 + 5_001);
        assert_eq!(
            due[0].1.triggers,
            BTreeSet::from([Trigger::ProofMissingRecovery])
        );
        assert_eq!(due[0].1.recovery, Some(recovery("m2")));
        // One requested during the run goes with the follow-up only.
        q.enqueue_recovery(&team("forge"), &member("jack"), recovery("m3"), T0 + 5_002);
        assert_eq!(
            q.finish(&key("jack"), true, T0 + 5_003),
            FinishOutcome::FollowUp
        );
        let due = q.take_due(T0 + 20_000);
        assert_eq!(due[0].1.recovery, Some(recovery("m3")));
        q.finish(&key("jack"), true, T0 + 20_001);
        // A plain trigger carries none.
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::ManualRefresh,
            T0 + 30_000,
        );
        assert_eq!(q.take_due(T0 + 30_000)[0].1.recovery, None);
    }

    #[test]
    fn dropping_a_team_removes_queued_work_and_follow_ups() {
        let mut q = QueueCore::default();
        q.enqueue(&team("forge"), &member("jack"), Trigger::ManualRefresh, T0);
        q.enqueue(&team("forge"), &member("jill"), Trigger::TaskChanged, T0);
        q.enqueue(&team("other"), &member("bob"), Trigger::TaskChanged, T0);
        q.take_due(T0);
        q.enqueue(
            &team("forge"),
            &member("jack"),
            Trigger::TaskChanged,
            T0 + 1,
        );
        assert_eq!(q.drop_team(&team("forge")), 1);
        assert_eq!(q.running_in_team(&team("forge")), 1);
        assert_eq!(
            q.finish(&key("jack"), true, T0 + 2),
            FinishOutcome::Done,
            "follow-up dropped too"
        );
        assert_eq!(q.queued_items().len(), 1);
        assert_eq!(q.queued_items()[0].team_name.as_str(), "other");
    }
}
