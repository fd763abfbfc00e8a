//! Maps team change events to reconcile triggers and targets.
//!
//! `route` is pure and total: any input, however malformed, yields a route
//! (often [`Route::Ignore`]); resolving "the members a task touches" needs the
//! board and happens later, off the JS thread.

use serde_json::Value;

use super::queue::Trigger;
use crate::domain::js_semantics::js_trim;
use crate::domain::names::{validate_name, MemberName, TeamName};
use crate::domain::time::{parse_iso, EpochMs};

/// A team change event from the app.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct TeamChangeEvent {
    /// `config`, `inbox`, `task`, `tool-activity`, `member-turn-settled`, ...;
    /// an unknown kind routes nowhere.
    pub kind: String,
    /// Team that changed; an unsafe name routes nowhere.
    pub team_name: String,
    /// Run id of the team process; never used for routing.
    pub run_id: Option<String>,
    /// Type-specific detail: an inbox path, a member name, or a JSON object.
    pub detail: Option<String>,
    /// Task id of `task` / `task-log-change` events; without one the whole
    /// team is re-checked.
    pub task_id: Option<String>,
}

/// Where an event goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Nothing to do.
    Ignore,
    /// Every active member of the team.
    Team {
        /// Trigger each member is queued with.
        trigger: Trigger,
        /// The team went offline: drop its queue and re-check everyone now.
        offline: bool,
    },
    /// A change that concerns one member only: only that member is queued.
    Member {
        /// The member, as the event named it (trimmed).
        member: MemberName,
        /// Trigger it is queued with.
        trigger: Trigger,
    },
    /// The members a task touches (owner, reviewer, lead oversight, dependents' owners).
    Task {
        /// The changed task.
        task_id: String,
        /// Trigger each touched member is queued with.
        trigger: Trigger,
    },
    /// A `tool-activity` event: the busy signal, and a finish also queues `tool_finished`.
    Tool {
        /// The member running the tool.
        member: MemberName,
        /// What happened to the member's tool calls.
        activity: ToolActivity,
    },
    /// A `tool-activity` reset naming no member: forget the team's tool calls.
    ToolResetTeam,
}

/// What a `tool-activity` event says happened to one member's tool calls.
///
/// The app sends `{action: "start", activity: {memberName, toolUseId,
/// toolName, startedAt}}`, `{action: "finish", memberName, toolUseId,
/// finishedAt}` and `{action: "reset", memberName?, toolUseIds?}`; the flat
/// form `{memberName, action, toolUseId, at}` is accepted too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolActivity {
    /// A call started.
    Started {
        /// The tool call's id (`toolUseId`); its finish is matched by it.
        tool_id: String,
        /// Tool name (`Bash`, `Edit`, ...), when given.
        tool_name: Option<String>,
        /// Start time, when given.
        at: Option<EpochMs>,
    },
    /// A call finished; without an id it only queues the reconcile.
    Finished {
        /// Call id, when given.
        tool_id: Option<String>,
        /// Finish time, when given.
        at: Option<EpochMs>,
    },
    /// Forget the listed calls, or all of the member's calls when empty.
    Reset {
        /// The ids of the tool calls to forget (`toolUseIds`).
        tool_ids: Vec<String>,
    },
}

/// Longest call id kept; longer ids are not ids the app makes.
const MAX_TOOL_ID_CHARS: usize = 256;
/// Longest tool name kept, cut to this many characters.
const MAX_TOOL_NAME_CHARS: usize = 128;
/// Most call ids one reset may name.
const MAX_RESET_IDS: usize = 256;

fn tool_id(value: Option<&Value>) -> Option<String> {
    let id = js_trim(value?.as_str()?);
    (!id.is_empty() && id.chars().count() <= MAX_TOOL_ID_CHARS).then(|| id.to_string())
}

fn tool_name(value: Option<&Value>) -> Option<String> {
    let name = js_trim(value?.as_str()?);
    (!name.is_empty()).then(|| name.chars().take(MAX_TOOL_NAME_CHARS).collect())
}

fn valid_member(value: Option<&Value>) -> Option<MemberName> {
    MemberName::parse(js_trim(value?.as_str()?)).ok()
}

