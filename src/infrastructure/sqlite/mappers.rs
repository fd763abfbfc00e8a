//! Domain values to rows and back, as the app's mappers do it
//! (`memberWorkSyncSqliteMappers`): the routing team
//! is written into the row and into the team fields nested in the JSON
//! columns (status, agenda, report, request, event; never the outbox
//! payload, whose task refs may name other teams and whose bytes its hash
//! proves); member keys are trimmed and lowercased, not URI-encoded.

use serde::Serialize;
use serde_json::{Map, Value};

use super::js_json;
use super::records::{MetricEventRecord, OutboxRecord, ReportIntentRecord, StatusRecord};
use crate::application::ports::{IntentStatus, ReportIntent};
use crate::domain::metrics::MetricEvent;
use crate::domain::names::normalize_member_name;
use crate::domain::nudge::{NudgePayload, OutboxItem, OutboxStatus, PlannedNudge};
use crate::domain::status::MemberStatus;
use crate::domain::time::IsoTime;

/// A JSON column that does not hold what its table says.
#[derive(Debug, thiserror::Error)]
#[error("{column}: {detail}")]
pub struct BadColumn {
    /// The column (or the field inside it) that does not parse or fit.
    pub column: &'static str,
    /// What is wrong.
    pub detail: String,
}

fn bad(column: &'static str) -> impl Fn(serde_json::Error) -> BadColumn {
    move |e| BadColumn {
        column,
        detail: e.to_string(),
    }
}

/// The text a string enum serializes to (`needs_sync`, `anthropic`, ...).
fn enum_text<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(text)) => text,
        _ => String::new(),
    }
}

/// Sets `teamName` of a JSON object (in place when present, appended
/// otherwise, as a JavaScript assignment does); anything else stays.
pub(crate) fn set_team(value: Option<&mut Value>, team: &str) {
    if let Some(Value::Object(object)) = value {
        object.insert("teamName".into(), Value::String(team.to_string()));
    }
}

fn object(value: &mut Value) -> Option<&mut Map<String, Value>> {
    value.as_object_mut()
}

/// A status's JSON with its own, its agenda's and (when present) its
/// report's team set to `team`.
pub(crate) fn normalize_status_json(value: &mut Value, team: &str) {
    set_team(Some(value), team);
    if let Some(status) = object(value) {
        set_team(status.get_mut("agenda"), team);
        if status.get("report").is_some_and(|r| !r.is_null()) {
            set_team(status.get_mut("report"), team);
        }
    }
}

/// The row of a status, routed to the status's own team.
pub(crate) fn status_to_record(status: &MemberStatus) -> Result<StatusRecord, BadColumn> {
    let team = status.team_name.as_str();
    let mut json = serde_json::to_value(status).map_err(bad("status_json"))?;
    normalize_status_json(&mut json, team);
    Ok(StatusRecord {
        team_name: team.to_string(),
        member_key: normalize_member_name(&status.member_name),
        member_name: status.member_name.clone(),
        state: enum_text(&status.state),
        evaluated_at: status.evaluated_at.as_str().to_string(),
        provider_id: status.provider_id.as_ref().map(enum_text),
        status_json: js_json::stringify(&json).map_err(bad("status_json"))?,
    })
}

/// The status of a row, its team fields set to the row's team.
pub(crate) fn record_to_status(record: &StatusRecord) -> Result<MemberStatus, BadColumn> {
    let mut json: Value = serde_json::from_str(&record.status_json).map_err(bad("status_json"))?;
    normalize_status_json(&mut json, &record.team_name);
    serde_json::from_value(json).map_err(bad("status_json"))
}

