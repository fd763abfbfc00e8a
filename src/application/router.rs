//! Maps team change events to reconcile triggers and targets (DATA.md §5 "Router").
//!
//! `route` is pure and total: any input, however malformed, yields a route
//! (often [`Route::Ignore`]); resolving "the members a task touches" needs the
//! board and happens later, off the JS thread.

use serde_json::Value;

use super::queue::Trigger;
use crate::domain::names::validate_name;
use crate::domain::time::{parse_iso, EpochMs};

/// A team change event from the app (API.md `TeamChangeEvent`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamChangeEvent {
    /// `config`, `inbox`, `task`, `tool-activity`, `member-turn-settled`, ...
    pub kind: String,
    /// Team.
    pub team_name: String,
    /// Run id (unused for routing).
    pub run_id: Option<String>,
    /// Type-specific detail.
    pub detail: Option<String>,
    /// Task id of `task` events.
    pub task_id: Option<String>,
}

/// Where an event goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Nothing to do.
    Ignore,
    /// Every active member of the team.
    Team {
        /// Reason.
        trigger: Trigger,
        /// The team went offline: drop its queue and re-check everyone now.
        offline: bool,
    },
    /// One member.
    Member {
        /// Member name.
        member: String,
        /// Reason.
        trigger: Trigger,
    },
    /// The members a task touches (owner, reviewer, lead oversight, dependents' owners).
    Task {
        /// Task id.
        task_id: String,
        /// Reason.
        trigger: Trigger,
    },
    /// A tool call started or finished (busy signal; a finish also queues `tool_finished`).
    Tool {
        /// Member name.
        member: String,
        /// Tool call id (empty when not given).
        tool_id: String,
        /// True for start, false for finish.
        started: bool,
        /// Event time, when given.
        at: Option<EpochMs>,
    },
}

fn detail_json(event: &TeamChangeEvent) -> Option<Value> {
    serde_json::from_str(event.detail.as_deref()?).ok()
}

/// A member name from the detail: JSON `{memberName}` or the plain name.
fn detail_member(event: &TeamChangeEvent) -> Option<String> {
    match detail_json(event) {
        Some(_) => json_member(event),
        None => event
            .detail
            .clone()
            .filter(|member| validate_name(member).is_ok()),
    }
}

/// The trimmed `memberName` of a JSON object detail; anything else (plain
/// text, another JSON value, a missing or non-string name) is no member.
fn json_member(event: &TeamChangeEvent) -> Option<String> {
    let json = detail_json(event)?;
    let member = json.as_object()?.get("memberName")?.as_str()?.trim();
    validate_name(member).is_ok().then(|| member.to_string())
}

/// The member of an `inboxes/<member>.json` path.
fn inbox_member(detail: &str) -> Option<String> {
    let file = detail.rsplit(['/', '\\']).next()?;
    let parent = detail.strip_suffix(file)?.trim_end_matches(['/', '\\']);
    if !parent.ends_with("inboxes") {
        return None;
    }
    let member = file.strip_suffix(".json")?;
    validate_name(member).is_ok().then(|| member.to_string())
}

