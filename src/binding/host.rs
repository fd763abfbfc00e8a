//! The `onHostQuestion` option: the addon asks the host app (the Electron
//! entry's callbacks) at decision time, from its worker threads, and waits a
//! bounded time for the answer.
//!
//! A question goes to the JS thread through a threadsafe function as
//! `{ id, kind, input }`; the host answers with
//! `settleHostQuestion(id, outcome)`. The asking thread waits at most
//! `hostTimeoutMs` (default [`DEFAULT_TIMEOUT_MS`]); a callback that is slow,
//! throws or never settles costs at most that wait, is logged with a stable
//! code and answered with the fallback the caller chose. A question is never
//! asked on the JS thread itself (that thread could not answer it while it
//! waits): it gets the fallback at once. Dispose ends every wait.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;
use serde_json::{json, Value};

use crate::application::host::{
    BusyQuestion, BusyRank, ControlUrl, DeliveryWake, Host, HostBusy, RecoveryQuestion,
    RecoveryVerdict, ReviewPickupDelivered, ReviewPickupEscalation, ReviewPickupFailure,
    ReviewPickupRequest, SettledTarget,
};
use crate::application::log::{LogCode, LogEntry, LogLevel, LogSink};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::team::ProviderId;
use crate::domain::time::{format_iso, parse_iso};

/// Longest wait for one answer unless `hostTimeoutMs` says otherwise.
pub const DEFAULT_TIMEOUT_MS: u64 = 5_000;
/// Bounds of `hostTimeoutMs`.
pub const TIMEOUT_MS_BOUNDS: (u64, u64) = (10, 120_000);
/// Longest host-given team list or busy reason kept.
const MAX_TEAMS: usize = 1_000;
/// Longest string taken from an answer (team name, busy reason, URL, error).
const MAX_ANSWER_CHARS: usize = 2_048;

/// The `onHostQuestion` callback: gets `{ id, kind, input }`; its result and
/// any exception are ignored (the answer comes through `settleHostQuestion`).
/// Weak, so it never keeps Node alive.
pub type HostQuestionCallback =
    ThreadsafeFunction<Value, UnknownReturnValue, Value, Status, false, true>;

/// A question the host can answer: the Electron entry's option names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuestionKind {
    /// `isTeamActive(teamName)`.
    IsTeamActive,
    /// `isMemberActive({ teamName, memberName })`.
    IsMemberActive,
    /// `canDispatchNudges(teamName)`.
    CanDispatchNudges,
    /// `listLifecycleActiveTeamNames()`.
    ListLifecycleActiveTeamNames,
    /// `resolveControlUrl()`.
    ResolveControlUrl,
    /// `priorityBusySignals[*].isBusy(input)`.
    PriorityBusySignals,
    /// `extraBusySignals[*].isBusy(input)`.
    ExtraBusySignals,
    /// `nudgeDeliveryWake.schedule(input)`.
    NudgeDeliveryWake,
    /// `reviewPickupDelivery.canDeliver(input)`.
    ReviewPickupCanDeliver,
    /// `reviewPickupDelivery.deliver(input)`.
    ReviewPickupDeliver,
    /// `reviewPickupEscalation.escalate(input)`.
    ReviewPickupEscalate,
    /// `proofMissingRecoveryGuard.shouldDispatch(input)`.
    ProofMissingRecoveryGuard,
    /// `runtimeTurnSettledTargetResolver.resolve(event)`.
    TurnSettledTargetResolver,
    /// `configFileAccess(configPath)`.
    ConfigFileAccess,
}

impl QuestionKind {
    const ALL: [Self; 14] = [
        Self::IsTeamActive,
        Self::IsMemberActive,
        Self::CanDispatchNudges,
        Self::ListLifecycleActiveTeamNames,
        Self::ResolveControlUrl,
        Self::PriorityBusySignals,
        Self::ExtraBusySignals,
        Self::NudgeDeliveryWake,
        Self::ReviewPickupCanDeliver,
        Self::ReviewPickupDeliver,
        Self::ReviewPickupEscalate,
        Self::ProofMissingRecoveryGuard,
        Self::TurnSettledTargetResolver,
        Self::ConfigFileAccess,
    ];

