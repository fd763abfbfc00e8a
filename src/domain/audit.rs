//! The closed set of audit journal event kinds (`journal.jsonl` `event`).
//!
//! The reference names 37 kinds; this addon journals three more of its own
//! (`status_write_failed`, `metrics_unavailable`, `outbox_unavailable`). Each
//! kind has one wire spelling, [`AuditKind::as_str`]; a line read back is
//! parsed with [`AuditKind::parse`], which gives `None` for a kind an older
//! or newer writer used (the reader keeps such a line as it is).

/// Items of a list a journal line keeps (the app's bound): a writer need
/// build no more of a list than these.
pub(crate) const LIST_ITEMS_KEPT: usize = 20;

/// What a journal line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum AuditKind {
    TurnSettledClaimed,
    TurnSettledResolved,
    TurnSettledUnresolved,
    TurnSettledIgnored,
    QueueEnqueued,
    QueueCoalesced,
    QueueRetryScheduled,
    QueueReconciled,
    QueueDropped,
    ReconcileStarted,
    AgendaLoaded,
    DecisionMade,
    StatusWritten,
    ReportReceived,
    ReportAccepted,
    ReportRejected,
    NudgePlanned,
    NudgeDelivered,
    NudgeWakeFailed,
    NudgeSkipped,
    NudgeRetryable,
    NudgeSuppressed,
    NudgeSuperseded,
    ReviewPickupDeliveryUnavailable,
    ReviewPickupMemberNudgeDelivered,
    ReviewPickupEscalated,
    ReviewPickupWakeFailedRetryable,
    WatchdogCooldownActive,
    MemberBusy,
    RuntimeStallObserved,
    TeamInactive,
    IndexRepaired,
    LegacyFallbackUsed,
    ProofMissingRecoveryScheduled,
    ProofMissingRecoveryCoalesced,
    ProofMissingRecoverySuppressed,
    ProofMissingRecoveryConflict,
    /// This addon's: a status could not be written.
    StatusWriteFailed,
    /// This addon's: the metric events of a status could not be recorded.
    MetricsUnavailable,
    /// This addon's: a member's outbox could not be read or written.
    OutboxUnavailable,
}

impl AuditKind {
    /// Every kind, in the order above (the reference's 37, then this addon's).
    pub(crate) const ALL: [AuditKind; 40] = [
        Self::TurnSettledClaimed,
        Self::TurnSettledResolved,
        Self::TurnSettledUnresolved,
        Self::TurnSettledIgnored,
        Self::QueueEnqueued,
        Self::QueueCoalesced,
        Self::QueueRetryScheduled,
        Self::QueueReconciled,
        Self::QueueDropped,
        Self::ReconcileStarted,
        Self::AgendaLoaded,
        Self::DecisionMade,
        Self::StatusWritten,
        Self::ReportReceived,
        Self::ReportAccepted,
        Self::ReportRejected,
        Self::NudgePlanned,
        Self::NudgeDelivered,
        Self::NudgeWakeFailed,
        Self::NudgeSkipped,
        Self::NudgeRetryable,
        Self::NudgeSuppressed,
        Self::NudgeSuperseded,
        Self::ReviewPickupDeliveryUnavailable,
        Self::ReviewPickupMemberNudgeDelivered,
        Self::ReviewPickupEscalated,
        Self::ReviewPickupWakeFailedRetryable,
        Self::WatchdogCooldownActive,
        Self::MemberBusy,
        Self::RuntimeStallObserved,
        Self::TeamInactive,
        Self::IndexRepaired,
        Self::LegacyFallbackUsed,
        Self::ProofMissingRecoveryScheduled,
        Self::ProofMissingRecoveryCoalesced,
        Self::ProofMissingRecoverySuppressed,
        Self::ProofMissingRecoveryConflict,
        Self::StatusWriteFailed,
        Self::MetricsUnavailable,
        Self::OutboxUnavailable,
    ];

