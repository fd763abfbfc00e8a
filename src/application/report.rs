//! The reporter: validates a member's report against its current agenda and
//! persists the outcome; replays recorded intents; serves metrics and the
//! agent read surface.

use crate::domain::js_semantics::js_trim;
use serde_json::{json, Value};

use super::ports::{AuditEvent, IntentStatus, ReportIntent};
use super::reconcile::status_write::with_previous;
use super::reconcile::{
    member_name, team_name, AgendaSource, Effects, ReconcileOptions, Reconciler, WorkSyncError,
};
use crate::domain::audit::{AuditKind, AuditSource};
use crate::domain::metrics::{team_metrics, MetricsIndex, TeamMetrics};
use crate::domain::names::{normalize_member_name, MemberName, TeamName};
use crate::domain::report::{
    lease_ms, validate, Rejection, ReportRequest, ReportSource, ValidationContext,
};
use crate::domain::status::{MemberStatus, ReconciledBy, Report};
use crate::domain::status_assembly::assemble_accepted;
use crate::domain::team::TeamSnapshot;
use crate::domain::time::{format_iso, EpochMs, IsoTime};
use crate::domain::token::TokenCheck;

const SOURCE: AuditSource = AuditSource::Reporter;
/// Replay reason under which an expired token may be retried once with a fresh one.
const CONTROL_API_UNAVAILABLE: &str = "control_api_unavailable";
/// Message of an accepted report.
const ACCEPTED_MESSAGE: &str = "Member work sync report accepted.";

/// What `report()` answers; serialized, the JS `MemberWorkSyncReportResult`
/// (without the rejection, whose wire form is `code`, and the token check,
/// which only replay uses).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ReportResult {
    /// True when the report was accepted.
    pub accepted: bool,
    /// `accepted` or the rejection code (the wire form of `rejection`).
    pub code: &'static str,
    /// Why the report was refused; `None` when it was accepted.
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub rejection: Option<Rejection>,
    /// Human message.
    pub message: String,
    /// The member's status after the report.
    pub status: MemberStatus,
    /// How the request's token verified (for replay's fresh-token retry).
    #[serde(skip)]
    #[cfg_attr(test, ts(skip))]
    pub token_check: TokenCheck,
}

impl ReplaySummary {
    /// Adds another replay's counts.
    pub(crate) fn add(&mut self, other: &ReplaySummary) {
        self.processed += other.processed;
        self.accepted += other.accepted;
        self.rejected += other.rejected;
        self.superseded += other.superseded;
    }
}

/// Counts returned by `replayPendingReports`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ReplaySummary {
    /// Pending intents validated by this replay.
    pub processed: usize,
    /// Intents whose report was accepted (and recorded on the status).
    pub accepted: usize,
    /// Intents whose report was refused for good (stale, invalid, ...).
    pub rejected: usize,
    /// Superseded by lifecycle.
    pub superseded: usize,
}

impl Reconciler {
    /// Validates and records a report (the JS request object as received).
    ///
    /// A malformed request (a state that is none of the three, an oversized
    /// field, a field of the wrong type) is refused before anything runs, as
    /// the app's report route refuses it: `InvalidArgument` naming the
    /// field; nothing is read or written.
    pub fn report(&self, request: &Value) -> Result<ReportResult, WorkSyncError> {
        // A hostile name is refused as such, before the payload.
        let text = |field: &str| request.get(field).and_then(Value::as_str);
        let team = text("teamName").map(team_name).transpose()?;
        let member = text("memberName").map(member_name).transpose()?;
        let invalid = |reason: String| WorkSyncError::InvalidArgument {
            what: "report request",
            reason,
        };
        match (ReportRequest::parse(request), team, member) {
            (Ok(request), Some(team), Some(member)) => {
                self.report_parsed(&team, &member, &request, ReportSource::App)
            }
            (Err(payload), _, _) => Err(invalid(payload.to_string())),
            // Never: a well-formed request has both names as strings.
            (Ok(_), _, _) => Err(invalid("teamName and memberName are required".into())),
        }
    }

    /// A rejection answered from the board alone, with nothing written.
    fn unpersisted_rejection(
        &self,
        team: &TeamName,
        snapshot: &TeamSnapshot,
        member: &MemberName,
        now: EpochMs,
        rejection: Rejection,
    ) -> ReportResult {
        ReportResult {
            accepted: false,
            code: rejection.code(),
            rejection: Some(rejection),
            message: rejection.message().to_string(),
            status: self.unpersisted_from(team, snapshot, member, now),
            token_check: TokenCheck::Missing,
        }
    }

