//! Phase 2 use cases: plan a nudge after a queued reconcile, and dispatch due
//! nudges with revalidation right before the inbox write.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::busy::BusyReason;
use super::delivery_record::DeliveryRecord;
use super::host::{
    BusyQuestion, BusyRank, DeliveryWake, Host, ReviewPickupDelivered, ReviewPickupEscalation,
    ReviewPickupFailure, ReviewPickupRequest,
};
use super::ports::{AuditEvent, InboxOutcome, MemberFailure, PortError, Ports};
use super::review_pickup;
use crate::domain::agenda::{Agenda, TeamIndex};
use crate::domain::audit::{AuditKind, AuditSource};
use crate::domain::decision::{decide, DecisionInput, RuntimeActivity};
use crate::domain::diagnostic::Diagnostic;
use crate::domain::metrics::{readiness, MetricsIndex, Readiness, Thresholds};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::nudge::{
    activation, current_fingerprint_stable_since, is_rate_limited, plan_nudge, readiness_metadata,
    retry_at, watchdog_cooldown, AttemptEnd, DeliveryTime, NudgeIntent, OutboxItem, OutboxStatus,
    PlannerCode, WatchdogAlert, DELIVERY_WINDOW_MS,
};
use crate::domain::nudge_suppression;
use crate::domain::runtime_stall;
use crate::domain::status::{MemberStatus, StatusState};
use crate::domain::team::TeamSnapshot;
use crate::domain::time::{format_iso, EpochMs, IsoTime, MonotonicMs};

mod planning;
mod recovery_guard;
use planning::{Planning, STILL_STUCK_PREFIX};

/// Items one claim takes.
const CLAIM_LIMIT: usize = 10;
/// Longest one dispatch pass spends on a team.
const TEAM_BUDGET: Duration = Duration::from_secs(120);
/// A board read is reused for the next batch while younger than this.
const BOARD_MAX_AGE: Duration = Duration::from_secs(1);
/// Retry delay while the member is busy.
const BUSY_RETRY_MS: EpochMs = 90_000;

/// What one `dispatchDueNudges` call did, counted per outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DispatchSummary {
    /// Items claimed for an attempt.
    pub claimed: usize,
    /// Written to the inbox (or found there) and marked delivered.
    pub delivered: usize,
    /// Overtaken by the board, the runtime or an unusable inbox.
    pub superseded: usize,
    /// Put back for a later attempt (busy, cooldown, inbox IO, ...).
    pub retryable: usize,
    /// Ended for good (payload conflict).
    pub terminal: usize,
    /// File failures that left work undone: member outboxes that could not
    /// be read or claimed from (each counted once per call) plus claimed
    /// items whose outcome could not be written back. Each is journaled as
    /// `outbox_unavailable` with the error; the items stay in their outbox
    /// for a later pass.
    pub failed: usize,
}

impl DispatchSummary {
    /// Adds another pass's counts.
    pub(crate) fn add(&mut self, other: &DispatchSummary) {
        self.claimed += other.claimed;
        self.delivered += other.delivered;
        self.superseded += other.superseded;
        self.retryable += other.retryable;
        self.terminal += other.terminal;
        self.failed += other.failed;
    }
}

/// Planner and dispatcher.
pub struct Nudges {
    ports: Arc<Ports>,
    /// When by the monotonic clock this process made each member's latest
    /// deliveries: keeps the hourly limit across wall-clock steps forward.
    delivered: DeliveryRecord,
}

impl Nudges {
    /// Wires the use cases.
    pub fn new(ports: Arc<Ports>) -> Self {
        Self {
            ports,
            delivered: DeliveryRecord::default(),
        }
    }

    /// Now by the monotonic clock, in milliseconds.
    fn monotonic_now(&self) -> MonotonicMs {
        MonotonicMs::try_from(self.ports.clock.monotonic().as_millis()).unwrap_or(MonotonicMs::MAX)
    }

    fn audit(
        &self,
        source: AuditSource,
        kind: AuditKind,
        team: &str,
        member: &str,
        diagnostics: Vec<String>,
        metadata: Value,
    ) {
        let Value::Object(metadata) = metadata else {
            return;
        };
        self.ports.journal.record(AuditEvent {
            kind,
            source,
            team_name: team.to_string(),
            member_name: member.to_string(),
            at_ms: self.ports.clock.now_ms(),
            diagnostics,
            metadata,
        });
    }

    fn readiness(&self, index: &MetricsIndex) -> Readiness {
        readiness(index, Thresholds::default())
    }

