//! What the reconciler journals and counts: the start and decision of a
//! reconcile, status writes, and metric events (and their failures).

use serde_json::json;

use super::{AgendaSource, Reconciler, SOURCE};
use crate::application::log::{LogCode, LogEntry, LogLevel};
use crate::application::ports::{AuditEvent, PortError};
use crate::application::queue::Trigger;
use crate::domain::agenda::Agenda;
use crate::domain::audit::{AuditKind, AuditSource};
use crate::domain::metrics::events_for_write;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::nudge_suppression::SuppressedNudge;
use crate::domain::runtime_stall::RuntimeStall;
use crate::domain::status::{MemberStatus, StatusState};
use crate::domain::time::{format_iso, EpochMs};

impl Reconciler {
    /// Journals the start of a member's reconcile and builds its agenda.
    pub(super) fn start_reconcile(
        &self,
        index: &dyn AgendaSource,
        team: &TeamName,
        member: &MemberName,
        now: EpochMs,
        triggers: &[Trigger],
    ) -> Agenda {
        let agenda = index.agenda_for(member, &format_iso(now));
        // Both lines in one journal write.
        let events = [
            audit_event(
                SOURCE,
                AuditKind::ReconcileStarted,
                team,
                member,
                now,
                vec![],
                if triggers.is_empty() {
                    json!({})
                } else {
                    json!({ "triggerReasons": triggers.iter().map(|t| t.as_str()).collect::<Vec<_>>() })
                },
            ),
            audit_event(
                SOURCE,
                AuditKind::AgendaLoaded,
                team,
                member,
                now,
                agenda.diagnostics.clone(),
                json!({ "agendaFingerprint": agenda.fingerprint, "actionableCount": agenda.items.len() }),
            ),
        ];
        self.ports
            .journal
            .record_all(events.into_iter().flatten().collect());
        agenda
    }

    /// Journals the write of a status outside a reconcile (a report).
    pub(in crate::application) fn journal_status_written(
        &self,
        team: &TeamName,
        member: &MemberName,
        status: &MemberStatus,
        now: EpochMs,
    ) {
        let summary = json!({
            "state": status.state,
            "agendaFingerprint": status.agenda.fingerprint,
            "actionableCount": status.agenda.items.len(),
        });
        self.audit(
            AuditSource::JsonStore,
            AuditKind::StatusWritten,
            team,
            &member.normalized(),
            now,
            vec![],
            summary,
        );
    }

    /// Journals the decision, a runtime stall it observed, a suppression
    /// decided on the status, and the write of a reconciled status, in the
    /// app's order and shapes.
    ///
    /// `previous_evaluated_at` is when the replaced status was evaluated
    /// (none when nothing readable was stored), which a stall names.
    pub(super) fn finish_reconcile(
        &self,
        team: &TeamName,
        member: &MemberName,
        status: &MemberStatus,
        previous_evaluated_at: Option<&str>,
        suppressed: Option<&SuppressedNudge>,
        now: EpochMs,
    ) {
        // The status's lines name the member as the status does: normalized.
        let member = &member.normalized();
        let decision_kind = if status.state == StatusState::Inactive {
            AuditKind::TeamInactive
        } else {
            AuditKind::DecisionMade
        };
        let mut summary = json!({
            "agendaFingerprint": status.agenda.fingerprint,
            "state": status.state,
            "actionableCount": status.agenda.items.len(),
        });
        if let Some(provider) = status.provider_id {
            summary["providerId"] = json!(provider);
        }
        let trigger_reasons = status
            .shadow
            .as_ref()
            .and_then(|s| s.trigger_reasons.clone());
        let runtime_stall = RuntimeStall::recorded_in(&status.diagnostics);
        let mut events = vec![audit_event(
            SOURCE,
            decision_kind,
            team,
            member,
            now,
            status.diagnostics.clone(),
            summary.clone(),
        )];
        if let Some(runtime_stall) = runtime_stall {
            let mut stall = summary.clone();
            stall["reason"] = runtime_stall.reason().into();
            if let Some(triggers) = &trigger_reasons {
                stall["triggerReasons"] = json!(triggers);
            }
            stall["previousEvaluatedAt"] = json!(previous_evaluated_at);
            events.push(audit_event(
                SOURCE,
                AuditKind::RuntimeStallObserved,
                team,
                member,
                now,
                runtime_stall.diagnostics(),
                stall,
            ));
        }
        if let Some(suppressed) = suppressed {
            events.push(audit_event(
                SOURCE,
                AuditKind::NudgeSuppressed,
                team,
                member,
                now,
                suppressed.diagnostics.clone(),
                suppressed.metadata.clone(),
            ));
        }
        let mut written = summary;
        if let Some(triggers) = &trigger_reasons {
            written["triggerReasons"] = json!(triggers);
        }
        events.push(audit_event(
            AuditSource::JsonStore,
            AuditKind::StatusWritten,
            team,
            member,
            now,
            vec![],
            written,
        ));
        // All lines in one journal write.
        self.ports
            .journal
            .record_all(events.into_iter().flatten().collect());
    }

