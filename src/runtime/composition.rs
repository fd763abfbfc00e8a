//! Builds the use cases from paths: the composition root the binding and the
//! benches share.

use crate::domain::js_semantics::js_trim;
use crate::domain::retention::Retention;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use crate::application::busy::BusySignals;
use crate::application::engine::{Engine, EngineDeps};
use crate::application::explain::Explainer;
use crate::application::host::{Host, HostRelay};
use crate::application::log::{LogCode, LogEntry, LogLevel, LogRelay, LogSink};
use crate::application::nudges::Nudges;
use crate::application::ports::{
    Clock, KeepOnDeletion, MetricsStore, OutboxStore, PortError, Ports, ReportIntentStore,
    StatusStore, TeamPurge,
};
use crate::application::queue::Trigger;
use crate::application::reconcile::Reconciler;
use crate::application::reconcile::{team_name, WorkSyncError};
use crate::application::runtime_state::RuntimeStates;
use crate::application::turn_settled::{
    DrainSummary, SettledTurns, TeamChangeRelay, TurnSettledIngestor, TurnSettledQueue, DRAIN_BATCH,
};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::status::{MemberStatus, ReconciledBy};

use super::activity_file::ActivityFile;
use super::worker::{DrainPass, DrainSchedule, ScheduleIntervals, Worker};
use crate::infrastructure::clock::{ManualClock, SystemClock};
use crate::infrastructure::codex_sessions::FsCodexSessionLocator;
use crate::infrastructure::explain_source::FsExplainSource;
use crate::infrastructure::host_questions::waits::{
    PostedQuestions, QuestionPost, Waiting, DEFAULT_TIMEOUT_MS,
};
use crate::infrastructure::host_questions::{HostQuestions, QuestionKind};
use crate::infrastructure::inbox::InboxWriter;
use crate::infrastructure::intent_store::FsReportIntentStore;
use crate::infrastructure::metrics_store::FsMetricsStore;
use crate::infrastructure::outbox_store::{FsOutboxStore, FsWatchdogJournal};
use crate::infrastructure::report_token::HmacReportTokens;
use crate::infrastructure::safe_fs::{with_folder_syncs_trailing, with_folders_kept};
use crate::infrastructure::spool::{FsSpool, SpoolPaths};
use crate::infrastructure::sqlite::session::{AppStorage, JsonStores, SessionStores};
use crate::infrastructure::sqlite::{OpenMode, SqliteStore};
use crate::infrastructure::status_store::{FsAuditJournal, FsStatusStore, StorePaths};
use crate::infrastructure::team_reader::FsTeamSource;
use crate::infrastructure::transcripts::FsClaudeSessionLocator;

/// Where the member-work-sync state (statuses, report intents, outbox,
/// metric events) is kept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Storage {
    /// The JSON files under each team's folder (the default).
    #[default]
    JsonFiles,
    /// The app's SQLite database (`<userData>/storage/app.db`), opened by
    /// the addon itself: only where no other SQLite library has the file
    /// open in this process (the CLI, tests, a process of the user's own).
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// Read-only: nothing is written, not even the schema.
        mode: OpenMode,
    },
    /// The app's storage gateway (inside Electron, where the app's worker
    /// owns the database): SQLite through it or the JSON files, as its
    /// answer to the session's first question decides.
    Gateway(AppStorage),
}

/// Where the Claude home and its team and task dirs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootPaths {
    /// `teams/` dir.
    pub teams_base: PathBuf,
    /// `tasks/` dir.
    pub tasks_base: PathBuf,
    /// `<claudeRoot>/projects`: Claude Code's transcripts.
    pub projects: PathBuf,
    /// `<CODEX_HOME>/sessions` (`$CODEX_HOME` ← `~/.codex`): the Codex CLI's
    /// session logs, the only place a native Codex Stop's log is read from.
    pub codex_sessions: PathBuf,
    /// Where the store is (JSON files unless set after [`RootPaths::resolve`]).
    pub storage: Storage,
}

