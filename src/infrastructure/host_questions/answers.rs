//! The host's answers in the app's shapes: each reader takes the JSON an
//! answer settled with and gives the port's value, or `None` when it has the
//! wrong shape (the caller logs it and uses its fallback). Strings are
//! clipped to [`MAX_ANSWER_CHARS`].

use crate::domain::js_semantics::js_trim;
use serde_json::{json, Value};

use crate::application::host::{
    RecoveryVerdict, ReviewPickupDelivered, ReviewPickupFailure, SettledTarget,
};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::time::parse_iso;

/// Longest host-given team list or diagnostics list kept.
pub(super) const MAX_TEAMS: usize = 1_000;
/// Longest string taken from an answer (team name, busy reason, URL, error).
pub(super) const MAX_ANSWER_CHARS: usize = 2_048;

/// A `proofMissingRecoveryGuard.shouldDispatch` answer, or `None` when it
/// has the wrong shape.
pub(super) fn recovery_verdict(answer: &Value) -> Option<RecoveryVerdict> {
    match answer.get("ok")? {
        Value::Bool(true) => Some(RecoveryVerdict::Dispatch),
        Value::Bool(false) => {
            let reason = clip(js_trim(answer.get("reason")?.as_str()?));
            if reason.is_empty() {
                return None;
            }
            Some(RecoveryVerdict::Hold {
                reason,
                retryable: answer.get("retryable")?.as_bool()?,
                retry_at: answer
                    .get("nextAttemptAt")
                    .and_then(Value::as_str)
                    .and_then(parse_iso),
            })
        }
        _ => None,
    }
}

/// A `runtimeTurnSettledTargetResolver.resolve` answer, or `None` when it
/// has the wrong shape.
pub(super) fn settled_target(answer: &Value) -> Option<SettledTarget> {
    let text = |key: &str| {
        answer
            .get(key)
            .and_then(Value::as_str)
            .map(|value| clip(js_trim(value)))
            .filter(|value| !value.is_empty())
    };
    match answer.get("ok")? {
        Value::Bool(true) => {
            let (team, member) = (text("teamName")?, text("memberName")?);
            // The names enter here: checked once.
            Some(match (TeamName::parse(&team), MemberName::parse(&member)) {
                (Ok(team_name), Ok(member_name)) => SettledTarget::Member {
                    team_name,
                    member_name,
                },
                _ => SettledTarget::UnsafeName,
            })
        }
        Value::Bool(false) => Some(SettledTarget::Unresolved(text("reason")?)),
        _ => None,
    }
}

/// The app's nudge payload as its ports get it: the planned payload plus
/// the fields the app's inbox rows carry as constants.
pub(super) fn app_payload(payload: &crate::domain::nudge::NudgePayload) -> Value {
    let mut value = json!({
        "from": "system",
        "to": payload.to,
        "messageKind": "member_work_sync_nudge",
        "source": "member-work-sync",
        "actionMode": "do",
        "workSyncIntent": payload.work_sync_intent,
        "text": payload.text,
        "taskRefs": payload.task_refs,
    });
    if let Some(key) = &payload.work_sync_intent_key {
        value["workSyncIntentKey"] = json!(key);
    }
    if !payload.work_sync_review_request_event_ids.is_empty() {
        value["workSyncReviewRequestEventIds"] = json!(payload.work_sync_review_request_event_ids);
    }
    value
}

/// Strings of an optional `diagnostics` array (others skipped, each clipped).
fn diagnostics_of(answer: &Value) -> Vec<String> {
    answer
        .get("diagnostics")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(clip)
                .take(MAX_TEAMS)
                .collect()
        })
        .unwrap_or_default()
}

