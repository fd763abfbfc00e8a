//! Nudge suppression: a member nudged again and again about the same
//! agenda without ever answering with an accepted report is nudged no more
//! until something changes.
//!
//! The rule, as the app applies it to every reconciled status:
//! - it applies to a candidate ([`is_suppression_candidate`]): a status
//!   that would nudge about a non-empty agenda no live accepted work lease
//!   covers; any other status is left as is;
//! - deliveries count from a reset time ([`suppression_reset_at`]): none
//!   without a previous status, this evaluation when the agenda changed,
//!   else the later of the previous accepted report of this agenda and the
//!   previous reset; a forced nudge (`getStatus({ forceNudge: true })`)
//!   resets at this evaluation and suppresses nothing;
//! - with [`SUPPRESS_AFTER_DELIVERIES`] delivered nudges of the agenda since
//!   then, the status stops would-nudging, records why
//!   (`shadow.nudgeSuppression`, [`Diagnostic::NudgeSuppressed`]) and the
//!   reconcile journals `nudge_suppressed`; a dispatch supersedes a due
//!   nudge of a suppressed status ([`is_recorded`]).
//!
//! Applied in two steps around the one read it needs, the member's outbox:
//! [`reset_count`] then [`suppress`].

use serde_json::{json, Value};

use super::diagnostic::{has, Diagnostic};
use super::nudge::{has_active_work_lease, OutboxItem, OutboxStatus};
use super::status::{MemberStatus, NudgeSuppression, StatusState};
use super::time::{EpochMs, IsoTime};

/// Delivered nudges for one fingerprint before suppression (without an accepted report).
pub(crate) const SUPPRESS_AFTER_DELIVERIES: usize = 4;

/// Suppression: after [`SUPPRESS_AFTER_DELIVERIES`] deliveries for one
/// fingerprint since `reset_at` without an accepted report, stop nudging.
fn is_suppressed(deliveries_for_fp_since_reset: usize) -> bool {
    deliveries_for_fp_since_reset >= SUPPRESS_AFTER_DELIVERIES
}

/// What suppression needs to know of a member's previous status.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SuppressionHistory {
    /// The previous agenda fingerprint.
    pub fingerprint: String,
    /// When the previous status's accepted report of that fingerprint was made.
    pub accepted_report_at: Option<IsoTime>,
    /// The previous status's reset time.
    pub reset_at: Option<IsoTime>,
}

impl SuppressionHistory {
    /// The history a previous status leaves.
    pub(crate) fn of(previous: &MemberStatus) -> Self {
        let fingerprint = previous.agenda.fingerprint.clone();
        let accepted_report_at = previous
            .report
            .as_ref()
            .filter(|r| r.accepted && r.agenda_fingerprint == fingerprint)
            .map(|r| r.reported_at.clone());
        Self {
            fingerprint,
            accepted_report_at,
            reset_at: previous
                .shadow
                .as_ref()
                .and_then(|s| s.nudge_suppression_reset_at.clone()),
        }
    }
}

/// True for a status suppression applies to: it would nudge about a
/// non-empty agenda that no live accepted work lease covers.
fn is_suppression_candidate(status: &MemberStatus) -> bool {
    status.state == StatusState::NeedsSync
        && status.shadow.as_ref().is_some_and(|s| s.would_nudge)
        && !status.agenda.items.is_empty()
        && !has_active_work_lease(status)
}

/// When deliveries start counting towards suppression, as the app decides:
/// nothing without a previous status (every delivery counts); this
/// evaluation when the fingerprint changed; else the later of the previous
/// accepted report of this fingerprint and the previous reset time.
pub(crate) fn suppression_reset_at(
    status: &MemberStatus,
    previous: Option<&SuppressionHistory>,
) -> Option<IsoTime> {
    let previous = previous?;
    if previous.fingerprint != status.agenda.fingerprint {
        return Some(status.evaluated_at.clone());
    }
    let report_at = previous.accepted_report_at.as_ref();
    let reset_at = previous.reset_at.as_ref();
    [report_at, reset_at]
        .into_iter()
        .flatten()
        .filter_map(|at| at.ms().map(|ms| (ms, at)))
        .fold(
            None,
            |latest: Option<(EpochMs, &IsoTime)>, (ms, at)| match latest {
                Some((best, _)) if best >= ms => latest,
                _ => Some((ms, at)),
            },
        )
        .map(|(_, at)| at.clone())
}

