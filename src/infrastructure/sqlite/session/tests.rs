use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::infrastructure::sqlite::gateway::DbResult;
use crate::infrastructure::sqlite::records::TeamRecords;
use crate::infrastructure::sqlite::records::{
    EnsureRecordResult, MetricEventRecord, OutboxMark, OutboxRecord, ProcessedIntent,
    ReportIntentRecord, StatusRecord,
};

/// A gateway of an empty database that counts its `statusList` calls.
#[derive(Default)]
struct Empty {
    lists: AtomicUsize,
}

impl MemberWorkSyncGateway for Empty {
    fn status_read(&self, _: &str, _: &str) -> DbResult<Option<StatusRecord>> {
        Ok(None)
    }
    fn status_write(&self, _: &StatusRecord, _: &[MetricEventRecord]) -> DbResult<()> {
        Ok(())
    }
    fn status_list(&self, _: &str) -> DbResult<Vec<StatusRecord>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        Ok(vec![])
    }
    fn metric_events_list(&self, _: &str) -> DbResult<Vec<MetricEventRecord>> {
        Ok(vec![])
    }
    fn metric_events_record(&self, _: &str, _: &[MetricEventRecord]) -> DbResult<()> {
        Ok(())
    }
    fn reports_append(&self, _: &ReportIntentRecord) -> DbResult<()> {
        Ok(())
    }
    fn reports_list_pending(&self, _: &str) -> DbResult<Vec<ReportIntentRecord>> {
        Ok(vec![])
    }
    fn reports_mark_processed(&self, _: &str, _: &str, _: &ProcessedIntent) -> DbResult<()> {
        Ok(())
    }
    fn outbox_ensure_pending(
        &self,
        record: &OutboxRecord,
        _: &str,
        _: Option<&str>,
    ) -> DbResult<EnsureRecordResult> {
        Ok(EnsureRecordResult::Created(record.clone()))
    }
    fn outbox_claim_due(&self, _: &str, _: &str, _: &str, _: usize) -> DbResult<Vec<OutboxRecord>> {
        Ok(vec![])
    }
    fn outbox_mark(&self, _: &str, _: &str, _: &OutboxMark, _: &str) -> DbResult<bool> {
        Ok(true)
    }
    fn outbox_count_recent_delivered(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: Option<&str>,
    ) -> DbResult<usize> {
        Ok(0)
    }
    fn outbox_count_delivered_for_agenda(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: Option<&str>,
    ) -> DbResult<usize> {
        Ok(0)
    }
    fn outbox_find_delivered_review_pickup_event_ids(
        &self,
        _: &str,
        _: &str,
        _: &[String],
    ) -> DbResult<Vec<String>> {
        Ok(vec![])
    }
    fn outbox_find_recent_recovery_by_intent(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: &str,
    ) -> DbResult<Option<OutboxRecord>> {
        Ok(None)
    }
    fn outbox_member_items(&self, _: &str, _: &str) -> DbResult<Vec<OutboxRecord>> {
        Ok(vec![])
    }
    fn outbox_open_teams(&self) -> DbResult<Vec<String>> {
        Ok(vec![])
    }
    fn team_snapshot(&self, _: &str) -> DbResult<TeamRecords> {
        Ok(TeamRecords::default())
    }
    fn import_team(&self, _: &str, _: &TeamRecords) -> DbResult<()> {
        Ok(())
    }
    fn record_store_import(&self, _: &str, _: &str, _: usize, _: &str) -> DbResult<()> {
        Ok(())
    }
    fn has_store_import(&self, _: &str, _: &str) -> DbResult<bool> {
        Ok(false)
    }
}

/// Answers from a script, counting the questions.
struct Scripted {
    answers: Mutex<Vec<SessionAnswer>>,
    asked: AtomicUsize,
}

impl SessionQuestion for Scripted {
    fn ask(&self) -> SessionAnswer {
        self.asked.fetch_add(1, Ordering::SeqCst);
        // Slow enough that concurrent first calls overlap.
        std::thread::sleep(std::time::Duration::from_millis(20));
        self.answers.lock().unwrap().remove(0)
    }
}

#[derive(Default)]
struct Codes(Mutex<Vec<LogCode>>);

