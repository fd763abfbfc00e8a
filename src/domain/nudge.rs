//! Phase 2 nudges: what to send, when it may go, and the outbox item
//! lifecycle.
//!
//! Pure: every function takes `now` and the facts it needs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::agenda::{Agenda, ItemKind, ItemReason};
use super::diagnostic::{has, parsed, Diagnostic, StallTrigger};
use super::fingerprint::{canonical_json, sha256_hex};
use super::metrics::{MetricEvent, MetricKind, Readiness, ReadinessReason, ReadinessState};
use super::names::normalize_member_name;
use super::nudge_text::{agenda_preview, agenda_sync_text, display_id, review_pickup_text};
use super::retention::Retention;
use super::review_cycle::ReviewObligation;
use super::status::{MemberStatus, ReportState, StatusState};
use super::team::{ProviderId, TaskStatus};
use super::time::{format_iso, parse_iso, EpochMs, IsoTime, MonotonicMs};

const MINUTE: EpochMs = 60_000;
/// Recovery nudges of one kind per member per hour.
pub const MAX_RECOVERIES_PER_HOUR: usize = 2;
/// Deliveries per member per hour.
pub const MAX_DELIVERIES_PER_HOUR: usize = 2;
/// The window [`MAX_DELIVERIES_PER_HOUR`] counts deliveries in.
pub const DELIVERY_WINDOW_MS: EpochMs = 60 * MINUTE;
/// How far after now a stored delivery may be dated and still count by the
/// wall clock (the clock stepped back since it went out). Beyond this only
/// the in-process monotonic record counts it, so a clock stepped back a year
/// never blocks a member's nudges for a year.
pub const MAX_FUTURE_DELIVERY_MS: EpochMs = 24 * 60 * MINUTE;
/// Needs-sync age before stale native work may be nudged while collecting.
pub const NATIVE_STALE_MS: EpochMs = 6 * MINUTE;
/// A claim older than this may be taken over (its dispatcher died).
pub const STALE_CLAIM_MS: EpochMs = 5 * MINUTE;
/// Watchdog alerts silence nudges for this long.
pub const WATCHDOG_COOLDOWN_MS: EpochMs = 10 * MINUTE;

/// Why a nudge is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NudgeIntent {
    /// General "your agenda needs attention".
    AgendaSync,
    /// A clean review pickup.
    ReviewPickup,
}

/// A task reference in a nudge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct TaskRef {
    pub team_name: String,
    pub task_id: String,
    pub display_id: String,
}

/// The immutable content of a nudge (hashed into `payloadHash`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct NudgePayload {
    pub to: String,
    pub text: String,
    pub task_refs: Vec<TaskRef>,
    pub work_sync_intent: NudgeIntent,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_sync_intent_key: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub work_sync_review_request_event_ids: Vec<String>,
    /// The app's payloads carry none (the item has it): empty when read
    /// from one, then filled in from the item ([`OutboxItem::with_payload_fingerprint`]).
    #[serde(default)]
    pub agenda_fingerprint: String,
}

impl NudgePayload {
    /// sha256 hex of the canonical JSON payload.
    pub fn hash(&self) -> String {
        sha256_hex(canonical_json(&serde_json::to_value(self).unwrap_or(Value::Null)).as_bytes())
    }
}

/// A nudge the planner wants in the outbox.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedNudge {
    /// `member-work-sync:<team>:<member lc>:<intentKey ?? fp>`.
    pub id: String,
    /// What the member's inbox message will say; its hash tells a changed
    /// nudge from the one already in the outbox.
    pub payload: NudgePayload,
    /// `payload.hash()`.
    pub payload_hash: String,
    /// First three `"<displayId> <subject>"`, joined with `; `.
    pub preview: String,
}

/// True when every item is a clean review pickup.
pub fn is_strict_pickup(agenda: &Agenda) -> bool {
    !agenda.items.is_empty() && agenda.items.iter().all(is_strict_pickup_item)
}