    /// Plans the nudge of a freshly reconciled status (queued reconciles only;
    /// read-only `getStatus` never plans). Returns the planner code, if a nudge
    /// was considered at all.
    pub fn plan(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        status: &MemberStatus,
    ) -> Option<PlannerCode> {
        let base = plan_nudge(status)?;
        let team = status.team_name.as_str();
        let now = self.ports.clock.now_ms();
        let Ok(index) = self.ports.metrics.read(team_name) else {
            return Some(self.plan_line(status, false, PlannerCode::MetricsUnavailable, None));
        };
        let readiness = self.readiness(&index);
        let since = current_fingerprint_stable_since(&index.recent_events, status, now);
        let reason = match activation(status, &readiness, since, now) {
            Ok(reason) => reason,
            Err(hold) => return Some(self.plan_line(status, false, hold.into(), Some(&readiness))),
        };
        if base.payload.work_sync_intent == NudgeIntent::ReviewPickup {
            let host = &*self.ports.host;
            if let Err(undeliverable) =
                review_pickup::delivery(host, team, &status.member_name, status.provider_id)
            {
                let why = undeliverable.planner_reason();
                self.plan_audit(
                    status,
                    AuditKind::ReviewPickupDeliveryUnavailable,
                    &why,
                    true,
                );
                self.plan_escalation(status, &base.payload, &why);
                return Some(self.plan_line(
                    status,
                    false,
                    PlannerCode::ReviewPickupDeliveryUnavailable,
                    None,
                ));
            }
        }
        // A busy member's nudge is planned all the same: the dispatcher keeps
        // it `failed_retryable` with `member_busy:*` until the member is free.
        let planning = Planning {
            nudges: self,
            team: team_name,
            member: member_name,
            status,
            base,
            reason,
            evaluated_at: status.evaluated_at.ms().unwrap_or(now),
        };
        Some(planning.plan())
    }

    /// The planner's closing line: `nudge_planned` or `nudge_skipped` with
    /// the code as `reason`, the status summary and the agenda's tasks;
    /// readiness only where it held the nudge back. Returns the code.
    fn plan_line(
        &self,
        status: &MemberStatus,
        planned: bool,
        code: PlannerCode,
        readiness: Option<&Readiness>,
    ) -> PlannerCode {
        let mut metadata = planner_metadata(status, code.as_str());
        let diagnostics = match readiness {
            Some(readiness) => {
                merge(&mut metadata, readiness_metadata(readiness));
                readiness.diagnostics.clone()
            }
            None => vec![],
        };
        metadata["taskRefs"] = json!(agenda_task_refs(status));
        let kind = if planned {
            AuditKind::NudgePlanned
        } else {
            AuditKind::NudgeSkipped
        };
        let (team, member) = (status.team_name.as_str(), status.member_name.as_str());
        self.audit(
            AuditSource::NudgePlanner,
            kind,
            team,
            member,
            diagnostics,
            metadata,
        );
        code
    }

    /// A planner line of a review pickup that cannot go out
    /// (`review_pickup_delivery_unavailable`, which names its reason as its
    /// one diagnostic, or `review_pickup_escalated`).
    fn plan_audit(&self, status: &MemberStatus, kind: AuditKind, reason: &str, diagnosed: bool) {
        let mut metadata = planner_metadata(status, reason);
        metadata["taskRefs"] = json!(agenda_task_refs(status));
        let diagnostics = if diagnosed {
            vec![reason.to_string()]
        } else {
            vec![]
        };
        let (team, member) = (status.team_name.as_str(), status.member_name.as_str());
        self.audit(
            AuditSource::NudgePlanner,
            kind,
            team,
            member,
            diagnostics,
            metadata,
        );
    }

    /// The planner's `review_pickup_escalated` line, then the app's
    /// escalation port is asked (the reviewer's status and the pickup's
    /// review requests and tasks).
    fn plan_escalation(
        &self,
        status: &MemberStatus,
        payload: &crate::domain::nudge::NudgePayload,
        reason: &str,
    ) {
        self.plan_audit(status, AuditKind::ReviewPickupEscalated, reason, false);
        let now = self.ports.clock.now_ms();
        let escalation = ReviewPickupEscalation {
            team_name: &status.team_name,
            member_name: &status.member_name,
            reason,
            now: status.evaluated_at.ms().unwrap_or(now),
            agenda_fingerprint: Some(&status.agenda.fingerprint),
            review_request_event_ids: &payload.work_sync_review_request_event_ids,
            diagnostics: &status.diagnostics,
            task_refs: &payload.task_refs,
        };
        review_pickup::escalate(&*self.ports.host, &escalation);
    }

