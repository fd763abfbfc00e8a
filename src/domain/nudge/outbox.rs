//! The durable outbox item and its lifecycle: ensured pending for a planned
//! nudge (revived or refreshed, fenced by attempt generation), claimed by a
//! dispatcher (a stale claim taken over), finished by an attempt (retried
//! with bounded backoff and deterministic jitter), pruned once finished.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::domain::names::{MemberName, TeamName};
use crate::domain::retention::Retention;
use crate::domain::time::{EpochMs, IsoTime};

use super::plan::{NudgePayload, PlannedNudge};
use super::retry::RetryReason;
use super::MINUTE;

/// A claim older than this may be taken over (its dispatcher died).
pub const STALE_CLAIM_MS: EpochMs = 5 * MINUTE;

/// Lifecycle of an outbox item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum OutboxStatus {
    Pending,
    Claimed,
    Delivered,
    Superseded,
    FailedRetryable,
    FailedTerminal,
}

impl OutboxStatus {
    /// Delivered, superseded or failed for good: nothing more will happen to it.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            Self::Delivered | Self::Superseded | Self::FailedTerminal
        )
    }
}

/// One durable nudge (per-member `outbox.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct OutboxItem {
    pub id: String,
    pub team_name: String,
    pub member_name: String,
    pub agenda_fingerprint: String,
    pub payload_hash: String,
    pub payload: Arc<NudgePayload>,
    pub status: OutboxStatus,
    pub attempt_generation: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_at: Option<IsoTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<IsoTime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<IsoTime>,
    pub created_at: IsoTime,
    pub updated_at: IsoTime,
}

impl OutboxItem {
    /// An item as the app writes it has no `payload.agendaFingerprint`: the
    /// item's own fingerprint is the payload's.
    pub(crate) fn with_payload_fingerprint(mut self) -> Self {
        if self.payload.agenda_fingerprint.is_empty() {
            Arc::make_mut(&mut self.payload).agenda_fingerprint = self.agenda_fingerprint.clone();
        }
        self
    }
}

/// Drops finished items older than the retention's age and all but its
/// newest count of finished ones, so a member's outbox stays bounded however
/// often its agenda changes; open items always stay. The defaults (7 days,
/// 200 items) keep what the hourly rate limit and the per-agenda delivery
/// count that suppresses a member look at. Returns whether anything was
/// dropped.
pub fn prune_finished(
    items: &mut BTreeMap<String, OutboxItem>,
    now: EpochMs,
    retention: &Retention,
) -> bool {
    let (max_age, max_items) = (
        retention.outbox_finished_max_age_ms,
        retention.outbox_finished_max_items,
    );
    let before = items.len();
    // An unreadable update time sorts oldest: such an item is the first to go.
    let updated = |item: &OutboxItem| item.updated_at.ms().unwrap_or(EpochMs::MIN);
    items.retain(|_, item| !item.status.is_finished() || now - updated(item) <= max_age);
    let mut finished: Vec<(EpochMs, String)> = items
        .values()
        .filter(|item| item.status.is_finished())
        .map(|item| (updated(item), item.id.clone()))
        .collect();
    if finished.len() > max_items {
        finished.sort_unstable_by(|a, b| b.cmp(a));
        for (_, id) in finished.into_iter().skip(max_items) {
            items.remove(&id);
        }
    }
    items.len() != before
}

/// Result of putting a planned nudge into the outbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnsureOutcome {
    /// New pending item.
    Created,
    /// Already there (possibly revived to pending).
    Existing,
    /// Same id, other payload, and the old one was delivered or terminal.
    PayloadConflict,
}

/// `ensurePending`: create, revive or refresh the item for `planned`.
pub fn ensure_pending(
    existing: Option<OutboxItem>,
    planned: &PlannedNudge,
    team: &TeamName,
    member: &MemberName,
    now: EpochMs,
) -> (OutboxItem, EnsureOutcome) {
    let stamp = IsoTime::at(now);
    let Some(mut item) = existing else {
        return (
            OutboxItem {
                id: planned.id.clone(),
                team_name: team.to_string(),
                member_name: member.to_string(),
                agenda_fingerprint: planned.payload.agenda_fingerprint.clone(),
                payload_hash: planned.payload_hash.clone(),
                payload: planned.payload.clone(),
                status: OutboxStatus::Pending,
                attempt_generation: 0,
                claimed_by: None,
                claimed_at: None,
                delivered_message_id: None,
                delivered_at: None,
                last_error: None,
                next_attempt_at: None,
                created_at: stamp.clone(),
                updated_at: stamp,
            },
            EnsureOutcome::Created,
        );
    };
    let terminal = matches!(
        item.status,
        OutboxStatus::Delivered | OutboxStatus::FailedTerminal
    );
    if item.payload_hash != planned.payload_hash {
        if terminal {
            return (item, EnsureOutcome::PayloadConflict);
        }
        if item.status == OutboxStatus::Claimed {
            // Fence the old claim: its late marks must change nothing.
            item.attempt_generation += 1;
        }
        item.payload = planned.payload.clone();
        item.payload_hash = planned.payload_hash.clone();
        item.agenda_fingerprint = planned.payload.agenda_fingerprint.clone();
        item.status = OutboxStatus::Pending;
        item.next_attempt_at = None;
        item.updated_at = stamp;
        return (item, EnsureOutcome::Existing);
    }
    if matches!(
        item.status,
        OutboxStatus::Superseded | OutboxStatus::FailedRetryable
    ) {
        item.status = OutboxStatus::Pending;
        item.next_attempt_at = None;
        item.updated_at = stamp;
    }
    (item, EnsureOutcome::Existing)
}

