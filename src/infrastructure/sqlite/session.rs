//! Gateway mode's session decision: the first store call
//! of the instance asks the app's storage once; when it answers, the whole
//! session keeps its state in the app's SQLite database (through the
//! gateway), otherwise in the JSON files. There is no switch later: after a
//! SQLite decision a failing op fails its call, after a JSON one the
//! storage is not asked again. A JSON session runs each call of a team under
//! that team's lock, after [`super::json_session`]'s step (a pending purge
//! finished, the replica hydrated once or refusing the call); a SQLite one
//! whose ping answered `integrity: 'recovered'` refuses a dirty replica.
//!
//! The decision waits for the JS thread, so it is made on the first call
//! from a worker thread; a call on the JS thread itself (which could not
//! answer while it waits) fails and decides nothing.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::json;

use super::gateway::MemberWorkSyncGateway;
use super::json_session::JsonSessionFiles;
use super::store::{KeyedMutex, SqliteStore};
use crate::application::log::{LogCode, LogEntry, LogLevel, LogSink};
use crate::application::ports::{
    Claimed, MetricsStore, OutboxStore, PendingIntents, PortError, ReportIntent, ReportIntentStore,
    StatusStore, StoredStatus, TeamPurge,
};
use crate::domain::metrics::{MetricEvent, MetricsIndex};
use crate::domain::nudge::{AttemptEnd, EnsureOutcome, OutboxItem, PlannedNudge};
use crate::domain::status::MemberStatus;
use crate::domain::time::EpochMs;

/// What the app's storage answered to the session's first question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionAnswer {
    /// It answered: a SQLite session. The backend info as the app's ping
    /// gives it (`{ driver, databasePath, schemaVersion, integrity }`), or
    /// whatever else it resolved to.
    Sqlite(serde_json::Value),
    /// It threw, rejected or did not answer in time: a JSON session.
    Unavailable(String),
    /// Asked on the JS thread (or after dispose): no answer, nothing decided.
    NotAsked(String),
}

/// Asks the app's storage whether this session is a SQLite one.
pub trait SessionQuestion: Send + Sync {
    /// The app's decision: its selector's when it gave one, else its
    /// gateway's first `ping()`.
    fn ask(&self) -> SessionAnswer;
}

/// The app's storage in gateway mode: its gateway and the question that
/// decides the session.
#[derive(Clone)]
pub struct AppStorage {
    /// The `mws.*` ops, as calls to the app's gateway.
    pub gateway: Arc<dyn MemberWorkSyncGateway>,
    /// The session's first question.
    pub question: Arc<dyn SessionQuestion>,
    /// `fallbackRequiresReplica`: a JSON session fails a team's calls when
    /// the team has no replica (the app passes `false` in production).
    pub fallback_requires_replica: bool,
}

impl std::fmt::Debug for AppStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppStorage(<the app's gateway>)")
    }
}

/// One app storage is equal only to itself.
impl PartialEq for AppStorage {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.gateway, &other.gateway)
            && Arc::ptr_eq(&self.question, &other.question)
            && self.fallback_requires_replica == other.fallback_requires_replica
    }
}

impl Eq for AppStorage {}

/// The backend of the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    JsonFiles,
}

/// The JSON stores a JSON session uses (the default ports' stores).
pub struct JsonStores {
    /// Member statuses, in the JSON status store.
    pub status: Arc<dyn StatusStore>,
    /// Metric events, in the JSON metrics store.
    pub metrics: Arc<dyn MetricsStore>,
    /// Report intents, in the JSON intent store.
    pub intents: Arc<dyn ReportIntentStore>,
    /// Nudge outbox items, in the JSON outbox store.
    pub outbox: Arc<dyn OutboxStore>,
}

