//! A member's status assembled from what a reconcile read: the agenda, the
//! stored status it replaces, the runtime, the report token granted, the
//! clock value. Pure, so a use case reads every input first and holds the
//! member's status lock only to read the stored status and commit.

use super::agenda::Agenda;
use super::decision::{decide, keeps_caught_up_report, DecisionInput, RuntimeActivity};
use super::diagnostic::{Diagnostic, StallTrigger};
use super::recovery::Recovery;
use super::runtime_stall::{RuntimeStall, StallCheck};
use super::status::{MemberStatus, ReconciledBy, Report, Shadow, StatusState};
use super::team::ProviderId;
use super::time::{EpochMs, IsoTime};

/// The report token a status carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenGrant {
    /// No token is handed out (a preview, a status not persisted): no
    /// token diagnostic either.
    Withheld,
    /// Issued: the token and when it expires (`report_token_issued`).
    Issued {
        /// The token.
        token: String,
        /// When it expires.
        expires_at: IsoTime,
    },
    /// The token store failed (`report_token_unavailable`).
    Unavailable,
}

/// Everything [`assemble`] needs, as values.
#[derive(Debug, Clone)]
pub(crate) struct StatusInputs {
    /// Team name as the snapshot spells it.
    pub team_name: String,
    /// The team is active and the member on its active roster.
    pub on_active_roster: bool,
    /// The member's provider (none for a deleted team).
    pub provider_id: Option<ProviderId>,
    /// The member's agenda now.
    pub agenda: Agenda,
    /// The stored status this one replaces, if one was readable.
    pub previous: Option<MemberStatus>,
    /// What reading the stored status found worth saying (a legacy
    /// fallback, a quarantined file), after the decision's diagnostics.
    pub store_diagnostic: Option<String>,
    /// Team and member runtime.
    pub runtime: RuntimeActivity,
    /// Why the member is busy (wire spelling), if it is.
    pub member_busy: Option<&'static str>,
    /// The evaluation time.
    pub now: EpochMs,
    /// Who asked.
    pub by: ReconciledBy,
    /// The reconcile's trigger reasons (wire spellings, any order, repeats allowed).
    pub trigger_reasons: Vec<String>,
    /// The highest-priority runtime signal among the triggers, if any.
    pub stall_trigger: Option<StallTrigger>,
    /// A report the reporter just accepted: the lease input instead of the
    /// stored one.
    pub accepted_report: Option<Report>,
    /// The targeted recovery the reconcile was queued for.
    pub recovery: Option<Recovery>,
    /// The report token granted.
    pub token: TokenGrant,
}

impl StatusInputs {
    /// Whether the status assembled from these inputs can need sync,
    /// whatever the stored status holds (an active member with a non-empty
    /// agenda): only such a status can be a nudge-suppression candidate.
    pub(crate) fn can_need_sync(&self) -> bool {
        self.on_active_roster
            && self.runtime.team_active
            && self.runtime.member_active
            && !self.agenda.items.is_empty()
    }
}

