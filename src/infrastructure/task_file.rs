//! One task file's bytes read straight into a [`Task`], by the reference
//! task reader's rules (see [`parse_task_file`]).
//!
//! serde visits the document once and keeps only what a `Task` holds: no
//! `serde_json::Value` tree is built and copied from (at 10,000 task files
//! that tree, its keys and the fields no agenda reads were most of a cold
//! read's allocations). What is accepted and refused is exactly what parsing
//! into a `Value` accepts and refuses: every skipped field still goes
//! through `deserialize_any` ([`Checked`]), so a raw control character, bad
//! UTF-8 or nesting past serde_json's depth limit anywhere in the file still
//! makes it invalid, and a key repeated in an object counts with its last
//! value, as in a `Value` (and in `JSON.parse`).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::domain::js_semantics::{js_trim, number_to_string};
use crate::domain::team::{Clarification, HistoryEvent, ReviewState, Task, TaskStatus};
use crate::domain::time::parse_iso;

/// Outcome of parsing one task file.
#[derive(Debug)]
pub(crate) enum TaskParse {
    Task(Task),
    /// Internal or deleted: never on an agenda, not an error.
    Skipped,
    /// Not JSON, or not a task object.
    Invalid,
}

/// One task file, by the reference task reader's rules: `status: deleted`
/// and `metadata._internal: true` files are skipped; `id` is a string as
/// written or a number in its JavaScript spelling (anything else: empty);
/// `deletedAt` is ignored; `blockedBy` / `blocks` keep string entries only;
/// history keeps objects with a string `id`, `timestamp` and `type`; any
/// other field of the wrong type counts as missing.
pub(crate) fn parse_task_file(bytes: &[u8]) -> TaskParse {
    // A document that is not an object fails `deserialize_map`: invalid,
    // as a parse error is.
    match serde_json::from_slice::<TaskFields>(bytes) {
        Ok(fields) => fields.into_parse(),
        Err(_) => TaskParse::Invalid,
    }
}

/// The fields of a task object that a [`Task`] is made of, as found (the
/// ones only compared, borrowed from the file where they can be).
#[derive(Default)]
struct TaskFields<'de> {
    id: Id,
    display_id: Option<String>,
    subject: Option<String>,
    status: Option<Cow<'de, str>>,
    owner: Option<String>,
    blocked_by: Vec<String>,
    blocks: Vec<String>,
    needs_clarification: Option<Cow<'de, str>>,
    review_state: Option<Cow<'de, str>>,
    history: Vec<HistoryEvent>,
    /// `metadata._internal` is `true`.
    internal: bool,
}

impl TaskFields<'_> {
    fn into_parse(self) -> TaskParse {
        if self.internal {
            return TaskParse::Skipped;
        }
        let status = TaskStatus::parse(self.status.as_deref());
        if status == TaskStatus::Deleted {
            return TaskParse::Skipped;
        }
        let id = match self.id {
            Id::Text(id) => id,
            Id::Number(n) => number_to_string(n),
            Id::Other => String::new(),
        };
        let display_id = match self.display_id.as_deref().map(js_trim) {
            Some(d) if !d.is_empty() => d.to_string(),
            _ => derive_display_id(&id),
        };
        TaskParse::Task(Task {
            display_id,
            subject: self.subject.unwrap_or_default(),
            status,
            owner: self.owner,
            blocked_by: self.blocked_by,
            blocks: self.blocks,
            needs_clarification: match self.needs_clarification.as_deref() {
                Some("lead") => Some(Clarification::Lead),
                Some("user") => Some(Clarification::User),
                _ => None,
            },
            review_state: self
                .review_state
                .as_deref()
                .map_or(ReviewState::None, ReviewState::parse),
            history: self.history,
            id,
        })
    }
}

