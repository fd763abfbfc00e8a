//! The decision policy: caught up, valid lease, or needs sync.

use super::diagnostic::Diagnostic;
use super::report::MAX_LEASE_MS;
use super::status::{Report, ReportState, StatusState};
use super::time::{lease_holds, EpochMs, IsoTime};
use super::token::TOKEN_TTL_MS;
use crate::domain::js_semantics::js_trim;

/// Whether the app's process supervisor has the team and member running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeActivity {
    /// The team's runtime is up (teams never reported count as up).
    pub team_active: bool,
    /// The member's runtime is up.
    pub member_active: bool,
}

/// Everything the policy looks at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DecisionInput<'a> {
    /// The team exists and the member is on its active roster.
    pub on_active_roster: bool,
    /// Lifecycle from the supervisor.
    pub runtime: RuntimeActivity,
    /// Number of agenda items.
    pub item_count: usize,
    /// Current agenda fingerprint.
    pub fingerprint: &'a str,
    /// Latest accepted report, if any.
    pub accepted_report: Option<&'a Report>,
    /// The time of the decision: leases and tokens are checked against it.
    pub now_ms: EpochMs,
}

/// The outcome: a state and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// The state the member's status takes.
    pub state: StatusState,
    /// Reasons, in order.
    pub diagnostics: Vec<Diagnostic>,
}

impl Decision {
    fn new(state: StatusState, diagnostics: Vec<Diagnostic>) -> Self {
        Self { state, diagnostics }
    }
}

/// Decides the member's state; first matching rule wins.
pub(crate) fn decide(input: &DecisionInput<'_>) -> Decision {
    if !input.on_active_roster || !input.runtime.team_active || !input.runtime.member_active {
        // The runtime's reason comes first, as the app lists it.
        let mut diagnostics = Vec::new();
        if !input.runtime.team_active {
            diagnostics.push(Diagnostic::TeamRuntimeInactive);
        } else if !input.runtime.member_active {
            diagnostics.push(Diagnostic::MemberRuntimeInactive);
        }
        diagnostics.push(Diagnostic::MemberOrTeamInactive);
        return Decision::new(StatusState::Inactive, diagnostics);
    }
    if input.item_count == 0 {
        return Decision::new(StatusState::CaughtUp, vec![Diagnostic::AgendaEmpty]);
    }
    let Some(report) = input.accepted_report.filter(|r| r.accepted) else {
        return Decision::new(StatusState::NeedsSync, vec![Diagnostic::NoCurrentReport]);
    };
    if report.agenda_fingerprint != input.fingerprint {
        return Decision::new(
            StatusState::NeedsSync,
            vec![Diagnostic::ReportFingerprintStale],
        );
    }
    let (leased_state, lease_diag) = match report.state {
        ReportState::StillWorking => (StatusState::StillWorking, Diagnostic::LeaseStillWorking),
        ReportState::Blocked => (StatusState::Blocked, Diagnostic::LeaseBlocked),
        ReportState::CaughtUp => {
            return Decision::new(
                StatusState::NeedsSync,
                vec![Diagnostic::CaughtUpReportNotValidForNonEmptyAgenda],
            )
        }
    };
    match report.expires_at.as_ref().and_then(IsoTime::ms) {
        None => Decision::new(StatusState::NeedsSync, vec![Diagnostic::ReportLeaseMissing]),
        Some(expires) if !lease_holds(expires, input.now_ms, MAX_LEASE_MS) => {
            Decision::new(StatusState::NeedsSync, vec![Diagnostic::ReportLeaseExpired])
        }
        Some(_) => Decision::new(leased_state, vec![lease_diag]),
    }
}

/// True when an accepted `caught_up` report for `fingerprint` should stay on a caught-up status.
pub(crate) fn keeps_caught_up_report(report: &Report, fingerprint: &str) -> bool {
    report.accepted
        && report.state == ReportState::CaughtUp
        && report.agenda_fingerprint == fingerprint
}