/// Routes a `tool-activity` detail (see [`ToolActivity`] for the shapes).
fn route_tool_activity(json: &Value) -> Route {
    let nested = json.get("activity").filter(|a| a.is_object());
    let field = |name: &str| nested.and_then(|a| a.get(name)).or_else(|| json.get(name));
    let time = |names: &[&str]| {
        names
            .iter()
            .find_map(|name| field(name).and_then(Value::as_str).and_then(parse_iso))
    };
    let member = valid_member(field("memberName"));
    let activity = match json.get("action").and_then(Value::as_str) {
        Some("start") => match tool_id(field("toolUseId")) {
            Some(tool_id) => ToolActivity::Started {
                tool_id,
                tool_name: tool_name(field("toolName")),
                at: time(&["startedAt", "at"]),
            },
            None => return Route::Ignore,
        },
        Some("finish") => ToolActivity::Finished {
            tool_id: tool_id(field("toolUseId")),
            at: time(&["finishedAt", "at"]),
        },
        Some("reset") => {
            let absent_or_blank = field("memberName")
                .and_then(Value::as_str)
                .is_none_or(|name| js_trim(name).is_empty());
            if member.is_none() && absent_or_blank {
                return Route::ToolResetTeam;
            }
            let tool_ids = json
                .get("toolUseIds")
                .and_then(Value::as_array)
                .map(|ids| {
                    ids.iter()
                        .take(MAX_RESET_IDS)
                        .filter_map(|id| tool_id(Some(id)))
                        .collect()
                })
                .unwrap_or_default();
            ToolActivity::Reset { tool_ids }
        }
        _ => return Route::Ignore,
    };
    member.map_or(Route::Ignore, |member| Route::Tool { member, activity })
}

fn detail_json(event: &TeamChangeEvent) -> Option<Value> {
    serde_json::from_str(event.detail.as_deref()?).ok()
}

/// A member name from the detail: JSON `{memberName}` or the plain name.
fn detail_member(event: &TeamChangeEvent) -> Option<MemberName> {
    match detail_json(event) {
        Some(_) => json_member(event),
        None => MemberName::parse(event.detail.as_deref()?).ok(),
    }
}

/// The trimmed `memberName` of a JSON object detail; anything else (plain
/// text, another JSON value, a missing or non-string name) is no member.
fn json_member(event: &TeamChangeEvent) -> Option<MemberName> {
    let json = detail_json(event)?;
    valid_member(json.as_object()?.get("memberName"))
}

/// The member of an `inboxes/<member>.json` path.
fn inbox_member(detail: &str) -> Option<MemberName> {
    let file = detail.rsplit(['/', '\\']).next()?;
    let parent = detail.strip_suffix(file)?.trim_end_matches(['/', '\\']);
    if !parent.ends_with("inboxes") {
        return None;
    }
    MemberName::parse(file.strip_suffix(".json")?).ok()
}

/// The `sourceId` in the JSON detail of a `member-turn-settled` event: the
/// turn the event announces (the drain emits it; an app may forward it back).
pub(crate) fn settled_turn_source_id(event: &TeamChangeEvent) -> Option<String> {
    if event.kind != "member-turn-settled" {
        return None;
    }
    let json = detail_json(event)?;
    json.as_object()?
        .get("sourceId")?
        .as_str()
        .map(str::to_string)
}

/// True for a `config` event announcing the team's `config.json` written
/// (what brings a deleted team back).
pub(crate) fn announces_config_written(event: &TeamChangeEvent) -> bool {
    event.kind == "config" && event.detail.as_deref() == Some("config.json")
}

/// The event's team, when its name is safe (an event naming another is ignored).
pub(crate) fn event_team(event: &TeamChangeEvent) -> Option<TeamName> {
    TeamName::parse(&event.team_name).ok()
}

/// Routes one event.
pub fn route(event: &TeamChangeEvent) -> Route {
    if event_team(event).is_none() {
        return Route::Ignore;
    }
    let member = |trigger| {
        detail_member(event).map_or(Route::Ignore, |member| Route::Member { member, trigger })
    };
    let task = |trigger| match event.task_id.as_deref().map(js_trim) {
        // A task id is a file name too: one that could leave its folder is no task.
        Some(id) if !id.is_empty() && validate_name(id).is_ok() => Route::Task {
            task_id: id.to_string(),
            trigger,
        },
        _ => Route::Team {
            trigger,
            offline: false,
        },
    };
    match event.kind.as_str() {
        "task" => task(Trigger::TaskChanged),
        "task-log-change" => task(Trigger::RuntimeActivity),
        "inbox" | "lead-message" => {
            event
                .detail
                .as_deref()
                .and_then(inbox_member)
                .map_or(Route::Ignore, |member| Route::Member {
                    member,
                    trigger: Trigger::InboxChanged,
                })
        }
        "config" => Route::Team {
            trigger: Trigger::ConfigChanged,
            offline: false,
        },
        "member-spawn" => member(Trigger::MemberSpawned),
        // The app always sends `{memberName, provider, sourceId}`: a plain
        // string here is a malformed event, not a member called that.
        "member-turn-settled" => json_member(event).map_or(Route::Ignore, |member| Route::Member {
            member,
            trigger: Trigger::TurnSettled,
        }),
        "tool-activity" => {
            detail_json(event).map_or(Route::Ignore, |json| route_tool_activity(&json))
        }
        "lead-activity" if event.detail.as_deref().map(js_trim) == Some("offline") => Route::Team {
            trigger: Trigger::RuntimeActivity,
            offline: true,
        },
        "log-source-change" | "process" | "lead-activity" => Route::Team {
            trigger: Trigger::RuntimeActivity,
            offline: false,
        },
        _ => Route::Ignore,
    }
}

#[cfg(test)]
mod tests;