/// The four stores of gateway mode: SQLite through the app's gateway or
/// the JSON files, as the session's first answer decides.
pub struct SessionStores {
    question: Arc<dyn SessionQuestion>,
    decided: Mutex<Option<Backend>>,
    sqlite: SqliteStore,
    json: JsonStores,
    /// A JSON session's replica hydration and purge markers.
    json_files: JsonSessionFiles,
    /// One lock per team for a JSON session's calls (the SQLite store has its own).
    teams: KeyedMutex,
    log: Arc<dyn LogSink>,
}

impl SessionStores {
    /// Stores that ask the app's storage at their first call, then use its
    /// gateway or `json` for the rest of the session; the decision goes to `log`.
    /// A SQLite session keeps the team files under `teams_base` (replica,
    /// legacy import, purge markers) as the app's SQLite session does.
    pub fn new(
        app: AppStorage,
        json: JsonStores,
        log: Arc<dyn LogSink>,
        teams_base: std::path::PathBuf,
    ) -> Self {
        Self {
            question: app.question,
            decided: Mutex::new(None),
            sqlite: SqliteStore::new(app.gateway).with_team_files(teams_base.clone()),
            json,
            json_files: JsonSessionFiles::new(teams_base, app.fallback_requires_replica),
            teams: KeyedMutex::default(),
            log,
        }
    }

    /// The session's backend, asked for once (calls wait for the first answer).
    fn backend(&self) -> Result<Backend, PortError> {
        let mut decided = self.decided.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(backend) = *decided {
            return Ok(backend);
        }
        let backend = match self.question.ask() {
            SessionAnswer::Sqlite(info) => {
                let field = |key: &str| info.get(key).cloned().unwrap_or(serde_json::Value::Null);
                let recovered = info.get("integrity").and_then(|v| v.as_str()) == Some("recovered");
                if recovered {
                    self.sqlite.database_recovered();
                }
                self.log.log(
                    LogEntry::new(
                        if recovered {
                            LogLevel::Warn
                        } else {
                            LogLevel::Info
                        },
                        LogCode::StorageSqliteSession,
                        format!(
                            "member-work-sync storage: sqlite for this session (the app's storage \
                             answered; schemaVersion={} integrity={} db={})",
                            field("schemaVersion"),
                            field("integrity"),
                            field("databasePath"),
                        ),
                    )
                    .with_context(json!({
                        "integrity": field("integrity"),
                        "schemaVersion": field("schemaVersion"),
                        "databasePath": field("databasePath"),
                    })),
                );
                Backend::Sqlite
            }
            SessionAnswer::Unavailable(reason) => {
                self.log.log(
                    LogEntry::new(
                        LogLevel::Error,
                        LogCode::StorageJsonFallback,
                        format!(
                            "member-work-sync storage: the app's storage did not answer its first \
                             ping ({reason}); JSON files for this session"
                        ),
                    )
                    .with_context(json!({
                        "reason": reason,
                        "fallbackRequiresReplica": self.json_files.replica_required(),
                    })),
                );
                Backend::JsonFiles
            }
            SessionAnswer::NotAsked(why) => {
                return Err(PortError::Io(std::io::Error::other(format!(
                    "member-work-sync storage: the session's backend is not decided yet ({why})"
                ))))
            }
        };
        *decided = Some(backend);
        Ok(backend)
    }

    /// Runs a JSON-store call of `team` under the team's lock, after the
    /// JSON session's team-file step (a pending purge finished, the replica
    /// hydrated once); the lock is reentrant, so a status build that reads
    /// the same team's outbox and metrics runs inside it.
    fn json_call<T>(
        &self,
        team: &str,
        work: impl FnOnce() -> Result<T, PortError>,
    ) -> Result<T, PortError> {
        self.teams.run(team, || {
            self.json_files.before_call(team)?;
            work()
        })
    }

    /// `work` on the session's store: `sqlite`, or `json` after the JSON
    /// session's step for `team` (under the team's lock).
    fn on<S: ?Sized, T>(
        &self,
        team: &str,
        sqlite: &S,
        json: &S,
        work: impl FnOnce(&S) -> Result<T, PortError>,
    ) -> Result<T, PortError> {
        match self.backend()? {
            Backend::Sqlite => work(sqlite),
            Backend::JsonFiles => self.json_call(team, || work(json)),
        }
    }

