//! The addon's team files in a SQLite session against the reference's own
//! code: `tests/fixtures/sqlite/team-files-recording.json` holds what the
//! app's `BackendSelectingMemberWorkSyncStore` (replica fence, importer,
//! op, clean publication) and `mergeMemberWorkSyncSnapshots` did, bundled
//! from the app's source and run with better-sqlite3 12
//! (`node scripts/sqlite-reference/record-team-files.mjs --mirror DIR --deps DIR`
//! records it again). Here the addon runs the same calls and must leave
//! the same replica file, byte for byte but the envelope's wall-clock
//! `updatedAt`, and the same rows.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use member_work_sync::application::ports::ReportIntentStore;
use member_work_sync::infrastructure::sqlite::json_session::JsonSessionFiles;
use member_work_sync::infrastructure::sqlite::merge::merge_team_records;
use member_work_sync::infrastructure::sqlite::records::TeamRecords;
use member_work_sync::infrastructure::sqlite::records::{
    MetricEventRecord, OutboxRecord, ReportIntentRecord, StatusRecord,
};
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
        .join("tests/fixtures/sqlite/team-files-recording.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A store as a read-write instance builds it, its teams under `dir/teams`.
fn store_in(dir: &Path) -> (SqliteStore, PathBuf, PathBuf) {
    let db = dir.join("storage").join("app.db");
    let teams = dir.join("claude").join("teams");
    std::fs::create_dir_all(&teams).unwrap();
    let store =
        SqliteStore::open_lazily(db.clone(), OpenMode::ReadWrite).with_team_files(teams.clone());
    (store, db, teams)
}

fn replica_path(teams: &Path, team: &str) -> PathBuf {
    teams
        .join(team)
        .join(".member-work-sync")
        .join("sqlite-fallback-replica.json")
}

/// The replica's text with the envelope's `updatedAt` (the first, top-level
/// one) blanked as the recording blanks it.
fn blanked(text: &str, blank: &str) -> String {
    let mut done = false;
    text.split_inclusive('\n')
        .map(|line| {
            if !done && line.starts_with("  \"updatedAt\": \"") {
                done = true;
                let comma = if line.trim_end().ends_with(',') {
                    ","
                } else {
                    ""
                };
                format!("  \"updatedAt\": \"{blank}\"{comma}\n")
            } else {
                line.to_string()
            }
        })
        .collect()
}

#[test]
fn every_call_leaves_the_reference_replica() {
    let recorded = recording();
    let blank = recorded["updatedAtBlank"].as_str().unwrap();
    let scenario = sqlite_steps_scenario();
    let steps = recorded["replica"].as_array().unwrap();
    assert_eq!(
        steps.len(),
        scenario.len(),
        "one recorded replica per scenario step"
    );
    let dir = tempfile::tempdir().unwrap();
    let (store, _db, teams) = store_in(dir.path());
    let mut previous = String::new();
    for (n, (recorded_step, step)) in steps.iter().zip(&scenario).enumerate() {
        let label = format!("step {n} {}", recorded_step["op"]);
        assert_eq!(
            run(&store, step),
            recorded_step["result"],
            "{label}: answer"
        );
        let team = recorded_step["team"].as_str().unwrap();
        let text = blanked(
            &std::fs::read_to_string(replica_path(&teams, team)).unwrap(),
            blank,
        );
        match &recorded_step["replica"] {
            Value::Null => assert_eq!(text, previous, "{label}: replica unchanged"),
            Value::String(expected) => assert_eq!(&text, expected, "{label}: replica"),
            digest => {
                assert_eq!(
                    json!(text.len()),
                    digest["bytes"],
                    "{label}: replica length"
                );
                assert_eq!(
                    json!(sha256_hex(&text)),
                    digest["sha256"],
                    "{label}: replica"
                );
            }
        }
        previous = text;
    }
    assert!(previous.contains("\"state\": \"clean\""));
}

/// The scenario's steps: the conformance recording carries them.
fn sqlite_steps_scenario() -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sqlite/reference-recording.json");
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    recorded["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].clone())
        .collect()
}

fn insert_rows(connection: &Connection, table: &str, rows: &[Value]) {
    for row in rows {
        let row = row.as_object().unwrap();
        let columns: Vec<&str> = row.keys().map(String::as_str).collect();
        let marks = vec!["?"; columns.len()].join(", ");
        let values: Vec<rusqlite::types::Value> = row
            .values()
            .map(|v| match v {
                Value::Null => rusqlite::types::Value::Null,
                Value::Number(n) => rusqlite::types::Value::Integer(n.as_i64().unwrap()),
                Value::String(s) => rusqlite::types::Value::Text(s.clone()),
                other => panic!("{other}"),
            })
            .collect();
        connection
            .execute(
                &format!(
                    "INSERT INTO {table} ({}) VALUES ({marks})",
                    columns.join(", ")
                ),
                rusqlite::params_from_iter(values),
            )
            .unwrap();
    }
}

#[test]
fn a_first_access_merges_the_replica_as_the_reference_does() {
    let recorded = recording();
    let blank = recorded["updatedAtBlank"].as_str().unwrap();
    for case in recorded["prepare"].as_array().unwrap() {
        let team = case["team"].as_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (store, db, teams) = store_in(dir.path());
        drop(DirectDatabase::open(&db, OpenMode::ReadWrite).unwrap());
        let connection = Connection::open(&db).unwrap();
        for (table, _) in TABLES {
            insert_rows(&connection, table, case["seed"][table].as_array().unwrap());
        }
        let path = replica_path(&teams, team);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, case["replicaBefore"].as_str().unwrap()).unwrap();

        match (
            store.pending(&member_work_sync::domain::names::TeamName::parse(team).unwrap()),
            &case["result"],
        ) {
            (Ok(pending), expected) if expected["pending"].is_array() => {
                let ids: Vec<&str> = pending.intents.iter().map(|i| i.id.as_str()).collect();
                assert_eq!(json!(ids), expected["pending"], "{team}");
            }
            (Err(error), expected) if expected["error"].is_string() => {
                let message = expected["error"].as_str().unwrap();
                assert!(error.to_string().contains(message), "{team}: {error}");
            }
            (got, expected) => panic!(
                "{team}: {:?} where the reference gave {expected}",
                got.map(|p| p.intents.len())
            ),
        }
        for (table, key) in TABLES {
            let actual = rows(
                &connection,
                &format!("SELECT * FROM {table} ORDER BY {key}"),
            );
            assert_eq!(Value::Array(actual), case["rows"][table], "{team}: {table}");
        }
        let text = blanked(&std::fs::read_to_string(&path).unwrap(), blank);
        assert_eq!(
            text,
            case["replicaAfter"].as_str().unwrap(),
            "{team}: replica"
        );
    }
}

