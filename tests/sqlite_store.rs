//! The use cases over the SQLite store (`storage: { sqlitePath }`): a nudge
//! planned, delivered once and never again, also by the next instance on the
//! same database; the rows are where the app reads them.

mod common;

use std::path::Path;

use common::{MINUTE, NOW};
use rusqlite::Connection;
use serde_json::{json, Value};

use member_work_sync::application::ports::StatusStore;
use member_work_sync::application::queue::Trigger;
use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::status::{MemberStatus, ReconciledBy};
use member_work_sync::domain::time::format_iso;
use member_work_sync::infrastructure::sqlite::{OpenMode, SqliteStore};
use member_work_sync::runtime::composition::{RootPaths, Services, Storage};

fn team(name: &str) -> member_work_sync::domain::names::TeamName {
    member_work_sync::domain::names::TeamName::parse(name).unwrap()
}

fn member(name: &str) -> member_work_sync::domain::names::MemberName {
    member_work_sync::domain::names::MemberName::parse(name).unwrap()
}

fn services(root: &Path, db: &Path, mode: OpenMode) -> Services {
    let mut paths = RootPaths::resolve(Some(root.to_path_buf()), None, None);
    paths.storage = Storage::Sqlite {
        path: db.to_path_buf(),
        mode,
    };
    Services::new(paths, Some(NOW))
}

/// Calm shadow history in the database (5 members, 30 caught-up statuses
/// over two hours), so phase 2 is ready.
fn seed_history(db: &Path) {
    let store = SqliteStore::open_lazily(db.to_path_buf(), OpenMode::ReadWrite);
    for i in 0..30 {
        let at = format_iso(NOW - 2 * 60 * MINUTE + i * 4 * MINUTE);
        let member = format!("m{}", i % 5);
        let status: MemberStatus = serde_json::from_value(json!({
            "teamName": "forge", "memberName": member, "state": "caught_up",
            "agenda": {"teamName": "forge", "memberName": member, "generatedAt": at,
                       "fingerprint": "agenda:v1:x", "items": [], "diagnostics": []},
            "evaluatedAt": at, "diagnostics": [],
        }))
        .unwrap();
        store
            .update(
                &TeamName::parse("forge").unwrap(),
                &MemberName::parse(&member).unwrap(),
                Box::new(|_| status.clone()),
            )
            .unwrap();
    }
}

fn reconcile_and_dispatch(services: &Services) -> (u32, u32) {
    services
        .engine
        .reconcile_and_plan(
            &team("forge"),
            &member("jack"),
            ReconciledBy::Queue,
            &[Trigger::ManualRefresh],
        )
        .unwrap();
    let summary = services
        .nudges
        .dispatch_team(&team("forge"), "test", &|| true)
        .unwrap();
    (summary.claimed as u32, summary.delivered as u32)
}

fn rows(db: &Path, sql: &str) -> Vec<Vec<Value>> {
    let connection = Connection::open(db).unwrap();
    let mut statement = connection.prepare(sql).unwrap();
    let width = statement.column_count();
    statement
        .query_map([], |row| {
            (0..width)
                .map(|i| {
                    Ok(match row.get_ref(i)? {
                        rusqlite::types::ValueRef::Integer(n) => json!(n),
                        rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                        _ => Value::Null,
                    })
                })
                .collect()
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_nudge_is_delivered_once_also_by_the_next_instance_on_the_database() {
    let (_dir, root) = common::example_root();
    let db = root.join("userData/storage/app.db");
    seed_history(&db);
    let inbox = root.join("teams/forge/inboxes/jack.json");

    assert_eq!(
        reconcile_and_dispatch(&services(&root, &db, OpenMode::ReadWrite)),
        (1, 1)
    );
    let delivered = std::fs::read(&inbox).unwrap();
    let outbox = rows(&db, "SELECT member_key, status, attempt_generation, delivered_message_id = id, claimed_by FROM member_work_sync_outbox");
    assert_eq!(
        outbox,
        vec![vec![
            json!("jack"),
            json!("delivered"),
            json!(1),
            json!(1),
            json!("test")
        ]]
    );
    let status = rows(&db, "SELECT state, json_extract(status_json, '$.teamName') FROM member_work_sync_status WHERE member_key = 'jack'");
    assert_eq!(status, vec![vec![json!("needs_sync"), json!("forge")]]);
    assert!(
        std::fs::metadata(root.join("teams/forge/members/jack/.member-work-sync/outbox.json"))
            .is_err()
    );

    // A new instance (an app restart) on the same database: nothing is claimed again.
    let next = services(&root, &db, OpenMode::ReadWrite);
    assert_eq!(reconcile_and_dispatch(&next), (0, 0));
    assert_eq!(std::fs::read(&inbox).unwrap(), delivered);
    let events: Vec<Vec<Value>> = rows(&db, "SELECT count(*) FROM member_work_sync_metric_events");
    assert!(events[0][0].as_i64().unwrap() > 30, "{events:?}");
}

#[test]
fn a_read_only_instance_reads_the_rows_and_writes_none() {
    let (_dir, root) = common::example_root();
    let db = root.join("app.db");
    seed_history(&db);
    let before = std::fs::read(&db).unwrap();
    let reader = services(&root, &db, OpenMode::ReadOnly);
    let m1 = member_work_sync::domain::names::MemberName::parse("m1").unwrap();
    let forge = member_work_sync::domain::names::TeamName::parse("forge").unwrap();
    let stored = reader.engine.get_status(&forge, &m1, false).unwrap();
    assert_eq!(
        stored.evaluated_at.as_str(),
        format_iso(NOW - 2 * 60 * MINUTE + 26 * 4 * MINUTE)
    );
    let error = reader
        .engine
        .reconcile_and_plan(
            &team("forge"),
            &member("jack"),
            ReconciledBy::Queue,
            &[Trigger::ManualRefresh],
        )
        .unwrap_err()
        .to_string();
    assert!(error.contains("app.db"), "{error}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
}
