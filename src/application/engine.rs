//! Live wiring: team change events → routes → the coalescing queue →
//! reconciles, plus team lifecycle fences.
//!
//! Everything here is synchronous and clock-driven; the infrastructure worker
//! decides *when* to call [`Engine::take_due`] / [`Engine::run`] /
//! [`Engine::finish`] and is woken through the `wake` hook.

use crate::domain::js_semantics::js_trim;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use serde_json::json;

use super::host::Host;
use super::log::{LogCode, LogEntry, LogLevel};
use super::nudges::{DispatchSummary, Nudges};
use super::ports::{AuditEvent, Ports};
use super::queue::{queue_key, FinishOutcome, QueueCore, QueueItem, QueueKey, Trigger};
pub use super::queue_diagnostics::{
    IntakeCounters, QueueDiagnostics, QueuedItemView, RunningItemView,
};
use super::reconcile::{Reconciler, TeamPreview, WorkSyncError};
use super::report::{ReplaySummary, ReportResult};
use super::router::{
    event_team, route, settled_turn_source_id, Route, TeamChangeEvent, ToolActivity,
};
use super::team_gate::TeamGate;
use super::turn_settled::SettledTurns;
use crate::domain::audit::{AuditKind, AuditSource};
use crate::domain::decision::needs_background_refresh;
use crate::domain::metrics::TeamMetrics;
use crate::domain::names::{team_runtime_key, MemberName, TeamName};
use crate::domain::recovery::Recovery;
use crate::domain::status::{MemberStatus, ReconciledBy};
use crate::domain::time::{format_iso, EpochMs};

const SOURCE: AuditSource = AuditSource::EventQueue;

/// Team lifecycle use cases over the gate (deletion, resume, admission).
#[path = "team_lifecycle.rs"]
mod team_lifecycle;

/// What the engine needs besides the reconciler.
pub struct EngineDeps {
    /// The instance's ports (the same set the reconciler runs over).
    pub ports: Arc<Ports>,
    /// Phase 2 planner and dispatcher.
    pub nudges: Arc<Nudges>,
    /// Turns the turn-settled drain already queued (shared with the drain).
    pub settled_turns: Arc<SettledTurns>,
}

#[derive(Debug, Default)]
struct EngineState {
    queue: QueueCore,
    /// Deletion fences, and the operations admitted through [`Engine::with_team`].
    gate: TeamGate,
}

/// Hands slow engine work (a deleted team's config probe, which may wait
/// for the app's `configFileAccess`) to another thread.
pub(crate) type Background = Box<dyn Fn(Box<dyn FnOnce(&Engine) + Send>) + Send + Sync>;

/// The live engine of one addon instance.
pub struct Engine {
    reconciler: Arc<Reconciler>,
    deps: EngineDeps,
    state: Mutex<EngineState>,
    /// Signalled whenever a reconcile finishes (deletion waits on it).
    finished: Condvar,
    wake: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// Runs slow work off the caller's thread (the worker's blocking pool);
    /// without one it runs inline.
    background: Mutex<Option<Background>>,
    /// Set by [`Engine::stop`]: long passes end between batches.
    stopping: AtomicBool,
    /// Events the intake dropped or merged before routing.
    intake: IntakeCounters,
}

impl Engine {
    /// A stopped engine; the worker installs its wake hook when it starts.
    pub fn new(reconciler: Arc<Reconciler>, deps: EngineDeps) -> Self {
        Self {
            reconciler,
            deps,
            state: Mutex::new(EngineState::default()),
            finished: Condvar::new(),
            wake: Mutex::new(None),
            background: Mutex::new(None),
            stopping: AtomicBool::new(false),
            intake: IntakeCounters::default(),
        }
    }

    /// The intake's counters (the worker adds to them).
    pub(crate) fn intake_counters(&self) -> &IntakeCounters {
        &self.intake
    }

    /// Sets how many queued reconciles run at once (at least 1).
    pub(crate) fn set_queue_concurrency(&self, concurrency: usize) {
        self.state().queue.set_concurrency(concurrency);
    }

