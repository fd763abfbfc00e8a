//! The agenda fingerprint: `agenda:v1:<sha256 hex of canonical JSON>` (DATA.md §5 "Fingerprint").
//!
//! Only board facts go in: `reason`, `generatedAt` and diagnostics stay out, so
//! rewording a reason never looks like new work.

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::agenda::ActionableWorkItem;

/// Prefix of every fingerprint.
pub const FINGERPRINT_PREFIX: &str = "agenda:v1:";

/// Canonical JSON: object keys sorted (byte order), no whitespace.
///
/// `serde_json::Map` is a `BTreeMap` in this crate (no `preserve_order`), so
/// serializing a `Value` already sorts keys at every depth.
pub fn canonical_json(value: &Value) -> String {
    value.to_string()
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    out
}

/// Fingerprint of `items`, which must already be in [`ActionableWorkItem::sort_key`] order.
pub fn agenda_fingerprint(
    team_name: &str,
    member_name: &str,
    items: &[ActionableWorkItem],
) -> String {
    let items: Vec<Value> = items
        .iter()
        .map(|item| {
            let mut value = serde_json::to_value(item).unwrap_or(Value::Null);
            if let Value::Object(map) = &mut value {
                map.remove("reason");
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
    fn sha256_hex_of_known_input() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn empty_agenda_fingerprint_is_stable_and_scoped() {
        let a = agenda_fingerprint("forge", "jack", &[]);
        assert!(a.starts_with(FINGERPRINT_PREFIX));
        assert_eq!(a.len(), FINGERPRINT_PREFIX.len() + 64);
        assert_eq!(a, agenda_fingerprint("forge", "jack", &[]));
        assert_ne!(a, agenda_fingerprint("forge", "jill", &[]));
        assert_ne!(a, agenda_fingerprint("other", "jack", &[]));
    }
}
