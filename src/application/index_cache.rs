//! The task indexes of the teams reconciled lately, kept between reconciles
//! so that one member's agenda after a one-task change costs that change,
//! not a pass over the whole board ([`TaskIndex::refresh`]).
//!
//! Each agenda is built from the snapshot the caller read, with the team's
//! index first brought to that snapshot's tasks: the agenda is the one
//! [`TeamIndex::build`] gives for the same snapshot. Memory is bounded: at
//! most [`MAX_INDEXED_TEAMS`] teams (least recently used dropped first).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::domain::agenda::{Agenda, TaskIndex, TeamIndex};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::team::TeamSnapshot;

/// Teams whose index is kept; the task cache keeps as many boards.
const MAX_INDEXED_TEAMS: usize = 4;

/// One team's kept index and when it was last used.
#[derive(Debug, Default)]
struct Slot {
    index: Arc<Mutex<TaskIndex>>,
    used: u64,
}

/// Kept [`TaskIndex`]es by team (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct IndexCache {
    teams: Mutex<(HashMap<String, Slot>, u64)>,
}

impl IndexCache {
    /// The agenda of `member` on `snapshot`, stamped with `generated_at`.
    pub(crate) fn agenda_for(
        &self,
        snapshot: &TeamSnapshot,
        member: &MemberName,
        generated_at: &str,
    ) -> Agenda {
        let index = self.index_of(&snapshot.team_name);
        // Reconciles of other teams never wait here; ones of the same team
        // wait only for the refresh and one agenda.
        // A panic mid-refresh (caught at the binding) may have left the
        // index half updated: start that team over from a full build.
        let mut index = index.lock().unwrap_or_else(|poisoned| {
            index.clear_poison();
            let mut index = poisoned.into_inner();
            *index = TaskIndex::default();
            index
        });
        TeamIndex::cached(snapshot, &mut index).agenda_for(member, generated_at)
    }

    fn index_of(&self, team: &TeamName) -> Arc<Mutex<TaskIndex>> {
        let mut guard = lock(&self.teams);
        let (teams, clock) = &mut *guard;
        *clock += 1;
        if !teams.contains_key(team.as_str()) && teams.len() >= MAX_INDEXED_TEAMS {
            let oldest = teams
                .iter()
                .min_by_key(|(_, slot)| slot.used)
                .map(|(name, _)| name.clone());
            if let Some(oldest) = oldest {
                teams.remove(&oldest);
            }
        }
        let slot = teams.entry(team.to_string()).or_default();
        slot.used = *clock;
        slot.index.clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::names::TeamName;
    use crate::domain::team::{Task, TaskStatus, TeamMember};

    fn team(name: &str, owner: &str) -> TeamSnapshot {
        let task = Task {
            id: "1".into(),
            display_id: "#1".into(),
            subject: "One".into(),
            status: TaskStatus::Pending,
            owner: Some(owner.into()),
            blocked_by: vec![],
            blocks: vec![],
            needs_clarification: None,
            review_state: crate::domain::team::ReviewState::None,
            history: vec![],
        };
        TeamSnapshot {
            config_found: true,
            members: vec![TeamMember {
                name: "jack".into(),
                ..TeamMember::default()
            }],
            tasks: Arc::new(vec![Arc::new(task)]),
            ..TeamSnapshot::empty(TeamName::parse(name).unwrap())
        }
    }

    #[test]
    fn agendas_follow_each_snapshot_and_teams_stay_bounded() {
        let cache = IndexCache::default();
        let at = "2026-11-22T10:00:00.000Z";
        let jack = MemberName::parse("jack").unwrap();
        // (team, owner of its task, items jack has)
        let cases = [
            ("a", "jack", 1),
            ("a", "jill", 0),
            ("b", "jack", 1),
            ("a", "jack", 1),
        ];
        for (name, owner, items) in cases {
            let snapshot = team(name, owner);
            let agenda = cache.agenda_for(&snapshot, &jack, at);
            assert_eq!(agenda, TeamIndex::build(&snapshot).agenda_for(&jack, at));
            assert_eq!(agenda.items.len(), items, "{name} {owner}");
        }
        for i in 0..MAX_INDEXED_TEAMS + 3 {
            cache.agenda_for(&team(&format!("t{i}"), "jack"), &jack, at);
        }
        assert_eq!(lock(&cache.teams).0.len(), MAX_INDEXED_TEAMS);
    }
}
