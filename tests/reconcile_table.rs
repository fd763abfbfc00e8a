//! Table-driven harness for the reconcile pipeline, in the spirit of
//! ripgrep's `SearcherTester`: each case is a board (roster, task files,
//! supervisor state) and the status and agenda a member must get from it.
//! [`ReconcileTester`] runs every case through each way the addon reconciles
//! a member - `refreshStatus` (persisted), `previewStatus` (side-effect free)
//! and `refreshTeam` (one snapshot for the whole roster) - and checks that all
//! of them produce the expected state, agenda items and diagnostics.

mod common;

use std::fs;
use std::path::Path;

use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::status::{MemberStatus, StatusState};
use member_work_sync::runtime::composition::{RootPaths, Services};
use serde_json::{json, Value};

/// One agenda item as `(kind, taskId, reason)`.
type Item = (&'static str, &'static str, &'static str);

/// One scenario: the board in, the member's status and agenda out.
struct Case {
    name: &'static str,
    /// Config roster (the lead first).
    roster: &'static [&'static str],
    /// Task files of the team.
    tasks: Vec<Value>,
    /// `setTeamRuntimeState(active, activeMembers)`, when the supervisor reported.
    runtime: Option<(bool, Option<&'static [&'static str]>)>,
    /// The member reconciled.
    member: &'static str,
    /// Expected state.
    state: StatusState,
    /// Expected agenda items, in agenda order.
    items: &'static [Item],
    /// Diagnostics the status must carry (others may be present).
    diagnostics: &'static [&'static str],
}

/// Runs [`Case`]s through every reconcile path.
struct ReconcileTester;

/// How a path reconciles one member.
type Reconcile = fn(&Services, &TeamName, &MemberName) -> MemberStatus;

impl ReconcileTester {
    const PATHS: [(&'static str, Reconcile); 3] = [
        ("refreshStatus", |s, t, m| {
            s.engine.refresh_status(t, m).unwrap()
        }),
        ("previewStatus", |s, t, m| {
            s.engine.preview_status(t, m).unwrap()
        }),
        ("refreshTeam", |s, t, m| {
            let member = m.as_str().to_lowercase();
            s.engine
                .refresh_team(t)
                .unwrap()
                .into_iter()
                .find(|status| status.member_name == member)
                .expect("refreshTeam covers every roster member")
        }),
    ];

    fn run(cases: &[Case]) {
        for case in cases {
            for (path, reconcile) in Self::PATHS {
                let root = tempfile::tempdir().unwrap();
                write_board(root.path(), case);
                let services = common::services(root.path());
                if let Some((active, members)) = case.runtime {
                    let members = members.map(|m| m.iter().map(|n| n.to_string()).collect());
                    services
                        .engine
                        .set_team_runtime_state(&team(), active, members);
                }
                let member = MemberName::parse(case.member).unwrap();
                let status = reconcile(&services, &team(), &member);
                let at = format!("{} via {path}", case.name);
                assert_eq!(status.state, case.state, "{at}");
                let expected: Vec<(String, String, String)> = case
                    .items
                    .iter()
                    .map(|(k, t, r)| (k.to_string(), t.to_string(), r.to_string()))
                    .collect();
                assert_eq!(items(&status), expected, "{at}");
                // What differs by path: only a persisted reconcile hands
                // out a report token, to inactive members too (as the app).
                let persisted = path != "previewStatus";
                let token = persisted;
                assert_eq!(status.report_token.is_some(), token, "{at}");
                assert_eq!(
                    status
                        .diagnostics
                        .iter()
                        .any(|d| d == "report_token_issued"),
                    token,
                    "{at}"
                );
                assert_eq!(
                    status
                        .diagnostics
                        .iter()
                        .any(|d| d == "status_snapshot_not_persisted"),
                    !persisted,
                    "{at}"
                );
                for diagnostic in case.diagnostics {
                    assert!(
                        status.diagnostics.iter().any(|d| d == diagnostic),
                        "{at}: {diagnostic} missing from {:?}",
                        status.diagnostics
                    );
                }
            }
        }
    }
}

fn team() -> TeamName {
    TeamName::parse("forge").unwrap()
}

fn write_board(root: &Path, case: &Case) {
    let paths = RootPaths::resolve(Some(root.to_path_buf()), None, None);
    let team_dir = paths.teams_base.join("forge");
    fs::create_dir_all(&team_dir).unwrap();
    let members: Vec<Value> = case
        .roster
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let agent_type = if i == 0 {
                "team-lead"
            } else {
                "general-purpose"
            };
            json!({ "name": name, "agentType": agent_type })
        })
        .collect();
    let config = json!({ "name": "forge", "members": members });
    fs::write(team_dir.join("config.json"), config.to_string()).unwrap();
    let tasks_dir = paths.tasks_base.join("forge");
    fs::create_dir_all(&tasks_dir).unwrap();
    for task in &case.tasks {
        let id = task["id"].as_str().unwrap();
        fs::write(tasks_dir.join(format!("{id}.json")), task.to_string()).unwrap();
    }
}