    /// The option name, as JS spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IsTeamActive => "isTeamActive",
            Self::IsMemberActive => "isMemberActive",
            Self::CanDispatchNudges => "canDispatchNudges",
            Self::ListLifecycleActiveTeamNames => "listLifecycleActiveTeamNames",
            Self::ResolveControlUrl => "resolveControlUrl",
            Self::PriorityBusySignals => "priorityBusySignals",
            Self::ExtraBusySignals => "extraBusySignals",
            Self::NudgeDeliveryWake => "nudgeDeliveryWake",
            Self::ReviewPickupCanDeliver => "reviewPickupDelivery.canDeliver",
            Self::ReviewPickupDeliver => "reviewPickupDelivery.deliver",
            Self::ReviewPickupEscalate => "reviewPickupEscalation.escalate",
            Self::ProofMissingRecoveryGuard => "proofMissingRecoveryGuard.shouldDispatch",
            Self::TurnSettledTargetResolver => "runtimeTurnSettledTargetResolver.resolve",
            Self::ConfigFileAccess => "configFileAccess",
        }
    }

    /// Parses an option name of `hostAnswers`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// Why a question got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unanswered {
    /// The callback threw or its promise rejected.
    Failed(String),
    /// No answer within the bound.
    TimedOut,
    /// The answer had the wrong shape.
    Unusable,
    /// Asked on the JS thread, after dispose, or the call could not be queued.
    NotAsked,
}

impl Unanswered {
    /// Why, in words (the caller's fallback records it).
    fn describe(self) -> String {
        match self {
            Self::Failed(error) => error,
            Self::TimedOut => "timed out".into(),
            Self::Unusable => "unusable answer".into(),
            Self::NotAsked => "no answer".into(),
        }
    }
}

/// The questions waiting for an answer, shared with `settleHostQuestion`.
#[derive(Default)]
pub(crate) struct Waiting {
    next_id: AtomicU64,
    closed: AtomicBool,
    senders: Mutex<HashMap<u64, SyncSender<Result<Value, String>>>>,
}

impl Waiting {
    /// Delivers the host's outcome of question `id`; unknown or late ids
    /// (the wait ended) are ignored.
    pub(crate) fn settle(&self, id: u64, outcome: Result<Value, String>) {
        let sender = self
            .senders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(sender) = sender {
            let _ = sender.try_send(outcome);
        }
    }

    /// Ends every wait now and refuses new questions (dispose).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.senders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// The host behind `onHostQuestion`.
pub(crate) struct JsHost {
    callback: HostQuestionCallback,
    answers: HashSet<QuestionKind>,
    timeout: Duration,
    js_thread: ThreadId,
    waiting: Arc<Waiting>,
    log: Arc<dyn LogSink>,
}

impl JsHost {
    /// A host asking `callback` the `answers` kinds; built on the JS thread.
    pub(crate) fn new(
        callback: HostQuestionCallback,
        answers: HashSet<QuestionKind>,
        timeout: Duration,
        waiting: Arc<Waiting>,
        log: Arc<dyn LogSink>,
    ) -> Self {
        Self {
            callback,
            answers,
            timeout,
            js_thread: std::thread::current().id(),
            waiting,
            log,
        }
    }

    /// Asks one question; `None` when the host has no such callback.
    fn ask(&self, kind: QuestionKind, input: Value) -> Option<Result<Value, Unanswered>> {
        if !self.answers.contains(&kind) {
            return None;
        }
        let started = Instant::now();
        let answer = self.wait_for(kind, input);
        if let Err(why) = &answer {
            self.report(kind, why, started.elapsed());
        }
        Some(answer)
    }