    /// Claims and delivers due nudges of one team.
    /// `keep_going` is asked between batches (false: the instance is stopping).
    ///
    /// A failure of one member outbox or item is counted in
    /// [`DispatchSummary::failed`] and the other members are still served;
    /// `Err` when the team itself cannot be dispatched (its members cannot be
    /// listed, its outbox index cannot be written).
    pub fn dispatch_team(
        &self,
        team: &TeamName,
        claimed_by: &str,
        keep_going: &dyn Fn() -> bool,
    ) -> Result<DispatchSummary, PortError> {
        let mut summary = DispatchSummary::default();
        let dispatched = self.dispatch_batches(team, claimed_by, keep_going, &mut summary);
        let indexed = self.ports.outbox.refresh_index(team);
        dispatched.and(indexed).map(|()| summary)
    }

    /// Claims and processes batches of [`CLAIM_LIMIT`] until nothing is due or
    /// the team's time budget is spent. The board is re-read for a batch once
    /// the last read is older than [`BOARD_MAX_AGE`].
    fn dispatch_batches(
        &self,
        team: &TeamName,
        claimed_by: &str,
        keep_going: &dyn Fn() -> bool,
        summary: &mut DispatchSummary,
    ) -> Result<(), PortError> {
        let clock = &self.ports.clock;
        let started = clock.monotonic();
        let mut board: Option<(Duration, TeamSnapshot)> = None;
        let mut failed_members = BTreeSet::new();
        while clock.monotonic().saturating_sub(started) < TEAM_BUDGET && keep_going() {
            let now = self.ports.clock.now_ms();
            let batch = self
                .ports
                .outbox
                .claim_due(team, claimed_by, CLAIM_LIMIT, now)?;
            for failure in batch.failures {
                // A member that fails every batch is one failure of the call.
                if failed_members.insert(failure.member_key.clone()) {
                    self.member_failed(team, &failure, summary);
                }
            }
            let claimed = batch.items;
            if claimed.is_empty() {
                return Ok(());
            }
            summary.claimed += claimed.len();
            if board.as_ref().is_none_or(|(read_at, _)| {
                clock.monotonic().saturating_sub(*read_at) > BOARD_MAX_AGE
            }) {
                board = Some((clock.monotonic(), self.ports.teams.load(team)));
            }
            let Some((_, snapshot)) = board.as_ref() else {
                return Ok(());
            };
            let index = TeamIndex::build(snapshot);
            let metrics = self.ports.metrics.read(team).ok();
            let alerts = self.ports.watchdog.alerts(team).map_err(|e| e.to_string());
            for item in claimed {
                self.process(team, &item, &index, metrics.as_ref(), &alerts, summary);
            }
        }
        Ok(())
    }

    /// Counts and journals a member outbox that could not be read or claimed from.
    fn member_failed(&self, team: &str, failure: &MemberFailure, summary: &mut DispatchSummary) {
        summary.failed += 1;
        self.audit(
            AuditSource::NudgeDispatcher,
            AuditKind::OutboxUnavailable,
            team,
            &failure.member_key,
            vec![],
            json!({ "reason": failure.error.to_string() }),
        );
    }

