//! Why a claimed nudge is tried again later. Each reason has one wire
//! spelling (the item's `lastError`, the journal line's `reason`) and one
//! journal event; the dispatcher decides on the variant, never on the text.
//!
//! The events follow the app's dispatcher: a store, inbox or guard call that
//! failed is `nudge_retryable` (the app throws there); a hold found by
//! revalidation is `nudge_skipped` unless it has an event of its own
//! (`member_busy`, `watchdog_cooldown_active`); a retryable refusal of the
//! review pickup delivery is `review_pickup_wake_failed_retryable`. A hold
//! the app's proof-missing guard asks for is spelt by the app, so its event
//! is read from that spelling once, when the answer arrives
//! ([`RetryReason::guard_hold`]), as the app maps a revalidation reason.

use std::fmt;

use crate::domain::audit::AuditKind;

use super::activation::ActivationHold;

/// Prefix of [`RetryReason::MemberBusy`]'s spelling.
const MEMBER_BUSY_PREFIX: &str = "member_busy:";

/// Why an attempt ends retryable; `Display` gives its wire spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetryReason {
    /// The member's stored status could not be read again
    /// (`agenda_revalidation_failed:<error>`).
    AgendaRevalidationFailed(String),
    /// The team's metrics could not be read (`metrics_unavailable`).
    MetricsUnavailable,
    /// Activation holds the nudge back (its planner code).
    Held(ActivationHold),
    /// The member's outbox rows could not be read, so the hourly limit
    /// cannot be checked (`outbox_unavailable:<error>`).
    OutboxUnavailable(String),
    /// The member had the hour's deliveries (`member_nudge_rate_limited`).
    RateLimited,
    /// A busy signal (the app's, or the tool activity) named this reason
    /// (`member_busy:<reason>`).
    MemberBusy(String),
    /// The watchdog journal could not be read, so a cooldown cannot be
    /// checked (`watchdog_journal_unavailable:<error>`).
    WatchdogJournalUnavailable(String),
    /// A watchdog alert on the nudge's tasks is still cooling down
    /// (`watchdog_cooldown_active`).
    WatchdogCooldownActive,
    /// The inbox write failed and may succeed later
    /// (`inbox_write_failed:<error>`).
    InboxWriteFailed(String),
    /// The app's proof-missing guard threw or did not answer in time
    /// (`proof_missing_recovery_guard_failed:<error>`).
    GuardFailed(String),
    /// The app's proof-missing guard asked to hold the nudge and retry.
    GuardHold {
        /// The reason as the app spelt it.
        reason: String,
        /// The journal event that spelling maps to.
        event: AuditKind,
    },
    /// The app's review pickup delivery refused, worth trying again (its
    /// message as the reason).
    PickupRefused(String),
    /// The app's review pickup delivery threw or did not answer in time
    /// (its error as the reason).
    PickupCallFailed(String),
}

impl RetryReason {
    /// A retryable hold of the app's proof-missing guard, journaled as the
    /// app maps a revalidation reason: the four `proof_missing_recovery_*`
    /// reasons and the busy, cooldown, suppression and inactive-team ones
    /// have events of their own, anything else is `nudge_skipped`.
    pub fn guard_hold(reason: String) -> Self {
        let event = match reason.as_str() {
            "proof_missing_recovery_scheduled" => AuditKind::ProofMissingRecoveryScheduled,
            "proof_missing_recovery_coalesced" => AuditKind::ProofMissingRecoveryCoalesced,
            "proof_missing_recovery_suppressed" => AuditKind::ProofMissingRecoverySuppressed,
            "proof_missing_recovery_conflict" => AuditKind::ProofMissingRecoveryConflict,
            "watchdog_cooldown_active" => AuditKind::WatchdogCooldownActive,
            "work_sync_suppressed_no_accepted_report" => AuditKind::NudgeSuppressed,
            "team_inactive" => AuditKind::TeamInactive,
            busy if busy.starts_with(MEMBER_BUSY_PREFIX) => AuditKind::MemberBusy,
            _ => AuditKind::NudgeSkipped,
        };
        Self::GuardHold { reason, event }
    }

    /// The journal event of an attempt retried for this reason.
    pub fn journal_event(&self) -> AuditKind {
        match self {
            Self::AgendaRevalidationFailed(_) | Self::Held(_) | Self::RateLimited => {
                AuditKind::NudgeSkipped
            }
            Self::MetricsUnavailable
            | Self::OutboxUnavailable(_)
            | Self::WatchdogJournalUnavailable(_)
            | Self::InboxWriteFailed(_)
            | Self::GuardFailed(_)
            | Self::PickupCallFailed(_) => AuditKind::NudgeRetryable,
            Self::MemberBusy(_) => AuditKind::MemberBusy,
            Self::WatchdogCooldownActive => AuditKind::WatchdogCooldownActive,
            Self::GuardHold { event, .. } => *event,
            Self::PickupRefused(_) => AuditKind::ReviewPickupWakeFailedRetryable,
        }
    }
}

