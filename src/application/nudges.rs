//! Phase 2 use cases: plan a nudge after a queued reconcile, and dispatch due
//! nudges with revalidation right before the inbox write.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::delivery_record::DeliveryRecord;
use super::host::{DeliveryWake, Host, ReviewPickupEscalation};
use super::ports::{AuditEvent, MemberFailure, PortError, Ports};
use super::review_pickup;
use crate::domain::agenda::TeamIndex;
use crate::domain::audit::{AuditKind, AuditSource, LIST_ITEMS_KEPT};
use crate::domain::metrics::{readiness, MetricsIndex, Readiness, Thresholds};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::nudge::{
    activation, current_fingerprint_stable_since, plan_nudge, readiness_metadata, AttemptEnd,
    NudgeIntent, OutboxItem, PlannerCode, WatchdogAlert,
};
use crate::domain::status::MemberStatus;
use crate::domain::team::TeamSnapshot;
use crate::domain::time::{format_iso, EpochMs, MonotonicMs};

mod attempt;
mod planning;
mod recovery_guard;
use planning::{Planning, STATUS_ONLY_PREFIX, STILL_STUCK_PREFIX};

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

    /// Journals one line of `member` of `team`. The member is as the caller
    /// names it ([`AuditEvent::member_name`]): the dispatcher's lines name
    /// an outbox item's member as stored, also when that name was refused.
    fn audit(
        &self,
        source: AuditSource,
        kind: AuditKind,
        team: &TeamName,
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
            team_name: team.clone(),
            member_name: member.to_string(),
            at_ms: self.ports.clock.now_ms(),
            diagnostics,
            metadata,
        });
    }

    fn readiness(&self, index: &MetricsIndex) -> Readiness {
        readiness(index, Thresholds::default())
    }

    /// Plans the nudge of a freshly persisted reconcile's status (a queued
    /// one, `refreshStatus`, or a `getStatus` whose stale read reconciled; a
    /// read answered from the store plans nothing). Returns the planner
    /// code, if a nudge was considered at all.
    pub fn plan(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        status: &MemberStatus,
    ) -> Option<PlannerCode> {
        let base = plan_nudge(status)?;
        let now = self.ports.clock.now_ms();
        let Ok(index) = self.ports.metrics.read(team_name) else {
            return Some(self.plan_line(
                team_name,
                status,
                false,
                PlannerCode::MetricsUnavailable,
                None,
            ));
        };
        let readiness = self.readiness(&index);
        let since = current_fingerprint_stable_since(&index.recent_events, status, now);
        let reason = match activation(status, &readiness, since, now) {
            Ok(reason) => reason,
            Err(hold) => {
                return Some(self.plan_line(
                    team_name,
                    status,
                    false,
                    hold.into(),
                    Some(&readiness),
                ))
            }
        };
        if base.payload.work_sync_intent == NudgeIntent::ReviewPickup {
            let host = &*self.ports.host;
            // The status's member name is the normalized one.
            let member = member_name.normalized();
            if let Err(undeliverable) =
                review_pickup::delivery(host, team_name, &member, status.provider_id)
            {
                let why = undeliverable.planner_reason();
                self.plan_audit(
                    team_name,
                    status,
                    AuditKind::ReviewPickupDeliveryUnavailable,
                    &why,
                    true,
                );
                self.plan_escalation(team_name, &member, status, &base.payload, &why);
                return Some(self.plan_line(
                    team_name,
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
        team: &TeamName,
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
        metadata["taskRefs"] = agenda_task_refs(status);
        let kind = if planned {
            AuditKind::NudgePlanned
        } else {
            AuditKind::NudgeSkipped
        };
        self.audit(
            AuditSource::NudgePlanner,
            kind,
            team,
            &status.member_name,
            diagnostics,
            metadata,
        );
        code
    }

    /// A planner line of a review pickup that cannot go out
    /// (`review_pickup_delivery_unavailable`, which names its reason as its
    /// one diagnostic, or `review_pickup_escalated`).
    fn plan_audit(
        &self,
        team: &TeamName,
        status: &MemberStatus,
        kind: AuditKind,
        reason: &str,
        diagnosed: bool,
    ) {
        let mut metadata = planner_metadata(status, reason);
        metadata["taskRefs"] = agenda_task_refs(status);
        let diagnostics = if diagnosed {
            vec![reason.to_string()]
        } else {
            vec![]
        };
        self.audit(
            AuditSource::NudgePlanner,
            kind,
            team,
            &status.member_name,
            diagnostics,
            metadata,
        );
    }

    /// The planner's `review_pickup_escalated` line, then the app's
    /// escalation port is asked (the reviewer's status and the pickup's
    /// review requests and tasks), about `team` and `member` (normalized,
    /// as the status names it).
    fn plan_escalation(
        &self,
        team: &TeamName,
        member: &MemberName,
        status: &MemberStatus,
        payload: &crate::domain::nudge::NudgePayload,
        reason: &str,
    ) {
        self.plan_audit(
            team,
            status,
            AuditKind::ReviewPickupEscalated,
            reason,
            false,
        );
        let now = self.ports.clock.now_ms();
        let escalation = ReviewPickupEscalation {
            team_name: team,
            member_name: member,
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
                self.process(team, &item, &index, metrics.as_deref(), &alerts, summary);
            }
        }
        Ok(())
    }

    /// Counts and journals a member outbox that could not be read or claimed
    /// from. The journal line goes under the member's name, as every journal
    /// line does (the journal finds the member's folder from it); a folder no
    /// name maps back to is counted only, since journaling its key as a name
    /// would write into another folder (the key's own key).
    fn member_failed(
        &self,
        team: &TeamName,
        failure: &MemberFailure,
        summary: &mut DispatchSummary,
    ) {
        summary.failed += 1;
        let Some(member_name) = &failure.member_name else {
            return;
        };
        self.audit(
            AuditSource::NudgeDispatcher,
            AuditKind::OutboxUnavailable,
            team,
            member_name,
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
        if let (AttemptEnd::Delivered, Some(member)) = (&end, &notes.member) {
            // The inbox has it whatever becomes of the outcome write below.
            let at = self.monotonic_now();
            self.delivered.record(team, member, &item.id, at);
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
        match self.ports.outbox.finish(team, item, &end, now) {
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
            (AttemptEnd::Delivered, Some(taken)) => {
                format!("review_pickup:{}", taken.state())
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
                reason.to_string()
            }
            (
                AttemptEnd::Superseded { reason }
                | AttemptEnd::PickupUndeliverable { reason }
                | AttemptEnd::Terminal { reason },
                _,
            ) => reason.clone(),
        };
        metadata["reason"] = reason.clone().into();
        let kind = match &end {
            AttemptEnd::Retryable { reason, .. } => reason.journal_event(),
            _ => kind,
        };
        if let Some(taken) = notes.pickup {
            let mut delivered = metadata.clone();
            delivered["reason"] = taken.state().into();
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
            // Every undeliverable pickup was judged after the item's member
            // name was checked: the app is asked about that member.
            if let Some(member) = &notes.member {
                let escalation = ReviewPickupEscalation {
                    team_name: team,
                    member_name: member,
                    reason: &reason,
                    now,
                    agenda_fingerprint: Some(&item.agenda_fingerprint),
                    review_request_event_ids: &item.payload.work_sync_review_request_event_ids,
                    diagnostics: &[],
                    task_refs: &item.payload.task_refs,
                };
                review_pickup::escalate(&*self.ports.host, &escalation);
            }
        }
        if let (AttemptEnd::Delivered, Some(written), Some(member)) =
            (&end, notes.written, &notes.member)
        {
            self.wake(team, member, item, &written);
        }
    }

    /// Asks the app to wake the member for a delivered nudge
    /// (`nudgeDeliveryWake`), as the app's dispatcher does after recording
    /// the delivery; a failed wake is journaled `nudge_wake_failed` and the
    /// delivery stands.
    fn wake(&self, team: &TeamName, member: &MemberName, item: &OutboxItem, written: &InboxWrite) {
        let wake = DeliveryWake {
            team_name: team,
            member_name: member,
            message_id: &item.id,
            provider_id: written.provider_id,
            inserted: written.inserted,
        };
        if let Err(error) = self.ports.host.delivery_wake(&wake) {
            self.audit(
                AuditSource::NudgeDispatcher,
                AuditKind::NudgeWakeFailed,
                team,
                &item.member_name,
                vec![],
                json!({
                    "outboxId": item.id,
                    "reason": format!("nudge_wake_failed:{error}"),
                }),
            );
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
    /// The app's review pickup delivery took the prompt, when it was asked.
    pickup: Option<PickupTaken>,
    /// The member the item is for, once its stored name was checked (every
    /// delivered attempt and every undeliverable pickup has one): what the
    /// wake and the escalation ask the app about.
    member: Option<MemberName>,
}

/// The app's review pickup delivery took the prompt (its refusals and
/// failures are [`AttemptEnd`]s): what the journal says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PickupTaken {
    /// The runtime also answered it (`response_proven` rather than
    /// `prompt_accepted`).
    response_proven: bool,
}

impl PickupTaken {
    /// The delivery state the app named.
    fn state(self) -> &'static str {
        if self.response_proven {
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

/// The planner line's `taskRefs`: the agenda's first tasks, as many as a
/// journal line keeps (a 200-task agenda built 200 objects for 20 kept).
fn agenda_task_refs(status: &MemberStatus) -> Value {
    let refs = status
        .agenda
        .items
        .iter()
        .take(LIST_ITEMS_KEPT)
        .map(|item| {
            let mut task = serde_json::Map::new();
            task.insert("taskId".into(), Value::from(item.task_id.as_str()));
            task.insert("teamName".into(), Value::from(status.team_name.as_str()));
            if let Some(display) = &item.display_id {
                task.insert("displayId".into(), Value::from(display.as_str()));
            }
            Value::Object(task)
        });
    Value::Array(refs.collect())
}

fn merge(target: &mut Value, extra: Value) {
    if let (Value::Object(target), Value::Object(extra)) = (target, extra) {
        target.extend(extra);
    }
}