    /// Revalidates, delivers and records one claimed item.
    fn process(
        &self,
        team: &TeamName,
        item: &OutboxItem,
        index: &TeamIndex<'_>,
        metrics: Option<&MetricsIndex>,
        alerts: &Result<Vec<WatchdogAlert>, String>,
        summary: &mut DispatchSummary,
    ) {
        let now = self.ports.clock.now_ms();
        let mut notes = AttemptNotes::default();
        let end = self.attempt(team, item, index, metrics, alerts, now, &mut notes);
        if end == AttemptEnd::Delivered {
            // The inbox has it whatever becomes of the outcome write below.
            let at = self.monotonic_now();
            self.delivered.record(team, &item.member_name, &item.id, at);
        }
        let (counter, kind) = match &end {
            AttemptEnd::Delivered => (&mut summary.delivered, AuditKind::NudgeDelivered),
            AttemptEnd::Retryable { .. } => (&mut summary.retryable, AuditKind::NudgeRetryable),
            AttemptEnd::Superseded { .. } => (&mut summary.superseded, AuditKind::NudgeSuperseded),
            AttemptEnd::PickupUndeliverable { .. } => (
                &mut summary.superseded,
                AuditKind::ReviewPickupDeliveryUnavailable,
            ),
            AttemptEnd::Terminal { .. } => (&mut summary.terminal, AuditKind::NudgeSkipped),
        };
        match self.ports.outbox.finish(item, &end, now) {
            Ok(true) => *counter += 1,
            // The claim was taken over: the item stays with its new owner.
            Ok(false) => return,
            // The outcome is lost; the claim expires and a later pass retries
            // (a delivered row is then found in the inbox, not written twice).
            Err(error) => {
                summary.failed += 1;
                self.audit(
                    AuditSource::NudgeDispatcher,
                    AuditKind::OutboxUnavailable,
                    team,
                    &item.member_name,
                    vec![],
                    json!({ "outboxId": item.id, "reason": error.to_string() }),
                );
                return;
            }
        }
        let preview: Vec<&str> = item
            .payload
            .task_refs
            .iter()
            .take(3)
            .map(|r| r.display_id.as_str())
            .collect();
        let mut metadata = json!({
            "outboxId": item.id,
            "attemptGeneration": item.attempt_generation,
            "taskRefs": item.payload.task_refs,
            "messagePreview": preview.join("; "),
        });
        let reason = match (&end, notes.pickup) {
            (AttemptEnd::Delivered, Some(PickupAnswer::Delivered { response_proven })) => {
                format!("review_pickup:{}", PickupAnswer::state(response_proven))
            }
            (AttemptEnd::Delivered, _) => "inbox_inserted".to_string(),
            (
                AttemptEnd::Retryable {
                    reason,
                    retry_at,
                    busy_tool,
                },
                _,
            ) => {
                metadata["nextAttemptAt"] = format_iso(*retry_at).into();
                if let Some(tool) = busy_tool {
                    metadata["toolName"] = tool.as_str().into();
                }
                reason.clone()
            }
            (
                AttemptEnd::Superseded { reason }
                | AttemptEnd::PickupUndeliverable { reason }
                | AttemptEnd::Terminal { reason },
                _,
            ) => reason.clone(),
        };
        metadata["reason"] = reason.clone().into();
        let kind = match (&end, notes.pickup) {
            (AttemptEnd::Retryable { .. }, Some(PickupAnswer::RetryableFailure)) => {
                AuditKind::ReviewPickupWakeFailedRetryable
            }
            (AttemptEnd::Retryable { .. }, Some(PickupAnswer::CallFailed)) => {
                AuditKind::NudgeRetryable
            }
            (AttemptEnd::Retryable { .. }, _) => retry_event(&reason),
            _ => kind,
        };
        if let Some(PickupAnswer::Delivered { response_proven }) = notes.pickup {
            let mut delivered = metadata.clone();
            delivered["reason"] = PickupAnswer::state(response_proven).into();
            self.audit(
                AuditSource::NudgeDispatcher,
                AuditKind::ReviewPickupMemberNudgeDelivered,
                team,
                &item.member_name,
                vec![],
                delivered,
            );
        }
        // Readiness that held the nudge back is journaled as the planner does.
        let diagnostics = match notes.held_by {
            Some(readiness) => {
                merge(&mut metadata, readiness_metadata(&readiness));
                readiness.diagnostics
            }
            None => vec![],
        };
        let escalated = matches!(end, AttemptEnd::PickupUndeliverable { .. });
        self.audit(
            AuditSource::NudgeDispatcher,
            kind,
            team,
            &item.member_name,
            diagnostics,
            metadata.clone(),
        );
        if escalated {
            self.audit(
                AuditSource::NudgeDispatcher,
                AuditKind::ReviewPickupEscalated,
                team,
                &item.member_name,
                vec![],
                metadata,
            );
            let escalation = ReviewPickupEscalation {
                team_name: &item.team_name,
                member_name: &item.member_name,
                reason: &reason,
                now,
                agenda_fingerprint: Some(&item.agenda_fingerprint),
                review_request_event_ids: &item.payload.work_sync_review_request_event_ids,
                diagnostics: &[],
                task_refs: &item.payload.task_refs,
            };
            review_pickup::escalate(&*self.ports.host, &escalation);
        }
        if let (AttemptEnd::Delivered, Some(written)) = (&end, notes.written) {
            self.wake(item, &written);
        }
    }

