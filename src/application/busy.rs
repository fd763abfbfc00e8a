//! The busy signal: tool activity makes a member busy.
//!
//! The app reports tool calls as `tool-activity` events. A running call makes
//! its member busy until it finishes (or goes stale, its finish lost); a
//! finished call keeps the member busy for [`RECENT_TOOL_MS`] more. Calls are
//! tracked by id, so a `reset` can forget exactly the calls the app lost track
//! of. The state lives in memory only and is bounded: at most
//! [`MAX_TOOLS_PER_MEMBER`] calls per member and [`MAX_MEMBERS`] members
//! (members whose calls all expired are dropped first, as they are whenever
//! they are looked at).

use std::collections::HashMap;
use std::sync::Mutex;

use super::router::ToolActivity;
use crate::domain::names::{normalize_member_name, team_runtime_key, MemberName, TeamName};
use crate::domain::time::EpochMs;

/// How long after a tool finishes the member still counts as busy.
const RECENT_TOOL_MS: EpochMs = 90_000;
/// An active tool older than this is considered stale (its finish was lost).
const ACTIVE_TOOL_STALE_MS: EpochMs = 10 * 60_000;
/// Calls remembered per member; the oldest go first. A member never runs
/// this many tools at once, so only a flood of unfinished starts hits it.
const MAX_TOOLS_PER_MEMBER: usize = 64;
/// Members tracked across all teams. Events may name members no roster
/// lists, which are never looked up; past this, expired ones are dropped,
/// and while none has expired a new member's call is not recorded.
pub(crate) const MAX_MEMBERS: usize = 4096;

/// Why a member is busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyReason {
    /// A tool call is running.
    ActiveToolActivity,
    /// A tool call finished less than 90 s ago.
    RecentToolActivity,
}

impl BusyReason {
    /// The spelling after `member_busy:` in a held nudge's reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ActiveToolActivity => "active_tool_activity",
            Self::RecentToolActivity => "recent_tool_activity",
        }
    }
}

/// A member is busy: why, and with which tool when the app named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Busy {
    /// Running or recently finished call.
    pub reason: BusyReason,
    /// The tool (`Bash`, `Edit`, ...) of the newest call behind `reason`.
    pub tool_name: Option<String>,
}

/// One tracked tool call.
#[derive(Debug, Clone)]
enum Call {
    /// Running since the given time.
    Running {
        started: EpochMs,
        tool_name: Option<String>,
    },
    /// Finished; keeps its member busy until the given time.
    Finished {
        busy_until: EpochMs,
        tool_name: Option<String>,
    },
}

impl Call {
    /// When the call stops mattering at all.
    fn expires(&self) -> EpochMs {
        match self {
            Self::Running { started, .. } => started + ACTIVE_TOOL_STALE_MS,
            Self::Finished { busy_until, .. } => *busy_until,
        }
    }
}

/// In-memory tool activity per member.
#[derive(Debug, Default)]
pub struct BusySignals {
    members: Mutex<HashMap<(String, String), HashMap<String, Call>>>,
}

fn key(team: &TeamName, member: &MemberName) -> (String, String) {
    (team_runtime_key(team), normalize_member_name(member))
}