impl RootPaths {
    /// Resolves the documented defaults: `claudeRoot` ← `$CLAUDE_CONFIG_DIR` ← `~/.claude`;
    /// teams and tasks under it unless given.
    pub fn resolve(
        claude_root: Option<PathBuf>,
        teams_base: Option<PathBuf>,
        tasks_base: Option<PathBuf>,
    ) -> Self {
        let home = || {
            std::env::var_os("HOME")
                .or_else(|| std::env::var_os("USERPROFILE"))
                .map(PathBuf::from)
                .unwrap_or_default()
        };
        let codex_home = std::env::var_os("CODEX_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home().join(".codex"));
        let root = claude_root
            .or_else(|| {
                std::env::var_os("CLAUDE_CONFIG_DIR")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| home().join(".claude"));
        Self {
            teams_base: teams_base.unwrap_or_else(|| root.join("teams")),
            tasks_base: tasks_base.unwrap_or_else(|| root.join("tasks")),
            projects: root.join("projects"),
            codex_sessions: codex_home.join("sessions"),
            storage: Storage::JsonFiles,
        }
    }
}

/// The wired use cases of one addon instance.
pub struct Services {
    /// Reconcile, reports and status queries.
    pub reconciler: Arc<Reconciler>,
    /// Events, queue and lifecycle.
    pub engine: Arc<Engine>,
    /// Supervisor-reported runtime state.
    pub runtime: Arc<RuntimeStates>,
    /// The test clock, when the instance was built with one.
    pub manual_clock: Option<Arc<ManualClock>>,
    /// The runtime turn-settled spool layout.
    pub spool_paths: SpoolPaths,
    /// Drains the turn-settled spool.
    pub turn_settled: Arc<TurnSettledIngestor>,
    /// Where the addon's team change events go (the `onTeamChange` callback).
    pub team_changes: Arc<TeamChangeRelay>,
    /// Background failures for the app's `onLog` (dropped while none is connected).
    pub log: Arc<LogRelay>,
    /// The host app's answers at decision time (the Electron entry's callbacks).
    pub host: Arc<HostRelay>,
    /// Durable nudges.
    pub outbox: Arc<dyn OutboxStore>,
    /// The nudge planner and dispatcher on their own (the engine's
    /// `dispatch_due_nudges` adds the background status refresh).
    pub nudges: Arc<Nudges>,
    /// Side-effect-free member timelines (`explain`).
    pub explainer: Arc<Explainer>,
    /// The team reader, whose task cache watches folders (released on dispose).
    pub team_source: Arc<FsTeamSource>,
}

impl Services {
    /// Wires file-backed ports under `paths`; `fixed_now_ms` selects a manual clock.
    pub fn new(paths: RootPaths, fixed_now_ms: Option<i64>) -> Self {
        Self::with_control_url(paths, fixed_now_ms, None)
    }

    /// [`Services::new`] whose nudges name the app's control API URL.
    pub fn with_control_url(
        paths: RootPaths,
        fixed_now_ms: Option<i64>,
        control_url: Option<String>,
    ) -> Self {
        Self::with_options(paths, fixed_now_ms, control_url, Retention::default())
    }

    /// [`Services::with_control_url`] keeping history as `retention` says.
    pub(crate) fn with_options(
        paths: RootPaths,
        fixed_now_ms: Option<i64>,
        control_url: Option<String>,
        retention: Retention,
    ) -> Self {
        let manual_clock = fixed_now_ms.map(|now| Arc::new(ManualClock::new(now)));
        let clock: Arc<dyn Clock> = match &manual_clock {
            Some(manual) => manual.clone(),
            None => Arc::new(SystemClock),
        };
        let store_paths = StorePaths::new(paths.teams_base.clone());
        let log = Arc::new(LogRelay::default());
        let team_source = Arc::new(FsTeamSource::new(
            paths.teams_base.clone(),
            paths.tasks_base.clone(),
        ));
        let ports = Arc::new(file_ports_reading(
            team_source.clone(),
            &paths,
            clock.clone(),
            log.clone(),
            control_url,
            retention,
        ));
        let reconciler = Arc::new(Reconciler::new(ports.clone()));
        let nudges = Arc::new(Nudges::new(ports.clone()));
        let settled_turns = Arc::new(SettledTurns::default());
        let engine = Arc::new(Engine::new(
            reconciler.clone(),
            EngineDeps {
                ports: ports.clone(),
                nudges: nudges.clone(),
                settled_turns: settled_turns.clone(),
            },
        ));
        let explain_source = match &paths.storage {
            Storage::JsonFiles => FsExplainSource::new(store_paths.clone(), clock.clone()),
            Storage::Sqlite { .. } | Storage::Gateway(_) => FsExplainSource::with_stores(
                store_paths.clone(),
                ports.store.clone(),
                ports.outbox.clone(),
            ),
        };
        let explainer = Arc::new(Explainer::new(Arc::new(explain_source), clock.clone()));
        let spool_paths = SpoolPaths::for_teams_base(&paths.teams_base);
        let turn_settled = Arc::new(
            TurnSettledIngestor::new(
                clock.clone(),
                Arc::new(
                    FsSpool::new(spool_paths.clone(), clock.clone())
                        .with_retention(retention)
                        .with_log(log.clone()),
                ),
                ports.teams.clone(),
                Arc::new(FsClaudeSessionLocator::new(
                    paths.teams_base.clone(),
                    paths.projects.clone(),
                )),
                ports.journal.clone(),
                ports.store.clone(),
            )
            .with_codex_sessions(Arc::new(FsCodexSessionLocator::new(
                paths.teams_base.clone(),
                paths.codex_sessions.clone(),
            )))
            .with_settled_turns(settled_turns)
            .with_host(ports.host.clone()),
        );
        Self {
            reconciler,
            engine,
            runtime: ports.runtime.clone(),
            manual_clock,
            spool_paths,
            turn_settled,
            team_changes: Arc::new(TeamChangeRelay::default()),
            log,
            host: ports.host.clone(),
            outbox: ports.outbox.clone(),
            nudges,
            explainer,
            team_source,
        }
    }
}

/// The file-backed ports under `paths`, each store built once: the one set
/// the reconciler, the nudge use cases and the engine share. `log` receives
/// the stores' background failures; delivered nudges name `control_url`;
/// the journal and the outbox keep history as `retention` says.
pub fn file_ports(
    paths: &RootPaths,
    clock: Arc<dyn Clock>,
    log: Arc<dyn LogSink>,
    control_url: Option<String>,
    retention: Retention,
) -> Ports {
    let teams = Arc::new(FsTeamSource::new(
        paths.teams_base.clone(),
        paths.tasks_base.clone(),
    ));
    file_ports_reading(teams, paths, clock, log, control_url, retention)
}

/// [`file_ports`] reading teams through `teams`.
fn file_ports_reading(
    teams: Arc<FsTeamSource>,
    paths: &RootPaths,
    clock: Arc<dyn Clock>,
    log: Arc<dyn LogSink>,
    control_url: Option<String>,
    retention: Retention,
) -> Ports {
    let store_paths = StorePaths::new(paths.teams_base.clone());
    let host = Arc::new(HostRelay::default());
    let metrics = Arc::new(FsMetricsStore::new(paths.teams_base.clone(), clock.clone()));
    let json_ports = Ports {
        clock: clock.clone(),
        teams: teams.clone(),
        impacts: teams,
        store: Arc::new(
            FsStatusStore::new(store_paths.clone(), clock.clone()).with_metrics(metrics.clone()),
        ),
        journal: Arc::new(
            FsAuditJournal::new(store_paths.clone())
                .with_log(log.clone())
                .with_retention(retention),
        ),
        tokens: Arc::new(HmacReportTokens::new(paths.teams_base.clone())),
        metrics,
        intents: Arc::new(FsReportIntentStore::new(store_paths.clone(), clock.clone())),
        outbox: Arc::new(FsOutboxStore::new(store_paths, clock).with_retention(retention)),
        inbox: Arc::new(
            InboxWriter::new(paths.teams_base.clone())
                .with_control_url(control_url)
                .with_host(host.clone()),
        ),
        watchdog: Arc::new(FsWatchdogJournal::new(paths.teams_base.clone())),
        runtime: Arc::new(RuntimeStates::default()),
        busy: Arc::new(BusySignals::default()),
        log,
        host,
        purge: Arc::new(KeepOnDeletion),
    };
    match &paths.storage {
        Storage::JsonFiles => json_ports,
        Storage::Sqlite { path, mode } => {
            let rows = SqliteStore::open_lazily(path.clone(), *mode);
            // Read-only (status, explain, watch, metrics): no replica, import or purge.
            let rows = Arc::new(match mode {
                OpenMode::ReadWrite => rows.with_team_files(paths.teams_base.clone()),
                OpenMode::ReadOnly => rows,
            });
            with_row_stores(rows, json_ports)
        }
        Storage::Gateway(app) => {
            let json = JsonStores {
                status: json_ports.store.clone(),
                metrics: json_ports.metrics.clone(),
                intents: json_ports.intents.clone(),
                outbox: json_ports.outbox.clone(),
            };
            let rows = Arc::new(SessionStores::new(
                app.clone(),
                json,
                json_ports.log.clone(),
                paths.teams_base.clone(),
            ));
            with_row_stores(rows, json_ports)
        }
    }
}

/// `ports` with its status, metrics, intent and outbox stores and its purge
/// all served by `rows` (a database in direct or gateway mode); the journal,
/// tokens, inbox and watchdog stay files, as the app keeps them.
fn with_row_stores<R>(rows: Arc<R>, ports: Ports) -> Ports
where
    R: StatusStore + MetricsStore + ReportIntentStore + OutboxStore + TeamPurge + 'static,
{
    Ports {
        store: rows.clone(),
        metrics: rows.clone(),
        intents: rows.clone(),
        outbox: rows.clone(),
        purge: rows,
        ..ports
    }
}

/// The instance was disposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("member-work-sync instance was disposed")]
pub(crate) struct Disposed;

/// A running addon instance: services plus its background worker.
pub(crate) struct Instance {
    /// The use cases.
    pub services: Services,
    worker: Worker,
    /// Where a driving instance publishes its queue for `watch`.
    activity: Arc<ActivityFile>,
    /// The queue driver runs (`autoStart`).
    queue_running: bool,
    disposed: AtomicBool,
    /// Calls admitted by [`Instance::admit`] and still running.
    calls: Mutex<usize>,
    calls_done: Condvar,
}

/// Resolved turn-settled members go to the event queue; one of a team being
/// deleted is refused (the drain counts it `failed`, as the app's ingestor
/// counts an enqueue its queue rejected).
struct QueueTurnSettled<'a>(&'a Engine);

impl TurnSettledQueue for QueueTurnSettled<'_> {
    fn enqueue(&self, team_name: &TeamName, member_name: &MemberName) -> Result<(), String> {
        if self.0.enqueue(team_name, member_name, Trigger::TurnSettled) {
            Ok(())
        } else {
            Err(format!("team {team_name} is being deleted"))
        }
    }
}