/// The rows of the metric events of one status write. The event JSON is
/// the app's event of that status (its summary fields, then `id` and
/// `kind`), which carries more than the addon's [`MetricEvent`] keeps:
/// `providerId`, `previousFingerprint`, `triggerReasons` and `reportState`.
pub(crate) fn metric_event_records(
    status: &MemberStatus,
    events: &[MetricEvent],
) -> Result<Vec<MetricEventRecord>, BadColumn> {
    let team = status.team_name.as_str();
    let mut base = Map::new();
    base.insert("teamName".into(), Value::String(team.to_string()));
    base.insert(
        "memberName".into(),
        Value::String(status.member_name.clone()),
    );
    base.insert("state".into(), Value::String(enum_text(&status.state)));
    base.insert(
        "agendaFingerprint".into(),
        Value::String(status.agenda.fingerprint.clone()),
    );
    base.insert(
        "recordedAt".into(),
        Value::String(status.evaluated_at.as_str().to_string()),
    );
    base.insert(
        "actionableCount".into(),
        Value::from(status.agenda.items.len()),
    );
    if let Some(provider) = &status.provider_id {
        base.insert("providerId".into(), Value::String(enum_text(provider)));
    }
    let shadow = status.shadow.as_ref();
    if let Some(previous) = shadow
        .and_then(|s| s.previous_fingerprint.as_ref())
        .filter(|p| !p.is_empty())
    {
        base.insert(
            "previousFingerprint".into(),
            Value::String(previous.clone()),
        );
    }
    if let Some(reasons) = shadow
        .and_then(|s| s.trigger_reasons.as_ref())
        .filter(|r| !r.is_empty())
    {
        base.insert(
            "triggerReasons".into(),
            serde_json::to_value(reasons).map_err(bad("event_json"))?,
        );
    }
    if let Some(report) = &status.report {
        base.insert(
            "reportState".into(),
            Value::String(enum_text(&report.state)),
        );
        if let Some(code) = report.rejection_code.as_ref().filter(|c| !c.is_empty()) {
            base.insert("rejectionCode".into(), Value::String(code.clone()));
        }
    }
    events
        .iter()
        .map(|event| {
            let mut json = base.clone();
            json.insert("id".into(), Value::String(event.id.clone()));
            json.insert("kind".into(), Value::String(enum_text(&event.kind)));
            Ok(MetricEventRecord {
                team_name: team.to_string(),
                id: event.id.clone(),
                member_key: normalize_member_name(&status.member_name),
                member_name: status.member_name.clone(),
                kind: enum_text(&event.kind),
                recorded_at: event.recorded_at.clone(),
                event_json: js_json::stringify(&json).map_err(bad("event_json"))?,
            })
        })
        .collect()
}

/// The metric event of a row, its team set to the row's.
pub(crate) fn record_to_metric_event(record: &MetricEventRecord) -> Result<MetricEvent, BadColumn> {
    let mut json: Value = serde_json::from_str(&record.event_json).map_err(bad("event_json"))?;
    set_team(Some(&mut json), &record.team_name);
    serde_json::from_value(json).map_err(bad("event_json"))
}

/// The row of a report intent; an intent without a reason gets the empty
/// one (the column is NOT NULL).
pub(crate) fn intent_to_record(intent: &ReportIntent) -> Result<ReportIntentRecord, BadColumn> {
    let mut request = intent.request.clone();
    set_team(Some(&mut request), &intent.team_name);
    Ok(ReportIntentRecord {
        team_name: intent.team_name.clone(),
        id: intent.id.clone(),
        member_key: normalize_member_name(&intent.member_name),
        member_name: intent.member_name.clone(),
        status: enum_text(&intent.status),
        reason: intent.reason.clone().unwrap_or_default(),
        recorded_at: intent.recorded_at.clone(),
        processed_at: intent.processed_at.clone(),
        result_code: intent.result_code.clone(),
        request_json: js_json::stringify(&request).map_err(bad("request_json"))?,
    })
}

fn present(value: &Option<String>) -> Option<String> {
    value.clone().filter(|v| !v.is_empty())
}

