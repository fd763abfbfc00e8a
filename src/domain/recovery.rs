//! Targeted proof-missing recovery: the app saw a message to a member go
//! unanswered on the board and asks for one nudge about the tasks concerned
//! (`scheduleProofMissingRecovery`).
//!
//! Pure: normalizing the request's task refs and the intent key. Finding a
//! recent outbox item of the same intent (which makes a new request coalesce)
//! is the outbox's own question: `nudge::recent_recovery`.

use crate::domain::js_semantics::js_trim;
use serde::{Deserialize, Serialize};

use super::time::EpochMs;

/// Prefix of a proof-missing recovery's intent key.
pub(crate) const PROOF_MISSING_INTENT_PREFIX: &str = "proof-missing:";
/// A request coalesces with an outbox item of its intent updated this recently.
pub(crate) const RECENT_WINDOW_MS: EpochMs = 10 * 60_000;
/// Reason recorded when the request gives none.
pub(crate) const DEFAULT_REASON: &str = "protocol_proof_missing";

/// The kind of a targeted recovery (only one exists).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum RecoveryKind {
    /// A message's delivery proof (reply or task progress) is missing.
    ProofMissing,
}

/// The recovery a reconcile was queued for; stored on the status as
/// `shadow.recovery` and turned into the nudge's intent key and text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Recovery {
    /// Always `proof_missing`, the only recovery there is.
    pub kind: RecoveryKind,
    /// `proof-missing:<originalMessageId>`.
    pub intent_key: String,
    /// The message whose proof is missing.
    pub original_message_id: String,
    /// Task ids concerned, sorted and unique.
    pub task_ids: Vec<String>,
}

impl Recovery {
    /// The recovery for a message and its (already normalized) task refs.
    pub fn proof_missing(original_message_id: &str, task_refs: &[RecoveryTaskRef]) -> Self {
        let mut task_ids: Vec<String> = task_refs.iter().map(|r| r.task_id.clone()).collect();
        task_ids.sort();
        task_ids.dedup();
        Self {
            kind: RecoveryKind::ProofMissing,
            intent_key: intent_key(original_message_id),
            original_message_id: original_message_id.to_string(),
            task_ids,
        }
    }
}

/// One task ref of a recovery request, trimmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryTaskRef {
    /// Canonical task id (never blank).
    pub task_id: String,
    /// Display id, when a non-blank one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_id: Option<String>,
    /// Team, when a non-blank one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_name: Option<String>,
}

/// `proof-missing:<originalMessageId>`.
pub fn intent_key(original_message_id: &str) -> String {
    format!("{PROOF_MISSING_INTENT_PREFIX}{original_message_id}")
}

/// Trims every field, drops refs with a blank task id and later refs of a
/// task id already seen, and sorts by task id.
pub(crate) fn normalize_task_refs(refs: Vec<RecoveryTaskRef>) -> Vec<RecoveryTaskRef> {
    let non_blank = |value: Option<String>| {
        value
            .map(|v| js_trim(&v).to_string())
            .filter(|v| !v.is_empty())
    };
    let mut seen = std::collections::HashSet::new();
    let mut normalized: Vec<RecoveryTaskRef> = refs
        .into_iter()
        .filter_map(|r| {
            let task_id = js_trim(&r.task_id).to_string();
            (!task_id.is_empty() && seen.insert(task_id.clone())).then(|| RecoveryTaskRef {
                task_id,
                display_id: non_blank(r.display_id),
                team_name: non_blank(r.team_name),
            })
        })
        .collect();
    normalized.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    normalized
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_ref(id: &str, display: Option<&str>) -> RecoveryTaskRef {
        RecoveryTaskRef {
            task_id: id.into(),
            display_id: display.map(str::to_string),
            team_name: None,
        }
    }

    #[test]
    fn task_refs_are_trimmed_deduplicated_and_sorted() {
        type Expected<'a> = Vec<(&'a str, Option<&'a str>)>;
        let cases: Vec<(Vec<RecoveryTaskRef>, Expected<'_>)> = vec![
            (vec![], vec![]),
            (vec![task_ref("  ", Some("#1"))], vec![]),
            (
                vec![
                    task_ref(" b ", Some(" #2 ")),
                    task_ref("a", Some("  ")),
                    task_ref("b", Some("#9")),
                ],
                vec![("a", None), ("b", Some("#2"))],
            ),
        ];
        for (input, expected) in cases {
            let got: Vec<(String, Option<String>)> = normalize_task_refs(input)
                .into_iter()
                .map(|r| (r.task_id, r.display_id))
                .collect();
            let expected: Vec<(String, Option<String>)> = expected
                .into_iter()
                .map(|(id, d)| (id.to_string(), d.map(str::to_string)))
                .collect();
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn recovery_carries_its_key_and_sorted_task_ids() {
        let refs = normalize_task_refs(vec![task_ref("b", None), task_ref("a", None)]);
        let recovery = Recovery::proof_missing("msg-1", &refs);
        assert_eq!(recovery.intent_key, "proof-missing:msg-1");
        assert_eq!(recovery.task_ids, ["a", "b"]);
        assert_eq!(
            serde_json::to_value(&recovery).unwrap(),
            serde_json::json!({
                "kind": "proof_missing",
                "intentKey": "proof-missing:msg-1",
                "originalMessageId": "msg-1",
                "taskIds": ["a", "b"],
            })
        );
    }
}