/// The display id of a task without one: the first 8 characters (lowercased)
/// of a canonical UUID id, else the trimmed id.
fn derive_display_id(id: &str) -> String {
    let id = js_trim(id);
    if is_uuid(id) {
        id[..8].to_lowercase()
    } else {
        id.to_string()
    }
}

/// A canonical task UUID: 8-4-4-4-12 hex digits, version 1–5, variant 8/9/a/b.
fn is_uuid(id: &str) -> bool {
    let bytes = id.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            14 => (b'1'..=b'5').contains(b),
            19 => matches!(b.to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b'),
            _ => b.is_ascii_hexdigit(),
        })
}

/// A task's `id` as written.
#[derive(Default)]
enum Id {
    Text(String),
    Number(f64),
    /// Missing, `null`, or any other type.
    #[default]
    Other,
}

/// The task object's keys this reader looks at.
enum TaskKey {
    Id,
    DisplayId,
    Subject,
    Status,
    Owner,
    BlockedBy,
    Blocks,
    NeedsClarification,
    ReviewState,
    HistoryEvents,
    Metadata,
    Other,
}

impl TaskKey {
    fn of(key: &str) -> Self {
        match key {
            "id" => Self::Id,
            "displayId" => Self::DisplayId,
            "subject" => Self::Subject,
            "status" => Self::Status,
            "owner" => Self::Owner,
            "blockedBy" => Self::BlockedBy,
            "blocks" => Self::Blocks,
            "needsClarification" => Self::NeedsClarification,
            "reviewState" => Self::ReviewState,
            "historyEvents" => Self::HistoryEvents,
            "metadata" => Self::Metadata,
            _ => Self::Other,
        }
    }
}

/// A history entry's keys this reader looks at.
enum HistoryKey {
    Id,
    Timestamp,
    Type,
    From,
    To,
    Reviewer,
    Actor,
    Other,
}

impl HistoryKey {
    fn of(key: &str) -> Self {
        match key {
            "id" => Self::Id,
            "timestamp" => Self::Timestamp,
            "type" => Self::Type,
            "from" => Self::From,
            "to" => Self::To,
            "reviewer" => Self::Reviewer,
            "actor" => Self::Actor,
            _ => Self::Other,
        }
    }
}

/// An object key, decoded (escapes resolved), mapped by `of` without
/// keeping the key.
struct KeyOf<K>(fn(&str) -> K);

impl<'de, K> DeserializeSeed<'de> for KeyOf<K> {
    type Value = K;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<K> Visitor<'_> for KeyOf<K> {
    type Value = K;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<K, E> {
        Ok((self.0)(key))
    }
}

impl<'de> Deserialize<'de> for TaskFields<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TaskFieldsVisitor)
    }
}

struct TaskFieldsVisitor;

impl<'de> Visitor<'de> for TaskFieldsVisitor {
    type Value = TaskFields<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a task object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TaskFields<'de>, A::Error> {
        let mut fields = TaskFields::default();
        // A repeated key overwrites: the last value counts, as in a `Value`.
        while let Some(key) = map.next_key_seed(KeyOf(TaskKey::of))? {
            match key {
                TaskKey::Id => fields.id = map.next_value::<IdValue>()?.0,
                TaskKey::DisplayId => fields.display_id = text(&mut map)?,
                TaskKey::Subject => fields.subject = text(&mut map)?,
                TaskKey::Status => fields.status = map.next_value::<Text>()?.0,
                TaskKey::Owner => fields.owner = text(&mut map)?,
                TaskKey::BlockedBy => fields.blocked_by = map.next_value::<TextList>()?.0,
                TaskKey::Blocks => fields.blocks = map.next_value::<TextList>()?.0,
                TaskKey::NeedsClarification => {
                    fields.needs_clarification = map.next_value::<Text>()?.0
                }
                TaskKey::ReviewState => fields.review_state = map.next_value::<Text>()?.0,
                TaskKey::HistoryEvents => fields.history = map.next_value::<History>()?.0,
                TaskKey::Metadata => fields.internal = map.next_value::<Metadata>()?.internal,
                TaskKey::Other => {
                    map.next_value::<Checked>()?;
                }
            }
        }
        Ok(fields)
    }
}

