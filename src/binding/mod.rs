//! The napi layer: converts JS values to use-case inputs and results back, maps
//! errors to stable codes. No rules live here.

mod args;
mod convert;
mod event_fields;
pub(crate) mod host;
pub(crate) mod job;
mod log;
mod storage_gateway;
pub mod turn_settled;

use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, FromNapiValue, JsValue, Object, Unknown, ValueType};
use napi::Env;
use napi_derive::napi;
use serde_json::Value;

use self::args::{
    typed, MemberWorkSyncExplainRequest, MemberWorkSyncMemberRequest, MemberWorkSyncStatusRequest,
    MemberWorkSyncTeamRequest, MemberWorkSyncTeamRuntimeState, ProofMissingArgs,
};
use self::job::{guard, ErrorCode, Job, JsFailure, JsonValue};
use crate::application::proof_missing::ProofMissingRequest;
use crate::application::reconcile::{member_name, team_name};
use crate::application::router::TeamChangeEvent;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::recovery::RecoveryTaskRef;
use crate::domain::retention::{bounds, Retention};
use crate::domain::time::{clock_from_js, format_iso, CLOCK_RANGE_MS};
use crate::infrastructure::composition::{Instance, RootPaths, Storage, Tuning};
use crate::infrastructure::safe_fs::{join_trailing, with_folder_syncs_trailing};
use crate::infrastructure::sqlite::OpenMode;
use crate::infrastructure::worker::ScheduleIntervals;

/// Longest `options.controlUrl` accepted.
const MAX_CONTROL_URL_CHARS: usize = 2048;
/// Bounds of `options.tuning.drainIntervalMs` and `dispatchIntervalMs` (100 ms to 24 h).
const INTERVAL_MS_BOUNDS: (u64, u64) = (100, 86_400_000);
/// Bounds of `options.tuning.queueConcurrency` (the worker's blocking pool has 8 threads).
const QUEUE_CONCURRENCY_BOUNDS: (u64, u64) = (1, 8);

/// The `tuning` option: scheduler intervals, queue concurrency and how much
/// history is kept on disk.
#[napi(object, object_to_js = false)]
pub struct MemberWorkSyncTuningOption {
    /// Turn-settled spool drain interval without watcher news, in ms
    /// (integer, 100 to 86 400 000; default 15 000).
    pub drain_interval_ms: Option<f64>,
    /// Nudge dispatch interval in ms (integer, 100 to 86 400 000; default 60 000).
    pub dispatch_interval_ms: Option<f64>,
    /// Queued reconciles running at once across all teams (integer, 1 to 8; default 2).
    pub queue_concurrency: Option<f64>,
    /// The app's `queueQuietWindowMs`: every trigger but a manual refresh
    /// (and the 30 s of a startup scan or spawned member) waits this long,
    /// and at most five times this (integer, 1 to 86 400 000; default: each
    /// trigger's own delay).
    pub queue_quiet_window_ms: Option<f64>,
    /// Size at which a member's `journal.jsonl` rotates, in bytes (integer,
    /// 65 536 to 5 242 880; default 5 242 880).
    pub journal_rotate_bytes: Option<f64>,
    /// Rotated journal generations kept (integer, 1 to 20; default 5).
    pub journal_rotations: Option<f64>,
    /// How long finished outbox items are kept, in ms (integer, 3 600 000 to
    /// 7 776 000 000; default 604 800 000, 7 days). Below 7 days, a member
    /// nudged about one agenda for longer than that is nudged again.
    pub outbox_finished_max_age_ms: Option<f64>,
    /// Finished outbox items kept per member (integer, 10 to 10 000; default 200).
    pub outbox_finished_max_items: Option<f64>,
    /// Processed turn-settled events kept (integer, 0 to 100 000; default 1 000).
    pub spool_processed_max_files: Option<f64>,
    /// How long processed turn-settled events are kept, in ms (integer, 0 to
    /// 2 592 000 000; default 86 400 000, 1 day).
    pub spool_processed_max_age_ms: Option<f64>,
    /// Invalid turn-settled events kept (integer, 0 to 100 000; default 100).
    pub spool_invalid_max_files: Option<f64>,
    /// How long invalid turn-settled events are kept, in ms (integer, 0 to
    /// 2 592 000 000; default 259 200 000, 3 days).
    pub spool_invalid_max_age_ms: Option<f64>,
}

/// The `storage` option: where statuses, report intents, the outbox and
/// metric events are kept. Without it, JSON files under each team's folder.
/// Either `sqlitePath` (direct mode) or `gateway` (gateway mode, its fields
/// declared in `api-types.d.ts`: a gateway is an object of methods, read by
/// `storage_gateway`, not converted here).
#[napi(object)]
pub struct MemberWorkSyncStorageOption {
    /// The app's SQLite database (`<userData>/storage/app.db`), opened by the
    /// addon itself at the first call. Only for a process where no other
    /// SQLite library has the file open (not the Electron process of the app,
    /// whose storage worker owns it: pass `gateway` there).
    pub sqlite_path: Option<String>,
    /// Open it read-only: nothing is written, not even the schema (default false).
    pub read_only: Option<bool>,
}

/// The fixed test clock option.
#[napi(object)]
pub struct MemberWorkSyncClockOption {
    /// Epoch milliseconds the clock starts at.
    pub now_ms: f64,
}

