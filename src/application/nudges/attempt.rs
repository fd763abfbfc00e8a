//! One delivery attempt of a claimed nudge: revalidated against the board
//! right before the inbox write, then written (a review pickup handed to the app).

use serde_json::{json, Value};

use super::{
    recovery_guard, AttemptNotes, InboxWrite, Nudges, PickupTaken, BUSY_RETRY_MS,
    STATUS_ONLY_PREFIX, STILL_STUCK_PREFIX,
};
use crate::application::busy::BusyReason;
use crate::application::host::{
    BusyQuestion, BusyRank, Host, ReviewPickupDelivered, ReviewPickupFailure, ReviewPickupRequest,
};
use crate::application::ports::InboxOutcome;
use crate::application::review_pickup;
use crate::domain::agenda::{Agenda, TeamIndex};
use crate::domain::decision::{decide, DecisionInput, RuntimeActivity};
use crate::domain::diagnostic::Diagnostic;
use crate::domain::metrics::MetricsIndex;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::nudge::{
    activation, current_fingerprint_stable_since, is_rate_limited, retry_at, watchdog_cooldown,
    AttemptEnd, DeliveryTime, NudgeIntent, OutboxItem, OutboxStatus, RetryReason, WatchdogAlert,
    DELIVERY_WINDOW_MS,
};
use crate::domain::nudge_suppression;
use crate::domain::runtime_stall;
use crate::domain::status::{MemberStatus, StatusState};
use crate::domain::time::{format_iso, EpochMs, IsoTime};

impl Nudges {
    /// Revalidates one claimed item right before the inbox write, then writes;
    /// `notes` gets the readiness that held it back or what it wrote.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn attempt(
        &self,
        team: &TeamName,
        item: &OutboxItem,
        index: &TeamIndex<'_>,
        metrics: Option<&MetricsIndex>,
        alerts: &Result<Vec<WatchdogAlert>, String>,
        now: EpochMs,
        notes: &mut AttemptNotes,
    ) -> AttemptEnd {
        let supersede = |reason: &str| AttemptEnd::Superseded {
            reason: reason.into(),
        };
        let retry = |reason: RetryReason, at: EpochMs| AttemptEnd::Retryable {
            reason,
            retry_at: at,
            busy_tool: None,
        };
        let backoff = retry_at(&item.id, item.attempt_generation, now);
        if !self.ports.team_active(team) {
            // The app's rule: a stopped team's nudge is superseded; the
            // reconcile after the team starts again revives it.
            return supersede("team_inactive");
        }
        // The item's member name was read from its outbox file: checked here,
        // once. A stored name unsafe as a folder never had a status written
        // (every write takes a checked name): its status is missing.
        let Ok(member_name) = MemberName::parse(&item.member_name) else {
            return supersede("status_missing");
        };
        let member = &member_name;
        notes.member = Some(member_name.clone());
        if !self.ports.member_active(team, member) {
            return supersede("member_runtime_inactive");
        }
        let status = match self.ports.store.read(team, member) {
            Ok(stored) => match stored.into_status() {
                Some(status) => status,
                None => return supersede("status_missing"),
            },
            Err(e) => {
                return retry(
                    RetryReason::AgendaRevalidationFailed(e.to_string()),
                    backoff,
                )
            }
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
            return retry(RetryReason::MetricsUnavailable, backoff);
        };
        let readiness = self.readiness(metrics);
        let since = current_fingerprint_stable_since(&metrics.recent_events, &status, now);
        if let Err(hold) = activation(&status, &readiness, since, now) {
            notes.held_by = Some(readiness);
            return retry(RetryReason::Held(hold), backoff);
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
        if let Some(end) =
            recovery_guard::guard_recovery(&*self.ports.host, team, member, item, now, backoff)
        {
            return end;
        }
        let items = match self.ports.outbox.member_items(team, member) {
            Ok(items) => items,
            // Without the member's deliveries the rate limit cannot be checked.
            Err(e) => return retry(RetryReason::OutboxUnavailable(e.to_string()), backoff),
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
                RetryReason::RateLimited,
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
                    reason: RetryReason::MemberBusy(busy.reason),
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
                reason: RetryReason::MemberBusy(busy.reason.as_str().into()),
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
            Err(e) => return retry(RetryReason::WatchdogJournalUnavailable(e.clone()), backoff),
        };
        if let Some(until) = watchdog_cooldown(alerts, &task_ids, member, now) {
            return retry(RetryReason::WatchdogCooldownActive, until);
        }
        if let Some(end) = host_busy(BusyRank::Extra) {
            return end;
        }
        match self.ports.inbox.deliver(team, member, item, now) {
            Ok(outcome @ (InboxOutcome::Inserted | InboxOutcome::AlreadyPresent)) => {
                let written = InboxWrite {
                    inserted: outcome == InboxOutcome::Inserted,
                    provider_id: status.provider_id,
                };
                if item.payload.work_sync_intent == NudgeIntent::ReviewPickup {
                    return self.deliver_pickup(team, member, item, &written, now, backoff, notes);
                }
                notes.written = Some(written);
                AttemptEnd::Delivered
            }
            Ok(InboxOutcome::PayloadConflict) => AttemptEnd::Terminal {
                reason: "inbox_payload_conflict".into(),
            },
            Err(failure) if failure.retryable => {
                retry(RetryReason::InboxWriteFailed(failure.reason), backoff)
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
    #[allow(clippy::too_many_arguments)]
    fn deliver_pickup(
        &self,
        team: &TeamName,
        member: &MemberName,
        item: &OutboxItem,
        written: &InboxWrite,
        now: EpochMs,
        backoff: EpochMs,
        notes: &mut AttemptNotes,
    ) -> AttemptEnd {
        let request = ReviewPickupRequest {
            team_name: team,
            member_name: member,
            message_id: &item.id,
            provider_id: written.provider_id,
            payload: &item.payload,
            inserted: written.inserted,
            now,
        };
        let retry = |reason: RetryReason, at: EpochMs| AttemptEnd::Retryable {
            reason,
            retry_at: at,
            busy_tool: None,
        };
        match self.ports.host.review_pickup_deliver(&request) {
            None => AttemptEnd::PickupUndeliverable {
                reason: review_pickup::PORT_UNAVAILABLE.into(),
            },
            Some(Err(error)) => retry(RetryReason::PickupCallFailed(error), backoff),
            Some(Ok(ReviewPickupDelivered::Accepted {
                response_proven, ..
            })) => {
                notes.pickup = Some(PickupTaken { response_proven });
                AttemptEnd::Delivered
            }
            Some(Ok(ReviewPickupDelivered::Refused {
                failure,
                message,
                retry_at,
                ..
            })) => match failure {
                ReviewPickupFailure::Retryable => {
                    // A retry time already past would be claimed again in
                    // this very pass: only a future one is taken.
                    retry(
                        RetryReason::PickupRefused(message),
                        retry_at.filter(|at| *at > now).unwrap_or(backoff),
                    )
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
        team: &TeamName,
        member: &MemberName,
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
            .is_some_and(|key| key.starts_with(STATUS_ONLY_PREFIX))
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