fn s(v: &Value, field: &str) -> String {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field} of {v}"))
        .to_string()
}

fn opt(v: &Value, field: &str) -> Option<String> {
    v[field].as_str().map(str::to_string)
}

/// Records as the app's mappers print them (camelCase) to rows and back.
fn to_records(v: &Value) -> TeamRecords {
    let list = |f: &str| v[f].as_array().unwrap().clone();
    TeamRecords {
        statuses: list("statuses")
            .iter()
            .map(|r| StatusRecord {
                team_name: s(r, "teamName"),
                member_key: s(r, "memberKey"),
                member_name: s(r, "memberName"),
                state: s(r, "state"),
                evaluated_at: s(r, "evaluatedAt"),
                provider_id: opt(r, "providerId"),
                status_json: s(r, "statusJson"),
            })
            .collect(),
        report_intents: list("reportIntents")
            .iter()
            .map(|r| ReportIntentRecord {
                team_name: s(r, "teamName"),
                id: s(r, "id"),
                member_key: s(r, "memberKey"),
                member_name: s(r, "memberName"),
                status: s(r, "status"),
                reason: s(r, "reason"),
                recorded_at: s(r, "recordedAt"),
                processed_at: opt(r, "processedAt"),
                result_code: opt(r, "resultCode"),
                request_json: s(r, "requestJson"),
            })
            .collect(),
        outbox_items: list("outboxItems")
            .iter()
            .map(|r| OutboxRecord {
                team_name: s(r, "teamName"),
                id: s(r, "id"),
                member_key: s(r, "memberKey"),
                member_name: s(r, "memberName"),
                agenda_fingerprint: s(r, "agendaFingerprint"),
                payload_hash: s(r, "payloadHash"),
                status: s(r, "status"),
                attempt_generation: r["attemptGeneration"].as_i64().unwrap(),
                claimed_by: opt(r, "claimedBy"),
                claimed_at: opt(r, "claimedAt"),
                delivered_message_id: opt(r, "deliveredMessageId"),
                delivery_state: opt(r, "deliveryState"),
                last_error: opt(r, "lastError"),
                next_attempt_at: opt(r, "nextAttemptAt"),
                created_at: s(r, "createdAt"),
                updated_at: s(r, "updatedAt"),
                work_sync_intent: s(r, "workSyncIntent"),
                work_sync_intent_key: opt(r, "workSyncIntentKey"),
                review_request_event_ids_json: opt(r, "reviewRequestEventIdsJson"),
                delivery_diagnostics_json: opt(r, "deliveryDiagnosticsJson"),
                payload_json: s(r, "payloadJson"),
            })
            .collect(),
        metric_events: list("metricEvents")
            .iter()
            .map(|r| MetricEventRecord {
                team_name: s(r, "teamName"),
                id: s(r, "id"),
                member_key: s(r, "memberKey"),
                member_name: s(r, "memberName"),
                kind: s(r, "kind"),
                recorded_at: s(r, "recordedAt"),
                event_json: s(r, "eventJson"),
            })
            .collect(),
    }
}

