//! The identity fields of a payload, read in one pass over its bytes.
//!
//! A normalizer reads a few top-level keys ([`IDENTITY_KEYS`]); parsing the
//! whole payload into a `Value` first built a map of every key and a copy
//! of every string (the assistant's final answer included) only to drop
//! them: about a sixth of the CPU a drained Stop event took beyond the file
//! system's work. This pass keeps only the identity keys' values, borrowed
//! from the payload where JSON spells them without escapes, and steps over
//! everything else, which serde_json still parses and checks exactly as it
//! would for a `Value` (syntax, UTF-8, escapes, number range, nesting depth,
//! trailing characters), so a payload this pass takes is one a `Value` parse
//! takes too, and the fields it reads are the ones that parse gives: the
//! last of a key given twice, a non-string value as no text. The one thing
//! a `Value` parse does that this pass does not is serde_json's own
//! raw-value key (`$serde_json::private::RawValue`), which makes it parse
//! the string under that key in place of the object: a payload naming that
//! key anywhere, like one this pass refuses, is left to the `Value` parse
//! (see [`super::normalize::normalize`]), which decides the outcome as it
//! always did.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Every top-level key a normalizer reads; a cut payload is scanned for
/// these only (never for the message text).
pub(crate) const IDENTITY_KEYS: [&str; 39] = [
    "hook_event_name",
    "hookEventName",
    "session_id",
    "sessionId",
    "turn_id",
    "turnId",
    "transcript_path",
    "transcriptPath",
    "cwd",
    "provider",
    "source",
    "eventName",
    "event_name",
    "opencodeSessionId",
    "teamName",
    "team_name",
    "teamId",
    "team_id",
    "memberName",
    "member_name",
    "agentName",
    "agent_name",
    "runtimePromptMessageId",
    "runtime_prompt_message_id",
    "promptMessageId",
    "prompt_message_id",
    "threadId",
    "thread_id",
    "recordedAt",
    "recorded_at",
    "observedAt",
    "observed_at",
    "projectPath",
    "project_path",
    "agentId",
    "agent_id",
    "laneId",
    "lane_id",
    "outcome",
];

/// The key serde_json gives its own meaning to (see the module doc).
const RAW_VALUE_KEY: &str = "$serde_json::private::RawValue";

/// What a top-level identity key held, the last time it was given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
enum Field<'a> {
    #[default]
    Absent,
    /// A value that is not a string.
    Other,
    Text(Cow<'a, str>),
}

/// The identity fields of a payload object, by [`IDENTITY_KEYS`] position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdentityFields<'a> {
    fields: [Field<'a>; IDENTITY_KEYS.len()],
}

impl Default for IdentityFields<'_> {
    fn default() -> Self {
        Self {
            fields: std::array::from_fn(|_| Field::Absent),
        }
    }
}

/// The position of `key` in [`IDENTITY_KEYS`].
fn position(key: &str) -> Option<usize> {
    IDENTITY_KEYS.iter().position(|k| *k == key)
}

/// The position of `key`, which a normalizer reads: a key missing from
/// [`IDENTITY_KEYS`] would read as absent, so the tests (debug builds)
/// stop on one.
fn read_position(key: &str) -> Option<usize> {
    let at = position(key);
    debug_assert!(at.is_some(), "{key}: not in IDENTITY_KEYS");
    at
}

impl<'a> IdentityFields<'a> {
    /// The identity fields of the JSON text `raw`: `Ok(None)` when it is JSON
    /// but not an object, `Err` when this pass does not take it (not JSON,
    /// or naming serde_json's raw-value key: see the module doc).
    pub(crate) fn parse(raw: &'a [u8]) -> Result<Option<Self>, serde_json::Error> {
        serde_json::from_slice::<Payload<'a>>(raw).map(|payload| payload.0)
    }

    /// The identity fields of a parsed object.
    pub(crate) fn of_map(map: &'a Map<String, Value>) -> Self {
        let mut fields = Self::default();
        for (key, value) in map {
            if let Some(at) = position(key) {
                fields.fields[at] = match value {
                    Value::String(text) => Field::Text(Cow::Borrowed(text)),
                    _ => Field::Other,
                };
            }
        }
        fields
    }

    /// Whether the payload gives `key` (an identity key), whatever its value.
    pub(crate) fn contains(&self, key: &str) -> bool {
        read_position(key).is_some_and(|at| self.fields[at] != Field::Absent)
    }

