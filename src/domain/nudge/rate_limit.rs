//! The dispatcher's per-member rate limit: at most
//! [`MAX_DELIVERIES_PER_HOUR`] deliveries within an hour, counted by the wall
//! clock or, for this process's own deliveries, the monotonic clock.

use crate::domain::time::{EpochMs, MonotonicMs};

use super::MINUTE;

/// Deliveries per member per hour.
pub const MAX_DELIVERIES_PER_HOUR: usize = 2;

/// The window [`MAX_DELIVERIES_PER_HOUR`] counts deliveries in.
pub const DELIVERY_WINDOW_MS: EpochMs = 60 * MINUTE;

/// How far after now a stored delivery may be dated and still count by the
/// wall clock (the clock stepped back since it went out). Beyond this only
/// the in-process monotonic record counts it, so a clock stepped back a year
/// never blocks a member's nudges for a year.
pub const MAX_FUTURE_DELIVERY_MS: EpochMs = 24 * 60 * MINUTE;

/// When one nudge to a member went out: by the wall clock (the outbox's
/// `deliveredAt`, which every process sees) and, when this process delivered
/// it, by the process's monotonic clock (which a wall-clock step does not move).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryTime {
    /// Wall-clock time of the delivery, as stored.
    pub wall: Option<EpochMs>,
    /// Monotonic time of the delivery, when this process made it.
    pub monotonic: Option<MonotonicMs>,
}

/// Whether a member must not get another nudge now: true when at least
/// [`MAX_DELIVERIES_PER_HOUR`] deliveries are within the last hour. The
/// dispatcher then retries the item [`DELIVERY_WINDOW_MS`] after `now`, as
/// the app does, and checks the limit again.
///
/// A delivery is within the hour when either clock says so. By the wall
/// clock, one dated after `now` counts too while it is at most
/// [`MAX_FUTURE_DELIVERY_MS`] ahead: the clock stepped back since it went
/// out, and it keeps counting until the clock passes it by an hour. By the
/// monotonic clock, one this process made less than an hour ago counts
/// however far the wall clock stepped since. So the limit errs toward fewer
/// nudges, except for deliveries dated more than a day ahead that another
/// process (or one before a restart) made.
pub fn is_rate_limited(
    deliveries: &[DeliveryTime],
    now: EpochMs,
    now_monotonic: MonotonicMs,
) -> bool {
    let within_hour = |delivery: &DeliveryTime| {
        let by_wall = delivery.wall.is_some_and(|at| {
            now.saturating_sub(at) < DELIVERY_WINDOW_MS
                && at.saturating_sub(now) <= MAX_FUTURE_DELIVERY_MS
        });
        let by_monotonic = delivery
            .monotonic
            .is_some_and(|at| now_monotonic.saturating_sub(at) < DELIVERY_WINDOW_MS);
        by_wall || by_monotonic
    };
    deliveries.iter().filter(|d| within_hour(d)).count() >= MAX_DELIVERIES_PER_HOUR
}