/// The nudge for a status, if the status is nudgeable at all.
pub fn plan_nudge(status: &MemberStatus) -> Option<PlannedNudge> {
    let would_nudge = status.shadow.as_ref().is_some_and(|s| s.would_nudge);
    if status.state != StatusState::NeedsSync || !would_nudge || status.agenda.items.is_empty() {
        return None;
    }
    let agenda = &status.agenda;
    let task_refs: Vec<TaskRef> = agenda
        .items
        .iter()
        .map(|item| TaskRef {
            team_name: status.team_name.clone(),
            task_id: item.task_id.clone(),
            display_id: display_id(&item.task_id, item.display_id.as_deref()),
        })
        .collect();
    let recovery = status.shadow.as_ref().and_then(|s| s.recovery.as_ref());
    let (intent, intent_key, review_ids, text) = if is_strict_pickup(agenda) {
        let mut ids: Vec<String> = agenda
            .items
            .iter()
            .filter_map(|i| i.evidence.review_request_event_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        (
            NudgeIntent::ReviewPickup,
            Some(format!("review-pickup:{}", ids.join("+"))),
            ids,
            review_pickup_text(status),
        )
    } else {
        (
            NudgeIntent::AgendaSync,
            recovery.map(|r| r.intent_key.clone()),
            Vec::new(),
            agenda_sync_text(status, recovery),
        )
    };
    let payload = NudgePayload {
        to: status.member_name.clone(),
        text,
        task_refs,
        work_sync_intent: intent,
        work_sync_intent_key: intent_key.clone(),
        work_sync_review_request_event_ids: review_ids,
        agenda_fingerprint: agenda.fingerprint.clone(),
    };
    Some(PlannedNudge {
        id: format!(
            "member-work-sync:{}:{}:{}",
            status.team_name,
            normalize_member_name(&status.member_name),
            intent_key.as_deref().unwrap_or(&agenda.fingerprint)
        ),
        payload_hash: payload.hash(),
        payload,
        preview: agenda_preview(status),
    })
}

/// True for names that read as "the lead" (nudge policy: name only).
pub fn is_lead_like(member: &str) -> bool {
    let name: String = member.trim().to_lowercase();
    let mut collapsed = String::with_capacity(name.len());
    let mut last_dash = false;
    for c in name.chars() {
        if c.is_whitespace() || c == '_' {
            if !last_dash {
                collapsed.push('-');
            }
            last_dash = true;
        } else {
            collapsed.push(c);
            last_dash = c == '-';
        }
    }
    matches!(
        collapsed.as_str(),
        "lead" | "team-lead" | "teamlead" | "team-leader"
    )
}

/// Why a nudge may go; journaled as its wire
/// spelling ([`Activation::as_str`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// A clean review pickup (goes out even while shadow data is collected).
    ReviewPickupRequired,
    /// A Codex member ended a turn without touching its one in-progress task.
    NativeTaskProtocolRepair,
    /// A native member's in-progress work needs sync for 6 minutes or more.
    NativeStaleInProgress,
    /// A native member's assigned work needs sync for 6 minutes or more.
    NativeStaleAssignedWork,
    /// A runtime stall of an OpenCode member while shadow data is collected.
    OpencodeTargetedShadowCollecting,
    /// A runtime stall of a lead while shadow data is collected.
    LeadTargetedShadowCollecting,
    /// A runtime stall of a native member while shadow data is collected.
    NativeTargetedShadowCollecting,
    /// Shadow data supports phase 2.
    ShadowReady,
}

impl Activation {
    /// The wire spelling (journal `reason`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReviewPickupRequired => "review_pickup_required",
            Self::NativeTaskProtocolRepair => "native_task_protocol_repair",
            Self::NativeStaleInProgress => "native_stale_in_progress",
            Self::NativeStaleAssignedWork => "native_stale_assigned_work",
            Self::OpencodeTargetedShadowCollecting => "opencode_targeted_shadow_collecting",
            Self::LeadTargetedShadowCollecting => "lead_targeted_shadow_collecting",
            Self::NativeTargetedShadowCollecting => "native_targeted_shadow_collecting",
            Self::ShadowReady => "shadow_ready",
        }
    }

    /// True when the base nudge of this activation may get a still-stuck
    /// follow-up: phase 2 proper, stale native work and targeted stalls, not
    /// a pickup or a protocol repair.
    pub fn allows_still_stuck(self) -> bool {
        matches!(
            self,
            Self::ShadowReady
                | Self::NativeStaleInProgress
                | Self::NativeStaleAssignedWork
                | Self::OpencodeTargetedShadowCollecting
                | Self::LeadTargetedShadowCollecting
                | Self::NativeTargetedShadowCollecting
        )
    }
}

/// Why no nudge may go now: the planner code (journaled `nudge_skipped`, or
/// the dispatcher's retry reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActivationHold {
    /// Not `needs_sync`, or nothing on the agenda.
    StatusNotNudgeable,
    /// The report rejection rate is too high.
    BlockingMetrics,
    /// Shadow data does not support phase 2 yet.
    Phase2NotReady,
}

impl ActivationHold {
    /// The planner code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StatusNotNudgeable => "status_not_nudgeable",
            Self::BlockingMetrics => "blocking_metrics",
            Self::Phase2NotReady => "phase2_not_ready",
        }
    }
}

