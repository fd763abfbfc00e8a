//! The napi layer: converts JS values to use-case inputs and results back, maps
//! errors to stable codes. No rules live here.

mod args;
mod callbacks;
mod convert;
mod event_fields;
pub(crate) mod job;
mod options;
#[cfg(test)]
mod result_shapes;
#[cfg(test)]
mod rust_types;
mod storage_gateway;
pub mod turn_settled;

use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, JsValue, Object, Unknown, ValueType};
use napi::Env;
use napi_derive::napi;
use serde::Serialize;
use serde_json::Value;

use self::args::{
    typed, MemberWorkSyncExplainRequest, MemberWorkSyncMemberRequest, MemberWorkSyncStatusRequest,
    MemberWorkSyncTeamRequest, MemberWorkSyncTeamRuntimeState, ProofMissingArgs,
};
use self::job::{guard, render, ErrorCode, Job, JobOutput, JsFailure};
use crate::application::proof_missing::ProofMissingRequest;
use crate::application::reconcile::{member_name, team_name};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::recovery::RecoveryTaskRef;
use crate::infrastructure::host_questions::waits::{self, Waiting};
use crate::infrastructure::safe_fs::join_trailing;
use crate::runtime::composition::Instance;
use crate::runtime::options::clock_ms;

/// One addon instance over one Claude home.
#[napi]
pub struct MemberWorkSync {
    pub(crate) instance: Arc<Instance>,
    /// Host questions waiting for `settleHostQuestion`.
    host_questions: Arc<Waiting>,
    /// Ends the waits for the app's storage gateway (gateway mode).
    storage_close: Option<crate::infrastructure::sqlite::app_calls::StorageClose>,
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
        guard("constructor", || options::start(&env, options)).map_err(JsFailure::into_napi)
    }

    /// The shape of every Promise method: `arg` is converted to JSON here,
    /// on the JS thread, by the bounded converter (named `what` in its
    /// failure, which rejects the Promise after the disposed check); `work`
    /// then runs on the thread pool unless the instance was disposed, and its
    /// result is handed to JS as JSON.
    fn call<R: Serialize>(
        &self,
        env: &Env,
        arg: Unknown<'_>,
        what: &'static str,
        work: impl FnOnce(&Instance, Value) -> Result<R, JsFailure> + Send + 'static,
    ) -> AsyncTask<Job> {
        let arg = convert::json_argument(env, arg, what);
        self.job(move |i| work(i, arg?))
    }

    /// [`MemberWorkSync::call`] for a `Promise<void>` method: resolves `undefined`.
    fn call_void(
        &self,
        env: &Env,
        arg: Unknown<'_>,
        what: &'static str,
        work: impl FnOnce(&Instance, Value) -> Result<(), JsFailure> + Send + 'static,
    ) -> AsyncTask<Job> {
        let arg = convert::json_argument(env, arg, what);
        let instance = self.instance.clone();
        AsyncTask::new(Job::unit(move || {
            instance.admit(|| work(&instance, arg?))?
        }))
    }

    /// Runs `work` off the JS thread unless the instance was disposed; its
    /// result reaches JS as JSON.
    fn job<R: Serialize>(
        &self,
        work: impl FnOnce(&Instance) -> Result<R, JsFailure> + Send + 'static,
    ) -> AsyncTask<Job> {
        let instance = self.instance.clone();
        AsyncTask::new(Job::new(move || instance.admit(|| work(&instance))?))
    }

    /// The shape of every synchronous method: `work` runs on the JS thread
    /// unless the instance was disposed; a panic in it becomes `MWS_INTERNAL`
    /// naming `what`.
    fn sync<T>(
        &self,
        what: &str,
        work: impl FnOnce(&Instance) -> Result<T, JsFailure>,
    ) -> Result<T, napi::Error<ErrorCode>> {
        guard(what, || {
            self.instance.live()?;
            work(&self.instance)
        })
        .map_err(JsFailure::into_napi)
    }

    /// The stored status of a member; stale ones are refreshed.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncStatusRequest",
        ts_return_type = "Promise<MemberWorkSyncStatus>"
    )]
    pub fn get_status(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        self.call(&env, request, "request", |i, request| {
            let request: MemberWorkSyncStatusRequest = typed(request, "request")?;
            let team = team_name_arg(&request.team_name)?;
            let member = member_name(&request.member_name)?;
            let force_nudge = request.force_nudge == Some(true);
            Ok(i.services.engine.get_status(&team, &member, force_nudge)?)
        })
    }

    /// Reconciles a member now and persists the result.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncMemberRequest",
        ts_return_type = "Promise<MemberWorkSyncStatus>"
    )]
    pub fn refresh_status(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        self.call(&env, request, "request", |i, request| {
            let (team, member) = member_request(request)?;
            Ok(i.refresh_status(&team, &member)?)
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
        self.call(&env, request, "request", |i, request| {
            let (team, member) = member_request(request)?;
            Ok(i.services.engine.preview_status(&team, &member)?)
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
        self.call(&env, request, "request", |i, request| {
            Ok(i.services.engine.preview_team(&team_request(request)?)?)
        })
    }

    /// Reconciles every active roster member of a team from one snapshot.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncTeamRequest",
        ts_return_type = "Promise<MemberWorkSyncStatus[]>"
    )]
    pub fn refresh_team(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        self.call(&env, request, "request", |i, request| {
            Ok(i.services.engine.refresh_team(&team_request(request)?)?)
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
        self.call(&env, request, "request", |i, request| {
            Ok(i.services.engine.report(&request)?)
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
        self.call(&env, request, "request", |i, request| {
            let request = proof_missing_request(request)?;
            Ok(i.services.engine.schedule_proof_missing_recovery(request)?)
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
        self.call(&env, request, "request", |i, request| {
            let request: MemberWorkSyncExplainRequest = typed(request, "request")?;
            let team = team_name_arg(&request.team_name)?;
            let member = member_name(&request.member_name)?;
            // JSON numbers are finite (the converter turns NaN and ±Infinity into null).
            let since_ms = request.since_ms.map(|ms| ms as i64);
            Ok(i.services.explainer.explain(&team, &member, since_ms)?)
        })
    }

    /// Counts, state counts and phase-2 readiness of a team.
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncTeamRequest",
        ts_return_type = "Promise<MemberWorkSyncTeamMetrics>"
    )]
    pub fn get_metrics(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        self.call(&env, request, "request", |i, request| {
            Ok(i.services.engine.get_metrics(&team_request(request)?)?)
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
        self.call(&env, request, "request", |i, request| {
            Ok(i.services.engine.preview_metrics(&team_request(request)?)?)
        })
    }

    /// Validates pending report intents (member files and the controller's legacy file).
    #[napi(
        catch_unwind,
        ts_args_type = "teamNames: string[]",
        ts_return_type = "Promise<{ processed: number; accepted: number; rejected: number; superseded: number }>"
    )]
    pub fn replay_pending_reports(&self, env: Env, team_names: Unknown<'_>) -> AsyncTask<Job> {
        self.call(&env, team_names, "team_names", |i, team_names| {
            Ok(i.services
                .engine
                .replay_pending_reports(&team_list(team_names)?)?)
        })
    }

    /// The compact agenda block for a member's task briefing (see README "Agent brief").
    #[napi(
        catch_unwind,
        ts_args_type = "request: MemberWorkSyncMemberRequest",
        ts_return_type = "Promise<MemberWorkSyncAgentBrief>"
    )]
    pub fn get_agent_brief(&self, env: Env, request: Unknown<'_>) -> AsyncTask<Job> {
        self.call(&env, request, "request", |i, request| {
            let (team, member) = member_request(request)?;
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
        match event_fields::read(env, object.raw()) {
            Some(event) => self.instance.worker().note(event),
            None => convert::clear_pending_exception(env),
        }
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
        self.sync("setTeamRuntimeState", |i| {
            let team_name = convert::json_argument(&env, team_name, "teamName")?;
            let state = convert::json_argument(&env, state, "state")?;
            let team = team_name_arg(&typed::<String>(team_name, "teamName")?)?;
            let state: MemberWorkSyncTeamRuntimeState = typed(state, "state")?;
            i.services
                .engine
                .set_team_runtime_state(&team, state.active, state.active_members);
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
        self.call_void(&env, team_names, "team_names", |i, team_names| {
            i.services
                .engine
                .enqueue_startup_scan(&team_list(team_names)?);
            Ok(())
        })
    }

    /// Counters and waiting items of the reconcile queue.
    #[napi(catch_unwind, ts_return_type = "MemberWorkSyncQueueDiagnostics")]
    pub fn get_queue_diagnostics(&self) -> Result<JobOutput, napi::Error<ErrorCode>> {
        self.sync("getQueueDiagnostics", |i| {
            render(&i.services.engine.diagnostics())
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
        let deletion_identity_id = deletion_identity_id
            .map(|id| convert::json_argument(&env, id, "deletionIdentityId"))
            .transpose();
        self.call_void(&env, team_name, "team_name", |i, team_name| {
            let team = typed::<String>(team_name, "teamName")?;
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
        self.sync("completeTeamDeletion", |i| {
            let team = team_arg(&env, team_name)?;
            Ok(i.services.engine.complete_team_deletion(&team)?)
        })
    }

    /// Undoes `prepareTeamDeletion` and re-scans the team.
    #[napi(catch_unwind, ts_args_type = "teamName: string")]
    pub fn resume_team(
        &self,
        env: Env,
        team_name: Unknown<'_>,
    ) -> Result<(), napi::Error<ErrorCode>> {
        self.sync("resumeTeam", |i| {
            i.resume_team(&team_arg(&env, team_name)?);
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
        self.call(&env, team_names, "team_names", |i, team_names| {
            let teams = team_list(team_names)?;
            let claimed_by = format!("member-work-sync:{}", std::process::id());
            Ok(i.services.engine.dispatch_due_nudges(&teams, &claimed_by)?)
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
        // Not `sync`: answers still arriving after dispose are not errors.
        guard("settleHostQuestion", || {
            let outcome = convert::json_argument(&env, outcome, "outcome")?;
            let settled = waits::outcome(&outcome).ok_or_else(|| {
                JsFailure::invalid("outcome must be { ok: true, value? } or { ok: false, error }")
            })?;
            if id.is_finite() && id >= 0.0 {
                self.host_questions.settle(id as u64, settled);
            }
            Ok(())
        })
        .map_err(JsFailure::into_napi)
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
        self.sync("setClockForTesting", |i| {
            // JSON numbers are finite: NaN and ±Infinity arrive as null and are refused.
            let now_ms = convert::json_argument(&env, now_ms, "nowMs")?;
            let now_ms = clock_ms(typed::<f64>(now_ms, "nowMs")?, "nowMs")?;
            if i.set_test_clock(now_ms) {
                Ok(())
            } else {
                Err(JsFailure::invalid("setClockForTesting needs options.clock"))
            }
        })
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

/// A `teamName` argument: converted (named `team_name` in a conversion
/// failure), a string, then a checked name.
fn team_arg(env: &Env, team_name: Unknown<'_>) -> Result<TeamName, JsFailure> {
    let team_name = convert::json_argument(env, team_name, "team_name")?;
    team_name_arg(&typed::<String>(team_name, "teamName")?)
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
