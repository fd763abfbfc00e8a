//! `scheduleProofMissingRecovery`: the app saw a message to a member go
//! without a visible reply or task progress and asks for one targeted nudge
//! about the tasks concerned.
//!
//! Blank ids are `invalid`; no usable task ref is `invalid` with a
//! `proof_missing_recovery_suppressed` audit; an outbox item of the same
//! intent (`proof-missing:<originalMessageId>`) updated in the last 10
//! minutes and still live makes the request `coalesced_recent`; otherwise
//! the request is audited and a `proof_missing_recovery` reconcile is queued,
//! whose planner sends the recovery nudge.

use crate::domain::js_semantics::js_trim;
use serde::Serialize;
use serde_json::json;

use super::engine::Engine;
use super::reconcile::{member_name, team_name, WorkSyncError};
use crate::domain::audit::{AuditKind, AuditSource};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::nudge::recent_recovery;
use crate::domain::recovery::{
    intent_key, normalize_task_refs, Recovery, RecoveryTaskRef, DEFAULT_REASON, RECENT_WINDOW_MS,
};

/// Source tag of the scheduler's audit events.
const SOURCE: AuditSource = AuditSource::ProofMissingRecoveryScheduler;
/// Longest `originalMessageId` accepted (it becomes part of an outbox id).
const MAX_MESSAGE_ID_CHARS: usize = 256;
/// Most task refs in one request.
const MAX_TASK_REFS: usize = 100;
/// Longest task id, display id or team name of a task ref.
const MAX_TASK_REF_FIELD_CHARS: usize = 128;
/// Longest `reason` accepted.
const MAX_REASON_CHARS: usize = 200;

/// A `scheduleProofMissingRecovery` request, fields as given (not trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofMissingRequest {
    /// Team of the member (blank: the request resolves `invalid`).
    pub team_name: String,
    /// Member whose proof is missing.
    pub member_name: String,
    /// The message whose proof is missing.
    pub original_message_id: String,
    /// Tasks the message was about; trimmed, de-duplicated and capped before
    /// they are queued (none usable: `invalid`).
    pub task_refs: Vec<RecoveryTaskRef>,
    /// Why (default `protocol_proof_missing`).
    pub reason: Option<String>,
}

/// What the scheduler did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum ScheduleOutcome {
    /// A recovery reconcile was queued.
    Scheduled,
    /// A recent live outbox item of the same intent exists.
    CoalescedRecent,
    /// Blank ids, no usable task ref, or a member off the roster.
    Invalid,
}

/// What `scheduleProofMissingRecovery` answers: whether a recovery was
/// queued, and under which intent key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct ScheduleResult {
    /// True only for [`ScheduleOutcome::Scheduled`].
    pub scheduled: bool,
    /// Whether a recovery was queued, joined a recent one, or refused.
    pub reason: ScheduleOutcome,
    /// `proof-missing:<originalMessageId>` once the request was usable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent_key: Option<String>,
    /// The outbox item a coalesced request joined.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing_outbox_id: Option<String>,
}

impl ScheduleResult {
    fn invalid() -> Self {
        Self {
            scheduled: false,
            reason: ScheduleOutcome::Invalid,
            intent_key: None,
            existing_outbox_id: None,
        }
    }
}

impl Engine {
    /// Schedules a targeted proof-missing recovery (see the module docs).
    ///
    /// Names that are not blank but unusable (`/`, over 128 bytes, ...), an
    /// oversized field or a control character in `originalMessageId` are
    /// `InvalidArgument`; a team being deleted is `TeamQuiesced`. A member off
    /// the team's roster is `invalid` and nothing is written for it.
    pub fn schedule_proof_missing_recovery(
        &self,
        request: ProofMissingRequest,
    ) -> Result<ScheduleResult, WorkSyncError> {
        let team = js_trim(&request.team_name);
        let member = js_trim(&request.member_name);
        let message_id = js_trim(&request.original_message_id);
        if team.is_empty() {
            return Ok(ScheduleResult::invalid());
        }
        // The request carries raw strings: its names are parsed here, in the
        // order the app checks them (blank ones are an `invalid` outcome).
        let team = &team_name(team)?;
        // The team's fence first, as the app's operation gate runs the
        // whole request: a deleted team's request is refused even when blank.
        self.with_team(team, || {
            if member.is_empty() || message_id.is_empty() {
                return Ok(ScheduleResult::invalid());
            }
            let member = &member_name(member)?;
            check_request_bounds(&request, message_id)?;
            let (task_refs, reason) = (request.task_refs.clone(), request.reason.clone());
            self.schedule_admitted(team, member, message_id, task_refs, reason)
        })
    }