/// Constructor options.
#[napi(object, object_to_js = false)]
pub struct MemberWorkSyncOptions {
    /// Claude home; default `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub claude_root: Option<String>,
    /// Team dirs; default `<claudeRoot>/teams`.
    pub teams_base_path: Option<String>,
    /// Task dirs; default `<claudeRoot>/tasks`.
    pub tasks_base_path: Option<String>,
    /// Fixed test clock, moved with `setClockForTesting`.
    pub clock: Option<MemberWorkSyncClockOption>,
    /// Start the background work (default true): the reconcile queue driver,
    /// the turn-settled spool drain (every 15 s or `tuning.drainIntervalMs`,
    /// sooner when a watcher on the spool's `incoming/` sees a file) and the
    /// nudge dispatcher (every 60 s or `tuning.dispatchIntervalMs`).
    /// With `false` nothing runs on its own: queued work waits and
    /// `drainRuntimeTurnSettledEvents` reconciles resolved members at once.
    pub auto_start: Option<bool>,
    /// Receives the addon's team change events (e.g. `member-turn-settled`).
    #[napi(ts_type = "(event: TeamChangeEvent) => void")]
    pub on_team_change: Option<turn_settled::TeamChangeCallback>,
    /// Receives every background failure nobody awaits (drains, dispatches,
    /// the spool watcher, queued reconciles and their retries, journal and
    /// metrics writes). Without it they are only counted, never printed.
    #[napi(ts_type = "(entry: MemberWorkSyncLogEntry) => void")]
    pub on_log: Option<log::LogCallback>,
    /// The app's control API URL: every delivered nudge ends with a line
    /// asking the member to pass it as `controlUrl` to both work sync tools.
    /// Blank means none; at most 2048 characters, no quotes or control characters.
    pub control_url: Option<String>,
    /// Scheduler intervals and queue concurrency; every field optional, the
    /// defaults are those of `autoStart`.
    pub tuning: Option<MemberWorkSyncTuningOption>,
    /// Where the member-work-sync state is kept; default JSON files.
    pub storage: Option<MemberWorkSyncStorageOption>,
    /// Asked by the addon at decision time (the Electron entry's callbacks):
    /// gets `{ id, kind, input }` on the JS thread and answers through
    /// `settleHostQuestion(id, outcome)`. Only the `hostAnswers` kinds are
    /// asked; each wait is bounded by `hostTimeoutMs`.
    #[napi(ts_type = "(question: MemberWorkSyncHostQuestion) => void")]
    pub on_host_question: Option<host::HostQuestionCallback>,
    /// The questions `onHostQuestion` answers (option names such as
    /// `isTeamActive`, `canDispatchNudges`, `resolveControlUrl`).
    #[napi(ts_type = "MemberWorkSyncHostQuestionKind[]")]
    pub host_answers: Option<Vec<String>>,
    /// Longest wait for one host answer, in ms (integer, 10 to 120 000;
    /// default 5 000). A slow, throwing or never-settling callback costs at
    /// most this, is logged (`MWS_LOG_HOST_CALLBACK_*`) and its fallback used.
    pub host_timeout_ms: Option<f64>,
}

/// One addon instance over one Claude home.
#[napi]
pub struct MemberWorkSync {
    pub(crate) instance: Arc<Instance>,
    /// Host questions waiting for `settleHostQuestion`.
    host_questions: Arc<host::Waiting>,
    /// Ends the waits for the app's storage gateway (gateway mode).
    storage_close: Option<storage_gateway::StorageClose>,
}

