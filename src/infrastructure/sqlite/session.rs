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
    StatusBuild, StatusStore, StoredStatus, TeamPurge,
};
use crate::domain::metrics::{MetricEvent, MetricsIndex};
use crate::domain::names::{MemberName, TeamName};
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
pub(crate) struct JsonStores {
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
pub(crate) struct SessionStores {
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
    pub(crate) fn new(
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
    fn purge_team(&self, team: &TeamName, deletion_id: Option<&str>) -> Result<(), PortError> {
        match self.backend()? {
            Backend::Sqlite => self.sqlite.purge_team(team, deletion_id),
            Backend::JsonFiles => self.teams.run(team, || {
                Ok(self.json_files.purge_team(team, deletion_id)?)
            }),
        }
    }
}

impl StatusStore for SessionStores {
    fn read(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
    ) -> Result<StoredStatus, PortError> {
        self.status(team_name, |s| s.read(team_name, member_name))
    }

    fn peek(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
    ) -> Result<StoredStatus, PortError> {
        self.status(team_name, |s| s.peek(team_name, member_name))
    }

    fn update(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        build: StatusBuild<'_>,
    ) -> Result<MemberStatus, PortError> {
        self.status(team_name, |s| s.update(team_name, member_name, build))
    }

    fn member_count(&self, team_name: &TeamName) -> Result<usize, PortError> {
        self.status(team_name, |s| s.member_count(team_name))
    }

    fn update_all(
        &self,
        team_name: &TeamName,
        members: &[&MemberName],
        build: &mut dyn FnMut(&MemberName, StoredStatus) -> MemberStatus,
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

    fn read(&self, team_name: &TeamName) -> Result<Arc<MetricsIndex>, PortError> {
        self.metrics(team_name, |m| m.read(team_name))
    }

    fn peek(&self, team_name: &TeamName) -> Result<Arc<MetricsIndex>, PortError> {
        self.metrics(team_name, |m| m.peek(team_name))
    }
}

impl ReportIntentStore for SessionStores {
    fn record(&self, intent: &ReportIntent) -> Result<(), PortError> {
        self.intents(&intent.team_name, |i| i.record(intent))
    }

    fn pending(&self, team_name: &TeamName) -> Result<PendingIntents, PortError> {
        self.intents(team_name, |i| i.pending(team_name))
    }

    fn finish(&self, intent: &ReportIntent) -> Result<(), PortError> {
        self.intents(&intent.team_name, |i| i.finish(intent))
    }
}

impl OutboxStore for SessionStores {
    fn ensure(
        &self,
        team: &TeamName,
        member: &MemberName,
        planned: &PlannedNudge,
        now: EpochMs,
    ) -> Result<(OutboxItem, EnsureOutcome), PortError> {
        self.outbox(team, |o| o.ensure(team, member, planned, now))
    }

    fn member_items(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<Vec<OutboxItem>, PortError> {
        self.outbox(team, |o| o.member_items(team, member))
    }

    fn claim_due(
        &self,
        team: &TeamName,
        claimed_by: &str,
        limit: usize,
        now: EpochMs,
    ) -> Result<Claimed, PortError> {
        self.outbox(team, |o| o.claim_due(team, claimed_by, limit, now))
    }

    fn finish(
        &self,
        team: &TeamName,
        item: &OutboxItem,
        end: &AttemptEnd,
        now: EpochMs,
    ) -> Result<bool, PortError> {
        self.outbox(team, |o| o.finish(team, item, end, now))
    }

    fn refresh_index(&self, team: &TeamName) -> Result<(), PortError> {
        self.outbox(team, |o| o.refresh_index(team))
    }

    fn teams_with_outbox(&self) -> Vec<TeamName> {
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
mod tests;
