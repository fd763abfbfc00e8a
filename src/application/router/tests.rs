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
        member: MemberName::parse(name).unwrap(),
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
            member: MemberName::parse("jack").unwrap(),
            activity: ToolActivity::Finished {
                tool_id: Some("t1".into()),
                at: None
            }
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
fn tool_activity_in_the_apps_shapes() {
    let at = parse_iso("2026-01-01T00:00:00.000Z");
    let tool = |member: &str, activity| Route::Tool {
        member: MemberName::parse(member).unwrap(),
        activity,
    };
    for (detail, expected) in [
        (
            r#"{"action":"start","activity":{"memberName":"jack","toolUseId":"t1","toolName":"Bash","startedAt":"2026-01-01T00:00:00.000Z","source":"runtime"}}"#,
            tool(
                "jack",
                ToolActivity::Started {
                    tool_id: "t1".into(),
                    tool_name: Some("Bash".into()),
                    at,
                },
            ),
        ),
        (
            r#"{"action":"finish","memberName":"jack","toolUseId":"t1","finishedAt":"2026-01-01T00:00:00.000Z","isError":false}"#,
            tool(
                "jack",
                ToolActivity::Finished {
                    tool_id: Some("t1".into()),
                    at,
                },
            ),
        ),
        (
            r#"{"action":"finish","memberName":"jack"}"#,
            tool(
                "jack",
                ToolActivity::Finished {
                    tool_id: None,
                    at: None,
                },
            ),
        ),
        (
            r#"{"action":"reset","memberName":"jack","toolUseIds":["a"," b ",""]}"#,
            tool(
                "jack",
                ToolActivity::Reset {
                    tool_ids: vec!["a".into(), "b".into()],
                },
            ),
        ),
        (
            r#"{"action":"reset","memberName":"jack"}"#,
            tool("jack", ToolActivity::Reset { tool_ids: vec![] }),
        ),
        (r#"{"action":"reset"}"#, Route::ToolResetTeam),
        // The flat form.
        (
            r#"{"memberName":"jack","action":"start","toolUseId":"t2","at":"2026-01-01T00:00:00.000Z"}"#,
            tool(
                "jack",
                ToolActivity::Started {
                    tool_id: "t2".into(),
                    tool_name: None,
                    at,
                },
            ),
        ),
        // A start needs an id to finish later; a bad member is no member.
        (
            r#"{"action":"start","activity":{"memberName":"jack"}}"#,
            Route::Ignore,
        ),
        (r#"{"action":"reset","memberName":"../x"}"#, Route::Ignore),
        (
            r#"{"action":"start","activity":{"memberName":"../x","toolUseId":"t"}}"#,
            Route::Ignore,
        ),
    ] {
        assert_eq!(
            route(&event("tool-activity", Some(detail), None)),
            expected,
            "{detail}"
        );
    }
    let long_id = format!(
        r#"{{"action":"start","activity":{{"memberName":"jack","toolUseId":"{}"}}}}"#,
        "x".repeat(MAX_TOOL_ID_CHARS + 1)
    );
    assert_eq!(
        route(&event("tool-activity", Some(&long_id), None)),
        Route::Ignore
    );
    let long_name = format!(
        r#"{{"action":"start","activity":{{"memberName":"jack","toolUseId":"t","toolName":"{}"}}}}"#,
        "N".repeat(MAX_TOOL_NAME_CHARS * 2)
    );
    let Route::Tool {
        activity: ToolActivity::Started { tool_name, .. },
        ..
    } = route(&event("tool-activity", Some(&long_name), None))
    else {
        panic!("a long tool name still routes");
    };
    assert_eq!(tool_name.map(|n| n.len()), Some(MAX_TOOL_NAME_CHARS));
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

#[test]
fn the_announced_turn_of_a_settled_event() {
    let detail = r#"{"memberName":"jack","sourceId":"runtime-turn-settled:x"}"#;
    for (kind, detail, expected) in [
        (
            "member-turn-settled",
            Some(detail),
            Some("runtime-turn-settled:x"),
        ),
        (
            "member-turn-settled",
            Some(r#"{"memberName":"jack"}"#),
            None,
        ),
        ("member-turn-settled", Some(r#"{"sourceId":5}"#), None),
        ("member-turn-settled", Some("not json"), None),
        ("member-turn-settled", None, None),
        ("member-spawn", Some(detail), None),
    ] {
        assert_eq!(
            settled_turn_source_id(&event(kind, detail, None)).as_deref(),
            expected,
            "{kind} {detail:?}"
        );
    }
}

proptest! {
    #[test]
    fn never_panics(kind in ".{0,20}", team in ".{0,20}", detail in proptest::option::of(".{0,60}"), task in proptest::option::of(".{0,20}")) {
        let _ = route(&TeamChangeEvent { kind, team_name: team, run_id: None, detail, task_id: task });
    }
}

/// The app trims these fields with `String.prototype.trim`, which removes
/// U+FEFF and keeps U+0085 (Rust's `str::trim` does the opposite).
#[test]
fn fields_are_trimmed_as_javascript_trims_them() {
    let task = |id: &str| Route::Task {
        task_id: id.into(),
        trigger: Trigger::TaskChanged,
    };
    // (task id of a `task` event, its route)
    for (task_id, want) in [
        ("\u{feff}7\u{feff}", task("7")),
        (" 7\u{feff} ", task("7")),
        ("\u{85}7", task("\u{85}7")),
    ] {
        assert_eq!(
            route(&event("task", None, Some(task_id))),
            want,
            "{task_id:?}"
        );
    }
    assert_eq!(
        route(&event("lead-activity", Some("\u{feff}offline"), None)),
        Route::Team {
            trigger: Trigger::RuntimeActivity,
            offline: true
        }
    );
}
