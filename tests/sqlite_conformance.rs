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

use rusqlite::Connection;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use member_work_sync::application::ports::{OutboxStore, ReportIntentStore};
use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::nudge::PlannedNudge;
use member_work_sync::infrastructure::sqlite::{DirectDatabase, OpenMode, SqliteStore};

mod sqlite_steps;
use sqlite_steps::{rows, run};

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
    assert!(store
        .pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap())
        .unwrap()
        .intents
        .is_empty());
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
                store
                    .pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap())
                    .unwrap()
                    .intents
                    .is_empty(),
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
        .ensure(
            &TeamName::parse("team-a").unwrap(),
            &MemberName::parse("bob").unwrap(),
            &planned,
            0,
        )
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("mws.outbox.ensurePending") && error.contains("app.db"),
        "{error}"
    );
}
