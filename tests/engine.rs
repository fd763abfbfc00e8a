//! Router → queue → reconcile with the manual clock, on the example team.

mod common;

use std::fs;

use member_work_sync::application::router::TeamChangeEvent;
use member_work_sync::runtime::composition::Services;

/// A checked team name of a test.
fn team(name: &str) -> member_work_sync::domain::names::TeamName {
    member_work_sync::domain::names::TeamName::parse(name).unwrap()
}

/// A checked member name of a test.
fn member(name: &str) -> member_work_sync::domain::names::MemberName {
    member_work_sync::domain::names::MemberName::parse(name).unwrap()
}

fn fixture() -> (tempfile::TempDir, Services) {
    let (dir, root) = common::example_root();
    (dir, common::services(&root))
}

fn event(kind: &str, detail: Option<&str>, task_id: Option<&str>) -> TeamChangeEvent {
    TeamChangeEvent {
        kind: kind.into(),
        team_name: "forge".into(),
        run_id: None,
        detail: detail.map(str::to_string),
        task_id: task_id.map(str::to_string),
    }
}

fn queued(services: &Services) -> Vec<(String, Vec<&'static str>)> {
    services
        .engine
        .diagnostics()
        .queued_items
        .into_iter()
        .map(|i| (i.member_name, i.trigger_reasons))
        .collect()
}

fn advance(services: &Services, ms: i64) {
    let clock = services.manual_clock.as_ref().unwrap();
    clock.set(services.engine.now_ms() + ms);
}

/// Runs everything due now, like the worker does.
fn run_due(services: &Services) -> Vec<String> {
    let mut ran = Vec::new();
    for (key, item) in services.engine.take_due() {
        let ok = services.engine.run(&item).is_ok();
        services.engine.finish(&key, &item, ok);
        ran.push(item.member_name.to_string());
    }
    ran.sort();
    ran
}

/// The `member_busy:*` diagnostics of a fresh reconcile of jack.
fn busy_diagnostics(services: &Services) -> Vec<String> {
    let status = services
        .reconciler
        .refresh_status(
            &team("forge"),
            &member("jack"),
            member_work_sync::domain::status::ReconciledBy::Request,
            &[],
        )
        .unwrap();
    status
        .diagnostics
        .into_iter()
        .filter(|d| d.starts_with("member_busy"))
        .collect()
}

#[test]
fn task_events_reach_the_impacted_members() {
    let (_dir, services) = fixture();
    // Task 6: owner jack, review requested from jill; bob's open task 18
    // waits on it (`blockedBy: ["#6"]`, task 6 lists no `blocks`).
    services
        .engine
        .note_team_change(&event("task", None, Some("6")));
    assert_eq!(
        queued(&services),
        [
            ("bob".into(), vec!["task_changed"]),
            ("jack".into(), vec!["task_changed"]),
            ("jill".into(), vec!["task_changed"])
        ]
    );
    assert!(run_due(&services).is_empty(), "task_changed waits 15 s");
    advance(&services, 15_000);
    // Two run at a time.
    assert_eq!(run_due(&services), ["bob", "jack"]);
    assert_eq!(run_due(&services), ["jill"]);
    let status = services
        .engine
        .get_status(&team("forge"), &member("jill"), false)
        .unwrap();
    assert_eq!(
        status.shadow.unwrap().trigger_reasons.unwrap(),
        ["task_changed"]
    );

    // Task 5 has a broken dependency: the lead oversees it. Task 3 blocks 4 (bob).
    services
        .engine
        .note_team_change(&event("task", None, Some("5")));
    let names: Vec<String> = queued(&services).into_iter().map(|(m, _)| m).collect();
    assert_eq!(names, ["bob", "team-lead"]);
    // An unreadable task routes team-wide.
    services
        .engine
        .note_team_change(&event("task", None, Some("404")));
    assert_eq!(queued(&services).len(), 5);
}

