//! The delivery-time guard of a proof-missing recovery nudge: the app's
//! `proofMissingRecoveryGuard`, asked by the dispatch right before a queued
//! recovery is written to the inbox. (Scheduling the recovery is the
//! `proof_missing` use case; this is the delivery's own check.)

use crate::application::host::{Host, RecoveryQuestion, RecoveryVerdict};
use crate::domain::js_semantics::js_trim;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::nudge::{AttemptEnd, OutboxItem, RetryReason};
use crate::domain::recovery::PROOF_MISSING_INTENT_PREFIX;
use crate::domain::time::EpochMs;

/// The app's `proofMissingRecoveryGuard`, asked right before a queued
/// proof-missing recovery is delivered (after readiness and the review
/// pickup check, before the hourly limit and the busy signals, as the
/// app's dispatcher asks it): `None` lets the delivery go on (not a
/// recovery, no guard, or the guard said go); otherwise how the attempt
/// ends: a retryable hold waits until the guard's time (a past one: the
/// usual `backoff`), any other hold supersedes the item, a failed call is
/// retried with the backoff. The question names the dispatched `team` and
/// the item's `member` as the dispatch checked it.
pub(super) fn guard_recovery(
    host: &dyn Host,
    team: &TeamName,
    member: &MemberName,
    item: &OutboxItem,
    now: EpochMs,
    backoff: EpochMs,
) -> Option<AttemptEnd> {
    let intent_key = js_trim(item.payload.work_sync_intent_key.as_deref()?);
    let original_message_id = js_trim(intent_key.strip_prefix(PROOF_MISSING_INTENT_PREFIX)?);
    if original_message_id.is_empty() {
        return None;
    }
    let question = RecoveryQuestion {
        team_name: team,
        member_name: member,
        intent_key,
        original_message_id,
        task_ids: item
            .payload
            .task_refs
            .iter()
            .map(|r| r.task_id.as_str())
            .collect(),
        now,
    };
    match host.proof_missing_recovery(&question)? {
        Ok(RecoveryVerdict::Dispatch) => None,
        Ok(RecoveryVerdict::Hold {
            reason,
            retryable: true,
            retry_at,
        }) => Some(AttemptEnd::Retryable {
            reason: RetryReason::guard_hold(reason),
            retry_at: retry_at.filter(|at| *at > now).unwrap_or(backoff),
            busy_tool: None,
        }),
        Ok(RecoveryVerdict::Hold { reason, .. }) => Some(AttemptEnd::Superseded { reason }),
        Err(error) => Some(AttemptEnd::Retryable {
            reason: RetryReason::GuardFailed(error),
            retry_at: backoff,
            busy_tool: None,
        }),
    }
}