/// The report intent of a row. A rejected intent's result code is its
/// rejection code.
pub(crate) fn record_to_intent(record: &ReportIntentRecord) -> Result<ReportIntent, BadColumn> {
    let mut request: Value =
        serde_json::from_str(&record.request_json).map_err(bad("request_json"))?;
    set_team(Some(&mut request), &record.team_name);
    let status: IntentStatus =
        serde_json::from_value(Value::String(record.status.clone())).map_err(bad("status"))?;
    let result_code = present(&record.result_code);
    Ok(ReportIntent {
        id: record.id.clone(),
        team_name: record.team_name.clone(),
        member_name: record.member_name.clone(),
        request,
        reason: Some(record.reason.clone()),
        status,
        recorded_at: record.recorded_at.clone(),
        processed_at: present(&record.processed_at),
        rejection_code: result_code
            .clone()
            .filter(|_| status == IntentStatus::Rejected),
        result_code,
        retried_with_fresh_token: false,
    })
}

/// The row `ensurePending` is asked to create for a planned nudge of
/// `member` (a new row's state; the op decides what is kept).
pub(crate) fn planned_to_record(
    team: &str,
    member: &str,
    planned: &PlannedNudge,
    now_iso: &str,
) -> Result<OutboxRecord, BadColumn> {
    let payload = &planned.payload;
    let review_ids = &payload.work_sync_review_request_event_ids;
    Ok(OutboxRecord {
        team_name: team.to_string(),
        id: planned.id.clone(),
        member_key: normalize_member_name(member),
        member_name: member.to_string(),
        agenda_fingerprint: payload.agenda_fingerprint.clone(),
        payload_hash: planned.payload_hash.clone(),
        status: "pending".into(),
        attempt_generation: 0,
        claimed_by: None,
        claimed_at: None,
        delivered_message_id: None,
        delivery_state: None,
        last_error: None,
        next_attempt_at: None,
        created_at: now_iso.to_string(),
        updated_at: now_iso.to_string(),
        work_sync_intent: enum_text(&payload.work_sync_intent),
        work_sync_intent_key: payload.work_sync_intent_key.clone(),
        // The payload omits an empty list, so the column has none either.
        review_request_event_ids_json: if review_ids.is_empty() {
            None
        } else {
            Some(js_json::stringify(review_ids).map_err(bad("review_request_event_ids_json"))?)
        },
        delivery_diagnostics_json: None,
        payload_json: js_json::stringify(payload).map_err(bad("payload_json"))?,
    })
}

/// The outbox item of a row. A delivered row was delivered when it was
/// last updated: nothing changes a delivered row afterwards.
pub(crate) fn record_to_outbox_item(record: &OutboxRecord) -> Result<OutboxItem, BadColumn> {
    let payload: NudgePayload =
        serde_json::from_str(&record.payload_json).map_err(bad("payload_json"))?;
    let status: OutboxStatus =
        serde_json::from_value(Value::String(record.status.clone())).map_err(bad("status"))?;
    let generation = u32::try_from(record.attempt_generation).map_err(|e| BadColumn {
        column: "attempt_generation",
        detail: e.to_string(),
    })?;
    let time = |value: &Option<String>| present(value).map(IsoTime::parse);
    Ok(OutboxItem {
        id: record.id.clone(),
        team_name: record.team_name.clone(),
        member_name: record.member_name.clone(),
        agenda_fingerprint: record.agenda_fingerprint.clone(),
        payload_hash: record.payload_hash.clone(),
        payload: std::sync::Arc::new(payload),
        status,
        attempt_generation: generation,
        claimed_by: present(&record.claimed_by),
        claimed_at: time(&record.claimed_at),
        delivered_message_id: present(&record.delivered_message_id),
        delivered_at: (status == OutboxStatus::Delivered)
            .then(|| IsoTime::parse(record.updated_at.clone())),
        last_error: present(&record.last_error),
        next_attempt_at: time(&record.next_attempt_at),
        created_at: IsoTime::parse(record.created_at.clone()),
        updated_at: IsoTime::parse(record.updated_at.clone()),
    }
    .with_payload_fingerprint())
}