#[napi]
impl MemberWorkSync {
    /// Creates an instance and starts its background worker; reads no files.
    #[napi(
        catch_unwind,
        constructor,
        ts_args_type = "options?: MemberWorkSyncOptions | undefined | null"
    )]
    pub fn new(env: Env, options: Option<Unknown<'_>>) -> Result<Self, napi::Error<ErrorCode>> {
        guard("constructor", || {
            let (options, app_storage) =
                parse_options(&env, options).map_err(JsFailure::into_napi)?;
            let options = options.unwrap_or(MemberWorkSyncOptions {
                claude_root: None,
                teams_base_path: None,
                tasks_base_path: None,
                clock: None,
                auto_start: None,
                on_team_change: None,
                on_log: None,
                control_url: None,
                tuning: None,
                storage: None,
                on_host_question: None,
                host_answers: None,
                host_timeout_ms: None,
            });
            let tuning = tuning(options.tuning.as_ref());
            let mut paths = RootPaths::resolve(
                options.claude_root.map(PathBuf::from),
                options.teams_base_path.map(PathBuf::from),
                options.tasks_base_path.map(PathBuf::from),
            );
            let storage_close = app_storage.as_ref().map(|(_, close)| close.clone());
            if let Some((app, _)) = app_storage {
                paths.storage = Storage::Gateway(app);
            } else if let Some(storage) = options.storage {
                paths.storage = Storage::Sqlite {
                    path: PathBuf::from(storage.sqlite_path.unwrap_or_default()),
                    mode: if storage.read_only.unwrap_or(false) {
                        OpenMode::ReadOnly
                    } else {
                        OpenMode::ReadWrite
                    },
                };
            }
            let fixed_now = options.clock.map(|c| c.now_ms as i64);
            let control_url = options
                .control_url
                .map(|url| url.trim().to_string())
                .filter(|url| !url.is_empty());
            let instance = Instance::start(
                paths,
                fixed_now,
                options.auto_start.unwrap_or(true),
                control_url,
                tuning,
            )
            .map_err(|e| {
                JsFailure {
                    code: ErrorCode::Io,
                    message: format!("could not start the worker: {e}"),
                }
                .into_napi()
            })?;
            if let Some(callback) = options.on_log {
                instance
                    .services
                    .log
                    .connect(Box::new(log::JsLogSink(callback)));
            }
            let waiting = Arc::new(host::Waiting::default());
            if let Some(callback) = options.on_host_question {
                let answers = options
                    .host_answers
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|name| host::QuestionKind::parse(name))
                    .collect();
                let timeout = std::time::Duration::from_millis(
                    options
                        .host_timeout_ms
                        .map_or(host::DEFAULT_TIMEOUT_MS, |ms| ms as u64),
                );
                let log = instance.services.log.clone();
                instance.services.host.connect(Box::new(host::JsHost::new(
                    callback,
                    answers,
                    timeout,
                    waiting.clone(),
                    log,
                )));
            }
            if let Some(callback) = options.on_team_change {
                instance
                    .services
                    .team_changes
                    .connect(Box::new(turn_settled::JsTeamChangeSink(callback)));
            }
            Ok(Self {
                instance: Arc::new(instance),
                host_questions: waiting,
                storage_close,
            })
        })
    }

    /// Runs `work` off the JS thread unless the instance was disposed.
    fn job(
        &self,
        work: impl FnOnce(&Instance) -> Result<Value, JsFailure> + Send + 'static,
    ) -> AsyncTask<Job> {
        let instance = self.instance.clone();
        AsyncTask::new(Job::new(move || instance.admit(|| work(&instance))?))
    }

    /// [`MemberWorkSync::job`] for a `Promise<void>` method: resolves `undefined`.
    fn unit_job(
        &self,
        work: impl FnOnce(&Instance) -> Result<(), JsFailure> + Send + 'static,
    ) -> AsyncTask<Job> {
        let instance = self.instance.clone();
        AsyncTask::new(Job::unit(move || instance.admit(|| work(&instance))?))
    }

    fn live(&self) -> Result<(), napi::Error<ErrorCode>> {
        self.instance
            .live()
            .map_err(|e| JsFailure::from(e).into_napi())
    }

    /// The stored status of a member; stale ones are refreshed.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncStatusRequest",
        ts_return_type = "Promise<MemberWorkSyncStatus>"
    )]
    pub fn get_status(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let request: MemberWorkSyncStatusRequest = typed(request?, "request")?;
            let team = team_name_arg(&request.team_name)?;
            let member = member_name(&request.member_name)?;
            let force_nudge = request.force_nudge == Some(true);
            to_json(i.services.engine.get_status(&team, &member, force_nudge)?)
        })
    }

    /// Reconciles a member now and persists the result.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncMemberRequest",
        ts_return_type = "Promise<MemberWorkSyncStatus>"
    )]
    pub fn refresh_status(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let (team, member) = member_request(request?)?;
            // The status, the metrics index and (when a nudge is planned)
            // the member outbox and outbox index are each synced before
            // their renames; their folders are synced once each, together,
            // after the answer (trailing), and before any later durable
            // rename of this process and at dispose. Each file is old or new
            // after any crash, and every mix a power cut can leave is one
            // the readers take: metrics ahead of the status count an
            // evaluation that happened (the next reconcile records its
            // own); an outbox item ahead of the status is revalidated
            // against the stored status by the dispatcher
            // (`status_no_longer_matches_outbox`) and planned again by the
            // next reconcile; the outbox index is a view rebuilt from the
            // outboxes. A status the caller saw and a power cut undid is
            // the old whole file, which the level-triggered reconciler
            // brings up to date at its next pass; nothing written after it
            // (a delivery of the nudge planned here, the next status) can
            // be durable before it, since every durable write joins the
            // trailing syncs first.
            let status =
                with_folder_syncs_trailing(|| i.services.engine.refresh_status(&team, &member))?;
            to_json(status)
        })
    }

    /// The status a reconcile would produce now, without any side effect:
    /// nothing under the roots is written, moved or created, no journal line
    /// or metric event is recorded and no report token is issued
    /// (`reportToken` is absent). Nudge suppression is not applied.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncMemberRequest",
        ts_return_type = "Promise<MemberWorkSyncStatus>"
    )]
    pub fn preview_status(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let (team, member) = member_request(request?)?;
            to_json(i.services.engine.preview_status(&team, &member)?)
        })
    }

    /// `previewStatus` of every roster member of a team, plus whether the
    /// team's `config.json` was usable and what the team reader degraded
    /// (`team_config_invalid`, ...). Side-effect free like `previewStatus`.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncTeamRequest",
        ts_return_type = "Promise<MemberWorkSyncTeamPreview>"
    )]
    pub fn preview_team(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let team = team_request(request?)?;
            to_json(i.services.engine.preview_team(&team)?)
        })
    }

    /// Reconciles every active roster member of a team from one snapshot.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncTeamRequest",
        ts_return_type = "Promise<MemberWorkSyncStatus[]>"
    )]
    pub fn refresh_team(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let team = team_request(request?)?;
            to_json(i.services.engine.refresh_team(&team)?)
        })
    }

    /// Validates a member's report against its current agenda and records the outcome.
    /// Rejections resolve with `accepted: false` and a code; they are not errors.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncReportRequest",
        ts_return_type = "Promise<MemberWorkSyncReportResult>"
    )]
    pub fn report(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let request = request?;
            let result = i.services.engine.report(&request)?;
            Ok(serde_json::json!({
                "accepted": result.accepted,
                "code": result.code,
                "message": result.message,
                "status": to_json(result.status)?,
            }))
        })
    }

    /// Schedules a targeted recovery nudge for a message whose delivery proof
    /// (a visible reply or task progress) is missing. Blank ids or no usable
    /// task ref resolve `invalid`; a live outbox item of the same intent
    /// (`proof-missing:<originalMessageId>`) updated in the last 10 minutes
    /// resolves `coalesced_recent`; otherwise a `proof_missing_recovery`
    /// reconcile is queued and the result is `scheduled`.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncProofMissingRecoveryScheduleRequest",
        ts_return_type = "Promise<MemberWorkSyncProofMissingRecoveryScheduleResult>"
    )]
    pub fn schedule_proof_missing_recovery(
        &self,
        env: Env,
        request: Unknown<'_>,
    ) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let request = proof_missing_request(request?)?;
            to_json(i.services.engine.schedule_proof_missing_recovery(request)?)
        })
    }

    /// One member's timeline, oldest first, merged from its journal (and the
    /// newest rotation), outbox and stored status, each entry with a short
    /// sentence. Reads only: nothing under the roots is written, moved,
    /// locked or created. `sinceMs` (epoch ms) keeps entries at or after it.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncExplainRequest",
        ts_return_type = "Promise<MemberWorkSyncExplanation>"
    )]
    pub fn explain(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let request: MemberWorkSyncExplainRequest = typed(request?, "request")?;
            let team = team_name_arg(&request.team_name)?;
            let member = member_name(&request.member_name)?;
            // JSON numbers are finite (the converter turns NaN and ±Infinity into null).
            let since_ms = request.since_ms.map(|ms| ms as i64);
            to_json(i.services.explainer.explain(&team, &member, since_ms)?)
        })
    }

    /// Counts, state counts and phase-2 readiness of a team.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncTeamRequest",
        ts_return_type = "Promise<MemberWorkSyncTeamMetrics>"
    )]
    pub fn get_metrics(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let team = team_request(request?)?;
            to_json(i.services.engine.get_metrics(&team)?)
        })
    }

    /// `getMetrics` without side effects: a corrupt metrics index reads as
    /// empty and is left where it is, not moved aside. For read-only views.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncTeamRequest",
        ts_return_type = "Promise<MemberWorkSyncTeamMetrics>"
    )]
    pub fn preview_metrics(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let team = team_request(request?)?;
            to_json(i.services.engine.preview_metrics(&team)?)
        })
    }

    /// Validates pending report intents (member files and the controller's legacy file).
    #[napi(
        catch_unwind,
        ts_args_type = "teamNames: string[]",
        ts_return_type = "Promise<{ processed: number; accepted: number; rejected: number; superseded: number }>"
    )]
    pub fn replay_pending_reports(&self, env: Env, team_names: Unknown<'_>) -> AsyncTask<Job> {
        let team_names = convert::json_argument(&env, team_names, "team_names");
        self.job(move |i| {
            let teams = team_list(team_names?)?;
            to_json(i.services.engine.replay_pending_reports(&teams)?)
        })
    }

    /// The compact agenda block for a member's task briefing (see README "Agent brief").
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncMemberRequest",
        ts_return_type = "Promise<MemberWorkSyncAgentBrief>"
    )]
    pub fn get_agent_brief(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        let request = convert::json_argument(&env, request, "request");
        self.job(move |i| {
            let (team, member) = member_request(request?)?;
            Ok(i.services.engine.agent_brief(&team, &member)?)
        })
    }

    /// Notes a team change; returns at once and never throws, whatever the input
    /// (a no-op after dispose). Routing and reconciles happen in the background.
    /// A `member-turn-settled` event this instance emitted through
    /// `onTeamChange` (same `sourceId`) is ignored when it comes back here:
    /// the drain has already queued its member.
    #[napi(catch_unwind, ts_args_type = "event: TeamChangeEvent")]
    pub fn note_team_change(&self, env: Env, event: Unknown<'_>) {
        // A fault is dropped like any malformed event: this method never throws.
        let _ = guard("noteTeamChange", || {
            self.forward_team_change(&env, event);
            Ok::<(), JsFailure>(())
        });
    }

    /// [`MemberWorkSync::note_team_change`]: reads the event's string fields
    /// and hands them to the worker's intake.
    fn forward_team_change(&self, env: &Env, event: Unknown<'_>) {
        if self.instance.live().is_err() || !matches!(event.get_type(), Ok(ValueType::Object)) {
            return;
        }
        // SAFETY: the value was just checked to be an object.
        let Ok(object) = (unsafe { event.cast::<Object>() }) else {
            return;
        };
        // Read only the named string fields: never walk the object (it may be
        // cyclic, huge or a throwing proxy).
        let Some(fields) = event_fields::read(env, object.raw()) else {
            convert::clear_pending_exception(env);
            return;
        };
        let (Some(kind), Some(team_name)) = (fields.kind, fields.team_name) else {
            return;
        };
        self.instance.worker().note(TeamChangeEvent {
            kind,
            team_name,
            run_id: fields.run_id,
            detail: fields.detail,
            task_id: fields.task_id,
        });
    }

    /// Records the supervisor's view of a team; a team never reported counts as
    /// active. Going inactive drops the team's queued work.
    #[napi(
        catch_unwind,
        ts_args_type = "teamName: string, state: MemberWorkSyncTeamRuntimeState"
    )]
    pub fn set_team_runtime_state(
        &self,
        env: Env,
        team_name: Unknown<'_>,
        state: Unknown<'_>,
    ) -> Result<(), napi::Error<ErrorCode>> {
        guard("setTeamRuntimeState", || {
            self.live()?;
            let team_name = convert::json_argument(&env, team_name, "teamName")
                .map_err(JsFailure::into_napi)?;
            let state =
                convert::json_argument(&env, state, "state").map_err(JsFailure::into_napi)?;
            let team = typed::<String>(team_name, "teamName")
                .and_then(|team| team_name_arg(&team))
                .map_err(JsFailure::into_napi)?;
            let state: MemberWorkSyncTeamRuntimeState =
                typed(state, "state").map_err(JsFailure::into_napi)?;
            self.instance.services.engine.set_team_runtime_state(
                &team,
                state.active,
                state.active_members,
            );
            Ok(())
        })
    }

    /// Queues every active member of the teams (`startup_scan`, 30 s delay).
    #[napi(
        catch_unwind,
        ts_args_type = "teamNames: string[]",
        ts_return_type = "Promise<void>"
    )]
    pub fn enqueue_startup_scan(&self, env: Env, team_names: Unknown<'_>) -> AsyncTask<Job> {
        let team_names = convert::json_argument(&env, team_names, "team_names");
        self.unit_job(move |i| {
            let teams = team_list(team_names?)?;
            i.services.engine.enqueue_startup_scan(&teams);
            Ok(())
        })
    }

    /// Counters and waiting items of the reconcile queue.
    #[napi(catch_unwind, ts_return_type = "MemberWorkSyncQueueDiagnostics")]
    pub fn get_queue_diagnostics(&self) -> Result<JsonValue, napi::Error<ErrorCode>> {
        guard("getQueueDiagnostics", || {
            self.live()?;
            to_json(self.instance.services.engine.diagnostics())
                .map(JsonValue)
                .map_err(JsFailure::into_napi)
        })
    }

    /// Drops the team's queued work, fences new work, waits for running
    /// reconciles, then purges the team's SQLite rows and team files (with
    /// `storage`; JSON files are kept). `deletionIdentityId` (the app's id of
    /// this deletion, `config.json._backupIdentityId`) must be a string when
    /// given; it fences the purge marker's generation.
    #[napi(
        catch_unwind,
        ts_args_type = "teamName: string, deletionIdentityId?: string | undefined | null",
        ts_return_type = "Promise<void>"
    )]
    pub fn prepare_team_deletion(
        &self,
        env: Env,
        team_name: Unknown<'_>,
        deletion_identity_id: Option<Unknown<'_>>,
    ) -> AsyncTask<Job> {
        let team_name = convert::json_argument(&env, team_name, "team_name");
        let deletion_identity_id = deletion_identity_id
            .map(|id| convert::json_argument(&env, id, "deletionIdentityId"))
            .transpose();
        self.unit_job(move |i| {
            let team = typed::<String>(team_name?, "teamName")?;
            let deletion_id = match deletion_identity_id? {
                Some(id) => typed::<Option<String>>(id, "deletionIdentityId")?,
                None => None,
            };
            Ok(i.services
                .engine
                .prepare_team_deletion(&team_name_arg(&team)?, deletion_id.as_deref())?)
        })
    }

    /// Forgets the in-memory state of a deleted team.
    #[napi(catch_unwind, ts_args_type = "teamName: string")]
    pub fn complete_team_deletion(
        &self,
        env: Env,
        team_name: Unknown<'_>,
    ) -> Result<(), napi::Error<ErrorCode>> {
        guard("completeTeamDeletion", || {
            self.live()?;
            let team_name = convert::json_argument(&env, team_name, "team_name")
                .map_err(JsFailure::into_napi)?;
            let team = typed::<String>(team_name, "teamName")
                .and_then(|team| team_name_arg(&team))
                .map_err(JsFailure::into_napi)?;
            self.instance
                .services
                .engine
                .complete_team_deletion(&team)
                .map_err(|e| JsFailure::from(e).into_napi())
        })
    }

    /// Undoes `prepareTeamDeletion` and re-scans the team.
    #[napi(catch_unwind, ts_args_type = "teamName: string")]
    pub fn resume_team(
        &self,
        env: Env,
        team_name: Unknown<'_>,
    ) -> Result<(), napi::Error<ErrorCode>> {
        guard("resumeTeam", || {
            self.live()?;
            let team_name = convert::json_argument(&env, team_name, "team_name")
                .map_err(JsFailure::into_napi)?;
            let team = typed::<String>(team_name, "teamName")
                .and_then(|team| team_name_arg(&team))
                .map_err(JsFailure::into_napi)?;
            self.instance.resume_team(&team);
            Ok(())
        })
    }

    /// Claims, revalidates and delivers due nudges of the teams (phase 2).
    /// `failed` counts member outboxes that could not be read or claimed from
    /// and claimed items whose outcome could not be written; rejects with
    /// `MWS_IO` (naming the path) when a team cannot be dispatched at all.
    #[napi(
        catch_unwind,
        ts_args_type = "teamNames: string[]",
        ts_return_type = "Promise<{ claimed: number; delivered: number; superseded: number; retryable: number; terminal: number; failed: number }>"
    )]
    pub fn dispatch_due_nudges(&self, env: Env, team_names: Unknown<'_>) -> AsyncTask<Job> {
        let team_names = convert::json_argument(&env, team_names, "team_names");
        self.job(move |i| {
            let teams = team_list(team_names?)?;
            let claimed_by = format!("member-work-sync:{}", std::process::id());
            to_json(i.services.engine.dispatch_due_nudges(&teams, &claimed_by)?)
        })
    }

    /// Stops timers, watchers and workers and waits for in-flight work.
    /// Idempotent; later calls reject with `MWS_DISPOSED`.
    #[napi(catch_unwind, ts_return_type = "Promise<void>")]
    pub fn dispose(&self) -> AsyncTask<Job> {
        // No host answer is waited for from now on: dispose is never held
        // by a callback that does not settle.
        self.host_questions.close();
        if let Some(close) = &self.storage_close {
            close.close();
        }
        let instance = self.instance.clone();
        AsyncTask::new(Job::unit(move || {
            instance.dispose();
            // The folder syncs that trail answered requests, before dispose
            // resolves.
            join_trailing().map_err(crate::application::reconcile::WorkSyncError::from)?;
            Ok(())
        }))
    }

    /// Answers host question `id` (from `onHostQuestion`): `{ ok: true,
    /// value }` or `{ ok: false, error }`. An id no longer waited for (its
    /// wait ended) is ignored; never throws for one.
    #[napi(
        catch_unwind,
        ts_args_type = "id: number, outcome: { ok: true; value?: unknown } | { ok: false; error: string }"
    )]
    pub fn settle_host_question(
        &self,
        env: Env,
        id: f64,
        outcome: Unknown<'_>,
    ) -> Result<(), napi::Error<ErrorCode>> {
        guard("settleHostQuestion", || {
            let outcome =
                convert::json_argument(&env, outcome, "outcome").map_err(JsFailure::into_napi)?;
            let settled = match (outcome.get("ok"), outcome.get("error")) {
                (Some(Value::Bool(true)), _) => {
                    Ok(outcome.get("value").cloned().unwrap_or(Value::Null))
                }
                (Some(Value::Bool(false)), error) => Err(match error {
                    Some(Value::String(error)) => error.clone(),
                    _ => "callback failed".to_string(),
                }),
                _ => {
                    return Err(JsFailure::invalid(
                        "outcome must be { ok: true, value? } or { ok: false, error }",
                    )
                    .into_napi())
                }
            };
            if id.is_finite() && id >= 0.0 {
                self.host_questions.settle(id as u64, settled);
            }
            Ok(())
        })
    }

    /// Moves the fixed test clock; only when the instance was built with `options.clock`.
    /// A `nowMs` that is not a finite number, or lies outside 1970-01-01 up to
    /// 9999-01-01 (what the addon stores as ISO-8601 text), throws
    /// `MWS_INVALID_ARGUMENT` naming `nowMs`.
    #[napi(catch_unwind, ts_args_type = "nowMs: number")]
    pub fn set_clock_for_testing(
        &self,
        env: Env,
        now_ms: Unknown<'_>,
    ) -> Result<(), napi::Error<ErrorCode>> {
        guard("setClockForTesting", || {
            self.live()?;
            // JSON numbers are finite: NaN and ±Infinity arrive as null and are refused.
            let now_ms = convert::json_argument(&env, now_ms, "nowMs")
                .and_then(|now_ms| typed::<f64>(now_ms, "nowMs"))
                .and_then(|now_ms| clock_ms(now_ms, "nowMs"))
                .map_err(JsFailure::into_napi)?;
            if self.instance.set_test_clock(now_ms) {
                Ok(())
            } else {
                Err(JsFailure::invalid("setClockForTesting needs options.clock").into_napi())
            }
        })
    }
}

