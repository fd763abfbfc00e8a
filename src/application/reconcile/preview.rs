//! Side-effect-free previews: the status a reconcile would produce now,
//! for one member or a whole team.

use super::{roster_names, AgendaSource, Reconciler, TeamPreview, WorkSyncError};
use crate::application::ports::StoredStatus;
use crate::domain::agenda::TeamIndex;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::status::MemberStatus;
use crate::domain::team::TeamSnapshot;
use crate::domain::time::format_iso;

impl Reconciler {
    /// The status a reconcile would produce now, computed without any side
    /// effect: the stored status is only peeked at (a bad file stays where it
    /// is), nothing is written, journaled or counted, and no report token is
    /// issued (`reportToken` is absent). Nudge suppression is not applied
    /// (it needs the outbox, whose reads repair files), so `shadow.wouldNudge`
    /// is the decision before suppression.
    pub fn preview_status(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<MemberStatus, WorkSyncError> {
        let snapshot = self.ports.teams.load(team);
        self.preview_from(team, &snapshot, &self.agendas(&snapshot), member)
    }

    /// [`Reconciler::preview_status`] of every roster member of a team, from
    /// one snapshot, with what the team reader found about the team itself.
    pub fn preview_team(&self, team: &TeamName) -> Result<TeamPreview, WorkSyncError> {
        let snapshot = self.ports.teams.load(team);
        let index = TeamIndex::build(&snapshot);
        let statuses = roster_names(&snapshot)
            .into_iter()
            .map(|member| self.preview_from(team, &snapshot, &index, &member))
            .collect::<Result<_, _>>()?;
        Ok(TeamPreview {
            team_name: snapshot.team_name.to_string(),
            config_found: snapshot.config_found,
            diagnostics: snapshot
                .diagnostics
                .iter()
                .chain(&snapshot.content_diagnostics)
                .cloned()
                .collect(),
            statuses,
        })
    }

    fn preview_from(
        &self,
        team: &TeamName,
        snapshot: &TeamSnapshot,
        index: &dyn AgendaSource,
        member: &MemberName,
    ) -> Result<MemberStatus, WorkSyncError> {
        let now = self.ports.clock.now_ms();
        // Without a team folder there is nothing stored to peek at.
        let previous = if snapshot.config_found {
            self.ports.store.peek(team, member)?
        } else {
            StoredStatus::Missing
        };
        let agenda = index.agenda_for(member, &format_iso(now));
        let mut status = self.board_status(snapshot, member, agenda, previous, now);
        status
            .diagnostics
            .push("status_snapshot_not_persisted".into());
        Ok(status)
    }
}