    fn wait_for(&self, kind: QuestionKind, input: Value) -> Result<Value, Unanswered> {
        if std::thread::current().id() == self.js_thread
            || self.waiting.closed.load(Ordering::SeqCst)
        {
            return Err(Unanswered::NotAsked);
        }
        let id = self.waiting.next_id.fetch_add(1, Ordering::Relaxed);
        let (sender, receiver) = sync_channel(1);
        self.waiting
            .senders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, sender);
        let question = json!({ "id": id, "kind": kind.as_str(), "input": input });
        let queued = self.callback.call_with_return_value(
            question,
            ThreadsafeFunctionCallMode::NonBlocking,
            |_, _| Ok(()),
        );
        let outcome = if queued == Status::Ok {
            receiver.recv_timeout(self.timeout)
        } else {
            Err(RecvTimeoutError::Disconnected)
        };
        // A late answer finds no sender and is dropped.
        self.waiting
            .senders
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        match outcome {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(Unanswered::Failed(clip(&error))),
            Err(RecvTimeoutError::Timeout) => Err(Unanswered::TimedOut),
            Err(RecvTimeoutError::Disconnected) => Err(Unanswered::NotAsked),
        }
    }

    fn report(&self, kind: QuestionKind, why: &Unanswered, waited: Duration) {
        let (code, message) = match why {
            Unanswered::Failed(error) => (
                LogCode::HostCallbackFailed,
                format!("{} failed: {error}", kind.as_str()),
            ),
            Unanswered::TimedOut => (
                LogCode::HostCallbackTimedOut,
                format!(
                    "{} did not settle within {} ms",
                    kind.as_str(),
                    self.timeout.as_millis()
                ),
            ),
            Unanswered::Unusable => (
                LogCode::HostCallbackFailed,
                format!("{} answered a value of the wrong shape", kind.as_str()),
            ),
            // Dispose or a JS-thread caller: nothing went wrong on the host's side.
            Unanswered::NotAsked => return,
        };
        self.log.log(
            LogEntry::new(LogLevel::Warn, code, message).with_context(json!({
                "callback": kind.as_str(),
                "waitedMs": waited.as_millis() as u64,
            })),
        );
    }

    /// A yes/no question; `None` when unanswered.
    fn ask_bool(&self, kind: QuestionKind, input: Value) -> Option<bool> {
        match self.ask(kind, input)? {
            Ok(Value::Bool(answer)) => Some(answer),
            Ok(_) => {
                self.report(kind, &Unanswered::Unusable, Duration::ZERO);
                None
            }
            Err(_) => None,
        }
    }

    fn ask_busy(&self, kind: QuestionKind, input: Value) -> Option<HostBusy> {
        let answer = self.ask(kind, input)?.ok()?;
        if answer.get("busy") != Some(&Value::Bool(true)) {
            return None;
        }
        Some(HostBusy {
            reason: answer
                .get("reason")
                .and_then(Value::as_str)
                .map(clip)
                .unwrap_or_else(|| "busy".into()),
            retry_at: answer
                .get("retryAfterIso")
                .and_then(Value::as_str)
                .and_then(parse_iso),
        })
    }
}

impl Host for JsHost {
    fn team_active(&self, team_name: &TeamName) -> Option<bool> {
        self.ask_bool(QuestionKind::IsTeamActive, json!(team_name))
    }

    fn member_active(&self, team_name: &TeamName, member_name: &MemberName) -> Option<bool> {
        self.ask_bool(
            QuestionKind::IsMemberActive,
            json!({ "teamName": team_name, "memberName": member_name }),
        )
    }

    fn can_dispatch_nudges(&self, team_name: &TeamName) -> bool {
        // Without the option every team may dispatch; a failed check fails
        // closed, as the app's readiness check does.
        self.ask_bool(QuestionKind::CanDispatchNudges, json!(team_name))
            .unwrap_or(!self.answers.contains(&QuestionKind::CanDispatchNudges))
    }

