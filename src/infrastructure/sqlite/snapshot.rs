//! A team's whole state as rows ([`TeamRecords`](super::records::TeamRecords), what `mws.snapshot.list`
//! returns and `mws.importTeam` takes) and as the domain snapshot the JSON
//! replica carries (`{statuses, reportIntents, outboxItems, metricEvents,
//! filesToArchive: []}`, the camelCase objects of the v2 JSON files), with
//! the app's conversions between the two (`recordsToSnapshot`,
//! `snapshotToRecords`) and its validator of a replica snapshot.
//!
//! The domain side stays a JSON value: the replica must round-trip every
//! field the app wrote, also those the addon's domain types do not model.

use std::cmp::Ordering;

use serde_json::{Map, Value};

use super::identity::{normalize_team_records, team_key};
use super::js_json;
use super::mappers::BadColumn;
use super::records::{
    MetricEventRecord, OutboxRecord, ReportIntentRecord, StatusRecord, TeamRecords,
};
use crate::domain::js_semantics::locale_compare;
use crate::domain::names::normalize_member_name;

fn sorted<T: Clone>(rows: &[T], key: impl Fn(&T) -> &str) -> Vec<T> {
    let mut rows = rows.to_vec();
    rows.sort_by(|a, b| locale_compare(key(a), key(b)));
    rows
}

/// The same rows by identity with the same column values, in any order
/// (`areSnapshotRecordSetsEquivalent`): whether an import changed anything,
/// and whether what was written reads back.
pub(crate) fn equivalent(left: &TeamRecords, right: &TeamRecords) -> bool {
    sorted(&left.statuses, |r| &r.member_key) == sorted(&right.statuses, |r| &r.member_key)
        && sorted(&left.report_intents, |r| &r.id) == sorted(&right.report_intents, |r| &r.id)
        && sorted(&left.outbox_items, |r| &r.id) == sorted(&right.outbox_items, |r| &r.id)
        && sorted(&left.metric_events, |r| &r.id) == sorted(&right.metric_events, |r| &r.id)
}

fn parse_object(json: &str, column: &'static str) -> Result<Value, BadColumn> {
    serde_json::from_str(json).map_err(|e| BadColumn {
        column,
        detail: e.to_string(),
    })
}

fn put(object: &mut Map<String, Value>, key: &str, value: impl Into<Value>) {
    object.insert(key.into(), value.into());
}

/// Sets `key` only to a non-empty value (the app spreads truthy fields only).
fn put_present(object: &mut Map<String, Value>, key: &str, value: &Option<String>) {
    if let Some(value) = value.as_ref().filter(|v| !v.is_empty()) {
        put(object, key, value.clone());
    }
}

