//! Recovery nudges (still stuck, task-protocol repair, proof missing): at
//! most [`MAX_RECOVERIES_PER_HOUR`] of one intent key per member, found from
//! the live outbox items of that key, keyed by half-hour bucket.

use crate::domain::time::{format_iso, EpochMs};

use super::outbox::{OutboxItem, OutboxStatus};
use super::MINUTE;

/// Recovery nudges of one kind per member per hour.
pub const MAX_RECOVERIES_PER_HOUR: usize = 2;

/// The 30-minute bucket of `now`, as ISO (still-stuck keys).
pub fn half_hour_bucket(now: EpochMs) -> String {
    format_iso(now - now.rem_euclid(30 * MINUTE))
}

/// The most recently updated outbox item of `intent_key` that was updated at
/// or after `since` and is still live (neither terminal nor superseded; a
/// delivered one counts, so a delivered recovery is not sent again at once).
pub fn recent_recovery<'a>(
    items: &'a [OutboxItem],
    intent_key: &str,
    since: EpochMs,
) -> Option<&'a OutboxItem> {
    items
        .iter()
        .filter(|item| item.payload.work_sync_intent_key.as_deref() == Some(intent_key))
        .filter(|item| {
            !matches!(
                item.status,
                OutboxStatus::FailedTerminal | OutboxStatus::Superseded
            )
        })
        .filter_map(|item| item.updated_at.ms().map(|at| (at, item)))
        .filter(|(at, _)| *at >= since)
        .max_by_key(|(at, _)| *at)
        .map(|(_, item)| item)
}
