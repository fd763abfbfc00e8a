//! The Electron entry's callbacks as the addon asks them: each [`Host`]
//! port call becomes one question `{ kind, input }` whose answer is JSON
//! (the app's shapes, read in `answers`). How a question reaches the host
//! and how long its answer is waited for is the [`QuestionChannel`]'s job
//! ([`waits`], over the binding's `onHostQuestion`); here an unusable answer, a failure or
//! a timeout is logged with a stable code and answered with the port's
//! fallback, as the app's own callers do.

mod answers;
pub(crate) mod waits;

use crate::domain::js_semantics::js_trim;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use self::answers::{
    app_payload, clip, recovery_verdict, review_pickup_outcome, settled_target, MAX_ANSWER_CHARS,
    MAX_TEAMS,
};
use crate::application::host::{
    BusyQuestion, BusyRank, ControlUrl, DeliveryWake, Host, HostBusy, RecoveryQuestion,
    RecoveryVerdict, ReviewPickupDelivered, ReviewPickupEscalation, ReviewPickupRequest,
    SettledQuestion, SettledTarget,
};
use crate::application::log::{LogCode, LogEntry, LogLevel, LogSink};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::team::ProviderId;
use crate::domain::time::{format_iso, parse_iso};

/// A question the host can answer: the Electron entry's option names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum QuestionKind {
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
    /// Every question, in the order of the option names.
    pub(crate) const ALL: [Self; 14] = [
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
    pub(crate) fn as_str(self) -> &'static str {
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
    pub(crate) fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// Why a question got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unanswered {
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
    pub(crate) fn describe(self) -> String {
        match self {
            Self::Failed(error) => error,
            Self::TimedOut => "timed out".into(),
            Self::Unusable => "unusable answer".into(),
            Self::NotAsked => "no answer".into(),
        }
    }
}

/// Carries one question to the host and waits, bounded, for its answer.
pub(crate) trait QuestionChannel: Send + Sync {
    /// The host's answer to `kind` about `input`, or why there is none.
    fn ask(&self, kind: QuestionKind, input: Value) -> Result<Value, Unanswered>;
}

/// The [`Host`] of the `answers` kinds asked through a channel.
pub(crate) struct HostQuestions {
    channel: Box<dyn QuestionChannel>,
    answers: HashSet<QuestionKind>,
    /// The channel's bound, named when an answer was late.
    timeout: Duration,
    log: Arc<dyn LogSink>,
}

impl HostQuestions {
    /// Asks `channel` the `answers` kinds (others have no answer), whose
    /// waits are bounded by `timeout`; failures go to `log`.
    pub(crate) fn new(
        channel: Box<dyn QuestionChannel>,
        answers: HashSet<QuestionKind>,
        timeout: Duration,
        log: Arc<dyn LogSink>,
    ) -> Self {
        Self {
            channel,
            answers,
            timeout,
            log,
        }
    }

    /// Asks one question; `None` when the host has no such callback.
    fn ask(&self, kind: QuestionKind, input: Value) -> Option<Result<Value, Unanswered>> {
        if !self.answers.contains(&kind) {
            return None;
        }
        let started = Instant::now();
        let answer = self.channel.ask(kind, input).map_err(|why| match why {
            Unanswered::Failed(error) => Unanswered::Failed(clip(&error)),
            other => other,
        });
        if let Err(why) = &answer {
            self.report(kind, why, started.elapsed());
        }
        Some(answer)
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

impl Host for HostQuestions {
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
                .map(|name| clip(js_trim(name)))
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
                if !js_trim(&url).is_empty()
                    && js_trim(&url).chars().count() <= MAX_ANSWER_CHARS
                    && !url.chars().any(|c| c == '"' || c.is_control()) =>
            {
                ControlUrl::Url(js_trim(&url).to_string())
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

    fn turn_settled_target(
        &self,
        event: &SettledQuestion<'_>,
    ) -> Option<Result<SettledTarget, String>> {
        let kind = QuestionKind::TurnSettledTargetResolver;
        // The event made JSON only when the app has the resolver (see
        // `SettledQuestion`).
        if !self.answers.contains(&kind) {
            return None;
        }
        Some(match self.ask(kind, event.to_value()?)? {
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

    /// Answers every question with one scripted outcome and keeps the log.
    struct Scripted(Result<Value, Unanswered>);
    impl QuestionChannel for Scripted {
        fn ask(&self, _: QuestionKind, _: Value) -> Result<Value, Unanswered> {
            self.0.clone()
        }
    }
    #[derive(Default)]
    struct Kept(std::sync::Mutex<Vec<(LogCode, String)>>);
    impl LogSink for Kept {
        fn log(&self, entry: LogEntry) {
            self.0.lock().unwrap().push((entry.code, entry.message));
        }
    }

    #[test]
    fn failures_are_logged_and_answered_with_the_ports_fallback() {
        use LogCode::{HostCallbackFailed as Failed, HostCallbackTimedOut as TimedOut};
        let long = "e".repeat(MAX_ANSWER_CHARS + 10);
        // (host answers canDispatchNudges?, outcome, answer, logged)
        let cases = [
            (false, Ok(json!(false)), true, None),
            (true, Ok(json!(false)), false, None),
            (true, Ok(json!(true)), true, None),
            (
                true,
                Ok(json!("yes")),
                false,
                Some((
                    Failed,
                    "canDispatchNudges answered a value of the wrong shape".to_string(),
                )),
            ),
            (
                true,
                Err(Unanswered::TimedOut),
                false,
                Some((
                    TimedOut,
                    "canDispatchNudges did not settle within 25 ms".to_string(),
                )),
            ),
            (
                true,
                Err(Unanswered::Failed(long.clone())),
                false,
                Some((
                    Failed,
                    format!("canDispatchNudges failed: {}", &long[..MAX_ANSWER_CHARS]),
                )),
            ),
            (true, Err(Unanswered::NotAsked), false, None),
        ];
        for (asked, outcome, answer, logged) in cases {
            let log = Arc::new(Kept::default());
            let answers = asked
                .then_some(QuestionKind::CanDispatchNudges)
                .into_iter()
                .collect();
            let host = HostQuestions::new(
                Box::new(Scripted(outcome.clone())),
                answers,
                Duration::from_millis(25),
                log.clone(),
            );
            assert_eq!(
                host.can_dispatch_nudges(&TeamName::parse("forge").unwrap()),
                answer,
                "{outcome:?}"
            );
            let kept = log.0.lock().unwrap().clone();
            assert_eq!(kept, logged.into_iter().collect::<Vec<_>>(), "{outcome:?}");
        }
    }
}
