//! Questions the addon asks the host app at decision time (the Electron
//! entry's `isTeamActive`, `canDispatchNudges`, `resolveControlUrl`, ...
//! options), as the app's feature asks its own ports.
//!
//! Every question has a fallback: a host that has no answer for it (the
//! option was not given, the callback threw, timed out or answered
//! something unusable, the instance is stopping) answers `None`, and the
//! caller goes on as the addon decides without the host. The host itself
//! bounds each wait and logs why an answer is missing; callers never block
//! longer than that bound.

use std::sync::RwLock;

use crate::domain::names::{MemberName, TeamName};
use crate::domain::nudge::{NudgePayload, TaskRef};
use crate::domain::team::ProviderId;
use crate::domain::time::EpochMs;
use crate::domain::turn_settled::normalize::TurnSettledEvent;

/// A busy verdict from one of the app's busy signals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBusy {
    /// The app's reason (`opencode_prompt_delivery_busy`, `pending_tool_approval`, ...).
    pub reason: String,
    /// When to try again, when the signal said.
    pub retry_at: Option<EpochMs>,
}

/// What the busy question is about: the nudge about to be delivered.
#[derive(Debug, Clone, PartialEq)]
pub struct BusyQuestion<'a> {
    /// Team of the member.
    pub team_name: &'a TeamName,
    /// The member the nudge would be delivered to.
    pub member_name: &'a MemberName,
    /// Now, by the instance clock.
    pub now: EpochMs,
    /// The nudge payload's intent fields and task refs, as the app's port gets them.
    pub payload: serde_json::Value,
}

/// Which of the app's busy signals a question goes to: the app asks its
/// priority signals before the addon's tool activity and its extra ones after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyRank {
    /// The app's `priorityBusySignals`, asked before the addon's tool
    /// activity is looked at.
    Priority,
    /// The app's `extraBusySignals`, asked after it.
    Extra,
}

/// A delivered nudge the app may wake its member for (`nudgeDeliveryWake`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryWake<'a> {
    /// Team of the member.
    pub team_name: &'a TeamName,
    /// The member the nudge was delivered to.
    pub member_name: &'a MemberName,
    /// The inbox message id (the outbox item id).
    pub message_id: &'a str,
    /// The member's provider, when its status named one.
    pub provider_id: Option<ProviderId>,
    /// True when this attempt wrote the row; false when it was already there.
    pub inserted: bool,
}

/// A review pickup the app may deliver straight to the member's runtime
/// (`reviewPickupDelivery.deliver`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewPickupRequest<'a> {
    /// Team of the member.
    pub team_name: &'a TeamName,
    /// The reviewer the pickup is for.
    pub member_name: &'a MemberName,
    /// The inbox message id (the outbox item id).
    pub message_id: &'a str,
    /// The member's provider, when its status named one.
    pub provider_id: Option<ProviderId>,
    /// The nudge as written into the inbox.
    pub payload: &'a NudgePayload,
    /// True when this attempt wrote the inbox row.
    pub inserted: bool,
    /// Now, by the instance clock.
    pub now: EpochMs,
}

/// Why the app did not deliver a review pickup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewPickupFailure {
    /// The member's runtime cannot take a direct delivery.
    CapabilityAbsent,
    /// Worth trying again.
    Retryable,
    /// Never worth trying again.
    Terminal,
}

/// What the app's review pickup delivery answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewPickupDelivered {
    /// The runtime took the prompt; `response_proven` when it also answered.
    Accepted {
        /// `response_proven` rather than `prompt_accepted`.
        response_proven: bool,
        /// The message id the app delivered.
        message_id: String,
        /// The app's diagnostics.
        diagnostics: Vec<String>,
    },
    /// Not delivered.
    Refused {
        /// Whether the item may be tried again, and by which path.
        failure: ReviewPickupFailure,
        /// The app's words.
        message: String,
        /// The app's diagnostics.
        diagnostics: Vec<String>,
        /// When to try again, when the app said.
        retry_at: Option<EpochMs>,
    },
}