    fn lifecycle_active_teams(&self) -> Option<Vec<String>> {
        let kind = QuestionKind::ListLifecycleActiveTeamNames;
        let answer = match self.ask(kind, Value::Null)? {
            Ok(answer) => answer,
            // A failed listing skips the pass, as the app's scheduler does.
            Err(_) => return Some(Vec::new()),
        };
        let Some(names) = answer.as_array() else {
            self.report(kind, &Unanswered::Unusable, Duration::ZERO);
            return Some(Vec::new());
        };
        let mut seen = HashSet::new();
        Some(
            names
                .iter()
                .filter_map(Value::as_str)
                .map(|name| clip(name.trim()))
                .filter(|name| !name.is_empty() && seen.insert(name.clone()))
                .take(MAX_TEAMS)
                .collect(),
        )
    }

    fn control_url(&self) -> ControlUrl {
        let kind = QuestionKind::ResolveControlUrl;
        match self.ask(kind, Value::Null) {
            None => ControlUrl::NotResolved,
            Some(Ok(Value::String(url)))
                if !url.trim().is_empty()
                    && url.trim().chars().count() <= MAX_ANSWER_CHARS
                    && !url.chars().any(|c| c == '"' || c.is_control()) =>
            {
                ControlUrl::Url(url.trim().to_string())
            }
            Some(Ok(Value::Null | Value::String(_))) => ControlUrl::Unavailable("none".into()),
            Some(Ok(_)) => {
                self.report(kind, &Unanswered::Unusable, Duration::ZERO);
                ControlUrl::Unavailable("unusable answer".into())
            }
            Some(Err(Unanswered::Failed(error))) => ControlUrl::Unavailable(error),
            Some(Err(Unanswered::TimedOut)) => ControlUrl::Unavailable("timed out".into()),
            Some(Err(_)) => ControlUrl::Unavailable("not asked".into()),
        }
    }

    fn busy(&self, question: &BusyQuestion<'_>, rank: BusyRank) -> Option<HostBusy> {
        let kind = match rank {
            BusyRank::Priority => QuestionKind::PriorityBusySignals,
            BusyRank::Extra => QuestionKind::ExtraBusySignals,
        };
        let mut input = json!({
            "teamName": question.team_name,
            "memberName": question.member_name,
            "nowIso": format_iso(question.now),
        });
        if let (Value::Object(input), Value::Object(payload)) = (&mut input, &question.payload) {
            input.extend(payload.clone());
        }
        self.ask_busy(kind, input)
    }

    fn delivery_wake(&self, wake: &DeliveryWake<'_>) -> Result<(), String> {
        let mut input = json!({
            "teamName": wake.team_name,
            "memberName": wake.member_name,
            "messageId": wake.message_id,
            "reason": if wake.inserted {
                "member_work_sync_nudge_inserted"
            } else {
                "member_work_sync_nudge_existing"
            },
            "delayMs": 500,
        });
        if let Some(provider) = wake.provider_id {
            input["providerId"] = json!(provider);
        }
        match self.ask(QuestionKind::NudgeDeliveryWake, input) {
            None | Some(Ok(_)) => Ok(()),
            Some(Err(Unanswered::Failed(error))) => Err(error),
            Some(Err(Unanswered::TimedOut)) => Err("timed out".into()),
            Some(Err(_)) => Ok(()),
        }
    }

    fn review_pickup_can_deliver(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        provider_id: Option<ProviderId>,
    ) -> Option<Result<(), String>> {
        let kind = QuestionKind::ReviewPickupCanDeliver;
        let input =
            json!({ "teamName": team_name, "memberName": member_name, "providerId": provider_id });
        Some(match self.ask(kind, input)? {
            Ok(answer) if answer.get("ok") == Some(&Value::Bool(true)) => Ok(()),
            Ok(answer) => Err(answer
                .get("reason")
                .and_then(Value::as_str)
                .map(clip)
                .unwrap_or_else(|| "review_pickup_delivery_refused".into())),
            Err(_) => Err("review_pickup_delivery_check_failed".into()),
        })
    }