/// A test clock the addon can represent ([`CLOCK_RANGE_MS`]), or
/// `MWS_INVALID_ARGUMENT` naming `field` and the range.
fn clock_ms(now_ms: f64, field: &str) -> Result<i64, JsFailure> {
    clock_from_js(now_ms).ok_or_else(|| {
        JsFailure::invalid(format!(
            "{field} must be epoch milliseconds from {} ({}) up to {} ({}), got {now_ms}",
            CLOCK_RANGE_MS.start,
            format_iso(CLOCK_RANGE_MS.start),
            CLOCK_RANGE_MS.end - 1,
            format_iso(CLOCK_RANGE_MS.end - 1),
        ))
    })
}

/// Checks the constructor options (types, finite clock) with the bounded
/// converter, then lets napi build the struct (the callback becomes a
/// threadsafe function). Bad options throw `MWS_INVALID_ARGUMENT`.
fn parse_options(env: &Env, options: Option<Unknown<'_>>) -> Result<ParsedOptions, JsFailure> {
    let Some(options) = options else {
        return Ok((None, None));
    };
    match options.get_type() {
        Ok(ValueType::Undefined | ValueType::Null) => return Ok((None, None)),
        Ok(ValueType::Object) => {}
        _ => return Err(JsFailure::invalid("options must be an object")),
    }
    // SAFETY: napi just reported an object of this env.
    let object =
        unsafe { options.cast::<Object>() }.map_err(|e| JsFailure::invalid(e.reason.clone()))?;
    // A gateway is an object of methods (and of the app's internals), not
    // data: it is read on its own, and the rest of the options without it.
    let app_storage = storage_gateway::parse(env, &object)?;
    let options = match app_storage {
        Some(_) => without_key(env, &object, "storage")?,
        None => options,
    };
    let json = convert::json_argument(env, options, "options")?;
    match json.get("controlUrl") {
        None | Some(Value::Null) => {}
        Some(Value::String(url))
            if url.chars().count() <= MAX_CONTROL_URL_CHARS
                && !url.chars().any(|c| c == '"' || c.is_control()) => {}
        Some(_) => {
            return Err(JsFailure::invalid(format!(
                "options.controlUrl must be a string of at most {MAX_CONTROL_URL_CHARS} \
                 characters without quotes or control characters"
            )))
        }
    }
    check_tuning(json.get("tuning"))?;
    check_storage(json.get("storage"))?;
    for key in ["claudeRoot", "teamsBasePath", "tasksBasePath"] {
        if !matches!(
            json.get(key),
            None | Some(Value::Null) | Some(Value::String(_))
        ) {
            return Err(JsFailure::invalid(format!(
                "options.{key} must be a string"
            )));
        }
    }
    if !matches!(
        json.get("autoStart"),
        None | Some(Value::Null) | Some(Value::Bool(_))
    ) {
        return Err(JsFailure::invalid("options.autoStart must be a boolean"));
    }
    match json.get("clock") {
        None | Some(Value::Null) => {}
        Some(clock) => match clock.get("nowMs").and_then(Value::as_f64) {
            Some(now_ms) => {
                clock_ms(now_ms, "options.clock.nowMs")?;
            }
            None => {
                return Err(JsFailure::invalid(
                    "options.clock must be { nowMs: <finite number> }",
                ))
            }
        },
    }
    // SAFETY: `options` is a live object of this env (checked above).
    let object =
        unsafe { options.cast::<Object>() }.map_err(|e| JsFailure::invalid(e.reason.clone()))?;
    check_host_options(&json)?;
    for key in ["onTeamChange", "onLog", "onHostQuestion"] {
        match object.get::<Unknown>(key) {
            Ok(None) => {}
            Ok(Some(callback))
                if matches!(
                    callback.get_type(),
                    Ok(ValueType::Function | ValueType::Undefined | ValueType::Null)
                ) => {}
            _ => {
                convert::clear_pending_exception(env);
                return Err(JsFailure::invalid(format!(
                    "options.{key} must be a function"
                )));
            }
        }
    }
    // SAFETY: plain conversion of a checked object on the JS thread.
    unsafe { <MemberWorkSyncOptions as FromNapiValue>::from_napi_value(env.raw(), options.raw()) }
        .map(|options| (Some(options), app_storage))
        .map_err(|e| {
            convert::clear_pending_exception(env);
            JsFailure::invalid(format!("options: {}", e.reason))
        })
}

