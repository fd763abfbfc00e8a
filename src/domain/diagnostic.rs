//! The closed set of status diagnostics this addon writes and decides on.
//!
//! `MemberStatus.diagnostics` stays a list of wire spellings: the app, older
//! versions of this addon and the team reader (whose diagnostics name files
//! and counts) write spellings outside this set, and a status is stored as
//! read. Code that produces one of these writes [`Diagnostic::as_str`]; code
//! that decides on one reads the list through [`Diagnostic::parse`] (see
//! [`parsed`], [`has`]), so no decision compares a spelling.

use std::fmt;

/// The runtime signal behind a runtime stall, in the app's order of
/// priority (the first one present among a reconcile's triggers wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum StallTrigger {
    /// The member's turn settled.
    TurnSettled,
    /// A tool call of the member finished.
    ToolFinished,
    /// Other runtime activity of the member.
    RuntimeActivity,
}

impl StallTrigger {
    /// Every trigger, in priority order.
    pub(crate) const PRIORITY: [StallTrigger; 3] =
        [Self::TurnSettled, Self::ToolFinished, Self::RuntimeActivity];

    /// The wire spelling (the queue trigger's).
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::TurnSettled => "turn_settled",
            Self::ToolFinished => "tool_finished",
            Self::RuntimeActivity => "runtime_activity",
        }
    }
}

/// Why a status looks the way it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Diagnostic {
    /// The team's runtime is not running.
    TeamRuntimeInactive,
    /// The member's runtime is not running.
    MemberRuntimeInactive,
    /// The member is off the roster or a runtime is down.
    MemberOrTeamInactive,
    /// Nothing on the agenda.
    AgendaEmpty,
    /// No accepted report.
    NoCurrentReport,
    /// The accepted report is of another agenda.
    ReportFingerprintStale,
    /// An accepted `still_working` lease holds.
    LeaseStillWorking,
    /// An accepted `blocked` lease holds.
    LeaseBlocked,
    /// A `caught_up` report does not cover a non-empty agenda.
    CaughtUpReportNotValidForNonEmptyAgenda,
    /// The accepted report has no lease end.
    ReportLeaseMissing,
    /// The accepted report's lease has ended.
    ReportLeaseExpired,
    /// The team has no readable `config.json`.
    TeamConfigMissing,
    /// The team is deleted.
    TeamDeleted,
    /// The member name is invalid or reserved.
    MemberInvalidOrReserved,
    /// The member is not on the active roster.
    MemberNotActive,
    /// A report token was issued with the status.
    ReportTokenIssued,
    /// No report token could be issued (the team secret was unreadable).
    ReportTokenUnavailable,
    /// The status was written by an accepted report.
    ReportAccepted,
    /// The status could not be written.
    StatusWriteFailed,
    /// The same agenda still needs sync after a runtime signal.
    RuntimeStall,
    /// The runtime signal behind [`Diagnostic::RuntimeStall`].
    StallTrigger(StallTrigger),
    /// Nudges stopped: enough were delivered for this agenda without an
    /// accepted report.
    NudgeSuppressed,
    /// A forced nudge (`getStatus({ forceNudge: true })`) reset the
    /// suppression count at this evaluation.
    SuppressionManualReset,
}

impl Diagnostic {
    /// Every diagnostic, in declaration order; the tests check that no two
    /// share a spelling.
    pub(crate) const ALL: [Diagnostic; 25] = [
        Self::TeamRuntimeInactive,
        Self::MemberRuntimeInactive,
        Self::MemberOrTeamInactive,
        Self::AgendaEmpty,
        Self::NoCurrentReport,
        Self::ReportFingerprintStale,
        Self::LeaseStillWorking,
        Self::LeaseBlocked,
        Self::CaughtUpReportNotValidForNonEmptyAgenda,
        Self::ReportLeaseMissing,
        Self::ReportLeaseExpired,
        Self::TeamConfigMissing,
        Self::TeamDeleted,
        Self::MemberInvalidOrReserved,
        Self::MemberNotActive,
        Self::ReportTokenIssued,
        Self::ReportTokenUnavailable,
        Self::ReportAccepted,
        Self::StatusWriteFailed,
        Self::RuntimeStall,
        Self::StallTrigger(StallTrigger::TurnSettled),
        Self::StallTrigger(StallTrigger::ToolFinished),
        Self::StallTrigger(StallTrigger::RuntimeActivity),
        Self::NudgeSuppressed,
        Self::SuppressionManualReset,
    ];

