//! The constructor's options: their napi types, the checks only napi can
//! make (callbacks, the storage gateway; the others are
//! [`crate::runtime::options`]'s, every bad option throwing
//! `MWS_INVALID_ARGUMENT` naming it) and the instance they start.

use crate::domain::js_semantics::js_trim;
use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::{FromNapiValue, JsValue, Object, Unknown, ValueType};
use napi::Env;
use napi_derive::napi;

use super::callbacks::{Callback, JsCallback};
use super::job::JsFailure;
use super::{convert, storage_gateway, MemberWorkSync};
use crate::infrastructure::host_questions::waits::Waiting;
use crate::infrastructure::sqlite::OpenMode;
use crate::runtime::composition::{Instance, RootPaths, Storage, Tuning};
use crate::runtime::options::checked;

/// The `tuning` option: scheduler intervals, queue concurrency and how much
/// history is kept on disk.
// Declared for `index.d.ts`; the values are read from the checked JSON by
// `runtime::options`, so the fields napi fills in are never read.
#[napi(object, object_to_js = false)]
#[allow(dead_code)]
pub(super) struct MemberWorkSyncTuningOption {
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
pub(super) struct MemberWorkSyncStorageOption {
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
pub(super) struct MemberWorkSyncClockOption {
    /// Epoch milliseconds the clock starts at.
    pub now_ms: f64,
}

/// Constructor options.
#[napi(object, object_to_js = false)]
#[derive(Default)]
pub(super) struct MemberWorkSyncOptions {
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
    pub on_team_change: Option<JsCallback>,
    /// Receives every background failure nobody awaits (drains, dispatches,
    /// the spool watcher, queued reconciles and their retries, journal and
    /// metrics writes). Without it they are only counted, never printed.
    #[napi(ts_type = "(entry: MemberWorkSyncLogEntry) => void")]
    pub on_log: Option<JsCallback>,
    /// The app's control API URL: every delivered nudge ends with a line
    /// asking the member to pass it as `controlUrl` to both work sync tools.
    /// Blank means none; at most 2048 characters, no quotes or control characters.
    pub control_url: Option<String>,
    /// Scheduler intervals and queue concurrency; every field optional, the
    /// defaults are those of `autoStart`.
    #[allow(dead_code)]
    pub tuning: Option<MemberWorkSyncTuningOption>,
    /// Where the member-work-sync state is kept; default JSON files.
    pub storage: Option<MemberWorkSyncStorageOption>,
    /// Asked by the addon at decision time (the Electron entry's callbacks):
    /// gets `{ id, kind, input }` on the JS thread and answers through
    /// `settleHostQuestion(id, outcome)`. Only the `hostAnswers` kinds are
    /// asked; each wait is bounded by `hostTimeoutMs`.
    #[napi(ts_type = "(question: MemberWorkSyncHostQuestion) => void")]
    pub on_host_question: Option<JsCallback>,
    /// The questions `onHostQuestion` answers (option names such as
    /// `isTeamActive`, `canDispatchNudges`, `resolveControlUrl`).
    #[napi(ts_type = "MemberWorkSyncHostQuestionKind[]")]
    pub host_answers: Option<Vec<String>>,
    /// Longest wait for one host answer, in ms (integer, 10 to 120 000;
    /// default 5 000). A slow, throwing or never-settling callback costs at
    /// most this, is logged (`MWS_LOG_HOST_CALLBACK_*`) and its fallback used.
    pub host_timeout_ms: Option<f64>,
}

/// Checks `options` and starts the instance they describe (its background
/// worker, the `onLog`, `onHostQuestion` and `onTeamChange` callbacks); reads no files.
pub(super) fn start(env: &Env, options: Option<Unknown<'_>>) -> Result<MemberWorkSync, JsFailure> {
    let (options, tuning, app_storage) = parse_options(env, options)?;
    let options = options.unwrap_or_default();
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
        .map(|url| js_trim(&url).to_string())
        .filter(|url| !url.is_empty());
    let instance = Instance::start(
        paths,
        fixed_now,
        options.auto_start.unwrap_or(true),
        control_url,
        tuning,
    )
    .map_err(|e| JsFailure::io(format!("could not start the worker: {e}")))?;
    if let Some(callback) = options.on_log {
        instance.services.log.connect(Box::new(Callback(callback)));
    }
    let waiting = Arc::new(Waiting::default());
    if let Some(callback) = options.on_host_question {
        let answers = options.host_answers.unwrap_or_default();
        let timeout_ms = options.host_timeout_ms.map(|ms| ms as u64);
        let post = Box::new(Callback(callback));
        instance.ask_host(post, &answers, timeout_ms, waiting.clone());
    }
    if let Some(callback) = options.on_team_change {
        instance
            .services
            .team_changes
            .connect(Box::new(Callback(callback)));
    }
    Ok(MemberWorkSync {
        instance: Arc::new(instance),
        host_questions: waiting,
        storage_close,
    })
}

/// Checks the constructor options (types, finite clock) with the bounded
/// converter, then lets napi build the struct (the callback becomes a
/// threadsafe function). Bad options throw `MWS_INVALID_ARGUMENT`.
fn parse_options(env: &Env, options: Option<Unknown<'_>>) -> Result<ParsedOptions, JsFailure> {
    let Some(options) = options else {
        return Ok((None, Tuning::default(), None));
    };
    match options.get_type() {
        Ok(ValueType::Undefined | ValueType::Null) => return Ok((None, Tuning::default(), None)),
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
    let tuning = checked(&json)?;
    // SAFETY: `options` is a live object of this env (checked above).
    let object =
        unsafe { options.cast::<Object>() }.map_err(|e| JsFailure::invalid(e.reason.clone()))?;
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
        .map(|options| (Some(options), tuning, app_storage))
        .map_err(|e| {
            convert::clear_pending_exception(env);
            JsFailure::invalid(format!("options: {}", e.reason))
        })
}

/// The constructor options, their tuning, and the app's storage when
/// `storage.gateway` names it.
type ParsedOptions = (
    Option<MemberWorkSyncOptions>,
    Tuning,
    Option<(
        crate::infrastructure::sqlite::session::AppStorage,
        crate::infrastructure::sqlite::app_calls::StorageClose,
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
