//! What each legacy file's JSON must look like to be read (a live file of
//! another shape is quarantined), and the rows taken out of it.

use serde_json::{Map, Value};

/// The shape a file must have, else it reads as its empty form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// `{schemaVersion: 1, members: {}}` (team `status.json`).
    LegacyStatus,
    /// `{schemaVersion: 2, status: {}}` (member `status.json`).
    MemberStatus,
    /// `{schemaVersion: 2, members, recentEvents: []}` (`indexes/metrics.json`).
    MetricsIndex,
    /// `{schemaVersion: 1, intents: {}}` (team `pending-reports.json`).
    LegacyReports,
    /// `{schemaVersion: 2, intents: {}}` (member `reports.json`).
    MemberReports,
    /// `{schemaVersion: 1, items: {}}` (team `outbox.json`).
    LegacyOutbox,
    /// `{schemaVersion: 2, items: {}}` (member `outbox.json`).
    MemberOutbox,
}

impl Shape {
    pub(super) fn accepts(self, value: &Value) -> bool {
        let version = value.get("schemaVersion").and_then(Value::as_f64);
        let record = |f: &str| value.get(f).is_some_and(Value::is_object);
        match self {
            Self::LegacyStatus => version == Some(1.0) && record("members"),
            Self::MemberStatus => version == Some(2.0) && record("status"),
            Self::MetricsIndex => {
                version == Some(2.0)
                    && value
                        .get("members")
                        .is_some_and(|m| m.is_object() || m.is_array())
                    && value.get("recentEvents").is_some_and(Value::is_array)
            }
            Self::LegacyReports => version == Some(1.0) && record("intents"),
            Self::MemberReports => version == Some(2.0) && record("intents"),
            Self::LegacyOutbox => version == Some(1.0) && record("items"),
            Self::MemberOutbox => version == Some(2.0) && record("items"),
        }
    }
}

/// Whether a read may quarantine what it cannot use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    /// A live file: an invalid one is moved aside.
    Live,
    /// An archive generation: never changed.
    Archive,
}

/// The values of an object field, in order (`Object.values`).
pub(super) fn values_of(value: &Option<Value>, field: &str) -> Vec<Value> {
    value
        .as_ref()
        .and_then(|v| v.get(field))
        .and_then(Value::as_object)
        .map(|o| o.values().cloned().collect())
        .unwrap_or_default()
}

pub(super) fn entries_of(value: &Option<Value>, field: &str) -> Vec<(String, Value)> {
    value
        .as_ref()
        .and_then(|v| v.get(field))
        .and_then(Value::as_object)
        .map(|o: &Map<String, Value>| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

pub(super) fn events_of(value: &Option<Value>, path: &[&str]) -> Vec<Value> {
    let mut current = value.as_ref();
    for field in path {
        current = current.and_then(|v| v.get(*field));
    }
    current
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}