impl LogSink for Codes {
    fn log(&self, entry: LogEntry) {
        self.0.lock().unwrap().push(entry.code);
    }
}

/// Session stores over two empty gateways, and what they were asked.
struct Fixture {
    stores: Arc<SessionStores>,
    question: Arc<Scripted>,
    /// The gateway a SQLite session uses.
    sqlite: Arc<Empty>,
    /// The one behind the JSON side.
    json: Arc<Empty>,
    log: Arc<Codes>,
    /// The teams folder both sessions keep their team files in.
    teams: std::path::PathBuf,
    /// The temp folder holding it.
    _teams: tempfile::TempDir,
}

fn session(answers: Vec<SessionAnswer>) -> Fixture {
    session_requiring(answers, false)
}

fn session_requiring(answers: Vec<SessionAnswer>, replica_required: bool) -> Fixture {
    let (sqlite, json) = (Arc::new(Empty::default()), Arc::new(Empty::default()));
    let question = Arc::new(Scripted {
        answers: Mutex::new(answers),
        asked: AtomicUsize::new(0),
    });
    let json_store = Arc::new(SqliteStore::new(json.clone()));
    let log = Arc::new(Codes::default());
    let dir = tempfile::tempdir().unwrap();
    // Purge markers go beside `teams/`: both inside the temp folder.
    let teams = dir.path().join("claude").join("teams");
    std::fs::create_dir_all(&teams).unwrap();
    let stores = SessionStores::new(
        AppStorage {
            gateway: sqlite.clone(),
            question: question.clone(),
            fallback_requires_replica: replica_required,
        },
        JsonStores {
            status: json_store.clone(),
            metrics: json_store.clone(),
            intents: json_store.clone(),
            outbox: json_store,
        },
        log.clone(),
        teams.clone(),
    );
    Fixture {
        stores: Arc::new(stores),
        question,
        sqlite,
        json,
        log,
        teams,
        _teams: dir,
    }
}

#[test]
fn the_first_answer_decides_the_whole_session_once() {
    // (answer, SQLite side used, code logged)
    let cases = [
        (
            SessionAnswer::Sqlite(serde_json::json!({ "integrity": "ok" })),
            true,
            LogCode::StorageSqliteSession,
        ),
        (
            SessionAnswer::Unavailable("ping rejected: gone".into()),
            false,
            LogCode::StorageJsonFallback,
        ),
    ];
    for (answer, on_sqlite, code) in cases {
        let Fixture {
            stores,
            question,
            sqlite,
            json,
            log,
            ..
        } = session(vec![answer.clone()]);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let stores = stores.clone();
                std::thread::spawn(move || {
                    stores
                        .member_count(&TeamName::parse("forge").unwrap())
                        .unwrap()
                })
            })
            .collect();
        threads
            .into_iter()
            .for_each(|t| assert_eq!(t.join().unwrap(), 0));
        assert_eq!(question.asked.load(Ordering::SeqCst), 1, "{answer:?}");
        let (used, unused) = if on_sqlite {
            (&sqlite, &json)
        } else {
            (&json, &sqlite)
        };
        assert_eq!(used.lists.load(Ordering::SeqCst), 4, "{answer:?}");
        assert_eq!(unused.lists.load(Ordering::SeqCst), 0, "{answer:?}");
        assert_eq!(*log.0.lock().unwrap(), vec![code]);
    }
}

#[test]
fn a_call_that_could_not_ask_fails_and_decides_nothing() {
    let Fixture {
        stores,
        question,
        sqlite,
        log,
        ..
    } = session(vec![
        SessionAnswer::NotAsked("asked on the JS thread".into()),
        SessionAnswer::Sqlite(serde_json::Value::Null),
    ]);
    let error = stores
        .member_count(&TeamName::parse("forge").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("not decided yet (asked on the JS thread)"),
        "{error}"
    );
    assert!(log.0.lock().unwrap().is_empty());
    assert_eq!(
        stores
            .member_count(&TeamName::parse("forge").unwrap())
            .unwrap(),
        0
    );
    assert_eq!(question.asked.load(Ordering::SeqCst), 2);
    assert_eq!(sqlite.lists.load(Ordering::SeqCst), 1);
}
const TEAM: &str = "team-a";

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn replica_file(teams: &std::path::Path) -> std::path::PathBuf {
    teams
        .join(TEAM)
        .join(".member-work-sync/sqlite-fallback-replica.json")
}

