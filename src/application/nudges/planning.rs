//! One planning of an activated nudge, in the app planner's order of rules:
//! the base nudge of the agenda into the outbox, then, once that went out,
//! the follow-up it calls for (a refresh when the text changed, a
//! status-only check after a settled turn, a still-stuck retry after six
//! minutes) or a task-protocol repair instead of the base.

use super::Nudges;
use crate::application::queue::Trigger;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::nudge::{
    half_hour_bucket, has_active_work_lease, Activation, EnsureOutcome, NudgeIntent, OutboxItem,
    OutboxStatus, PlannedNudge, PlannerCode, MAX_RECOVERIES_PER_HOUR,
};
use crate::domain::status::MemberStatus;
use crate::domain::time::EpochMs;

const MINUTE: EpochMs = 60_000;
/// The window the per-kind recovery limits count deliveries in.
const RECOVERY_WINDOW_MS: EpochMs = 60 * MINUTE;
/// A still-stuck retry waits this long after the nudge it follows went out.
const STILL_STUCK_AFTER_MS: EpochMs = 6 * MINUTE;

/// Intent key prefix of a status-only nudge (a runtime stall's).
pub(super) const STATUS_ONLY_PREFIX: &str = "status-only:";
const REFRESH_PREFIX: &str = "agenda-sync-refresh:";
/// Intent key prefix of a still-stuck retry.
pub(super) const STILL_STUCK_PREFIX: &str = "agenda-sync-still-stuck:";
const TASK_PROTOCOL_PREFIX: &str = "task-protocol-repair:";

const STATUS_ONLY_LEAD: &str = "Your turn ended while this agenda still needs a work sync status. Report still_working, blocked or caught_up with member_work_sync_report.";
const REFRESH_LEAD: &str = "Work sync refresh: an earlier nudge for this same agenda went out with older instructions. Act on this one.";
const STILL_STUCK_LEAD: &str =
    "Still stuck: this agenda has not changed since the last work sync check.";
const TASK_PROTOCOL_LEAD: &str = "Task protocol repair: your last turn ended with this task still in_progress and nothing on the board to show for it.\nKeep finished file work as it is; do not redo it.\nWork done: post a short result comment (task_add_comment), close the task (task_complete), then read member_work_sync_status and send member_work_sync_report with its current agendaFingerprint and reportToken.\nWork not done: comment the task with where it stands or what blocks it, then report still_working or blocked with member_work_sync_report.\nWhere the tools carry the Agent Teams prefix, call mcp__agent-teams__task_add_comment, mcp__agent-teams__task_complete, mcp__agent-teams__member_work_sync_status and mcp__agent-teams__member_work_sync_report.";

/// An activated nudge of one reconciled status, being planned.
pub(super) struct Planning<'a> {
    pub(super) nudges: &'a Nudges,
    /// The team and member planned for, as checked by the use case.
    pub(super) team: &'a TeamName,
    pub(super) member: &'a MemberName,
    pub(super) status: &'a MemberStatus,
    /// The agenda's own nudge.
    pub(super) base: PlannedNudge,
    /// Why it may go.
    pub(super) reason: Activation,
    /// The status's evaluation time: what the recovery windows and the
    /// still-stuck bucket are measured from.
    pub(super) evaluated_at: EpochMs,
}

/// Delivered or failed for good: no attempt is left.
fn awaits_delivery(item: &OutboxItem) -> bool {
    !matches!(
        item.status,
        OutboxStatus::Delivered | OutboxStatus::FailedTerminal
    )
}