/// The team's domain snapshot of `records`, all under `team`
/// (`recordsToSnapshot`).
pub fn records_to_domain(team: &str, records: &TeamRecords) -> Result<Value, BadColumn> {
    let mut records = records.clone();
    normalize_team_records(team, &mut records)?;
    let statuses = records
        .statuses
        .iter()
        .map(|r| parse_object(&r.status_json, "status_json"))
        .collect::<Result<Vec<_>, _>>()?;
    let intents = records
        .report_intents
        .iter()
        .map(|r| {
            let mut o = Map::new();
            put(&mut o, "id", r.id.clone());
            put(&mut o, "teamName", r.team_name.clone());
            put(&mut o, "memberName", r.member_name.clone());
            put(
                &mut o,
                "request",
                parse_object(&r.request_json, "request_json")?,
            );
            put(&mut o, "reason", r.reason.clone());
            put(&mut o, "status", r.status.clone());
            put(&mut o, "recordedAt", r.recorded_at.clone());
            put_present(&mut o, "processedAt", &r.processed_at);
            put_present(&mut o, "resultCode", &r.result_code);
            Ok(Value::Object(o))
        })
        .collect::<Result<Vec<_>, BadColumn>>()?;
    let outbox = records
        .outbox_items
        .iter()
        .map(|r| {
            let mut o = Map::new();
            put(&mut o, "id", r.id.clone());
            put(&mut o, "teamName", r.team_name.clone());
            put(&mut o, "memberName", r.member_name.clone());
            put(&mut o, "agendaFingerprint", r.agenda_fingerprint.clone());
            put(&mut o, "payloadHash", r.payload_hash.clone());
            put(
                &mut o,
                "payload",
                parse_object(&r.payload_json, "payload_json")?,
            );
            put(&mut o, "status", r.status.clone());
            put(&mut o, "attemptGeneration", r.attempt_generation);
            put_present(&mut o, "claimedBy", &r.claimed_by);
            put_present(&mut o, "claimedAt", &r.claimed_at);
            put_present(&mut o, "deliveredMessageId", &r.delivered_message_id);
            put_present(&mut o, "deliveryState", &r.delivery_state);
            if let Some(json) = r
                .delivery_diagnostics_json
                .as_ref()
                .filter(|j| !j.is_empty())
            {
                put(
                    &mut o,
                    "deliveryDiagnostics",
                    parse_object(json, "delivery_diagnostics_json")?,
                );
            }
            put_present(&mut o, "lastError", &r.last_error);
            put_present(&mut o, "nextAttemptAt", &r.next_attempt_at);
            put(&mut o, "createdAt", r.created_at.clone());
            put(&mut o, "updatedAt", r.updated_at.clone());
            Ok(Value::Object(o))
        })
        .collect::<Result<Vec<_>, BadColumn>>()?;
    let events = records
        .metric_events
        .iter()
        .map(|r| parse_object(&r.event_json, "event_json"))
        .collect::<Result<Vec<_>, _>>()?;
    let mut snapshot = Map::new();
    put(&mut snapshot, "statuses", statuses);
    put(&mut snapshot, "reportIntents", intents);
    put(&mut snapshot, "outboxItems", outbox);
    put(&mut snapshot, "metricEvents", events);
    put(&mut snapshot, "filesToArchive", Vec::<Value>::new());
    Ok(Value::Object(snapshot))
}

/// A domain field that must be a string.
fn text(object: &Value, field: &'static str) -> Result<String, BadColumn> {
    object
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| BadColumn {
            column: field,
            detail: "missing or not a string".into(),
        })
}

/// An optional domain field (`?? null`): a string, or absent.
fn optional_text(object: &Value, field: &str) -> Option<String> {
    object
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_string)
}

fn stringify(value: &Value, column: &'static str) -> Result<String, BadColumn> {
    js_json::stringify(value).map_err(|e| BadColumn {
        column,
        detail: e.to_string(),
    })
}

fn list<'a>(snapshot: &'a Value, field: &'static str) -> Result<&'a [Value], BadColumn> {
    snapshot
        .get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .ok_or_else(|| BadColumn {
            column: field,
            detail: "missing or not an array".into(),
        })
}

fn member_key_of(object: &Value) -> String {
    object
        .get("memberName")
        .and_then(Value::as_str)
        .map(normalize_member_name)
        .unwrap_or_default()
}

