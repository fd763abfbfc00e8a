//! The planner's verdict on one status, one wire spelling per code, from an
//! outbox outcome or an activation hold.

use super::activation::ActivationHold;
use super::outbox::EnsureOutcome;

/// The planner's verdict on one status, journaled as the `reason` of its
/// `nudge_planned` / `nudge_skipped` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlannerCode {
    /// A new pending item.
    Created,
    /// The item was already there (or a recovery is not due yet).
    Existing,
    /// Same id, other payload, and the old one was delivered or terminal.
    PayloadConflict,
    /// Not `needs_sync`, or nothing on the agenda.
    StatusNotNudgeable,
    /// The report rejection rate is too high.
    BlockingMetrics,
    /// Shadow data does not support phase 2 yet.
    Phase2NotReady,
    /// The team metrics could not be read.
    MetricsUnavailable,
    /// The outbox could not be read or written.
    OutboxUnavailable,
    /// The hour's task-protocol repairs are used up.
    TaskProtocolRepairRateLimited,
    /// No delivery path takes a review pickup.
    ReviewPickupDeliveryUnavailable,
    /// The review pickup nudge went out and the pickup is still on the agenda.
    ReviewPickupAlreadyDeliveredStillStuck,
    /// The review pickup nudge failed for good and is still on the agenda.
    ReviewPickupDeliveryFailedStillStuck,
    /// Older versions skipped a busy member's nudge with this code (the
    /// planner now plans it and the dispatcher waits); read back only.
    MemberBusy,
}

impl PlannerCode {
    /// Every code, in declaration order; the tests check that each has one
    /// spelling and parses back from it.
    pub(crate) const ALL: [PlannerCode; 13] = [
        Self::Created,
        Self::Existing,
        Self::PayloadConflict,
        Self::StatusNotNudgeable,
        Self::BlockingMetrics,
        Self::Phase2NotReady,
        Self::MetricsUnavailable,
        Self::OutboxUnavailable,
        Self::TaskProtocolRepairRateLimited,
        Self::ReviewPickupDeliveryUnavailable,
        Self::ReviewPickupAlreadyDeliveredStillStuck,
        Self::ReviewPickupDeliveryFailedStillStuck,
        Self::MemberBusy,
    ];

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Existing => "existing",
            Self::PayloadConflict => "payload_conflict",
            Self::StatusNotNudgeable => ActivationHold::StatusNotNudgeable.as_str(),
            Self::BlockingMetrics => ActivationHold::BlockingMetrics.as_str(),
            Self::Phase2NotReady => ActivationHold::Phase2NotReady.as_str(),
            Self::MetricsUnavailable => "metrics_unavailable",
            Self::OutboxUnavailable => "outbox_unavailable",
            Self::TaskProtocolRepairRateLimited => "task_protocol_repair_rate_limited",
            Self::ReviewPickupDeliveryUnavailable => "review_pickup_delivery_unavailable",
            Self::ReviewPickupAlreadyDeliveredStillStuck => {
                "review_pickup_already_delivered_still_stuck"
            }
            Self::ReviewPickupDeliveryFailedStillStuck => {
                "review_pickup_delivery_failed_still_stuck"
            }
            Self::MemberBusy => "member_busy",
        }
    }

    /// The code a wire spelling names; `None` for one outside the set.
    pub fn parse(spelling: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == spelling)
    }
}

impl EnsureOutcome {
    /// The planner code journaled for this outcome (`created`, `existing`,
    /// `payload_conflict`).
    pub fn code(self) -> &'static str {
        PlannerCode::from(self).as_str()
    }
}

impl From<EnsureOutcome> for PlannerCode {
    fn from(outcome: EnsureOutcome) -> Self {
        match outcome {
            EnsureOutcome::Created => Self::Created,
            EnsureOutcome::Existing => Self::Existing,
            EnsureOutcome::PayloadConflict => Self::PayloadConflict,
        }
    }
}

impl From<ActivationHold> for PlannerCode {
    fn from(hold: ActivationHold) -> Self {
        match hold {
            ActivationHold::StatusNotNudgeable => Self::StatusNotNudgeable,
            ActivationHold::BlockingMetrics => Self::BlockingMetrics,
            ActivationHold::Phase2NotReady => Self::Phase2NotReady,
        }
    }
}

/// Compares with a wire spelling (for assertions on planner codes).
impl PartialEq<&str> for PlannerCode {
    fn eq(&self, spelling: &&str) -> bool {
        self.as_str() == *spelling
    }
}