    fn status<T>(
        &self,
        team: &str,
        work: impl FnOnce(&dyn StatusStore) -> Result<T, PortError>,
    ) -> Result<T, PortError> {
        self.on::<dyn StatusStore, T>(team, &self.sqlite, self.json.status.as_ref(), |store| {
            work(store)
        })
    }

    fn metrics<T>(
        &self,
        team: &str,
        work: impl FnOnce(&dyn MetricsStore) -> Result<T, PortError>,
    ) -> Result<T, PortError> {
        self.on::<dyn MetricsStore, T>(team, &self.sqlite, self.json.metrics.as_ref(), |store| {
            work(store)
        })
    }

    fn intents<T>(
        &self,
        team: &str,
        work: impl FnOnce(&dyn ReportIntentStore) -> Result<T, PortError>,
    ) -> Result<T, PortError> {
        self.on::<dyn ReportIntentStore, T>(
            team,
            &self.sqlite,
            self.json.intents.as_ref(),
            |store| work(store),
        )
    }

    fn outbox<T>(
        &self,
        team: &str,
        work: impl FnOnce(&dyn OutboxStore) -> Result<T, PortError>,
    ) -> Result<T, PortError> {
        self.on::<dyn OutboxStore, T>(team, &self.sqlite, self.json.outbox.as_ref(), |store| {
            work(store)
        })
    }
}

/// A SQLite session purges the rows and team files; a JSON session deletes
/// the live JSON files behind a purge marker the next SQLite session
/// finishes.
impl TeamPurge for SessionStores {
    fn purge_team(&self, team: &str, deletion_id: Option<&str>) -> Result<(), PortError> {
        match self.backend()? {
            Backend::Sqlite => self.sqlite.purge_team(team, deletion_id),
            Backend::JsonFiles => self.teams.run(team, || {
                Ok(self.json_files.purge_team(team, deletion_id)?)
            }),
        }
    }
}

impl StatusStore for SessionStores {
    fn read(&self, team_name: &str, member_name: &str) -> Result<StoredStatus, PortError> {
        self.status(team_name, |s| s.read(team_name, member_name))
    }

    fn peek(&self, team_name: &str, member_name: &str) -> Result<StoredStatus, PortError> {
        self.status(team_name, |s| s.peek(team_name, member_name))
    }

    fn update(
        &self,
        team_name: &str,
        member_name: &str,
        build: &mut dyn FnMut(StoredStatus) -> MemberStatus,
    ) -> Result<MemberStatus, PortError> {
        self.status(team_name, |s| s.update(team_name, member_name, build))
    }

    fn member_count(&self, team_name: &str) -> Result<usize, PortError> {
        self.status(team_name, |s| s.member_count(team_name))
    }

    fn update_all(
        &self,
        team_name: &str,
        members: &[&str],
        build: &mut dyn FnMut(&str, StoredStatus) -> MemberStatus,
    ) -> Result<Vec<MemberStatus>, PortError> {
        self.status(team_name, |s| s.update_all(team_name, members, build))
    }
}

impl MetricsStore for SessionStores {
    fn record(&self, status: &MemberStatus, events: Vec<MetricEvent>) -> Result<(), PortError> {
        self.metrics(&status.team_name, |m| m.record(status, events))
    }

    fn record_all(&self, writes: Vec<(&MemberStatus, Vec<MetricEvent>)>) -> Result<(), PortError> {
        let Some((first, _)) = writes.first() else {
            return Ok(());
        };
        let team = first.team_name.clone();
        if writes.iter().any(|(status, _)| status.team_name != team) {
            // Each team under its own lock, one at a time.
            return writes
                .into_iter()
                .try_for_each(|(status, events)| MetricsStore::record(self, status, events));
        }
        self.metrics(&team, |m| m.record_all(writes))
    }

