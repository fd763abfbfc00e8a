//! Phase 2 nudges: what to send, when it may go, and the outbox item
//! lifecycle. One module per policy, as the app has one per policy:
//!
//! * `plan`: the nudge a status that needs sync gets (payload, id, hash);
//! * `activation`: whether it may go now, and why (or why not);
//! * `recovery`: how often a recovery nudge of one intent may go;
//! * `outbox`: the durable item's lifecycle (ensure, claim, attempt,
//!   retry, prune);
//! * `planner_code`: the planner's journaled verdict;
//! * `rate_limit` and `watchdog`: what holds a delivery back;
//! * `retry`: why an attempt is tried again, and how it is journaled.
//!
//! Pure: every function takes `now` and the facts it needs. The items are
//! re-exported here, so callers name them `domain::nudge::Item`.

mod activation;
mod outbox;
mod plan;
mod planner_code;
mod rate_limit;
mod recovery;
mod retry;
mod watchdog;

pub use activation::{
    activation, current_fingerprint_stable_since, has_active_work_lease, is_lead_like,
    readiness_metadata, Activation, ActivationHold, NATIVE_STALE_MS,
};
pub use outbox::{
    claim, ensure_pending, finish_attempt, is_claimable, jitter_minutes, prune_finished, retry_at,
    AttemptEnd, EnsureOutcome, OutboxItem, OutboxStatus, STALE_CLAIM_MS,
};
pub use plan::{is_strict_pickup, plan_nudge, NudgeIntent, NudgePayload, PlannedNudge, TaskRef};
pub use planner_code::PlannerCode;
pub use rate_limit::{
    is_rate_limited, DeliveryTime, DELIVERY_WINDOW_MS, MAX_DELIVERIES_PER_HOUR,
    MAX_FUTURE_DELIVERY_MS,
};
pub use recovery::{half_hour_bucket, recent_recovery, MAX_RECOVERIES_PER_HOUR};
pub use retry::RetryReason;
pub use watchdog::{watchdog_cooldown, WatchdogAlert, WATCHDOG_COOLDOWN_MS};

use crate::domain::time::EpochMs;

const MINUTE: EpochMs = 60_000;

#[cfg(test)]
mod tests;
