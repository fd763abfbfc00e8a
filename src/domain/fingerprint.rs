//! The agenda fingerprint: `agenda:v1:<sha256 hex of canonical JSON>`.
//!
//! Only board facts go in: `reason`, `generatedAt` and diagnostics stay out, so
//! rewording a reason never looks like new work.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::agenda::ActionableWorkItem;
use super::js_semantics::compare_code_units;
use super::json_text::push_str;
use super::names::{MemberName, TeamName};

mod item_text;

/// Prefix of every fingerprint.
pub(crate) const FINGERPRINT_PREFIX: &str = "agenda:v1:";

/// Canonical JSON: object keys sorted at every depth (UTF-16 code unit order,
/// as JavaScript's default sort), no whitespace, strings escaped as
/// `JSON.stringify` does.
///
/// The keys are sorted here, not left to `serde_json::Map`: with serde_json's
/// `preserve_order` feature (enabled anywhere in the build) the map keeps
/// insertion order and the fingerprint would silently change.
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only valid UTF-8 was written: `str`s and ASCII punctuation.
    String::from_utf8(out).unwrap_or_default()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|(left, _), (right, _)| compare_code_units(left, right));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        Value::String(text) => write_scalar(text, out),
        scalar => write_scalar(scalar, out),
    }
}

/// Appends serde_json's compact form of a string or scalar (what
/// `to_string` gives) without a string of its own per value.
fn write_scalar<T: serde::Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // Writing a string or a scalar into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    out
}