/// Why a nudge may go, or what holds it back, in the app's order of rules.
///
/// A team-wide would-nudge rate or fingerprint churn never holds a nudge
/// back (a stalled member keeps adding would-nudge samples, so using them
/// would lock out exactly the members that need a sync); only a high report
/// rejection rate does, and not for OpenCode members or leads. Deliveries
/// stay bounded by the outbox's idempotency, the dispatcher's rate limit,
/// busy checks and cooldowns.
///
/// `stable_since` is when the current agenda started needing sync without
/// an accepted report ([`current_fingerprint_stable_since`]).
pub fn activation(
    status: &MemberStatus,
    readiness: &Readiness,
    stable_since: Option<EpochMs>,
    now: EpochMs,
) -> Result<Activation, ActivationHold> {
    if status.state != StatusState::NeedsSync || status.agenda.items.is_empty() {
        return Err(ActivationHold::StatusNotNudgeable);
    }
    let would_nudge = status.shadow.as_ref().is_some_and(|s| s.would_nudge);
    let pickup_candidate = would_nudge && is_strict_pickup(&status.agenda);
    let collecting = readiness.state == ReadinessState::CollectingShadowData;
    if collecting && pickup_candidate {
        return Ok(Activation::ReviewPickupRequired);
    }
    if would_nudge && needs_task_protocol_repair(status) {
        return Ok(Activation::NativeTaskProtocolRepair);
    }
    if let Some(stale) = would_nudge
        .then(|| stale_native_work(status, stable_since, now))
        .flatten()
    {
        return Ok(stale);
    }
    let blocking = readiness
        .reasons
        .contains(&ReadinessReason::ReportRejectionRateHigh);
    if let Some(targeted) = would_nudge.then(|| targeted_recovery(status)).flatten() {
        if targeted != Activation::NativeTargetedShadowCollecting {
            return Ok(targeted);
        }
        if blocking {
            return Err(ActivationHold::BlockingMetrics);
        }
        if readiness.state != ReadinessState::ShadowReady {
            return Ok(targeted);
        }
    }
    if blocking {
        return Err(ActivationHold::BlockingMetrics);
    }
    if pickup_candidate {
        return Ok(Activation::ReviewPickupRequired);
    }
    if readiness.state == ReadinessState::ShadowReady {
        return Ok(Activation::ShadowReady);
    }
    Err(ActivationHold::Phase2NotReady)
}

/// Providers whose members watch their inbox natively.
fn is_native(provider: Option<ProviderId>) -> bool {
    matches!(
        provider,
        Some(ProviderId::Anthropic | ProviderId::Codex | ProviderId::Gemini)
    )
}

/// Owned work the board says is in progress.
fn is_owned_in_progress(item: &super::agenda::ActionableWorkItem) -> bool {
    item.kind == ItemKind::Work
        && item.reason == ItemReason::OwnedInProgressTask
        && item.evidence.status == TaskStatus::InProgress.as_str()
}

/// Owned work in progress, or owned work still pending.
fn is_stale_work(item: &super::agenda::ActionableWorkItem) -> bool {
    is_owned_in_progress(item)
        || (item.kind == ItemKind::Work
            && item.reason == ItemReason::OwnedPendingTask
            && item.evidence.status == TaskStatus::Pending.as_str())
}

/// A clean review pickup item.
fn is_strict_pickup_item(item: &super::agenda::ActionableWorkItem) -> bool {
    let e = &item.evidence;
    item.kind == ItemKind::Review
        && e.review_obligation.as_deref() == Some(ReviewObligation::PickupRequired.as_str())
        && e.can_bypass_phase2 == Some(true)
        && e.review_request_event_id
            .as_deref()
            .is_some_and(|id| !id.is_empty())
        && e.review_diagnostics.as_ref().is_none_or(|d| d.is_empty())
}

/// True while an accepted `still_working` / `blocked` report of the current
/// agenda holds a lease that outlives the evaluation.
pub fn has_active_work_lease(status: &MemberStatus) -> bool {
    let Some(report) = status.report.as_ref() else {
        return false;
    };
    if !report.accepted
        || report.agenda_fingerprint != status.agenda.fingerprint
        || !matches!(
            report.state,
            ReportState::StillWorking | ReportState::Blocked
        )
    {
        return false;
    }
    match (
        status.evaluated_at.ms(),
        report.expires_at.as_ref().and_then(IsoTime::ms),
    ) {
        (Some(evaluated), Some(expires)) => expires > evaluated,
        _ => false,
    }
}