/// A review pickup the app should escalate to the lead (`reviewPickupEscalation.escalate`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewPickupEscalation<'a> {
    /// Team of the reviewer.
    pub team_name: &'a TeamName,
    /// The reviewer who did not pick the review up.
    pub member_name: &'a MemberName,
    /// Why it is escalated.
    pub reason: &'a str,
    /// Now, by the instance clock.
    pub now: EpochMs,
    /// The reviewer's agenda fingerprint, when known.
    pub agenda_fingerprint: Option<&'a str>,
    /// The review requests still waiting.
    pub review_request_event_ids: &'a [String],
    /// Why, in diagnostics.
    pub diagnostics: &'a [String],
    /// The tasks concerned.
    pub task_refs: &'a [TaskRef],
}

/// The control URL as the host resolves it for one delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlUrl {
    /// The app has no resolver: deliveries use the constructor's `controlUrl`.
    NotResolved,
    /// The resolver gave this URL (trimmed, not blank).
    Url(String),
    /// The resolver has one but it is unavailable now (blank, threw, timed
    /// out): the delivery waits and is tried again, as the app's sink does.
    Unavailable(String),
}

/// A queued proof-missing recovery about to be delivered
/// (`proofMissingRecoveryGuard.shouldDispatch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryQuestion<'a> {
    /// Team of the member.
    pub team_name: &'a TeamName,
    /// The member the recovery would be delivered to.
    pub member_name: &'a MemberName,
    /// `proof-missing:<originalMessageId>`.
    pub intent_key: &'a str,
    /// The message whose delivery proof was missing.
    pub original_message_id: &'a str,
    /// The task ids of the nudge.
    pub task_ids: Vec<&'a str>,
    /// Now, by the instance clock.
    pub now: EpochMs,
}

/// A turn-settled event the app's `runtimeTurnSettledTargetResolver` is
/// asked about, made JSON (the app's `RuntimeTurnSettledEvent`) only by a
/// host that asks: the drain offers every event to the host, and building
/// its JSON for a host without the resolver, only to drop it, cost about a
/// fourteenth of the user CPU a drained Stop event took.
#[derive(Debug, Clone, Copy)]
pub struct SettledQuestion<'a> {
    event: &'a TurnSettledEvent,
}

impl<'a> SettledQuestion<'a> {
    /// The question about `event`.
    pub(crate) fn new(event: &'a TurnSettledEvent) -> Self {
        Self { event }
    }

    /// The event as the app's `RuntimeTurnSettledEvent`; `None` only for
    /// what JSON cannot hold (never, for an event of strings).
    pub fn to_value(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self.event).ok()
    }
}

/// What the app's proof-missing recovery guard answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryVerdict {
    /// Deliver the recovery.
    Dispatch,
    /// Do not deliver it now.
    Hold {
        /// The app's reason (`proof_missing_recovery_suppressed`, ...).
        reason: String,
        /// Worth trying again (else the item is superseded).
        retryable: bool,
        /// When to try again, when the app said.
        retry_at: Option<EpochMs>,
    },
}

/// What the app's turn-settled target resolver answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettledTarget {
    /// The turn was this member's.
    Member {
        /// Team dir name, checked where the answer was read.
        team_name: TeamName,
        /// The member whose turn it was, as the app named it (checked).
        member_name: MemberName,
    },
    /// The app named a member, but its team or member name is not safe as
    /// one folder name: no member the addon can store anything for.
    UnsafeName,
    /// No target, for this reason.
    Unresolved(String),
}