    /// Asks the app to wake the member for a delivered nudge
    /// (`nudgeDeliveryWake`), as the app's dispatcher does after recording
    /// the delivery; a failed wake is journaled `nudge_wake_failed` and the
    /// delivery stands.
    fn wake(&self, item: &OutboxItem, written: &InboxWrite) {
        let wake = DeliveryWake {
            team_name: &item.team_name,
            member_name: &item.member_name,
            message_id: &item.id,
            provider_id: written.provider_id,
            inserted: written.inserted,
        };
        if let Err(error) = self.ports.host.delivery_wake(&wake) {
            self.audit(
                AuditSource::NudgeDispatcher,
                AuditKind::NudgeWakeFailed,
                &item.team_name,
                &item.member_name,
                vec![],
                json!({
                    "outboxId": item.id,
                    "reason": format!("nudge_wake_failed:{error}"),
                }),
            );
        }
    }

    /// Revalidates one claimed item right before the inbox write, then writes;
    /// `notes` gets the readiness that held it back or what it wrote.
    #[allow(clippy::too_many_arguments)]
    fn attempt(
        &self,
        team_name: &TeamName,
        item: &OutboxItem,
        index: &TeamIndex<'_>,
        metrics: Option<&MetricsIndex>,
        alerts: &Result<Vec<WatchdogAlert>, String>,
        now: EpochMs,
        notes: &mut AttemptNotes,
    ) -> AttemptEnd {
        let (team, member) = (item.team_name.as_str(), item.member_name.as_str());
        let supersede = |reason: &str| AttemptEnd::Superseded {
            reason: reason.into(),
        };
        let retry = |reason: String, at: EpochMs| AttemptEnd::Retryable {
            reason,
            retry_at: at,
            busy_tool: None,
        };
        let backoff = retry_at(&item.id, item.attempt_generation, now);
        let runtime = self.ports.activity(team, member);
        if !runtime.team_active {
            // The app's rule: a stopped team's nudge is superseded; the
            // reconcile after the team starts again revives it.
            return supersede("team_inactive");
        }
        if !runtime.member_active {
            return supersede("member_runtime_inactive");
        }
        // A stored name unsafe as a folder never had a status written (every
        // write takes a checked name): its status is missing, as before.
        let Ok(member_name) = MemberName::parse(member) else {
            return supersede("status_missing");
        };
        let status = match self.ports.store.read(team_name, &member_name) {
            Ok(stored) => match stored.into_status() {
                Some(status) => status,
                None => return supersede("status_missing"),
            },
            Err(e) => return retry(format!("agenda_revalidation_failed:{e}"), backoff),
        };
        // Decided again now, as the app's dispatcher does: the board's agenda
        // (a member off the roster has an empty one) and the stored lease. An
        // agenda that moved since planning never gets this nudge.
        let status = redecided(&status, index.agenda_for(member, &format_iso(now)), now);
        if status.state != StatusState::NeedsSync
            || status.agenda.items.is_empty()
            || status.agenda.fingerprint != item.agenda_fingerprint
        {
            return supersede("status_no_longer_matches_outbox");
        }
        if nudge_suppression::is_recorded(&status) {
            return supersede(Diagnostic::NudgeSuppressed.as_str());
        }
        let Some(metrics) = metrics else {
            return retry("metrics_unavailable".into(), backoff);
        };
        let readiness = self.readiness(metrics);
        let since = current_fingerprint_stable_since(&metrics.recent_events, &status, now);
        if let Err(hold) = activation(&status, &readiness, since, now) {
            notes.held_by = Some(readiness);
            return retry(hold.as_str().into(), backoff);
        }
        if item.payload.work_sync_intent == NudgeIntent::ReviewPickup {
            let host = &*self.ports.host;
            if let Err(undeliverable) =
                review_pickup::delivery(host, team, member, status.provider_id)
            {
                return AttemptEnd::PickupUndeliverable {
                    reason: undeliverable.dispatcher_reason(),
                };
            }
        }
        if let Some(end) = recovery_guard::guard_recovery(&*self.ports.host, item, now, backoff) {
            return end;
        }
        let items = match self.ports.outbox.member_items(team_name, &member_name) {
            Ok(items) => items,
            // Without the member's deliveries the rate limit cannot be checked.
            Err(e) => return retry(format!("outbox_unavailable:{e}"), backoff),
        };
        // A still-stuck retry is held to the still-stuck retries delivered in
        // the hour (the app's rule), any other nudge to every delivery.
        let only = item
            .payload
            .work_sync_intent_key
            .as_deref()
            .filter(|key| key.starts_with(STILL_STUCK_PREFIX))
            .map(|_| STILL_STUCK_PREFIX);
        if is_rate_limited(
            &self.deliveries(team, member, &items, only),
            now,
            self.monotonic_now(),
        ) {
            // As the app: an hour from now, whenever the oldest delivery leaves the window.
            return retry(
                "member_nudge_rate_limited".into(),
                now.saturating_add(DELIVERY_WINDOW_MS),
            );
        }
        let busy_question = BusyQuestion {
            team_name: team,
            member_name: member,
            now,
            payload: busy_payload(&item.payload),
        };
        // The app's busy signals: its priority ones before the tool
        // activity, its extra ones after, the first busy one deciding.
        let host_busy = |rank| {
            self.ports
                .host
                .busy(&busy_question, rank)
                .map(|busy| AttemptEnd::Retryable {
                    reason: format!("member_busy:{}", busy.reason),
                    // A retry time already past would be claimed again in
                    // this very pass: only a future one is taken.
                    retry_at: busy
                        .retry_at
                        .filter(|at| *at > now)
                        .unwrap_or(now + BUSY_RETRY_MS),
                    busy_tool: None,
                })
        };
        if let Some(end) = host_busy(BusyRank::Priority) {
            return end;
        }
        if let Some(busy) = self
            .ports
            .busy
            .busy_with(team, member, now)
            .filter(|busy| !ignores_busy(&item.payload, busy.reason))
        {
            return AttemptEnd::Retryable {
                reason: format!("member_busy:{}", busy.reason.as_str()),
                retry_at: now + BUSY_RETRY_MS,
                busy_tool: busy.tool_name,
            };
        }
        let task_ids: Vec<&str> = item
            .payload
            .task_refs
            .iter()
            .map(|r| r.task_id.as_str())
            .collect();
        let alerts = match alerts {
            Ok(alerts) => alerts,
            // A cooldown that cannot be checked holds the nudge back.
            Err(e) => return retry(format!("watchdog_journal_unavailable:{e}"), backoff),
        };
        if let Some(until) = watchdog_cooldown(alerts, &task_ids, member, now) {
            return retry("watchdog_cooldown_active".into(), until);
        }
        if let Some(end) = host_busy(BusyRank::Extra) {
            return end;
        }
        match self.ports.inbox.deliver(item, now) {
            Ok(outcome @ (InboxOutcome::Inserted | InboxOutcome::AlreadyPresent)) => {
                let written = InboxWrite {
                    inserted: outcome == InboxOutcome::Inserted,
                    provider_id: status.provider_id,
                };
                if item.payload.work_sync_intent == NudgeIntent::ReviewPickup {
                    return self.deliver_pickup(item, &written, now, backoff, notes);
                }
                notes.written = Some(written);
                AttemptEnd::Delivered
            }
            Ok(InboxOutcome::PayloadConflict) => AttemptEnd::Terminal {
                reason: "inbox_payload_conflict".into(),
            },
            Err(failure) if failure.retryable => {
                retry(format!("inbox_write_failed:{}", failure.reason), backoff)
            }
            Err(failure) => supersede(&format!("inbox_unavailable:{}", failure.reason)),
        }
    }
}