/// Age after which a caught-up status is refreshed in the background.
const CAUGHT_UP_STALE_MS: EpochMs = 5 * 60 * 1000;
/// Age after which a status with work is refreshed.
const ACTIONABLE_STALE_MS: EpochMs = 2 * 60 * 1000;
/// Why a stored status is out of date. Its wire
/// spelling ([`Staleness::as_str`]) is added to the status diagnostics when
/// the stored status is returned as is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Staleness {
    /// A status that can take a report carries no report token.
    ReportTokenMissing,
    /// The report token has expired (or its expiry does not parse).
    ReportTokenExpired,
    /// `evaluatedAt` does not parse, so the status's age is unknown.
    EvaluatedAtInvalid,
    /// A state that needs items (or `unknown`) with an empty agenda.
    EmptyAgendaState,
    /// A `caught_up` status older than [`CAUGHT_UP_STALE_MS`].
    CaughtUpStale,
    /// A status with work older than [`ACTIONABLE_STALE_MS`].
    StatusStale,
    /// `still_working` / `blocked` without an accepted report's lease.
    AcceptedReportLeaseMissing,
    /// The accepted report's lease has ended.
    AcceptedReportLeaseExpired,
}

impl Staleness {
    /// The status diagnostic.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::ReportTokenMissing => "report_token_missing_refresh_enqueued",
            Self::ReportTokenExpired => "report_token_expired_refresh_enqueued",
            Self::EvaluatedAtInvalid => "status_evaluated_at_invalid",
            Self::EmptyAgendaState => "empty_agenda_state_refresh_enqueued",
            Self::CaughtUpStale => "caught_up_stale_refresh_enqueued",
            Self::StatusStale => "status_stale_refresh_enqueued",
            Self::AcceptedReportLeaseMissing => "accepted_report_lease_missing_refresh_enqueued",
            Self::AcceptedReportLeaseExpired => "accepted_report_lease_expired_refresh_enqueued",
        }
    }

    /// True when `getStatus` reconciles at once instead of returning the
    /// stored status: every reason but a stale `caught_up`, which is only
    /// refreshed in the background.
    pub(crate) fn refreshes_at_once(self) -> bool {
        self != Self::CaughtUpStale
    }

    /// True when a stored status returned with this reason is refreshed
    /// through the queue (the diagnostics ending `_refresh_enqueued`); an
    /// unparsable `evaluatedAt` alone is not.
    pub(crate) fn queues_refresh(self) -> bool {
        self != Self::EvaluatedAtInvalid
    }
}

/// Why a stored status should be refreshed, in
/// diagnostic order; empty when it is current.
pub(crate) fn staleness_diagnostics(
    status: &super::status::MemberStatus,
    now_ms: EpochMs,
) -> Vec<Staleness> {
    let mut diags = Vec::new();
    let items = status.agenda.items.len();
    let actionable_state = matches!(
        status.state,
        StatusState::NeedsSync | StatusState::StillWorking | StatusState::Blocked
    );
    // Every status carries a token, an inactive one too (as in the app).
    let token = status
        .report_token
        .as_deref()
        .filter(|token| !js_trim(token).is_empty());
    // An expiry that does not parse counts as no token, as the app reads it.
    let expires = status
        .report_token_expires_at
        .as_ref()
        .and_then(IsoTime::ms);
    match (token, expires) {
        (None, _) | (_, None) => diags.push(Staleness::ReportTokenMissing),
        (Some(_), Some(expires)) if lease_holds(expires, now_ms, TOKEN_TTL_MS) => {}
        (Some(_), Some(_)) => diags.push(Staleness::ReportTokenExpired),
    }
    let Some(evaluated) = status.evaluated_at.ms() else {
        diags.push(Staleness::EvaluatedAtInvalid);
        return diags;
    };
    // A status evaluated "in the future" predates a clock step back: it is
    // as old as the step, not current until the clock catches up.
    let age = now_ms.saturating_sub(evaluated).saturating_abs();
    if items == 0 && (actionable_state || status.state == StatusState::Unknown) {
        diags.push(Staleness::EmptyAgendaState);
    }
    if status.state == StatusState::CaughtUp && age > CAUGHT_UP_STALE_MS {
        diags.push(Staleness::CaughtUpStale);
    }
    if items > 0 && actionable_state && age > ACTIONABLE_STALE_MS {
        diags.push(Staleness::StatusStale);
    }
    // As the app: only a working status whose stored report was accepted
    // has a lease to check; a rejected report (or none) leaves nothing to
    // be missing or over.
    let accepted = status.report.as_ref().filter(|r| r.accepted);
    if let Some(report) = accepted.filter(|_| {
        matches!(
            status.state,
            StatusState::StillWorking | StatusState::Blocked
        )
    }) {
        match report.expires_at.as_ref().and_then(IsoTime::ms) {
            None => diags.push(Staleness::AcceptedReportLeaseMissing),
            Some(expires) if !lease_holds(expires, now_ms, MAX_LEASE_MS) => {
                diags.push(Staleness::AcceptedReportLeaseExpired)
            }
            Some(_) => {}
        }
    }
    diags
}

