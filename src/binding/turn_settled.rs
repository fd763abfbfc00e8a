//! napi surface of the runtime turn-settled pipeline:
//! hook settings and environment, the drain, the pure settings merge and the
//! `onTeamChange` delivery.

use std::sync::atomic::{AtomicBool, Ordering};

use napi::bindgen_prelude::{AsyncTask, Unknown};
use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Env;
use napi::Status;
use napi_derive::napi;
use serde_json::{json, Value};

use super::args::{typed, RuntimeTurnSettledHookInput};
use super::job::{guard, ErrorCode, Job, JsFailure};
use super::{to_json, MemberWorkSync};
use crate::application::log::{LogCode, LogEntry, LogLevel, LogSink};
use crate::application::turn_settled::{TeamChangeEvent, TeamChangeSink};
use crate::domain::turn_settled::settings::{
    codex_hook_settings_fragment, executable_hook_command, hook_command, hook_settings_fragment,
    merge_runtime_hook_settings as merge_settings,
};
use crate::domain::turn_settled::shell_path::git_bash_path;
use crate::domain::turn_settled::{
    RuntimeProvider, MAX_PAYLOAD_BYTES, TURN_SETTLED_HOOK_MARKER as MARKER,
};
use crate::infrastructure::spool::{shipped_hook_executable, HookProgram};

/// Marker at the end of the managed Stop hook command.
#[napi(js_name = "TURN_SETTLED_HOOK_MARKER")]
pub const TURN_SETTLED_HOOK_MARKER: &str = MARKER;

/// Environment variable naming the spool root for orchestrator runtimes.
const SPOOL_ROOT_ENV: &str = "AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT";

/// The `onTeamChange` callback: called with one event object, its result and
/// any exception it throws are ignored; weak, so it never keeps Node alive.
pub type TeamChangeCallback =
    ThreadsafeFunction<Value, UnknownReturnValue, Value, Status, false, true>;

/// Delivers team change events to the JS callback on the JS thread.
pub(crate) struct JsTeamChangeSink(pub(crate) TeamChangeCallback);

impl TeamChangeSink for JsTeamChangeSink {
    fn emit(&self, event: TeamChangeEvent) {
        let Ok(value) = serde_json::to_value(event) else {
            return;
        };
        // The completion callback receives the callback's result or its
        // exception; swallowing both keeps a throwing listener from reaching
        // Node's fatal-exception path or the addon.
        let _ = self.0.call_with_return_value(
            value,
            ThreadsafeFunctionCallMode::NonBlocking,
            |_, _| Ok(()),
        );
    }
}

/// Hook installation failures are logged once per process: launch goes on
/// without the hook, and a broken spool must not flood the app log. They go
/// to the instance's `onLog` (a packaged app has no visible stderr).
static INSTALL_FAILURE_LOGGED: AtomicBool = AtomicBool::new(false);

fn log_install_failure(log: &dyn LogSink, error: &std::io::Error) {
    if !INSTALL_FAILURE_LOGGED.swap(true, Ordering::Relaxed) {
        log.log(LogEntry::new(
            LogLevel::Warn,
            LogCode::HookUnavailable,
            format!("turn-settled hook unavailable, launching without it: {error}"),
        ));
    }
}

/// Falling back to the script is logged once per process.
static SCRIPT_FALLBACK_LOGGED: AtomicBool = AtomicBool::new(false);

fn log_script_fallback(log: &dyn LogSink, why: &str) {
    if !SCRIPT_FALLBACK_LOGGED.swap(true, Ordering::Relaxed) {
        log.log(LogEntry::new(
            LogLevel::Warn,
            LogCode::HookScriptFallback,
            format!("turn-settled hook executable not used, the sh script runs instead: {why}"),
        ));
    }
}

/// `path` as the hook command's shell spells it: as it is on Unix; on
/// Windows, where Claude Code runs hook commands through Git Bash, the
/// POSIX-style spelling (`C:\x` -> `/c/x`), `None` where there is none.
fn hook_shell_path(path: &std::path::Path) -> Option<String> {
    let path = path.to_string_lossy();
    if cfg!(windows) {
        git_bash_path(&path)
    } else {
        Some(path.into_owned())
    }
}

fn provider_arg(input: Value) -> Result<RuntimeProvider, JsFailure> {
    let name = typed::<RuntimeTurnSettledHookInput>(input, "input")?.provider;
    RuntimeProvider::parse(&name).ok_or_else(|| {
        JsFailure::invalid(format!(
            "unknown provider {name:?}: expected claude, codex or opencode"
        ))
    })
}