    /// Validates a well-formed report and writes the outcome.
    pub(super) fn report_parsed(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        request: &ReportRequest,
        default_source: ReportSource,
    ) -> Result<ReportResult, WorkSyncError> {
        let now = self.ports.clock.now_ms();
        let source = request.source.unwrap_or(default_source);
        let snapshot = self.ports.teams.load(team_name);
        if !snapshot.folder_found {
            // No team folder to write into: refuse without creating it
            // (no journal, no secret, no status file).
            return Ok(self.unpersisted_rejection(
                team_name,
                &snapshot,
                member_name,
                now,
                Rejection::MemberInactive,
            ));
        }
        let persist = self.may_persist(team_name, &snapshot, member_name)?;
        let agendas = self.agendas(&snapshot);
        let agenda = agendas.agenda_for(member_name, &format_iso(now));
        // The app asks its runtime questions with the normalized name.
        let normalized = member_name.normalized();
        let runtime = self.ports.activity(team_name, &normalized);
        let token_check = self.ports.tokens.verify(
            request.report_token.as_deref(),
            team_name,
            member_name,
            &request.agenda_fingerprint,
            now,
        )?;
        let verdict = validate(
            request,
            &ValidationContext {
                agenda: &agenda,
                team_runtime_active: runtime.team_active,
                member_runtime_active: runtime.member_active,
                on_active_roster: snapshot.is_active() && snapshot.is_active_member(&normalized),
                token: token_check,
            },
        );
        if !persist {
            // A name off the roster: the validator's code, but no store
            // folder for it (no journal, no status file).
            let rejection = verdict.err().unwrap_or(Rejection::MemberInactive);
            return Ok(self.unpersisted_rejection(
                team_name,
                &snapshot,
                member_name,
                now,
                rejection,
            ));
        }
        self.audit(SOURCE, AuditKind::ReportReceived,
            team_name,
            member_name,
            now,
            vec![],
            json!({ "state": request.state, "agendaFingerprint": request.agenda_fingerprint, "source": source.as_str() }),
        );
        let result = match verdict {
            Ok(()) => {
                let lease = lease_ms(request.state, &agenda, request.lease_ttl_ms);
                let report = Report {
                    state: request.state,
                    agenda_fingerprint: request.agenda_fingerprint.clone(),
                    member_name: agenda.member_name.clone(),
                    team_name: team_name.to_string(),
                    reported_at: IsoTime::at(now),
                    expires_at: lease.map(|ms| IsoTime::at(now + ms)),
                    task_ids: request.task_ids.clone(),
                    note: request.note.clone(),
                    source: Some(source.as_str().to_string()),
                    accepted: true,
                    rejection_code: None,
                };
                self.record_accepted(team_name, member_name, &snapshot, agenda, report, now)?
            }
            Err(rejection) => self.record_rejected(
                team_name,
                member_name,
                &snapshot,
                request,
                source,
                rejection,
                now,
            )?,
        };
        Ok(ReportResult {
            token_check,
            ..result
        })
    }

    /// Writes the status of an accepted report (the decision's lease, shadow
    /// `reconciledBy: report`) and journals it. Its inputs are read first;
    /// the member's status lock covers only the stored status's read, the
    /// pure assembly and the write.
    fn record_accepted(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        snapshot: &TeamSnapshot,
        agenda: crate::domain::agenda::Agenda,
        report: Report,
        now: EpochMs,
    ) -> Result<ReportResult, WorkSyncError> {
        let mut inputs = self.status_inputs(
            snapshot,
            member_name,
            agenda,
            now,
            ReconciledBy::Report,
            &[],
            Effects::Record(team_name, member_name),
        );
        inputs.accepted_report = Some(report);
        let mut legacy = false;
        let status = self.ports.store.update(
            team_name,
            member_name,
            Box::new(|previous| {
                let (inputs, from_legacy) = with_previous(inputs, previous);
                legacy = from_legacy;
                assemble_accepted(inputs)
            }),
        )?;
        self.status_written(team_name, member_name, &status, legacy, now);
        self.audit(
            SOURCE,
            AuditKind::ReportAccepted,
            team_name,
            &member_name.normalized(),
            now,
            status.diagnostics.clone(),
            outcome_fields(&status, &status.agenda.fingerprint, status.state, None),
        );
        Ok(ReportResult {
            accepted: true,
            code: "accepted",
            rejection: None,
            message: ACCEPTED_MESSAGE.to_string(),
            status,
            token_check: TokenCheck::Valid,
        })
    }