    /// Sets the queue's quiet window (the app's `queueQuietWindowMs`).
    pub(crate) fn set_queue_quiet_window(&self, quiet_window: Option<EpochMs>) {
        self.state().queue.set_quiet_window(quiet_window);
    }

    /// The reconciler behind the queue.
    pub fn reconciler(&self) -> &Reconciler {
        &self.reconciler
    }

    /// Installs the hook that wakes the worker when the queue changed.
    pub(crate) fn set_wake(&self, wake: Box<dyn Fn() + Send + Sync>) {
        *self.wake.lock().unwrap_or_else(|p| p.into_inner()) = Some(wake);
    }

    /// Installs where slow work runs (the worker's blocking pool).
    pub(crate) fn set_background(&self, background: Background) {
        *self.background.lock().unwrap_or_else(|p| p.into_inner()) = Some(background);
    }

    fn in_background(&self, work: Box<dyn FnOnce(&Engine) + Send>) {
        let background = self.background.lock().unwrap_or_else(|p| p.into_inner());
        match background.as_ref() {
            Some(run) => run(work),
            None => {
                drop(background);
                work(self);
            }
        }
    }

    fn wake(&self) {
        if let Some(wake) = self.wake.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            wake();
        }
    }

    fn state(&self) -> MutexGuard<'_, EngineState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now(&self) -> EpochMs {
        self.deps.ports.clock.now_ms()
    }

    /// The app clock's now (the worker schedules by it).
    pub fn now_ms(&self) -> EpochMs {
        self.now()
    }

    fn is_deleting(&self, team: &TeamName) -> bool {
        self.state().gate.is_fenced(team)
    }

    /// An operator log entry about a queued item.
    fn log(&self, level: LogLevel, code: LogCode, message: impl Into<String>, item: &QueueItem) {
        self.deps
            .ports
            .log
            .log(LogEntry::new(level, code, message).with_context(json!({
                "teamName": item.team_name,
                "memberName": item.member_name,
                "triggerReasons": item.triggers.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
            })));
    }

    fn audit(
        &self,
        kind: AuditKind,
        team: &TeamName,
        member: &MemberName,
        metadata: serde_json::Value,
    ) {
        let serde_json::Value::Object(metadata) = metadata else {
            return;
        };
        self.deps.ports.journal.record(AuditEvent {
            kind,
            source: SOURCE,
            team_name: team.clone(),
            member_name: member.to_string(),
            at_ms: self.now(),
            diagnostics: vec![],
            metadata,
        });
    }

    /// Handles one team change event (may read the board to resolve targets).
    ///
    /// A `member-turn-settled` event announcing a turn the drain already
    /// queued (an app forwarding `onTeamChange` back) changes nothing.
    pub fn note_team_change(&self, event: &TeamChangeEvent) {
        // Fences compare by the runtime key, which trims: a padded event
        // name still finds its team's fence.
        let fenced = TeamName::parse(js_trim(&event.team_name))
            .ok()
            .filter(|team| self.is_deleting(team));
        if let Some(team) = fenced {
            self.resume_if_recreated(team, event);
            return;
        }
        if settled_turn_source_id(event).is_some_and(|id| self.deps.settled_turns.contains(&id)) {
            return;
        }
        let Some(team) = event_team(event) else {
            return;
        };
        let team = &team;
        match route(event) {
            Route::Ignore => {}
            Route::Member { member, trigger } => {
                self.enqueue(team, &member, trigger);
            }
            Route::Team { trigger, offline } => {
                if offline {
                    self.state().queue.drop_team(team);
                    self.deps.ports.busy.forget_team(team);
                }
                for member in self.deps.ports.teams.active_members(team) {
                    self.enqueue_with_delay(team, &member, trigger, offline.then_some(0));
                }
            }
            Route::Task { task_id, trigger } => {
                let members = self
                    .deps
                    .ports
                    .impacts
                    .impacted_members(team, &task_id)
                    .unwrap_or_else(|| self.deps.ports.teams.active_members(team));
                for member in members {
                    self.enqueue(team, &member, trigger);
                }
            }
            Route::Tool { member, activity } => {
                self.deps
                    .ports
                    .busy
                    .note(team, &member, &activity, self.now());
                if matches!(activity, ToolActivity::Finished { .. }) {
                    self.enqueue(team, &member, Trigger::ToolFinished);
                }
            }
            Route::ToolResetTeam => self.deps.ports.busy.forget_team(team),
        }
    }

    /// Queues a reconcile of `member` for `trigger`: a new item is due after
    /// the trigger's delay; an item already queued or running absorbs the
    /// trigger (`coalesced`). Journals `queue_enqueued` / `queue_coalesced`
    /// and wakes the driver. Answers whether the member now waits for
    /// `trigger`: false while the team is being deleted (nothing queued),
    /// which the check and the queueing see alike (one lock).
    pub fn enqueue(&self, team: &TeamName, member: &MemberName, trigger: Trigger) -> bool {
        self.enqueue_with_delay(team, member, trigger, None)
    }

    /// Queues as [`Engine::enqueue`] does, `delay` overriding the
    /// trigger's; false when the team is being deleted (nothing queued).
    fn enqueue_with_delay(
        &self,
        team: &TeamName,
        member: &MemberName,
        trigger: Trigger,
        delay: Option<EpochMs>,
    ) -> bool {
        let now = self.now();
        let fresh = {
            let mut state = self.state();
            if state.gate.is_fenced(team) {
                return false;
            }
            let repeat = state.queue.holds(team, member, trigger);
            let fresh = state.queue.enqueue(team, member, trigger, now);
            if let Some(delay) = delay {
                state.queue.expedite(&queue_key(team, member), now + delay);
            } else if repeat {
                // Counted as coalesced, but neither journaled again nor a
                // reason to wake the driver: the member already waits for
                // this very reason and is due no sooner. (A burst of
                // identical events must not grow the journal by a line each.)
                return true;
            }
            fresh
        };
        let kind = if fresh {
            AuditKind::QueueEnqueued
        } else {
            AuditKind::QueueCoalesced
        };
        self.audit(kind, team, member, json!({ "reason": trigger.as_str() }));
        self.wake();
        true
    }

    /// Queues a `proof_missing_recovery` reconcile of one member carrying
    /// `recovery` (nothing while the team is being deleted).
    pub(crate) fn enqueue_recovery(
        &self,
        team: &TeamName,
        member: &MemberName,
        recovery: Recovery,
    ) {
        let now = self.now();
        let fresh = {
            let mut state = self.state();
            if state.gate.is_fenced(team) {
                return;
            }
            state.queue.enqueue_recovery(team, member, recovery, now)
        };
        let kind = if fresh {
            AuditKind::QueueEnqueued
        } else {
            AuditKind::QueueCoalesced
        };
        let trigger = Trigger::ProofMissingRecovery.as_str();
        self.audit(kind, team, member, json!({ "trigger": trigger }));
        self.wake();
    }

    /// Queues every active roster member of each team with `startup_scan`
    /// (due in 30 s); reads each roster now.
    pub(crate) fn enqueue_startup_scan(&self, teams: &[TeamName]) {
        for team in teams {
            for member in self.deps.ports.teams.active_members(team) {
                self.enqueue(team, &member, Trigger::StartupScan);
            }
        }
    }

    /// Hands out the items due now, up to the free concurrency slots; items
    /// of inactive or deleting teams are dropped unreconciled (the inactive
    /// ones journaled `queue_dropped`). Each item handed out must be finished
    /// with [`Engine::finish`].
    pub fn take_due(&self) -> Vec<(QueueKey, QueueItem)> {
        let now = self.now();
        let mut runnable = Vec::new();
        let mut dropped = Vec::new();
        {
            let mut state = self.state();
            for (key, item) in state.queue.take_due(now) {
                let team_down = !self
                    .deps
                    .ports
                    .runtime
                    .activity(&item.team_name, &item.member_name)
                    .team_active;
                let deleting = state.gate.is_fenced(&item.team_name);
                if team_down || deleting {
                    state.queue.drop_taken(&key);
                    // A deleting team's directory must not be recreated by a journal line.
                    if !deleting {
                        dropped.push(item);
                    }
                } else {
                    runnable.push((key, item));
                }
            }
        }
        for item in &dropped {
            self.audit(
                AuditKind::QueueDropped,
                &item.team_name,
                &item.member_name,
                json!({ "reason": "team_inactive" }),
            );
        }
        runnable
    }

    /// Reconciles a taken item's member (blocking IO; the worker calls it off
    /// the JS thread) and, unless its team is being deleted, plans its nudge.
    /// A failure is logged `MWS_LOG_QUEUE_RUN_FAILED`; [`Engine::finish`]
    /// then schedules the retry.
    pub fn run(&self, item: &QueueItem) -> Result<MemberStatus, WorkSyncError> {
        let triggers: Vec<Trigger> = item.triggers.iter().copied().collect();
        let status = self
            .reconciler
            .refresh_status_with(
                &item.team_name,
                &item.member_name,
                ReconciledBy::Queue,
                &triggers,
                false,
                item.recovery.as_ref(),
            )
            .inspect_err(|error| {
                self.log(
                    LogLevel::Warn,
                    LogCode::QueueRunFailed,
                    format!("queued reconcile failed: {error}"),
                    item,
                );
            })?;
        // A queued reconcile plans its nudge and then dispatches the team's
        // due nudges (without the background refresh), as the app's queue does.
        if !self.is_deleting(&item.team_name) {
            self.deps
                .nudges
                .plan(&item.team_name, &item.member_name, &status);
            let claimed_by = format!("member-work-sync:{}", std::process::id());
            let dispatched = self.with_team(&item.team_name, || {
                if !self.deps.ports.host.can_dispatch_nudges(&item.team_name) {
                    return Ok(DispatchSummary::default());
                }
                Ok(self
                    .deps
                    .nudges
                    .dispatch_team(&item.team_name, &claimed_by, &|| !self.is_stopping())?)
            });
            if let Err(error) = dispatched.map(|_| ()).or_else(|error| match error {
                WorkSyncError::TeamQuiesced(_) => Ok(()),
                other => Err(other),
            }) {
                self.log(
                    LogLevel::Warn,
                    LogCode::DispatchIncomplete,
                    format!("nudge dispatch after a queued reconcile failed: {error}"),
                    item,
                );
            }
        }
        Ok(status)
    }

    /// `dispatchDueNudges`: deleting teams claim nothing; a stopped team's
    /// due nudges are superseded (`team_inactive`), as the app does.
    ///
    /// Every team is dispatched; if one could not be (its members cannot be
    /// listed, its outbox index cannot be written) the call then fails with
    /// the first such error, so a broken team is never reported as idle.
    pub fn dispatch_due_nudges(
        &self,
        teams: &[TeamName],
        claimed_by: &str,
    ) -> Result<DispatchSummary, WorkSyncError> {
        let mut total = DispatchSummary::default();
        let mut first_error = None;
        let mut seen = HashSet::new();
        for team in teams.iter().filter(|t| seen.insert(team_runtime_key(t))) {
            let dispatched = self.with_team(team, || {
                // The app's readiness gate: asked once per team and pass.
                if !self.deps.ports.host.can_dispatch_nudges(team) {
                    return Ok(DispatchSummary::default());
                }
                let keep_going = || !self.is_stopping();
                let nudges = &self.deps.nudges;
                let mut summary = nudges.dispatch_team(team, claimed_by, &keep_going)?;
                if keep_going() {
                    self.refresh_stale_statuses(team);
                    summary.add(&nudges.dispatch_team(team, claimed_by, &keep_going)?);
                }
                Ok(summary)
            });
            match dispatched {
                Ok(summary) => total.add(&summary),
                // A deleting team is skipped, not an error for the other teams.
                Err(WorkSyncError::TeamQuiesced(_)) => {}
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(total),
        }
    }

    /// The background refresh between a pass's two dispatches, as the app
    /// does it: every active roster member without a stored status (a
    /// `startup_scan`) or with one [`needs_background_refresh`] says is stale
    /// (a `manual_refresh`) is reconciled by the queue's hand, and its nudge
    /// planned. A member that fails is logged and the others still run.
    fn refresh_stale_statuses(&self, team: &TeamName) {
        let now = self.now();
        for member in self.deps.ports.teams.active_members(team) {
            if self.is_stopping() {
                return;
            }
            let trigger = match self.deps.ports.store.read(team, &member) {
                Ok(stored) => match stored.into_status() {
                    Some(status) if !needs_background_refresh(&status, now) => continue,
                    Some(_) => Trigger::ManualRefresh,
                    None => Trigger::StartupScan,
                },
                Err(_) => Trigger::StartupScan,
            };
            let refreshed =
                self.reconciler
                    .refresh_status(team, &member, ReconciledBy::Queue, &[trigger]);
            match refreshed {
                Ok(status) => {
                    self.deps.nudges.plan(team, &member, &status);
                }
                Err(error) => self.deps.ports.log.log(
                    LogEntry::new(
                        LogLevel::Warn,
                        LogCode::DispatchIncomplete,
                        format!("background status refresh before nudge dispatch failed: {error}"),
                    )
                    .with_context(json!({ "teamName": team, "memberName": member })),
                ),
            }
        }
    }

    /// Records the end of a run: done (or a follow-up pass when triggers
    /// arrived meanwhile), a retry 30 s later after a failure, or the item
    /// dropped after the last retry (logged and journaled). Then wakes a
    /// waiting deletion or dispose and the driver.
    pub fn finish(&self, key: &QueueKey, item: &QueueItem, succeeded: bool) {
        let (outcome, deleting) = {
            let mut state = self.state();
            let outcome = state.queue.finish(key, succeeded, self.now());
            (outcome, state.gate.is_fenced(&item.team_name))
        };
        let (team, member) = (&item.team_name, &item.member_name);
        // Audit before waking a waiting deletion, and never for a team being
        // deleted: the journal write would recreate its directory.
        match outcome {
            _ if deleting => {}
            FinishOutcome::Done | FinishOutcome::FollowUp => self.audit(
                AuditKind::QueueReconciled,
                team,
                member,
                json!({ "followUp": outcome == FinishOutcome::FollowUp }),
            ),
            FinishOutcome::RetryScheduled(at) => {
                self.log(
                    LogLevel::Warn,
                    LogCode::QueueRetryScheduled,
                    format!("queued reconcile retried at {}", format_iso(at)),
                    item,
                );
                self.audit(
                    AuditKind::QueueRetryScheduled,
                    team,
                    member,
                    json!({ "runAt": format_iso(at) }),
                )
            }
            FinishOutcome::DroppedAfterRetries => {
                self.log(
                    LogLevel::Error,
                    LogCode::QueueDropped,
                    "queued reconcile dropped after repeated failures",
                    item,
                );
                self.audit(
                    AuditKind::QueueDropped,
                    team,
                    member,
                    json!({ "reason": "reconcile_failed_max_retries" }),
                )
            }
        }
        self.finished.notify_all();
        self.wake();
    }

    /// Earliest time queued work is due.
    pub(crate) fn next_run_at(&self) -> Option<EpochMs> {
        self.state().queue.next_run_at()
    }

    /// Reconciles running now.
    pub fn running(&self) -> usize {
        self.state().queue.running()
    }

    /// `getQueueDiagnostics`.
    pub fn diagnostics(&self) -> QueueDiagnostics {
        QueueDiagnostics::of(&self.state().queue, &self.intake, self.now())
    }

    /// Records the supervisor's view of `team` (read by every later reconcile
    /// and dispatch); a team going offline loses its queued work at once.
    pub fn set_team_runtime_state(
        &self,
        team: &TeamName,
        active: bool,
        members: Option<Vec<String>>,
    ) {
        self.deps.ports.runtime.set(team, active, members);
        if !active {
            self.state().queue.drop_team(team);
        }
    }

    /// The stored status. A stale one is reconciled now; one that cannot be
    /// (a store failure), and a stale `caught_up` one, is returned with the
    /// staleness diagnostics and queued for a `manual_refresh`.
    pub fn get_status(
        &self,
        team: &TeamName,
        member: &MemberName,
        force_nudge: bool,
    ) -> Result<MemberStatus, WorkSyncError> {
        let read = self.with_team(team, || {
            let read = self.reconciler.read_status(team, member, force_nudge)?;
            // A read that reconciled plans like every persisted reconcile.
            if read.reconciled {
                self.deps.nudges.plan(team, member, &read.status);
            }
            Ok(read)
        })?;
        if read.queue_refresh {
            self.enqueue(team, member, Trigger::ManualRefresh);
        }
        Ok(read.status)
    }

    /// `refreshStatus` through the team gate: persist, then plan.
    /// A direct request carries no trigger reason (the app records none).
    pub fn refresh_status(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<MemberStatus, WorkSyncError> {
        self.reconcile_and_plan(team, member, ReconciledBy::Request, &[])
    }

    /// Reconciles one member through the team gate and plans its nudge.
    pub fn reconcile_and_plan(
        &self,
        team: &TeamName,
        member: &MemberName,
        by: ReconciledBy,
        triggers: &[Trigger],
    ) -> Result<MemberStatus, WorkSyncError> {
        self.with_team(team, || {
            let status = self.reconciler.refresh_status(team, member, by, triggers)?;
            self.deps.nudges.plan(team, member, &status);
            Ok(status)
        })
    }

    /// `refreshTeam` through the team gate.
    pub fn refresh_team(&self, team: &TeamName) -> Result<Vec<MemberStatus>, WorkSyncError> {
        self.with_team(team, || self.reconciler.refresh_team(team))
    }

    /// [`Reconciler::preview_status`] through the team gate: no side effects.
    pub fn preview_status(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<MemberStatus, WorkSyncError> {
        self.with_team(team, || self.reconciler.preview_status(team, member))
    }

    /// [`Reconciler::preview_team`] through the team gate: no side effects.
    pub fn preview_team(&self, team: &TeamName) -> Result<TeamPreview, WorkSyncError> {
        self.with_team(team, || self.reconciler.preview_team(team))
    }

    /// `report` through the team gate (a request without a usable team name is
    /// answered by the reporter itself).
    pub fn report(&self, request: &serde_json::Value) -> Result<ReportResult, WorkSyncError> {
        // The reporter refuses an unsafe name itself (`invalid teamName`).
        let team = request.get("teamName").and_then(serde_json::Value::as_str);
        match team.map(TeamName::parse) {
            Some(Ok(team)) => self.with_team(&team, || self.reconciler.report(request)),
            _ => self.reconciler.report(request),
        }
    }

    /// `getMetrics` through the team gate.
    pub fn get_metrics(&self, team: &TeamName) -> Result<TeamMetrics, WorkSyncError> {
        self.with_team(team, || self.reconciler.get_metrics(team))
    }

    /// [`Reconciler::preview_metrics`] through the team gate: no side effects.
    pub(crate) fn preview_metrics(&self, team: &TeamName) -> Result<TeamMetrics, WorkSyncError> {
        self.with_team(team, || self.reconciler.preview_metrics(team))
    }

    /// `getAgentBrief` through the team gate.
    pub(crate) fn agent_brief(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<serde_json::Value, WorkSyncError> {
        self.with_team(team, || self.reconciler.agent_brief(team, member))
    }

    /// `replayPendingReports`: deleting teams are skipped.
    pub fn replay_pending_reports(
        &self,
        teams: &[TeamName],
    ) -> Result<ReplaySummary, WorkSyncError> {
        let mut total = ReplaySummary::default();
        let mut seen = HashSet::new();
        for team in teams.iter().filter(|t| seen.insert(team_runtime_key(t))) {
            match self.with_team(team, || {
                self.reconciler
                    .replay_pending_reports(std::slice::from_ref(team))
            }) {
                Ok(summary) => total.add(&summary),
                Err(WorkSyncError::TeamQuiesced(_)) => {}
                Err(other) => return Err(other),
            }
        }
        Ok(total)
    }

    /// Asks long passes (nudge dispatch) to end at the next batch boundary.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Blocks until no reconcile is running (used by dispose).
    pub(crate) fn wait_idle(&self) {
        let mut state = self.state();
        while state.queue.running() > 0 {
            state = self.finished.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }
}
