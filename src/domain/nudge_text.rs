//! The words of a nudge: what a member reads in its inbox.
//!
//! Every text tells the member to call the agent-teams MCP tools
//! `member_work_sync_status` and then `member_work_sync_report` with its own
//! team and member name, and that reading the status alone proves nothing.
//! Pure; lines are joined with `\n`.

use super::agenda::ItemKind;
use super::recovery::Recovery;
use super::status::MemberStatus;

/// First line of an agenda-sync nudge.
pub(crate) const AGENDA_SYNC_OPENING: &str =
    "Work sync check: the board lists work for you that no current work sync report covers.";
/// First line of a review-pickup nudge.
pub(crate) const REVIEW_PICKUP_OPENING: &str =
    "Review pickup: a review request is waiting for you.";

const STATUS_ALONE_IS_NOT_PROOF: &str = "Reading the status alone does not count: only a \
     member_work_sync_report call records that you synced.";
const PREFIXED_TOOL_NAMES: &str = "If your tools carry the Agent Teams prefix, call \
     mcp__agent-teams__member_work_sync_status and mcp__agent-teams__member_work_sync_report, \
     directly, without searching files or listing MCP resources first.";

/// `"<displayId> <subject>"` of the first three items, joined with `; `.
pub(crate) fn agenda_preview(status: &MemberStatus) -> String {
    status
        .agenda
        .items
        .iter()
        .take(3)
        .map(|item| {
            format!(
                "{} {}",
                display_id(&item.task_id, item.display_id.as_deref()),
                item.subject
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The display id of a task, or the first 8 characters of its id.
pub(crate) fn display_id(task_id: &str, display_id: Option<&str>) -> String {
    display_id
        .map(str::to_string)
        .unwrap_or_else(|| task_id.chars().take(8).collect())
}

/// Text of an agenda-sync nudge (also the body of every recovery nudge).
pub(crate) fn agenda_sync_text(status: &MemberStatus, recovery: Option<&Recovery>) -> String {
    let (team, member) = (&status.team_name, &status.member_name);
    let preview = agenda_preview(status);
    let task_ids: Vec<String> = status
        .agenda
        .items
        .iter()
        .map(|item| format!("\"{}\"", item.task_id))
        .collect();
    let escalated_clarification = status.agenda.items.iter().any(|item| {
        item.kind == ItemKind::Clarification
            && item.evidence.needs_clarification.as_deref() == Some("lead")
    });
    let mut lines = vec![AGENDA_SYNC_OPENING.to_string()];
    if let Some(recovery) = recovery {
        lines.push(format!(
            "This nudge also stands in for the missing delivery proof of message \"{}\".",
            recovery.original_message_id
        ));
        lines.push(
            "If that work is already done, do not do it twice: leave the missing reply or \
             task progress on the board for the current agenda instead."
                .into(),
        );
    }
    if !preview.is_empty() {
        lines.push(format!("Agenda: {preview}."));
    }
    lines.push(format!(
        "What to do: call the member_work_sync_status tool with teamName \"{team}\" and \
         memberName \"{member}\", then call member_work_sync_report with the same teamName and \
         memberName plus the agendaFingerprint and reportToken the status returned."
    ));
    lines.push(STATUS_ALONE_IS_NOT_PROOF.into());
    lines.push(PREFIXED_TOOL_NAMES.into());
    if !task_ids.is_empty() {
        lines.push(format!(
            "Pass taskIds {} in the report.",
            task_ids.join(", ")
        ));
    }
    lines.push(format!(
        "memberName is exactly \"{member}\", never a provider, runtime or team name."
    ));
    lines.push(
        "Report state \"still_working\" while you work on it, or \"blocked\" once the blocker is \
         recorded on the task."
            .into(),
    );
    if escalated_clarification {
        lines.push(
            "If you already passed a clarification on to the user, first record that on the \
             board with task_set_clarification and value \"user\"; a message alone leaves the \
             board unchanged."
                .into(),
        );
    }
    lines.push(
        "Otherwise keep working on the tasks, or record a real blocker with the task tools, \
         before you go idle; an acknowledgement alone is not an answer."
            .into(),
    );
    lines.join("\n")
}

/// Text of a review-pickup nudge.
pub(crate) fn review_pickup_text(status: &MemberStatus) -> String {
    let (team, member) = (&status.team_name, &status.member_name);
    let preview = agenda_preview(status);
    let mut lines = vec![REVIEW_PICKUP_OPENING.to_string()];
    if !preview.is_empty() {
        lines.push(format!("Reviews: {preview}."));
    }
    lines.push(
        "Open the task and check its current review state and status; start or continue the \
         review only while it is still assigned to you."
            .into(),
    );
    lines.push(format!(
        "If you cannot take it up now, call member_work_sync_status with teamName \"{team}\" and \
         memberName \"{member}\", then member_work_sync_report with state \"blocked\" or \
         \"still_working\", whichever is actually true."
    ));
    lines.push(STATUS_ALONE_IS_NOT_PROOF.into());
    lines.push(PREFIXED_TOOL_NAMES.into());
    lines.push(
        "Do not mark the review complete because of this message, and do not answer with an \
         acknowledgement only."
            .into(),
    );
    lines.join("\n")
}
