//! When a planned nudge may go (the app's nudge activation policy): the
//! ordered rules that turn a status and the team's phase-2 readiness into an
//! [`Activation`] or an [`ActivationHold`], with the targeted recoveries for
//! leads, OpenCode and native members and the "stable since" age of stale
//! native work.

use crate::domain::js_semantics::{is_js_whitespace, js_trim};
use serde_json::{json, Value};
use std::sync::Arc;

use crate::domain::agenda::{ActionableWorkItem, ItemKind, ItemReason};
use crate::domain::diagnostic::{has, parsed, Diagnostic, StallTrigger};
use crate::domain::metrics::{MetricEvent, MetricKind, Readiness, ReadinessReason, ReadinessState};
use crate::domain::names::normalize_member_name;
use crate::domain::status::{MemberStatus, ReportState, StatusState};
use crate::domain::team::{ProviderId, TaskStatus};
use crate::domain::time::{parse_iso, EpochMs, IsoTime};

use super::plan::{is_strict_pickup, is_strict_pickup_item};
use super::MINUTE;

/// Needs-sync age before stale native work may be nudged while collecting.
pub const NATIVE_STALE_MS: EpochMs = 6 * MINUTE;

/// True for names that read as "the lead" (nudge policy: name only).
///
/// Takes the name as a status record holds it (`MemberStatus::member_name`,
/// a plain string of the wire struct), not a checked name: the rule only
/// reads its spelling.
pub fn is_lead_like(recorded_name: &str) -> bool {
    let name: String = js_trim(recorded_name).to_lowercase();
    // `.replace(/[\s_]+/g, "-")`: each run of whitespace and `_` becomes one
    // dash, whatever stands beside it (a written dash stays).
    let mut collapsed = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        let joins_run = is_js_whitespace(c) || c == '_';
        if !joins_run {
            collapsed.push(c);
        } else if !in_run {
            collapsed.push('-');
        }
        in_run = joins_run;
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
    /// While shadow data is collected, a nudge the status would send anyway
    /// (anything but a clean review pickup) to an OpenCode member, which
    /// the runtime delivers to.
    OpencodeTargetedShadowCollecting,
    /// The same to a lead-like member ([`is_lead_like`]), through the lead's
    /// inbox relay.
    LeadTargetedShadowCollecting,
    /// The same to a native member that watches its inbox (Anthropic, Codex,
    /// Gemini); held back while readiness reports a high report-rejection
    /// rate.
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
    pub(crate) fn allows_still_stuck(self) -> bool {
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
fn is_owned_in_progress(item: &ActionableWorkItem) -> bool {
    item.kind == ItemKind::Work
        && item.reason == ItemReason::OwnedInProgressTask
        && item.evidence.status == TaskStatus::InProgress.as_str()
}

/// Owned work in progress, or owned work still pending.
fn is_stale_work(item: &ActionableWorkItem) -> bool {
    is_owned_in_progress(item)
        || (item.kind == ItemKind::Work
            && item.reason == ItemReason::OwnedPendingTask
            && item.evidence.status == TaskStatus::Pending.as_str())
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
        && items.iter().any(|item| is_stale_work(item));
    let stale = stable_since.is_some_and(|since| now - since >= NATIVE_STALE_MS);
    if !eligible || !stale {
        return None;
    }
    Some(if items.iter().all(|item| is_owned_in_progress(item)) {
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
    events: &[Arc<MetricEvent>],
    status: &MemberStatus,
    now: EpochMs,
) -> Option<EpochMs> {
    let member = normalize_member_name(&status.member_name);
    let current = status.agenda.fingerprint.as_str();
    let timed: Vec<(EpochMs, &MetricEvent)> = events
        .iter()
        .filter(|e| normalize_member_name(&e.member_name) == member)
        .filter_map(|e| parse_iso(&e.recorded_at).map(|at| (at, &**e)))
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
