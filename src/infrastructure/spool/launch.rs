//! What a runtime launch takes from the spool: the managed Stop hook's
//! settings (claude, codex) or the spool root's environment variable
//! (codex, opencode), each installing the spool first. A spool that cannot
//! be installed launches the runtime without the hook (`None`, logged once
//! per process).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{json, Value};

use super::{shipped_hook_executable, HookProgram, SpoolPaths};
use crate::application::log::{LogCode, LogEntry, LogLevel, LogSink};
use crate::domain::turn_settled::settings::{
    codex_hook_settings_fragment, executable_hook_command, hook_command, hook_settings_fragment,
};
use crate::domain::turn_settled::shell_path::git_bash_path;
use crate::domain::turn_settled::{RuntimeProvider, MAX_PAYLOAD_BYTES};

/// Environment variable naming the spool root for orchestrator runtimes.
const SPOOL_ROOT_ENV: &str = "AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT";

/// Hook installation failures are logged once per process: launch goes on
/// without the hook, and a broken spool must not flood the app log. They go
/// to the instance's `onLog` (a packaged app has no visible stderr).
static INSTALL_FAILURE_LOGGED: AtomicBool = AtomicBool::new(false);

/// Falling back to the script is logged once per process.
static SCRIPT_FALLBACK_LOGGED: AtomicBool = AtomicBool::new(false);

fn log_install_failure(log: &dyn LogSink, error: &std::io::Error) {
    if !INSTALL_FAILURE_LOGGED.swap(true, Ordering::Relaxed) {
        log.log(LogEntry::new(
            LogLevel::Warn,
            LogCode::HookUnavailable,
            format!("turn-settled hook unavailable, launching without it: {error}"),
        ));
    }
}

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
fn hook_shell_path(path: &Path) -> Option<String> {
    let path = path.to_string_lossy();
    if cfg!(windows) {
        git_bash_path(&path)
    } else {
        Some(path.into_owned())
    }
}

/// The managed Stop hook settings of `provider`: for claude the
/// `--settings` fragment, for codex `{config_overrides: [...]}`; `None` for
/// opencode or when the hook cannot be installed.
pub fn runtime_hook_settings(
    paths: &SpoolPaths,
    provider: RuntimeProvider,
    log: &dyn LogSink,
) -> Option<Value> {
    if provider == RuntimeProvider::Opencode {
        return None;
    }
    let shipped = shipped_hook_executable();
    let installed = match paths.install_hook(shipped.ok()) {
        Ok(installed) => installed,
        Err(error) => {
            log_install_failure(log, &error);
            return None;
        }
    };
    match (&shipped, &installed.executable_failure) {
        (_, Some(error)) => log_script_fallback(log, &error.to_string()),
        (Err(why), None) => log_script_fallback(log, why),
        (Ok(_), None) => {}
    }
    let no_spelling = || {
        let why = format!(
            "{}: no Git Bash (POSIX) spelling of the hook path",
            paths.root.display()
        );
        log_install_failure(
            log,
            &std::io::Error::new(std::io::ErrorKind::InvalidInput, why),
        );
        None
    };
    let command = match &installed.program {
        // A native program takes the spool root as Windows spells it; only
        // the program's own path needs Git Bash's spelling.
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
    Some(match provider {
        RuntimeProvider::Codex => codex_hook_settings_fragment(&command),
        _ => hook_settings_fragment(&command),
    })
}

/// `{AGENT_TEAMS_RUNTIME_TURN_SETTLED_SPOOL_ROOT}` for codex and opencode,
/// whose hooks find the spool through it; `None` for claude or when the
/// spool cannot be installed.
pub fn runtime_hook_environment(
    paths: &SpoolPaths,
    provider: RuntimeProvider,
    log: &dyn LogSink,
) -> Option<Value> {
    if provider == RuntimeProvider::Claude {
        return None;
    }
    match paths.install() {
        Ok(_) => Some(json!({ SPOOL_ROOT_ENV: paths.root.to_string_lossy() })),
        Err(error) => {
            log_install_failure(log, &error);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::turn_settled::TURN_SETTLED_HOOK_MARKER;

    struct NoLog;
    impl LogSink for NoLog {
        fn log(&self, _: LogEntry) {}
    }

    #[test]
    fn each_provider_gets_its_hook_settings_or_environment() {
        let dir = tempfile::tempdir().unwrap();
        let paths = SpoolPaths::for_teams_base(&dir.path().join("teams"));
        std::fs::create_dir(dir.path().join("teams")).unwrap();
        let root = paths.root.to_string_lossy().into_owned();
        // (provider, settings mention, environment)
        for (provider, settings, environment) in [
            (RuntimeProvider::Claude, Some("\"hooks\""), false),
            (RuntimeProvider::Codex, Some("config_overrides"), true),
            (RuntimeProvider::Opencode, None, true),
        ] {
            let got = runtime_hook_settings(&paths, provider, &NoLog).map(|v| v.to_string());
            match settings {
                Some(key) => {
                    let got = got.unwrap_or_else(|| panic!("{provider:?}: no settings"));
                    assert!(got.contains(key), "{provider:?}: {got}");
                    assert!(
                        got.contains(TURN_SETTLED_HOOK_MARKER),
                        "{provider:?}: {got}"
                    );
                }
                None => assert_eq!(got, None, "{provider:?}"),
            }
            let env = runtime_hook_environment(&paths, provider, &NoLog);
            let expected = environment.then(|| json!({ SPOOL_ROOT_ENV: root }));
            assert_eq!(env, expected, "{provider:?}");
        }
    }

    #[test]
    fn a_spool_that_cannot_be_installed_launches_without_the_hook() {
        let dir = tempfile::tempdir().unwrap();
        // The teams folder is a file: nothing can be made below it.
        std::fs::write(dir.path().join("teams"), "").unwrap();
        let paths = SpoolPaths::for_teams_base(&dir.path().join("teams"));
        for provider in [RuntimeProvider::Claude, RuntimeProvider::Codex] {
            assert_eq!(runtime_hook_settings(&paths, provider, &NoLog), None);
        }
        assert_eq!(
            runtime_hook_environment(&paths, RuntimeProvider::Codex, &NoLog),
            None
        );
    }
}