    /// The string `key` (an identity key) holds, if it holds a string.
    pub(crate) fn text(&self, key: &str) -> Option<&str> {
        match &self.fields[read_position(key)?] {
            Field::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// A whole payload: its identity fields when it is an object.
struct Payload<'a>(Option<IdentityFields<'a>>);

impl<'de> Deserialize<'de> for Payload<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PayloadVisitor).map(Payload)
    }
}

struct PayloadVisitor;

impl<'de> Visitor<'de> for PayloadVisitor {
    type Value = Option<IdentityFields<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = IdentityFields::default();
        while let Some(Key(at)) = map.next_key()? {
            match at {
                Some(at) => fields.fields[at] = map.next_value()?,
                None => map.next_value::<Skipped>().map(drop)?,
            }
        }
        Ok(Some(fields))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// An object key: its [`IDENTITY_KEYS`] position, if it is one. The
/// raw-value key fails the pass.
struct Key(Option<usize>);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        if key == RAW_VALUE_KEY {
            return Err(E::custom("serde_json's raw-value key"));
        }
        Ok(Key(position(key)))
    }
}

impl<'de> Deserialize<'de> for Field<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(FieldVisitor)
    }
}

struct FieldVisitor;

impl<'de> Visitor<'de> for FieldVisitor {
    type Value = Field<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Field<'de>, E> {
        Ok(Field::Text(Cow::Borrowed(text)))
    }

    fn visit_str<E>(self, text: &str) -> Result<Field<'de>, E> {
        Ok(Field::Text(Cow::Owned(text.to_owned())))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Field<'de>, A::Error> {
        skip_map(map).map(|()| Field::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Field<'de>, A::Error> {
        skip_seq(seq).map(|()| Field::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Field<'de>, E> {
        Ok(Field::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Field<'de>, E> {
        Ok(Field::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Field<'de>, E> {
        Ok(Field::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Field<'de>, E> {
        Ok(Field::Other)
    }

    fn visit_unit<E>(self) -> Result<Field<'de>, E> {
        Ok(Field::Other)
    }
}

/// Any value, parsed and checked as a `Value` would be, and not kept.
struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkippedVisitor)
    }
}

struct SkippedVisitor;

impl<'de> Visitor<'de> for SkippedVisitor {
    type Value = Skipped;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Skipped, A::Error> {
        skip_map(map).map(|()| Skipped)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Skipped, A::Error> {
        skip_seq(seq).map(|()| Skipped)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_str<E>(self, _: &str) -> Result<Skipped, E> {
        Ok(Skipped)
    }

    fn visit_unit<E>(self) -> Result<Skipped, E> {
        Ok(Skipped)
    }
}

/// Steps over an object's entries (its keys checked, see [`Key`]).
fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_key::<Key>()?.is_some() {
        map.next_value::<Skipped>()?;
    }
    Ok(())
}

/// Steps over an array's elements.
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<Skipped>()?.is_some() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a `Value` parse gives for `raw`: `Err` when it refuses it,
    /// `Ok(None)` for JSON that is not an object.
    fn by_value(raw: &[u8]) -> Result<Option<Map<String, Value>>, ()> {
        match serde_json::from_slice::<Value>(raw).map_err(drop)? {
            Value::Object(map) => Ok(Some(map)),
            _ => Ok(None),
        }
    }

    /// The pass gives the fields a `Value` parse gives, and takes no payload
    /// a `Value` parse refuses; what it refuses is left to that parse.
    fn agrees_with_a_value_parse(raw: &[u8]) {
        let text = String::from_utf8_lossy(raw);
        let parsed = IdentityFields::parse(raw);
        let refused = parsed.is_err();
        match (by_value(raw), parsed) {
            (Ok(Some(map)), Ok(Some(fields))) => {
                assert_eq!(fields, IdentityFields::of_map(&map), "{text}");
            }
            (Ok(None), Ok(None)) | (_, Err(_)) => {}
            (value, parsed) => panic!("{text}: value {value:?}, pass {parsed:?}"),
        }
        if refused {
            // Refused only what a `Value` parse refuses, or the raw-value key.
            assert!(
                by_value(raw).is_err() || text.contains("RawValue"),
                "{text}"
            );
        }
    }