/// The agenda items of `status` as `(kind, taskId, reason)`, in wire spelling.
fn items(status: &MemberStatus) -> Vec<(String, String, String)> {
    let text = |v: &Value| v.as_str().unwrap().to_string();
    status
        .agenda
        .items
        .iter()
        .map(|item| {
            let item = serde_json::to_value(item).unwrap();
            (
                text(&item["kind"]),
                text(&item["taskId"]),
                text(&item["reason"]),
            )
        })
        .collect()
}

fn task(id: &str, status: &str, owner: &str) -> Value {
    json!({ "id": id, "subject": format!("Task {id}"), "status": status, "owner": owner,
            "blocks": [], "blockedBy": [] })
}

const ROSTER: &[&str] = &["team-lead", "jack", "jill"];

#[test]
fn reconcile_cases() {
    ReconcileTester::run(&[
        Case {
            name: "an empty board",
            roster: ROSTER,
            tasks: vec![],
            runtime: None,
            member: "jack",
            state: StatusState::CaughtUp,
            items: &[],
            diagnostics: &["agenda_empty"],
        },
        Case {
            name: "an owned pending task",
            roster: ROSTER,
            tasks: vec![task("1", "pending", "jack")],
            runtime: None,
            member: "jack",
            state: StatusState::NeedsSync,
            items: &[("work", "1", "owned_pending_task")],
            diagnostics: &["no_current_report"],
        },
        Case {
            name: "an owned task in progress, and someone else's",
            roster: ROSTER,
            tasks: vec![
                task("1", "in_progress", "jack"),
                task("2", "pending", "jill"),
            ],
            runtime: None,
            member: "jack",
            state: StatusState::NeedsSync,
            items: &[("work", "1", "owned_in_progress_task")],
            diagnostics: &["no_current_report"],
        },
        Case {
            name: "a completed task is no work",
            roster: ROSTER,
            tasks: vec![task("1", "completed", "jack")],
            runtime: None,
            member: "jack",
            state: StatusState::CaughtUp,
            items: &[],
            diagnostics: &["agenda_empty"],
        },
        Case {
            name: "the member is not running",
            roster: ROSTER,
            tasks: vec![task("1", "pending", "jack")],
            runtime: Some((true, Some(&["jill"]))),
            member: "jack",
            state: StatusState::Inactive,
            items: &[("work", "1", "owned_pending_task")],
            diagnostics: &["member_or_team_inactive", "member_runtime_inactive"],
        },
        Case {
            name: "the team is down",
            roster: ROSTER,
            tasks: vec![task("1", "pending", "jack")],
            runtime: Some((false, None)),
            member: "jack",
            state: StatusState::Inactive,
            items: &[("work", "1", "owned_pending_task")],
            diagnostics: &["member_or_team_inactive", "team_runtime_inactive"],
        },
        Case {
            name: "the lead oversees a task whose dependency cannot resolve",
            roster: ROSTER,
            tasks: vec![json!({ "id": "1", "subject": "Task 1", "status": "pending",
                                "owner": "jack", "blocks": [], "blockedBy": ["9"] })],
            runtime: None,
            member: "team-lead",
            state: StatusState::NeedsSync,
            items: &[("blocked_dependency", "1", "task_has_broken_dependency")],
            diagnostics: &["no_current_report"],
        },
    ]);
}