/// The next value of `map` if it is a string; any other value is checked
/// and skipped.
fn text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<String>, A::Error> {
    Ok(map.next_value::<Text>()?.0.map(Cow::into_owned))
}

/// The `visit_*` methods of a visitor for the kinds of value it has no use
/// for: each gives the visitor's `other()`, nested values read through
/// [`Checked`] (so checked as a `Value` parse checks them).
macro_rules! visit_as_other {
    ($($kind:ident)*) => { $( visit_as_other!(@ $kind); )* };
    (@ unit) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Self::other())
        }
    };
    (@ bool) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Self::other())
        }
    };
    (@ number) => {
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Self::other())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Self::other())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Self::other())
        }
    };
    (@ string) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Self::other())
        }
    };
    (@ array) => {
        fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
            while seq.next_element::<Checked>()?.is_some() {}
            Ok(Self::other())
        }
    };
    (@ object) => {
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
            while map.next_entry::<Checked, Checked>()?.is_some() {}
            Ok(Self::other())
        }
    };
}

/// Any JSON value, read in full (so checked as a `Value` parse checks it:
/// control characters, UTF-8, depth) and dropped.
struct Checked;

impl Checked {
    fn other() -> Self {
        Self
    }
}

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Checked)
    }
}

impl<'de> Visitor<'de> for Checked {
    type Value = Checked;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    visit_as_other!(unit bool number string array object);
}

/// A string value (borrowed from the file when it has no escapes), or
/// `None` for any other value.
struct Text<'de>(Option<Cow<'de, str>>);

impl Text<'_> {
    fn other() -> Self {
        Self(None)
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
        Ok(Text(Some(Cow::Borrowed(s))))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
        Ok(Text(Some(Cow::Owned(s.to_string()))))
    }
    visit_as_other!(unit bool number array object);
}

impl TextVisitor {
    fn other<'de>() -> Text<'de> {
        Text::other()
    }
}

/// A task id value: text, a number, or anything else.
struct IdValue(Id);

impl<'de> Deserialize<'de> for IdValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

struct IdVisitor;

impl IdVisitor {
    fn other() -> IdValue {
        IdValue(Id::Other)
    }
}

impl<'de> Visitor<'de> for IdVisitor {
    type Value = IdValue;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<IdValue, E> {
        Ok(IdValue(Id::Text(s.to_string())))
    }
    // As `Value::as_f64` converts them.
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<IdValue, E> {
        Ok(IdValue(Id::Number(n as f64)))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<IdValue, E> {
        Ok(IdValue(Id::Number(n as f64)))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<IdValue, E> {
        Ok(IdValue(Id::Number(n)))
    }
    visit_as_other!(unit bool array object);
}

/// The string entries of an array (others skipped); empty for any value
/// that is not an array.
struct TextList(Vec<String>);

impl<'de> Deserialize<'de> for TextList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextListVisitor)
    }
}

struct TextListVisitor;

impl TextListVisitor {
    fn other() -> TextList {
        TextList(Vec::new())
    }
}

impl<'de> Visitor<'de> for TextListVisitor {
    type Value = TextList;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<TextList, S::Error> {
        let mut list = Vec::new();
        while let Some(Text(entry)) = seq.next_element::<Text>()? {
            list.extend(entry.map(Cow::into_owned));
        }
        Ok(TextList(list))
    }
    visit_as_other!(unit bool number string object);
}

/// The kept entries of `historyEvents` (see [`HistoryEntry`]); empty for
/// any value that is not an array.
struct History(Vec<HistoryEvent>);

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(HistoryVisitor)
    }
}

struct HistoryVisitor;

