//! Reconciling a whole team from one snapshot: one group commit for every
//! roster member's status, a member whose write fails answered on its own.

use serde_json::json;

use super::{
    roster_names, AgendaSource, Found, Prepared, ReconcileOptions, Reconciler, WorkSyncError,
    SOURCE,
};
use crate::application::log::{LogCode, LogEntry, LogLevel};
use crate::application::ports::{PortError, StoredStatus};
use crate::application::queue::Trigger;
use crate::domain::audit::AuditKind;
use crate::domain::diagnostic::Diagnostic;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::status::{MemberStatus, ReconciledBy};
use crate::domain::team::TeamSnapshot;
use crate::domain::time::{format_iso, EpochMs};

impl Reconciler {
    /// Reconciles every roster member of a team from one snapshot (one index
    /// build) and persists their statuses with one group commit.
    pub fn refresh_team(&self, team: &TeamName) -> Result<Vec<MemberStatus>, WorkSyncError> {
        let snapshot = self.ports.teams.load(team);
        self.reconcile_team(
            team,
            &snapshot,
            &self.agendas(&snapshot),
            ReconciledBy::Request,
            &[Trigger::ManualRefresh],
        )
    }

    /// [`Reconciler::reconcile_with`] for every roster member of one
    /// snapshot, with one group commit for all their statuses and one
    /// metrics write (`refreshTeam`). Members whose status may not be
    /// persisted get their unpersisted status, in roster order.
    fn reconcile_team(
        &self,
        team_name: &TeamName,
        snapshot: &TeamSnapshot,
        index: &dyn AgendaSource,
        by: ReconciledBy,
        triggers: &[Trigger],
    ) -> Result<Vec<MemberStatus>, WorkSyncError> {
        let now = self.ports.clock.now_ms();
        let names = roster_names(snapshot);
        let mut unpersisted = Vec::with_capacity(names.len());
        let mut persisted = Vec::with_capacity(names.len());
        for member in &names {
            if self.may_persist(team_name, snapshot, member)? {
                persisted.push(member);
                unpersisted.push(None);
            } else {
                unpersisted.push(Some(
                    self.unpersisted_from(team_name, snapshot, member, now),
                ));
            }
        }
        let options = ReconcileOptions::default();
        let mut prepared: std::collections::HashMap<&MemberName, Prepared> = persisted
            .iter()
            .map(|member| {
                let agenda = self.start_reconcile(index, team_name, member, now, triggers);
                let prepared = self.prepare(
                    team_name, member, snapshot, agenda, now, by, triggers, options,
                );
                (*member, prepared)
            })
            .collect();
        let mut found: std::collections::HashMap<String, Found> = std::collections::HashMap::new();
        let mut build = |member: &MemberName, previous: StoredStatus| {
            // Each member's status is built from what was prepared for it,
            // moved, not copied. A member built again (written on its own
            // after a failed group commit), or a name the store hands back
            // that was not prepared, is prepared now (outside any lock of
            // ours but its own), from the same snapshot, index and time.
            let prepared = prepared.remove(member).unwrap_or_else(|| {
                let agenda = index.agenda_for(member, &format_iso(now));
                self.prepare(
                    team_name, member, snapshot, agenda, now, by, triggers, options,
                )
            });
            let reconciled = self.reconciled_status(prepared, previous);
            found.insert(member.to_string(), Found::of(&reconciled));
            reconciled.status
        };
        let outcomes: Vec<Result<MemberStatus, PortError>> = match self
            .ports
            .store
            .update_all(team_name, &persisted, &mut build)
        {
            Ok(written) => written.into_iter().map(Ok).collect(),
            // One member's store can fail the group commit (a file where
            // its folder belongs): each member is then written on its own,
            // so only the one that cannot be written misses its status.
            Err(_) => persisted
                .iter()
                .map(|member| {
                    self.ports.store.update(
                        team_name,
                        member,
                        Box::new(|previous| build(member, previous)),
                    )
                })
                .collect(),
        };
        // Nobody written: the store itself failed (a full disk, the team
        // folder gone), which is the caller's error, not a member's outcome.
        if outcomes.iter().all(Result::is_err) {
            if let Some(Err(error)) = outcomes.into_iter().next() {
                return Err(error.into());
            }
            return Ok(unpersisted.into_iter().flatten().collect());
        }
        let written: Vec<(&MemberName, &MemberStatus)> = persisted
            .iter()
            .zip(&outcomes)
            .filter_map(|(member, outcome)| Some((*member, outcome.as_ref().ok()?)))
            .collect();
        for (member, _) in &written {
            if found.get(member.as_str()).is_some_and(|f| f.legacy) {
                self.journal_legacy_read(team_name, member, now);
            }
        }
        self.record_team_metrics(team_name, &written);
        for (member, status) in &written {
            let found = found.get(member.as_str());
            self.finish_reconcile(
                team_name,
                member,
                status,
                found.and_then(|f| f.previous_evaluated_at.as_deref()),
                found.and_then(|f| f.suppressed.as_ref()),
                now,
            );
        }
        let mut outcomes = persisted.iter().zip(outcomes);
        Ok(unpersisted
            .into_iter()
            .filter_map(|status| {
                status.or_else(|| {
                    outcomes.next().map(|(member, outcome)| {
                        outcome.unwrap_or_else(|error| {
                            self.write_failed(team_name, snapshot, member, &error, now)
                        })
                    })
                })
            })
            .collect())
    }

    /// The answer for a roster member whose status could not be written:
    /// computed from the board, marked `status_write_failed` (and not
    /// persisted), the error logged and journaled, so the rest of the team's
    /// refresh stands.
    fn write_failed(
        &self,
        team_name: &TeamName,
        snapshot: &TeamSnapshot,
        member: &MemberName,
        error: &PortError,
        now: EpochMs,
    ) -> MemberStatus {
        self.ports.log.log(
            LogEntry::new(
                LogLevel::Error,
                LogCode::StatusWriteFailed,
                format!("member status could not be written: {error}"),
            )
            .with_context(json!({ "teamName": team_name, "memberName": member })),
        );
        self.audit(
            SOURCE,
            AuditKind::StatusWriteFailed,
            team_name,
            member,
            now,
            vec![error.to_string()],
            json!({}),
        );
        let mut status = self.unpersisted_from(team_name, snapshot, member, now);
        status
            .diagnostics
            .push(Diagnostic::StatusWriteFailed.as_str().into());
        status
    }
}
