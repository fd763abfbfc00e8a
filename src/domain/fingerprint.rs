//! The agenda fingerprint: `agenda:v1:<sha256 hex of canonical JSON>`.
//!
//! Only board facts go in: `reason`, `generatedAt` and diagnostics stay out, so
//! rewording a reason never looks like new work.

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::js_semantics::compare_code_units;
use super::names::{MemberName, TeamName};

/// Prefix of every fingerprint.
pub(crate) const FINGERPRINT_PREFIX: &str = "agenda:v1:";

/// Evidence lists the fingerprint sorts, so their order on the item never matters.
const SORTED_EVIDENCE_LISTS: [&str; 4] = [
    "blockerTaskIds",
    "blockedByTaskIds",
    "historyEventIds",
    "reviewDiagnostics",
];

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
/// already be in `ActionableWorkItem::sort_key` order by `localeCompare`), as
/// their JSON; `member_name` is the normalized name ([`MemberName::normalized`]). `reason` stays out; the
/// evidence lists in [`SORTED_EVIDENCE_LISTS`] go in sorted. Generic over the
/// item so the hash rule does not depend on the agenda module that builds
/// the items.
pub(crate) fn agenda_fingerprint<Item: Serialize>(
    team_name: &TeamName,
    member_name: &MemberName,
    items: &[Item],
) -> String {
    let items: Vec<Value> = items
        .iter()
        .map(|item| {
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
        })
        .collect();
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

#[cfg(test)]
mod tests {
    use super::*;

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
            agenda_fingerprint::<Value>(&team, &MemberName::parse(member).unwrap(), &[])
        };
        let a = fingerprint("forge", "jack");
        assert!(a.starts_with(FINGERPRINT_PREFIX));
        assert_eq!(a.len(), FINGERPRINT_PREFIX.len() + 64);
        assert_eq!(a, fingerprint("forge", "jack"));
        assert_ne!(a, fingerprint("forge", "jill"));
        assert_ne!(a, fingerprint("other", "jack"));
    }
}
