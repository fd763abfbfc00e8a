//! The addon's SQLite store (direct mode) shared by processes: two
//! processes claiming, delivering and writing statuses on one `app.db`
//! never claim an item twice and surface no error (`SQLITE_BUSY`
//! included); a claim made while another process holds the write lock
//! waits for it and then succeeds. The processes are this test binary
//! re-executed (`peer_process`). The long run against the reference's own
//! store is `scripts/sqlite-reference/load.mjs`.

#[path = "sqlite_peer/mod.rs"]
mod sqlite_peer;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::nudge::AttemptEnd;
use sqlite_peer::{dump, hold, hold_back, planned, Spec, Stores};

/// 2026-07-07T10:00:00.000Z: one clock for every process.
const NOW: i64 = 1_783_418_400_000;

/// This binary again, running only [`peer_process`] with `spec`.
fn spawn_peer(spec: Value) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["peer_process", "--exact", "--ignored", "--nocapture"])
        .env("MWS_SQLITE_PEER", spec.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The peer's JSON lines (libtest's own lines are not JSON objects).
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn finish(child: Child) -> Vec<Value> {
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "peer failed: {output:?}");
    json_lines(&String::from_utf8_lossy(&output.stdout))
}

#[test]
#[ignore = "a child process of the tests in this file (re-executed with MWS_SQLITE_PEER)"]
fn peer_process() {
    let spec: Value = serde_json::from_str(&std::env::var("MWS_SQLITE_PEER").unwrap()).unwrap();
    let db = Path::new(spec["db"].as_str().unwrap());
    let mut out = std::io::stdout();
    match spec["do"].as_str().unwrap() {
        "run" => {
            sqlite_peer::run(&Stores::sqlite(db), &Spec::from_json(&spec), &mut out);
        }
        "hold" => hold(db, spec["id"].as_str().unwrap(), 1000, &mut out).unwrap(),
        other => panic!("unknown peer job {other}"),
    }
}

#[test]
fn two_processes_claim_from_one_team_and_no_item_is_claimed_twice() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("storage/app.db");
    let stores = Stores::sqlite(&db);
    for i in 0..40 {
        let id = format!("seed-{i}");
        stores
            .outbox
            .ensure(
                &TeamName::parse("shared").unwrap(),
                &MemberName::parse("alice").unwrap(),
                &planned("shared", "alice", &id),
                NOW,
            )
            .unwrap();
    }
    let peers: Vec<Child> = ["p0", "p1"]
        .iter()
        .map(|name| {
            spawn_peer(
                json!({"do": "run", "db": db, "team": "shared", "name": name, "now": NOW,
                              "rounds": 40, "ensurePerRound": 1, "claimLimit": 2, "intents": true}),
            )
        })
        .collect();
    let logs: Vec<(String, Vec<Value>)> = peers
        .into_iter()
        .zip(["p0", "p1"])
        .map(|(child, name)| (name.to_string(), finish(child)))
        .collect();

    let mut claims: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, lines) in &logs {
        let errors: Vec<&Value> = lines.iter().filter(|l| l.get("error").is_some()).collect();
        assert!(errors.is_empty(), "{name} surfaced errors: {errors:?}");
        let claimed: Vec<&str> = lines.iter().filter_map(|l| l["claimed"].as_str()).collect();
        let delivered: Vec<&str> = lines
            .iter()
            .filter_map(|l| l["delivered"].as_str())
            .collect();
        assert_eq!(claimed, delivered, "{name}: each claim delivered");
        assert_eq!(
            lines.iter().filter(|l| l.get("status").is_some()).count(),
            40,
            "{name}: every status written"
        );
        for id in claimed {
            claims.entry(id.to_string()).or_default().push(name.clone());
        }
    }
    let twice: Vec<_> = claims.iter().filter(|(_, by)| by.len() > 1).collect();
    assert!(twice.is_empty(), "claimed twice: {twice:?}");
    assert!(claims.len() > 40, "both claimed: {}", claims.len());

    // What is left is claimed here, once; then every item is delivered at generation 1.
    let shared = member_work_sync::domain::names::TeamName::parse("shared").unwrap();
    let rest = stores
        .outbox
        .claim_due(&shared, "parent", 1000, NOW)
        .unwrap();
    for item in &rest.items {
        assert!(!claims.contains_key(&item.id), "{} claimed again", item.id);
        assert!(stores
            .outbox
            .finish(&shared, item, &AttemptEnd::Delivered, NOW)
            .unwrap());
    }
    let rows = dump(&db).unwrap();
    assert_eq!(rows["integrity"], "ok");
    let outbox = rows["outbox"].as_array().unwrap();
    assert_eq!(outbox.len(), 40 + 2 * 40);
    assert_eq!(claims.len() + rest.items.len(), outbox.len());
    for row in outbox {
        assert_eq!(row["status"], "delivered", "{row}");
        assert_eq!(row["attempt_generation"], 1, "{row}");
        let by = row["claimed_by"].as_str().unwrap();
        let id = row["id"].as_str().unwrap();
        let expected = claims.get(id).map_or("parent", |by| by[0].as_str());
        assert_eq!(by, expected, "{row}");
    }
    assert_eq!(rows["statuses"].as_array().unwrap().len(), 3);
    assert_eq!(rows["intents"].as_array().unwrap().len(), 80);
}

#[test]
fn a_claim_waits_for_another_processes_write_lock_and_then_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("app.db");
    let stores = Stores::sqlite(&db);
    stores
        .outbox
        .ensure(
            &TeamName::parse("held").unwrap(),
            &MemberName::parse("alice").unwrap(),
            &planned("held", "alice", "held-item"),
            NOW,
        )
        .unwrap();
    assert_eq!(hold_back(&db, "held-item", NOW).unwrap(), 1);
    assert!(stores
        .outbox
        .claim_due(
            &member_work_sync::domain::names::TeamName::parse("held").unwrap(),
            "waiter",
            5,
            NOW
        )
        .unwrap()
        .items
        .is_empty());

    // The other process takes the write lock, makes the item due inside its
    // transaction and keeps the lock a second: only a claim that waited for
    // its commit can see the item.
    let mut holder = spawn_peer(json!({"do": "hold", "db": db, "id": "held-item"}));
    let mut reader = BufReader::new(holder.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("{\"holding\"") {
        line.clear();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the holder ended first"
        );
    }
    let claimed = stores
        .outbox
        .claim_due(
            &member_work_sync::domain::names::TeamName::parse("held").unwrap(),
            "waiter",
            5,
            NOW,
        )
        .unwrap();
    let ids: Vec<&str> = claimed.items.iter().map(|i| i.id.as_str()).collect();
    assert_eq!(ids, ["held-item"]);
    assert!(holder.wait().unwrap().success());
    assert_eq!(dump(&db).unwrap()["integrity"], "ok");
}