/// A `reviewPickupDelivery.deliver` answer, or `None` when it has the wrong shape.
pub(super) fn review_pickup_outcome(answer: &Value) -> Option<ReviewPickupDelivered> {
    let text = |key: &str| answer.get(key).and_then(Value::as_str).map(clip);
    match answer.get("ok")? {
        Value::Bool(true) => Some(ReviewPickupDelivered::Accepted {
            response_proven: match answer.get("state")?.as_str()? {
                "prompt_accepted" => false,
                "response_proven" => true,
                _ => return None,
            },
            message_id: text("messageId")?,
            diagnostics: diagnostics_of(answer),
        }),
        Value::Bool(false) => Some(ReviewPickupDelivered::Refused {
            failure: match answer.get("reason")?.as_str()? {
                "capability_absent" => ReviewPickupFailure::CapabilityAbsent,
                "retryable_failure" => ReviewPickupFailure::Retryable,
                "terminal_failure" => ReviewPickupFailure::Terminal,
                _ => return None,
            },
            message: text("message").unwrap_or_default(),
            diagnostics: diagnostics_of(answer),
            retry_at: answer
                .get("retryAfterIso")
                .and_then(Value::as_str)
                .and_then(parse_iso),
        }),
        _ => None,
    }
}

/// At most [`MAX_ANSWER_CHARS`] characters of `text`.
pub(super) fn clip(text: &str) -> String {
    text.chars().take(MAX_ANSWER_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_pickup_answers_read_as_the_apps_outcomes() {
        let cases = [
            (
                json!({ "ok": true, "state": "response_proven", "messageId": "m1", "diagnostics": ["d", 3] }),
                Some(ReviewPickupDelivered::Accepted {
                    response_proven: true,
                    message_id: "m1".into(),
                    diagnostics: vec!["d".into()],
                }),
            ),
            (
                json!({ "ok": false, "reason": "retryable_failure", "message": "busy", "retryAfterIso": "2026-11-22T10:00:00.000Z" }),
                Some(ReviewPickupDelivered::Refused {
                    failure: ReviewPickupFailure::Retryable,
                    message: "busy".into(),
                    diagnostics: vec![],
                    retry_at: parse_iso("2026-11-22T10:00:00.000Z"),
                }),
            ),
            (json!({ "ok": false, "reason": "gone" }), None),
            (json!({ "ok": true, "state": "prompt_accepted" }), None),
            (json!("yes"), None),
        ];
        for (answer, expected) in cases {
            assert_eq!(review_pickup_outcome(&answer), expected, "{answer}");
        }
    }

    #[test]
    fn guard_and_resolver_answers_read_as_the_apps_outcomes() {
        let guard = [
            (json!({ "ok": true }), Some(RecoveryVerdict::Dispatch)),
            (
                json!({ "ok": false, "reason": " proof_missing_recovery_suppressed ", "retryable": false }),
                Some(RecoveryVerdict::Hold {
                    reason: "proof_missing_recovery_suppressed".into(),
                    retryable: false,
                    retry_at: None,
                }),
            ),
            (
                json!({ "ok": false, "reason": "grace", "retryable": true, "nextAttemptAt": "2026-11-22T10:00:00.000Z" }),
                Some(RecoveryVerdict::Hold {
                    reason: "grace".into(),
                    retryable: true,
                    retry_at: parse_iso("2026-11-22T10:00:00.000Z"),
                }),
            ),
            (json!({ "ok": false, "reason": "grace" }), None),
            (
                json!({ "ok": false, "reason": " ", "retryable": true }),
                None,
            ),
            (json!(true), None),
        ];
        for (answer, expected) in guard {
            assert_eq!(recovery_verdict(&answer), expected, "{answer}");
        }
        let resolver = [
            (
                json!({ "ok": true, "teamName": "forge", "memberName": " bob " }),
                Some(SettledTarget::Member {
                    team_name: TeamName::parse("forge").unwrap(),
                    member_name: MemberName::parse("bob").unwrap(),
                }),
            ),
            (
                json!({ "ok": true, "teamName": "../forge", "memberName": "bob" }),
                Some(SettledTarget::UnsafeName),
            ),
            (
                json!({ "ok": true, "teamName": "forge", "memberName": "a/b" }),
                Some(SettledTarget::UnsafeName),
            ),
            (
                json!({ "ok": false, "reason": "no_matching_member_session" }),
                Some(SettledTarget::Unresolved(
                    "no_matching_member_session".into(),
                )),
            ),
            (json!({ "ok": true, "teamName": "forge" }), None),
            (json!({ "ok": false }), None),
            (json!(null), None),
        ];
        for (answer, expected) in resolver {
            assert_eq!(settled_target(&answer), expected, "{answer}");
        }
    }
}