/// The status a reconcile writes (before nudge suppression): the decision
/// over the agenda and the lease, what it carries over from the stored
/// status, the runtime stall it observes, and the token, whose diagnostic
/// comes last.
pub(crate) fn assemble(inputs: StatusInputs) -> MemberStatus {
    let StatusInputs {
        team_name,
        on_active_roster,
        provider_id,
        agenda,
        previous,
        store_diagnostic,
        runtime,
        member_busy,
        now,
        by,
        trigger_reasons,
        stall_trigger,
        accepted_report,
        recovery,
        token,
    } = inputs;
    // The lease input: the report just accepted, else the stored one if it
    // was accepted. As in the app, a rejected report that replaced an
    // accepted one leaves no lease behind.
    let prior_accepted = accepted_report.or_else(|| {
        previous
            .as_ref()
            .and_then(|p| p.report.clone().filter(|r| r.accepted))
    });
    let decision = decide(&DecisionInput {
        on_active_roster,
        runtime,
        item_count: agenda.items.len(),
        fingerprint: &agenda.fingerprint,
        accepted_report: prior_accepted.as_ref(),
        now_ms: now,
    });
    // Only what the decision keeps is carried: never a rejected report.
    let report = match decision.state {
        StatusState::CaughtUp => {
            prior_accepted.filter(|r| keeps_caught_up_report(r, &agenda.fingerprint))
        }
        StatusState::StillWorking | StatusState::Blocked => prior_accepted,
        StatusState::NeedsSync | StatusState::Inactive | StatusState::Unknown => None,
    };
    let previous_needs_sync = previous
        .as_ref()
        .is_some_and(|p| p.state == StatusState::NeedsSync);
    let previous_fingerprint = previous.map(|p| p.agenda.fingerprint);
    // Sorted by wire spelling, as stored.
    let mut trigger_reasons = trigger_reasons;
    trigger_reasons.sort();
    trigger_reasons.dedup();
    let shadow = Shadow {
        reconciled_by: by,
        would_nudge: decision.state == StatusState::NeedsSync && !agenda.items.is_empty(),
        fingerprint_changed: previous_fingerprint
            .as_ref()
            .is_some_and(|p| *p != agenda.fingerprint),
        previous_fingerprint,
        trigger_reasons: (!trigger_reasons.is_empty()).then_some(trigger_reasons),
        recovery,
        nudge_suppression_reset_at: None,
        nudge_suppression: None,
    };
    let mut diagnostics = agenda.diagnostics.clone();
    diagnostics.extend(decision.diagnostics.iter().map(|d| d.to_string()));
    diagnostics.extend(store_diagnostic);
    let stall = RuntimeStall::observe(&StallCheck {
        signals: stall_trigger.as_slice(),
        previous_needs_sync,
        previous_fingerprint: shadow.previous_fingerprint.as_deref(),
        state: decision.state,
        fingerprint: &agenda.fingerprint,
        item_count: agenda.items.len(),
    });
    diagnostics.extend(stall.into_iter().flat_map(RuntimeStall::diagnostics));
    if let Some(reason) = member_busy {
        diagnostics.push(format!("member_busy:{reason}"));
    }
    let mut status = MemberStatus {
        team_name,
        member_name: agenda.member_name.clone(),
        state: decision.state,
        provider_id,
        agenda,
        report,
        report_token: None,
        report_token_expires_at: None,
        shadow: Some(shadow),
        evaluated_at: IsoTime::at(now),
        diagnostics,
    };
    grant_token(&mut status, token);
    status
}

/// The status written for an accepted report: the decision with the report
/// as its lease (`inputs.accepted_report`), reconciled by the report itself
/// (a shadow that would not nudge and compares nothing), its diagnostics the
/// agenda's, `report_accepted`, then the token's.
pub(crate) fn assemble_accepted(inputs: StatusInputs) -> MemberStatus {
    let agenda_diagnostics = inputs.agenda.diagnostics.clone();
    let mut status = assemble(StatusInputs {
        by: ReconciledBy::Report,
        ..inputs
    });
    status.shadow = Some(Shadow::quiet(ReconciledBy::Report));
    let token_diagnostic = status
        .diagnostics
        .iter()
        .find(|d| Diagnostic::parse(d).is_some_and(Diagnostic::is_report_token))
        .cloned();
    status.diagnostics = agenda_diagnostics;
    status
        .diagnostics
        .push(Diagnostic::ReportAccepted.as_str().into());
    status.diagnostics.extend(token_diagnostic);
    status
}

/// Puts `token` on `status`, its diagnostic last.
pub(crate) fn grant_token(status: &mut MemberStatus, token: TokenGrant) {
    match token {
        TokenGrant::Withheld => {}
        TokenGrant::Issued { token, expires_at } => {
            status
                .diagnostics
                .push(Diagnostic::ReportTokenIssued.as_str().into());
            status.report_token = Some(token);
            status.report_token_expires_at = Some(expires_at);
        }
        TokenGrant::Unavailable => status
            .diagnostics
            .push(Diagnostic::ReportTokenUnavailable.as_str().into()),
    }
}

#[cfg(test)]
mod tests;