/// The identities and the columns that tell the merge rules apart.
fn summary(records: &TeamRecords) -> Value {
    json!({
        "statuses": records.statuses.iter().map(|r| json!([r.team_name, r.member_key, r.state, r.evaluated_at, r.status_json])).collect::<Vec<_>>(),
        "reportIntents": records.report_intents.iter().map(|r| json!([r.team_name, r.id, r.status, r.recorded_at, r.processed_at, r.request_json])).collect::<Vec<_>>(),
        "outboxItems": records.outbox_items.iter().map(|r| json!([r.team_name, r.id, r.status, r.attempt_generation, r.updated_at, r.payload_hash, r.payload_json])).collect::<Vec<_>>(),
        "metricEvents": records.metric_events.iter().map(|r| json!([r.team_name, r.id, r.kind, r.recorded_at, r.event_json])).collect::<Vec<_>>(),
    })
}

#[test]
fn the_record_merge_gives_the_reference_result() {
    let recorded = recording();
    for case in recorded["merge"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let merged = merge_team_records(
            case["team"].as_str().unwrap(),
            &to_records(&case["canonical"]),
            &to_records(&case["incoming"]),
        )
        .unwrap();
        let expected = to_records(&case["merged"]);
        assert_eq!(summary(&merged), summary(&expected), "{name}");
        assert_eq!(merged, expected, "{name}");
    }
}

#[test]
fn a_read_only_store_touches_no_team_file() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, db, teams) = store_in(dir.path());
    assert!(writer
        .pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap())
        .unwrap()
        .intents
        .is_empty());
    let replica = replica_path(&teams, "team-a");
    std::fs::remove_file(&replica).unwrap();
    let reader = SqliteStore::open_lazily(db, OpenMode::ReadOnly);
    assert!(reader
        .pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap())
        .unwrap()
        .intents
        .is_empty());
    assert!(!replica.exists());
}