    /// The wire spelling (the line's `event`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TurnSettledClaimed => "turn_settled_claimed",
            Self::TurnSettledResolved => "turn_settled_resolved",
            Self::TurnSettledUnresolved => "turn_settled_unresolved",
            Self::TurnSettledIgnored => "turn_settled_ignored",
            Self::QueueEnqueued => "queue_enqueued",
            Self::QueueCoalesced => "queue_coalesced",
            Self::QueueRetryScheduled => "queue_retry_scheduled",
            Self::QueueReconciled => "queue_reconciled",
            Self::QueueDropped => "queue_dropped",
            Self::ReconcileStarted => "reconcile_started",
            Self::AgendaLoaded => "agenda_loaded",
            Self::DecisionMade => "decision_made",
            Self::StatusWritten => "status_written",
            Self::ReportReceived => "report_received",
            Self::ReportAccepted => "report_accepted",
            Self::ReportRejected => "report_rejected",
            Self::NudgePlanned => "nudge_planned",
            Self::NudgeDelivered => "nudge_delivered",
            Self::NudgeWakeFailed => "nudge_wake_failed",
            Self::NudgeSkipped => "nudge_skipped",
            Self::NudgeRetryable => "nudge_retryable",
            Self::NudgeSuppressed => "nudge_suppressed",
            Self::NudgeSuperseded => "nudge_superseded",
            Self::ReviewPickupDeliveryUnavailable => "review_pickup_delivery_unavailable",
            Self::ReviewPickupMemberNudgeDelivered => "review_pickup_member_nudge_delivered",
            Self::ReviewPickupEscalated => "review_pickup_escalated",
            Self::ReviewPickupWakeFailedRetryable => "review_pickup_wake_failed_retryable",
            Self::WatchdogCooldownActive => "watchdog_cooldown_active",
            Self::MemberBusy => "member_busy",
            Self::RuntimeStallObserved => "runtime_stall_observed",
            Self::TeamInactive => "team_inactive",
            Self::IndexRepaired => "index_repaired",
            Self::LegacyFallbackUsed => "legacy_fallback_used",
            Self::ProofMissingRecoveryScheduled => "proof_missing_recovery_scheduled",
            Self::ProofMissingRecoveryCoalesced => "proof_missing_recovery_coalesced",
            Self::ProofMissingRecoverySuppressed => "proof_missing_recovery_suppressed",
            Self::ProofMissingRecoveryConflict => "proof_missing_recovery_conflict",
            Self::StatusWriteFailed => "status_write_failed",
            Self::MetricsUnavailable => "metrics_unavailable",
            Self::OutboxUnavailable => "outbox_unavailable",
        }
    }

    /// The kind a wire spelling names; `None` for one this addon does not know.
    pub fn parse(spelling: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == spelling)
    }
}

/// Which part of the addon wrote a journal line (the line's `source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditSource {
    /// The team-change event queue.
    EventQueue,
    /// The reconciler, when it writes a member's status.
    Reconciler,
    /// The status store (writes and legacy reads).
    JsonStore,
    /// The handling of a member's report (accepted, rejected, replayed).
    Reporter,
    /// The phase-2 nudge planner.
    NudgePlanner,
    /// The outbox dispatcher.
    NudgeDispatcher,
    /// The proof-missing recovery scheduler.
    ProofMissingRecoveryScheduler,
    /// The drain of settled runtime turns.
    RuntimeTurnSettledIngestor,
}

impl AuditSource {
    /// Every source, in declaration order; the tests check that no two share
    /// a spelling.
    pub(crate) const ALL: [AuditSource; 8] = [
        Self::EventQueue,
        Self::Reconciler,
        Self::JsonStore,
        Self::Reporter,
        Self::NudgePlanner,
        Self::NudgeDispatcher,
        Self::ProofMissingRecoveryScheduler,
        Self::RuntimeTurnSettledIngestor,
    ];

    /// The wire spelling (the line's `source`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EventQueue => "event_queue",
            Self::Reconciler => "reconciler",
            Self::JsonStore => "json_store",
            Self::Reporter => "reporter",
            Self::NudgePlanner => "nudge_planner",
            Self::NudgeDispatcher => "nudge_dispatcher",
            Self::ProofMissingRecoveryScheduler => "proof_missing_recovery_scheduler",
            Self::RuntimeTurnSettledIngestor => "runtime_turn_settled_ingestor",
        }
    }

    /// The source a wire spelling names; `None` for one this addon does not write.
    pub fn parse(spelling: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == spelling)
    }
}

/// Written as its wire spelling (a log entry's context names the kind).
impl serde::Serialize for AuditKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Compares with a wire spelling (for assertions on journaled kinds).
impl PartialEq<&str> for AuditKind {
    fn eq(&self, spelling: &&str) -> bool {
        self.as_str() == *spelling
    }
}

impl std::fmt::Display for AuditKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_through_its_one_spelling() {
        let mut seen = std::collections::HashSet::new();
        for kind in AuditKind::ALL {
            assert!(seen.insert(kind.as_str()), "{kind} spelled twice");
            assert_eq!(AuditKind::parse(kind.as_str()), Some(kind));
            assert_eq!(kind.to_string(), kind.as_str());
        }
        assert_eq!(
            serde_json::to_value(AuditKind::QueueEnqueued).unwrap(),
            "queue_enqueued"
        );
        assert_eq!(AuditKind::parse("brand_new_kind"), None);
        let mut sources = std::collections::HashSet::new();
        for source in AuditSource::ALL {
            assert!(sources.insert(source.as_str()), "{source:?} spelled twice");
            assert_eq!(AuditSource::parse(source.as_str()), Some(source));
        }
        assert_eq!(AuditSource::parse("x"), None);
        assert_eq!(AuditKind::parse("Queue_Enqueued"), None);
    }
}
