//! The stall watchdog's cooldown: a recent watchdog alert about one of a
//! nudge's tasks silences nudges for [`WATCHDOG_COOLDOWN_MS`].

use serde::Deserialize;

use crate::domain::names::{normalize_member_name, MemberName};
use crate::domain::time::{parse_iso, EpochMs};

use super::MINUTE;

/// Watchdog alerts silence nudges for this long.
pub const WATCHDOG_COOLDOWN_MS: EpochMs = 10 * MINUTE;

/// An entry of `stall-monitor-journal.json`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct WatchdogAlert {
    #[serde(default)]
    pub task_id: Option<String>,
    #[serde(default)]
    pub member_name: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub alerted_at: Option<String>,
}

/// When the watchdog recently alerted about one of the nudge's tasks (for
/// this member or anyone), the time the cooldown ends.
pub fn watchdog_cooldown(
    alerts: &[WatchdogAlert],
    task_ids: &[&str],
    member: &MemberName,
    now: EpochMs,
) -> Option<EpochMs> {
    alerts
        .iter()
        .filter(|a| a.state.as_deref() == Some("alerted"))
        .filter(|a| a.task_id.as_deref().is_some_and(|t| task_ids.contains(&t)))
        .filter(|a| {
            a.member_name
                .as_deref()
                .is_none_or(|m| normalize_member_name(m) == normalize_member_name(member))
        })
        .filter_map(|a| a.alerted_at.as_deref().and_then(parse_iso))
        .filter(|&at| now - at >= 0 && now - at < WATCHDOG_COOLDOWN_MS)
        .map(|at| at + WATCHDOG_COOLDOWN_MS)
        .max()
}