#[cfg(unix)]
#[test]
fn a_linked_or_fifo_replica_is_refused_and_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _db, teams) = store_in(dir.path());
    let replica = replica_path(&teams, "team-a");
    std::fs::create_dir_all(replica.parent().unwrap()).unwrap();
    let outside = dir.path().join("outside.json");
    let clean = r#"{"schemaVersion":1,"state":"clean","updatedAt":"x","snapshot":{"statuses":[],"reportIntents":[],"outboxItems":[],"metricEvents":[],"filesToArchive":[]}}"#;
    std::fs::write(&outside, clean).unwrap();
    std::os::unix::fs::symlink(&outside, &replica).unwrap();
    let error = store
        .pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("replica is not a regular file"), "{error}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), clean);

    std::fs::remove_file(&replica).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(&replica)
        .status()
        .unwrap();
    assert!(status.success());
    // Opening the FIFO for reading would block this call for ever.
    let error = store
        .pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("replica is not a regular file"), "{error}");

    // Once the team is prepared, a link planted at the replica is replaced,
    // not written through.
    std::fs::remove_file(&replica).unwrap();
    assert!(store
        .pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap())
        .unwrap()
        .intents
        .is_empty());
    std::fs::remove_file(&replica).unwrap();
    std::os::unix::fs::symlink(&outside, &replica).unwrap();
    let intent: member_work_sync::application::ports::ReportIntent = serde_json::from_value(json!({
        "id": "i1", "teamName": "team-a", "memberName": "bob", "request": {"teamName": "team-a"},
        "reason": "r", "status": "pending", "recordedAt": "2026-07-07T10:00:00.000Z"
    }))
    .unwrap();
    ReportIntentStore::record(&store, &intent).unwrap();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), clean);
    let text = std::fs::read_to_string(&replica).unwrap();
    assert!(!std::fs::symlink_metadata(&replica)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(
        text.contains("\"state\": \"clean\"") && text.contains("\"id\": \"i1\""),
        "{text}"
    );
}

/// Every file under `root`, relative and sorted, quarantine times blanked.
fn tree(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else {
                let mut rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if let Some(at) = rel.rfind(".invalid.") {
                    let tail = &rel[at + ".invalid.".len()..];
                    if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
                        rel = format!("{}.invalid.<ms>", &rel[..at]);
                    }
                }
                out.push(rel);
            }
        }
    }
    let mut out = Vec::new();
    if root.exists() {
        walk(root, root, &mut out);
    }
    out.sort();
    out
}

fn write_tree(teams: &Path, files: &Value) {
    for (rel, text) in files.as_object().unwrap() {
        let path = teams.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text.as_str().unwrap()).unwrap();
    }
}

#[test]
fn the_legacy_import_gives_the_reference_result() {
    let recorded = recording();
    let blank = recorded["updatedAtBlank"].as_str().unwrap();
    for scenario in recorded["import"].as_array().unwrap() {
        let name = scenario["name"].as_str().unwrap();
        let team = scenario["team"].as_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (mut store, db, teams) = store_in(dir.path());
        write_tree(&teams, &scenario["files"]);
        drop(DirectDatabase::open(&db, OpenMode::ReadWrite).unwrap());
        let connection = Connection::open(&db).unwrap();
        for (table, _) in TABLES {
            insert_rows(
                &connection,
                table,
                scenario["seed"][table].as_array().unwrap(),
            );
        }
        let mut session = 1;
        for (n, call) in scenario["calls"].as_array().unwrap().iter().enumerate() {
            let label = format!("{name}, call {n}");
            if call["newSession"] != json!(session) {
                // A new process on the same database and files.
                store = store_in(dir.path()).0;
                session = call["newSession"].as_i64().unwrap();
            }
            for rel in call["remove"].as_array().unwrap() {
                std::fs::remove_file(teams.join(rel.as_str().unwrap())).unwrap();
            }
            write_tree(&teams, &call["write"]);
            match (
                store.pending(&member_work_sync::domain::names::TeamName::parse(team).unwrap()),
                &call["result"],
            ) {
                (Ok(pending), expected) if expected["pending"].is_array() => {
                    let ids: Vec<&str> = pending.intents.iter().map(|i| i.id.as_str()).collect();
                    assert_eq!(json!(ids), expected["pending"], "{label}");
                }
                (Err(error), expected) if expected["error"].is_string() => {
                    let message = expected["error"]
                        .as_str()
                        .unwrap()
                        .replace("<teams>", &teams.to_string_lossy());
                    assert!(error.to_string().contains(&message), "{label}: {error}");
                }
                (got, expected) => panic!(
                    "{label}: {:?} where the reference gave {expected}",
                    got.map(|p| p.intents.len())
                ),
            }
            for (table, key) in TABLES {
                let mut actual = rows(
                    &connection,
                    &format!("SELECT * FROM {table} ORDER BY {key}"),
                );
                if table == "store_imports" {
                    for row in &mut actual {
                        row["imported_at"] = json!("<importedAt>");
                    }
                }
                assert_eq!(
                    Value::Array(actual),
                    call["rows"][table],
                    "{label}: {table}"
                );
            }
            assert_eq!(json!(tree(&teams)), call["files"], "{label}: files");
            let replica = std::fs::read_to_string(replica_path(&teams, team)).ok();
            assert_eq!(
                json!(replica.map(|t| blanked(&t, blank))),
                call["replica"],
                "{label}: replica"
            );
        }
    }
}