/// The rows of a domain snapshot, all under `team` (`snapshotToRecords`).
pub(crate) fn domain_to_records(team: &str, snapshot: &Value) -> Result<TeamRecords, BadColumn> {
    let statuses = list(snapshot, "statuses")?
        .iter()
        .map(|s| {
            Ok(StatusRecord {
                team_name: text(s, "teamName")?,
                member_key: member_key_of(s),
                member_name: text(s, "memberName")?,
                state: text(s, "state")?,
                evaluated_at: text(s, "evaluatedAt")?,
                provider_id: optional_text(s, "providerId"),
                status_json: stringify(s, "status_json")?,
            })
        })
        .collect::<Result<Vec<_>, BadColumn>>()?;
    let report_intents = list(snapshot, "reportIntents")?
        .iter()
        .map(|i| {
            Ok(ReportIntentRecord {
                team_name: text(i, "teamName")?,
                id: text(i, "id")?,
                member_key: member_key_of(i),
                member_name: text(i, "memberName")?,
                status: text(i, "status")?,
                reason: text(i, "reason")?,
                recorded_at: text(i, "recordedAt")?,
                processed_at: optional_text(i, "processedAt"),
                result_code: optional_text(i, "resultCode"),
                request_json: stringify(i.get("request").unwrap_or(&Value::Null), "request_json")?,
            })
        })
        .collect::<Result<Vec<_>, BadColumn>>()?;
    let outbox_items = list(snapshot, "outboxItems")?
        .iter()
        .map(|o| {
            let payload = o.get("payload").cloned().unwrap_or(Value::Null);
            let truthy_json = |value: Option<&Value>, column| match value {
                None | Some(Value::Null) => Ok(None),
                Some(v) => stringify(v, column).map(Some),
            };
            Ok(OutboxRecord {
                team_name: text(o, "teamName")?,
                id: text(o, "id")?,
                member_key: member_key_of(o),
                member_name: text(o, "memberName")?,
                agenda_fingerprint: text(o, "agendaFingerprint")?,
                payload_hash: text(o, "payloadHash")?,
                status: text(o, "status")?,
                attempt_generation: o
                    .get("attemptGeneration")
                    .and_then(Value::as_i64)
                    .ok_or_else(|| BadColumn {
                        column: "attemptGeneration",
                        detail: "not an integer".into(),
                    })?,
                claimed_by: optional_text(o, "claimedBy"),
                claimed_at: optional_text(o, "claimedAt"),
                delivered_message_id: optional_text(o, "deliveredMessageId"),
                delivery_state: optional_text(o, "deliveryState"),
                last_error: optional_text(o, "lastError"),
                next_attempt_at: optional_text(o, "nextAttemptAt"),
                created_at: text(o, "createdAt")?,
                updated_at: text(o, "updatedAt")?,
                work_sync_intent: text(&payload, "workSyncIntent")?,
                work_sync_intent_key: optional_text(&payload, "workSyncIntentKey"),
                review_request_event_ids_json: truthy_json(
                    payload.get("workSyncReviewRequestEventIds"),
                    "review_request_event_ids_json",
                )?,
                delivery_diagnostics_json: truthy_json(
                    o.get("deliveryDiagnostics"),
                    "delivery_diagnostics_json",
                )?,
                payload_json: stringify(&payload, "payload_json")?,
            })
        })
        .collect::<Result<Vec<_>, BadColumn>>()?;
    let metric_events = list(snapshot, "metricEvents")?
        .iter()
        .map(|e| {
            Ok(MetricEventRecord {
                team_name: text(e, "teamName")?,
                id: text(e, "id")?,
                member_key: member_key_of(e),
                member_name: text(e, "memberName")?,
                kind: text(e, "kind")?,
                recorded_at: text(e, "recordedAt")?,
                event_json: stringify(e, "event_json")?,
            })
        })
        .collect::<Result<Vec<_>, BadColumn>>()?;
    let mut records = TeamRecords {
        statuses,
        report_intents,
        outbox_items,
        metric_events,
    };
    normalize_team_records(team, &mut records)?;
    Ok(records)
}

const STATUS_STATES: [&str; 6] = [
    "caught_up",
    "needs_sync",
    "still_working",
    "blocked",
    "inactive",
    "unknown",
];
const INTENT_STATUSES: [&str; 4] = ["pending", "accepted", "rejected", "superseded"];
const OUTBOX_STATUSES: [&str; 6] = [
    "pending",
    "claimed",
    "delivered",
    "superseded",
    "failed_retryable",
    "failed_terminal",
];
const METRIC_KINDS: [&str; 5] = [
    "status_evaluated",
    "would_nudge",
    "fingerprint_changed",
    "report_accepted",
    "report_rejected",
];