impl fmt::Display for RetryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AgendaRevalidationFailed(error) => {
                write!(f, "agenda_revalidation_failed:{error}")
            }
            Self::MetricsUnavailable => f.write_str("metrics_unavailable"),
            Self::Held(hold) => f.write_str(hold.as_str()),
            Self::OutboxUnavailable(error) => write!(f, "outbox_unavailable:{error}"),
            Self::RateLimited => f.write_str("member_nudge_rate_limited"),
            Self::MemberBusy(reason) => write!(f, "{MEMBER_BUSY_PREFIX}{reason}"),
            Self::WatchdogJournalUnavailable(error) => {
                write!(f, "watchdog_journal_unavailable:{error}")
            }
            Self::WatchdogCooldownActive => f.write_str("watchdog_cooldown_active"),
            Self::InboxWriteFailed(error) => write!(f, "inbox_write_failed:{error}"),
            Self::GuardFailed(error) => write!(f, "proof_missing_recovery_guard_failed:{error}"),
            Self::GuardHold { reason, .. }
            | Self::PickupRefused(reason)
            | Self::PickupCallFailed(reason) => f.write_str(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_has_its_spelling_and_event() {
        let cases = [
            (
                RetryReason::MemberBusy("active_tool_activity".into()),
                "member_busy:active_tool_activity",
                AuditKind::MemberBusy,
            ),
            (
                RetryReason::WatchdogCooldownActive,
                "watchdog_cooldown_active",
                AuditKind::WatchdogCooldownActive,
            ),
            (
                RetryReason::InboxWriteFailed("EACCES".into()),
                "inbox_write_failed:EACCES",
                AuditKind::NudgeRetryable,
            ),
            (
                RetryReason::OutboxUnavailable("disk full".into()),
                "outbox_unavailable:disk full",
                AuditKind::NudgeRetryable,
            ),
            (
                RetryReason::WatchdogJournalUnavailable("EIO".into()),
                "watchdog_journal_unavailable:EIO",
                AuditKind::NudgeRetryable,
            ),
            (
                RetryReason::MetricsUnavailable,
                "metrics_unavailable",
                AuditKind::NudgeRetryable,
            ),
            (
                RetryReason::GuardFailed("timed out".into()),
                "proof_missing_recovery_guard_failed:timed out",
                AuditKind::NudgeRetryable,
            ),
            (
                RetryReason::Held(ActivationHold::BlockingMetrics),
                "blocking_metrics",
                AuditKind::NudgeSkipped,
            ),
            (
                RetryReason::Held(ActivationHold::Phase2NotReady),
                "phase2_not_ready",
                AuditKind::NudgeSkipped,
            ),
            (
                RetryReason::Held(ActivationHold::StatusNotNudgeable),
                "status_not_nudgeable",
                AuditKind::NudgeSkipped,
            ),
            (
                RetryReason::RateLimited,
                "member_nudge_rate_limited",
                AuditKind::NudgeSkipped,
            ),
            (
                RetryReason::AgendaRevalidationFailed("EIO".into()),
                "agenda_revalidation_failed:EIO",
                AuditKind::NudgeSkipped,
            ),
            (
                RetryReason::PickupRefused("runtime busy".into()),
                "runtime busy",
                AuditKind::ReviewPickupWakeFailedRetryable,
            ),
            (
                RetryReason::PickupCallFailed("threw".into()),
                "threw",
                AuditKind::NudgeRetryable,
            ),
        ];
        for (reason, spelling, event) in cases {
            assert_eq!(
                (reason.to_string().as_str(), reason.journal_event()),
                (spelling, event)
            );
        }
    }

    #[test]
    fn a_guard_hold_is_journaled_as_the_app_maps_its_spelling() {
        let cases = [
            (
                "proof_missing_recovery_scheduled",
                AuditKind::ProofMissingRecoveryScheduled,
            ),
            (
                "proof_missing_recovery_coalesced",
                AuditKind::ProofMissingRecoveryCoalesced,
            ),
            (
                "proof_missing_recovery_suppressed",
                AuditKind::ProofMissingRecoverySuppressed,
            ),
            (
                "proof_missing_recovery_conflict",
                AuditKind::ProofMissingRecoveryConflict,
            ),
            ("member_busy:lead_turn", AuditKind::MemberBusy),
            (
                "watchdog_cooldown_active",
                AuditKind::WatchdogCooldownActive,
            ),
            (
                "work_sync_suppressed_no_accepted_report",
                AuditKind::NudgeSuppressed,
            ),
            ("team_inactive", AuditKind::TeamInactive),
            ("inbox_write_failed:EIO", AuditKind::NudgeSkipped),
            ("original_message_answered", AuditKind::NudgeSkipped),
        ];
        for (spelling, event) in cases {
            let reason = RetryReason::guard_hold(spelling.into());
            assert_eq!(
                (reason.to_string().as_str(), reason.journal_event()),
                (spelling, event)
            );
        }
    }
}