    /// A refused report: the member is reconciled in full first (journal,
    /// metrics, nudge planning, as any requested reconcile), then the
    /// rejection is recorded on that status.
    ///
    /// The rejection replaces the stored report and is not an input of later
    /// reconciles, as in the app: the next status carries only what the
    /// decision keeps, so the lease of an earlier accepted report ends here.
    #[allow(clippy::too_many_arguments)]
    fn record_rejected(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        snapshot: &TeamSnapshot,
        request: &ReportRequest,
        source: ReportSource,
        rejection: Rejection,
        now: EpochMs,
    ) -> Result<ReportResult, WorkSyncError> {
        let reconciled = self.reconcile_with(
            team_name,
            snapshot,
            &self.agendas(snapshot),
            member_name,
            ReconciledBy::Request,
            &[],
            ReconcileOptions::default(),
        )?;
        self.planner.plan(team_name, member_name, &reconciled);
        let code = rejection.code();
        let report = Report {
            state: request.state,
            agenda_fingerprint: request.agenda_fingerprint.clone(),
            member_name: reconciled.member_name.clone(),
            team_name: reconciled.team_name.clone(),
            reported_at: reconciled.evaluated_at.clone(),
            expires_at: None,
            task_ids: request.task_ids.clone(),
            note: request.note.clone(),
            source: Some(source.as_str().to_string()),
            accepted: false,
            rejection_code: Some(code.to_string()),
        };
        let mut rejected = reconciled;
        rejected.report = Some(report);
        rejected.diagnostics.push(format!("report_rejected:{code}"));
        let status = self
            .ports
            .store
            .update(team_name, member_name, Box::new(|_| rejected))?;
        self.status_written(team_name, member_name, &status, false, now);
        self.audit(
            SOURCE,
            AuditKind::ReportRejected,
            team_name,
            &member_name.normalized(),
            now,
            status.diagnostics.clone(),
            outcome_fields(
                &status,
                &request.agenda_fingerprint,
                request.state,
                Some(code),
            ),
        );
        Ok(ReportResult {
            accepted: false,
            code,
            rejection: Some(rejection),
            message: rejection.message().to_string(),
            status,
            token_check: TokenCheck::Missing,
        })
    }

    /// Validates every pending intent of `teams` through the same validator.
    pub fn replay_pending_reports(
        &self,
        teams: &[TeamName],
    ) -> Result<ReplaySummary, WorkSyncError> {
        let mut summary = ReplaySummary::default();
        let mut seen = std::collections::BTreeSet::new();
        for team in teams
            .iter()
            .filter(|t| seen.insert(js_trim(t).to_lowercase()))
        {
            let pending = self.ports.intents.pending(team)?;
            self.journal_legacy_migration(team, &pending.migrated_members);
            for mut intent in pending.intents {
                let status = match self.replay_one(&intent) {
                    Ok(outcome) => outcome,
                    // Transient failures leave the intent pending for the next replay.
                    Err(WorkSyncError::Io(_) | WorkSyncError::TeamQuiesced(_)) => continue,
                    Err(WorkSyncError::InvalidArgument { .. }) => {
                        (IntentStatus::Rejected, Some("invalid_payload"), false)
                    }
                };
                intent.status = status.0;
                intent.rejection_code = status.1.map(str::to_string);
                intent.result_code = Some(status.1.unwrap_or("accepted").to_string());
                intent.retried_with_fresh_token = status.2;
                intent.processed_at = Some(format_iso(self.ports.clock.now_ms()));
                self.ports.intents.finish(&intent)?;
                summary.processed += 1;
                match intent.status {
                    IntentStatus::Accepted => summary.accepted += 1,
                    IntentStatus::Superseded => summary.superseded += 1,
                    IntentStatus::Rejected | IntentStatus::Pending => summary.rejected += 1,
                }
            }
        }
        Ok(summary)
    }

    /// Journals, as the app's store does when it moves the controller's
    /// legacy intents into member files: `index_repaired` for each member,
    /// then `legacy_fallback_used` for each.
    fn journal_legacy_migration(&self, team: &TeamName, members: &[String]) {
        let at_ms = self.ports.clock.now_ms();
        let line = |kind: AuditKind, reason: &str, member: &String| AuditEvent {
            kind,
            source: AuditSource::JsonStore,
            team_name: team.clone(),
            member_name: normalize_member_name(member),
            at_ms,
            diagnostics: Vec::new(),
            metadata: serde_json::Map::from_iter([("reason".to_string(), Value::from(reason))]),
        };
        for member in members {
            self.ports
                .journal
                .record(line(AuditKind::IndexRepaired, "pending_reports", member));
        }
        for member in members {
            self.ports.journal.record(line(
                AuditKind::LegacyFallbackUsed,
                "pending_reports_v1",
                member,
            ));
        }
    }

