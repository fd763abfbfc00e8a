//! Which teams and members the app's process supervisor reports as running.

use std::collections::{BTreeSet, HashMap};
use std::sync::RwLock;

use crate::domain::decision::RuntimeActivity;
use crate::domain::names::{normalize_member_name, team_runtime_key, MemberName, TeamName};

#[derive(Debug, Clone)]
struct TeamRuntime {
    active: bool,
    /// `None`: every roster member counts as running.
    active_members: Option<BTreeSet<String>>,
}

/// In-memory runtime state per team; a team never reported counts as active.
#[derive(Debug, Default)]
pub struct RuntimeStates {
    teams: RwLock<HashMap<String, TeamRuntime>>,
}

impl RuntimeStates {
    /// Records the supervisor's view of a team.
    pub fn set(&self, team_name: &TeamName, active: bool, active_members: Option<Vec<String>>) {
        let state = TeamRuntime {
            active,
            active_members: active_members
                .map(|m| m.iter().map(|n| normalize_member_name(n)).collect()),
        };
        let mut teams = self.teams.write().unwrap_or_else(|p| p.into_inner());
        teams.insert(team_runtime_key(team_name), state);
    }

    /// Forgets a team (it counts as active again).
    pub(crate) fn forget(&self, team_name: &TeamName) {
        let mut teams = self.teams.write().unwrap_or_else(|p| p.into_inner());
        teams.remove(&team_runtime_key(team_name));
    }

    /// Whether the supervisor reports the team as running (the team half
    /// of [`RuntimeStates::activity`]).
    pub fn team_active(&self, team_name: &TeamName) -> bool {
        let teams = self.teams.read().unwrap_or_else(|p| p.into_inner());
        teams
            .get(&team_runtime_key(team_name))
            .is_none_or(|team| team.active)
    }

    /// Runtime activity of one member.
    pub fn activity(&self, team_name: &TeamName, member_name: &MemberName) -> RuntimeActivity {
        let teams = self.teams.read().unwrap_or_else(|p| p.into_inner());
        match teams.get(&team_runtime_key(team_name)) {
            None => RuntimeActivity {
                team_active: true,
                member_active: true,
            },
            Some(team) => RuntimeActivity {
                team_active: team.active,
                member_active: team
                    .active_members
                    .as_ref()
                    .is_none_or(|m| m.contains(&normalize_member_name(member_name))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(name: &str) -> TeamName {
        TeamName::parse(name).unwrap()
    }

    fn member(name: &str) -> MemberName {
        MemberName::parse(name).unwrap()
    }

    #[test]
    fn unknown_teams_are_active_and_member_lists_narrow() {
        let states = RuntimeStates::default();
        assert!(states.activity(&team("forge"), &member("jack")).team_active);
        states.set(&team("Forge"), true, Some(vec!["Jack".into()]));
        assert!(
            states
                .activity(&team("forge"), &member("jack"))
                .member_active
        );
        assert!(
            !states
                .activity(&team("forge"), &member("jill"))
                .member_active
        );
        states.set(&team("forge"), false, None);
        assert!(!states.activity(&team("forge"), &member("jack")).team_active);
    }
}
