//! Which members' `launch-state.json` name a runtime session, across every
//! team folder. One build reads at most [`MAX_LAUNCH_STATES`] launch states:
//! with more team folders, each build continues where the last one stopped
//! (round robin) and the other folders keep what their last build found, so
//! which teams are looked at is never decided by how their folders sort.
//! Only folders whose launch state names a usable session are kept, so the
//! index grows with launched members, not with folders. A hit is checked
//! against the team's config when it is used (an active team only).

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::safe_fs::TrustedRoot;
use super::transcripts::{
    active_team, folders_in_turn, launched_sessions, subfolder, team_folders,
};

/// Most launch states (small capped files) read by one index build.
pub(crate) const MAX_LAUNCH_STATES: usize = 1000;
/// How long an index is reused.
const INDEX_TTL: Duration = Duration::from_secs(5);
/// A miss rebuilds an index older than this once, so a brand-new launch is found.
const MISS_REBUILD_AFTER: Duration = Duration::from_millis(500);

#[derive(Debug, Default)]
struct State {
    /// Per team folder with a usable launch state: (member, session).
    teams: BTreeMap<String, Vec<(String, String)>>,
    /// The team folder the last build read last in turn.
    cursor: Option<String>,
    built: Option<Instant>,
}

/// The launch states below one teams root, indexed incrementally.
#[derive(Debug)]
pub(crate) struct LaunchIndex {
    teams: TrustedRoot,
    state: Mutex<State>,
}

impl LaunchIndex {
    /// An empty index over `teams`.
    pub(crate) fn new(teams: TrustedRoot) -> Self {
        Self {
            teams,
            state: Mutex::new(State::default()),
        }
    }

    /// The (team folder, member) pairs of active teams whose launch state
    /// names `session`.
    pub(crate) fn launched(&self, session: &str) -> HashSet<(String, String)> {
        let found = self.lookup(session, INDEX_TTL);
        if !found.is_empty() {
            return found;
        }
        self.lookup(session, MISS_REBUILD_AFTER)
    }

    fn lookup(&self, session: &str, rebuild_older_than: Duration) -> HashSet<(String, String)> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state
            .built
            .is_none_or(|built| built.elapsed() >= rebuild_older_than)
        {
            self.build_step(&mut state);
        }
        let hits: Vec<(&String, &String)> = state
            .teams
            .iter()
            .flat_map(|(team, members)| {
                members
                    .iter()
                    .filter(|(_, s)| s == session)
                    .map(move |(member, _)| (team, member))
            })
            .collect();
        if hits.is_empty() {
            return HashSet::new();
        }
        let Some(root) = self.teams.open_dir(self.teams.path()).ok().flatten() else {
            return HashSet::new();
        };
        hits.into_iter()
            .filter(|(team, _)| active_team(&root, team).is_some())
            .map(|(team, member)| (team.clone(), member.clone()))
            .collect()
    }

    /// Reads the next [`MAX_LAUNCH_STATES`] launch states in turn after the
    /// cursor; folders that are gone leave the index.
    fn build_step(&self, state: &mut State) {
        let folders = team_folders(&self.teams);
        state
            .teams
            .retain(|team, _| folders.binary_search(team).is_ok());
        let root = self.teams.open_dir(self.teams.path()).ok().flatten();
        let in_turn = folders_in_turn(&folders, state.cursor.as_ref());
        for team in in_turn.take(MAX_LAUNCH_STATES) {
            let launched: Vec<(String, String)> = root
                .as_ref()
                .and_then(|root| subfolder(root, team))
                .map(|dir| launched_sessions(&dir, team))
                .unwrap_or_default()
                .into_iter()
                .map(|(_, member, session)| (member, session))
                .collect();
            if launched.is_empty() {
                state.teams.remove(team);
            } else {
                state.teams.insert(team.clone(), launched);
            }
            state.cursor = Some(team.clone());
        }
        state.built = Some(Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fs;
    use std::path::Path;

    fn team(root: &Path, name: &str, session: Option<&str>) {
        let dir = root.join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("config.json"),
            json!({"name": name, "members": [{"name": "kim"}]}).to_string(),
        )
        .unwrap();
        if let Some(session) = session {
            fs::write(
                dir.join("launch-state.json"),
                json!({"teamName": name, "members": {"kim": {"runtimeSessionId": session}}})
                    .to_string(),
            )
            .unwrap();
        }
    }

    #[test]
    fn every_launch_state_is_read_within_a_few_builds_and_only_launched_teams_are_kept() {
        let root = tempfile::tempdir().unwrap();
        for n in 0..MAX_LAUNCH_STATES + 10 {
            let session = format!("K{n}");
            team(
                root.path(),
                &format!("t-{n:05}"),
                (n % 2 == 0).then_some(&*session),
            );
        }
        let last = MAX_LAUNCH_STATES + 8;
        let index = LaunchIndex::new(TrustedRoot::new(root.path().to_path_buf()));
        let kim = |n: usize| HashSet::from([(format!("t-{n:05}"), "kim".to_string())]);
        // (lookup, found) in build order: the first build stops short of
        // the last folders, the next one comes round to them, and the
        // first folders keep what the first build found.
        let found: Vec<bool> = [last, last, 0]
            .iter()
            .map(|&n| index.lookup(&format!("K{n}"), Duration::ZERO) == kim(n))
            .collect();
        assert_eq!(found, [false, true, true]);
        let state = index.state.lock().unwrap();
        assert_eq!(state.teams.len(), (MAX_LAUNCH_STATES + 10) / 2);
    }
}