    fn review_pickup_deliver(
        &self,
        request: &ReviewPickupRequest<'_>,
    ) -> Option<Result<ReviewPickupDelivered, String>> {
        let kind = QuestionKind::ReviewPickupDeliver;
        let input = json!({
            "teamName": request.team_name,
            "memberName": request.member_name,
            "messageId": request.message_id,
            "providerId": request.provider_id,
            "payload": app_payload(request.payload),
            "inserted": request.inserted,
            "nowIso": format_iso(request.now),
        });
        Some(match self.ask(kind, input)? {
            Ok(answer) => review_pickup_outcome(&answer).ok_or_else(|| {
                self.report(kind, &Unanswered::Unusable, Duration::ZERO);
                "unusable answer".to_string()
            }),
            Err(Unanswered::Failed(error)) => Err(error),
            Err(Unanswered::TimedOut) => Err("timed out".into()),
            Err(_) => Err("no answer".into()),
        })
    }

    fn review_pickup_escalate(
        &self,
        escalation: &ReviewPickupEscalation<'_>,
    ) -> Option<Result<(), String>> {
        let mut input = json!({
            "teamName": escalation.team_name,
            "memberName": escalation.member_name,
            "reason": escalation.reason,
            "nowIso": format_iso(escalation.now),
            "reviewRequestEventIds": escalation.review_request_event_ids,
            "diagnostics": escalation.diagnostics,
            "taskRefs": escalation.task_refs,
        });
        if let Some(fingerprint) = escalation.agenda_fingerprint {
            input["agendaFingerprint"] = json!(fingerprint);
        }
        Some(match self.ask(QuestionKind::ReviewPickupEscalate, input)? {
            Ok(_) => Ok(()),
            Err(Unanswered::Failed(error)) => Err(error),
            Err(_) => Err("no answer".into()),
        })
    }

    fn proof_missing_recovery(
        &self,
        question: &RecoveryQuestion<'_>,
    ) -> Option<Result<RecoveryVerdict, String>> {
        let kind = QuestionKind::ProofMissingRecoveryGuard;
        let input = json!({
            "teamName": question.team_name,
            "memberName": question.member_name,
            "intentKey": question.intent_key,
            "originalMessageId": question.original_message_id,
            "taskIds": question.task_ids,
            "nowIso": format_iso(question.now),
        });
        Some(match self.ask(kind, input)? {
            Ok(answer) => recovery_verdict(&answer).ok_or_else(|| {
                self.report(kind, &Unanswered::Unusable, Duration::ZERO);
                "unusable answer".to_string()
            }),
            Err(why) => Err(why.describe()),
        })
    }

    fn turn_settled_target(&self, event: &Value) -> Option<Result<SettledTarget, String>> {
        let kind = QuestionKind::TurnSettledTargetResolver;
        Some(match self.ask(kind, event.clone())? {
            Ok(answer) => settled_target(&answer).ok_or_else(|| {
                self.report(kind, &Unanswered::Unusable, Duration::ZERO);
                "unusable answer".to_string()
            }),
            Err(why) => Err(why.describe()),
        })
    }

    fn config_file_access(&self, config_path: &str) -> Option<bool> {
        // Any settled promise counts (the app's coordinator ignores the
        // value); a rejection, a late answer or dispose: not there.
        Some(
            self.ask(QuestionKind::ConfigFileAccess, json!(config_path))?
                .is_ok(),
        )
    }
}

