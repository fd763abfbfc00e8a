//! napi surface of the runtime turn-settled pipeline:
//! hook settings and environment, the drain and the pure settings merge.

use napi::bindgen_prelude::{AsyncTask, Unknown};
use napi::Env;
use napi_derive::napi;
use serde_json::Value;

use super::args::{typed, RuntimeTurnSettledHookInput};
use super::job::{guard, ErrorCode, Job, JsFailure};
use super::MemberWorkSync;
use crate::domain::turn_settled::settings::merge_runtime_hook_settings as merge_settings;
use crate::domain::turn_settled::{RuntimeProvider, TURN_SETTLED_HOOK_MARKER as MARKER};
use crate::infrastructure::spool::{runtime_hook_environment, runtime_hook_settings};

/// Marker at the end of the managed Stop hook command.
#[napi(js_name = "TURN_SETTLED_HOOK_MARKER")]
pub const TURN_SETTLED_HOOK_MARKER: &str = MARKER;

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
        self.call(&env, input, "input", |i, input| {
            let provider = provider_arg(input)?;
            Ok(runtime_hook_settings(
                &i.services.spool_paths,
                provider,
                i.services.log.as_ref(),
            ))
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
        self.call(&env, input, "input", |i, input| {
            let provider = provider_arg(input)?;
            Ok(runtime_hook_environment(
                &i.services.spool_paths,
                provider,
                i.services.log.as_ref(),
            ))
        })
    }

    /// Drains up to 50 spooled hook payloads. A drain of this instance that
    /// is already running (the worker's) finishes first, so every payload
    /// spooled before the call is filed when it resolves.
    #[napi(
        catch_unwind,
        ts_return_type = "Promise<RuntimeTurnSettledDrainSummary>"
    )]
    pub fn drain_runtime_turn_settled_events(&self) -> AsyncTask<Job> {
        self.job(move |instance| {
            instance
                .drain_turn_settled()
                .map_err(|e| JsFailure::io(format!("turn-settled drain failed: {e}")))
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