impl HistoryVisitor {
    fn other() -> History {
        History(Vec::new())
    }
}

impl<'de> Visitor<'de> for HistoryVisitor {
    type Value = History;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<History, S::Error> {
        let mut events = Vec::new();
        while let Some(HistoryEntry(entry)) = seq.next_element::<HistoryEntry>()? {
            events.extend(entry);
        }
        Ok(History(events))
    }
    visit_as_other!(unit bool number string object);
}

/// One history entry: kept when it is an object with a string `id`,
/// `timestamp` and `type`.
struct HistoryEntry(Option<HistoryEvent>);

impl<'de> Deserialize<'de> for HistoryEntry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(HistoryEntryVisitor)
    }
}

struct HistoryEntryVisitor;

impl HistoryEntryVisitor {
    fn other() -> HistoryEntry {
        HistoryEntry(None)
    }
}

impl<'de> Visitor<'de> for HistoryEntryVisitor {
    type Value = HistoryEntry;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<HistoryEntry, M::Error> {
        let (mut id, mut timestamp, mut kind) = (None, None, None);
        let (mut from, mut to, mut reviewer, mut actor) = (None, None, None, None);
        while let Some(key) = map.next_key_seed(KeyOf(HistoryKey::of))? {
            let slot = match key {
                HistoryKey::Id => &mut id,
                HistoryKey::Timestamp => &mut timestamp,
                HistoryKey::Type => &mut kind,
                HistoryKey::From => &mut from,
                HistoryKey::To => &mut to,
                HistoryKey::Reviewer => &mut reviewer,
                HistoryKey::Actor => &mut actor,
                HistoryKey::Other => {
                    map.next_value::<Checked>()?;
                    continue;
                }
            };
            *slot = text(&mut map)?;
        }
        let event = match (id, timestamp, kind) {
            (Some(id), Some(timestamp), Some(kind)) => Some(HistoryEvent {
                at_ms: parse_iso(&timestamp),
                id,
                timestamp,
                kind,
                from,
                to,
                reviewer,
                actor,
            }),
            _ => None,
        };
        Ok(HistoryEntry(event))
    }
    visit_as_other!(unit bool number string array);
}

/// The `metadata` value: whether it is an object whose `_internal` is `true`.
struct Metadata {
    internal: bool,
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MetadataVisitor)
    }
}

struct MetadataVisitor;

impl MetadataVisitor {
    fn other() -> Metadata {
        Metadata { internal: false }
    }
}

impl<'de> Visitor<'de> for MetadataVisitor {
    type Value = Metadata;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Metadata, M::Error> {
        let mut internal = false;
        while let Some(key) = map.next_key_seed(KeyOf(|k| k == "_internal"))? {
            if key {
                internal = map.next_value::<IsTrue>()?.0;
            } else {
                map.next_value::<Checked>()?;
            }
        }
        Ok(Metadata { internal })
    }
    visit_as_other!(unit bool number string array);
}

/// Whether a value is the boolean `true`.
struct IsTrue(bool);

impl<'de> Deserialize<'de> for IsTrue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IsTrueVisitor)
    }
}

struct IsTrueVisitor;

impl IsTrueVisitor {
    fn other() -> IsTrue {
        IsTrue(false)
    }
}