/// The constructor options, and the app's storage when `storage.gateway` names it.
type ParsedOptions = (
    Option<MemberWorkSyncOptions>,
    Option<(
        crate::infrastructure::sqlite::session::AppStorage,
        storage_gateway::StorageClose,
    )>,
);

/// A shallow copy of `object` without `key` (the caller's object is left as it is).
fn without_key<'env>(
    env: &'env Env,
    object: &Object<'_>,
    key: &str,
) -> Result<Unknown<'env>, JsFailure> {
    let failed = |e: napi::Error| {
        convert::clear_pending_exception(env);
        JsFailure::invalid(format!("options: {}", e.reason))
    };
    let mut copy = Object::new(env).map_err(failed)?;
    for name in Object::keys(object).map_err(failed)? {
        if name != key {
            if let Some(value) = object.get::<Unknown>(&name).map_err(failed)? {
                copy.set(&name, value).map_err(failed)?;
            }
        }
    }
    Ok(copy.to_unknown())
}

/// `hostAnswers` names known questions; `hostTimeoutMs` is an integer in bounds.
fn check_host_options(json: &Value) -> Result<(), JsFailure> {
    match json.get("hostAnswers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(names)) => {
            for name in names {
                if name.as_str().and_then(host::QuestionKind::parse).is_none() {
                    return Err(JsFailure::invalid(format!(
                        "options.hostAnswers: unknown question {name}"
                    )));
                }
            }
        }
        Some(_) => return Err(JsFailure::invalid("options.hostAnswers must be an array")),
    }
    match json.get("hostTimeoutMs") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Number(ms))
            if ms.as_f64().is_some_and(|ms| {
                ms.fract() == 0.0
                    && ms >= host::TIMEOUT_MS_BOUNDS.0 as f64
                    && ms <= host::TIMEOUT_MS_BOUNDS.1 as f64
            }) =>
        {
            Ok(())
        }
        Some(_) => Err(JsFailure::invalid(format!(
            "options.hostTimeoutMs must be an integer from {} to {}",
            host::TIMEOUT_MS_BOUNDS.0,
            host::TIMEOUT_MS_BOUNDS.1
        ))),
    }
}

