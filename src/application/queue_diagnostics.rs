//! `getQueueDiagnostics`: the coalescing queue as the app sees it (what
//! waits, what runs, counters since start). Also what the activity file
//! publishes.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use super::queue::QueueCore;
use crate::domain::time::{format_iso, EpochMs};

/// Team change events that never reached routing, counted for the
/// diagnostics (the worker's intake counts them).
#[derive(Debug, Default)]
pub struct IntakeCounters {
    /// Dropped because the intake channel was full.
    pub dropped: AtomicU64,
    /// Identical to an event still waiting for the intake: merged into it.
    pub merged: AtomicU64,
}

/// `getQueueDiagnostics` result: the queue now, and counters since start.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct QueueDiagnostics {
    /// Items waiting to run.
    pub queued: usize,
    /// Reconciles running now.
    pub running: usize,
    /// Triggers that created a new item, since start.
    pub enqueued: u64,
    /// Triggers merged into a queued or running item, since start.
    pub coalesced: u64,
    /// Reconciles finished, since start.
    pub reconciled: u64,
    /// Items dropped (retries exhausted, or their team's queue dropped).
    pub dropped: u64,
    /// Failed reconcile attempts, since start.
    pub failed: u64,
    /// Events dropped because the intake was full, since start.
    pub dropped_events: u64,
    /// Events merged into an identical one still waiting for the intake,
    /// since start.
    pub merged_events: u64,
    /// When the next waiting item is due (ISO-8601 UTC); absent when none waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<String>,
    /// Age of the longest-waiting item (since its first trigger), in ms;
    /// absent when none waits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_queued_age_ms: Option<EpochMs>,
    /// Age of the longest-running reconcile, in ms; absent when none runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_running_age_ms: Option<EpochMs>,
    /// The waiting items.
    pub queued_items: Vec<QueuedItemView>,
    /// The running reconciles, earliest started first.
    pub running_items: Vec<RunningItemView>,
}

/// One running reconcile in the diagnostics.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RunningItemView {
    /// Team of the member.
    pub team_name: String,
    /// The member.
    pub member_name: String,
    /// When it started (ISO-8601 UTC).
    pub started_at: String,
    /// How long it has run, in ms.
    pub age_ms: EpochMs,
    /// A trigger arrived while it ran: a follow-up pass is owed.
    pub rerun_requested: bool,
    /// The triggers it runs for, wire spelling.
    pub trigger_reasons: Vec<&'static str>,
}

/// One waiting item in the diagnostics.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct QueuedItemView {
    /// Team of the member, as first queued.
    pub team_name: String,
    /// The member, as first queued.
    pub member_name: String,
    /// When its first trigger came (ISO-8601 UTC).
    pub first_queued_at: String,
    /// When its latest trigger came (ISO-8601 UTC).
    pub last_queued_at: String,
    /// When it is due (ISO-8601 UTC).
    pub run_at: String,
    /// It runs no later than this however triggers keep coming (ISO-8601 UTC).
    pub max_run_at: String,
    /// Every distinct trigger merged into it, wire spelling, in the order of
    /// their delays (`manual_refresh` first).
    pub trigger_reasons: Vec<&'static str>,
    /// How many triggers of each reason merged into it.
    pub trigger_reason_counts: serde_json::Map<String, serde_json::Value>,
}

impl QueueDiagnostics {
    /// The view of `q` at `now`, with the intake's counters.
    pub fn of(q: &QueueCore, intake: &IntakeCounters, now: EpochMs) -> Self {
        let queued_items: Vec<QueuedItemView> = q
            .queued_items()
            .into_iter()
            .map(|i| QueuedItemView {
                team_name: i.team_name.to_string(),
                member_name: i.member_name.to_string(),
                first_queued_at: format_iso(i.first_queued_at),
                last_queued_at: format_iso(i.last_queued_at),
                run_at: format_iso(i.run_at),
                max_run_at: format_iso(i.max_run_at),
                trigger_reasons: i.triggers.iter().map(|t| t.as_str()).collect(),
                trigger_reason_counts: i
                    .trigger_counts
                    .iter()
                    .map(|(t, n)| (t.as_str().to_string(), json!(n)))
                    .collect(),
            })
            .collect();
        let running = q.running_items();
        let running_items: Vec<RunningItemView> = running
            .iter()
            .filter_map(|i| {
                let started = i.started_at?;
                Some(RunningItemView {
                    team_name: i.team_name.to_string(),
                    member_name: i.member_name.to_string(),
                    started_at: format_iso(started),
                    age_ms: now.saturating_sub(started).max(0),
                    rerun_requested: i.rerun.is_some(),
                    trigger_reasons: i.triggers.iter().map(|t| t.as_str()).collect(),
                })
            })
            .collect();
        let oldest_queued_age_ms = q
            .queued_items()
            .iter()
            .map(|i| i.first_queued_at)
            .min()
            .map(|at| now.saturating_sub(at).max(0));
        let oldest_running_age_ms = running
            .iter()
            .filter_map(|i| i.started_at)
            .min()
            .map(|at| now.saturating_sub(at).max(0));
        Self {
            queued: queued_items.len(),
            running: q.running(),
            enqueued: q.counters.enqueued,
            coalesced: q.counters.coalesced,
            reconciled: q.counters.reconciled,
            dropped: q.counters.dropped,
            failed: q.counters.failed,
            dropped_events: intake.dropped.load(Ordering::Relaxed),
            merged_events: intake.merged.load(Ordering::Relaxed),
            next_run_at: q.next_run_at().map(format_iso),
            oldest_queued_age_ms,
            oldest_running_age_ms,
            queued_items,
            running_items,
        }
    }
}