/// True when a dispatcher may claim the item now.
pub fn is_claimable(item: &OutboxItem, now: EpochMs) -> bool {
    match item.status {
        // An unreadable retry or claim time never holds an item back.
        OutboxStatus::Pending | OutboxStatus::FailedRetryable => item
            .next_attempt_at
            .as_ref()
            .and_then(IsoTime::ms)
            .is_none_or(|at| at <= now),
        OutboxStatus::Claimed => item
            .claimed_at
            .as_ref()
            .and_then(IsoTime::ms)
            .is_none_or(|at| now - at >= STALE_CLAIM_MS || at > now),
        _ => false,
    }
}

/// Claims the item: `claimed`, generation + 1, the previous attempt's retry
/// time and error cleared (as the app's store claims).
pub fn claim(item: &mut OutboxItem, claimed_by: &str, now: EpochMs) {
    item.next_attempt_at = None;
    item.last_error = None;
    item.status = OutboxStatus::Claimed;
    item.attempt_generation += 1;
    item.claimed_by = Some(claimed_by.to_string());
    item.claimed_at = Some(IsoTime::at(now));
    item.updated_at = IsoTime::at(now);
}

/// How a claimed attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptEnd {
    /// Written to the inbox.
    Delivered,
    /// Try again at the given time.
    Retryable {
        /// Why the attempt failed; its spelling becomes the item's `lastError`.
        reason: RetryReason,
        /// When the item is due again; becomes its `nextAttemptAt`.
        retry_at: EpochMs,
        /// The tool the member was busy with, when the app named it; only
        /// the journal carries it.
        busy_tool: Option<String>,
    },
    /// Never going out (no longer true, or rate-limited for good).
    Superseded {
        /// Why it will never go out; becomes the item's `lastError`.
        reason: String,
    },
    /// A review pickup no delivery path can take: the item ends superseded,
    /// the journal says it was undeliverable and escalated.
    PickupUndeliverable {
        /// Why no path could take it; becomes the item's `lastError`.
        reason: String,
    },
    /// A conflicting inbox row exists.
    Terminal {
        /// The conflict found in the inbox; becomes the item's `lastError`.
        reason: String,
    },
}

/// Applies the end of an attempt; `false` (nothing changed) unless the item is
/// still claimed by generation `generation`.
pub fn finish_attempt(
    item: &mut OutboxItem,
    generation: u32,
    end: &AttemptEnd,
    now: EpochMs,
) -> bool {
    if item.status != OutboxStatus::Claimed || item.attempt_generation != generation {
        return false;
    }
    item.updated_at = IsoTime::at(now);
    item.claimed_by = None;
    item.claimed_at = None;
    match end {
        AttemptEnd::Delivered => {
            item.status = OutboxStatus::Delivered;
            item.delivered_message_id = Some(item.id.clone());
            item.delivered_at = Some(IsoTime::at(now));
            item.last_error = None;
        }
        AttemptEnd::Retryable {
            reason, retry_at, ..
        } => {
            item.status = OutboxStatus::FailedRetryable;
            item.last_error = Some(reason.to_string());
            item.next_attempt_at = Some(IsoTime::at(*retry_at));
        }
        AttemptEnd::Superseded { reason } | AttemptEnd::PickupUndeliverable { reason } => {
            item.status = OutboxStatus::Superseded;
            item.last_error = Some(reason.clone());
        }
        AttemptEnd::Terminal { reason } => {
            item.status = OutboxStatus::FailedTerminal;
            item.last_error = Some(reason.clone());
        }
    }
    true
}

/// Deterministic jitter in minutes: fold over `"<id>:<gen>"`, `v = (v*31 + c) % 997`, then `% 5`.
///
/// `c` is the first UTF-16 unit of each character, as the app's fold over a
/// string's code points with `charCodeAt(0)` reads it: a character outside
/// the BMP adds its high surrogate only.
pub fn jitter_minutes(id: &str, generation: u32) -> EpochMs {
    let mut v: u64 = 0;
    let mut units = [0u16; 2];
    for c in format!("{id}:{generation}").chars() {
        let first_unit = c.encode_utf16(&mut units)[0];
        v = (v * 31 + u64::from(first_unit)) % 997;
    }
    (v % 5) as EpochMs
}

/// Retry time: `now + min(60, 10·2^max(0, gen−1)) + jitter` minutes.
pub fn retry_at(id: &str, generation: u32, now: EpochMs) -> EpochMs {
    let exponent = generation.saturating_sub(1).min(16);
    let backoff = (10 * (1i64 << exponent)).min(60);
    now + (backoff + jitter_minutes(id, generation)) * MINUTE
}