    /// Payloads that a `Value` parse reads in ways worth pinning: a key
    /// given twice (the last counts, also when it is not a string), escaped
    /// keys and values, nested values of every kind, and what it refuses
    /// (bad syntax, bad UTF-8, a lone surrogate, a number out of range,
    /// nesting past its limit, trailing characters).
    #[test]
    fn the_pass_reads_what_a_value_parse_reads() {
        let deep = |n: usize| format!(r#"{{"x":{}1{}}}"#, "[".repeat(n), "]".repeat(n));
        let cases: Vec<String> = vec![
            r#"{"session_id":"a","session_id":"b"}"#.into(),
            r#"{"session_id":"a","session_id":7}"#.into(),
            r#"{"session_id":7,"session_id":"a"}"#.into(),
            r#"{"session\u005fid":"\u0061\n","cwd":"/p\"q"}"#.into(),
            r#"{"provider":null,"source":{"a":[1,2,{"b":"c"}]},"x":[true,false,null,-1,2.5e3]}"#
                .into(),
            r#"{"turn_id":"t","n":18446744073709551615,"m":-9223372036854775808,"f":1e308}"#.into(),
            r#"  {"cwd" : "/p" }  "#.into(),
            r#"{}"#.into(),
            r#"[{"session_id":"a"}]"#.into(),
            r#""text""#.into(),
            r#"3"#.into(),
            r#"null"#.into(),
            r#"{"x":1e400}"#.into(),
            r#"{"x":"\ud800"}"#.into(),
            r#"{"x":"\q"}"#.into(),
            r#"{"x":1,}"#.into(),
            r#"{"x":1} 2"#.into(),
            r#"{"x":01}"#.into(),
            r#"{"x":1"#.into(),
            r#"{"x":[1,2}"#.into(),
            String::new(),
            deep(126),
            deep(127),
            deep(200),
            r#"{"$serde_json::private::RawValue":"{\"session_id\":\"s\"}"}"#.into(),
            r#"{"a":{"$serde_json::private::RawValue":"not json"}}"#.into(),
            r#"{"a":{"\u0024serde_json::private::RawValue":"1"}}"#.into(),
        ];
        for case in &cases {
            agrees_with_a_value_parse(case.as_bytes());
        }
        agrees_with_a_value_parse(b"{\"cwd\":\"\xff\"}");
        agrees_with_a_value_parse(b"{\"c\xc3\":1}");
    }

    /// A string without escapes is borrowed from the payload, not copied.
    #[test]
    fn an_unescaped_string_is_borrowed() {
        let raw = br#"{"session_id":"abc","cwd":"a\"b"}"#;
        let fields = IdentityFields::parse(raw).unwrap().unwrap();
        let at = |key| &fields.fields[position(key).unwrap()];
        assert!(matches!(
            at("session_id"),
            Field::Text(Cow::Borrowed("abc"))
        ));
        assert_eq!(at("cwd"), &Field::Text(Cow::Owned("a\"b".into())));
    }

    /// JSON text of `value` with some keys given twice and some values
    /// spelled with escapes, as payloads may come.
    fn spelled(value: &Value, twice: bool, escaped: bool) -> Vec<u8> {
        let mut text = serde_json::to_string(value).unwrap();
        if escaped {
            text = text.replace("id\"", "\\u0069d\"").replace('/', "\\/");
        }
        if twice {
            if let Some(rest) = text.strip_prefix('{').filter(|r| r.len() > 1) {
                text = format!("{{\"session_id\":5,\"cwd\":\"x\",{rest}");
            }
        }
        text.into_bytes()
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            any::<f64>().prop_map(|f| serde_json::json!(f)),
            ".{0,12}".prop_map(Value::String),
        ];
        let keys = prop::sample::select(
            IDENTITY_KEYS
                .iter()
                .copied()
                .chain(["x", "last_assistant_message"])
                .collect::<Vec<_>>(),
        );
        leaf.prop_recursive(3, 24, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(keys.clone(), inner, 0..10).prop_map(|m| {
                    Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_pass_agrees_with_a_value_parse(
            value in arb_json(),
            twice in any::<bool>(),
            escaped in any::<bool>(),
            cut in any::<prop::sample::Index>(),
        ) {
            let raw = spelled(&value, twice, escaped);
            agrees_with_a_value_parse(&raw);
            agrees_with_a_value_parse(&raw[..cut.index(raw.len() + 1)]);
        }
    }
}