impl Nudges {
    /// Hands a review pickup whose inbox row is written to the app's
    /// `reviewPickupDelivery.deliver`, as the app's dispatcher does: an
    /// accepted prompt delivers the item (no wake follows), a retryable
    /// refusal retries it when the app says (`review_pickup_wake_failed_retryable`),
    /// an absent capability supersedes and escalates it, a terminal refusal
    /// fails it for good; a call that threw or did not answer in time is
    /// retried with the usual backoff (`nudge_retryable`).
    fn deliver_pickup(
        &self,
        item: &OutboxItem,
        written: &InboxWrite,
        now: EpochMs,
        backoff: EpochMs,
        notes: &mut AttemptNotes,
    ) -> AttemptEnd {
        let request = ReviewPickupRequest {
            team_name: &item.team_name,
            member_name: &item.member_name,
            message_id: &item.id,
            provider_id: written.provider_id,
            payload: &item.payload,
            inserted: written.inserted,
            now,
        };
        let retry = |reason: String, at: EpochMs| AttemptEnd::Retryable {
            reason,
            retry_at: at,
            busy_tool: None,
        };
        match self.ports.host.review_pickup_deliver(&request) {
            None => AttemptEnd::PickupUndeliverable {
                reason: review_pickup::PORT_UNAVAILABLE.into(),
            },
            Some(Err(error)) => {
                notes.pickup = Some(PickupAnswer::CallFailed);
                retry(error, backoff)
            }
            Some(Ok(ReviewPickupDelivered::Accepted {
                response_proven, ..
            })) => {
                notes.pickup = Some(PickupAnswer::Delivered { response_proven });
                AttemptEnd::Delivered
            }
            Some(Ok(ReviewPickupDelivered::Refused {
                failure,
                message,
                retry_at,
                ..
            })) => match failure {
                ReviewPickupFailure::Retryable => {
                    notes.pickup = Some(PickupAnswer::RetryableFailure);
                    // A retry time already past would be claimed again in
                    // this very pass: only a future one is taken.
                    retry(message, retry_at.filter(|at| *at > now).unwrap_or(backoff))
                }
                ReviewPickupFailure::CapabilityAbsent => {
                    AttemptEnd::PickupUndeliverable { reason: message }
                }
                ReviewPickupFailure::Terminal => AttemptEnd::Terminal { reason: message },
            },
        }
    }
}