/// The `scheduleProofMissingRecovery` request: the three ids are strings,
/// `taskRefs` an optional array of `{taskId, displayId?, teamName?}`, `reason`
/// an optional string. Blank ids are not refused here: the use case answers
/// them with an `invalid` result.
fn proof_missing_request(request: Value) -> Result<ProofMissingRequest, JsFailure> {
    let request: ProofMissingArgs = typed(request, "request")?;
    Ok(ProofMissingRequest {
        team_name: request.team_name,
        member_name: request.member_name,
        original_message_id: request.original_message_id,
        task_refs: request
            .task_refs
            .unwrap_or_default()
            .into_iter()
            .map(|r| RecoveryTaskRef {
                task_id: r.task_id,
                display_id: r.display_id,
                team_name: r.team_name,
            })
            .collect(),
        reason: request.reason,
    })
}

/// The checked names of a [`MemberWorkSyncMemberRequest`], the team's first.
fn member_request(request: Value) -> Result<(TeamName, MemberName), JsFailure> {
    let request: MemberWorkSyncMemberRequest = typed(request, "request")?;
    Ok((
        team_name_arg(&request.team_name)?,
        member_name(&request.member_name)?,
    ))
}

/// The checked team of a [`MemberWorkSyncTeamRequest`].
fn team_request(request: Value) -> Result<TeamName, JsFailure> {
    team_name_arg(&typed::<MemberWorkSyncTeamRequest>(request, "request")?.team_name)
}

