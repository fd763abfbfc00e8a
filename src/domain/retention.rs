//! How much history the addon keeps on disk, and how long.
//!
//! Every file the addon grows has a bound: the per-member journal rotates,
//! finished outbox items are pruned, and the turn-settled spool keeps a
//! bounded number of processed and invalid events. The defaults are the
//! numbers the addon has always used; the app may override each within the
//! bounds below (the constructor's `tuning` option), which keep every rule
//! that reads history working: the hourly rate limit needs an hour of
//! finished outbox items, and readers cap a journal file at the default
//! rotation size plus one append.

use super::time::EpochMs;

const HOUR_MS: EpochMs = 3_600_000;
const DAY_MS: EpochMs = 24 * HOUR_MS;

/// The journal, outbox and spool retention of one addon instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Size at which a member's `journal.jsonl` rotates.
    pub journal_rotate_bytes: u64,
    /// Rotated journal generations kept (`journal.jsonl.1` …).
    pub journal_rotations: u32,
    /// How long finished outbox items (delivered, superseded, failed for
    /// good) are kept.
    pub outbox_finished_max_age_ms: EpochMs,
    /// Most finished outbox items kept per member, newest first.
    pub outbox_finished_max_items: usize,
    /// Processed spool events kept, newest first.
    pub spool_processed_max_files: usize,
    /// How long processed spool events are kept.
    pub spool_processed_max_age_ms: EpochMs,
    /// Invalid spool events kept, newest first.
    pub spool_invalid_max_files: usize,
    /// How long invalid spool events are kept.
    pub spool_invalid_max_age_ms: EpochMs,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            journal_rotate_bytes: 5 * 1024 * 1024,
            journal_rotations: 5,
            outbox_finished_max_age_ms: 7 * DAY_MS,
            outbox_finished_max_items: 200,
            spool_processed_max_files: 1000,
            spool_processed_max_age_ms: DAY_MS,
            spool_invalid_max_files: 100,
            spool_invalid_max_age_ms: 3 * DAY_MS,
        }
    }
}

/// Inclusive bounds of each override, as the binding checks them.
pub(crate) mod bounds {
    use super::{DAY_MS, HOUR_MS};

    /// `journal_rotate_bytes`: 64 KiB up to the default (readers cap a
    /// journal file at the default size plus one append).
    pub(crate) const JOURNAL_ROTATE_BYTES: (u64, u64) = (64 * 1024, 5 * 1024 * 1024);
    /// `journal_rotations`: from one rotated journal generation kept to 20.
    pub(crate) const JOURNAL_ROTATIONS: (u64, u64) = (1, 20);
    /// `outbox_finished_max_age_ms`: at least the hour the rate limit looks back.
    pub(crate) const OUTBOX_FINISHED_MAX_AGE_MS: (u64, u64) = (HOUR_MS as u64, 90 * DAY_MS as u64);
    /// `outbox_finished_max_items`: at least the rate limit's window of deliveries.
    pub(crate) const OUTBOX_FINISHED_MAX_ITEMS: (u64, u64) = (10, 10_000);
    /// `spool_processed_max_files` and `spool_invalid_max_files`.
    pub(crate) const SPOOL_MAX_FILES: (u64, u64) = (0, 100_000);
    /// `spool_processed_max_age_ms` and `spool_invalid_max_age_ms`.
    pub(crate) const SPOOL_MAX_AGE_MS: (u64, u64) = (0, 30 * DAY_MS as u64);
}