impl Nudges {
    /// The member's deliveries: each delivered outbox item by its stored
    /// wall-clock time, joined by id with the monotonic times this process
    /// recorded (including deliveries whose outbox row is gone or unmarked).
    ///
    /// With `only` (an intent key prefix), just the deliveries of nudges
    /// whose key starts with it.
    fn deliveries(
        &self,
        team: &str,
        member: &str,
        items: &[OutboxItem],
        only: Option<&str>,
    ) -> Vec<DeliveryTime> {
        let mut recorded = self.delivered.of(team, member);
        if let Some(prefix) = only {
            // A recorded delivery's id ends with its intent key.
            let marker = format!(":{prefix}");
            recorded.retain(|d| d.outbox_id.contains(&marker));
        }
        let mut deliveries: Vec<DeliveryTime> = items
            .iter()
            .filter(|i| i.status == OutboxStatus::Delivered)
            .filter(|i| {
                only.is_none_or(|prefix| {
                    i.payload
                        .work_sync_intent_key
                        .as_deref()
                        .is_some_and(|key| key.starts_with(prefix))
                })
            })
            .map(|i| {
                let here = recorded.iter().position(|d| d.outbox_id == i.id);
                DeliveryTime {
                    wall: i.delivered_at.as_ref().and_then(IsoTime::ms),
                    monotonic: here.map(|at| recorded.swap_remove(at).at),
                }
            })
            .collect();
        deliveries.extend(recorded.into_iter().map(|d| DeliveryTime {
            wall: None,
            monotonic: Some(d.at),
        }));
        deliveries
    }
}

/// Reasons of a retry after a store or the inbox failed (prefixes): where
/// the app's dispatcher throws and journals `nudge_retryable`.
const FAILURE_REASONS: [&str; 5] = [
    recovery_guard::GUARD_FAILED_PREFIX,
    "inbox_write_failed:",
    "outbox_unavailable:",
    "watchdog_journal_unavailable:",
    "metrics_unavailable",
];

/// The journal event of a retry, by its reason (the app's mapping): a
/// failure is `nudge_retryable`; a hold found by revalidation (readiness,
/// the hourly limit, an agenda that could not be loaded) is `nudge_skipped`
/// unless its reason has an event of its own.
fn retry_event(reason: &str) -> AuditKind {
    if reason.starts_with("member_busy:") {
        AuditKind::MemberBusy
    } else if FAILURE_REASONS.iter().any(|r| reason.starts_with(r)) {
        AuditKind::NudgeRetryable
    } else {
        match reason {
            "watchdog_cooldown_active" => AuditKind::WatchdogCooldownActive,
            "team_inactive" => AuditKind::TeamInactive,
            _ => AuditKind::NudgeSkipped,
        }
    }
}

/// What an attempt learned besides its end, for what follows it.
#[derive(Debug, Default)]
struct AttemptNotes {
    /// The phase 2 readiness, when activation held the item back (journaled).
    held_by: Option<Readiness>,
    /// What a delivered attempt wrote (for the wake).
    written: Option<InboxWrite>,
    /// What the app's review pickup delivery answered, when it was asked.
    pickup: Option<PickupAnswer>,
}

/// What the app's review pickup delivery answered, for the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PickupAnswer {
    /// The runtime took the prompt (`response_proven`: and answered it).
    Delivered {
        /// `response_proven` rather than `prompt_accepted`.
        response_proven: bool,
    },
    /// The app refused, worth trying again.
    RetryableFailure,
    /// The call threw or did not answer in time.
    CallFailed,
}

impl PickupAnswer {
    /// The delivery state the app named.
    fn state(response_proven: bool) -> &'static str {
        if response_proven {
            "response_proven"
        } else {
            "prompt_accepted"
        }
    }
}

/// What a delivered attempt wrote, for the wake that follows it.
#[derive(Debug)]
struct InboxWrite {
    /// This attempt wrote the row (false: an earlier one had).
    inserted: bool,
    /// The member's provider on the revalidated status.
    provider_id: Option<crate::domain::team::ProviderId>,
}

