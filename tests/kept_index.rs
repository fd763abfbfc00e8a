//! A reconciler that keeps its team indexes between reconciles builds the
//! agendas a fresh one builds, after every step of a sequence of board
//! changes made on disk (rewrites, new and deleted task files, dependencies
//! appearing and breaking, kanban cards): the end-to-end side of the
//! `TaskIndex` proptests.

use std::fs;
use std::path::Path;

use member_work_sync::application::queue::Trigger;
use member_work_sync::domain::status::ReconciledBy;
use member_work_sync::runtime::composition::{RootPaths, Services};
use serde_json::{json, Value};

const ROSTER: [&str; 4] = ["team-lead", "jack", "jill", "bob"];

fn team(name: &str) -> member_work_sync::domain::names::TeamName {
    member_work_sync::domain::names::TeamName::parse(name).unwrap()
}

fn member(name: &str) -> member_work_sync::domain::names::MemberName {
    member_work_sync::domain::names::MemberName::parse(name).unwrap()
}

fn services(root: &Path) -> Services {
    Services::new(
        RootPaths::resolve(Some(root.to_path_buf()), None, None),
        Some(1_763_800_000_000),
    )
}

fn task(id: &str, owner: &str, status: &str, blocked_by: &[&str]) -> Value {
    json!({
        "id": id, "displayId": format!("#{id}"), "subject": format!("Task {id}"),
        "status": status, "owner": owner, "blockedBy": blocked_by,
    })
}

fn in_review(id: &str, owner: &str, reviewer: &str) -> Value {
    json!({
        "id": id, "displayId": format!("#{id}"), "subject": format!("Task {id}"),
        "status": "completed", "owner": owner, "reviewState": "review",
        "historyEvents": [{ "id": format!("r{id}"), "type": "review_requested",
            "timestamp": "2026-11-20T09:00:00Z", "to": "review", "reviewer": reviewer }],
    })
}

/// One change to the board on disk.
enum Step {
    Write(Value),
    Delete(&'static str),
    Kanban(Value),
}

fn apply(root: &Path, step: &Step) {
    let tasks = root.join("tasks/forge");
    match step {
        Step::Write(task) => {
            let id = task["id"].as_str().unwrap();
            fs::write(tasks.join(format!("{id}.json")), task.to_string()).unwrap();
        }
        Step::Delete(id) => fs::remove_file(tasks.join(format!("{id}.json"))).unwrap(),
        Step::Kanban(state) => fs::write(
            root.join("teams/forge/kanban-state.json"),
            state.to_string(),
        )
        .unwrap(),
    }
}

#[test]
fn kept_indexes_build_the_agendas_of_a_fresh_reconciler_after_every_change() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::create_dir_all(root.join("teams/forge")).unwrap();
    fs::create_dir_all(root.join("tasks/forge")).unwrap();
    let members: Vec<Value> = ROSTER
        .iter()
        .map(|name| json!({ "name": name, "agentType": if *name == "team-lead" { "team-lead" } else { "general-purpose" } }))
        .collect();
    fs::write(
        root.join("teams/forge/config.json"),
        json!({ "name": "forge", "members": members }).to_string(),
    )
    .unwrap();
    for step in [
        Step::Write(task("1", "jack", "pending", &[])),
        Step::Write(task("2", "jill", "in_progress", &["1"])),
        Step::Write(in_review("3", "bob", "jack")),
    ] {
        apply(root, &step);
    }
    let kept = services(root);
    let steps = [
        (
            "a rewrite",
            Step::Write(task("1", "jack", "in_progress", &[])),
        ),
        (
            "a dependency finishes",
            Step::Write(task("1", "jack", "completed", &[])),
        ),
        (
            "a new task waits on a missing one",
            Step::Write(task("4", "bob", "pending", &["9"])),
        ),
        (
            "the missing task appears",
            Step::Write(task("9", "jill", "pending", &[])),
        ),
        (
            "a duplicate id breaks resolution",
            Step::Write(
                json!({ "id": "9", "displayId": "#99", "subject": "Dup", "status": "pending", "owner": "jack" }),
            ),
        ),
        ("the blocker is deleted", Step::Delete("1")),
        ("a self review", Step::Write(in_review("3", "jack", "jack"))),
        (
            "a kanban card approves it",
            Step::Kanban(json!({ "tasks": { "3": { "column": "approved" } } })),
        ),
        (
            "a task file turns invalid",
            Step::Write(json!({ "id": "2", "status": 7 })),
        ),
        (
            "owner changes",
            Step::Write(task("4", "jill", "pending", &["#9"])),
        ),
    ];
    for (name, step) in steps {
        // The kept reconciler has seen the board before the change.
        for who in ROSTER {
            kept.reconciler
                .refresh_status(
                    &team("forge"),
                    &member(who),
                    ReconciledBy::Request,
                    &[Trigger::TaskChanged],
                )
                .unwrap();
        }
        apply(root, &step);
        let fresh = services(root);
        for who in ROSTER {
            let warm = kept
                .reconciler
                .refresh_status(
                    &team("forge"),
                    &member(who),
                    ReconciledBy::Request,
                    &[Trigger::TaskChanged],
                )
                .unwrap();
            let cold = fresh
                .reconciler
                .preview_status(&team("forge"), &member(who))
                .unwrap();
            assert_eq!(warm.agenda.items, cold.agenda.items, "{who} after {name}");
            assert_eq!(
                warm.agenda.fingerprint, cold.agenda.fingerprint,
                "{who} after {name}"
            );
        }
    }
}
