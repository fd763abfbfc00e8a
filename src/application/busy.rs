//! The busy signal: tool activity makes a member busy (DATA.md §5 "Busy").

use std::collections::HashMap;
use std::sync::Mutex;

use crate::domain::names::normalize_member_name;
use crate::domain::time::EpochMs;

/// How long after a tool finishes the member still counts as busy.
pub const RECENT_TOOL_MS: EpochMs = 90_000;
/// An active tool older than this is considered stale (its finish was lost).
pub const ACTIVE_TOOL_STALE_MS: EpochMs = 10 * 60_000;

/// Why a member is busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyReason {
    /// A tool call is running.
    ActiveToolActivity,
    /// A tool call finished less than 90 s ago.
    RecentToolActivity,
}

impl BusyReason {
    /// Wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ActiveToolActivity => "active_tool_activity",
            Self::RecentToolActivity => "recent_tool_activity",
        }
    }
}

#[derive(Debug, Default)]
struct MemberTools {
    /// Running tool calls by id, with their start time.
    active: HashMap<String, EpochMs>,
    last_finish: Option<EpochMs>,
}

/// In-memory tool activity per member.
#[derive(Debug, Default)]
pub struct BusySignals {
    members: Mutex<HashMap<(String, String), MemberTools>>,
}

fn key(team: &str, member: &str) -> (String, String) {
    (normalize_member_name(team), normalize_member_name(member))
}

impl BusySignals {
    /// A tool call started. Event times in the future are clamped to `now`.
    pub fn tool_started(&self, team: &str, member: &str, tool_id: &str, at: EpochMs, now: EpochMs) {
        let mut members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        let tools = members.entry(key(team, member)).or_default();
        tools.active.insert(tool_id.to_string(), at.min(now));
    }

    /// A tool call finished.
    pub fn tool_finished(
        &self,
        team: &str,
        member: &str,
        tool_id: &str,
        at: EpochMs,
        now: EpochMs,
    ) {
        let mut members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        let tools = members.entry(key(team, member)).or_default();
        tools.active.remove(tool_id);
        let at = at.min(now);
        tools.last_finish = Some(tools.last_finish.map_or(at, |last| last.max(at)));
    }

    /// Whether the member is busy now, and why (active tool first).
    pub fn busy(&self, team: &str, member: &str, now: EpochMs) -> Option<BusyReason> {
        let members = self.members.lock().unwrap_or_else(|p| p.into_inner());
        let tools = members.get(&key(team, member))?;
        if tools
            .active
            .values()
            .any(|&started| now - started < ACTIVE_TOOL_STALE_MS)
        {
            return Some(BusyReason::ActiveToolActivity);
        }
        tools
            .last_finish
            .filter(|&finished| now - finished < RECENT_TOOL_MS)
            .map(|_| BusyReason::RecentToolActivity)
    }

    /// Forgets a team (after deletion).
    pub fn forget_team(&self, team: &str) {
        let team = normalize_member_name(team);
        self.members
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(t, _), _| *t != team);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_then_recent_then_idle() {
        let busy = BusySignals::default();
        assert_eq!(busy.busy("forge", "jack", 0), None);
        busy.tool_started("forge", "Jack", "t1", 1_000, 1_000);
        assert_eq!(
            busy.busy("forge", "jack", 2_000),
            Some(BusyReason::ActiveToolActivity)
        );
        busy.tool_finished("forge", "jack", "t1", 5_000, 5_000);
        assert_eq!(
            busy.busy("forge", "jack", 5_000 + RECENT_TOOL_MS - 1),
            Some(BusyReason::RecentToolActivity)
        );
        assert_eq!(busy.busy("forge", "jack", 5_000 + RECENT_TOOL_MS), None);
    }

    #[test]
    fn stale_active_tools_and_future_timestamps_are_bounded() {
        let busy = BusySignals::default();
        busy.tool_started("forge", "jack", "lost", 0, 0);
        assert_eq!(busy.busy("forge", "jack", ACTIVE_TOOL_STALE_MS), None);
        // A finish stamped an hour in the future counts as finishing now.
        busy.tool_finished("forge", "jill", "t", 3_600_000, 1_000);
        assert_eq!(busy.busy("forge", "jill", 1_000 + RECENT_TOOL_MS), None);
        busy.forget_team("FORGE");
        assert_eq!(busy.busy("forge", "jack", 1), None);
    }
}
