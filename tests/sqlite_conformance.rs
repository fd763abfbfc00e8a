//! The addon's SQLite store against the app's own: `tests/fixtures/sqlite/
//! reference-recording.json` holds what the reference store (bundled from
//! the app's source, run with better-sqlite3 12) answered and left in its
//! tables after each step of `scripts/sqlite-reference/scenario.mjs`;
//! `node scripts/sqlite-reference/record.mjs --mirror DIR --deps DIR`
//! records it again. Here the addon runs the same steps through the ports
//! the use cases call, on its own database, and must answer the same and
//! leave the same rows after every step (JSON columns compared as strings).

use std::path::Path;
use std::sync::Arc;

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use member_work_sync::application::ports::{
    IntentStatus, OutboxStore, ReportIntent, ReportIntentStore, StatusStore,
};
use member_work_sync::domain::nudge::{AttemptEnd, NudgePayload, OutboxItem, PlannedNudge};
use member_work_sync::domain::status::MemberStatus;
use member_work_sync::domain::time::parse_iso;
use member_work_sync::infrastructure::sqlite::{DirectDatabase, OpenMode, SqliteStore};

const TABLES: [(&str, &str); 5] = [
    ("member_work_sync_status", "team_name, member_key"),
    ("member_work_sync_report_intents", "team_name, id"),
    ("member_work_sync_outbox", "team_name, id"),
    ("member_work_sync_metric_events", "team_name, id"),
    ("store_imports", "store_id, team_name"),
];

fn recording() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sqlite/reference-recording.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn to_json(value: ValueRef<'_>) -> Value {
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
fn rows(connection: &Connection, sql: &str) -> Vec<Value> {
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

fn schema_of(connection: &Connection) -> Value {
    let table_info: Map<String, Value> = TABLES
        .iter()
        .map(|(t, _)| {
            (
                t.to_string(),
                Value::Array(rows(connection, &format!("PRAGMA table_info({t})"))),
            )
        })
        .collect();
    json!({
        "master": rows(connection, "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"),
        "tableInfo": table_info,
        "userVersion": connection.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(),
        "journalMode": connection.pragma_query_value(None, "journal_mode", |r| r.get::<_, String>(0)).unwrap(),
    })
}

#[test]
fn a_database_the_addon_creates_has_the_reference_schema() {
    let recorded = recording();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("storage").join("app.db");
    drop(DirectDatabase::open(&path, OpenMode::ReadWrite).unwrap());
    let connection = Connection::open(&path).unwrap();
    assert_eq!(schema_of(&connection), recorded["schema"]);
}

fn text<'a>(step: &'a Value, field: &str) -> &'a str {
    step[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} of {step}"))
}

fn ms(step: &Value, field: &str) -> i64 {
    parse_iso(text(step, field)).unwrap()
}

/// What the ports need of an item to end its attempt: team, id, generation.
fn handle(step: &Value) -> OutboxItem {
    serde_json::from_value(json!({
        "id": step["id"], "teamName": step["teamName"], "memberName": "", "agendaFingerprint": "",
        "payloadHash": "", "payload": {"to": "", "text": "", "taskRefs": [], "workSyncIntent": "agenda_sync"},
        "status": "claimed", "attemptGeneration": step["attemptGeneration"].as_u64().unwrap_or(0), "createdAt": "", "updatedAt": "",
    }))
    .unwrap()
}