    /// The wire spelling.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::TeamRuntimeInactive => "team_runtime_inactive",
            Self::MemberRuntimeInactive => "member_runtime_inactive",
            Self::MemberOrTeamInactive => "member_or_team_inactive",
            Self::AgendaEmpty => "agenda_empty",
            Self::NoCurrentReport => "no_current_report",
            Self::ReportFingerprintStale => "report_fingerprint_stale",
            Self::LeaseStillWorking => "lease_still_working",
            Self::LeaseBlocked => "lease_blocked",
            Self::CaughtUpReportNotValidForNonEmptyAgenda => {
                "caught_up_report_not_valid_for_non_empty_agenda"
            }
            Self::ReportLeaseMissing => "report_lease_missing",
            Self::ReportLeaseExpired => "report_lease_expired",
            Self::TeamConfigMissing => "team_config_missing",
            Self::TeamDeleted => "team_deleted",
            Self::MemberInvalidOrReserved => "member_invalid_or_reserved",
            Self::MemberNotActive => "member_not_active",
            Self::ReportTokenIssued => "report_token_issued",
            Self::ReportTokenUnavailable => "report_token_unavailable",
            Self::ReportAccepted => "report_accepted",
            Self::StatusWriteFailed => "status_write_failed",
            Self::RuntimeStall => "runtime_stall:same_agenda_still_needs_sync",
            Self::StallTrigger(StallTrigger::TurnSettled) => "runtime_stall:trigger=turn_settled",
            Self::StallTrigger(StallTrigger::ToolFinished) => "runtime_stall:trigger=tool_finished",
            Self::StallTrigger(StallTrigger::RuntimeActivity) => {
                "runtime_stall:trigger=runtime_activity"
            }
            Self::NudgeSuppressed => "work_sync_suppressed_no_accepted_report",
            Self::SuppressionManualReset => "work_sync_suppression_manual_retry_reset",
        }
    }

    /// The diagnostic a wire spelling names; `None` for one outside this set
    /// (the team reader's, the app's own, a rejected report's or a busy
    /// member's, which carry a code after a colon).
    pub(crate) fn parse(spelling: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.as_str() == spelling)
    }

    /// A runtime stall or its trigger (what a re-decided status keeps of
    /// the stored one while the same agenda still needs sync).
    pub(crate) fn is_runtime_stall(self) -> bool {
        matches!(self, Self::RuntimeStall | Self::StallTrigger(_))
    }

    /// A report token diagnostic (issued or unavailable).
    pub(crate) fn is_report_token(self) -> bool {
        matches!(self, Self::ReportTokenIssued | Self::ReportTokenUnavailable)
    }
}

/// The known diagnostics of a stored list, in order (unknown spellings skipped).
pub(crate) fn parsed(diagnostics: &[String]) -> impl Iterator<Item = Diagnostic> + '_ {
    diagnostics.iter().filter_map(|d| Diagnostic::parse(d))
}

/// True when a stored list carries `diagnostic`.
pub(crate) fn has(diagnostics: &[String], diagnostic: Diagnostic) -> bool {
    parsed(diagnostics).any(|d| d == diagnostic)
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares with a wire spelling (for assertions on decided diagnostics).
impl PartialEq<&str> for Diagnostic {
    fn eq(&self, spelling: &&str) -> bool {
        self.as_str() == *spelling
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_diagnostic_round_trips_through_its_one_spelling() {
        let mut seen = std::collections::HashSet::new();
        for diagnostic in Diagnostic::ALL {
            assert!(
                seen.insert(diagnostic.as_str()),
                "{diagnostic} spelled twice"
            );
            assert_eq!(Diagnostic::parse(diagnostic.as_str()), Some(diagnostic));
        }
        for foreign in [
            "report_rejected:stale",
            "member_busy:active_tool_activity",
            "tasks_truncated",
            "runtime_stall:trigger=other",
        ] {
            assert_eq!(Diagnostic::parse(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn stall_diagnostics_spell_the_trigger_after_the_prefix() {
        for trigger in StallTrigger::PRIORITY {
            assert_eq!(
                Diagnostic::StallTrigger(trigger).as_str(),
                format!("runtime_stall:trigger={}", trigger.as_str())
            );
        }
        let stored = vec![
            "tasks_truncated".to_string(),
            "runtime_stall:same_agenda_still_needs_sync".to_string(),
        ];
        assert!(has(&stored, Diagnostic::RuntimeStall));
        assert!(!has(&stored, Diagnostic::NoCurrentReport));
        assert_eq!(
            parsed(&stored).collect::<Vec<_>>(),
            [Diagnostic::RuntimeStall]
        );
    }
}