#[test]
fn tool_activity_marks_busy_and_finish_queues_a_reconcile() {
    let (_dir, services) = fixture();
    services.engine.note_team_change(&event(
        "tool-activity",
        Some(r#"{"memberName":"jack","action":"start","toolUseId":"t1"}"#),
        None,
    ));
    assert!(queued(&services).is_empty());
    assert_eq!(
        busy_diagnostics(&services),
        ["member_busy:active_tool_activity"]
    );
    services.engine.note_team_change(&event(
        "tool-activity",
        Some(r#"{"memberName":"jack","action":"finish","toolUseId":"t1"}"#),
        None,
    ));
    assert_eq!(queued(&services), [("jack".into(), vec!["tool_finished"])]);
    advance(&services, 5_000);
    assert_eq!(run_due(&services), ["jack"]);
    let status = services
        .engine
        .get_status(&team("forge"), &member("jack"), false)
        .unwrap();
    assert!(status
        .diagnostics
        .contains(&"member_busy:recent_tool_activity".to_string()));
}

/// The app's own `tool-activity` shapes (a nested `activity` on start,
/// `finishedAt` on finish, `reset`), as its tool tracker sends them.
#[test]
fn tool_activity_in_the_apps_shapes_marks_and_clears_busy() {
    let (_dir, services) = fixture();
    let start = |id: &str| {
        format!(
            r#"{{"action":"start","activity":{{"memberName":"jack","toolUseId":"{id}","toolName":"Bash","startedAt":"2020-01-01T00:00:00.000Z","source":"runtime"}}}}"#
        )
    };
    let note = |detail: &str| {
        services
            .engine
            .note_team_change(&event("tool-activity", Some(detail), None))
    };
    // A start more than ten minutes old is stale: the clock is the example's.
    note(&start("old"));
    assert!(busy_diagnostics(&services).is_empty());

    let now = member_work_sync::domain::time::format_iso(services.engine.now_ms());
    note(&start("t1").replace("2020-01-01T00:00:00.000Z", &now));
    note(&start("t2").replace("2020-01-01T00:00:00.000Z", &now));
    assert_eq!(
        busy_diagnostics(&services),
        ["member_busy:active_tool_activity"]
    );
    note(r#"{"action":"reset","memberName":"jack","toolUseIds":["t1"]}"#);
    assert_eq!(
        busy_diagnostics(&services),
        ["member_busy:active_tool_activity"]
    );
    note(&format!(
        r#"{{"action":"finish","memberName":"jack","toolUseId":"t2","finishedAt":"{now}","isError":false}}"#
    ));
    assert_eq!(queued(&services), [("jack".into(), vec!["tool_finished"])]);
    assert_eq!(
        busy_diagnostics(&services),
        ["member_busy:recent_tool_activity"]
    );
    note(r#"{"action":"reset","memberName":"jack"}"#);
    assert!(busy_diagnostics(&services).is_empty());

    // The lead going offline forgets the team's tool calls.
    note(&start("t3").replace("2020-01-01T00:00:00.000Z", &now));
    assert_eq!(
        busy_diagnostics(&services),
        ["member_busy:active_tool_activity"]
    );
    services
        .engine
        .note_team_change(&event("lead-activity", Some("offline"), None));
    assert!(busy_diagnostics(&services).is_empty());
}

#[test]
fn inactive_and_deleting_teams_never_reconcile() {
    let (dir, services) = fixture();
    services
        .engine
        .note_team_change(&event("config", None, None));
    assert_eq!(queued(&services).len(), 5);
    services
        .engine
        .set_team_runtime_state(&team("forge"), false, None);
    assert!(
        queued(&services).is_empty(),
        "going offline drops queued work"
    );

    services
        .engine
        .set_team_runtime_state(&team("forge"), true, None);
    services
        .engine
        .note_team_change(&event("member-spawn", Some("kim"), None));
    services.runtime.set(&team("forge"), false, None); // offline without the engine noticing
    advance(&services, 30_000);
    assert!(run_due(&services).is_empty(), "dropped at take time");
    assert!(!dir
        .path()
        .join("teams/forge/members/kim/.member-work-sync/status.json")
        .exists());

    services.runtime.set(&team("forge"), true, None);
    services
        .engine
        .prepare_team_deletion(&team("forge"), None)
        .unwrap();
    services
        .engine
        .note_team_change(&event("config", None, None));
    services.engine.enqueue(
        &team("forge"),
        &member("jack"),
        member_work_sync::application::queue::Trigger::ManualRefresh,
    );
    assert!(queued(&services).is_empty(), "fenced while deleting");
    services.engine.resume_team(&team("forge")).unwrap();
    assert_eq!(queued(&services).len(), 5, "resume re-scans");
    let diagnostics = services.engine.diagnostics();
    assert!(diagnostics.dropped >= 6);
}

#[test]
fn offline_lead_drops_the_queue_and_rechecks_everyone_now() {
    let (_dir, services) = fixture();
    services
        .engine
        .note_team_change(&event("config", None, None));
    services
        .engine
        .note_team_change(&event("lead-activity", Some("offline"), None));
    let diagnostics = services.engine.diagnostics();
    assert_eq!(diagnostics.queued, 5);
    assert!(diagnostics
        .queued_items
        .iter()
        .all(|i| i.run_at == "2026-11-18T11:06:40.000Z"));
    assert_eq!(run_due(&services).len(), 2, "concurrency 2 per take");
}

#[test]
fn deletion_waits_for_admitted_operations_and_refuses_new_ones() {
    let (_dir, services) = fixture();
    let engine = &services.engine;
    let (entered_tx, entered_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let op = scope.spawn(move || {
            engine.with_team(&team("forge"), || {
                entered_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                Ok(())
            })
        });
        entered_rx.recv().unwrap();
        let deleting = scope.spawn(|| engine.prepare_team_deletion(&team("forge"), None));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!deleting.is_finished(), "waits for the admitted operation");
        release_tx.send(()).unwrap();
        op.join().unwrap().unwrap();
        deleting.join().unwrap().unwrap();
    });
    let refused = engine.refresh_status(&team("forge"), &member("jack"));
    assert!(matches!(
        refused,
        Err(member_work_sync::application::reconcile::WorkSyncError::TeamQuiesced(_))
    ));
    engine.resume_team(&team("forge")).unwrap();
    assert!(engine
        .refresh_status(&team("forge"), &member("jack"))
        .is_ok());
}

#[test]
fn a_reassigned_task_reaches_the_previous_owner_too() {
    let (dir, services) = fixture();
    let task = dir.path().join("tasks/forge/1.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&task).unwrap()).unwrap();
    value["owner"] = serde_json::json!("kim");
    value["historyEvents"] = serde_json::json!([{"id": "o1", "type": "owner_changed", "timestamp": "2026-11-18T10:00:00Z", "from": "jack", "to": "kim"}]);
    fs::write(&task, value.to_string()).unwrap();
    services
        .engine
        .note_team_change(&event("task", None, Some("1")));
    let names: Vec<String> = queued(&services).into_iter().map(|(m, _)| m).collect();
    assert_eq!(names, ["jack", "kim"]);
}

// Case-sensitive file systems only: elsewhere the two names are one folder.
#[cfg(target_os = "linux")]
#[test]
fn teams_differing_only_in_case_keep_their_own_folders_and_secrets() {
    let (_dir, root) = common::example_root();
    common::copy_dir(&root.join("teams/forge"), &root.join("teams/Forge"));
    common::copy_dir(&root.join("tasks/forge"), &root.join("tasks/Forge"));
    let services = common::services(&root);
    let upper = services
        .engine
        .refresh_status(&team("Forge"), &member("jack"))
        .unwrap();
    let lower = services
        .engine
        .refresh_status(&team("forge"), &member("jack"))
        .unwrap();
    assert_eq!(
        (upper.team_name.as_str(), lower.team_name.as_str()),
        ("Forge", "forge")
    );
    assert!(upper.report_token.is_some() && lower.report_token.is_some());
    let secret = |team: &str| {
        fs::read_to_string(root.join(format!(
            "teams/{team}/.member-work-sync/report-token-secret.json"
        )))
        .unwrap()
    };
    assert_ne!(
        secret("Forge"),
        secret("forge"),
        "one secret for both teams"
    );
    for team in ["Forge", "forge"] {
        let secret = root.join(format!(
            "teams/{team}/.member-work-sync/report-token-secret.json"
        ));
        assert!(secret.exists(), "{team} has its own secret");
        assert!(root
            .join(format!(
                "teams/{team}/members/jack/.member-work-sync/status.json"
            ))
            .exists());
    }
}

/// A burst of identical events for a queued member coalesces into its item
/// and writes no journal line per event: only the first trigger of each
/// reason is journaled (`queue_enqueued`, then one `queue_coalesced` per new
/// reason). It used to append a `queue_coalesced` line for every event.
#[test]
fn repeated_triggers_coalesce_without_a_journal_line_each() {
    let (dir, services) = fixture();
    let inbox = event("inbox", Some("/x/teams/forge/inboxes/jack.json"), None);
    for _ in 0..50 {
        services.engine.note_team_change(&inbox);
    }
    // A new reason for the queued member is still journaled once.
    let spawned = event("member-spawn", Some("jack"), None);
    services.engine.note_team_change(&spawned);
    services.engine.note_team_change(&spawned);
    assert_eq!(
        queued(&services),
        [("jack".into(), vec!["inbox_changed", "member_spawned"])]
    );
    let d = services.engine.diagnostics();
    assert_eq!((d.enqueued, d.coalesced), (1, 51));
    let journal = fs::read_to_string(
        dir.path()
            .join("teams/forge/members/jack/.member-work-sync/journal.jsonl"),
    )
    .unwrap();
    let queue_lines: Vec<(String, String)> = journal
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|line| line["event"].as_str().unwrap_or("").starts_with("queue_"))
        .map(|line| {
            let reason = line["reason"].as_str().unwrap_or("").to_string();
            (line["event"].as_str().unwrap().to_string(), reason)
        })
        .collect();
    assert_eq!(
        queue_lines,
        [
            ("queue_enqueued".to_string(), "inbox_changed".to_string()),
            ("queue_coalesced".to_string(), "member_spawned".to_string()),
        ]
    );
}

#[test]
fn a_deleted_team_stays_fenced_until_its_config_is_written_again() {
    // The app's deletion coordinator: completing a deletion keeps a tombstone;
    // events of the team are swallowed until a `config` event finds its
    // `config.json` again, which resumes it once with one startup scan; a
    // later explicit resume scans no more.
    let (dir, services) = fixture();
    let engine = &services.engine;
    let config = dir.path().join("teams/forge/config.json");
    let saved = fs::read(&config).unwrap();
    engine.prepare_team_deletion(&team("forge"), None).unwrap();
    fs::remove_file(&config).unwrap();
    engine.complete_team_deletion(&team("forge")).unwrap();

    let config_event = event("config", Some("config.json"), None);
    engine.note_team_change(&config_event);
    engine.note_team_change(&event("member-spawn", Some("jack"), None));
    assert!(queued(&services).is_empty(), "fenced after completion");
    assert!(matches!(
        engine.refresh_status(&team("forge"), &member("jack")),
        Err(member_work_sync::application::reconcile::WorkSyncError::TeamQuiesced(_))
    ));

    fs::write(&config, &saved).unwrap();
    engine.note_team_change(&event("config", Some("members.meta.json"), None));
    assert!(queued(&services).is_empty(), "only config.json resumes");
    engine.note_team_change(&config_event);
    let scanned = queued(&services);
    assert_eq!(scanned.len(), 5, "one startup scan of the roster");
    assert!(scanned.iter().all(|(_, t)| t == &["startup_scan"]));
    assert!(engine
        .refresh_status(&team("forge"), &member("jack"))
        .is_ok());

    engine.resume_team(&team("forge")).unwrap();
    assert_eq!(queued(&services), scanned, "no second scan");
    let coalesced = engine.diagnostics().coalesced;
    engine.resume_team(&team("forge")).unwrap();
    assert!(
        engine.diagnostics().coalesced > coalesced,
        "a fresh explicit resume scans"
    );
}