#[cfg(unix)]
#[test]
fn a_linked_or_fifo_legacy_file_is_quarantined_unopened_and_a_linked_archive_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _db, teams) = store_in(dir.path());
    let member = teams.join("team-a/members/bob/.member-work-sync");
    std::fs::create_dir_all(&member).unwrap();
    let outside = dir.path().join("outside.json");
    let foreign = r#"{"schemaVersion":2,"status":{"teamName":"team-a","memberName":"bob","state":"caught_up","evaluatedAt":"2026-07-07T10:00:00.000Z","agenda":{"teamName":"team-a","memberName":"bob","fingerprint":"f","items":[],"diagnostics":[]},"diagnostics":[]}}"#;
    std::fs::write(&outside, foreign).unwrap();
    std::os::unix::fs::symlink(&outside, member.join("status.json")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(member.join("reports.json"))
        .status()
        .unwrap();
    assert!(status.success());
    // Neither is opened (the FIFO would block for ever); both are moved
    // aside as invalid and read as empty, the link's target untouched.
    assert!(store
        .pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap())
        .unwrap()
        .intents
        .is_empty());
    let files = tree(&teams);
    assert!(
        files
            .contains(&"team-a/members/bob/.member-work-sync/status.json.invalid.<ms>".to_string()),
        "{files:?}"
    );
    assert!(
        files.contains(
            &"team-a/members/bob/.member-work-sync/reports.json.invalid.<ms>".to_string()
        ),
        "{files:?}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), foreign);
    let connection = Connection::open(dir.path().join("storage/app.db")).unwrap();
    assert!(rows(&connection, "SELECT * FROM member_work_sync_status").is_empty());

    // An archive generation that is a link is an error naming it, and the
    // import is not retried for a minute; nothing is read through it.
    let (store, _db, teams) = store_in(&dir.path().join("second"));
    let member = teams.join("team-b/members/bob/.member-work-sync");
    std::fs::create_dir_all(&member).unwrap();
    std::os::unix::fs::symlink(&outside, member.join("status.json.pre-sqlite")).unwrap();
    std::fs::write(
        teams.join("team-b/members/bob/member.meta.json"),
        r#"{"memberName":"bob"}"#,
    )
    .unwrap();
    let error = store
        .pending(&member_work_sync::domain::names::TeamName::parse("team-b").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("status.json.pre-sqlite is not a regular file"),
        "{error}"
    );
    let again = store
        .pending(&member_work_sync::domain::names::TeamName::parse("team-b").unwrap())
        .unwrap_err()
        .to_string();
    assert!(again.contains("not retried yet"), "{again}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), foreign);
}

/// Every file under `root` with its text, as the recording lists them.
fn tree_with_text(root: &Path, blank: &str) -> Value {
    let files: Map<String, Value> = tree(root)
        .into_iter()
        .map(|rel| {
            let text = std::fs::read_to_string(root.join(&rel)).unwrap_or_default();
            let text = if rel.ends_with("sqlite-fallback-replica.json") {
                blanked(&text, blank)
            } else {
                text
            };
            (rel, Value::String(text))
        })
        .collect();
    Value::Object(files)
}

fn rows_blanked(connection: &Connection) -> Value {
    let mut all = Map::new();
    for (table, key) in TABLES {
        let mut actual = rows(connection, &format!("SELECT * FROM {table} ORDER BY {key}"));
        if table == "store_imports" {
            for row in &mut actual {
                row["imported_at"] = json!("<importedAt>");
            }
        }
        all.insert(table.to_string(), Value::Array(actual));
    }
    Value::Object(all)
}

#[test]
fn purge_markers_give_the_reference_result_including_one_left_by_its_crash() {
    let recorded = recording();
    let blank = recorded["updatedAtBlank"].as_str().unwrap();
    for scenario in recorded["purge"].as_array().unwrap() {
        let name = scenario["name"].as_str().unwrap();
        let from = scenario["replayFrom"].as_u64().unwrap() as usize;
        let calls = scenario["calls"].as_array().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join("claude");
        // The state the reference left before the first replayed call
        // (after its own JSON-session purge, or its crash).
        write_tree(&claude, &calls[from]["before"]["files"]);
        let db = dir.path().join("storage").join("app.db");
        drop(DirectDatabase::open(&db, OpenMode::ReadWrite).unwrap());
        let connection = Connection::open(&db).unwrap();
        for (table, _) in TABLES {
            insert_rows(
                &connection,
                table,
                calls[from]["before"]["rows"][table].as_array().unwrap(),
            );
        }
        for (n, call) in calls.iter().enumerate().skip(from) {
            let label = format!("{name}, call {n}");
            // Every call in a new process, as recorded.
            let store = store_in(dir.path()).0;
            let result = match call["purge"].as_str() {
                Some(id) => store.purge_team(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap(), Some(id)).map(|()| json!({"purged": true})),
                None => store.pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap()).map(|p| {
                    json!({"pending": p.intents.iter().map(|i| i.id.clone()).collect::<Vec<_>>()})
                }),
            };
            match (result, &call["result"]) {
                (Ok(got), expected) if expected["error"].is_null() => {
                    assert_eq!(&got, expected, "{label}")
                }
                (Err(error), expected) if expected["error"].is_string() => {
                    let message = expected["error"].as_str().unwrap();
                    assert!(error.to_string().contains(message), "{label}: {error}");
                }
                (got, expected) => panic!("{label}: {got:?} where the reference gave {expected}"),
            }
            assert_eq!(rows_blanked(&connection), call["rows"], "{label}: rows");
            assert_eq!(
                tree_with_text(&claude, blank),
                call["files"],
                "{label}: files"
            );
        }
    }
}