/// Without a queue driver (`autoStart: false`) nothing would ever run queued
/// work, so a drain reconciles the member at once instead (through the team
/// gate, like every per-team operation).
struct ReconcileTurnSettledNow<'a>(&'a Engine);

impl TurnSettledQueue for ReconcileTurnSettledNow<'_> {
    fn enqueue(&self, team_name: &TeamName, member_name: &MemberName) -> Result<(), String> {
        self.0
            .reconcile_and_plan(
                team_name,
                member_name,
                ReconciledBy::Queue,
                &[Trigger::TurnSettled],
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// The constructor's `tuning` option: scheduler intervals, queue
/// concurrency and retention (defaults: drain every 15 s, dispatch every
/// 60 s, 2 reconciles at once, [`Retention::default`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tuning {
    /// How often the schedulers run.
    pub intervals: ScheduleIntervals,
    /// Queued reconciles running at once; `None` keeps the queue's default.
    pub queue_concurrency: Option<usize>,
    /// The app's `queueQuietWindowMs`; `None` keeps each trigger's delay.
    pub queue_quiet_window_ms: Option<i64>,
    /// How much journal, outbox and spool history is kept.
    pub retention: Retention,
}

impl Instance {
    /// Wires the services and starts the worker (the queue driver only with
    /// `auto_start`) as `tuning` says; delivered nudges name `control_url`
    /// when given.
    pub(crate) fn start(
        paths: RootPaths,
        fixed_now_ms: Option<i64>,
        auto_start: bool,
        control_url: Option<String>,
        tuning: Tuning,
    ) -> std::io::Result<Self> {
        let teams_base = paths.teams_base.clone();
        let services = Services::with_options(paths, fixed_now_ms, control_url, tuning.retention);
        if let Some(concurrency) = tuning.queue_concurrency {
            services.engine.set_queue_concurrency(concurrency);
        }
        services
            .engine
            .set_queue_quiet_window(tuning.queue_quiet_window_ms);
        let schedule = {
            let (ingestor, engine, changes, log) = (
                services.turn_settled.clone(),
                services.engine.clone(),
                services.team_changes.clone(),
                services.log.clone(),
            );
            let watch_log = log.clone();
            DrainSchedule {
                drain: Box::new(move || {
                    match ingestor.drain(&QueueTurnSettled(&engine), changes.as_ref()) {
                        Ok(summary) if summary.failed > 0 => {
                            log.log(
                                LogEntry::new(
                                    LogLevel::Warn,
                                    LogCode::DrainIncomplete,
                                    format!(
                                        "turn-settled drain: {} of {} claimed payloads failed",
                                        summary.failed, summary.claimed
                                    ),
                                )
                                .with_context(serde_json::to_value(summary).unwrap_or_default()),
                            );
                            DrainPass::Failed
                        }
                        Ok(summary) if summary.claimed as usize >= DRAIN_BATCH => DrainPass::Full,
                        Ok(_) => DrainPass::CaughtUp,
                        Err(error) => {
                            log.log(LogEntry::new(
                                LogLevel::Error,
                                LogCode::DrainFailed,
                                format!("turn-settled drain failed: {error}"),
                            ));
                            DrainPass::Failed
                        }
                    }
                }),
                incoming: {
                    let spool = services.spool_paths.clone();
                    Box::new(move || spool.watchable_incoming())
                },
                programs: {
                    let spool = services.spool_paths.clone();
                    Box::new(move || spool.watchable_bin())
                },
                watch_failed: Box::new(move |dir, error| {
                    watch_log.log(
                        LogEntry::new(
                            LogLevel::Warn,
                            LogCode::WatcherUnavailable,
                            format!(
                                "cannot watch {}: {error}; draining on the interval",
                                dir.display()
                            ),
                        )
                        .with_context(serde_json::json!({ "path": dir })),
                    );
                }),
            }
        };
        let dispatch: Box<dyn Fn() + Send + Sync> = {
            let (engine, outbox_teams, runtime, log, host) = (
                services.engine.clone(),
                services.outbox.clone(),
                services.runtime.clone(),
                services.log.clone(),
                services.host.clone(),
            );
            Box::new(move || {
                // The teams the app's scheduler lists: its
                // `listLifecycleActiveTeamNames`, asked per pass; without it,
                // every team with an outbox whose runtime is active (a stopped
                // team's dispatch would supersede its nudges).
                let teams = match host.lifecycle_active_teams() {
                    // The app's names are checked here, where they come in.
                    Some(names) => names
                        .iter()
                        .map(|team| js_trim(team))
                        .filter(|team| !team.is_empty())
                        .map(team_name)
                        .collect::<Result<Vec<_>, _>>(),
                    None => Ok(outbox_teams
                        .teams_with_outbox()
                        .into_iter()
                        .filter(|team| runtime.team_active(team))
                        .collect()),
                };
                let claimed_by = format!("member-work-sync:{}:scheduled", std::process::id());
                match teams.and_then(|teams| engine.dispatch_due_nudges(&teams, &claimed_by)) {
                    Ok(summary) if summary.failed > 0 => log.log(
                        LogEntry::new(
                            LogLevel::Warn,
                            LogCode::DispatchIncomplete,
                            format!(
                                "nudge dispatch: {} outboxes or outcomes failed",
                                summary.failed
                            ),
                        )
                        .with_context(serde_json::to_value(summary).unwrap_or_default()),
                    ),
                    Ok(_) => {}
                    Err(error) => log.log(LogEntry::new(
                        LogLevel::Error,
                        LogCode::DispatchFailed,
                        format!("nudge dispatch failed: {error}"),
                    )),
                }
            })
        };
        let activity = Arc::new(ActivityFile::new(teams_base, services.engine.now_ms()));
        let publish: Box<dyn Fn() + Send + Sync> = {
            let (engine, activity, log) = (
                services.engine.clone(),
                activity.clone(),
                services.log.clone(),
            );
            let last_error = Mutex::new(None::<String>);
            Box::new(move || {
                let written = activity.publish(&engine.diagnostics(), engine.now_ms());
                let error = written.err().map(|e| e.to_string());
                let mut last = last_error.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(error) = error.as_ref().filter(|e| last.as_ref() != Some(*e)) {
                    log.log(
                        LogEntry::new(
                            LogLevel::Warn,
                            LogCode::ActivityWriteFailed,
                            format!("queue activity file not written: {error}"),
                        )
                        .with_context(serde_json::json!({ "path": activity.path() })),
                    );
                }
                *last = error;
            })
        };
        let worker = Worker::start(
            services.engine.clone(),
            auto_start,
            Some(schedule),
            Some(dispatch),
            Some(publish),
            tuning.intervals,
        )?;
        Ok(Self {
            services,
            worker,
            activity,
            queue_running: auto_start,
            disposed: AtomicBool::new(false),
            calls: Mutex::new(0),
            calls_done: Condvar::new(),
        })
    }

    /// One drain of the turn-settled spool; resolved members are queued for a
    /// `turn_settled` reconcile and announced through `onTeamChange`.
    pub(crate) fn drain_turn_settled(&self) -> Result<DrainSummary, PortError> {
        let changes = self.services.team_changes.as_ref();
        if self.queue_running {
            self.services
                .turn_settled
                .drain(&QueueTurnSettled(&self.services.engine), changes)
        } else {
            self.services
                .turn_settled
                .drain(&ReconcileTurnSettledNow(&self.services.engine), changes)
        }
    }

    /// Asks the host the `answers` kinds (`onHostQuestion`'s `hostAnswers`;
    /// unknown names are none) through `post`, each answer waited for at
    /// most `timeout_ms` (default 5 s) and settled through `waiting`.
    pub(crate) fn ask_host(
        &self,
        post: Box<dyn QuestionPost>,
        answers: &[String],
        timeout_ms: Option<u64>,
        waiting: Arc<Waiting>,
    ) {
        let answers = answers.iter().filter_map(|name| QuestionKind::parse(name));
        let timeout = Duration::from_millis(timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
        let channel = PostedQuestions::new(post, timeout, waiting);
        self.services.host.connect(Box::new(HostQuestions::new(
            Box::new(channel),
            answers.collect(),
            timeout,
            self.services.log.clone(),
        )));
    }

    /// `refreshStatus`: reconciles a member now and persists the result.
    /// The status, the metrics index and (when a nudge is planned)
    /// the member outbox and outbox index are each synced before
    /// their renames; their folders are synced once each, together,
    /// after the answer (trailing), and before any later durable
    /// rename of this process and at dispose. Each file is old or new
    /// after any crash, and every mix a power cut can leave is one
    /// the readers take: metrics ahead of the status count an
    /// evaluation that happened (the next reconcile records its
    /// own); an outbox item ahead of the status is revalidated
    /// against the stored status by the dispatcher
    /// (`status_no_longer_matches_outbox`) and planned again by the
    /// next reconcile; the outbox index is a view rebuilt from the
    /// outboxes. A status the caller saw and a power cut undid is
    /// the old whole file, which the level-triggered reconciler
    /// brings up to date at its next pass; nothing written after it
    /// (a delivery of the nudge planned here, the next status) can
    /// be durable before it, since every durable write joins the
    /// trailing syncs first. The folders it opens are opened once
    /// each (`with_folders_kept`).
    pub(crate) fn refresh_status(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<MemberStatus, WorkSyncError> {
        with_folder_syncs_trailing(|| {
            with_folders_kept(|| self.services.engine.refresh_status(team, member))
        })
    }

    /// `resumeTeam`: lifts the deletion fence now, re-scans in the background
    /// (reading the roster is IO; the JS thread never waits for it).
    pub(crate) fn resume_team(&self, team: &TeamName) {
        if !self.services.engine.lift_deletion_fence(team) {
            return;
        }
        let (engine, team) = (self.services.engine.clone(), team.clone());
        self.worker.run_blocking(move || {
            engine.enqueue_startup_scan(&[team]);
        });
    }

    /// `Err` after [`Instance::dispose`].
    pub(crate) fn live(&self) -> Result<(), Disposed> {
        if self.disposed.load(Ordering::SeqCst) {
            Err(Disposed)
        } else {
            Ok(())
        }
    }

    /// The background worker.
    pub(crate) fn worker(&self) -> &Worker {
        &self.worker
    }

    /// Moves the test clock and wakes the queue; `false` without a test clock.
    pub(crate) fn set_test_clock(&self, now_ms: i64) -> bool {
        let Some(clock) = &self.services.manual_clock else {
            return false;
        };
        clock.set(now_ms);
        self.worker.wake();
        true
    }

    /// Runs one API call unless the instance was disposed; dispose waits for it.
    pub(crate) fn admit<R>(&self, call: impl FnOnce() -> R) -> Result<R, Disposed> {
        {
            let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
            // Checked under the lock dispose takes, so no call slips in after it.
            self.live()?;
            *calls += 1;
        }
        struct Done<'a>(&'a Instance);
        impl Drop for Done<'_> {
            fn drop(&mut self) {
                let mut calls = self.0.calls.lock().unwrap_or_else(|p| p.into_inner());
                *calls -= 1;
                self.0.calls_done.notify_all();
            }
        }
        let _done = Done(self);
        Ok(call())
    }

    /// Stops everything and waits for in-flight work. Blocking; idempotent.
    pub(crate) fn dispose(&self) {
        {
            let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner());
            self.disposed.store(true, Ordering::SeqCst);
            while *calls > 0 {
                calls = self
                    .calls_done
                    .wait(calls)
                    .unwrap_or_else(|p| p.into_inner());
            }
        }
        self.worker.shutdown(&self.services.engine);
        self.services.turn_settled.settle();
        // The task folders' watches hold inotify instances (a per-user
        // budget): released now, not when the JS object is collected.
        self.services.team_source.release();
        if self.queue_running {
            // A view of a queue that no longer runs would mislead `watch`.
            // Best effort: a leftover file names a pid that is gone.
            let _ = self.activity.remove();
        }
        // Release the onTeamChange and onLog callbacks so nothing of ours holds Node.
        self.services.team_changes.disconnect();
        self.services.log.disconnect();
        self.services.host.disconnect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcripts_come_from_the_claude_root_whatever_the_teams_path() {
        let paths = RootPaths::resolve(
            Some(PathBuf::from("/home/u/.claude")),
            Some(PathBuf::from("/data/agent-teams")),
            None,
        );
        assert_eq!(paths.projects, PathBuf::from("/home/u/.claude/projects"));
        assert_eq!(paths.teams_base, PathBuf::from("/data/agent-teams"));
        assert_eq!(paths.tasks_base, PathBuf::from("/home/u/.claude/tasks"));
    }

    #[test]
    fn a_turn_settled_member_of_a_team_being_deleted_is_refused_not_queued() {
        let root = tempfile::tempdir().unwrap();
        let paths = RootPaths::resolve(Some(root.path().to_path_buf()), None, None);
        let instance =
            Instance::start(paths, Some(1_000_000), false, None, Tuning::default()).unwrap();
        let engine = &instance.services.engine;
        let (forge, jack) = (
            TeamName::parse("forge").unwrap(),
            MemberName::parse("jack").unwrap(),
        );
        assert_eq!(QueueTurnSettled(engine).enqueue(&forge, &jack), Ok(()));
        assert_eq!(engine.diagnostics().queued, 1);
        engine.prepare_team_deletion(&forge, None).unwrap();
        // The fence drops the member: the drain must hear it (and count
        // the event `failed`, as for a reconcile that could not run).
        assert!(QueueTurnSettled(engine).enqueue(&forge, &jack).is_err());
        assert!(ReconcileTurnSettledNow(engine)
            .enqueue(&forge, &jack)
            .is_err());
        assert_eq!(engine.diagnostics().queued, 0);
    }

    #[test]
    fn tuning_queue_concurrency_caps_the_reconciles_handed_out() {
        // (configured concurrency, reconciles handed out of 4 due members)
        for (concurrency, handed_out) in [(None, 2), (Some(1), 1), (Some(3), 3)] {
            let root = tempfile::tempdir().unwrap();
            let paths = RootPaths::resolve(Some(root.path().to_path_buf()), None, None);
            let tuning = Tuning {
                queue_concurrency: concurrency,
                ..Tuning::default()
            };
            // Without auto start nothing takes work but this test.
            let instance = Instance::start(paths, Some(1_000_000), false, None, tuning).unwrap();
            let forge = TeamName::parse("forge").unwrap();
            instance.services.runtime.set(&forge, true, None);
            for name in ["a", "b", "c", "d"] {
                let member = MemberName::parse(name).unwrap();
                instance
                    .services
                    .engine
                    .enqueue(&forge, &member, Trigger::ManualRefresh);
            }
            instance.set_test_clock(1_000_000 + 60_000);
            let taken = instance.services.engine.take_due();
            assert_eq!(taken.len(), handed_out, "{concurrency:?}");
            // Not disposed: dispose would wait for the taken items to finish;
            // dropping shuts the runtime down without waiting.
        }
    }
}