/// The host app's answers. `None`: no answer, use the fallback.
pub trait Host: Send + Sync {
    /// `isTeamActive(teamName)`.
    fn team_active(&self, team_name: &TeamName) -> Option<bool>;
    /// `isMemberActive({teamName, memberName})`.
    fn member_active(&self, team_name: &TeamName, member_name: &MemberName) -> Option<bool>;
    /// `canDispatchNudges(teamName)`: true without the option; false when
    /// it failed (the app's readiness check fails closed).
    fn can_dispatch_nudges(&self, team_name: &TeamName) -> bool;
    /// `listLifecycleActiveTeamNames()`: the teams a scheduled dispatch
    /// serves; `None` without the option (the teams with an outbox are
    /// served), empty when it failed (the pass dispatches nothing).
    fn lifecycle_active_teams(&self) -> Option<Vec<String>>;
    /// `resolveControlUrl()`, asked per delivery.
    fn control_url(&self) -> ControlUrl;
    /// The app's busy signals of `rank`, in their order; the first busy
    /// verdict wins. A signal that fails counts as not busy (logged).
    fn busy(&self, question: &BusyQuestion<'_>, rank: BusyRank) -> Option<HostBusy>;
    /// `nudgeDeliveryWake.schedule(...)`; `Err` carries why the wake failed.
    fn delivery_wake(&self, wake: &DeliveryWake<'_>) -> Result<(), String>;

    // The review pickup ports below: `canDeliver` and `escalate` are asked
    // by the planner and the dispatcher (`application::review_pickup`).

    /// `reviewPickupDelivery.canDeliver(...)`: `None` without the option,
    /// `Err(reason)` when the app refuses (or the call failed).
    fn review_pickup_can_deliver(
        &self,
        _team_name: &TeamName,
        _member_name: &MemberName,
        _provider_id: Option<ProviderId>,
    ) -> Option<Result<(), String>> {
        None
    }
    /// `reviewPickupDelivery.deliver(...)`: `None` without the option;
    /// `Err` carrying why when the call threw, was late or answered
    /// something unusable (the app's dispatcher retries such an attempt).
    fn review_pickup_deliver(
        &self,
        _request: &ReviewPickupRequest<'_>,
    ) -> Option<Result<ReviewPickupDelivered, String>> {
        None
    }
    /// `reviewPickupEscalation.escalate(...)`: `None` without the option,
    /// `Err` carrying why it failed.
    fn review_pickup_escalate(
        &self,
        _escalation: &ReviewPickupEscalation<'_>,
    ) -> Option<Result<(), String>> {
        None
    }
    /// `proofMissingRecoveryGuard.shouldDispatch(...)`: `None` without the
    /// option, `Err` carrying why the call failed (threw, late, unusable).
    fn proof_missing_recovery(
        &self,
        _question: &RecoveryQuestion<'_>,
    ) -> Option<Result<RecoveryVerdict, String>> {
        None
    }
    /// `runtimeTurnSettledTargetResolver.resolve(event)` (`event` as the
    /// app's `RuntimeTurnSettledEvent`): `None` without the option, `Err`
    /// carrying why the call failed.
    fn turn_settled_target(
        &self,
        _event: &SettledQuestion<'_>,
    ) -> Option<Result<SettledTarget, String>> {
        None
    }
    /// `configFileAccess(configPath)`: `None` without the option; `true`
    /// when it resolved, `false` when it rejected, was late or the
    /// instance is stopping (the app's coordinator treats a rejection as
    /// "not there yet").
    fn config_file_access(&self, _config_path: &str) -> Option<bool> {
        None
    }
}

/// The instance's host: forwards to the connected one; without one (no
/// Electron entry, or after dispose) every question has no answer.
#[derive(Default)]
pub struct HostRelay {
    host: RwLock<Option<Box<dyn Host>>>,
}

impl std::fmt::Debug for HostRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HostRelay")
    }
}

impl HostRelay {
    /// Asks `host` from now on.
    pub fn connect(&self, host: Box<dyn Host>) {
        *self.host.write().unwrap_or_else(|p| p.into_inner()) = Some(host);
    }

    /// Drops the host (dispose releases the JS callbacks).
    pub(crate) fn disconnect(&self) {
        *self.host.write().unwrap_or_else(|p| p.into_inner()) = None;
    }

    fn ask<T>(&self, question: impl FnOnce(&dyn Host) -> T) -> Option<T> {
        self.host
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_deref()
            .map(question)
    }
}

