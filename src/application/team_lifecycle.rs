//! The engine's team lifecycle over the [`TeamGate`](crate::application::team_gate::TeamGate):
//! every per-team operation goes through [`Engine::with_team`]; deletion
//! fences the team and waits for what it admitted; a deleted team comes
//! back by `resumeTeam` or by its `config.json` being written again.

use super::{Engine, WorkSyncError};
use crate::application::host::Host;
use crate::application::router::{announces_config_written, TeamChangeEvent};
use crate::application::team_gate::{Admission, ConfigProbe};
use crate::domain::names::TeamName;

impl Engine {
    /// Runs one per-team operation through the team's gate: refused while the
    /// team is being deleted, and counted so deletion can wait for it.
    pub fn with_team<R>(
        &self,
        team: &TeamName,
        operation: impl FnOnce() -> Result<R, WorkSyncError>,
    ) -> Result<R, WorkSyncError> {
        let admission = self.state().gate.admit(team);
        let Some(admission) = admission else {
            return Err(WorkSyncError::TeamQuiesced(team.to_string()));
        };
        let _admitted = Admitted {
            engine: self,
            admission,
        };
        operation()
    }

    /// A deleted team whose `config.json` is written again (a `config`
    /// event for it, and the file is there) comes back once, as the app's
    /// deletion coordinator does: fence lifted, one startup scan. The look
    /// for the file runs in the background (it may ask the app's
    /// `configFileAccess`), one at a time per team: events of the team that
    /// come meanwhile are swallowed and start no second look.
    pub(super) fn resume_if_recreated(&self, team: TeamName, event: &TeamChangeEvent) {
        if !announces_config_written(event) {
            return;
        }
        let probe = self.state().gate.start_config_probe(&team);
        let Some(probe) = probe else {
            return;
        };
        self.in_background(Box::new(move |engine: &Engine| {
            engine.finish_config_probe(&team, probe);
        }));
    }

    /// Looks for the deleted team's `config.json` (the app's
    /// `configFileAccess` when it gave one: resolved means there; else the
    /// addon's own read) and resumes the team when it is there and the
    /// look is still the team's current one.
    fn finish_config_probe(&self, team: &TeamName, probe: ConfigProbe) {
        let found = match self.deps.ports.host.config_file_access(team.as_str()) {
            Some(found) => found,
            None => self.deps.ports.teams.load_roster(team).config_found,
        };
        let resumed = self.state().gate.finish_config_probe(probe, found);
        if resumed {
            self.enqueue_startup_scan(std::slice::from_ref(team));
        }
    }

    /// Fences the team, drops its queue, waits for its running reconciles
    /// and every admitted per-team operation, then purges its stored state
    /// (the SQLite rows and team files; the JSON store keeps its files), as
    /// the app's deletion coordinator does once the team is idle.
    pub fn prepare_team_deletion(
        &self,
        team: &TeamName,
        deletion_id: Option<&str>,
    ) -> Result<(), WorkSyncError> {
        let mut state = self.state();
        state.gate.quiesce(team);
        state.queue.drop_team(team);
        while state.queue.running_in_team(team) > 0 || state.gate.has_admitted(team) {
            state = self.finished.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        drop(state);
        self.deps.ports.purge.purge_team(team, deletion_id)?;
        Ok(())
    }

    /// Marks the team deleted and forgets its in-memory state (queued items,
    /// runtime state, tool activity); touches no file. The fence stays (a
    /// tombstone, also without a `prepareTeamDeletion` first) until the
    /// team's `config.json` is written again or `resumeTeam` is called.
    pub fn complete_team_deletion(&self, team: &TeamName) -> Result<(), WorkSyncError> {
        let mut state = self.state();
        state.gate.mark_deleted(team);
        state.queue.drop_team(team);
        drop(state);
        self.deps.ports.runtime.forget(team);
        self.deps.ports.busy.forget_team(team);
        Ok(())
    }

    /// Undoes [`Engine::prepare_team_deletion`] and re-scans the team.
    pub fn resume_team(&self, team: &TeamName) -> Result<(), WorkSyncError> {
        if self.lift_deletion_fence(team) {
            self.enqueue_startup_scan(std::slice::from_ref(team));
        }
        Ok(())
    }

    /// Lifts the deletion fence without touching the disk (the re-scan is
    /// separate). False when the team already came back on its own (its
    /// re-scan ran then): no second scan.
    pub(crate) fn lift_deletion_fence(&self, team: &TeamName) -> bool {
        self.state().gate.lift_fence(team)
    }
}

/// Counts one admitted operation until dropped (also on panic).
struct Admitted<'a> {
    engine: &'a Engine,
    admission: Admission,
}

impl Drop for Admitted<'_> {
    fn drop(&mut self) {
        self.engine.state().gate.release(&self.admission);
        self.engine.finished.notify_all();
    }
}