/// A checked team name (`MWS_INVALID_ARGUMENT`: `invalid teamName: ...`).
fn team_name_arg(name: &str) -> Result<TeamName, JsFailure> {
    Ok(team_name(name)?)
}

/// A `teamNames` array: strings first, then every name checked, in order.
fn team_list(value: Value) -> Result<Vec<TeamName>, JsFailure> {
    typed::<Vec<String>>(value, "teamNames")?
        .iter()
        .map(|team| team_name_arg(team))
        .collect()
}

pub(crate) fn to_json(value: impl serde::Serialize) -> Result<Value, JsFailure> {
    serde_json::to_value(value).map_err(|e| JsFailure {
        code: ErrorCode::Io,
        message: format!("could not encode result: {e}"),
    })
}

/// Checks `options.storage` without a gateway (`storage_gateway` reads
/// that one): `{ sqlitePath: <non-empty string>, readOnly?: boolean }`.
fn check_storage(storage: Option<&Value>) -> Result<(), JsFailure> {
    let fields = match storage {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Object(fields)) => fields,
        Some(_) => return Err(JsFailure::invalid("options.storage must be an object")),
    };
    if let Some(key) = fields
        .keys()
        .find(|key| !matches!(key.as_str(), "sqlitePath" | "readOnly"))
    {
        return Err(JsFailure::invalid(format!(
            "options.storage.{key} is not an option (sqlitePath, readOnly; or gateway, selector, callTimeoutMs)"
        )));
    }
    match fields.get("sqlitePath") {
        Some(Value::String(path)) if !path.trim().is_empty() => {}
        _ => {
            return Err(JsFailure::invalid(
                "options.storage.sqlitePath must be a non-empty string",
            ))
        }
    }
    if !matches!(
        fields.get("readOnly"),
        None | Some(Value::Null) | Some(Value::Bool(_))
    ) {
        return Err(JsFailure::invalid(
            "options.storage.readOnly must be a boolean",
        ));
    }
    Ok(())
}

