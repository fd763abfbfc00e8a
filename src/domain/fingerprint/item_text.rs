//! One agenda item's canonical JSON as the fingerprint hashes it, written
//! field by field: object keys in UTF-16 code unit order (written in that
//! order here), no whitespace, `reason` left out, the evidence's lists of
//! task ids, event ids and review diagnostics sorted by code units (their
//! order on the item never matters), strings escaped as
//! `JSON.stringify` escapes them. These are the bytes of
//! [`super::canonical_json`] over the item's `serde_json::to_value` with
//! `reason` removed and those lists sorted; the tests hold the two side by
//! side, for every field set and unset.
//!
//! Every field is named in a pattern with no `..`: a field added to the item
//! or its evidence does not compile until it is written here or left out.
//! Written through serde, with its keys buffered and sorted at run time, the
//! text took five times as long.

use crate::domain::agenda::{ActionableWorkItem, Evidence};
use crate::domain::js_semantics::compare_code_units;
use crate::domain::json_text::ObjectText;

/// Appends the canonical JSON of `item`.
pub(super) fn write_item(item: &ActionableWorkItem, out: &mut Vec<u8>) {
    let ActionableWorkItem {
        task_id,
        display_id,
        subject,
        kind,
        assignee,
        priority,
        reason: _,
        evidence,
    } = item;
    let mut object = ObjectText::open(out);
    object.string("assignee", assignee);
    object.optional_string("displayId", display_id.as_deref());
    write_evidence(evidence, object.key("evidence"));
    object.string("kind", kind.as_str());
    object.string("priority", priority.as_str());
    object.string("subject", subject);
    object.string("taskId", task_id);
    object.close();
}

fn write_evidence(evidence: &Evidence, out: &mut Vec<u8>) {
    let Evidence {
        status,
        owner,
        reviewer,
        review_state,
        needs_clarification,
        blocker_task_ids,
        blocked_by_task_ids,
        history_event_ids,
        review_cycle_id,
        review_obligation,
        can_bypass_phase2,
        review_request_event_id,
        review_requested_at,
        review_started_event_id,
        review_started_at,
        review_started_by,
        review_diagnostics,
    } = evidence;
    let mut object = ObjectText::open(out);
    sorted_list(&mut object, "blockedByTaskIds", blocked_by_task_ids);
    sorted_list(&mut object, "blockerTaskIds", blocker_task_ids);
    if let Some(flag) = can_bypass_phase2 {
        let text: &[u8] = if *flag { b"true" } else { b"false" };
        object.key("canBypassPhase2").extend_from_slice(text);
    }
    sorted_list(&mut object, "historyEventIds", history_event_ids);
    object.optional_string("needsClarification", needs_clarification.as_deref());
    object.optional_string("owner", owner.as_deref());
    object.optional_string("reviewCycleId", review_cycle_id.as_deref());
    sorted_list(&mut object, "reviewDiagnostics", review_diagnostics);
    object.optional_string("reviewObligation", review_obligation.as_deref());
    object.optional_string("reviewRequestEventId", review_request_event_id.as_deref());
    object.optional_string("reviewRequestedAt", review_requested_at.as_deref());
    object.optional_string("reviewStartedAt", review_started_at.as_deref());
    object.optional_string("reviewStartedBy", review_started_by.as_deref());
    object.optional_string("reviewStartedEventId", review_started_event_id.as_deref());
    object.optional_string("reviewState", review_state.as_deref());
    object.optional_string("reviewer", reviewer.as_deref());
    object.string("status", status);
    object.close();
}

/// A list the fingerprint sorts, written in code unit order (distinct strings
/// never compare equal by code units, so an unstable sort writes the same
/// text); nothing for `None`.
fn sorted_list(object: &mut ObjectText<'_>, key: &'static str, list: &Option<Vec<String>>) {
    let Some(list) = list else {
        return;
    };
    let mut sorted: Vec<&str> = list.iter().map(String::as_str).collect();
    sorted.sort_unstable_by(|left, right| compare_code_units(left, right));
    object.strings(key, sorted);
}
