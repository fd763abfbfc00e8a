//! The scenario steps of `scripts/sqlite-reference/scenario.mjs` run
//! through the store's ports, and rows read as better-sqlite3 reads them:
//! shared by the replays of the reference's recordings.
#![allow(dead_code)]

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::{json, Map, Value};

use member_work_sync::application::ports::{
    IntentStatus, OutboxStore, ReportIntent, ReportIntentStore, StatusStore,
};
use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::nudge::{
    AttemptEnd, NudgePayload, OutboxItem, PlannedNudge, RetryReason,
};
use member_work_sync::domain::status::MemberStatus;
use member_work_sync::domain::time::parse_iso;
use member_work_sync::infrastructure::sqlite::SqliteStore;

pub fn to_json(value: ValueRef<'_>) -> Value {
    match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => json!(i),
        ValueRef::Real(f) => json!(f),
        ValueRef::Text(t) => Value::String(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => json!(b),
    }
}

/// Rows of a query as objects keyed by column name, in column order (what
/// better-sqlite3's `.all()` gives).
pub fn rows(connection: &Connection, sql: &str) -> Vec<Value> {
    let mut statement = connection.prepare(sql).unwrap();
    let names: Vec<String> = statement.column_names().map(|n| n.to_string()).collect();
    statement
        .query_map([], |row| {
            let mut object = Map::new();
            for (i, name) in names.iter().enumerate() {
                object.insert(name.clone(), to_json(row.get_ref(i)?));
            }
            Ok(Value::Object(object))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

pub fn text<'a>(step: &'a Value, field: &str) -> &'a str {
    step[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} of {step}"))
}

pub fn ms(step: &Value, field: &str) -> i64 {
    parse_iso(text(step, field)).unwrap()
}

/// What the ports need of an item to end its attempt: team, id, generation.
/// The step's team as the dispatcher holds it: checked.
fn checked_team(team: &str) -> member_work_sync::domain::names::TeamName {
    member_work_sync::domain::names::TeamName::parse(team).unwrap()
}

pub fn handle(step: &Value) -> OutboxItem {
    serde_json::from_value(json!({
        "id": step["id"], "teamName": step["teamName"], "memberName": "", "agendaFingerprint": "",
        "payloadHash": "", "payload": {"to": "", "text": "", "taskRefs": [], "workSyncIntent": "agenda_sync"},
        "status": "claimed", "attemptGeneration": step["attemptGeneration"].as_u64().unwrap_or(0), "createdAt": "", "updatedAt": "",
    }))
    .unwrap()
}

pub fn run(store: &SqliteStore, step: &Value) -> Value {
    let team = step["teamName"].as_str().unwrap_or_default();
    // The `mark*` steps: the dispatcher's finish of the step's item.
    let finish = |end: AttemptEnd| {
        OutboxStore::finish(
            store,
            &checked_team(team),
            &handle(step),
            &end,
            ms(step, "nowIso"),
        )
        .unwrap();
    };
    let write = |status: &Value| {
        let status: MemberStatus = serde_json::from_value(status.clone()).unwrap();
        let team = TeamName::parse(&status.team_name).unwrap();
        let member = MemberName::parse(&status.member_name).unwrap();
        store
            .update(&team, &member, Box::new(|_| status.clone()))
            .unwrap();
    };
    match text(step, "op") {
        "writeStatus" => write(&step["status"]),
        "writeStatuses" => {
            let statuses: Vec<MemberStatus> =
                serde_json::from_value(step["statuses"].clone()).unwrap();
            let members: Vec<MemberName> = statuses
                .iter()
                .map(|s| MemberName::parse(&s.member_name).unwrap())
                .collect();
            let members: Vec<&MemberName> = members.iter().collect();
            let team = TeamName::parse(&statuses[0].team_name).unwrap();
            let mut next = statuses.iter();
            store
                .update_all(&team, &members, &mut |_, _| next.next().unwrap().clone())
                .unwrap();
        }
        "appendReport" => {
            let intent: ReportIntent = serde_json::from_value(step["intent"].clone()).unwrap();
            ReportIntentStore::record(store, &intent).unwrap();
        }
        "listPending" => {
            return json!(store
                .pending(&member_work_sync::domain::names::TeamName::parse(team).unwrap())
                .unwrap()
                .intents
                .iter()
                .map(|i| i.id.clone())
                .collect::<Vec<_>>())
        }
        "markProcessed" => {
            let status: IntentStatus = serde_json::from_value(step["status"].clone()).unwrap();
            let intent = ReportIntent {
                id: text(step, "id").into(),
                team_name: team.into(),
                member_name: String::new(),
                request: Value::Null,
                reason: None,
                status,
                recorded_at: String::new(),
                processed_at: Some(text(step, "processedAt").into()),
                rejection_code: None,
                result_code: Some(text(step, "resultCode").into()),
                retried_with_fresh_token: false,
            };
            ReportIntentStore::finish(store, &intent).unwrap();
        }
        "ensure" => {
            let payload: NudgePayload = serde_json::from_value(step["payload"].clone()).unwrap();
            let planned = PlannedNudge {
                id: text(step, "id").into(),
                payload: std::sync::Arc::new(payload),
                payload_hash: text(step, "payloadHash").into(),
                preview: String::new(),
            };
            let (item, outcome) = store
                .ensure(
                    &TeamName::parse(team).unwrap(),
                    &MemberName::parse(text(step, "memberName")).unwrap(),
                    &planned,
                    ms(step, "nowIso"),
                )
                .unwrap();
            return json!({"outcome": outcome.code(), "status": item.status, "attemptGeneration": item.attempt_generation});
        }
        "claim" => {
            let limit = step["limit"].as_u64().unwrap() as usize;
            let claimed = store
                .claim_due(
                    &member_work_sync::domain::names::TeamName::parse(team).unwrap(),
                    text(step, "claimedBy"),
                    limit,
                    ms(step, "nowIso"),
                )
                .unwrap();
            return json!(claimed
                .items
                .iter()
                .map(|i| json!({"id": i.id, "attemptGeneration": i.attempt_generation}))
                .collect::<Vec<_>>());
        }
        "markDelivered" => {
            finish(AttemptEnd::Delivered);
        }
        "markFailed" => {
            let reason = text(step, "error").to_string();
            let end = if step["retryable"].as_bool().unwrap() {
                AttemptEnd::Retryable {
                    // The store keeps a reason's spelling as is: an app
                    // guard's hold carries the app's text unchanged.
                    reason: RetryReason::guard_hold(reason),
                    retry_at: ms(step, "nextAttemptAt"),
                    busy_tool: None,
                }
            } else {
                AttemptEnd::Terminal { reason }
            };
            finish(end);
        }
        "markSuperseded" => {
            let end = AttemptEnd::Superseded {
                reason: text(step, "reason").into(),
            };
            finish(end);
        }
        "countRecentDelivered" => {
            return json!(store
                .count_recent_delivered(
                    team,
                    text(step, "memberName"),
                    text(step, "sinceIso"),
                    step["workSyncIntentKeyPrefix"].as_str()
                )
                .unwrap())
        }
        "countDeliveredForAgenda" => {
            return json!(store
                .count_delivered_for_agenda(
                    team,
                    text(step, "memberName"),
                    text(step, "agendaFingerprint"),
                    step["sinceIso"].as_str()
                )
                .unwrap())
        }
        "findReviewPickup" => {
            let ids: Vec<String> =
                serde_json::from_value(step["reviewRequestEventIds"].clone()).unwrap();
            return json!(store
                .find_delivered_review_pickup_event_ids(team, text(step, "memberName"), &ids)
                .unwrap());
        }
        "findRecovery" => {
            let hit = store
                .find_recent_recovery_by_intent(
                    team,
                    text(step, "memberName"),
                    text(step, "intentKey"),
                    text(step, "sinceIso"),
                )
                .unwrap();
            return match hit {
                None => Value::Null,
                Some(hit) => {
                    let mut found = json!({"id": hit.id, "status": hit.status});
                    if let Some(message) = hit.delivered_message_id {
                        found["deliveredMessageId"] = json!(message);
                    }
                    found["payloadHash"] = json!(hit.payload_hash);
                    found["updatedAt"] = json!(hit.updated_at);
                    found
                }
            };
        }
        other => panic!("unknown step {other}"),
    }
    Value::Null
}