    /// Adds the metric events of a status write to the team index. Metrics
    /// are observations, so a failure here never fails the write; it is
    /// journaled for the member as `metrics_unavailable` with the error.
    pub(in crate::application) fn record_metrics(
        &self,
        team: &TeamName,
        member: &MemberName,
        status: &MemberStatus,
    ) {
        let recorded = self.ports.metrics.record(status, events_for_write(status));
        if let Err(error) = recorded {
            self.metrics_failed(team, member, status, &error);
        }
    }

    /// Logs and journals a metrics write that failed (`metrics_unavailable`).
    fn metrics_failed(
        &self,
        team: &TeamName,
        member: &MemberName,
        status: &MemberStatus,
        error: &PortError,
    ) {
        self.ports.log.log(
            LogEntry::new(
                LogLevel::Warn,
                LogCode::MetricsWriteFailed,
                format!("metric events could not be recorded: {error}"),
            )
            .with_context(json!({
                "teamName": status.team_name,
                "memberName": status.member_name,
            })),
        );
        self.audit(
            SOURCE,
            AuditKind::MetricsUnavailable,
            team,
            &member.normalized(),
            self.ports.clock.now_ms(),
            vec![error.to_string()],
            json!({}),
        );
    }

    /// [`Reconciler::record_metrics`] of a team's group commit: one index
    /// write; a failure is journaled for every member.
    pub(super) fn record_team_metrics(
        &self,
        team: &TeamName,
        written: &[(&MemberName, &MemberStatus)],
    ) {
        let writes = written
            .iter()
            .map(|(_, status)| (*status, events_for_write(status)))
            .collect();
        let Err(error) = self.ports.metrics.record_all(writes) else {
            return;
        };
        for (member, status) in written {
            self.metrics_failed(team, member, status, &error);
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(in crate::application) fn audit(
        &self,
        source: AuditSource,
        kind: AuditKind,
        team: &TeamName,
        member: &MemberName,
        at_ms: EpochMs,
        diagnostics: Vec<String>,
        metadata: serde_json::Value,
    ) {
        if let Some(event) = audit_event(source, kind, team, member, at_ms, diagnostics, metadata) {
            self.ports.journal.record(event);
        }
    }
}

/// A journal event; `None` unless `metadata` is an object.
fn audit_event(
    source: AuditSource,
    kind: AuditKind,
    team: &TeamName,
    member: &MemberName,
    at_ms: EpochMs,
    diagnostics: Vec<String>,
    metadata: serde_json::Value,
) -> Option<AuditEvent> {
    let serde_json::Value::Object(metadata) = metadata else {
        return None;
    };
    Some(AuditEvent {
        kind,
        source,
        team_name: team.clone(),
        member_name: member.to_string(),
        at_ms,
        diagnostics,
        metadata,
    })
}