/// A `proofMissingRecoveryGuard.shouldDispatch` answer, or `None` when it
/// has the wrong shape.
fn recovery_verdict(answer: &Value) -> Option<RecoveryVerdict> {
    match answer.get("ok")? {
        Value::Bool(true) => Some(RecoveryVerdict::Dispatch),
        Value::Bool(false) => {
            let reason = clip(answer.get("reason")?.as_str()?.trim());
            if reason.is_empty() {
                return None;
            }
            Some(RecoveryVerdict::Hold {
                reason,
                retryable: answer.get("retryable")?.as_bool()?,
                retry_at: answer
                    .get("nextAttemptAt")
                    .and_then(Value::as_str)
                    .and_then(parse_iso),
            })
        }
        _ => None,
    }
}

/// A `runtimeTurnSettledTargetResolver.resolve` answer, or `None` when it
/// has the wrong shape.
fn settled_target(answer: &Value) -> Option<SettledTarget> {
    let text = |key: &str| {
        answer
            .get(key)
            .and_then(Value::as_str)
            .map(|value| clip(value.trim()))
            .filter(|value| !value.is_empty())
    };
    match answer.get("ok")? {
        Value::Bool(true) => Some(SettledTarget::Member {
            team_name: text("teamName")?,
            member_name: text("memberName")?,
        }),
        Value::Bool(false) => Some(SettledTarget::Unresolved(text("reason")?)),
        _ => None,
    }
}

/// The app's nudge payload as its ports get it: the planned payload plus
/// the fields the app's inbox rows carry as constants.
fn app_payload(payload: &crate::domain::nudge::NudgePayload) -> Value {
    let mut value = json!({
        "from": "system",
        "to": payload.to,
        "messageKind": "member_work_sync_nudge",
        "source": "member-work-sync",
        "actionMode": "do",
        "workSyncIntent": payload.work_sync_intent,
        "text": payload.text,
        "taskRefs": payload.task_refs,
    });
    if let Some(key) = &payload.work_sync_intent_key {
        value["workSyncIntentKey"] = json!(key);
    }
    if !payload.work_sync_review_request_event_ids.is_empty() {
        value["workSyncReviewRequestEventIds"] = json!(payload.work_sync_review_request_event_ids);
    }
    value
}

/// Strings of an optional `diagnostics` array (others skipped, each clipped).
fn diagnostics_of(answer: &Value) -> Vec<String> {
    answer
        .get("diagnostics")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(clip)
                .take(MAX_TEAMS)
                .collect()
        })
        .unwrap_or_default()
}

/// A `reviewPickupDelivery.deliver` answer, or `None` when it has the wrong shape.
fn review_pickup_outcome(answer: &Value) -> Option<ReviewPickupDelivered> {
    let text = |key: &str| answer.get(key).and_then(Value::as_str).map(clip);
    match answer.get("ok")? {
        Value::Bool(true) => Some(ReviewPickupDelivered::Accepted {
            response_proven: match answer.get("state")?.as_str()? {
                "prompt_accepted" => false,
                "response_proven" => true,
                _ => return None,
            },
            message_id: text("messageId")?,
            diagnostics: diagnostics_of(answer),
        }),
        Value::Bool(false) => Some(ReviewPickupDelivered::Refused {
            failure: match answer.get("reason")?.as_str()? {
                "capability_absent" => ReviewPickupFailure::CapabilityAbsent,
                "retryable_failure" => ReviewPickupFailure::Retryable,
                "terminal_failure" => ReviewPickupFailure::Terminal,
                _ => return None,
            },
            message: text("message").unwrap_or_default(),
            diagnostics: diagnostics_of(answer),
            retry_at: answer
                .get("retryAfterIso")
                .and_then(Value::as_str)
                .and_then(parse_iso),
        }),
        _ => None,
    }
}

