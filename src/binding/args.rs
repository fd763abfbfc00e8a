//! The typed argument objects of the JS methods. Each is declared once: napi
//! generates its TypeScript interface into `index.d.ts`, and serde reads it
//! from the bounded converter's JSON (so BigInt, cycles and deep nesting
//! anywhere in the argument are still refused). A field of the wrong type or
//! a missing one rejects with `MWS_INVALID_ARGUMENT` and a message naming the
//! field's path (`request.teamName: invalid type: ...`).

use napi_derive::napi;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::job::JsFailure;

/// Reads the typed argument `what` from its converted JSON.
pub(crate) fn typed<T: DeserializeOwned>(value: Value, what: &str) -> Result<T, JsFailure> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        let at = if path == "." {
            what.to_string()
        } else {
            format!("{what}.{path}")
        };
        JsFailure::invalid(format!("{at}: {}", error.inner()))
    })
}

/// A member of a team (`refreshStatus`, `previewStatus`, `getAgentBrief`).
#[napi(object, object_to_js = false)]
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemberWorkSyncMemberRequest {
    /// Team of the member: a team folder name, used as given.
    pub team_name: String,
    /// The member; compared trimmed and lowercased.
    pub member_name: String,
}

/// `getStatus` request.
#[napi(object, object_to_js = false)]
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemberWorkSyncStatusRequest {
    /// Team of the member: a team folder name, used as given.
    pub team_name: String,
    /// The member; compared trimmed and lowercased.
    pub member_name: String,
    /// `true` reconciles now and resets nudge suppression; any other value
    /// (or none) reads the stored status.
    #[serde(default, deserialize_with = "only_true")]
    pub force_nudge: Option<bool>,
}

/// A team (`previewTeam`, `refreshTeam`, `getMetrics`).
#[napi(object, object_to_js = false)]
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemberWorkSyncTeamRequest {
    /// The team: a team folder name, used as given.
    pub team_name: String,
}

/// `explain` request.
#[napi(object, object_to_js = false)]
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemberWorkSyncExplainRequest {
    /// Team of the member: a team folder name, used as given.
    pub team_name: String,
    /// The member; compared trimmed and lowercased.
    pub member_name: String,
    /// Keep entries at or after this time (epoch ms); absent, `null` or not
    /// finite keeps everything.
    pub since_ms: Option<f64>,
}

/// `setTeamRuntimeState` state: the supervisor's view of a team.
#[napi(object, object_to_js = false)]
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MemberWorkSyncTeamRuntimeState {
    /// Whether the team's runtime is up.
    pub active: bool,
    /// The members running now; absent or `null`: every roster member.
    pub active_members: Option<Vec<String>>,
}

/// Input of the turn-settled hook builders.
#[napi(object, object_to_js = false)]
#[derive(Debug, Deserialize)]
pub(super) struct RuntimeTurnSettledHookInput {
    /// The runtime the hook is for.
    #[napi(ts_type = "'claude' | 'codex' | 'opencode'")]
    pub provider: String,
}

/// `scheduleProofMissingRecovery` request (typed in `api-types.d.ts`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProofMissingArgs {
    pub team_name: String,
    pub member_name: String,
    pub original_message_id: String,
    #[serde(default)]
    pub task_refs: Option<Vec<TaskRefArgs>>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// One `taskRefs` entry of [`ProofMissingArgs`].
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskRefArgs {
    pub task_id: String,
    #[serde(default)]
    pub display_id: Option<String>,
    #[serde(default)]
    pub team_name: Option<String>,
}

/// `Some(true)` for JSON `true`, `None` for anything else: the historical
/// leniency of `forceNudge`, which never refused a non-boolean.
fn only_true<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
    Ok((Value::deserialize(deserializer)? == Value::Bool(true)).then_some(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failures_name_the_field() {
        // (argument, message)
        for (value, message) in [
            (
                json!(42),
                "request: invalid type: integer `42`, expected struct MemberWorkSyncMemberRequest",
            ),
            (
                json!(null),
                "request: invalid type: null, expected struct MemberWorkSyncMemberRequest",
            ),
            (
                json!({"teamName": "forge"}),
                "request: missing field `memberName`",
            ),
            (
                json!({"teamName": 1, "memberName": "jack"}),
                "request.teamName: invalid type: integer `1`, expected a string",
            ),
        ] {
            let failure = typed::<MemberWorkSyncMemberRequest>(value, "request").unwrap_err();
            assert_eq!(failure.message, message);
        }
        let failure = typed::<MemberWorkSyncTeamRuntimeState>(
            json!({"active": true, "activeMembers": ["a", 2]}),
            "state",
        )
        .unwrap_err();
        assert_eq!(
            failure.message,
            "state.activeMembers[1]: invalid type: integer `2`, expected a string"
        );
    }

    #[test]
    fn force_nudge_is_only_a_literal_true() {
        for (force, expected) in [
            (json!(true), Some(true)),
            (json!(false), None),
            (json!("yes"), None),
            (json!(null), None),
        ] {
            let request: MemberWorkSyncStatusRequest = typed(
                json!({"teamName": "forge", "memberName": "jack", "forceNudge": force}),
                "request",
            )
            .unwrap();
            assert_eq!(request.force_nudge, expected, "{force}");
        }
        let absent: MemberWorkSyncStatusRequest = typed(
            json!({"teamName": "forge", "memberName": "jack"}),
            "request",
        )
        .unwrap();
        assert_eq!(absent.force_nudge, None);
    }
}