impl Planning<'_> {
    /// Plans, journals the outcome and returns the planner code.
    pub(super) fn plan(&self) -> PlannerCode {
        if self.reason == Activation::NativeTaskProtocolRepair {
            return self.task_protocol_repair();
        }
        let Ok((item, outcome)) = self.ensure(&self.base) else {
            return self.skip(PlannerCode::OutboxUnavailable);
        };
        if outcome == EnsureOutcome::PayloadConflict {
            return self.after_conflict(&item);
        }
        if self.is_pickup() && item.status == OutboxStatus::Delivered {
            return self.pickup_still_stuck(PlannerCode::ReviewPickupAlreadyDeliveredStillStuck);
        }
        self.follow_up(&item, outcome)
    }

    /// The base item went out with another text: a refresh of it when it was
    /// delivered for this agenda, else a still-stuck retry or the conflict.
    fn after_conflict(&self, item: &OutboxItem) -> PlannerCode {
        if self.is_pickup() && item.status == OutboxStatus::Delivered {
            return self.pickup_still_stuck(PlannerCode::ReviewPickupAlreadyDeliveredStillStuck);
        }
        if self.plain_agenda_sync()
            && item.status == OutboxStatus::Delivered
            && item.agenda_fingerprint == self.base.payload.agenda_fingerprint
            && !has_active_work_lease(self.status)
        {
            let key = format!(
                "{REFRESH_PREFIX}{}:{}",
                self.status.agenda.fingerprint, self.base.payload_hash
            );
            let refresh = self.keyed(&key, REFRESH_LEAD);
            return match self.ensure(&refresh) {
                Err(_) => self.skip(PlannerCode::OutboxUnavailable),
                Ok((_, EnsureOutcome::PayloadConflict)) => self.skip(PlannerCode::PayloadConflict),
                Ok((refreshed, outcome)) => self.follow_up(&refreshed, outcome),
            };
        }
        if let Some(code) = self.still_stuck(item) {
            return code;
        }
        self.skip(PlannerCode::PayloadConflict)
    }

    /// What follows `item` (the base or its refresh) for this agenda: a
    /// status-only check after a settled turn, a still-stuck retry, else
    /// the item itself.
    fn follow_up(&self, item: &OutboxItem, outcome: EnsureOutcome) -> PlannerCode {
        if self.status_only_due(item) {
            return self.status_only();
        }
        if let Some(code) = self.still_stuck(item) {
            return code;
        }
        if self.is_pickup() && item.status == OutboxStatus::FailedTerminal {
            return self.pickup_still_stuck(PlannerCode::ReviewPickupDeliveryFailedStillStuck);
        }
        self.line(awaits_delivery(item), outcome.into())
    }

    /// The member's turn settled and the agenda nudge already went out.
    fn status_only_due(&self, item: &OutboxItem) -> bool {
        let turn_settled = self
            .status
            .shadow
            .as_ref()
            .and_then(|s| s.trigger_reasons.as_ref())
            .is_some_and(|t| {
                t.iter()
                    .any(|t| Trigger::parse(t) == Some(Trigger::TurnSettled))
            });
        turn_settled
            && self.plain_agenda_sync()
            && item.status == OutboxStatus::Delivered
            && !has_active_work_lease(self.status)
    }

    fn status_only(&self) -> PlannerCode {
        let key = format!("{STATUS_ONLY_PREFIX}{}", self.status.agenda.fingerprint);
        match self.ensure(&self.keyed(&key, STATUS_ONLY_LEAD)) {
            Err(_) => self.skip(PlannerCode::OutboxUnavailable),
            Ok((_, EnsureOutcome::PayloadConflict)) => self.skip(PlannerCode::PayloadConflict),
            Ok((item, outcome)) => match self.still_stuck(&item) {
                Some(code) => code,
                None => self.line(awaits_delivery(&item), outcome.into()),
            },
        }
    }

    /// A still-stuck retry after `previous`, this agenda's last nudge: when
    /// it went out (or met a conflicting inbox row) six minutes or more ago,
    /// at most [`MAX_RECOVERIES_PER_HOUR`] an hour, one per half hour.
    /// `None`: no retry is due, the caller goes on.
    fn still_stuck(&self, previous: &OutboxItem) -> Option<PlannerCode> {
        let went_out = previous.status == OutboxStatus::Delivered
            || (previous.status == OutboxStatus::FailedTerminal
                && previous.last_error.as_deref() == Some("inbox_payload_conflict"));
        let due = self.plain_agenda_sync()
            && went_out
            && previous.agenda_fingerprint == self.base.payload.agenda_fingerprint
            && !has_active_work_lease(self.status)
            && self.reason.allows_still_stuck()
            && previous
                .updated_at
                .ms()
                .is_some_and(|at| self.evaluated_at - at >= STILL_STUCK_AFTER_MS);
        if !due {
            return None;
        }
        let recent = match self.delivered_within_window(STILL_STUCK_PREFIX) {
            Ok(recent) => recent,
            Err(code) => return Some(self.skip(code)),
        };
        if recent >= MAX_RECOVERIES_PER_HOUR {
            return Some(self.skip(PlannerCode::Existing));
        }
        let key = format!(
            "{STILL_STUCK_PREFIX}{}:{}:{}",
            self.status.agenda.fingerprint,
            self.base.payload_hash,
            half_hour_bucket(self.evaluated_at)
        );
        Some(match self.ensure(&self.keyed(&key, STILL_STUCK_LEAD)) {
            Err(_) => self.skip(PlannerCode::OutboxUnavailable),
            Ok((_, EnsureOutcome::PayloadConflict)) => self.skip(PlannerCode::PayloadConflict),
            Ok((item, outcome)) => self.line(awaits_delivery(&item), outcome.into()),
        })
    }

    /// A Codex member's turn left its one in-progress task untouched: a
    /// repair nudge in place of the base, at most
    /// [`MAX_RECOVERIES_PER_HOUR`] an hour.
    fn task_protocol_repair(&self) -> PlannerCode {
        match self.delivered_within_window(TASK_PROTOCOL_PREFIX) {
            Err(code) => return self.skip(code),
            Ok(recent) if recent >= MAX_RECOVERIES_PER_HOUR => {
                return self.skip(PlannerCode::TaskProtocolRepairRateLimited)
            }
            Ok(_) => {}
        }
        let mut ids: Vec<&str> = self
            .status
            .agenda
            .items
            .iter()
            .map(|i| i.task_id.as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let key = format!(
            "{TASK_PROTOCOL_PREFIX}{}:{}",
            self.status.agenda.fingerprint,
            ids.join("+")
        );
        match self.ensure(&self.keyed(&key, TASK_PROTOCOL_LEAD)) {
            Err(_) => self.skip(PlannerCode::OutboxUnavailable),
            Ok((_, EnsureOutcome::PayloadConflict)) => self.skip(PlannerCode::PayloadConflict),
            Ok((item, outcome)) => self.line(awaits_delivery(&item), outcome.into()),
        }
    }

    /// The member's delivered nudges whose intent key starts with `prefix`,
    /// delivered (last updated) within the hour up to this evaluation, its
    /// start included.
    fn delivered_within_window(&self, prefix: &str) -> Result<usize, PlannerCode> {
        let items = self
            .nudges
            .ports
            .outbox
            .member_items(self.team, self.member)
            .map_err(|_| PlannerCode::OutboxUnavailable)?;
        let since = self.evaluated_at - RECOVERY_WINDOW_MS;
        Ok(items
            .iter()
            .filter(|i| i.status == OutboxStatus::Delivered)
            .filter(|i| {
                i.payload
                    .work_sync_intent_key
                    .as_deref()
                    .is_some_and(|k| k.starts_with(prefix))
            })
            .filter(|i| i.updated_at.ms().is_some_and(|at| at >= since))
            .count())
    }

    /// A review pickup that already went out (or failed for good) and is
    /// still on the agenda: escalated, nothing planned. Reached only while
    /// the app can deliver pickups ([`super::review_pickup::delivery`]).
    fn pickup_still_stuck(&self, code: PlannerCode) -> PlannerCode {
        // The status names the member normalized, as the escalation does.
        let member = self.member.normalized();
        self.nudges.plan_escalation(
            self.team,
            &member,
            self.status,
            &self.base.payload,
            code.as_str(),
        );
        self.skip(code)
    }

    /// The base nudge under a recovery intent key.
    fn keyed(&self, key: &str, lead: &str) -> PlannedNudge {
        self.base.keyed(self.team, self.member, key, lead)
    }

    fn ensure(
        &self,
        planned: &PlannedNudge,
    ) -> Result<(OutboxItem, EnsureOutcome), super::PortError> {
        let now = self.nudges.ports.clock.now_ms();
        // The outbox keeps the member as the status names it: normalized.
        let member = self.member.normalized();
        self.nudges
            .ports
            .outbox
            .ensure(self.team, &member, planned, now)
    }

    /// The base is a plain agenda sync (no pickup, no recovery of its own):
    /// the only nudge recoveries are planned after.
    fn plain_agenda_sync(&self) -> bool {
        self.base.payload.work_sync_intent == NudgeIntent::AgendaSync
            && self.base.payload.work_sync_intent_key.is_none()
    }

    fn is_pickup(&self) -> bool {
        self.base.payload.work_sync_intent == NudgeIntent::ReviewPickup
    }

    fn line(&self, planned: bool, code: PlannerCode) -> PlannerCode {
        self.nudges
            .plan_line(self.team, self.status, planned, code, None)
    }

    fn skip(&self, code: PlannerCode) -> PlannerCode {
        self.line(false, code)
    }
}