#[cfg(unix)]
#[test]
fn a_linked_purge_marker_is_never_followed_and_counts_as_unsafe() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _db, teams) = store_in(dir.path());
    write_tree(
        &teams,
        &json!({"team-a/config.json": "{\"_backupIdentityId\":\"del-1\"}\n"}),
    );
    let deletions = dir.path().join("claude/.member-work-sync-deletions");
    std::fs::create_dir_all(&deletions).unwrap();
    let outside = dir.path().join("outside.json");
    let marker = r#"{"schemaVersion":2,"teamName":"team-a","deletionIdentityId":"del-1","teamRootIdentity":null,"activeJsonStateCleared":false}"#;
    std::fs::write(&outside, marker).unwrap();
    std::os::unix::fs::symlink(&outside, deletions.join("team-a.json")).unwrap();
    let member = teams.join("team-a/members/bob/.member-work-sync");
    std::fs::create_dir_all(&member).unwrap();
    std::fs::write(
        teams.join("team-a/members/bob/member.meta.json"),
        r#"{"memberName":"bob"}"#,
    )
    .unwrap();
    std::fs::write(
        member.join("outbox.json"),
        r#"{"schemaVersion":2,"items":{}}"#,
    )
    .unwrap();
    // Not read through the link: an unsafe marker deletes no JSON file (the
    // live outbox is imported and archived as usual) and only the link
    // itself is removed.
    assert!(store
        .pending(&member_work_sync::domain::names::TeamName::parse("team-a").unwrap())
        .unwrap()
        .intents
        .is_empty());
    assert!(!deletions.join("team-a.json").exists());
    assert!(std::fs::symlink_metadata(deletions.join("team-a.json")).is_err());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), marker);
    assert!(member.join("outbox.json.pre-sqlite").exists());
}

/// Every file under `root` with its text as the hydration recording lists
/// them: quarantine times in names, the replica's and `member.meta.json`'s
/// wall-clock `updatedAt` blanked.
fn hydrated_tree(root: &Path, blank: &str) -> Map<String, Value> {
    fn walk(root: &Path, dir: &Path, blank: &str, out: &mut Map<String, Value>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, blank, out);
                continue;
            }
            let mut rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let mut text = std::fs::read_to_string(&path).unwrap();
            if rel.ends_with("sqlite-fallback-replica.json") {
                text = blanked(&text, blank);
            }
            if rel.ends_with("member.meta.json") {
                if let Some(at) = text.find("\"updatedAt\": \"") {
                    let start = at + "\"updatedAt\": \"".len();
                    let end = start + text[start..].find('"').unwrap();
                    text.replace_range(start..end, blank);
                }
            }
            if let Some(at) = rel.rfind(".invalid.") {
                rel = format!("{}.invalid.<ms>", &rel[..at]);
            }
            out.insert(rel, Value::String(text));
        }
    }
    let mut out = Map::new();
    if root.exists() {
        walk(root, root, blank, &mut out);
    }
    out.sort_keys();
    out
}