/// Routes one event.
pub fn route(event: &TeamChangeEvent) -> Route {
    if validate_name(&event.team_name).is_err() {
        return Route::Ignore;
    }
    let member = |trigger| {
        detail_member(event).map_or(Route::Ignore, |member| Route::Member { member, trigger })
    };
    let task = |trigger| match event.task_id.as_deref().map(str::trim) {
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
            let Some(json) = detail_json(event) else {
                return Route::Ignore;
            };
            let Some(member) = json.get("memberName").and_then(Value::as_str) else {
                return Route::Ignore;
            };
            if validate_name(member).is_err() {
                return Route::Ignore;
            }
            let started = match json.get("action").and_then(Value::as_str) {
                Some("start") => true,
                Some("finish") => false,
                _ => return Route::Ignore,
            };
            Route::Tool {
                member: member.to_string(),
                tool_id: json
                    .get("toolUseId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                started,
                at: json.get("at").and_then(Value::as_str).and_then(parse_iso),
            }
        }
        "lead-activity" if event.detail.as_deref().map(str::trim) == Some("offline") => {
            Route::Team {
                trigger: Trigger::RuntimeActivity,
                offline: true,
            }
        }
        "log-source-change" | "process" | "lead-activity" => Route::Team {
            trigger: Trigger::RuntimeActivity,
            offline: false,
        },
        _ => Route::Ignore,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn event(kind: &str, detail: Option<&str>, task_id: Option<&str>) -> TeamChangeEvent {
        TeamChangeEvent {
            kind: kind.into(),
            team_name: "forge".into(),
            run_id: None,
            detail: detail.map(str::to_string),
            task_id: task_id.map(str::to_string),
        }
    }

    fn member(name: &str, trigger: Trigger) -> Route {
        Route::Member {
            member: name.into(),
            trigger,
        }
    }

    #[test]
    fn every_documented_event_type() {
        assert_eq!(
            route(&event("task", None, Some("7"))),
            Route::Task {
                task_id: "7".into(),
                trigger: Trigger::TaskChanged
            }
        );
        assert_eq!(
            route(&event("task", None, None)),
            Route::Team {
                trigger: Trigger::TaskChanged,
                offline: false
            }
        );
        assert_eq!(
            route(&event("task-log-change", None, Some("7"))),
            Route::Task {
                task_id: "7".into(),
                trigger: Trigger::RuntimeActivity
            }
        );
        assert_eq!(
            route(&event(
                "inbox",
                Some("/x/teams/forge/inboxes/jack.json"),
                None
            )),
            member("jack", Trigger::InboxChanged)
        );
        assert_eq!(
            route(&event("lead-message", Some("inboxes/team-lead.json"), None)),
            member("team-lead", Trigger::InboxChanged)
        );
        assert_eq!(
            route(&event("config", None, None)),
            Route::Team {
                trigger: Trigger::ConfigChanged,
                offline: false
            }
        );
        assert_eq!(
            route(&event("member-spawn", Some("jill"), None)),
            member("jill", Trigger::MemberSpawned)
        );
        assert_eq!(
            route(&event(
                "member-turn-settled",
                Some(r#"{"memberName":"jack","provider":"claude","sourceId":"x"}"#),
                None
            )),
            member("jack", Trigger::TurnSettled)
        );
        assert_eq!(
            route(&event(
                "member-turn-settled",
                Some(r#"{"memberName":" jack "}"#),
                None
            )),
            member("jack", Trigger::TurnSettled)
        );
        assert_eq!(
            route(&event(
                "tool-activity",
                Some(r#"{"memberName":"jack","action":"finish","toolUseId":"t1"}"#),
                None
            )),
            Route::Tool {
                member: "jack".into(),
                tool_id: "t1".into(),
                started: false,
                at: None
            }
        );
        assert_eq!(
            route(&event("lead-activity", Some("offline"), None)),
            Route::Team {
                trigger: Trigger::RuntimeActivity,
                offline: true
            }
        );
        for kind in ["process", "log-source-change", "lead-activity"] {
            assert_eq!(
                route(&event(kind, None, None)),
                Route::Team {
                    trigger: Trigger::RuntimeActivity,
                    offline: false
                }
            );
        }
    }

    #[test]
    fn malformed_details_are_ignored() {
        for e in [
            event("inbox", Some("inboxes/../x.json"), None),
            event("inbox", Some("notes/jack.json"), None),
            event("inbox", None, None),
            event("member-turn-settled", Some(r#"{"memberName":5}"#), None),
            event("member-turn-settled", Some("a/b"), None),
            event("member-turn-settled", Some("not json"), None),
            event("member-turn-settled", Some("jack"), None),
            event("member-turn-settled", Some(r#""jack""#), None),
            event("member-turn-settled", Some(r#"{"memberName":"  "}"#), None),
            event(
                "member-turn-settled",
                Some(r#"{"provider":"claude"}"#),
                None,
            ),
            event("tool-activity", Some("not json"), None),
            event(
                "tool-activity",
                Some(r#"{"memberName":"jack","action":"dance"}"#),
                None,
            ),
            event("unknown", None, None),
            TeamChangeEvent {
                kind: "config".into(),
                team_name: "../etc".into(),
                ..Default::default()
            },
        ] {
            assert_eq!(route(&e), Route::Ignore, "{e:?}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(kind in ".{0,20}", team in ".{0,20}", detail in proptest::option::of(".{0,60}"), task in proptest::option::of(".{0,20}")) {
            let _ = route(&TeamChangeEvent { kind, team_name: team, run_id: None, detail, task_id: task });
        }
    }
}