impl<'de> Visitor<'de> for IsTrueVisitor {
    type Value = IsTrue;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, b: bool) -> Result<IsTrue, E> {
        Ok(IsTrue(b))
    }
    visit_as_other!(unit number string array object);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    /// The reader this module replaced, kept as the oracle: the file parsed
    /// into a `Value`, then the task taken from it.
    fn through_value(bytes: &[u8]) -> TaskParse {
        let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
            return TaskParse::Invalid;
        };
        let Some(obj) = value.as_object() else {
            return TaskParse::Invalid;
        };
        if value.pointer("/metadata/_internal") == Some(&Value::Bool(true)) {
            return TaskParse::Skipped;
        }
        let status = TaskStatus::parse(obj.get("status").and_then(Value::as_str));
        if status == TaskStatus::Deleted {
            return TaskParse::Skipped;
        }
        let string = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        let array = |key: &str| {
            obj.get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let id = match obj.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.as_f64().map(number_to_string).unwrap_or_default(),
            _ => String::new(),
        };
        let display_id = match obj.get("displayId").and_then(Value::as_str).map(js_trim) {
            Some(d) if !d.is_empty() => d.to_string(),
            _ => derive_display_id(&id),
        };
        let ids = |key: &str| -> Vec<String> {
            array(key)
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        };
        TaskParse::Task(Task {
            display_id,
            subject: string(&value, "subject").unwrap_or_default(),
            status,
            owner: string(&value, "owner"),
            blocked_by: ids("blockedBy"),
            blocks: ids("blocks"),
            needs_clarification: match obj.get("needsClarification").and_then(Value::as_str) {
                Some("lead") => Some(Clarification::Lead),
                Some("user") => Some(Clarification::User),
                _ => None,
            },
            review_state: obj
                .get("reviewState")
                .and_then(Value::as_str)
                .map_or(ReviewState::None, ReviewState::parse),
            history: array("historyEvents")
                .iter()
                .filter_map(|e| {
                    let id = e.get("id")?.as_str()?.to_string();
                    let timestamp = e.get("timestamp")?.as_str()?.to_string();
                    let kind = e.get("type")?.as_str()?.to_string();
                    Some(HistoryEvent {
                        at_ms: parse_iso(&timestamp),
                        id,
                        timestamp,
                        kind,
                        from: string(e, "from"),
                        to: string(e, "to"),
                        reviewer: string(e, "reviewer"),
                        actor: string(e, "actor"),
                    })
                })
                .collect(),
            id,
        })
    }

    fn same(bytes: &[u8]) {
        let got = format!("{:?}", parse_task_file(bytes));
        let want = format!("{:?}", through_value(bytes));
        assert_eq!(got, want, "{}", String::from_utf8_lossy(bytes));
    }

    /// What a file amounts to: `Invalid`, `Skipped`, or the task's
    /// `(id, display id, status, owner, blockedBy, history ids)`.
    fn outcome(bytes: &[u8]) -> String {
        match parse_task_file(bytes) {
            TaskParse::Invalid => "invalid".into(),
            TaskParse::Skipped => "skipped".into(),
            TaskParse::Task(t) => format!(
                "{}|{}|{}|{}|{}|{}",
                t.id,
                t.display_id,
                t.status.as_str(),
                t.owner.as_deref().unwrap_or("-"),
                t.blocked_by.join(","),
                t.history
                    .iter()
                    .map(|e| e.id.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        }
    }

    #[test]
    fn a_file_amounts_to_what_its_value_does() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let cases: Vec<(Vec<u8>, &str)> = vec![
            // Not an object, not JSON, or more than one value.
            (b"[1]".to_vec(), "invalid"),
            (b"\"x\"".to_vec(), "invalid"),
            (b"{\"id\":\"1\"} {}".to_vec(), "invalid"),
            (b"{\"id\":\"1\",}".to_vec(), "invalid"),
            // What a skipped field holds is checked as a Value parse checks it.
            (b"{\"id\":\"1\",\"note\":\"a\nb\"}".to_vec(), "invalid"),
            (b"{\"id\":\"1\",\"note\":\"\xff\"}".to_vec(), "invalid"),
            (b"{\"id\":\"1\",\"note\":\"\\ud800\"}".to_vec(), "invalid"),
            (format!("{{\"id\":\"1\",\"note\":{deep}}}").into_bytes(), "invalid"),
            (b"{\"id\":\"1\",\"n\":1e999}".to_vec(), "invalid"),
            // A repeated key counts with its last value.
            (br#"{"id":"1","status":"deleted","status":"pending"}"#.to_vec(), "1|1|pending|-||"),
            (br#"{"id":"1","owner":"a","owner":5}"#.to_vec(), "1|1|pending|-||"),
            (br#"{"id":"1","metadata":{"_internal":true},"metadata":{}}"#.to_vec(), "1|1|pending|-||"),
            (br#"{"id":"1","metadata":{"_internal":true,"_internal":1}}"#.to_vec(), "1|1|pending|-||"),
            (br#"{"id":"1","metadata":{"_internal":false,"_internal":true}}"#.to_vec(), "skipped"),
            (br#"{"id":"1","metadata":[true]}"#.to_vec(), "1|1|pending|-||"),
            // Keys are compared decoded.
            (br#"{"id":"1","own\u0065r":"jack"}"#.to_vec(), "1|1|pending|jack||"),
            // Wrong types count as missing; arrays keep their strings.
            (br#"{"id":true,"displayId":7,"blockedBy":{"0":"x"}}"#.to_vec(), "||pending|-||"),
            (br#"{"id":-3,"blockedBy":["a",1,null,["b"],"c"]}"#.to_vec(), "-3|-3|pending|-|a,c|"),
            (
                br#"{"id":"1","historyEvents":[{"id":"h1","timestamp":"t","type":"k"},{"id":"h2","type":"k"},5,{"id":"h3","timestamp":"t","type":"k","id":null}]}"#.to_vec(),
                "1|1|pending|-||h1",
            ),
        ];
        for (bytes, want) in &cases {
            assert_eq!(outcome(bytes), *want, "{}", String::from_utf8_lossy(bytes));
            same(bytes);
        }
    }

    /// A key of a task file, of a history entry or of `metadata`, or another one.
    fn key() -> impl Strategy<Value = &'static str> + Clone {
        prop::sample::select(vec![
            "id",
            "displayId",
            "subject",
            "status",
            "owner",
            "blockedBy",
            "blocks",
            "needsClarification",
            "reviewState",
            "historyEvents",
            "metadata",
            "_internal",
            "timestamp",
            "type",
            "from",
            "to",
            "reviewer",
            "actor",
            "other",
        ])
    }

    fn object(entries: Vec<(&str, String)>) -> String {
        let entries: Vec<_> = entries
            .into_iter()
            .map(|(k, v)| format!("\"{k}\":{v}"))
            .collect();
        format!("{{{}}}", entries.join(","))
    }

    /// A JSON value as text, drawn from values a task file could hold in
    /// the fields this reader looks at, with repeated keys.
    fn json() -> impl Strategy<Value = String> {
        let key = key();
        let leaf = prop_oneof![
            Just("null".to_string()),
            any::<bool>().prop_map(|b| b.to_string()),
            any::<i64>().prop_map(|n| n.to_string()),
            any::<u64>().prop_map(|n| n.to_string()),
            (-1e30f64..1e30).prop_map(|n| serde_json::to_string(&n).unwrap()),
            prop::sample::select(vec![
                "\"\"",
                "\" 7 \"",
                "\"deleted\"",
                "\"completed\"",
                "\"in_progress\"",
                "\"lead\"",
                "\"user\"",
                "\"review\"",
                "\"needsFix\"",
                "\"approved\"",
                "\"jack\"",
                "\"2026-11-20T09:00:00Z\"",
                "\"a\\\"b\\u00e9\"",
                "\"123E4567-e89b-42d3-B456-426614174000\"",
            ])
            .prop_map(str::to_string),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((key.clone(), inner), 0..8).prop_map(object),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_document_reads_as_through_a_value(doc in json()) {
            same(doc.as_bytes());
        }

        #[test]
        fn any_task_object_reads_as_through_a_value(
            entries in prop::collection::vec((key(), json()), 0..12),
        ) {
            same(object(entries).as_bytes());
        }
    }
}