/// A native (non-lead) member with no accepted work proof for this agenda.
fn native_without_proof(status: &MemberStatus, providers: &[ProviderId]) -> bool {
    let no_proof = parsed(&status.diagnostics).any(|d| {
        matches!(
            d,
            Diagnostic::NoCurrentReport
                | Diagnostic::ReportLeaseMissing
                | Diagnostic::ReportLeaseExpired
                | Diagnostic::ReportFingerprintStale
        )
    });
    no_proof
        && status.provider_id.is_some_and(|p| providers.contains(&p))
        && !is_lead_like(&status.member_name)
        && !has_active_work_lease(status)
}

/// A Codex member whose turn settled with its one in-progress task untouched.
fn needs_task_protocol_repair(status: &MemberStatus) -> bool {
    let has = |diagnostic| has(&status.diagnostics, diagnostic);
    native_without_proof(status, &[ProviderId::Codex])
        && status.agenda.items.len() == 1
        && is_owned_in_progress(&status.agenda.items[0])
        && has(Diagnostic::RuntimeStall)
        && has(Diagnostic::StallTrigger(StallTrigger::TurnSettled))
}

/// Owned work of a native member that has needed sync for
/// [`NATIVE_STALE_MS`] or more under the same agenda.
fn stale_native_work(
    status: &MemberStatus,
    stable_since: Option<EpochMs>,
    now: EpochMs,
) -> Option<Activation> {
    let items = &status.agenda.items;
    let eligible = native_without_proof(
        status,
        &[ProviderId::Anthropic, ProviderId::Codex, ProviderId::Gemini],
    ) && items
        .iter()
        .all(|i| is_stale_work(i) || is_strict_pickup_item(i))
        && items.iter().any(is_stale_work);
    let stale = stable_since.is_some_and(|since| now - since >= NATIVE_STALE_MS);
    if !eligible || !stale {
        return None;
    }
    Some(if items.iter().all(is_owned_in_progress) {
        Activation::NativeStaleInProgress
    } else {
        Activation::NativeStaleAssignedWork
    })
}

/// Targeted recovery by delivery capability: OpenCode members, lead-like
/// members and native inbox watchers, for anything but a clean pickup.
fn targeted_recovery(status: &MemberStatus) -> Option<Activation> {
    if is_strict_pickup(&status.agenda) {
        return None;
    }
    if status.provider_id == Some(ProviderId::Opencode) {
        Some(Activation::OpencodeTargetedShadowCollecting)
    } else if is_lead_like(&status.member_name) {
        Some(Activation::LeadTargetedShadowCollecting)
    } else if is_native(status.provider_id) {
        Some(Activation::NativeTargetedShadowCollecting)
    } else {
        None
    }
}

/// When the member's current agenda started needing sync, per the team's
/// recent metric events up to `now`: the earliest `needs_sync` evaluation of
/// this fingerprint after the last event of another agenda (or the change
/// into this one) and after the last accepted report of this agenda.
pub fn current_fingerprint_stable_since(
    events: &[MetricEvent],
    status: &MemberStatus,
    now: EpochMs,
) -> Option<EpochMs> {
    let member = normalize_member_name(&status.member_name);
    let current = status.agenda.fingerprint.as_str();
    let timed: Vec<(EpochMs, &MetricEvent)> = events
        .iter()
        .filter(|e| normalize_member_name(&e.member_name) == member)
        .filter_map(|e| parse_iso(&e.recorded_at).map(|at| (at, e)))
        .filter(|(at, _)| *at <= now)
        .collect();
    let boundary = timed
        .iter()
        .filter(|(_, e)| {
            e.agenda_fingerprint != current || e.kind == MetricKind::FingerprintChanged
        })
        .map(|(at, _)| *at)
        .max();
    let accepted = timed
        .iter()
        .filter(|(_, e)| e.kind == MetricKind::ReportAccepted && e.agenda_fingerprint == current)
        .map(|(at, _)| *at)
        .max();
    timed
        .iter()
        .filter(|(at, e)| {
            e.kind == MetricKind::StatusEvaluated
                && e.state == StatusState::NeedsSync
                && e.agenda_fingerprint == current
                && boundary.is_none_or(|b| *at >= b)
                && accepted.is_none_or(|a| *at > a)
        })
        .map(|(at, _)| *at)
        .min()
}

/// The 30-minute bucket of `now`, as ISO (still-stuck keys).
pub fn half_hour_bucket(now: EpochMs) -> String {
    format_iso(now - now.rem_euclid(30 * MINUTE))
}

