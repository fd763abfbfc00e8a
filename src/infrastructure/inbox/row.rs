//! The nudge row as the app stores it in an inbox, and the control-API line
//! of its text.

use serde_json::{Map, Value};

/// `messageKind` of every nudge row.
pub const NUDGE_MESSAGE_KIND: &str = "member_work_sync_nudge";

/// Start of the control-API line that [`with_control_url_line`] keeps unique.
pub const CONTROL_URL_LINE_PREFIX: &str = "Required control API:";

/// One task a nudge is about: `{teamName, taskId, displayId}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NudgeTaskRef {
    /// Team of the task.
    pub team_name: String,
    /// Canonical task id.
    pub task_id: String,
    /// Display id (the planner falls back to the first 8 chars of the id).
    pub display_id: String,
}

/// The caller-supplied fields of a nudge row; the constant fields (`from`,
/// `read`, `actionMode`, `summary`, `source`, `messageKind`) are added by
/// [`NudgeRow::to_json`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NudgeRow {
    /// Recipient member name.
    pub to: String,
    /// Message body shown to the member.
    pub text: String,
    /// Dispatch time, ISO 8601.
    pub timestamp: String,
    /// Tasks the nudge is about.
    pub task_refs: Vec<NudgeTaskRef>,
    /// The outbox item id; the idempotency key of the inbox.
    pub message_id: String,
    /// `agenda_sync` or `review_pickup`.
    pub work_sync_intent: String,
    /// The outbox intent key, when the item has one.
    pub work_sync_intent_key: Option<String>,
    /// Review-request event ids of a pickup nudge; omitted from the row when empty.
    pub work_sync_review_request_event_ids: Vec<String>,
    /// sha256 hex of the canonical payload; decides idempotent vs conflict.
    pub work_sync_payload_hash: String,
}

impl NudgeRow {
    /// The row exactly as it is stored in the inbox array.
    pub fn to_json(&self) -> Value {
        let text = |s: &str| Value::String(s.to_string());
        let mut row = Map::new();
        row.insert("from".into(), text("system"));
        row.insert("to".into(), text(&self.to));
        row.insert("text".into(), text(&self.text));
        row.insert("timestamp".into(), text(&self.timestamp));
        row.insert("read".into(), Value::Bool(false));
        let refs = self
            .task_refs
            .iter()
            .map(|r| {
                let mut task = Map::new();
                task.insert("teamName".into(), text(&r.team_name));
                task.insert("taskId".into(), text(&r.task_id));
                task.insert("displayId".into(), text(&r.display_id));
                Value::Object(task)
            })
            .collect();
        row.insert("taskRefs".into(), Value::Array(refs));
        row.insert("actionMode".into(), text("do"));
        row.insert("summary".into(), text("Work sync check"));
        row.insert("messageId".into(), text(&self.message_id));
        row.insert("source".into(), text("system_notification"));
        row.insert("messageKind".into(), text(NUDGE_MESSAGE_KIND));
        row.insert("workSyncIntent".into(), text(&self.work_sync_intent));
        if let Some(key) = &self.work_sync_intent_key {
            row.insert("workSyncIntentKey".into(), text(key));
        }
        if !self.work_sync_review_request_event_ids.is_empty() {
            let ids = self
                .work_sync_review_request_event_ids
                .iter()
                .map(|id| text(id))
                .collect();
            row.insert("workSyncReviewRequestEventIds".into(), Value::Array(ids));
        }
        row.insert(
            "workSyncPayloadHash".into(),
            text(&self.work_sync_payload_hash),
        );
        Value::Object(row)
    }
}

/// Replaces any control-API line of `text` with the one for `control_url`, at the end.
///
/// The app appends this line so the agent calls back the right control server;
/// a retried nudge may carry an older URL, hence replace rather than append.
pub fn with_control_url_line(text: &str, control_url: &str) -> String {
    let line = format!(
        "{CONTROL_URL_LINE_PREFIX} pass controlUrl \"{control_url}\" in both \
         member_work_sync_status and member_work_sync_report."
    );
    let body = text
        .lines()
        .filter(|l| !l.trim_start().starts_with(CONTROL_URL_LINE_PREFIX))
        .collect::<Vec<_>>()
        .join("\n");
    let body = body.trim_end();
    if body.is_empty() {
        line
    } else {
        format!("{body}\n\n{line}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::inbox::tests::row;

    #[test]
    fn row_carries_the_documented_fields() {
        let mut nudge = row("id-1", "h1");
        let plain = nudge.to_json();
        for (field, value) in [
            ("from", "system"),
            ("actionMode", "do"),
            ("summary", "Work sync check"),
            ("source", "system_notification"),
            ("messageKind", "member_work_sync_nudge"),
            ("messageId", "id-1"),
            ("workSyncPayloadHash", "h1"),
            ("workSyncIntent", "agenda_sync"),
        ] {
            assert_eq!(plain[field], value, "{field}");
        }
        assert_eq!(plain["read"], false);
        assert_eq!(plain["taskRefs"][0]["displayId"], "1");
        assert!(plain.get("workSyncIntentKey").is_none());
        assert!(plain.get("workSyncReviewRequestEventIds").is_none());
        nudge.work_sync_intent_key = Some("review-pickup:e1".into());
        nudge.work_sync_review_request_event_ids = vec!["e1".into()];
        let pickup = nudge.to_json();
        assert_eq!(pickup["workSyncIntentKey"], "review-pickup:e1");
        assert_eq!(
            pickup["workSyncReviewRequestEventIds"],
            serde_json::json!(["e1"])
        );
    }

    #[test]
    fn control_url_line_is_appended_once_and_replaced() {
        let once = with_control_url_line("Sync your work.", "http://127.0.0.1:1/a");
        assert_eq!(
            once,
            "Sync your work.\n\nRequired control API: pass controlUrl \"http://127.0.0.1:1/a\" \
             in both member_work_sync_status and member_work_sync_report."
        );
        let again = with_control_url_line(&once, "http://127.0.0.1:2/b");
        assert!(again.starts_with("Sync your work.\n\nRequired control API"));
        assert!(again.contains(":2/b") && !again.contains(":1/a"));
        assert_eq!(again.matches(CONTROL_URL_LINE_PREFIX).count(), 1);
    }
}