    fn read(&self, team_name: &str) -> Result<MetricsIndex, PortError> {
        self.metrics(team_name, |m| m.read(team_name))
    }

    fn peek(&self, team_name: &str) -> Result<MetricsIndex, PortError> {
        self.metrics(team_name, |m| m.peek(team_name))
    }
}

impl ReportIntentStore for SessionStores {
    fn record(&self, intent: &ReportIntent) -> Result<(), PortError> {
        self.intents(&intent.team_name, |i| i.record(intent))
    }

    fn pending(&self, team_name: &str) -> Result<PendingIntents, PortError> {
        self.intents(team_name, |i| i.pending(team_name))
    }

    fn finish(&self, intent: &ReportIntent) -> Result<(), PortError> {
        self.intents(&intent.team_name, |i| i.finish(intent))
    }
}

impl OutboxStore for SessionStores {
    fn ensure(
        &self,
        team: &str,
        member: &str,
        planned: &PlannedNudge,
        now: EpochMs,
    ) -> Result<(OutboxItem, EnsureOutcome), PortError> {
        self.outbox(team, |o| o.ensure(team, member, planned, now))
    }

    fn member_items(&self, team: &str, member: &str) -> Result<Vec<OutboxItem>, PortError> {
        self.outbox(team, |o| o.member_items(team, member))
    }

    fn claim_due(
        &self,
        team: &str,
        claimed_by: &str,
        limit: usize,
        now: EpochMs,
    ) -> Result<Claimed, PortError> {
        self.outbox(team, |o| o.claim_due(team, claimed_by, limit, now))
    }

    fn finish(&self, item: &OutboxItem, end: &AttemptEnd, now: EpochMs) -> Result<bool, PortError> {
        self.outbox(&item.team_name, |o| o.finish(item, end, now))
    }

    fn refresh_index(&self, team: &str) -> Result<(), PortError> {
        self.outbox(team, |o| o.refresh_index(team))
    }

    fn teams_with_outbox(&self) -> Vec<String> {
        // No team to prepare: the listing reads the folders as they are.
        // Undecided (asked on the JS thread): nothing to list this pass.
        match self.backend() {
            Ok(Backend::Sqlite) => self.sqlite.teams_with_outbox(),
            Ok(Backend::JsonFiles) => self.json.outbox.teams_with_outbox(),
            Err(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::infrastructure::sqlite::gateway::DbResult;
    use crate::infrastructure::sqlite::records::{
        EnsureRecordResult, MetricEventRecord, OutboxMark, OutboxRecord, ProcessedIntent,
        ReportIntentRecord, StatusRecord,
    };
    use crate::infrastructure::sqlite::snapshot::TeamRecords;

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
        fn outbox_claim_due(
            &self,
            _: &str,
            _: &str,
            _: &str,
            _: usize,
        ) -> DbResult<Vec<OutboxRecord>> {
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
                    std::thread::spawn(move || stores.member_count("forge").unwrap())
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
        let error = stores.member_count("forge").unwrap_err().to_string();
        assert!(
            error.contains("not decided yet (asked on the JS thread)"),
            "{error}"
        );
        assert!(log.0.lock().unwrap().is_empty());
        assert_eq!(stores.member_count("forge").unwrap(), 0);
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

    const EMPTY: &str = r#"{"statuses":[],"reportIntents":[],"outboxItems":[],"metricEvents":[],"filesToArchive":[]}"#;

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
                let result = stores.member_count(TEAM);
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
        stores.member_count(TEAM).unwrap();
        std::fs::remove_file(metrics_index(&teams)).unwrap();
        stores.member_count(TEAM).unwrap();
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
        stores.purge_team(TEAM, Some("del-1")).unwrap();
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
        assert_eq!(stores.member_count(TEAM).unwrap(), 0);
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
            let result = stores.member_count(TEAM);
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
}
