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
use super::transcripts::{active_team, launched_sessions, subfolder, team_folders};

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
    pub fn new(teams: TrustedRoot) -> Self {
        Self {
            teams,
            state: Mutex::new(State::default()),
        }
    }

    /// The (team folder, member) pairs of active teams whose launch state
    /// names `session`.
    pub fn launched(&self, session: &str) -> HashSet<(String, String)> {
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
        let start = state
            .cursor
            .as_ref()
            .map_or(0, |cursor| folders.partition_point(|f| f <= cursor));
        let in_turn = folders[start..].iter().chain(&folders[..start]);
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