/// At most [`MAX_ANSWER_CHARS`] characters of `text`.
fn clip(text: &str) -> String {
    text.chars().take(MAX_ANSWER_CHARS).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_their_option_names() {
        for kind in QuestionKind::ALL {
            assert_eq!(QuestionKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(QuestionKind::parse("reviewPickupDelivery"), None);
        assert_eq!(
            QuestionKind::parse("reviewPickupDelivery.deliver"),
            Some(QuestionKind::ReviewPickupDeliver)
        );
    }

    #[test]
    fn review_pickup_answers_read_as_the_apps_outcomes() {
        let cases = [
            (
                json!({ "ok": true, "state": "response_proven", "messageId": "m1", "diagnostics": ["d", 3] }),
                Some(ReviewPickupDelivered::Accepted {
                    response_proven: true,
                    message_id: "m1".into(),
                    diagnostics: vec!["d".into()],
                }),
            ),
            (
                json!({ "ok": false, "reason": "retryable_failure", "message": "busy", "retryAfterIso": "2026-11-22T10:00:00.000Z" }),
                Some(ReviewPickupDelivered::Refused {
                    failure: ReviewPickupFailure::Retryable,
                    message: "busy".into(),
                    diagnostics: vec![],
                    retry_at: parse_iso("2026-11-22T10:00:00.000Z"),
                }),
            ),
            (json!({ "ok": false, "reason": "gone" }), None),
            (json!({ "ok": true, "state": "prompt_accepted" }), None),
            (json!("yes"), None),
        ];
        for (answer, expected) in cases {
            assert_eq!(review_pickup_outcome(&answer), expected, "{answer}");
        }
    }

    #[test]
    fn guard_and_resolver_answers_read_as_the_apps_outcomes() {
        let guard = [
            (json!({ "ok": true }), Some(RecoveryVerdict::Dispatch)),
            (
                json!({ "ok": false, "reason": " proof_missing_recovery_suppressed ", "retryable": false }),
                Some(RecoveryVerdict::Hold {
                    reason: "proof_missing_recovery_suppressed".into(),
                    retryable: false,
                    retry_at: None,
                }),
            ),
            (
                json!({ "ok": false, "reason": "grace", "retryable": true, "nextAttemptAt": "2026-11-22T10:00:00.000Z" }),
                Some(RecoveryVerdict::Hold {
                    reason: "grace".into(),
                    retryable: true,
                    retry_at: parse_iso("2026-11-22T10:00:00.000Z"),
                }),
            ),
            (json!({ "ok": false, "reason": "grace" }), None),
            (
                json!({ "ok": false, "reason": " ", "retryable": true }),
                None,
            ),
            (json!(true), None),
        ];
        for (answer, expected) in guard {
            assert_eq!(recovery_verdict(&answer), expected, "{answer}");
        }
        let resolver = [
            (
                json!({ "ok": true, "teamName": "forge", "memberName": " bob " }),
                Some(SettledTarget::Member {
                    team_name: "forge".into(),
                    member_name: "bob".into(),
                }),
            ),
            (
                json!({ "ok": false, "reason": "no_matching_member_session" }),
                Some(SettledTarget::Unresolved(
                    "no_matching_member_session".into(),
                )),
            ),
            (json!({ "ok": true, "teamName": "forge" }), None),
            (json!({ "ok": false }), None),
            (json!(null), None),
        ];
        for (answer, expected) in resolver {
            assert_eq!(settled_target(&answer), expected, "{answer}");
        }
    }

    #[test]
    fn a_late_or_unknown_answer_is_dropped_and_close_ends_waits() {
        let waiting = Waiting::default();
        waiting.settle(7, Ok(Value::Null));
        let (sender, receiver) = sync_channel(1);
        waiting.senders.lock().unwrap().insert(1, sender);
        waiting.close();
        assert_eq!(
            receiver.recv_timeout(Duration::from_secs(5)),
            Err(RecvTimeoutError::Disconnected)
        );
        assert!(waiting.closed.load(Ordering::SeqCst));
    }
}