/// True when a nudge dispatch pass should reconcile this stored status
/// before its second dispatch (the app's background stale refresh): a
/// missing or expired report token, an empty agenda in a state that expects
/// work, an unreadable evaluation time, a `caught_up` status older than
/// [`CAUGHT_UP_STALE_MS`], a `needs_sync` one with work older than
/// [`ACTIONABLE_STALE_MS`], or an accepted work lease that is missing or over.
pub(crate) fn needs_background_refresh(
    status: &super::status::MemberStatus,
    now_ms: EpochMs,
) -> bool {
    let token_current = status
        .report_token
        .as_deref()
        .is_some_and(|t| !js_trim(t).is_empty())
        && status
            .report_token_expires_at
            .as_ref()
            .and_then(IsoTime::ms)
            .is_some_and(|expires| expires > now_ms);
    let items = status.agenda.items.len();
    let empty_but_expecting_work = items == 0
        && matches!(
            status.state,
            StatusState::NeedsSync
                | StatusState::StillWorking
                | StatusState::Blocked
                | StatusState::Unknown
        );
    if !token_current || empty_but_expecting_work {
        return true;
    }
    let Some(evaluated) = status.evaluated_at.ms() else {
        return true;
    };
    let age = now_ms - evaluated;
    if status.state == StatusState::CaughtUp && age > CAUGHT_UP_STALE_MS {
        return true;
    }
    if items == 0 {
        return false;
    }
    if status.state == StatusState::NeedsSync && age > ACTIONABLE_STALE_MS {
        return true;
    }
    let working = matches!(
        status.state,
        StatusState::StillWorking | StatusState::Blocked
    );
    let lease_current = status
        .report
        .as_ref()
        .filter(|r| r.accepted)
        .and_then(|r| r.expires_at.as_ref())
        .and_then(IsoTime::ms)
        .is_some_and(|expires| expires > now_ms);
    working && status.report.as_ref().is_some_and(|r| r.accepted) && !lease_current
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::time::format_iso;

    const NOW: EpochMs = 1_800_000_000_000;
    const UP: RuntimeActivity = RuntimeActivity {
        team_active: true,
        member_active: true,
    };

    fn report(state: ReportState, fp: &str, expires_at: Option<EpochMs>) -> Report {
        Report {
            state,
            agenda_fingerprint: fp.into(),
            member_name: "jack".into(),
            team_name: "forge".into(),
            reported_at: IsoTime::at(NOW - 1000),
            expires_at: expires_at.map(IsoTime::at),
            task_ids: None,
            note: None,
            source: None,
            accepted: true,
            rejection_code: None,
        }
    }

    fn input<'a>(items: usize, report: Option<&'a Report>) -> DecisionInput<'a> {
        DecisionInput {
            on_active_roster: true,
            runtime: UP,
            item_count: items,
            fingerprint: "fp",
            accepted_report: report,
            now_ms: NOW,
        }
    }

    #[test]
    fn inactive_wins_over_everything() {
        let mut i = input(3, None);
        i.on_active_roster = false;
        assert_eq!(
            decide(&i),
            Decision::new(
                StatusState::Inactive,
                vec![Diagnostic::MemberOrTeamInactive]
            )
        );
        let mut i = input(3, None);
        i.runtime.team_active = false;
        assert_eq!(
            decide(&i).diagnostics,
            ["team_runtime_inactive", "member_or_team_inactive"]
        );
        let mut i = input(0, None);
        i.runtime.member_active = false;
        assert_eq!(
            decide(&i).diagnostics,
            ["member_runtime_inactive", "member_or_team_inactive"]
        );
    }

    #[test]
    fn empty_agenda_is_caught_up() {
        assert_eq!(
            decide(&input(0, None)),
            Decision::new(StatusState::CaughtUp, vec![Diagnostic::AgendaEmpty])
        );
    }

    #[test]
    fn no_report_needs_sync() {
        assert_eq!(decide(&input(2, None)).diagnostics, ["no_current_report"]);
        let mut rejected = report(ReportState::StillWorking, "fp", Some(NOW + 1));
        rejected.accepted = false;
        assert_eq!(
            decide(&input(2, Some(&rejected))).diagnostics,
            ["no_current_report"]
        );
    }

    #[test]
    fn leases() {
        let live = report(ReportState::StillWorking, "fp", Some(NOW + 60_000));
        assert_eq!(
            decide(&input(2, Some(&live))),
            Decision::new(
                StatusState::StillWorking,
                vec![Diagnostic::LeaseStillWorking]
            )
        );
        let blocked = report(ReportState::Blocked, "fp", Some(NOW + 60_000));
        assert_eq!(
            decide(&input(2, Some(&blocked))).state,
            StatusState::Blocked
        );
        let expired = report(ReportState::StillWorking, "fp", Some(NOW));
        assert_eq!(
            decide(&input(2, Some(&expired))).diagnostics,
            ["report_lease_expired"]
        );
        // Granted 15 min before the clock stepped back 24 h: over, not held
        // for 24 h 15 min.
        let stepped = report(
            ReportState::StillWorking,
            "fp",
            Some(NOW + 24 * 60 * 60_000 + 15 * 60_000),
        );
        assert_eq!(
            decide(&input(2, Some(&stepped))).diagnostics,
            ["report_lease_expired"]
        );
        let longest = report(ReportState::Blocked, "fp", Some(NOW + MAX_LEASE_MS));
        assert_eq!(
            decide(&input(2, Some(&longest))).state,
            StatusState::Blocked
        );
        let missing = report(ReportState::StillWorking, "fp", None);
        assert_eq!(
            decide(&input(2, Some(&missing))).diagnostics,
            ["report_lease_missing"]
        );
        let stale = report(ReportState::StillWorking, "old", Some(NOW + 60_000));
        assert_eq!(
            decide(&input(2, Some(&stale))).diagnostics,
            ["report_fingerprint_stale"]
        );
        let caught_up = report(ReportState::CaughtUp, "fp", None);
        assert_eq!(
            decide(&input(2, Some(&caught_up))).diagnostics,
            ["caught_up_report_not_valid_for_non_empty_agenda"]
        );
        assert!(keeps_caught_up_report(&caught_up, "fp"));
        assert!(!keeps_caught_up_report(&caught_up, "other"));
    }

    fn stored(
        state: StatusState,
        items: usize,
        age_ms: EpochMs,
    ) -> crate::domain::status::MemberStatus {
        use crate::domain::agenda::{ActionableWorkItem, Agenda, Evidence, ItemKind, Priority};
        let item = ActionableWorkItem {
            task_id: "1".into(),
            display_id: None,
            subject: "s".into(),
            kind: ItemKind::Work,
            assignee: "jack".into(),
            priority: Priority::Normal,
            reason: "owned_pending_task".into(),
            evidence: Evidence::default(),
        };
        crate::domain::status::MemberStatus {
            team_name: "forge".into(),
            member_name: "jack".into(),
            state,
            agenda: Agenda {
                team_name: "forge".into(),
                member_name: "jack".into(),
                generated_at: format_iso(NOW - age_ms),
                fingerprint: "fp".into(),
                items: (0..items).map(|_| item.clone().into()).collect(),
                diagnostics: vec![],
            },
            report: None,
            report_token: Some("wrs:v1.x.y".into()),
            report_token_expires_at: Some(IsoTime::at(NOW - age_ms + 15 * 60_000)),
            shadow: None,
            evaluated_at: IsoTime::at(NOW - age_ms),
            diagnostics: vec![],
            provider_id: None,
        }
    }

    /// The wire spellings of [`staleness_diagnostics`].
    fn stale(status: &crate::domain::status::MemberStatus, now: EpochMs) -> Vec<&'static str> {
        staleness_diagnostics(status, now)
            .into_iter()
            .map(Staleness::as_str)
            .collect()
    }

    #[test]
    fn staleness_rules() {
        assert!(stale(&stored(StatusState::CaughtUp, 0, 5 * 60_000), NOW).is_empty());
        assert_eq!(
            stale(&stored(StatusState::CaughtUp, 0, 5 * 60_000 + 1), NOW),
            ["caught_up_stale_refresh_enqueued"]
        );
        assert!(stale(&stored(StatusState::NeedsSync, 2, 2 * 60_000), NOW).is_empty());
        assert_eq!(
            stale(&stored(StatusState::NeedsSync, 2, 2 * 60_000 + 1), NOW),
            ["status_stale_refresh_enqueued"]
        );
        assert_eq!(
            stale(&stored(StatusState::NeedsSync, 0, 0), NOW),
            ["empty_agenda_state_refresh_enqueued"]
        );
        // Working without an accepted report (none, or a rejected one):
        // no lease to check, as in the app.
        let mut leased = stored(StatusState::StillWorking, 1, 0);
        assert!(stale(&leased, NOW).is_empty());
        let mut rejected = report(ReportState::CaughtUp, "fp", None);
        rejected.accepted = false;
        rejected.rejection_code = Some("invalid_report_token".into());
        leased.report = Some(rejected);
        assert!(stale(&leased, NOW).is_empty());
        leased.report = Some(report(ReportState::StillWorking, "fp", None));
        assert_eq!(
            stale(&leased, NOW),
            ["accepted_report_lease_missing_refresh_enqueued"]
        );
        leased.report = Some(report(ReportState::StillWorking, "fp", Some(NOW)));
        assert_eq!(
            stale(&leased, NOW),
            ["accepted_report_lease_expired_refresh_enqueued"]
        );
        leased.report = Some(report(ReportState::StillWorking, "fp", Some(NOW + 1)));
        assert!(stale(&leased, NOW).is_empty());
        // The clock stepped back 24 h after the report: its lease and token
        // are over, and a status from "the future" is as stale as the step.
        const DAY: EpochMs = 24 * 60 * 60_000;
        let mut stepped = stored(StatusState::StillWorking, 1, -DAY);
        stepped.report = Some(report(
            ReportState::StillWorking,
            "fp",
            Some(NOW + DAY + 15 * 60_000),
        ));
        assert_eq!(
            stale(&stepped, NOW),
            [
                "report_token_expired_refresh_enqueued",
                "status_stale_refresh_enqueued",
                "accepted_report_lease_expired_refresh_enqueued"
            ]
        );
        let mut broken = stored(StatusState::CaughtUp, 0, 0);
        broken.evaluated_at = "garbage".into();
        assert_eq!(stale(&broken, NOW), ["status_evaluated_at_invalid"]);
    }

    #[test]
    fn an_inactive_status_is_stale_once_its_report_token_is() {
        // As in the app, an inactive member gets a report token too, and the
        // status is refreshed when it is missing or has expired.
        let current = stored(StatusState::Inactive, 0, 0);
        assert!(stale(&current, NOW).is_empty());
        let expired = stored(StatusState::Inactive, 0, 15 * 60_000);
        assert_eq!(
            stale(&expired, NOW),
            ["report_token_expired_refresh_enqueued"]
        );
        let mut missing = stored(StatusState::Inactive, 2, 0);
        missing.report_token = Some(" ".into());
        assert_eq!(
            stale(&missing, NOW),
            ["report_token_missing_refresh_enqueued"]
        );
        let mut unreadable = stored(StatusState::Inactive, 2, 0);
        unreadable.report_token_expires_at = Some(IsoTime::parse("garbage".into()));
        assert_eq!(
            stale(&unreadable, NOW),
            ["report_token_missing_refresh_enqueued"]
        );
    }
}