/// Whether `snapshot` is a domain snapshot of `team` the app accepts from a
/// replica (`isMemberWorkSyncStoreSnapshot`): every row of the team (any
/// case), known states, the fields each row needs, and nothing to archive.
pub(crate) fn is_valid_domain_snapshot(snapshot: &Value, team: &str) -> bool {
    let key = team_key(team);
    let owns = |v: Option<&Value>| v.and_then(Value::as_str).map(team_key) == Some(key.clone());
    let is_str = |row: &Value, f: &str| row.get(f).is_some_and(Value::is_string);
    let in_set = |row: &Value, f: &str, set: &[&str]| {
        row.get(f)
            .and_then(Value::as_str)
            .is_some_and(|s| set.contains(&s))
    };
    let strings = |v: Option<&Value>| {
        v.and_then(Value::as_array)
            .is_some_and(|a| a.iter().all(Value::is_string))
    };
    let rows = |f: &str| snapshot.get(f).and_then(Value::as_array);
    let all = |f: &str, ok: &dyn Fn(&Value) -> bool| {
        rows(f).is_some_and(|r| r.iter().all(|row| row.is_object() && ok(row)))
    };
    all("statuses", &|r| {
        let agenda = r.get("agenda").filter(|a| a.is_object());
        owns(r.get("teamName"))
            && is_str(r, "memberName")
            && in_set(r, "state", &STATUS_STATES)
            && is_str(r, "evaluatedAt")
            && agenda.is_some_and(|a| {
                owns(a.get("teamName"))
                    && is_str(a, "memberName")
                    && is_str(a, "fingerprint")
                    && a.get("items").is_some_and(Value::is_array)
                    && strings(a.get("diagnostics"))
            })
            && strings(r.get("diagnostics"))
    }) && all("reportIntents", &|r| {
        is_str(r, "id")
            && owns(r.get("teamName"))
            && is_str(r, "memberName")
            && in_set(r, "status", &INTENT_STATUSES)
            && is_str(r, "reason")
            && is_str(r, "recordedAt")
            && r.get("request")
                .filter(|q| q.is_object())
                .is_some_and(|q| owns(q.get("teamName")))
    }) && all("outboxItems", &|r| {
        let generation = r.get("attemptGeneration").and_then(Value::as_f64);
        is_str(r, "id")
            && owns(r.get("teamName"))
            && is_str(r, "memberName")
            && is_str(r, "agendaFingerprint")
            && is_str(r, "payloadHash")
            && in_set(r, "status", &OUTBOX_STATUSES)
            && generation.is_some_and(|g| g >= 0.0 && g.fract() == 0.0)
            && r.get("payload")
                .filter(|p| p.is_object())
                .is_some_and(|p| is_str(p, "to"))
            && is_str(r, "createdAt")
            && is_str(r, "updatedAt")
            && (r.get("status").and_then(Value::as_str) != Some("delivered")
                || is_str(r, "deliveredMessageId"))
    }) && all("metricEvents", &|r| {
        is_str(r, "id")
            && owns(r.get("teamName"))
            && is_str(r, "memberName")
            && in_set(r, "kind", &METRIC_KINDS)
            && in_set(r, "state", &STATUS_STATES)
            && is_str(r, "agendaFingerprint")
            && r.get("actionableCount").is_some_and(Value::is_number)
            && is_str(r, "recordedAt")
    }) && rows("filesToArchive").is_some_and(Vec::is_empty)
}

/// Orders rows as `mws.snapshot.list` returns them: statuses by member key,
/// intents and outbox items by id, events by time then id (all
/// `localeCompare`, stable).
pub(crate) fn sort_like_listing(records: &mut TeamRecords) {
    records
        .statuses
        .sort_by(|a, b| locale_compare(&a.member_key, &b.member_key));
    records
        .report_intents
        .sort_by(|a, b| locale_compare(&a.id, &b.id));
    records
        .outbox_items
        .sort_by(|a, b| locale_compare(&a.id, &b.id));
    records.metric_events.sort_by(
        |a, b| match locale_compare(&a.recorded_at, &b.recorded_at) {
            Ordering::Equal => locale_compare(&a.id, &b.id),
            other => other,
        },
    );
}