    /// Outcome of one intent: status, rejection code, whether a fresh token was used.
    fn replay_one(
        &self,
        intent: &ReportIntent,
    ) -> Result<(IntentStatus, Option<&'static str>, bool), WorkSyncError> {
        let Ok(mut request) = ReportRequest::parse(&intent.request) else {
            return Ok((
                IntentStatus::Rejected,
                Some(Rejection::InvalidPayload.code()),
                false,
            ));
        };
        // An intent file is untrusted: its names are checked like a caller's.
        let team = team_name(&request.team_name)?;
        let member = member_name(&request.member_name)?;
        let mut result = self.report_parsed(&team, &member, &request, ReportSource::Mcp)?;
        let mut retried = false;
        // The controller could not reach the app while the token was fresh: one
        // retry with the current token, only if the agenda has not moved.
        if result.rejection == Some(Rejection::InvalidReportToken)
            && intent.reason.as_deref() == Some(CONTROL_API_UNAVAILABLE)
            && result.token_check == TokenCheck::Expired
            && result.status.agenda.fingerprint == request.agenda_fingerprint
        {
            if let Some(token) = result.status.report_token.clone() {
                request.report_token = Some(token);
                result = self.report_parsed(&team, &member, &request, ReportSource::Mcp)?;
                retried = true;
            }
        }
        let status = if result.accepted {
            IntentStatus::Accepted
        } else if result.rejection.is_some_and(Rejection::is_lifecycle) {
            IntentStatus::Superseded
        } else {
            IntentStatus::Rejected
        };
        let code = (!result.accepted).then_some(result.code);
        Ok((status, code, retried))
    }

    /// `getMetrics`: counts, state counts and phase-2 readiness from the team index.
    pub fn get_metrics(&self, team: &TeamName) -> Result<TeamMetrics, WorkSyncError> {
        Ok(self.summarize_metrics(team, &*self.ports.metrics.read(team)?))
    }

    /// [`Reconciler::get_metrics`] without side effects: a corrupt index
    /// reads as empty and is left where it is (operators' read-only views).
    pub(crate) fn preview_metrics(&self, team: &TeamName) -> Result<TeamMetrics, WorkSyncError> {
        Ok(self.summarize_metrics(team, &*self.ports.metrics.peek(team)?))
    }

    /// The `getMetrics` answer for `index`, generated now.
    fn summarize_metrics(&self, team: &TeamName, index: &MetricsIndex) -> TeamMetrics {
        team_metrics(team, &format_iso(self.ports.clock.now_ms()), index)
    }

    /// The compact agenda block an agent gets in its briefing (same agenda and
    /// fingerprint as the reconciler's status).
    pub(crate) fn agent_brief(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<Value, WorkSyncError> {
        Ok(agent_brief(&self.get_status(team, member, false)?))
    }
}

/// The journal fields of a report's outcome line: the fingerprint and state
/// reported (accepted: the status's), the agenda size, the rejection code as
/// `reason`, the provider.
fn outcome_fields(
    status: &MemberStatus,
    fingerprint: &str,
    state: impl serde::Serialize,
    rejection: Option<&str>,
) -> Value {
    let mut fields = json!({
        "agendaFingerprint": fingerprint,
        "state": state,
        "actionableCount": status.agenda.items.len(),
    });
    if let Some(code) = rejection {
        fields["reason"] = json!(code);
    }
    if let Some(provider) = status.provider_id {
        fields["providerId"] = json!(provider);
    }
    fields
}

/// Items shown in the agent brief.
const BRIEF_ITEMS: usize = 10;

/// `{schemaVersion, teamName, memberName, state, agendaFingerprint, reportToken?,
/// reportTokenExpiresAt?, actionableCount, items: [{taskRef, kind, reason}] (first 10)}`.
pub(crate) fn agent_brief(status: &MemberStatus) -> Value {
    let items: Vec<Value> = status
        .agenda
        .items
        .iter()
        .take(BRIEF_ITEMS)
        .map(|item| {
            json!({
                "taskRef": { "taskId": item.task_id, "displayId": item.display_id },
                "kind": item.kind,
                "reason": item.reason,
                "subject": item.subject,
            })
        })
        .collect();
    json!({
        "schemaVersion": 1,
        "teamName": status.team_name,
        "memberName": status.member_name,
        "state": status.state,
        "agendaFingerprint": status.agenda.fingerprint,
        "reportToken": status.report_token,
        "reportTokenExpiresAt": status.report_token_expires_at,
        "actionableCount": status.agenda.items.len(),
        "items": items,
    })
}