/// Fingerprint of an agenda's `items` (its actionable work items, which must
/// already be in `ActionableWorkItem::write_sort_key` order by `localeCompare`);
/// `member_name` is the normalized name ([`MemberName::normalized`]).
/// `reason` stays out; the evidence lists of task and event ids and of
/// review diagnostics go in sorted ([`item_text`]).
///
/// Hashes the canonical JSON of `{version: 1, teamName, memberName, items}`,
/// written directly (keys in code unit order: `items`, `memberName`,
/// `teamName`, `version`), not through a `serde_json::Value`.
pub(crate) fn agenda_fingerprint<'a>(
    team_name: &TeamName,
    member_name: &MemberName,
    items: impl IntoIterator<Item = &'a ActionableWorkItem>,
) -> String {
    let mut out = Vec::with_capacity(4096);
    out.extend_from_slice(b"{\"items\":[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        item_text::write_item(item, &mut out);
    }
    out.extend_from_slice(b"],\"memberName\":");
    push_str(&mut out, member_name.as_str());
    out.extend_from_slice(b",\"teamName\":");
    push_str(&mut out, team_name.as_str());
    out.extend_from_slice(b",\"version\":1}");
    format!("{FINGERPRINT_PREFIX}{}", sha256_hex(&out))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::agenda::Evidence;
    use crate::domain::json_text::a_test_text;
    use proptest::prelude::*;
    use serde::Serialize;

    /// Evidence lists the fingerprint sorts, so their order on the item
    /// never matters.
    const SORTED_EVIDENCE_LISTS: [&str; 4] = [
        "blockerTaskIds",
        "blockedByTaskIds",
        "historyEventIds",
        "reviewDiagnostics",
    ];

    /// The fingerprint as it was computed through a `serde_json::Value` per
    /// item: `to_value`, `reason` removed, the evidence lists sorted, then
    /// [`canonical_json`]. Kept as the oracle of the direct writer.
    fn via_value_item<Item: Serialize>(item: &Item) -> Value {
        let mut value = serde_json::to_value(item).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.remove("reason");
            if let Some(Value::Object(evidence)) = map.get_mut("evidence") {
                for list in SORTED_EVIDENCE_LISTS {
                    if let Some(Value::Array(ids)) = evidence.get_mut(list) {
                        ids.sort_by(|a, b| {
                            compare_code_units(
                                a.as_str().unwrap_or_default(),
                                b.as_str().unwrap_or_default(),
                            )
                        });
                    }
                }
            }
        }
        value
    }

    fn via_value_fingerprint<Item: Serialize>(
        team_name: &TeamName,
        member_name: &MemberName,
        items: &[Item],
    ) -> String {
        let items: Vec<Value> = items.iter().map(via_value_item).collect();
        let payload = json!({
            "version": 1,
            "teamName": team_name,
            "memberName": member_name,
            "items": items,
        });
        format!(
            "{FINGERPRINT_PREFIX}{}",
            sha256_hex(canonical_json(&payload).as_bytes())
        )
    }

    fn direct_item(item: &ActionableWorkItem) -> String {
        let mut out = Vec::new();
        item_text::write_item(item, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// An item with every field set and strings that need escapes, a
    /// reason, and evidence lists out of code unit order (an astral
    /// character sorts before U+FF5E in UTF-16, after it in UTF-8).
    fn full_item() -> ActionableWorkItem {
        serde_json::from_value(json!({
            "taskId": "t-\u{1F600}\"\\\n",
            "displayId": "#\u{7}\u{1f}\u{7f}\u{2028}",
            "subject": "Fix \u{e9}t\u{e9} </script> \t tab",
            "kind": "review",
            "assignee": "jill",
            "priority": "review_requested",
            "reason": "a reason that must stay out",
            "evidence": {
                "status": "in_progress",
                "owner": "jack",
                "reviewer": "jill",
                "reviewState": "review",
                "needsClarification": "lead",
                "blockerTaskIds": ["\u{FF5E}", "\u{1F600}", "b", "B", "a\"", ""],
                "blockedByTaskIds": ["10", "9", "1\u{0}"],
                "historyEventIds": [],
                "reviewCycleId": "c1",
                "reviewObligation": "requested",
                "canBypassPhase2": false,
                "reviewRequestEventId": "e1",
                "reviewRequestedAt": "2026-11-20T09:00:00.000Z",
                "reviewStartedEventId": "e2",
                "reviewStartedAt": "2026-11-20T09:30:00.000Z",
                "reviewStartedBy": "jill",
                "reviewDiagnostics": ["z", "\u{1F4A9}", "\u{E000}"]
            }
        }))
        .unwrap()
    }

    #[test]
    fn direct_item_json_is_the_value_route_json() {
        let full = full_item();
        assert_eq!(direct_item(&full), canonical_json(&via_value_item(&full)));
        // Every optional field left out.
        let bare: ActionableWorkItem = serde_json::from_value(json!({
            "taskId": "1",
            "subject": "",
            "kind": "work",
            "assignee": "jack",
            "priority": "normal",
            "reason": "owned_pending_task",
            "evidence": {"status": "pending"}
        }))
        .unwrap();
        assert_eq!(direct_item(&bare), canonical_json(&via_value_item(&bare)));
    }

    fn some_text() -> impl Strategy<Value = Option<String>> {
        prop::option::of(a_test_text())
    }

    fn some_list() -> impl Strategy<Value = Option<Vec<String>>> {
        prop::option::of(prop::collection::vec(a_test_text(), 0..4))
    }

    fn an_item() -> impl Strategy<Value = ActionableWorkItem> {
        let kinds = ["work", "review", "clarification", "blocked_dependency"];
        let priorities = [
            "normal",
            "review_requested",
            "blocked",
            "needs_clarification",
        ];
        (
            (
                a_test_text(),
                some_text(),
                a_test_text(),
                0..4usize,
                a_test_text(),
                0..4usize,
            ),
            (
                a_test_text(),
                some_text(),
                some_text(),
                some_text(),
                some_text(),
            ),
            (some_list(), some_list(), some_list(), some_list()),
            (some_text(), some_text(), prop::option::of(any::<bool>())),
            (
                some_text(),
                some_text(),
                some_text(),
                some_text(),
                some_text(),
            ),
        )
            .prop_map(move |(head, people, lists, cycle, events)| {
                let (task_id, display_id, subject, kind, assignee, priority) = head;
                let (status, owner, reviewer, review_state, needs_clarification) = people;
                let (blockers, blocked_by, history, diagnostics) = lists;
                let (review_cycle_id, review_obligation, can_bypass_phase2) = cycle;
                let (request_id, requested_at, started_id, started_at, started_by) = events;
                let tagged = |spelling: &str| json!(spelling);
                ActionableWorkItem {
                    task_id,
                    display_id,
                    subject,
                    kind: serde_json::from_value(tagged(kinds[kind])).unwrap(),
                    assignee,
                    priority: serde_json::from_value(tagged(priorities[priority])).unwrap(),
                    reason: "a reason".into(),
                    evidence: Evidence {
                        status,
                        owner,
                        reviewer,
                        review_state,
                        needs_clarification,
                        blocker_task_ids: blockers,
                        blocked_by_task_ids: blocked_by,
                        history_event_ids: history,
                        review_cycle_id,
                        review_obligation,
                        can_bypass_phase2,
                        review_request_event_id: request_id,
                        review_requested_at: requested_at,
                        review_started_event_id: started_id,
                        review_started_at: started_at,
                        review_started_by: started_by,
                        review_diagnostics: diagnostics,
                    },
                }
            })
    }

    proptest! {
        #[test]
        fn any_item_json_is_the_value_route_json(item in an_item()) {
            prop_assert_eq!(direct_item(&item), canonical_json(&via_value_item(&item)));
        }
    }

    #[test]
    fn direct_item_json_of_known_item() {
        // Pins the form itself: keys sorted, `reason` out, lists sorted by
        // UTF-16 code units (U+1F600 before U+FF5E), escapes as JSON.stringify.
        let item: ActionableWorkItem = serde_json::from_value(json!({
            "taskId": "1",
            "subject": "\u{1}\"\u{2028}",
            "kind": "work",
            "assignee": "jack",
            "priority": "normal",
            "reason": "x",
            "evidence": {"blockerTaskIds": ["\u{FF5E}", "\u{1F600}", "a"], "status": "pending"}
        }))
        .unwrap();
        assert_eq!(
            direct_item(&item),
            "{\"assignee\":\"jack\",\"evidence\":{\"blockerTaskIds\":[\"a\",\"\u{1F600}\",\"\u{FF5E}\"],\
             \"status\":\"pending\"},\"kind\":\"work\",\"priority\":\"normal\",\
             \"subject\":\"\\u0001\\\"\u{2028}\",\"taskId\":\"1\"}"
        );
    }

    #[test]
    fn direct_fingerprint_is_the_value_route_fingerprint() {
        let team = TeamName::parse("forge").unwrap();
        let mut other = full_item();
        other.task_id = "2".into();
        other.evidence = Evidence {
            status: "pending".into(),
            ..Evidence::default()
        };
        let lists: [Vec<ActionableWorkItem>; 3] = [
            vec![],
            vec![full_item()],
            vec![full_item(), other, full_item()],
        ];
        for member in ["jack", "j\u{e9}"] {
            let member = MemberName::parse(member).unwrap();
            for items in &lists {
                assert_eq!(
                    agenda_fingerprint(&team, &member, items),
                    via_value_fingerprint(&team, &member, items),
                    "{member:?} {items:?}"
                );
            }
        }
    }

    #[test]
    fn canonical_json_sorts_keys_without_whitespace() {
        let value = json!({"b": 1, "a": {"d": [2, 1], "c": "x"}});
        assert_eq!(canonical_json(&value), r#"{"a":{"c":"x","d":[2,1]},"b":1}"#);
    }

    #[test]
    fn canonical_json_sorts_keys_whatever_the_map_insertion_order() {
        // With serde_json's `preserve_order` a map keeps insertion order; the
        // canonical form must not depend on it.
        let mut inner = serde_json::Map::new();
        inner.insert("z".into(), json!(1));
        inner.insert("m".into(), json!([json!({"y": 1, "x": 2})]));
        inner.insert("a".into(), json!(null));
        let mut outer = serde_json::Map::new();
        outer.insert("version".into(), json!(1));
        outer.insert("items".into(), Value::Object(inner));
        outer.insert("B".into(), json!("\u{1}\""));
        assert_eq!(
            canonical_json(&Value::Object(outer)),
            r#"{"B":"\u0001\"","items":{"a":null,"m":[{"x":2,"y":1}],"z":1},"version":1}"#
        );
    }

    #[test]
    fn sha256_hex_of_known_input() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn empty_agenda_fingerprint_is_stable_and_scoped() {
        let fingerprint = |team: &str, member: &str| {
            let team = TeamName::parse(team).unwrap();
            agenda_fingerprint(&team, &MemberName::parse(member).unwrap(), &[])
        };
        let a = fingerprint("forge", "jack");
        assert!(a.starts_with(FINGERPRINT_PREFIX));
        assert_eq!(a.len(), FINGERPRINT_PREFIX.len() + 64);
        assert_eq!(a, fingerprint("forge", "jack"));
        assert_ne!(a, fingerprint("forge", "jill"));
        assert_ne!(a, fingerprint("other", "jack"));
    }
}