#[napi]
impl MemberWorkSync {
    /// The managed Stop hook settings: for claude the `--settings` fragment,
    /// for codex `{config_overrides: [...]}` (pass each as `-c <item>`: the
    /// hook and the trust of that one hook); `null` for opencode or when the
    /// hook cannot be installed.
    #[napi(
        catch_unwind,
        ts_args_type = "input: RuntimeTurnSettledHookInput",
        ts_return_type = "Promise<Record<string, unknown> | null>"
    )]
    pub fn build_runtime_turn_settled_hook_settings(
        &self,
        env: Env,
        input: Unknown<'_>,
    ) -> AsyncTask<Job> {
        self.call(&env, input, "input", |instance, input| {
            let provider = provider_arg(input)?;
            if provider == RuntimeProvider::Opencode {
                return Ok(Value::Null);
            }
            let paths = &instance.services.spool_paths;
            let shipped = shipped_hook_executable();
            let installed = match paths.install_hook(shipped.ok()) {
                Ok(installed) => installed,
                Err(error) => {
                    log_install_failure(instance.services.log.as_ref(), &error);
                    return Ok(Value::Null);
                }
            };
            match (&shipped, &installed.executable_failure) {
                (_, Some(error)) => {
                    log_script_fallback(instance.services.log.as_ref(), &error.to_string())
                }
                (Err(why), None) => log_script_fallback(instance.services.log.as_ref(), why),
                (Ok(_), None) => {}
            }
            let no_spelling = || {
                log_install_failure(
                    instance.services.log.as_ref(),
                    &std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!(
                            "{}: no Git Bash (POSIX) spelling of the hook path",
                            paths.root.display()
                        ),
                    ),
                );
                Ok(Value::Null)
            };
            let command = match &installed.program {
                // A native program takes the spool root as Windows spells
                // it; only the program's own path needs Git Bash's spelling.
                HookProgram::Executable(executable) => {
                    let Some(executable) = hook_shell_path(executable) else {
                        return no_spelling();
                    };
                    let root = paths.root.to_string_lossy();
                    executable_hook_command(&executable, &root, provider, MAX_PAYLOAD_BYTES)
                }
                HookProgram::Script(script) => {
                    let (Some(script), Some(root)) =
                        (hook_shell_path(script), hook_shell_path(&paths.root))
                    else {
                        return no_spelling();
                    };
                    hook_command(&script, &root, provider, MAX_PAYLOAD_BYTES)
                }
            };
            Ok(match provider {
                RuntimeProvider::Codex => codex_hook_settings_fragment(&command),
                _ => hook_settings_fragment(&command),
            })
        })
    }

    /// `{AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT}` for codex / opencode
    /// (`null` for claude, or when the spool cannot be installed).
    #[napi(
        catch_unwind,
        ts_args_type = "input: RuntimeTurnSettledHookInput",
        ts_return_type = "Promise<Record<string, string> | null>"
    )]
    pub fn build_runtime_turn_settled_environment(
        &self,
        env: Env,
        input: Unknown<'_>,
    ) -> AsyncTask<Job> {
        self.call(&env, input, "input", |instance, input| {
            if provider_arg(input)? == RuntimeProvider::Claude {
                return Ok(Value::Null);
            }
            let paths = &instance.services.spool_paths;
            match paths.install() {
                Ok(_) => Ok(json!({ SPOOL_ROOT_ENV: paths.root.to_string_lossy() })),
                Err(error) => {
                    log_install_failure(instance.services.log.as_ref(), &error);
                    Ok(Value::Null)
                }
            }
        })
    }

    /// Drains up to 50 spooled hook payloads.
    #[napi(
        catch_unwind,
        ts_return_type = "Promise<RuntimeTurnSettledDrainSummary>"
    )]
    pub fn drain_runtime_turn_settled_events(&self) -> AsyncTask<Job> {
        self.job(move |instance| {
            let summary = instance.drain_turn_settled().map_err(|e| JsFailure {
                code: ErrorCode::Io,
                message: format!("turn-settled drain failed: {e}"),
            })?;
            to_json(summary)
        })
    }
}

/// Hook-aware merge of a settings patch into a settings object.
#[napi(
    catch_unwind,
    ts_args_type = "base: Record<string, unknown>, patch: Record<string, unknown>",
    ts_return_type = "Record<string, unknown>"
)]
pub fn merge_runtime_hook_settings(
    env: Env,
    base: Unknown<'_>,
    patch: Unknown<'_>,
) -> Result<Value, napi::Error<ErrorCode>> {
    guard("mergeRuntimeHookSettings", || {
        let base = super::convert::json_argument(&env, base, "base")?;
        let patch = super::convert::json_argument(&env, patch, "patch")?;
        let (Value::Object(base), Value::Object(patch)) = (&base, &patch) else {
            return Err(JsFailure::invalid("base and patch must be plain objects"));
        };
        Ok(Value::Object(merge_settings(base, patch)))
    })
    .map_err(JsFailure::into_napi)
}