impl BusySignals {
    fn members(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(String, String), HashMap<String, Call>>> {
        self.members.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stores a call, evicting the member's oldest call when at the cap.
    /// Stores the call `make` builds from the one already stored under
    /// `tool_id` (if any), in one critical section.
    fn put(
        &self,
        team: &TeamName,
        member: &MemberName,
        tool_id: &str,
        now: EpochMs,
        make: impl FnOnce(Option<&Call>) -> Call,
    ) {
        let mut members = self.members();
        let key = key(team, member);
        if !members.contains_key(&key) && members.len() >= MAX_MEMBERS {
            members.retain(|_, calls| calls.values().any(|call| now < call.expires()));
            if members.len() >= MAX_MEMBERS {
                return;
            }
        }
        let calls = members.entry(key).or_default();
        if !calls.contains_key(tool_id) && calls.len() >= MAX_TOOLS_PER_MEMBER {
            let oldest = calls
                .iter()
                .min_by_key(|(_, call)| call.expires())
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                calls.remove(&oldest);
            }
        }
        let call = make(calls.get(tool_id));
        calls.insert(tool_id.to_string(), call);
    }

    /// Records one tool activity event of the member; an event without a
    /// time happened `now`, a finish without a call id records nothing.
    pub fn note(
        &self,
        team: &TeamName,
        member: &MemberName,
        activity: &ToolActivity,
        now: EpochMs,
    ) {
        match activity {
            ToolActivity::Started {
                tool_id,
                tool_name,
                at,
            } => self.tool_started(
                team,
                member,
                tool_id,
                tool_name.as_deref(),
                at.unwrap_or(now),
                now,
            ),
            ToolActivity::Finished { tool_id, at } => {
                if let Some(tool_id) = tool_id {
                    self.tool_finished(team, member, tool_id, at.unwrap_or(now), now);
                }
            }
            ToolActivity::Reset { tool_ids } => self.tools_reset(team, member, tool_ids),
        }
    }

    /// A tool call started. Event times in the future are clamped to `now`.
    pub(crate) fn tool_started(
        &self,
        team: &TeamName,
        member: &MemberName,
        tool_id: &str,
        tool_name: Option<&str>,
        at: EpochMs,
        now: EpochMs,
    ) {
        self.put(team, member, tool_id, now, |_| Call::Running {
            started: at.min(now),
            tool_name: tool_name.map(str::to_string),
        });
    }

    /// A tool call finished: the member stays busy for [`RECENT_TOOL_MS`]
    /// after `at`. The tool name comes from the call's start, if seen.
    pub fn tool_finished(
        &self,
        team: &TeamName,
        member: &MemberName,
        tool_id: &str,
        at: EpochMs,
        now: EpochMs,
    ) {
        self.put(team, member, tool_id, now, |seen| Call::Finished {
            busy_until: at.min(now) + RECENT_TOOL_MS,
            tool_name: match seen {
                Some(Call::Running { tool_name, .. } | Call::Finished { tool_name, .. }) => {
                    tool_name.clone()
                }
                None => None,
            },
        });
    }

    /// The app lost track of some calls: forgets the listed ones, or every
    /// call of the member when the list is empty.
    pub(crate) fn tools_reset(&self, team: &TeamName, member: &MemberName, tool_ids: &[String]) {
        let mut members = self.members();
        let key = key(team, member);
        if tool_ids.is_empty() {
            members.remove(&key);
            return;
        }
        if let Some(calls) = members.get_mut(&key) {
            for id in tool_ids {
                calls.remove(id);
            }
            if calls.is_empty() {
                members.remove(&key);
            }
        }
    }

    /// Whether the member is busy now.
    pub fn busy(&self, team: &TeamName, member: &MemberName, now: EpochMs) -> Option<BusyReason> {
        self.busy_with(team, member, now).map(|busy| busy.reason)
    }

    /// Whether the member is busy now, why, and with which tool: a running
    /// call wins over a finished one, the newest call names the tool.
    pub(crate) fn busy_with(
        &self,
        team: &TeamName,
        member: &MemberName,
        now: EpochMs,
    ) -> Option<Busy> {
        let mut members = self.members();
        let key = key(team, member);
        let calls = members.get_mut(&key)?;
        calls.retain(|_, call| now < call.expires());
        if calls.is_empty() {
            members.remove(&key);
            return None;
        }
        let running = calls
            .values()
            .filter_map(|call| match call {
                Call::Running { started, tool_name } => Some((*started, tool_name)),
                Call::Finished { .. } => None,
            })
            .max_by_key(|(started, _)| *started);
        if let Some((_, tool_name)) = running {
            return Some(Busy {
                reason: BusyReason::ActiveToolActivity,
                tool_name: tool_name.clone(),
            });
        }
        calls
            .values()
            .filter_map(|call| match call {
                Call::Finished {
                    busy_until,
                    tool_name,
                } => Some((*busy_until, tool_name)),
                Call::Running { .. } => None,
            })
            .max_by_key(|(busy_until, _)| *busy_until)
            .map(|(_, tool_name)| Busy {
                reason: BusyReason::RecentToolActivity,
                tool_name: tool_name.clone(),
            })
    }

    /// Forgets a team (after deletion, or when its lead goes offline).
    pub(crate) fn forget_team(&self, team: &TeamName) {
        let team = team_runtime_key(team);
        self.members().retain(|(t, _), _| *t != team);
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

    fn busy_with(reason: BusyReason, tool: Option<&str>) -> Option<Busy> {
        Some(Busy {
            reason,
            tool_name: tool.map(str::to_string),
        })
    }

    #[test]
    fn active_then_recent_then_idle() {
        let busy = BusySignals::default();
        assert_eq!(busy.busy(&team("forge"), &member("jack"), 0), None);
        busy.tool_started(
            &team("forge"),
            &member("Jack"),
            "t1",
            Some("Bash"),
            1_000,
            1_000,
        );
        assert_eq!(
            busy.busy_with(&team("forge"), &member("jack"), 2_000),
            busy_with(BusyReason::ActiveToolActivity, Some("Bash"))
        );
        busy.tool_finished(&team("forge"), &member("jack"), "t1", 5_000, 5_000);
        assert_eq!(
            busy.busy_with(&team("forge"), &member("jack"), 5_000 + RECENT_TOOL_MS - 1),
            busy_with(BusyReason::RecentToolActivity, Some("Bash"))
        );
        assert_eq!(
            busy.busy(&team("forge"), &member("jack"), 5_000 + RECENT_TOOL_MS),
            None
        );
    }

    #[test]
    fn a_running_call_wins_and_the_newest_names_the_tool() {
        let busy = BusySignals::default();
        busy.tool_started(
            &team("forge"),
            &member("jack"),
            "a",
            Some("Read"),
            1_000,
            1_000,
        );
        busy.tool_started(
            &team("forge"),
            &member("jack"),
            "b",
            Some("Bash"),
            2_000,
            2_000,
        );
        busy.tool_finished(&team("forge"), &member("jack"), "a", 3_000, 3_000);
        assert_eq!(
            busy.busy_with(&team("forge"), &member("jack"), 3_000),
            busy_with(BusyReason::ActiveToolActivity, Some("Bash"))
        );
        // A finish without a seen start still makes the member busy, unnamed.
        busy.tool_finished(&team("forge"), &member("jill"), "x", 3_000, 3_000);
        assert_eq!(
            busy.busy_with(&team("forge"), &member("jill"), 3_000),
            busy_with(BusyReason::RecentToolActivity, None)
        );
    }

    #[test]
    fn reset_forgets_listed_calls_or_the_whole_member() {
        let busy = BusySignals::default();
        busy.tool_started(&team("forge"), &member("jack"), "a", None, 1_000, 1_000);
        busy.tool_started(&team("forge"), &member("jack"), "b", None, 1_000, 1_000);
        busy.tools_reset(&team("forge"), &member("jack"), &["a".into()]);
        assert_eq!(
            busy.busy(&team("forge"), &member("jack"), 1_000),
            Some(BusyReason::ActiveToolActivity)
        );
        busy.tools_reset(&team("forge"), &member("jack"), &["b".into()]);
        assert_eq!(busy.busy(&team("forge"), &member("jack"), 1_000), None);
        busy.tool_finished(&team("forge"), &member("jack"), "c", 1_000, 1_000);
        busy.tools_reset(&team("forge"), &member("JACK"), &[]);
        assert_eq!(busy.busy(&team("forge"), &member("jack"), 1_000), None);
    }

    #[test]
    fn stale_active_tools_and_future_timestamps_are_bounded() {
        let busy = BusySignals::default();
        busy.tool_started(&team("forge"), &member("jack"), "lost", None, 0, 0);
        assert_eq!(
            busy.busy(&team("forge"), &member("jack"), ACTIVE_TOOL_STALE_MS),
            None
        );
        // A finish stamped an hour in the future counts as finishing now.
        busy.tool_finished(&team("forge"), &member("jill"), "t", 3_600_000, 1_000);
        assert_eq!(
            busy.busy(&team("forge"), &member("jill"), 1_000 + RECENT_TOOL_MS),
            None
        );
        busy.tool_started(&team("forge"), &member("jack"), "t", None, 1, 1);
        busy.forget_team(&team("FORGE"));
        assert_eq!(busy.busy(&team("forge"), &member("jack"), 1), None);
    }

    #[test]
    fn members_are_capped_and_expired_ones_make_room() {
        let busy = BusySignals::default();
        for n in 0..MAX_MEMBERS {
            busy.tool_finished(&team("forge"), &member(&format!("m{n}")), "t", 0, 0);
        }
        // All busy until RECENT_TOOL_MS: a new member is not recorded.
        busy.tool_started(&team("forge"), &member("late"), "t", None, 1, 1);
        assert_eq!(busy.busy(&team("forge"), &member("late"), 1), None);
        assert_eq!(busy.members().len(), MAX_MEMBERS);
        // Once they expired, they make room.
        busy.tool_started(
            &team("forge"),
            &member("later"),
            "t",
            None,
            RECENT_TOOL_MS,
            RECENT_TOOL_MS,
        );
        assert_eq!(
            busy.busy(&team("forge"), &member("later"), RECENT_TOOL_MS),
            Some(BusyReason::ActiveToolActivity)
        );
        assert_eq!(busy.members().len(), 1);
    }

    #[test]
    fn a_flood_of_unfinished_starts_is_capped_per_member() {
        let busy = BusySignals::default();
        for n in 0..(MAX_TOOLS_PER_MEMBER as i64 * 4) {
            busy.tool_started(
                &team("forge"),
                &member("jack"),
                &format!("t{n}"),
                None,
                n,
                n,
            );
        }
        let members = busy.members();
        let calls = &members[&key(&team("forge"), &member("jack"))];
        assert_eq!(calls.len(), MAX_TOOLS_PER_MEMBER);
        // The newest calls are the ones kept.
        assert!(calls.contains_key(&format!("t{}", MAX_TOOLS_PER_MEMBER * 4 - 1)));
        assert!(!calls.contains_key("t0"));
    }
}