/// The payload fields the app's busy signals get: intent, intent key and task refs.
fn busy_payload(payload: &crate::domain::nudge::NudgePayload) -> Value {
    let mut fields = json!({
        "workSyncIntent": payload.work_sync_intent,
        "taskRefs": payload.task_refs,
    });
    if let Some(key) = &payload.work_sync_intent_key {
        fields["workSyncIntentKey"] = key.as_str().into();
    }
    fields
}

fn ignores_busy(payload: &crate::domain::nudge::NudgePayload, busy: BusyReason) -> bool {
    busy == BusyReason::RecentToolActivity
        && payload
            .work_sync_intent_key
            .as_deref()
            .is_some_and(|key| key.starts_with("status-only:"))
}

/// The stored status as decided again at `now` on the board's `agenda`:
/// the decision with the stored lease (the accepted report, else the one a
/// later rejected report left behind), the agenda's and the decision's
/// diagnostics, and the stored runtime-stall diagnostics while the same
/// agenda still needs sync. What the app's dispatcher checks a nudge against.
fn redecided(stored: &MemberStatus, agenda: Agenda, now: EpochMs) -> MemberStatus {
    let lease = stored.report.clone().filter(|r| r.accepted);
    let decision = decide(&DecisionInput {
        on_active_roster: true,
        runtime: RuntimeActivity {
            team_active: true,
            member_active: true,
        },
        item_count: agenda.items.len(),
        fingerprint: &agenda.fingerprint,
        accepted_report: lease.as_ref(),
        now_ms: now,
    });
    let mut diagnostics = agenda.diagnostics.clone();
    diagnostics.extend(decision.diagnostics.iter().map(|d| d.to_string()));
    for stall in runtime_stall::carried(stored, decision.state, &agenda.fingerprint) {
        if !diagnostics.contains(stall) {
            diagnostics.push(stall.clone());
        }
    }
    let mut status = stored.clone();
    status.state = decision.state;
    status.report = lease.filter(|_| decision.state != StatusState::NeedsSync);
    if let Some(shadow) = status.shadow.as_mut() {
        shadow.would_nudge = decision.state == StatusState::NeedsSync && !agenda.items.is_empty();
    }
    status.agenda = agenda;
    status.evaluated_at = IsoTime::at(now);
    status.diagnostics = diagnostics;
    status
}

/// The planner's line fields of a status: its agenda, state and provider,
/// with `reason`.
fn planner_metadata(status: &MemberStatus, reason: &str) -> Value {
    let mut metadata = json!({
        "agendaFingerprint": status.agenda.fingerprint,
        "state": status.state,
        "actionableCount": status.agenda.items.len(),
        "reason": reason,
    });
    if let Some(provider) = status.provider_id {
        metadata["providerId"] = json!(provider);
    }
    metadata
}

/// The journal's task references of a status: every agenda item.
fn agenda_task_refs(status: &MemberStatus) -> Vec<Value> {
    status
        .agenda
        .items
        .iter()
        .map(|item| {
            let mut task = json!({ "taskId": item.task_id, "teamName": status.team_name });
            if let Some(display) = &item.display_id {
                task["displayId"] = json!(display);
            }
            task
        })
        .collect()
}

fn merge(target: &mut Value, extra: Value) {
    if let (Value::Object(target), Value::Object(extra)) = (target, extra) {
        target.extend(extra);
    }
}

#[cfg(test)]
mod tests {
    use super::retry_event;

    #[test]
    fn retry_events_follow_the_apps_mapping() {
        let cases = [
            ("member_busy:active_tool_activity", "member_busy"),
            ("watchdog_cooldown_active", "watchdog_cooldown_active"),
            ("team_inactive", "team_inactive"),
            ("inbox_write_failed:EACCES", "nudge_retryable"),
            ("outbox_unavailable:disk full", "nudge_retryable"),
            ("watchdog_journal_unavailable:EIO", "nudge_retryable"),
            ("metrics_unavailable", "nudge_retryable"),
            ("blocking_metrics", "nudge_skipped"),
            ("phase2_not_ready", "nudge_skipped"),
            ("status_not_nudgeable", "nudge_skipped"),
            ("member_nudge_rate_limited", "nudge_skipped"),
            ("agenda_revalidation_failed:EIO", "nudge_skipped"),
        ];
        for (reason, event) in cases {
            assert_eq!(retry_event(reason), event, "{reason}");
        }
    }
}