/// A JSON session's first call of a team against the
/// reference's `BackendSelectingMemberWorkSyncStore` in a JSON session: the
/// same files, byte for byte (wall-clock fields blanked), when the JSON
/// store is about to serve the call, or the same refusal, call after call.
#[test]
fn a_json_session_hydrates_from_the_replica_as_the_reference_does() {
    let recorded = recording();
    let blank = recorded["updatedAtBlank"].as_str().unwrap();
    let cases = recorded["hydrate"].as_array().unwrap();
    assert!(cases.len() >= 9, "the recording holds the hydration cases");
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let claude = dir.path().join("claude");
        write_tree(&claude, &case["before"]);
        std::fs::create_dir_all(claude.join("teams")).unwrap();
        let session = JsonSessionFiles::new(
            claude.join("teams"),
            case["requiresReplica"].as_bool().unwrap(),
        );
        for (n, call) in case["calls"].as_array().unwrap().iter().enumerate() {
            let label = format!("{name}, call {n}");
            match (
                session.before_call("team-a"),
                call["result"]["error"].as_str(),
            ) {
                (Ok(()), None) => {}
                (Err(error), Some(expected)) => {
                    // The reference's reason, up to the parser's own words.
                    let reason = expected.split(": SyntaxError").next().unwrap();
                    let message = error.to_string();
                    assert!(message.contains(reason), "{label}: {message}");
                    assert!(message.contains("\"team-a\""), "{label}: {message}");
                    assert!(
                        message.contains("sqlite-fallback-replica.json"),
                        "{label}: {message}"
                    );
                }
                (got, expected) => panic!("{label}: {got:?} where the reference gave {expected:?}"),
            }
            let expected = call["files"].as_object().unwrap();
            let got = hydrated_tree(&claude, blank);
            for (rel, text) in expected {
                assert_eq!(got.get(rel), Some(text), "{label}: {rel}");
            }
            assert_eq!(
                got.keys().collect::<Vec<_>>(),
                expected.keys().collect::<Vec<_>>(),
                "{label}: the files"
            );
        }
    }
}

/// `purgeTeam` in a JSON session against the reference's: the recorded
/// JSON-session purge (the first call of its scenario) leaves the same
/// files and the marker cleared, for the next SQLite session.
#[test]
fn a_json_session_purge_leaves_the_reference_files_and_marker() {
    let recorded = recording();
    let blank = recorded["updatedAtBlank"].as_str().unwrap();
    let scenario = recorded["purge"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["calls"][0]["backend"] == "json")
        .expect("the recording holds a JSON-session purge");
    let call = &scenario["calls"][0];
    let dir = tempfile::tempdir().unwrap();
    let claude = dir.path().join("claude");
    write_tree(&claude, &call["before"]["files"]);
    let session = JsonSessionFiles::new(claude.join("teams"), false);
    session
        .purge_team(
            &member_work_sync::domain::names::TeamName::parse("team-a").unwrap(),
            call["purge"].as_str(),
        )
        .unwrap();
    let mut got = hydrated_tree(&claude, blank);
    let mut expected = call["files"].as_object().unwrap().clone();
    // The team folder's (dev, inode, birth time) are this machine's.
    for files in [&mut got, &mut expected] {
        let marker = files
            .get_mut(".member-work-sync-deletions/team-a.json")
            .expect("the marker stays");
        let mut parsed: Value = serde_json::from_str(marker.as_str().unwrap()).unwrap();
        assert!(parsed["teamRootIdentity"]["ino"].is_number(), "{parsed}");
        parsed["teamRootIdentity"] = json!("<identity>");
        *marker = parsed;
    }
    assert_eq!(got, expected);
    assert_eq!(
        got[".member-work-sync-deletions/team-a.json"]["activeJsonStateCleared"],
        json!(true)
    );
}
