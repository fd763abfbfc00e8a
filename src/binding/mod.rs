//! The napi layer: converts JS values to use-case inputs and results back, maps
//! errors to stable codes. No rules live here.

pub(crate) mod job;
pub mod turn_settled;

use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;
use serde_json::Value;

use self::job::{ErrorCode, Job, JsFailure};
use crate::domain::status::ReconciledBy;
use crate::infrastructure::composition::{RootPaths, Services};

/// The fixed test clock option.
#[napi(object)]
pub struct MemberWorkSyncClockOption {
    /// Epoch milliseconds the clock starts at.
    pub now_ms: f64,
}

/// Constructor options (API.md `MemberWorkSyncOptions`).
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
    /// Start schedulers and watchers (default true; nothing to start yet).
    pub auto_start: Option<bool>,
    /// Receives the addon's team change events (e.g. `member-turn-settled`).
    #[napi(ts_type = "(event: TeamChangeEvent) => void")]
    pub on_team_change: Option<turn_settled::TeamChangeCallback>,
}

/// One addon instance over one Claude home.
#[napi]
pub struct MemberWorkSync {
    pub(crate) services: Arc<Services>,
}

#[napi]
impl MemberWorkSync {
    /// Creates an instance; does no IO.
    #[napi(constructor)]
    pub fn new(options: Option<MemberWorkSyncOptions>) -> Self {
        let options = options.unwrap_or(MemberWorkSyncOptions {
            claude_root: None,
            teams_base_path: None,
            tasks_base_path: None,
            clock: None,
            auto_start: None,
            on_team_change: None,
        });
        let paths = RootPaths::resolve(
            options.claude_root.map(PathBuf::from),
            options.teams_base_path.map(PathBuf::from),
            options.tasks_base_path.map(PathBuf::from),
        );
        let fixed_now = options.clock.map(|c| c.now_ms as i64);
        let services = Arc::new(Services::new(paths, fixed_now));
        if let Some(callback) = options.on_team_change {
            services
                .team_changes
                .connect(Box::new(turn_settled::JsTeamChangeSink(callback)));
        }
        Self { services }
    }

    /// The stored status of a member; stale ones are refreshed.
    #[napi(
        ts_args_type = "request: { teamName: string; memberName: string; forceNudge?: boolean }",
        ts_return_type = "Promise<MemberWorkSyncStatus>"
    )]
    pub fn get_status(&self, request: Value) -> AsyncTask<Job> {
        let services = self.services.clone();
        AsyncTask::new(Job::new(move || {
            let (team, member) = member_request(&request)?;
            to_json(services.reconciler.get_status(&team, &member)?)
        }))
    }

    /// Reconciles a member now and persists the result.
    #[napi(
        ts_args_type = "request: { teamName: string; memberName: string }",
        ts_return_type = "Promise<MemberWorkSyncStatus>"
    )]
    pub fn refresh_status(&self, request: Value) -> AsyncTask<Job> {
        let services = self.services.clone();
        AsyncTask::new(Job::new(move || {
            let (team, member) = member_request(&request)?;
            let status = services.reconciler.refresh_status(
                &team,
                &member,
                ReconciledBy::Request,
                &["manual_refresh"],
            )?;
            to_json(status)
        }))
    }

    /// Reconciles every active roster member of a team from one snapshot.
    #[napi(
        ts_args_type = "request: { teamName: string }",
        ts_return_type = "Promise<MemberWorkSyncStatus[]>"
    )]
    pub fn refresh_team(&self, request: Value) -> AsyncTask<Job> {
        let services = self.services.clone();
        AsyncTask::new(Job::new(move || {
            let team = string_field(&request, "teamName")?;
            to_json(services.reconciler.refresh_team(&team)?)
        }))
    }

    /// Records the supervisor's view of a team; a team never reported counts as active.
    #[napi(ts_args_type = "teamName: string, state: { active: boolean; activeMembers?: string[] }")]
    pub fn set_team_runtime_state(
        &self,
        team_name: Value,
        state: Value,
    ) -> Result<(), napi::Error<ErrorCode>> {
        let team = match &team_name {
            Value::String(team) => team.clone(),
            _ => return Err(JsFailure::invalid("teamName must be a string").into_napi()),
        };
        crate::application::reconcile::check_name("teamName", &team)
            .map_err(|e| JsFailure::from(e).into_napi())?;
        let active = state
            .get("active")
            .and_then(Value::as_bool)
            .ok_or_else(|| JsFailure::invalid("state.active must be a boolean").into_napi())?;
        let members = match state.get("activeMembers") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|m| m.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| {
                        JsFailure::invalid("state.activeMembers must be strings").into_napi()
                    })?,
            ),
            Some(_) => {
                return Err(JsFailure::invalid("state.activeMembers must be an array").into_napi())
            }
        };
        self.services.runtime.set(&team, active, members);
        Ok(())
    }

    /// Moves the fixed test clock; only when the instance was built with `options.clock`.
    #[napi]
    pub fn set_clock_for_testing(&self, now_ms: f64) -> Result<(), napi::Error<ErrorCode>> {
        match &self.services.manual_clock {
            Some(clock) if now_ms.is_finite() => {
                clock.set(now_ms as i64);
                Ok(())
            }
            Some(_) => Err(JsFailure::invalid("nowMs must be a finite number").into_napi()),
            None => Err(JsFailure::invalid("setClockForTesting needs options.clock").into_napi()),
        }
    }
}

pub(crate) fn string_field(request: &Value, field: &str) -> Result<String, JsFailure> {
    match request.get(field) {
        Some(Value::String(value)) => Ok(value.clone()),
        _ => Err(JsFailure::invalid(format!("{field} must be a string"))),
    }
}

pub(crate) fn member_request(request: &Value) -> Result<(String, String), JsFailure> {
    if !request.is_object() {
        return Err(JsFailure::invalid("request must be an object"));
    }
    Ok((
        string_field(request, "teamName")?,
        string_field(request, "memberName")?,
    ))
}

pub(crate) fn to_json(value: impl serde::Serialize) -> Result<Value, JsFailure> {
    serde_json::to_value(value).map_err(|e| JsFailure {
        code: ErrorCode::Io,
        message: format!("could not encode result: {e}"),
    })
}