fn run(store: &SqliteStore, step: &Value) -> Value {
    let team = step["teamName"].as_str().unwrap_or_default();
    let write = |status: &Value| {
        let status: MemberStatus = serde_json::from_value(status.clone()).unwrap();
        let (team, member) = (status.team_name.clone(), status.member_name.clone());
        store
            .update(&team, &member, &mut |_| status.clone())
            .unwrap();
    };
    match text(step, "op") {
        "writeStatus" => write(&step["status"]),
        "writeStatuses" => {
            let statuses: Vec<MemberStatus> =
                serde_json::from_value(step["statuses"].clone()).unwrap();
            let members: Vec<&str> = statuses.iter().map(|s| s.member_name.as_str()).collect();
            let mut next = statuses.iter();
            store
                .update_all(&statuses[0].team_name, &members, &mut |_, _| {
                    next.next().unwrap().clone()
                })
                .unwrap();
        }
        "appendReport" => {
            let intent: ReportIntent = serde_json::from_value(step["intent"].clone()).unwrap();
            ReportIntentStore::record(store, &intent).unwrap();
        }
        "listPending" => {
            return json!(store
                .pending(team)
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
                payload,
                payload_hash: text(step, "payloadHash").into(),
                preview: String::new(),
            };
            let (item, outcome) = store
                .ensure(team, text(step, "memberName"), &planned, ms(step, "nowIso"))
                .unwrap();
            return json!({"outcome": outcome.code(), "status": item.status, "attemptGeneration": item.attempt_generation});
        }
        "claim" => {
            let limit = step["limit"].as_u64().unwrap() as usize;
            let claimed = store
                .claim_due(team, text(step, "claimedBy"), limit, ms(step, "nowIso"))
                .unwrap();
            return json!(claimed
                .items
                .iter()
                .map(|i| json!({"id": i.id, "attemptGeneration": i.attempt_generation}))
                .collect::<Vec<_>>());
        }
        "markDelivered" => {
            OutboxStore::finish(
                store,
                &handle(step),
                &AttemptEnd::Delivered,
                ms(step, "nowIso"),
            )
            .unwrap();
        }
        "markFailed" => {
            let reason = text(step, "error").to_string();
            let end = if step["retryable"].as_bool().unwrap() {
                AttemptEnd::Retryable {
                    reason,
                    retry_at: ms(step, "nextAttemptAt"),
                    busy_tool: None,
                }
            } else {
                AttemptEnd::Terminal { reason }
            };
            OutboxStore::finish(store, &handle(step), &end, ms(step, "nowIso")).unwrap();
        }
        "markSuperseded" => {
            let end = AttemptEnd::Superseded {
                reason: text(step, "reason").into(),
            };
            OutboxStore::finish(store, &handle(step), &end, ms(step, "nowIso")).unwrap();
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

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn the_same_operations_leave_the_reference_rows_after_every_step() {
    let recorded = recording();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("storage").join("app.db");
    // As an instance opens it: at the first call.
    let store = SqliteStore::open_lazily(path.clone(), OpenMode::ReadWrite);
    assert!(store.pending("team-a").unwrap().intents.is_empty());
    let reader = Connection::open(&path).unwrap();
    let steps = recorded["steps"].as_array().unwrap();
    assert!(steps.len() > 100, "the recording has every step");
    for (n, recorded_step) in steps.iter().enumerate() {
        let step = &recorded_step["step"];
        let label = format!("step {n} {}", step["op"]);
        assert_eq!(
            run(&store, step),
            recorded_step["result"],
            "{label}: answer"
        );
        for (table, key) in TABLES {
            let expected = &recorded_step["tables"][table];
            if expected.is_null() {
                continue;
            }
            let actual = rows(&reader, &format!("SELECT * FROM {table} ORDER BY {key}"));
            match expected {
                Value::Array(_) => assert_eq!(&Value::Array(actual), expected, "{label}: {table}"),
                digest => {
                    assert_eq!(
                        json!(actual.len()),
                        digest["rows"],
                        "{label}: {table} row count"
                    );
                    let text = serde_json::to_string(&actual).unwrap();
                    assert_eq!(
                        json!(sha256_hex(&text)),
                        digest["sha256"],
                        "{label}: {table} rows"
                    );
                }
            }
        }
    }
    // A table the last step left unchanged was recorded in full before: the
    // metric events must be the 200 newest, with the reference's ids.
    let events = rows(&reader, "SELECT id FROM member_work_sync_metric_events");
    assert_eq!(events.len(), 200);
    // scripts/sqlite-reference/crosscheck.mjs hands this database to the
    // reference (does it read the rows without a repair import?).
    if let Some(keep) = std::env::var_os("MWS_SQLITE_KEEP_DB") {
        reader
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        std::fs::copy(&path, keep).unwrap();
    }
}

/// A database as the reference creates it: the recorded `sqlite_master`
/// statements and `user_version`.
fn reference_database(path: &Path, version: i64) -> Connection {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let connection = Connection::open(path).unwrap();
    connection
        .pragma_update(None, "journal_mode", "WAL")
        .unwrap();
    let recorded = recording();
    let master = recorded["schema"]["master"].as_array().unwrap();
    for kind in ["table", "index"] {
        for entry in master.iter().filter(|e| e["type"] == kind) {
            if let Some(sql) = entry["sql"].as_str() {
                connection.execute_batch(sql).unwrap();
            }
        }
    }
    connection
        .pragma_update(None, "user_version", version)
        .unwrap();
    connection
}

fn master_and_version(connection: &Connection) -> (Vec<Value>, i64) {
    (
        rows(
            connection,
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name",
        ),
        connection
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap(),
    )
}

#[test]
fn opening_a_reference_database_changes_neither_its_schema_nor_its_version() {
    for (version, extra) in [
        (4, None),
        (5, Some("CREATE TABLE later_feature (id TEXT PRIMARY KEY)")),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.db");
        let connection = reference_database(&path, version);
        if let Some(sql) = extra {
            connection.execute_batch(sql).unwrap();
        }
        let before = master_and_version(&connection);
        for mode in [OpenMode::ReadWrite, OpenMode::ReadOnly] {
            let store = SqliteStore::new(Arc::new(DirectDatabase::open(&path, mode).unwrap()));
            assert!(
                store.pending("team-a").unwrap().intents.is_empty(),
                "v{version} {mode:?}"
            );
            assert_eq!(
                master_and_version(&connection),
                before,
                "v{version} {mode:?}"
            );
        }
    }
}

#[test]
fn a_read_only_open_creates_nothing_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("storage").join("app.db");
    assert!(DirectDatabase::open(&missing, OpenMode::ReadOnly).is_err());
    assert!(!missing.exists() && !missing.parent().unwrap().exists());

    let empty = dir.path().join("empty.db");
    Connection::open(&empty)
        .unwrap()
        .execute_batch("CREATE TABLE other (x)")
        .unwrap();
    let error = DirectDatabase::open(&empty, OpenMode::ReadOnly)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("no member-work-sync tables") && error.contains("empty.db"),
        "{error}"
    );
    let connection = Connection::open(&empty).unwrap();
    assert_eq!(master_and_version(&connection).1, 0);

    let path = dir.path().join("app.db");
    reference_database(&path, 4);
    let store = SqliteStore::new(Arc::new(
        DirectDatabase::open(&path, OpenMode::ReadOnly).unwrap(),
    ));
    let planned = PlannedNudge {
        id: "out-1".into(),
        payload: serde_json::from_value(
            json!({"to": "bob", "text": "t", "taskRefs": [], "workSyncIntent": "agenda_sync"}),
        )
        .unwrap(),
        payload_hash: "h".into(),
        preview: String::new(),
    };
    let error = store
        .ensure("team-a", "bob", &planned, 0)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("mws.outbox.ensurePending") && error.contains("app.db"),
        "{error}"
    );
}