impl PlannedNudge {
    /// The same nudge under a recovery intent key (`status-only:<fp>`,
    /// `agenda-sync-still-stuck:...`, `task-protocol-repair:...`): a new id, a
    /// lead line that says why, a new payload hash.
    pub fn keyed(&self, team: &str, member: &str, intent_key: &str, lead: &str) -> PlannedNudge {
        let mut payload = self.payload.clone();
        payload.work_sync_intent_key = Some(intent_key.to_string());
        payload.text = format!("{lead}\n\n{}", payload.text);
        PlannedNudge {
            id: format!(
                "member-work-sync:{team}:{}:{intent_key}",
                normalize_member_name(member)
            ),
            payload_hash: payload.hash(),
            payload,
            preview: self.preview.clone(),
        }
    }
}

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
    pub payload: NudgePayload,
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
    pub fn with_payload_fingerprint(mut self) -> Self {
        if self.payload.agenda_fingerprint.is_empty() {
            self.payload.agenda_fingerprint = self.agenda_fingerprint.clone();
        }
        self
    }
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

impl EnsureOutcome {
    /// The planner code journaled for this outcome (`created`, `existing`,
    /// `payload_conflict`).
    pub fn code(self) -> &'static str {
        PlannerCode::from(self).as_str()
    }
}

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
    pub const ALL: [PlannerCode; 13] = [
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

/// `ensurePending`: create, revive or refresh the item for `planned`.
pub fn ensure_pending(
    existing: Option<OutboxItem>,
    planned: &PlannedNudge,
    team: &str,
    member: &str,
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
        /// Why the attempt failed; becomes the item's `lastError`.
        reason: String,
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
            item.last_error = Some(reason.clone());
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
pub fn jitter_minutes(id: &str, generation: u32) -> EpochMs {
    let mut v: u64 = 0;
    for c in format!("{id}:{generation}").encode_utf16() {
        v = (v * 31 + u64::from(c)) % 997;
    }
    (v % 5) as EpochMs
}

/// Retry time: `now + min(60, 10·2^max(0, gen−1)) + jitter` minutes.
pub fn retry_at(id: &str, generation: u32, now: EpochMs) -> EpochMs {
    let exponent = generation.saturating_sub(1).min(16);
    let backoff = (10 * (1i64 << exponent)).min(60);
    now + (backoff + jitter_minutes(id, generation)) * MINUTE
}

/// An entry of `stall-monitor-journal.json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct WatchdogAlert {
    #[serde(default)]
    pub task_id: Option<String>,
    #[serde(default)]
    pub member_name: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub alerted_at: Option<String>,
}

/// When the watchdog recently alerted about one of the nudge's tasks (for
/// this member or anyone), the time the cooldown ends.
pub fn watchdog_cooldown(
    alerts: &[WatchdogAlert],
    task_ids: &[&str],
    member: &str,
    now: EpochMs,
) -> Option<EpochMs> {
    alerts
        .iter()
        .filter(|a| a.state.as_deref() == Some("alerted"))
        .filter(|a| a.task_id.as_deref().is_some_and(|t| task_ids.contains(&t)))
        .filter(|a| {
            a.member_name
                .as_deref()
                .is_none_or(|m| normalize_member_name(m) == normalize_member_name(member))
        })
        .filter_map(|a| a.alerted_at.as_deref().and_then(parse_iso))
        .filter(|&at| now - at >= 0 && now - at < WATCHDOG_COOLDOWN_MS)
        .map(|at| at + WATCHDOG_COOLDOWN_MS)
        .max()
}

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

/// The audit metadata block of a phase-2 readiness gate.
pub fn readiness_metadata(readiness: &Readiness) -> Value {
    json!({
        "phase2ReadinessState": readiness.state,
        "phase2ReadinessReasons": readiness.reasons.iter().map(|r| r.as_str()).collect::<Vec<_>>().join(","),
        "observationHours": readiness.rates.observation_hours,
        "statusEventCount": readiness.rates.status_event_count,
        "wouldNudgesPerMemberHour": readiness.rates.would_nudges_per_member_hour,
        "maxWouldNudgesPerMemberHour": readiness.thresholds.max_would_nudges_per_member_hour,
        "fingerprintChangesPerMemberHour": readiness.rates.fingerprint_changes_per_member_hour,
        "maxFingerprintChangesPerMemberHour": readiness.thresholds.max_fingerprint_changes_per_member_hour,
        "reportRejectionRate": readiness.rates.report_rejection_rate,
        "maxReportRejectionRate": readiness.thresholds.max_report_rejection_rate,
    })
}

#[cfg(test)]
mod tests;
