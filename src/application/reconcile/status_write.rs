//! Writing a member's status, shared by the reconciler and the reporter:
//! the inputs a status is assembled from, read before the member's status
//! lock, and what is journaled and recorded after the write.

use serde_json::json;

use super::{Effects, Reconciler};
use crate::application::busy::BusyReason;
use crate::application::ports::StoredStatus;
use crate::application::queue::Trigger;
use crate::domain::agenda::Agenda;
use crate::domain::audit::{AuditKind, AuditSource};
use crate::domain::diagnostic::StallTrigger;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::status::{MemberStatus, ReconciledBy};
use crate::domain::status_assembly::{StatusInputs, TokenGrant};
use crate::domain::team::TeamSnapshot;
use crate::domain::time::{EpochMs, IsoTime};
use crate::domain::token::TOKEN_TTL_MS;

impl Reconciler {
    /// Everything a status of `agenda`'s member is assembled from but the
    /// stored status, read now, before the member's status lock is taken:
    /// the runtime, whether the member is busy and, with
    /// [`Effects::Record`], the report token.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::application) fn status_inputs(
        &self,
        snapshot: &TeamSnapshot,
        member_name: &MemberName,
        agenda: Agenda,
        now: EpochMs,
        by: ReconciledBy,
        triggers: &[Trigger],
        effects: Effects<'_>,
    ) -> StatusInputs {
        // The app asks its runtime questions with the normalized name.
        let member = member_name.normalized();
        let token = match effects {
            Effects::Record(team, member) => self.grant_token(team, member, &agenda, now),
            Effects::Withhold => TokenGrant::Withheld,
        };
        StatusInputs {
            team_name: snapshot.team_name.to_string(),
            on_active_roster: snapshot.is_active() && snapshot.is_active_member(&member),
            // A deleted team's agenda names no provider, as the app's agenda
            // source answers one without reading its members.
            provider_id: (!snapshot.deleted)
                .then(|| snapshot.member(&member))
                .flatten()
                .and_then(|m| m.derived_provider()),
            runtime: self.ports.activity(&snapshot.team_name, &member),
            member_busy: self
                .ports
                .busy
                .busy(&snapshot.team_name, &member, now)
                .map(BusyReason::as_str),
            agenda,
            previous: None,
            store_diagnostic: None,
            now,
            by,
            trigger_reasons: triggers.iter().map(|t| t.as_str().to_string()).collect(),
            stall_trigger: StallTrigger::PRIORITY.into_iter().find(|t| {
                triggers
                    .iter()
                    .any(|trigger| trigger.runtime_signal() == Some(*t))
            }),
            accepted_report: None,
            recovery: None,
            token,
        }
    }

    /// The report token of `agenda`'s fingerprint for its member. Every
    /// member gets one, inactive ones too (as the app does): a member coming
    /// back can report at once.
    pub(in crate::application) fn grant_token(
        &self,
        team: &TeamName,
        member: &MemberName,
        agenda: &Agenda,
        now: EpochMs,
    ) -> TokenGrant {
        let expires = now + TOKEN_TTL_MS;
        match self
            .ports
            .tokens
            .issue(team, member, &agenda.fingerprint, expires)
        {
            Ok(token) => TokenGrant::Issued {
                token,
                expires_at: IsoTime::at(expires),
            },
            Err(_) => TokenGrant::Unavailable,
        }
    }

    /// Journals the legacy fallback read of a status, as the app's store
    /// journals its own (after the write it fed).
    pub(in crate::application) fn journal_legacy_read(
        &self,
        team: &TeamName,
        member: &MemberName,
        now: EpochMs,
    ) {
        self.audit(
            AuditSource::JsonStore,
            AuditKind::LegacyFallbackUsed,
            team,
            &member.normalized(),
            now,
            vec![],
            json!({ "reason": "status_v1" }),
        );
    }

    /// Journals and records a status written outside a reconcile (a
    /// report): the legacy fallback read it replaced (`legacy`), its metric
    /// events, its `status_written` line.
    pub(in crate::application) fn status_written(
        &self,
        team: &TeamName,
        member: &MemberName,
        status: &MemberStatus,
        legacy: bool,
        now: EpochMs,
    ) {
        if legacy {
            self.journal_legacy_read(team, member, now);
        }
        self.record_metrics(team, member, status);
        self.journal_status_written(team, member, status, now);
    }
}

/// `inputs` with the stored status they replace, and whether it was read
/// from the legacy team file (which the caller journals).
pub(in crate::application) fn with_previous(
    mut inputs: StatusInputs,
    previous: StoredStatus,
) -> (StatusInputs, bool) {
    let legacy = matches!(previous, StoredStatus::Legacy(_));
    inputs.store_diagnostic = match &previous {
        StoredStatus::Legacy(_) => Some("legacy_fallback_used:status_v1".to_string()),
        StoredStatus::Quarantined { reason } => Some(format!("status_store_quarantined:{reason}")),
        StoredStatus::Missing | StoredStatus::Current(_) => None,
    };
    inputs.previous = previous.into_status();
    (inputs, legacy)
}