fn metrics_index(teams: &std::path::Path) -> std::path::PathBuf {
    teams
        .join(TEAM)
        .join(".member-work-sync/indexes/metrics.json")
}

fn marker_file(teams: &std::path::Path) -> std::path::PathBuf {
    teams
        .parent()
        .unwrap()
        .join(".member-work-sync-deletions")
        .join(format!("{TEAM}.json"))
}

fn json_session() -> SessionAnswer {
    SessionAnswer::Unavailable("ping rejected: gone".into())
}

const EMPTY: &str =
    r#"{"statuses":[],"reportIntents":[],"outboxItems":[],"metricEvents":[],"filesToArchive":[]}"#;

fn envelope(state: &str, snapshot: Option<&str>) -> String {
    match snapshot {
        Some(s) => format!(
            r#"{{"schemaVersion":1,"state":"{state}","updatedAt":"2026-07-07T10:00:00.000Z","snapshot":{s}}}"#
        ),
        None => format!(
            r#"{{"schemaVersion":1,"state":"{state}","updatedAt":"2026-07-07T10:00:00.000Z"}}"#
        ),
    }
}

/// The replica a JSON session meets at a team's first
/// call. (case, replica text, fallbackRequiresReplica, the refusal or
/// None when the JSON stores serve the call.)
#[test]
fn a_json_session_serves_a_team_only_from_a_safe_replica() {
    let other_team = EMPTY.replace(
        r#""metricEvents":[]"#,
        r#""metricEvents":[{"id":"e1","teamName":"team-b","memberName":"bob","kind":"would_nudge","state":"needs_sync","agendaFingerprint":"f","actionableCount":1,"recordedAt":"2026-07-07T10:00:00.000Z"}]"#,
    );
    let cases: Vec<(&str, Option<String>, bool, Option<&str>)> = vec![
        ("missing", None, false, None),
        ("missing, required", None, true, Some("replica is missing")),
        (
            "dirty",
            Some(envelope("dirty", None)),
            false,
            Some("last SQLite publication is dirty"),
        ),
        (
            "malformed",
            Some("{ nope".into()),
            false,
            Some("replica is malformed"),
        ),
        (
            "another envelope",
            Some(r#"{"schemaVersion":2}"#.into()),
            false,
            Some("replica envelope is invalid"),
        ),
        (
            "another team's",
            Some(envelope("clean", Some(&other_team))),
            false,
            Some("clean replica snapshot is invalid"),
        ),
        ("clean", Some(envelope("clean", Some(EMPTY))), false, None),
        (
            "clean, required",
            Some(envelope("clean", Some(EMPTY))),
            true,
            None,
        ),
    ];
    for (case, replica, required, refusal) in cases {
        let Fixture {
            stores,
            json,
            sqlite,
            teams,
            _teams,
            ..
        } = session_requiring(vec![json_session()], required);
        if let Some(text) = &replica {
            write(&replica_file(&teams), text);
        }
        for call in 0..2 {
            let result = stores.member_count(&TeamName::parse(TEAM).unwrap());
            match refusal {
                None => assert_eq!(result.unwrap(), 0, "{case}, call {call}"),
                Some(reason) => {
                    let message = result.unwrap_err().to_string();
                    for part in [
                        "Internal storage JSON fallback is unsafe: ",
                        reason,
                        "\"team-a\"",
                        replica_file(&teams).to_str().unwrap(),
                    ] {
                        assert!(message.contains(part), "{case}, call {call}: {message}");
                    }
                }
            }
        }
        let served = if refusal.is_none() { 2 } else { 0 };
        assert_eq!(json.lists.load(Ordering::SeqCst), served, "{case}");
        assert_eq!(sqlite.lists.load(Ordering::SeqCst), 0, "{case}");
        // Only a clean replica is restored (its indexes written); the
        // replica itself is never written by a JSON session.
        let restored = replica
            .as_deref()
            .is_some_and(|r| r.contains(r#""state":"clean""#))
            && refusal.is_none();
        assert_eq!(metrics_index(&teams).exists(), restored, "{case}");
        let after = std::fs::read_to_string(replica_file(&teams)).ok();
        assert_eq!(after, replica, "{case}");
    }
}

/// Hydration runs once per team per session: files the first call
/// restored and a later one removed are not restored again.
#[test]
fn a_json_session_hydrates_a_team_once() {
    let Fixture {
        stores,
        teams,
        _teams,
        ..
    } = session(vec![json_session()]);
    write(&replica_file(&teams), &envelope("clean", Some(EMPTY)));
    stores
        .member_count(&TeamName::parse(TEAM).unwrap())
        .unwrap();
    std::fs::remove_file(metrics_index(&teams)).unwrap();
    stores
        .member_count(&TeamName::parse(TEAM).unwrap())
        .unwrap();
    assert!(!metrics_index(&teams).exists());
}

/// A JSON session's purge writes the marker, deletes
/// the live JSON of the generation and leaves the marker cleared for
/// the next SQLite session; it asks nothing of the app's database.
#[test]
fn a_json_session_purge_deletes_the_live_json_behind_a_marker() {
    let Fixture {
        stores,
        sqlite,
        teams,
        _teams,
        ..
    } = session(vec![json_session()]);
    write(
        &teams.join(TEAM).join("config.json"),
        r#"{"_backupIdentityId":"del-1"}"#,
    );
    let status = teams
        .join(TEAM)
        .join("members/bob/.member-work-sync/status.json");
    let kept = teams
        .join(TEAM)
        .join("members/bob/.member-work-sync/journal.jsonl");
    write(&status, "{}");
    write(&kept, "{}\n");
    stores
        .purge_team(&TeamName::parse(TEAM).unwrap(), Some("del-1"))
        .unwrap();
    assert!(!status.exists());
    assert!(kept.exists());
    let marker: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(marker_file(&teams)).unwrap()).unwrap();
    assert_eq!(marker["deletionIdentityId"], "del-1");
    assert_eq!(marker["activeJsonStateCleared"], true);
    assert_eq!(sqlite.lists.load(Ordering::SeqCst), 0);
}

/// A marker met at a team's first call: its JSON half is finished and
/// the replica (here dirty, which would refuse the call) is not read.
#[test]
fn a_pending_purge_is_finished_first_and_the_replica_left_unread() {
    let Fixture {
        stores,
        teams,
        _teams,
        ..
    } = session(vec![json_session()]);
    write(
        &teams.join(TEAM).join("config.json"),
        r#"{"_backupIdentityId":"del-1"}"#,
    );
    let status = teams
        .join(TEAM)
        .join("members/bob/.member-work-sync/status.json");
    write(&status, "{}");
    write(&replica_file(&teams), &envelope("dirty", None));
    write(
        &marker_file(&teams),
        r#"{"schemaVersion":2,"teamName":"team-a","deletionIdentityId":"del-1","teamRootIdentity":null,"activeJsonStateCleared":false}"#,
    );
    assert_eq!(
        stores
            .member_count(&TeamName::parse(TEAM).unwrap())
            .unwrap(),
        0
    );
    assert!(!status.exists());
    let marker = std::fs::read_to_string(marker_file(&teams)).unwrap();
    assert!(
        marker.contains(r#""activeJsonStateCleared": true"#),
        "{marker}"
    );
}

/// A dirty replica is republished over when the
/// app's database opened cleanly, and fails the call when its ping
/// answered `integrity: 'recovered'` (the database may have lost what
/// the replica fenced).
#[test]
fn a_recovered_database_refuses_a_dirty_replica() {
    for (integrity, refused) in [("ok", false), ("recovered", true)] {
        let Fixture {
            stores,
            teams,
            _teams,
            ..
        } = session(vec![SessionAnswer::Sqlite(
            serde_json::json!({ "integrity": integrity }),
        )]);
        write(&replica_file(&teams), &envelope("dirty", None));
        let result = stores.member_count(&TeamName::parse(TEAM).unwrap());
        assert_eq!(result.is_err(), refused, "{integrity}: {result:?}");
        if let Err(error) = result {
            assert!(
                error
                    .to_string()
                    .contains("last SQLite publication is dirty"),
                "{error}"
            );
        }
    }
}