/// What is left to count once the reset time is set: the delivered nudges
/// of this agenda since then.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DeliveryCount {
    fingerprint: String,
    since_ms: Option<EpochMs>,
}

impl DeliveryCount {
    /// The delivered outbox items of the agenda, delivered at or after the
    /// reset time (all of them without one).
    fn delivered(&self, outbox: &[OutboxItem]) -> usize {
        outbox
            .iter()
            .filter(|i| i.agenda_fingerprint == self.fingerprint)
            .filter(|i| i.status == OutboxStatus::Delivered)
            .filter(|i| {
                let at = i.delivered_at.as_ref().and_then(IsoTime::ms);
                self.since_ms
                    .is_none_or(|reset| at.is_some_and(|at| at >= reset))
            })
            .count()
    }
}

/// A suppression decided on a status: its `nudge_suppressed` journal
/// line's diagnostics and metadata.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SuppressedNudge {
    /// The status's diagnostics once suppressed.
    pub diagnostics: Vec<String>,
    /// The line's metadata.
    pub metadata: Value,
}

/// Step one: sets a candidate's reset time (`shadow.nudgeSuppressionResetAt`;
/// a forced nudge also gets [`Diagnostic::SuppressionManualReset`]) and
/// returns what to count; none for a status suppression does not apply to,
/// and for a forced nudge.
pub(crate) fn reset_count(
    status: &mut MemberStatus,
    history: Option<&SuppressionHistory>,
    force_nudge: bool,
) -> Option<DeliveryCount> {
    if !is_suppression_candidate(status) {
        return None;
    }
    let reset = if force_nudge {
        status
            .diagnostics
            .push(Diagnostic::SuppressionManualReset.as_str().into());
        Some(status.evaluated_at.clone())
    } else {
        suppression_reset_at(status, history)
    };
    let since_ms = reset.as_ref().and_then(IsoTime::ms);
    if let Some(shadow) = status.shadow.as_mut() {
        shadow.nudge_suppression_reset_at = reset;
    }
    (!force_nudge).then(|| DeliveryCount {
        fingerprint: status.agenda.fingerprint.clone(),
        since_ms,
    })
}

/// Step two: suppresses the status when `outbox` (the member's items) holds
/// [`SUPPRESS_AFTER_DELIVERIES`] counted deliveries; returns the journal
/// line then.
pub(crate) fn suppress(
    status: &mut MemberStatus,
    count: &DeliveryCount,
    outbox: &[OutboxItem],
) -> Option<SuppressedNudge> {
    let delivered = count.delivered(outbox);
    if !is_suppressed(delivered) {
        return None;
    }
    let fingerprint = status.agenda.fingerprint.clone();
    if let Some(shadow) = status.shadow.as_mut() {
        shadow.would_nudge = false;
        shadow.nudge_suppression = Some(NudgeSuppression {
            reason: "no_accepted_report".into(),
            agenda_fingerprint: fingerprint.clone(),
            delivered_count: delivered,
            suppressed_at: status.evaluated_at.clone(),
            reset_at: shadow.nudge_suppression_reset_at.clone(),
        });
    }
    status
        .diagnostics
        .push(Diagnostic::NudgeSuppressed.as_str().into());
    let mut metadata = json!({
        "agendaFingerprint": fingerprint,
        "state": status.state,
        "actionableCount": status.agenda.items.len(),
        "deliveredCount": delivered,
        "suppressionLimit": SUPPRESS_AFTER_DELIVERIES,
    });
    if let Some(reset) = status
        .shadow
        .as_ref()
        .and_then(|s| s.nudge_suppression_reset_at.as_ref())
    {
        metadata["resetAt"] = json!(reset);
    }
    Some(SuppressedNudge {
        diagnostics: status.diagnostics.clone(),
        metadata,
    })
}

/// True when a status records its suppression.
pub(crate) fn is_recorded(status: &MemberStatus) -> bool {
    has(&status.diagnostics, Diagnostic::NudgeSuppressed)
}

#[cfg(test)]
mod tests;