/// Checks `options.tuning` before napi converts it: an object whose fields are
/// absent (`undefined`) or integers within their bounds. `null` is refused
/// here with the option's name, as napi's conversion would refuse it anyway.
fn check_tuning(tuning: Option<&Value>) -> Result<(), JsFailure> {
    let fields = match tuning {
        None => return Ok(()),
        Some(Value::Object(fields)) => fields,
        Some(_) => return Err(JsFailure::invalid("options.tuning must be an object")),
    };
    for (key, (min, max)) in [
        ("drainIntervalMs", INTERVAL_MS_BOUNDS),
        ("dispatchIntervalMs", INTERVAL_MS_BOUNDS),
        ("queueConcurrency", QUEUE_CONCURRENCY_BOUNDS),
        ("queueQuietWindowMs", (1, INTERVAL_MS_BOUNDS.1)),
        ("journalRotateBytes", bounds::JOURNAL_ROTATE_BYTES),
        ("journalRotations", bounds::JOURNAL_ROTATIONS),
        ("outboxFinishedMaxAgeMs", bounds::OUTBOX_FINISHED_MAX_AGE_MS),
        ("outboxFinishedMaxItems", bounds::OUTBOX_FINISHED_MAX_ITEMS),
        ("spoolProcessedMaxFiles", bounds::SPOOL_MAX_FILES),
        ("spoolProcessedMaxAgeMs", bounds::SPOOL_MAX_AGE_MS),
        ("spoolInvalidMaxFiles", bounds::SPOOL_MAX_FILES),
        ("spoolInvalidMaxAgeMs", bounds::SPOOL_MAX_AGE_MS),
    ] {
        match fields.get(key) {
            None => {}
            // JS numbers arrive as f64: an integer is one without a fraction.
            Some(Value::Number(n))
                if n.as_f64().is_some_and(|n| {
                    n.fract() == 0.0 && (min as f64..=max as f64).contains(&n)
                }) => {}
            Some(_) => {
                return Err(JsFailure::invalid(format!(
                    "options.tuning.{key} must be an integer from {min} to {max}"
                )))
            }
        }
    }
    Ok(())
}

/// The instance's [`Tuning`] from a checked `options.tuning` (see [`check_tuning`]).
fn tuning(option: Option<&MemberWorkSyncTuningOption>) -> Tuning {
    let Some(option) = option else {
        return Tuning::default();
    };
    let defaults = ScheduleIntervals::default();
    let millis = |ms: Option<f64>| ms.map(|ms| std::time::Duration::from_millis(ms as u64));
    Tuning {
        intervals: ScheduleIntervals {
            drain_every: millis(option.drain_interval_ms).unwrap_or(defaults.drain_every),
            dispatch_every: millis(option.dispatch_interval_ms).unwrap_or(defaults.dispatch_every),
        },
        queue_concurrency: option.queue_concurrency.map(|n| n as usize),
        queue_quiet_window_ms: option.queue_quiet_window_ms.map(|ms| ms as i64),
        retention: retention(option),
    }
}

/// The retention part of a checked `options.tuning`; absent fields keep
/// their defaults. The casts are exact: every field is a checked integer.
fn retention(option: &MemberWorkSyncTuningOption) -> Retention {
    let mut retention = Retention::default();
    if let Some(bytes) = option.journal_rotate_bytes {
        retention.journal_rotate_bytes = bytes as u64;
    }
    if let Some(n) = option.journal_rotations {
        retention.journal_rotations = n as u32;
    }
    if let Some(ms) = option.outbox_finished_max_age_ms {
        retention.outbox_finished_max_age_ms = ms as i64;
    }
    if let Some(n) = option.outbox_finished_max_items {
        retention.outbox_finished_max_items = n as usize;
    }
    if let Some(n) = option.spool_processed_max_files {
        retention.spool_processed_max_files = n as usize;
    }
    if let Some(ms) = option.spool_processed_max_age_ms {
        retention.spool_processed_max_age_ms = ms as i64;
    }
    if let Some(n) = option.spool_invalid_max_files {
        retention.spool_invalid_max_files = n as usize;
    }
    if let Some(ms) = option.spool_invalid_max_age_ms {
        retention.spool_invalid_max_age_ms = ms as i64;
    }
    retention
}