impl Host for HostRelay {
    fn team_active(&self, team_name: &TeamName) -> Option<bool> {
        self.ask(|h| h.team_active(team_name)).flatten()
    }
    fn member_active(&self, team_name: &TeamName, member_name: &MemberName) -> Option<bool> {
        self.ask(|h| h.member_active(team_name, member_name))
            .flatten()
    }
    fn can_dispatch_nudges(&self, team_name: &TeamName) -> bool {
        self.ask(|h| h.can_dispatch_nudges(team_name))
            .unwrap_or(true)
    }
    fn lifecycle_active_teams(&self) -> Option<Vec<String>> {
        self.ask(|h| h.lifecycle_active_teams()).flatten()
    }
    fn control_url(&self) -> ControlUrl {
        self.ask(|h| h.control_url())
            .unwrap_or(ControlUrl::NotResolved)
    }
    fn busy(&self, question: &BusyQuestion<'_>, rank: BusyRank) -> Option<HostBusy> {
        self.ask(|h| h.busy(question, rank)).flatten()
    }
    fn delivery_wake(&self, wake: &DeliveryWake<'_>) -> Result<(), String> {
        self.ask(|h| h.delivery_wake(wake)).unwrap_or(Ok(()))
    }
    fn review_pickup_can_deliver(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        provider_id: Option<ProviderId>,
    ) -> Option<Result<(), String>> {
        self.ask(|h| h.review_pickup_can_deliver(team_name, member_name, provider_id))
            .flatten()
    }
    fn review_pickup_deliver(
        &self,
        request: &ReviewPickupRequest<'_>,
    ) -> Option<Result<ReviewPickupDelivered, String>> {
        self.ask(|h| h.review_pickup_deliver(request)).flatten()
    }
    fn review_pickup_escalate(
        &self,
        escalation: &ReviewPickupEscalation<'_>,
    ) -> Option<Result<(), String>> {
        self.ask(|h| h.review_pickup_escalate(escalation)).flatten()
    }
    fn proof_missing_recovery(
        &self,
        question: &RecoveryQuestion<'_>,
    ) -> Option<Result<RecoveryVerdict, String>> {
        self.ask(|h| h.proof_missing_recovery(question)).flatten()
    }
    fn turn_settled_target(
        &self,
        event: &SettledQuestion<'_>,
    ) -> Option<Result<SettledTarget, String>> {
        self.ask(|h| h.turn_settled_target(event)).flatten()
    }
    fn config_file_access(&self, config_path: &str) -> Option<bool> {
        self.ask(|h| h.config_file_access(config_path)).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl Host for Fixed {
        fn team_active(&self, _: &TeamName) -> Option<bool> {
            Some(false)
        }
        fn member_active(&self, _: &TeamName, _: &MemberName) -> Option<bool> {
            None
        }
        fn can_dispatch_nudges(&self, _: &TeamName) -> bool {
            false
        }
        fn lifecycle_active_teams(&self) -> Option<Vec<String>> {
            Some(vec!["forge".into()])
        }
        fn control_url(&self) -> ControlUrl {
            ControlUrl::Url("http://127.0.0.1:1".into())
        }
        fn busy(&self, _: &BusyQuestion<'_>, _: BusyRank) -> Option<HostBusy> {
            None
        }
        fn delivery_wake(&self, _: &DeliveryWake<'_>) -> Result<(), String> {
            Err("down".into())
        }
    }

    #[test]
    fn the_relay_answers_only_while_connected() {
        let relay = HostRelay::default();
        let forge = TeamName::parse("forge").unwrap();
        let jack = MemberName::parse("jack").unwrap();
        let wake = DeliveryWake {
            team_name: &forge,
            member_name: &jack,
            message_id: "m",
            provider_id: None,
            inserted: true,
        };
        assert_eq!(relay.team_active(&forge), None);
        assert_eq!(relay.control_url(), ControlUrl::NotResolved);
        assert_eq!(relay.delivery_wake(&wake), Ok(()));
        relay.connect(Box::new(Fixed));
        assert_eq!(relay.team_active(&forge), Some(false));
        assert_eq!(relay.member_active(&forge, &jack), None);
        assert_eq!(relay.lifecycle_active_teams(), Some(vec!["forge".into()]));
        assert_eq!(relay.delivery_wake(&wake), Err("down".into()));
        assert!(!relay.can_dispatch_nudges(&forge));
        relay.disconnect();
        assert!(relay.can_dispatch_nudges(&forge));
    }
}