    fn schedule_admitted(
        &self,
        team: &TeamName,
        member: &MemberName,
        message_id: &str,
        task_refs: Vec<RecoveryTaskRef>,
        reason: Option<String>,
    ) -> Result<ScheduleResult, WorkSyncError> {
        let reconciler = self.reconciler();
        let ports = &reconciler.ports;
        let snapshot = ports.teams.load_roster(team);
        if !reconciler.may_persist(team, &snapshot, member)? {
            // A made-up name gets no store folder (not even a journal line).
            return Ok(ScheduleResult::invalid());
        }
        let now = ports.clock.now_ms();
        let audit = |kind: AuditKind, metadata: serde_json::Value| {
            reconciler.audit(SOURCE, kind, team, member, now, vec![], metadata);
        };
        let task_refs = normalize_task_refs(task_refs);
        if task_refs.is_empty() {
            audit(
                AuditKind::ProofMissingRecoverySuppressed,
                json!({ "reason": "missing_task_refs", "originalMessageId": message_id }),
            );
            return Ok(ScheduleResult::invalid());
        }
        let key = intent_key(message_id);
        let items = ports.outbox.member_items(team, member)?;
        if let Some(existing) = recent_recovery(&items, &key, now - RECENT_WINDOW_MS) {
            audit(
                AuditKind::ProofMissingRecoveryCoalesced,
                json!({
                    "reason": existing.status,
                    "intentKey": key,
                    "originalMessageId": message_id,
                    "existingOutboxId": existing.id,
                }),
            );
            return Ok(ScheduleResult {
                scheduled: false,
                reason: ScheduleOutcome::CoalescedRecent,
                intent_key: Some(key),
                existing_outbox_id: Some(existing.id.clone()),
            });
        }
        let reason = reason
            .map(|r| js_trim(&r).to_string())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| DEFAULT_REASON.to_string());
        audit(
            AuditKind::ProofMissingRecoveryScheduled,
            json!({
                "reason": reason,
                "taskRefs": task_refs,
                "intentKey": key,
                "originalMessageId": message_id,
            }),
        );
        self.enqueue_recovery(
            team,
            member,
            Recovery::proof_missing(message_id, &task_refs),
        );
        Ok(ScheduleResult {
            scheduled: true,
            reason: ScheduleOutcome::Scheduled,
            intent_key: Some(key),
            existing_outbox_id: None,
        })
    }
}

/// Caps every field of the request (untrusted input from the app's callers).
fn check_request_bounds(
    request: &ProofMissingRequest,
    message_id: &str,
) -> Result<(), WorkSyncError> {
    let invalid =
        |what: &'static str, reason: String| WorkSyncError::InvalidArgument { what, reason };
    if message_id.chars().count() > MAX_MESSAGE_ID_CHARS {
        return Err(invalid(
            "originalMessageId",
            format!("longer than {MAX_MESSAGE_ID_CHARS} characters"),
        ));
    }
    if message_id.chars().any(char::is_control) {
        return Err(invalid(
            "originalMessageId",
            "contains a control character".into(),
        ));
    }
    if request.task_refs.len() > MAX_TASK_REFS {
        return Err(invalid(
            "taskRefs",
            format!("more than {MAX_TASK_REFS} entries"),
        ));
    }
    let too_long = |value: &str| value.chars().count() > MAX_TASK_REF_FIELD_CHARS;
    if request.task_refs.iter().any(|r| {
        too_long(&r.task_id)
            || r.display_id.as_deref().is_some_and(too_long)
            || r.team_name.as_deref().is_some_and(too_long)
    }) {
        return Err(invalid(
            "taskRefs",
            format!("a field is longer than {MAX_TASK_REF_FIELD_CHARS} characters"),
        ));
    }
    if request
        .reason
        .as_deref()
        .is_some_and(|r| r.chars().count() > MAX_REASON_CHARS)
    {
        return Err(invalid(
            "reason",
            format!("longer than {MAX_REASON_CHARS} characters"),
        ));
    }
    Ok(())
}
