//! Phase 2 end to end over the real stores: plan, dispatch, idempotent inbox
//! delivery, crash recovery, concurrency, revalidation and rate limits.

mod common;

use common::{MINUTE, NOW};
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use member_work_sync::application::ports::{Claimed, OutboxStore, PortError};
use member_work_sync::application::queue::Trigger;
use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::nudge::OutboxStatus;
use member_work_sync::domain::status::{ReconciledBy, StatusState};
use member_work_sync::domain::team::ProviderId;
use member_work_sync::infrastructure::outbox_store::FsOutboxStore;
use member_work_sync::infrastructure::status_store::StorePaths;
use member_work_sync::runtime::composition::{RootPaths, Services};
use serde_json::{json, Value};

/// A checked team name of a test.
fn team(name: &str) -> member_work_sync::domain::names::TeamName {
    member_work_sync::domain::names::TeamName::parse(name).unwrap()
}

/// A checked member name of a test.
fn member(name: &str) -> member_work_sync::domain::names::MemberName {
    member_work_sync::domain::names::MemberName::parse(name).unwrap()
}

/// Shadow history that makes readiness `shadow_ready`: 5 members, 30 calm
/// status events over two hours.
fn write_shadow_history(root: &Path) {
    let events: Vec<Value> = (0..30)
        .map(|i| {
            let at = member_work_sync::domain::time::format_iso(NOW - 2 * 60 * MINUTE + i * 4 * MINUTE);
            json!({"id": format!("h{i}"), "teamName": "forge", "memberName": format!("m{}", i % 5), "kind": "status_evaluated",
                   "state": "caught_up", "agendaFingerprint": "agenda:v1:x", "recordedAt": at, "actionableCount": 0})
        })
        .collect();
    let members: serde_json::Map<String, Value> = (0..5)
        .map(|i| {
            (format!("m{i}"), json!({"memberName": format!("m{i}"), "state": "caught_up", "agendaFingerprint": "agenda:v1:x",
                                     "actionableCount": 0, "evaluatedAt": "2026-11-18T11:00:00.000Z"}))
        })
        .collect();
    let path = root.join("teams/forge/.member-work-sync/indexes/metrics.json");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        path,
        json!({"schemaVersion": 2, "members": members, "recentEvents": events}).to_string(),
    )
    .unwrap();
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    services: Services,
}

impl Fixture {
    fn new() -> Self {
        let (dir, root) = common::example_root();
        write_shadow_history(&root);
        let services = common::services(&root);
        Self {
            _dir: dir,
            root,
            services,
        }
    }

    fn advance(&self, ms: i64) {
        let clock = self.services.manual_clock.as_ref().unwrap();
        clock.set(self.services.engine.now_ms() + ms);
    }

    /// A queued reconcile of `member`, run like the worker does.
    /// A reconcile by the queue's hand that plans the member's nudge, without
    /// the dispatch a queued run does next, so planning and dispatch are
    /// checked one at a time.
    fn queued_reconcile(&self, name: &str) {
        self.services
            .engine
            .reconcile_and_plan(
                &team("forge"),
                &member(name),
                ReconciledBy::Queue,
                &[Trigger::ManualRefresh],
            )
            .unwrap();
    }

    /// One pass of the dispatcher alone (the facade's dispatch also
    /// refreshes stale statuses and dispatches again).
    fn dispatch(&self) -> member_work_sync::application::nudges::DispatchSummary {
        self.services
            .nudges
            .dispatch_team(&team("forge"), "test", &|| true)
            .unwrap()
    }

    fn inbox(&self, member: &str) -> Vec<Value> {
        let path = self.root.join(format!("teams/forge/inboxes/{member}.json"));
        fs::read_to_string(path).map_or_else(|_| vec![], |t| serde_json::from_str(&t).unwrap())
    }

    fn outbox(&self, member: &str) -> Vec<member_work_sync::domain::nudge::OutboxItem> {
        self.services
            .outbox
            .member_items(&team("forge"), &MemberName::parse(member).unwrap())
            .unwrap()
    }
}

#[test]
fn one_nudge_once_then_quiet_after_a_report() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    let items = f.outbox("jack");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].status, OutboxStatus::Pending);
    assert!(items[0]
        .id
        .starts_with("member-work-sync:forge:jack:agenda:v1:"));

    let first = f.dispatch();
    assert_eq!((first.claimed, first.delivered), (1, 1));
    let inbox = f.inbox("jack");
    assert_eq!(inbox.len(), 1);
    let row = &inbox[0];
    assert_eq!(row["from"], "system");
    assert_eq!(row["messageKind"], "member_work_sync_nudge");
    assert_eq!(row["messageId"], items[0].id.as_str());
    assert_eq!(row["workSyncPayloadHash"], items[0].payload_hash.as_str());
    assert_eq!(row["taskRefs"].as_array().unwrap().len(), 2);

    let second = f.dispatch();
    assert_eq!((second.claimed, second.delivered), (0, 0));
    assert_eq!(f.inbox("jack").len(), 1);

    // The member reports; later queued reconciles plan nothing new.
    let status = f
        .services
        .engine
        .get_status(&team("forge"), &member("jack"), false)
        .unwrap();
    let result = f
        .services
        .reconciler
        .report(&json!({"teamName": "forge", "memberName": "jack", "state": "still_working",
                        "agendaFingerprint": status.agenda.fingerprint, "reportToken": status.report_token}))
        .unwrap();
    assert!(result.accepted);
    f.advance(MINUTE);
    f.queued_reconcile("jack");
    assert_eq!(f.dispatch().claimed, 0);
    assert_eq!(f.inbox("jack").len(), 1);
    assert_eq!(f.outbox("jack").len(), 1);
}

#[test]
fn collecting_readiness_still_targets_a_native_member() {
    let f = Fixture::new();
    fs::remove_file(
        f.root
            .join("teams/forge/.member-work-sync/indexes/metrics.json"),
    )
    .unwrap();
    f.queued_reconcile("jill");
    // jill has work besides her review (not a strict pickup) and readiness is
    // collecting: as in the app, her native inbox watch is targeted anyway.
    let items = f.outbox("jill");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].status, OutboxStatus::Pending);
    let journal = fs::read_to_string(
        f.root
            .join("teams/forge/members/jill/.member-work-sync/journal.jsonl"),
    )
    .unwrap();
    let planned: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["source"] == "nudge_planner")
        .collect();
    assert_eq!(planned.len(), 1, "{journal}");
    assert_eq!(planned[0]["event"], "nudge_planned");
    assert_eq!(planned[0]["reason"], "created");
}

#[test]
fn an_agenda_that_changed_since_planning_is_superseded() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    let task = f.root.join("tasks/forge/1.json");
    let mut value: Value = serde_json::from_str(&fs::read_to_string(&task).unwrap()).unwrap();
    value["status"] = json!("completed");
    fs::write(&task, value.to_string()).unwrap();
    let summary = f.dispatch();
    assert_eq!(
        (summary.claimed, summary.superseded, summary.delivered),
        (1, 1, 0)
    );
    assert!(f.inbox("jack").is_empty());
    assert_eq!(
        f.outbox("jack")[0].last_error.as_deref(),
        Some("status_no_longer_matches_outbox")
    );
}

#[test]
fn an_inactive_teams_due_nudges_are_superseded_when_dispatched() {
    // As the app's dispatcher revalidates: a team whose runtime is stopped
    // gets its due nudges claimed and superseded (`team_inactive`), with no
    // inbox row; the scheduler passes only active teams.
    let f = Fixture::new();
    f.queued_reconcile("jack");
    f.services
        .engine
        .set_team_runtime_state(&team("forge"), false, None);
    let summary = f
        .services
        .engine
        .dispatch_due_nudges(&[team("forge")], "test")
        .unwrap();
    assert_eq!(
        (summary.claimed, summary.superseded, summary.delivered),
        (1, 1, 0)
    );
    let item = f.outbox("jack").remove(0);
    assert_eq!(item.status, OutboxStatus::Superseded);
    assert_eq!(item.last_error.as_deref(), Some("team_inactive"));
    let dispatcher: Vec<(String, String)> = lines_from(&f.root, "jack", "nudge_dispatcher")
        .into_iter()
        .map(|(e, r, _)| (e, r))
        .collect();
    assert_eq!(
        dispatcher,
        [("nudge_superseded".to_string(), "team_inactive".to_string())]
    );
    assert!(f.inbox("jack").is_empty());
}

#[test]
fn deleting_teams_claim_nothing() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    f.services
        .engine
        .prepare_team_deletion(&team("forge"), None)
        .unwrap();
    let fenced = f
        .services
        .engine
        .dispatch_due_nudges(&[team("forge")], "test")
        .unwrap();
    assert_eq!(fenced.claimed, 0);
    assert_eq!(
        f.outbox("jack")[0].status,
        OutboxStatus::Pending,
        "nothing superseded"
    );
    f.services.engine.resume_team(&team("forge")).unwrap();
    // A member whose runtime is down gets its item superseded.
    f.services
        .engine
        .set_team_runtime_state(&team("forge"), true, Some(vec!["jill".into()]));
    let summary = f.dispatch();
    assert_eq!((summary.claimed, summary.superseded), (1, 1));
}

#[test]
fn crash_between_inbox_write_and_outbox_mark_leaves_exactly_one_row() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    // Dispatcher A claims and writes the inbox row, then dies before marking.
    let store = FsOutboxStore::new(
        StorePaths::new(f.root.join("teams")),
        std::sync::Arc::new(member_work_sync::infrastructure::clock::ManualClock::new(
            NOW,
        )),
    );
    let claimed = store
        .claim_due(
            &member_work_sync::domain::names::TeamName::parse("forge").unwrap(),
            "dispatcher-a",
            10,
            NOW,
        )
        .unwrap()
        .items;
    assert_eq!(claimed.len(), 1);
    let writer = member_work_sync::infrastructure::inbox::InboxWriter::new(f.root.join("teams"));
    use member_work_sync::application::ports::InboxSink;
    InboxSink::deliver(&writer, &team("forge"), &member("jack"), &claimed[0], NOW).unwrap();
    assert_eq!(f.inbox("jack").len(), 1);
    // Restart: the claim is fresh, so nobody takes it for 5 minutes ...
    assert_eq!(f.dispatch().claimed, 0);
    // ... then it is reclaimed, the inbox write finds its row, and it is marked delivered.
    f.advance(5 * MINUTE);
    let summary = f.dispatch();
    assert_eq!((summary.claimed, summary.delivered), (1, 1));
    assert_eq!(f.inbox("jack").len(), 1);
    assert_eq!(f.outbox("jack")[0].status, OutboxStatus::Delivered);
}

#[test]
fn watchdog_cooldown_and_busy_members_are_retried_later() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    fs::write(
        f.root.join("teams/forge/stall-monitor-journal.json"),
        json!([{"taskId": "2", "memberName": "jack", "state": "alerted", "alertedAt": "2026-11-18T11:00:00.000Z"}]).to_string(),
    )
    .unwrap();
    let summary = f.dispatch();
    assert_eq!((summary.claimed, summary.retryable), (1, 1));
    let item = &f.outbox("jack")[0];
    assert_eq!(item.status, OutboxStatus::FailedRetryable);
    assert_eq!(item.last_error.as_deref(), Some("watchdog_cooldown_active"));
    assert_eq!(
        item.next_attempt_at.as_ref().map(|t| t.as_str()),
        Some("2026-11-18T11:10:00.000Z")
    );
    f.advance(4 * MINUTE);
    let summary = f.dispatch();
    assert_eq!(summary.delivered, 1);
}

#[test]
fn a_busy_members_nudge_is_planned_then_retried_and_the_journal_names_the_tool() {
    let f = Fixture::new();
    let now = member_work_sync::domain::time::format_iso(f.services.engine.now_ms());
    f.services.engine.note_team_change(&member_work_sync::application::router::TeamChangeEvent {
        kind: "tool-activity".into(),
        team_name: "forge".into(),
        detail: Some(format!(
            r#"{{"action":"start","activity":{{"memberName":"jack","toolUseId":"t1","toolName":"Bash","startedAt":"{now}"}}}}"#
        )),
        ..Default::default()
    });
    // A running tool does not stop the planner (the app plans all the same) ...
    f.queued_reconcile("jack");
    assert_eq!(f.outbox("jack").len(), 1);
    assert_eq!(f.outbox("jack")[0].status, OutboxStatus::Pending);
    // ... the dispatcher keeps the item retryable while the member is busy.
    let summary = f.dispatch();
    assert_eq!((summary.claimed, summary.retryable), (1, 1));
    let item = &f.outbox("jack")[0];
    assert_eq!(item.status, OutboxStatus::FailedRetryable);
    assert_eq!(
        item.last_error.as_deref(),
        Some("member_busy:active_tool_activity")
    );
    let lines: Vec<Value> = journal_of(&f.root, "jack")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let planned: Vec<&Value> = lines
        .iter()
        .filter(|l| l["source"] == "nudge_planner")
        .collect();
    assert_eq!(planned.len(), 1);
    assert_eq!(planned[0]["event"], "nudge_planned");
    // The app journals a busy retry as `member_busy`, its reason the retry reason.
    let busy: Vec<&Value> = lines
        .iter()
        .filter(|l| l["source"] == "nudge_dispatcher")
        .collect();
    assert_eq!(busy.len(), 1);
    assert_eq!(busy[0]["event"], "member_busy");
    assert_eq!(busy[0]["reason"], "member_busy:active_tool_activity");
    let line = busy[0].to_string();
    assert!(line.contains(r#""toolName":"Bash""#), "{line}");
}

#[test]
fn at_most_two_deliveries_per_member_hour() {
    let f = Fixture::new();
    let mut delivered = 0;
    for round in 0..3 {
        // Each round the board moves, so the agenda (and the nudge) is new.
        let task = f.root.join(format!("tasks/forge/{}.json", 20 + round));
        fs::write(&task, json!({"id": (20 + round).to_string(), "subject": "More", "status": "pending", "owner": "jack"}).to_string())
            .unwrap();
        f.advance(MINUTE);
        f.queued_reconcile("jack");
        let summary = f.dispatch();
        delivered += summary.delivered;
        if round == 2 {
            assert_eq!(
                (summary.claimed, summary.retryable),
                (1, 1),
                "the 3rd within the hour waits"
            );
        }
    }
    assert_eq!(delivered, 2);
    let waiting = f
        .outbox("jack")
        .into_iter()
        .find(|i| i.status == OutboxStatus::FailedRetryable)
        .unwrap();
    assert_eq!(
        waiting.last_error.as_deref(),
        Some("member_nudge_rate_limited")
    );
    // As the app: retried an hour after the refusal, not when the first
    // delivery (two minutes earlier) leaves the window.
    let refused_at = f.services.engine.now_ms();
    assert_eq!(
        waiting
            .next_attempt_at
            .as_ref()
            .and_then(member_work_sync::domain::time::IsoTime::ms),
        Some(refused_at + 60 * MINUTE)
    );
}

/// Deliveries to jack when the clock steps back `step_back_ms` after his
/// first two nudges, with a new agenda every 5 minutes for `rounds` more
/// rounds: everything happens within 25 real (simulated) minutes.
fn deliveries_across_a_clock_step(step_back_ms: i64, rounds: usize) -> usize {
    let f = Fixture::new();
    let mut delivered = 0;
    for round in 0..2 + rounds {
        if round == 2 {
            f.advance(-step_back_ms);
        }
        let task = f.root.join(format!("tasks/forge/{}.json", 20 + round));
        fs::write(&task, json!({"id": (20 + round).to_string(), "subject": "More", "status": "pending", "owner": "jack"}).to_string())
            .unwrap();
        f.advance(5 * MINUTE);
        f.queued_reconcile("jack");
        delivered += f.dispatch().delivered;
    }
    delivered
}

#[test]
fn the_hourly_limit_holds_when_the_clock_steps_back() {
    // (clock step back in minutes, deliveries within the 25 real minutes)
    let steps = [0, 20, 80, 24 * 60, 365 * 24 * 60];
    let delivered: Vec<(i64, usize)> = steps
        .iter()
        .map(|&minutes| (minutes, deliveries_across_a_clock_step(minutes * MINUTE, 3)))
        .collect();
    let expected: Vec<(i64, usize)> = steps.iter().map(|&minutes| (minutes, 2)).collect();
    assert_eq!(delivered, expected);
}

/// Deliveries to jack in one real hour when the wall clock steps by
/// `step_ms` (no time passes) after his first two nudges: a new agenda every
/// 5 minutes, 12 rounds.
fn deliveries_in_one_hour_with_a_wall_clock_step(step_ms: i64) -> usize {
    let f = Fixture::new();
    let clock = f.services.manual_clock.as_ref().unwrap();
    let mut delivered = 0;
    for round in 0..12 {
        if round == 2 {
            clock.step(f.services.engine.now_ms() + step_ms);
        }
        let task = f.root.join(format!("tasks/forge/{}.json", 20 + round));
        fs::write(&task, json!({"id": (20 + round).to_string(), "subject": "More", "status": "pending", "owner": "jack"}).to_string())
            .unwrap();
        f.advance(5 * MINUTE);
        f.queued_reconcile("jack");
        delivered += f.dispatch().delivered;
    }
    delivered
}

#[test]
fn the_hourly_limit_holds_when_the_clock_steps_forward() {
    // (wall clock step in minutes, deliveries within the real hour)
    let steps = [-80, 0, 20, 2 * 60, 24 * 60];
    let delivered: Vec<(i64, usize)> = steps
        .iter()
        .map(|&minutes| {
            (
                minutes,
                deliveries_in_one_hour_with_a_wall_clock_step(minutes * MINUTE),
            )
        })
        .collect();
    let expected: Vec<(i64, usize)> = steps.iter().map(|&minutes| (minutes, 2)).collect();
    assert_eq!(delivered, expected);
}

#[test]
fn recovery_nudges_lead_to_suppression_after_four_deliveries() {
    let f = Fixture::new();
    // A queue-side reconcile that plans, and no dispatch of its own.
    let run = |trigger: Trigger| {
        f.advance(5_000);
        f.services
            .engine
            .reconcile_and_plan(
                &team("forge"),
                &member("jack"),
                ReconciledBy::Queue,
                &[trigger],
            )
            .unwrap();
    };
    let keys = |f: &Fixture| -> Vec<String> {
        let mut keys: Vec<String> = f
            .outbox("jack")
            .into_iter()
            .map(|i| {
                i.payload
                    .work_sync_intent_key
                    .clone()
                    .unwrap_or_else(|| "base".into())
            })
            .map(|k| k.split(':').next().unwrap().to_string())
            .collect();
        keys.sort();
        keys
    };
    run(Trigger::ManualRefresh);
    assert_eq!(f.dispatch().delivered, 1, "base nudge");
    // The member's turn ends without touching the board: a status-only check.
    f.advance(61 * MINUTE);
    run(Trigger::TurnSettled);
    assert_eq!(f.dispatch().delivered, 1, "status-only");
    assert_eq!(keys(&f), ["base", "status-only"]);
    // Still stuck, an hour later each time: still-stuck follow-ups.
    f.advance(61 * MINUTE);
    run(Trigger::ManualRefresh);
    assert_eq!(f.dispatch().delivered, 1, "still-stuck 1");
    f.advance(61 * MINUTE);
    run(Trigger::ManualRefresh);
    assert_eq!(f.dispatch().delivered, 1, "still-stuck 2");
    assert_eq!(f.inbox("jack").len(), 4);
    // Four deliveries for one fingerprint without an accepted report: suppressed.
    f.advance(61 * MINUTE);
    let lines_before = journal_of(&f.root, "jack").lines().count();
    run(Trigger::ManualRefresh);
    // Journaled as the app does: the decision, then the suppression, then the write.
    let kinds: Vec<String> = journal_of(&f.root, "jack")
        .lines()
        .skip(lines_before)
        .map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .filter(|kind| !kind.starts_with("queue_"))
        .collect();
    assert_eq!(
        kinds[..5],
        [
            "reconcile_started",
            "agenda_loaded",
            "decision_made",
            "nudge_suppressed",
            "status_written"
        ],
        "{kinds:?}"
    );
    let status = f
        .services
        .engine
        .get_status(&team("forge"), &member("jack"), false)
        .unwrap();
    assert!(status
        .diagnostics
        .contains(&"work_sync_suppressed_no_accepted_report".to_string()));
    assert!(!status.shadow.as_ref().unwrap().would_nudge);
    assert_eq!(f.dispatch().delivered, 0);
    assert_eq!(f.inbox("jack").len(), 4);
    // forceNudge resets the suppression.
    let forced = f
        .services
        .engine
        .get_status(&team("forge"), &member("jack"), true)
        .unwrap();
    assert!(forced
        .diagnostics
        .contains(&"work_sync_suppression_manual_retry_reset".to_string()));
    assert!(forced.shadow.unwrap().would_nudge);
}

/// A team of `members` members, each with one pending task, with calm shadow history.
fn big_team(root: &Path, members: usize) {
    let team = root.join("teams/forge");
    let tasks = root.join("tasks/forge");
    fs::create_dir_all(&team).unwrap();
    fs::create_dir_all(&tasks).unwrap();
    let roster: Vec<Value> = (0..members)
        .map(|i| json!({"name": format!("w{i}"), "model": "claude-sonnet-4-5"}))
        .collect();
    fs::write(
        team.join("config.json"),
        json!({"name": "forge", "members": roster}).to_string(),
    )
    .unwrap();
    for i in 0..members {
        let task = json!({"id": i.to_string(), "subject": format!("Task {i}"), "status": "pending", "owner": format!("w{i}")});
        fs::write(tasks.join(format!("{i}.json")), task.to_string()).unwrap();
    }
    write_shadow_history(root);
}

#[test]
fn two_dispatchers_never_deliver_one_item_twice() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    big_team(&root, 50);
    let paths = || RootPaths::resolve(Some(root.clone()), None, None);
    let a = Services::new(paths(), Some(NOW));
    for i in 0..50 {
        a.engine
            .reconcile_and_plan(
                &team("forge"),
                &member(&format!("w{i}")),
                ReconciledBy::Queue,
                &[Trigger::ManualRefresh],
            )
            .unwrap();
    }
    let b = Services::new(paths(), Some(NOW));
    let results: Vec<(usize, usize)> = std::thread::scope(|scope| {
        [&a, &b]
            .map(|services| {
                scope.spawn(move || {
                    let (mut claimed, mut delivered) = (0, 0);
                    loop {
                        let summary = services
                            .engine
                            .dispatch_due_nudges(&[team("forge")], "racer")
                            .unwrap();
                        if summary.claimed == 0 {
                            return (claimed, delivered);
                        }
                        claimed += summary.claimed;
                        delivered += summary.delivered;
                    }
                })
            })
            .map(|handle| handle.join().unwrap())
            .to_vec()
    });
    let delivered: usize = results.iter().map(|r| r.1).sum();
    let claimed: usize = results.iter().map(|r| r.0).sum();
    assert_eq!((claimed, delivered), (50, 50), "{results:?}");
    for i in 0..50 {
        let inbox: Vec<Value> = serde_json::from_str(
            &fs::read_to_string(root.join(format!("teams/forge/inboxes/w{i}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(inbox.len(), 1, "w{i}");
    }
}

#[test]
fn a_member_removed_after_planning_gets_no_nudge() {
    let f = Fixture::new();
    f.queued_reconcile("kim");
    assert_eq!(f.outbox("kim").len(), 1);
    let meta = f.root.join("teams/forge/members.meta.json");
    let mut value: Value = serde_json::from_str(&fs::read_to_string(&meta).unwrap()).unwrap();
    value["members"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "kim", "removedAt": 1_790_000_000_000i64}));
    fs::write(&meta, value.to_string()).unwrap();
    let summary = f.dispatch();
    assert_eq!(
        (summary.claimed, summary.superseded, summary.delivered),
        (1, 1, 0)
    );
    assert!(f.inbox("kim").is_empty());
}

/// `Nudges` over the fixture's stores, with `outbox` in place of the real one.
fn dispatcher(
    root: &Path,
    outbox: std::sync::Arc<dyn OutboxStore>,
) -> member_work_sync::application::nudges::Nudges {
    use member_work_sync::application::nudges::Nudges;
    use member_work_sync::application::ports::Ports;
    use member_work_sync::infrastructure::clock::ManualClock;
    use member_work_sync::runtime::composition::{file_ports, RootPaths};
    use std::sync::Arc;
    let paths = RootPaths::resolve(Some(root.to_path_buf()), None, None);
    let ports = file_ports(
        &paths,
        Arc::new(ManualClock::new(NOW)),
        Arc::new(member_work_sync::application::log::LogRelay::default()),
        None,
        member_work_sync::domain::retention::Retention::default(),
    );
    Nudges::new(Arc::new(Ports { outbox, ..ports }))
}

/// The real outbox store, except that recording an attempt's end fails as on a full disk.
struct FinishFails(FsOutboxStore);

impl OutboxStore for FinishFails {
    fn ensure(
        &self,
        team: &TeamName,
        member: &MemberName,
        planned: &member_work_sync::domain::nudge::PlannedNudge,
        now: i64,
    ) -> Result<
        (
            member_work_sync::domain::nudge::OutboxItem,
            member_work_sync::domain::nudge::EnsureOutcome,
        ),
        PortError,
    > {
        self.0.ensure(team, member, planned, now)
    }
    fn member_items(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<Vec<member_work_sync::domain::nudge::OutboxItem>, PortError> {
        self.0.member_items(team, member)
    }
    fn claim_due(
        &self,
        team: &member_work_sync::domain::names::TeamName,
        claimed_by: &str,
        limit: usize,
        now: i64,
    ) -> Result<Claimed, PortError> {
        self.0.claim_due(team, claimed_by, limit, now)
    }
    fn finish(
        &self,
        _team: &TeamName,
        item: &member_work_sync::domain::nudge::OutboxItem,
        _end: &member_work_sync::domain::nudge::AttemptEnd,
        _now: i64,
    ) -> Result<bool, PortError> {
        Err(std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            format!(
                "members/{}/.member-work-sync/outbox.json: disk full",
                item.member_name
            ),
        )
        .into())
    }
    fn refresh_index(
        &self,
        team: &member_work_sync::domain::names::TeamName,
    ) -> Result<(), PortError> {
        self.0.refresh_index(team)
    }
    fn teams_with_outbox(&self) -> Vec<TeamName> {
        self.0.teams_with_outbox()
    }
}

fn journal_of(root: &Path, member: &str) -> String {
    fs::read_to_string(root.join(format!(
        "teams/forge/members/{member}/.member-work-sync/journal.jsonl"
    )))
    .unwrap_or_default()
}

#[test]
fn an_outcome_that_cannot_be_recorded_is_counted_and_retried_without_a_second_row() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    let store = |clock_ms| {
        FsOutboxStore::new(
            StorePaths::new(f.root.join("teams")),
            std::sync::Arc::new(member_work_sync::infrastructure::clock::ManualClock::new(
                clock_ms,
            )),
        )
    };
    let failing = dispatcher(&f.root, std::sync::Arc::new(FinishFails(store(NOW))));
    let summary = failing
        .dispatch_team(&team("forge"), "test", &|| true)
        .unwrap();
    assert_eq!(
        (summary.claimed, summary.delivered, summary.failed),
        (1, 0, 1),
        "{summary:?}"
    );
    assert!(
        journal_of(&f.root, "jack").contains("\"event\":\"outbox_unavailable\""),
        "{}",
        journal_of(&f.root, "jack")
    );
    assert_eq!(f.inbox("jack").len(), 1, "the row was written");
    assert_eq!(f.outbox("jack")[0].status, OutboxStatus::Claimed);
    // Once the claim expires a healthy pass finds the row and records it.
    f.advance(5 * MINUTE);
    let summary = f.dispatch();
    assert_eq!(
        (summary.claimed, summary.delivered, summary.failed),
        (1, 1, 0)
    );
    assert_eq!(f.inbox("jack").len(), 1);
}

#[test]
fn a_member_outbox_that_cannot_be_claimed_from_is_counted_and_the_others_are_served() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    f.queued_reconcile("kim");
    assert_eq!((f.outbox("jack").len(), f.outbox("kim").len()), (1, 1));
    // A folder tree too deep to clear where jack's outbox lock file goes
    // (a planted lock that is merely not a file is replaced): no lock, so
    // no claim.
    let lock = f
        .root
        .join("teams/forge/members/jack/.member-work-sync/outbox.json.lock");
    let _ = fs::remove_file(&lock);
    fs::create_dir_all(lock.join("x/x/x/x/x/x/x/x/x/x/x/x")).unwrap();
    let summary = f.dispatch();
    assert_eq!(
        (summary.claimed, summary.delivered, summary.failed),
        (1, 1, 1),
        "{summary:?}"
    );
    assert_eq!((f.inbox("jack").len(), f.inbox("kim").len()), (0, 1));
    assert_eq!(f.outbox("jack")[0].status, OutboxStatus::Pending);
    assert!(journal_of(&f.root, "jack").contains("\"event\":\"outbox_unavailable\""));
}

#[test]
fn an_outbox_that_cannot_be_claimed_from_is_journaled_under_the_members_name_not_its_folder_key() {
    // (member name, its store folder)
    let cases = [("dev ops", "dev%20ops"), ("jürgen", "j%C3%BCrgen")];
    for (name, folder) in cases {
        let f = Fixture::new();
        f.queued_reconcile("jack");
        // jack's due nudge, moved to the member `name`.
        let mut item = f.outbox("jack").remove(0);
        item.id = item.id.replace(":jack:", &format!(":{name}:"));
        item.member_name = name.to_string();
        std::sync::Arc::make_mut(&mut item.payload).to = name.to_string();
        let store = f
            .root
            .join(format!("teams/forge/members/{folder}/.member-work-sync"));
        fs::create_dir_all(&store).unwrap();
        write_outbox(&f.root, folder, &[item]);
        fs::remove_file(
            f.root
                .join("teams/forge/members/jack/.member-work-sync/outbox.json"),
        )
        .unwrap();
        // A folder tree too deep to clear where the outbox lock goes: no claim.
        fs::create_dir_all(store.join("outbox.json.lock/x/x/x/x/x/x/x/x/x/x/x/x")).unwrap();
        let summary = f.dispatch();
        assert_eq!(summary.failed, 1, "{name}: {summary:?}");
        let journal = journal_of(&f.root, folder);
        let line: Value = journal
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .find(|line: &Value| line["event"] == "outbox_unavailable")
            .unwrap_or_else(|| panic!("{name}: {journal}"));
        assert_eq!(line["memberName"], name, "{name}");
        let members: Vec<String> = fs::read_dir(f.root.join("teams/forge/members"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !members.iter().any(|m| m.contains("%25")),
            "{name}: no folder for the key read as a name: {members:?}"
        );
    }
}

#[test]
fn a_team_whose_members_cannot_be_listed_fails_the_call_naming_the_path() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    let members = f.root.join("teams/forge/members");
    fs::rename(&members, f.root.join("teams/forge/members.moved")).unwrap();
    fs::write(&members, "not a folder").unwrap();
    let error = f
        .services
        .engine
        .dispatch_due_nudges(&[team("forge")], "test")
        .unwrap_err();
    assert!(
        matches!(
            error,
            member_work_sync::application::reconcile::WorkSyncError::Io(_)
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains(&members.display().to_string()),
        "{error}"
    );
}

#[test]
fn an_unreadable_watchdog_journal_holds_nudges_back_without_blocking() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    let journal = f.root.join("teams/forge/stall-monitor-journal.json");
    // Read without O_NONBLOCK, a FIFO would block this dispatch forever.
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &journal,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let summary = f.dispatch();
    assert_eq!(
        (summary.claimed, summary.retryable, summary.delivered),
        (1, 1, 0)
    );
    assert!(f.inbox("jack").is_empty());
    let reason = f.outbox("jack")[0].last_error.clone().unwrap();
    assert!(
        reason.starts_with("watchdog_journal_unavailable:")
            && reason.contains(&journal.display().to_string()),
        "{reason}"
    );
}

#[test]
fn a_fifo_in_place_of_the_inbox_holds_the_nudge_back_naming_the_path() {
    let f = Fixture::new();
    f.queued_reconcile("jack");
    let inbox = f.root.join("teams/forge/inboxes/jack.json");
    fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    // Opened without O_NONBLOCK, the FIFO would pin this thread forever.
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &inbox,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let summary = f.dispatch();
    assert_eq!(
        (summary.claimed, summary.retryable, summary.delivered),
        (1, 1, 0)
    );
    // Retryable, as the app keeps a nudge whose inbox write failed: the next
    // attempt checks the path afresh and never opens what is not a file.
    let item = &f.outbox("jack")[0];
    assert_eq!(item.status, OutboxStatus::FailedRetryable);
    let reason = item.last_error.clone().unwrap();
    assert!(
        reason.starts_with("inbox_write_failed:") && reason.contains(&inbox.display().to_string()),
        "{reason}"
    );
    assert!(fs::symlink_metadata(&inbox).unwrap().file_type().is_fifo());
}

mod proof_missing_recovery {
    use super::*;
    use member_work_sync::application::proof_missing::{
        ProofMissingRequest, ScheduleOutcome, ScheduleResult,
    };
    use member_work_sync::application::reconcile::WorkSyncError;
    use member_work_sync::domain::recovery::RecoveryTaskRef;

    fn request(member: &str, message_id: &str, task_ids: &[&str]) -> ProofMissingRequest {
        ProofMissingRequest {
            team_name: "forge".into(),
            member_name: member.into(),
            original_message_id: message_id.into(),
            task_refs: task_ids
                .iter()
                .map(|id| RecoveryTaskRef {
                    task_id: id.to_string(),
                    display_id: None,
                    team_name: None,
                })
                .collect(),
            reason: None,
        }
    }

    fn schedule(
        f: &Fixture,
        request: ProofMissingRequest,
    ) -> Result<ScheduleResult, WorkSyncError> {
        f.services.engine.schedule_proof_missing_recovery(request)
    }

    /// Runs whatever is due, like the worker.
    fn run_due(f: &Fixture) {
        for (key, item) in f.services.engine.take_due() {
            let ok = f.services.engine.run(&item).is_ok();
            f.services.engine.finish(&key, &item, ok);
        }
    }

    #[test]
    fn a_recovery_is_queued_nudged_and_coalesced_for_ten_minutes() {
        let f = Fixture::new();
        let result = schedule(&f, request(" jack ", " m-1 ", &[" 2 ", "1", "2"])).unwrap();
        assert_eq!(
            result,
            ScheduleResult {
                scheduled: true,
                reason: ScheduleOutcome::Scheduled,
                intent_key: Some("proof-missing:m-1".into()),
                existing_outbox_id: None,
            }
        );
        let journal = journal_of(&f.root, "jack");
        let scheduled: Value = journal
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["event"] == "proof_missing_recovery_scheduled")
            .expect("scheduled audit");
        // The app journal's shape: known fields top-level, the rest in metadata.
        assert_eq!(scheduled["source"], "proof_missing_recovery_scheduler");
        assert_eq!(scheduled["reason"], "protocol_proof_missing");
        assert_eq!(
            scheduled["taskRefs"],
            json!([{"taskId": "1"}, {"taskId": "2"}])
        );
        assert_eq!(scheduled["metadata"]["intentKey"], "proof-missing:m-1");
        let queued = f.services.engine.diagnostics();
        assert_eq!(
            queued.queued_items[0].trigger_reasons,
            ["proof_missing_recovery"]
        );

        // The reconcile runs after its 5 s delay, plans the targeted nudge
        // and, like every queued run, dispatches it.
        f.advance(5_000);
        run_due(&f);
        let id = "member-work-sync:forge:jack:proof-missing:m-1";
        let items = f.outbox("jack");
        let item = items.iter().find(|i| i.id == id).expect("recovery item");
        assert_eq!(item.status, OutboxStatus::Delivered);
        assert!(item.payload.text.contains("message \"m-1\""));
        let stored = f
            .services
            .engine
            .get_status(&team("forge"), &member("jack"), false)
            .unwrap();
        assert_eq!(
            stored.shadow.unwrap().recovery.unwrap().task_ids,
            ["1", "2"]
        );

        // Pending or delivered within 10 minutes: the same message coalesces.
        let again = schedule(&f, request("jack", "m-1", &["1"])).unwrap();
        assert_eq!(again.reason, ScheduleOutcome::CoalescedRecent);
        assert_eq!(again.existing_outbox_id.as_deref(), Some(id));
        assert!(journal_of(&f.root, "jack").contains("proof_missing_recovery_coalesced"));
        assert_eq!(f.dispatch().delivered, 0);
        assert_eq!(f.inbox("jack")[0]["messageId"], id);
        assert_eq!(f.inbox("jack")[0]["workSyncIntentKey"], "proof-missing:m-1");
        f.advance(10 * MINUTE - 1);
        assert_eq!(
            schedule(&f, request("jack", "m-1", &["1"])).unwrap().reason,
            ScheduleOutcome::CoalescedRecent
        );
        f.advance(2);
        assert_eq!(
            schedule(&f, request("jack", "m-1", &["1"])).unwrap().reason,
            ScheduleOutcome::Scheduled
        );
    }

    #[test]
    fn unusable_requests_are_invalid_and_a_name_off_the_roster_is_scheduled_as_any() {
        let f = Fixture::new();
        let blank_cases = [
            request("  ", "m-1", &["1"]),
            request("jack", " ", &["1"]),
            ProofMissingRequest {
                team_name: " ".into(),
                ..request("jack", "m-1", &["1"])
            },
        ];
        for case in blank_cases {
            let result = schedule(&f, case.clone()).unwrap();
            assert_eq!(result.reason, ScheduleOutcome::Invalid, "{case:?}");
            assert!(!result.scheduled);
        }
        assert!(!journal_of(&f.root, "jack").contains("proof_missing_recovery"));

        for refs in [&[][..], &["  "][..]] {
            let result = schedule(&f, request("jack", "m-2", refs)).unwrap();
            assert_eq!(result.reason, ScheduleOutcome::Invalid);
        }
        let suppressed = journal_of(&f.root, "jack")
            .matches("proof_missing_recovery_suppressed")
            .count();
        assert_eq!(suppressed, 2);
        assert_eq!(f.services.engine.diagnostics().queued, 0);
        // As the app's scheduler: a name off the roster (safe on disk, below
        // the store cap) is scheduled like any other.
        assert_eq!(
            schedule(&f, request("ghost", "m-1", &["1"]))
                .unwrap()
                .reason,
            ScheduleOutcome::Scheduled
        );
        assert!(journal_of(&f.root, "ghost").contains("proof_missing_recovery_scheduled"));

        assert!(matches!(
            schedule(&f, request("a/b", "m-1", &["1"])),
            Err(WorkSyncError::InvalidArgument { .. })
        ));
        assert!(matches!(
            schedule(&f, request("jack", &"x".repeat(257), &["1"])),
            Err(WorkSyncError::InvalidArgument { .. })
        ));
        f.services
            .engine
            .prepare_team_deletion(&team("forge"), None)
            .unwrap();
        assert!(matches!(
            schedule(&f, request("jack", "m-1", &["1"])),
            Err(WorkSyncError::TeamQuiesced(_))
        ));
    }
}

#[test]
fn a_control_url_is_named_at_the_end_of_every_delivered_text() {
    let (dir, root) = common::example_root();
    write_shadow_history(&root);
    let services = Services::with_control_url(
        RootPaths::resolve(Some(root.clone()), None, None),
        Some(NOW),
        Some("http://127.0.0.1:4567/control".into()),
    );
    let f = Fixture {
        _dir: dir,
        root,
        services,
    };
    f.queued_reconcile("jack");
    assert_eq!(f.dispatch().delivered, 1);
    let item = &f.outbox("jack")[0];
    let row = &f.inbox("jack")[0];
    let text = row["text"].as_str().unwrap();
    assert!(
        text.starts_with(&item.payload.text),
        "the planned text comes first"
    );
    assert!(text.ends_with(
        "pass controlUrl \"http://127.0.0.1:4567/control\" in both member_work_sync_status and member_work_sync_report."
    ));
    assert!(
        !item.payload.text.contains("controlUrl"),
        "the payload (and its hash) stay as planned"
    );
    assert_eq!(row["workSyncPayloadHash"], item.payload_hash.as_str());
}

#[test]
fn an_outbox_written_by_the_app_is_read_item_by_item() {
    // The app's outbox items carry no `payload.agendaFingerprint` (and fields
    // of its own, like `messageKind`): the file is read, not quarantined,
    // and the item's fingerprint is the payload's.
    let f = Fixture::new();
    let dir = f.root.join("teams/forge/members/jack/.member-work-sync");
    fs::create_dir_all(&dir).unwrap();
    let fp = format!("agenda:v1:{}", "a".repeat(64));
    let id = format!("member-work-sync:forge:jack:{fp}");
    let item = json!({
        "id": id, "teamName": "forge", "memberName": "jack", "agendaFingerprint": fp,
        "payloadHash": "b".repeat(64),
        "payload": {
            "from": "system", "to": "jack", "messageKind": "member_work_sync_nudge",
            "source": "member-work-sync", "actionMode": "do", "workSyncIntent": "agenda_sync",
            "text": "Work sync check.",
            "taskRefs": [{ "taskId": "1", "displayId": "1", "teamName": "forge" }]
        },
        "status": "delivered", "attemptGeneration": 1, "deliveredMessageId": "m-1",
        "createdAt": "2026-11-18T10:00:00.000Z", "updatedAt": "2026-11-18T10:01:00.000Z"
    });
    let file = dir.join("outbox.json");
    fs::write(
        &file,
        json!({ "schemaVersion": 2, "items": { id.clone(): item } }).to_string(),
    )
    .unwrap();
    let store = FsOutboxStore::new(
        StorePaths::new(f.root.join("teams")),
        std::sync::Arc::new(member_work_sync::infrastructure::clock::ManualClock::new(
            NOW,
        )),
    );
    let items = store
        .member_items(&team("forge"), &MemberName::parse("jack").unwrap())
        .unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].status, OutboxStatus::Delivered);
    assert_eq!(items[0].payload.agenda_fingerprint, fp);
    assert!(file.exists(), "not moved aside");
    let moved = fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains(".invalid.")
        })
        .count();
    assert_eq!(moved, 0);
}

#[test]
fn a_deleted_teams_statuses_name_no_provider() {
    let f = Fixture::new();
    let live = f
        .services
        .engine
        .refresh_status(&team("forge"), &member("jack"))
        .unwrap();
    assert_eq!(live.provider_id, Some(ProviderId::Codex));
    let config = f.root.join("teams/forge/config.json");
    let mut value: Value = serde_json::from_str(&fs::read_to_string(&config).unwrap()).unwrap();
    value["deletedAt"] = json!("2026-09-08T08:00:00.000Z");
    fs::write(&config, value.to_string()).unwrap();
    f.advance(60_000);
    let deleted = f
        .services
        .engine
        .refresh_status(&team("forge"), &member("jack"))
        .unwrap();
    assert_eq!(deleted.state, StatusState::Inactive);
    assert_eq!(deleted.provider_id, None);
}

#[test]
fn a_hold_found_at_dispatch_is_journaled_as_skipped() {
    // The app's dispatcher journals a retryable revalidation outcome (here
    // the hourly limit) by its reason: `nudge_skipped` unless the reason has
    // its own event; `nudge_retryable` is for a delivery that failed.
    let f = Fixture::new();
    for round in 0..3 {
        let task = f.root.join(format!("tasks/forge/{}.json", 20 + round));
        fs::write(&task, json!({"id": (20 + round).to_string(), "subject": "More", "status": "pending", "owner": "jack"}).to_string())
            .unwrap();
        f.advance(MINUTE);
        f.queued_reconcile("jack");
        f.dispatch();
    }
    let dispatched: Vec<(String, String)> = journal_of(&f.root, "jack")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["source"] == "nudge_dispatcher")
        .map(|l| {
            (
                l["event"].as_str().unwrap().to_string(),
                l["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("nudge_delivered", "inbox_inserted"),
        ("nudge_delivered", "inbox_inserted"),
        ("nudge_skipped", "member_nudge_rate_limited"),
    ]
    .map(|(e, r)| (e.to_string(), r.to_string()));
    assert_eq!(dispatched, expected);
}

/// `(event, reason, diagnostics)` of each journal line of `member` from `source`.
fn lines_from(root: &Path, member: &str, source: &str) -> Vec<(String, String, Value)> {
    journal_of(root, member)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["source"] == source)
        .map(|l| {
            (
                l["event"].as_str().unwrap().to_string(),
                l["reason"].as_str().unwrap_or_default().to_string(),
                l.get("diagnostics").cloned().unwrap_or(Value::Null),
            )
        })
        .collect()
}

#[test]
fn a_review_pickup_without_a_delivery_port_is_escalated_not_planned() {
    // bob's only agenda item is the review of task 7 he was asked for: a
    // clean pickup. With no pickup delivery port (the app's
    // `reviewPickupDelivery` is not wired) the app plans no outbox item: it
    // journals the missing port, escalates and skips.
    let f = Fixture::new();
    f.queued_reconcile("bob");
    let status = f
        .services
        .engine
        .get_status(&team("forge"), &member("bob"), false)
        .unwrap();
    assert!(member_work_sync::domain::nudge::is_strict_pickup(
        &status.agenda
    ));
    assert!(f.outbox("bob").is_empty());
    let planner = lines_from(&f.root, "bob", "nudge_planner");
    let port = "review_pickup_delivery_port_unavailable";
    assert_eq!(
        planner,
        [
            ("review_pickup_delivery_unavailable", port, json!([port])),
            ("review_pickup_escalated", port, Value::Null),
            (
                "nudge_skipped",
                "review_pickup_delivery_unavailable",
                Value::Null
            ),
        ]
        .map(|(e, r, d)| (e.to_string(), r.to_string(), d))
    );
    assert_eq!(f.dispatch().claimed, 0);
    assert!(f.inbox("bob").is_empty());
}

#[test]
fn a_stored_review_pickup_is_superseded_and_escalated_at_dispatch() {
    // A pickup item an older store holds: the app's dispatcher revalidates
    // it, finds no delivery port and supersedes it, journaling the missing
    // port and the escalation; nothing reaches the inbox.
    let f = Fixture::new();
    f.queued_reconcile("bob");
    let status = f
        .services
        .engine
        .get_status(&team("forge"), &member("bob"), false)
        .unwrap();
    let pickup = member_work_sync::domain::nudge::plan_nudge(&status).unwrap();
    f.services
        .outbox
        .ensure(&team("forge"), &member("bob"), &pickup, NOW)
        .unwrap();
    let summary = f.dispatch();
    assert_eq!((summary.claimed, summary.superseded), (1, 1));
    let items = f.outbox("bob");
    assert_eq!(items[0].status, OutboxStatus::Superseded);
    let reason = "review_pickup_delivery_unavailable:delivery_port_unavailable";
    assert_eq!(items[0].last_error.as_deref(), Some(reason));
    let dispatcher: Vec<(String, String)> = lines_from(&f.root, "bob", "nudge_dispatcher")
        .into_iter()
        .map(|(e, r, _)| (e, r))
        .collect();
    assert_eq!(
        dispatcher,
        [
            ("review_pickup_delivery_unavailable", reason),
            ("review_pickup_escalated", reason)
        ]
        .map(|(e, r)| (e.to_string(), r.to_string()))
    );
    assert!(f.inbox("bob").is_empty());
}

/// Rewrites `member`'s outbox with `items` (as the app or an older run left it).
fn write_outbox(root: &Path, member: &str, items: &[member_work_sync::domain::nudge::OutboxItem]) {
    let map: serde_json::Map<String, Value> = items
        .iter()
        .map(|i| (i.id.clone(), serde_json::to_value(i).unwrap()))
        .collect();
    fs::write(
        root.join(format!(
            "teams/forge/members/{member}/.member-work-sync/outbox.json"
        )),
        json!({ "schemaVersion": 2, "items": map }).to_string(),
    )
    .unwrap();
}

/// The intent keys of `member`'s outbox items, sorted.
fn intent_keys(f: &Fixture, member: &str) -> Vec<String> {
    let mut keys: Vec<String> = f
        .outbox(member)
        .into_iter()
        .filter_map(|i| i.payload.work_sync_intent_key.clone())
        .collect();
    keys.sort();
    keys
}

#[test]
fn a_still_stuck_retry_is_keyed_by_the_base_hash_and_the_evaluation_bucket() {
    // As the app plans it: six minutes or more after the base nudge went out
    // (its last update), `agenda-sync-still-stuck:<fingerprint>:<the base
    // nudge's payload hash>:<the half hour of the status evaluation>`.
    let f = Fixture::new();
    f.queued_reconcile("jack");
    assert_eq!(f.dispatch().delivered, 1);
    let base = f.outbox("jack").remove(0);
    f.advance(6 * MINUTE - 1);
    f.queued_reconcile("jack");
    assert!(intent_keys(&f, "jack").is_empty(), "not yet six minutes");
    f.advance(1);
    f.queued_reconcile("jack");
    let status = f
        .services
        .engine
        .get_status(&team("forge"), &member("jack"), false)
        .unwrap();
    let evaluated = status.evaluated_at.ms().unwrap();
    let bucket = member_work_sync::domain::time::format_iso(evaluated - evaluated % (30 * MINUTE));
    let key = format!(
        "agenda-sync-still-stuck:{}:{}:{bucket}",
        base.agenda_fingerprint, base.payload_hash
    );
    assert_eq!(intent_keys(&f, "jack"), vec![key.clone()]);
    let item = f
        .outbox("jack")
        .into_iter()
        .find(|i| i.payload.work_sync_intent_key.as_deref() == Some(key.as_str()))
        .unwrap();
    assert_eq!(item.id, format!("member-work-sync:forge:jack:{key}"));
    assert_eq!(item.status, OutboxStatus::Pending);
}

#[test]
fn still_stuck_retries_delivered_exactly_an_hour_ago_still_count() {
    // Two still-stuck retries went out within the hour up to this evaluation,
    // the first exactly an hour before it: the app counts both (its window
    // includes its start), so no third one is planned.
    let f = Fixture::new();
    f.queued_reconcile("jack");
    assert_eq!(f.dispatch().delivered, 1);
    let mut base = f.outbox("jack").remove(0);
    f.advance(2 * 60 * MINUTE);
    let now = f.services.engine.now_ms();
    let at = |ms: i64| member_work_sync::domain::time::IsoTime::at(ms);
    base.updated_at = at(now - 90 * MINUTE);
    let retry = |minutes_ago: i64, bucket: &str| {
        let mut item = base.clone();
        let key = format!(
            "agenda-sync-still-stuck:{}:{}:{bucket}",
            base.agenda_fingerprint, base.payload_hash
        );
        item.id = format!("member-work-sync:forge:jack:{key}");
        std::sync::Arc::make_mut(&mut item.payload).work_sync_intent_key = Some(key);
        item.updated_at = at(now - minutes_ago * MINUTE);
        item.delivered_at = Some(item.updated_at.clone());
        item
    };
    write_outbox(
        &f.root,
        "jack",
        &[base.clone(), retry(60, "first"), retry(20, "second")],
    );
    f.queued_reconcile("jack");
    assert_eq!(f.outbox("jack").len(), 3, "no third retry");
    let planner = lines_from(&f.root, "jack", "nudge_planner");
    let last = planner.last().unwrap();
    assert_eq!(
        (last.0.as_str(), last.1.as_str()),
        ("nudge_skipped", "existing")
    );
}

#[test]
fn a_nudge_whose_lease_ran_out_since_the_last_reconcile_is_delivered() {
    // The app's dispatcher decides again right before delivery, on the board
    // and the stored lease at that moment: jack's nudge was planned, he then
    // reported still_working with a one-minute lease and never again; once
    // the lease has ended the nudge goes out, although the stored status
    // still says still_working.
    let f = Fixture::new();
    f.queued_reconcile("jack");
    assert_eq!(f.outbox("jack")[0].status, OutboxStatus::Pending);
    let status = f
        .services
        .engine
        .get_status(&team("forge"), &member("jack"), false)
        .unwrap();
    let result = f
        .services
        .reconciler
        .report(
            &json!({"teamName": "forge", "memberName": "jack", "state": "still_working",
                        "agendaFingerprint": status.agenda.fingerprint,
                        "reportToken": status.report_token, "leaseTtlMs": 60_000}),
        )
        .unwrap();
    assert!(result.accepted);
    let held = f
        .services
        .engine
        .get_status(&team("forge"), &member("jack"), false)
        .unwrap();
    assert_eq!(held.state, StatusState::StillWorking);
    f.advance(2 * MINUTE);
    let summary = f.dispatch();
    assert_eq!(
        (summary.claimed, summary.delivered, summary.superseded),
        (1, 1, 0)
    );
    assert_eq!(f.inbox("jack").len(), 1);
}

#[test]
fn a_nudge_stays_due_once_a_rejected_report_replaced_the_lease() {
    // As the app's dispatcher: the stored report decides again right before
    // delivery, and a rejected report holds no lease even where an accepted
    // one came before it. The nudge is not overtaken (superseded) but held
    // back by the readiness metrics (one report in two rejected) for a retry.
    let f = Fixture::new();
    f.queued_reconcile("jack");
    let status = f
        .services
        .engine
        .get_status(&team("forge"), &member("jack"), false)
        .unwrap();
    let report = |token: Value| {
        f.services
            .reconciler
            .report(
                &json!({"teamName": "forge", "memberName": "jack", "state": "still_working",
                        "agendaFingerprint": status.agenda.fingerprint, "reportToken": token}),
            )
            .unwrap()
    };
    assert!(report(json!(status.report_token)).accepted);
    assert_eq!(report(json!("garbage")).code, "invalid_report_token");
    let summary = f.dispatch();
    assert_eq!(
        (summary.claimed, summary.superseded, summary.retryable),
        (1, 0, 1)
    );
    let item = &f.outbox("jack")[0];
    assert_eq!(item.status, OutboxStatus::FailedRetryable);
    assert_eq!(item.last_error.as_deref(), Some("blocking_metrics"));
}

#[test]
fn a_still_stuck_retry_counts_only_still_stuck_deliveries_against_the_hourly_limit() {
    // The app's dispatcher checks a still-stuck retry against the still-stuck
    // retries delivered in the hour, not every nudge: after the agenda's nudge
    // and a status-only check went out within the hour, the retry still goes.
    let f = Fixture::new();
    let run = |trigger: Trigger| {
        f.services
            .engine
            .reconcile_and_plan(
                &team("forge"),
                &member("jack"),
                ReconciledBy::Queue,
                &[trigger],
            )
            .unwrap();
    };
    run(Trigger::ManualRefresh);
    assert_eq!(f.dispatch().delivered, 1, "agenda nudge");
    f.advance(MINUTE);
    run(Trigger::TurnSettled);
    assert_eq!(f.dispatch().delivered, 1, "status-only check");
    f.advance(7 * MINUTE);
    run(Trigger::ManualRefresh);
    let summary = f.dispatch();
    assert_eq!(
        (summary.claimed, summary.delivered),
        (1, 1),
        "still-stuck retry"
    );
    let keys = intent_keys(&f, "jack");
    assert!(keys[0].starts_with("agenda-sync-still-stuck:"), "{keys:?}");
    assert_eq!(f.inbox("jack").len(), 3);
}

/// An app whose `reviewPickupDelivery.canDeliver` answers `can_deliver`
/// (`None`: the option is not given) and whose escalation port records
/// what it is handed.
struct PickupApp {
    can_deliver: Option<Result<(), String>>,
    deliver: Option<Result<member_work_sync::application::host::ReviewPickupDelivered, String>>,
    escalations: Escalations,
}

impl member_work_sync::application::host::Host for PickupApp {
    fn team_active(&self, _: &TeamName) -> Option<bool> {
        None
    }
    fn member_active(&self, _: &TeamName, _: &MemberName) -> Option<bool> {
        None
    }
    fn can_dispatch_nudges(&self, _: &TeamName) -> bool {
        true
    }
    fn lifecycle_active_teams(&self) -> Option<Vec<String>> {
        None
    }
    fn control_url(&self) -> member_work_sync::application::host::ControlUrl {
        member_work_sync::application::host::ControlUrl::NotResolved
    }
    fn busy(
        &self,
        _: &member_work_sync::application::host::BusyQuestion<'_>,
        _: member_work_sync::application::host::BusyRank,
    ) -> Option<member_work_sync::application::host::HostBusy> {
        None
    }
    fn delivery_wake(
        &self,
        _: &member_work_sync::application::host::DeliveryWake<'_>,
    ) -> Result<(), String> {
        Ok(())
    }
    fn review_pickup_can_deliver(
        &self,
        _: &TeamName,
        _: &MemberName,
        _: Option<ProviderId>,
    ) -> Option<Result<(), String>> {
        self.can_deliver.clone()
    }
    fn review_pickup_deliver(
        &self,
        _: &member_work_sync::application::host::ReviewPickupRequest<'_>,
    ) -> Option<Result<member_work_sync::application::host::ReviewPickupDelivered, String>> {
        self.deliver.clone()
    }
    fn review_pickup_escalate(
        &self,
        escalation: &member_work_sync::application::host::ReviewPickupEscalation<'_>,
    ) -> Option<Result<(), String>> {
        self.escalations.lock().unwrap().push((
            escalation.member_name.to_string(),
            escalation.reason.to_string(),
            escalation.review_request_event_ids.to_vec(),
        ));
        Some(Err("the lead's inbox is gone".into()))
    }
}

type Escalations = std::sync::Arc<std::sync::Mutex<Vec<(String, String, Vec<String>)>>>;

fn connect_pickup_app(f: &Fixture, can_deliver: Option<Result<(), String>>) -> Escalations {
    let escalations = Escalations::default();
    f.services.host.connect(Box::new(PickupApp {
        can_deliver,
        deliver: None,
        escalations: escalations.clone(),
    }));
    escalations
}

#[test]
fn a_review_pickup_the_app_refuses_is_escalated_to_the_app_with_its_reason() {
    // The app's `canDeliver` refuses bob's pickup (his runtime cannot take a
    // direct prompt): the planner journals the app's reason in place of the
    // missing port, hands the escalation to the app's port (whose failure
    // changes nothing) and plans nothing.
    let f = Fixture::new();
    let escalations = connect_pickup_app(&f, Some(Err("runtime_not_opencode".into())));
    f.queued_reconcile("bob");
    assert!(f.outbox("bob").is_empty());
    let why = "runtime_not_opencode";
    assert_eq!(
        lines_from(&f.root, "bob", "nudge_planner"),
        [
            ("review_pickup_delivery_unavailable", why, json!([why])),
            ("review_pickup_escalated", why, Value::Null),
            (
                "nudge_skipped",
                "review_pickup_delivery_unavailable",
                Value::Null
            ),
        ]
        .map(|(e, r, d)| (e.to_string(), r.to_string(), d))
    );
    let escalated = escalations.lock().unwrap().clone();
    assert_eq!(escalated.len(), 1, "{escalated:?}");
    assert_eq!(
        (escalated[0].0.as_str(), escalated[0].1.as_str()),
        ("bob", why)
    );
    assert!(!escalated[0].2.is_empty(), "the review requests are named");
}

#[test]
fn a_review_pickup_the_app_can_deliver_is_planned_and_not_escalated() {
    let f = Fixture::new();
    let escalations = connect_pickup_app(&f, Some(Ok(())));
    f.queued_reconcile("bob");
    let items = f.outbox("bob");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].status, OutboxStatus::Pending);
    let planner = lines_from(&f.root, "bob", "nudge_planner");
    assert_eq!(planner.last().unwrap().0, "nudge_planned", "{planner:?}");
    assert!(escalations.lock().unwrap().is_empty());
}

#[test]
fn a_stored_review_pickup_the_app_now_refuses_is_superseded_and_escalated() {
    // Planned while the app could deliver; by dispatch time it refuses.
    let f = Fixture::new();
    connect_pickup_app(&f, Some(Ok(())));
    f.queued_reconcile("bob");
    assert_eq!(f.outbox("bob").len(), 1);
    let escalations = connect_pickup_app(&f, Some(Err("member_offline".into())));
    let summary = f.dispatch();
    assert_eq!((summary.claimed, summary.superseded), (1, 1));
    let items = f.outbox("bob");
    let reason = "review_pickup_delivery_unavailable:member_offline";
    assert_eq!(items[0].status, OutboxStatus::Superseded);
    assert_eq!(items[0].last_error.as_deref(), Some(reason));
    let dispatcher: Vec<(String, String)> = lines_from(&f.root, "bob", "nudge_dispatcher")
        .into_iter()
        .map(|(e, r, _)| (e, r))
        .collect();
    assert_eq!(
        dispatcher,
        [
            ("review_pickup_delivery_unavailable", reason),
            ("review_pickup_escalated", reason)
        ]
        .map(|(e, r)| (e.to_string(), r.to_string()))
    );
    let escalated = escalations.lock().unwrap().clone();
    assert_eq!(escalated.len(), 1);
    assert_eq!(escalated[0].1, reason);
    assert!(f.inbox("bob").is_empty());
}

/// (app's answer, item status, last error, dispatcher lines, escalations)
type PickupCase = (
    Result<member_work_sync::application::host::ReviewPickupDelivered, String>,
    OutboxStatus,
    Option<&'static str>,
    Vec<(&'static str, &'static str)>,
    usize,
);

#[test]
fn the_apps_review_pickup_delivery_answer_decides_the_items_end() {
    use member_work_sync::application::host::{ReviewPickupDelivered, ReviewPickupFailure};
    let refused = |failure, message: &str| {
        Ok(ReviewPickupDelivered::Refused {
            failure,
            message: message.into(),
            diagnostics: vec![],
            retry_at: None,
        })
    };
    let cases: Vec<PickupCase> = vec![
        (
            Ok(ReviewPickupDelivered::Accepted {
                response_proven: false,
                message_id: "opencode-prompt-1".into(),
                diagnostics: vec![],
            }),
            OutboxStatus::Delivered,
            None,
            vec![
                ("review_pickup_member_nudge_delivered", "prompt_accepted"),
                ("nudge_delivered", "review_pickup:prompt_accepted"),
            ],
            0,
        ),
        (
            refused(ReviewPickupFailure::Retryable, "session busy"),
            OutboxStatus::FailedRetryable,
            Some("session busy"),
            vec![("review_pickup_wake_failed_retryable", "session busy")],
            0,
        ),
        (
            refused(ReviewPickupFailure::CapabilityAbsent, "no opencode session"),
            OutboxStatus::Superseded,
            Some("no opencode session"),
            vec![
                ("review_pickup_delivery_unavailable", "no opencode session"),
                ("review_pickup_escalated", "no opencode session"),
            ],
            1,
        ),
        (
            refused(ReviewPickupFailure::Terminal, "member removed"),
            OutboxStatus::FailedTerminal,
            Some("member removed"),
            vec![("nudge_skipped", "member removed")],
            0,
        ),
        (
            Err("Error: bridge down".to_string()),
            OutboxStatus::FailedRetryable,
            Some("Error: bridge down"),
            vec![("nudge_retryable", "Error: bridge down")],
            0,
        ),
    ];
    for (answer, status, last_error, lines, escalated) in cases {
        let f = Fixture::new();
        let escalations = Escalations::default();
        f.services.host.connect(Box::new(PickupApp {
            can_deliver: Some(Ok(())),
            deliver: Some(answer.clone()),
            escalations: escalations.clone(),
        }));
        f.queued_reconcile("bob");
        f.dispatch();
        let items = f.outbox("bob");
        assert_eq!(items.len(), 1, "{answer:?}");
        assert_eq!(items[0].status, status, "{answer:?}");
        assert_eq!(items[0].last_error.as_deref(), last_error, "{answer:?}");
        let dispatcher: Vec<(String, String)> = lines_from(&f.root, "bob", "nudge_dispatcher")
            .into_iter()
            .map(|(e, r, _)| (e, r))
            .collect();
        let lines: Vec<(String, String)> = lines
            .into_iter()
            .map(|(e, r)| (e.to_string(), r.to_string()))
            .collect();
        assert_eq!(dispatcher, lines, "{answer:?}");
        // The inbox row is written before the app is asked, whatever it says.
        assert_eq!(f.inbox("bob").len(), 1, "{answer:?}");
        assert_eq!(escalations.lock().unwrap().len(), escalated, "{answer:?}");
    }
}

/// An app whose `proofMissingRecoveryGuard` records the team and member it
/// is asked about and holds the recovery for good.
struct RecoveryGuardApp {
    asked: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
}

impl member_work_sync::application::host::Host for RecoveryGuardApp {
    fn team_active(&self, _: &TeamName) -> Option<bool> {
        None
    }
    fn member_active(&self, _: &TeamName, _: &MemberName) -> Option<bool> {
        None
    }
    fn can_dispatch_nudges(&self, _: &TeamName) -> bool {
        true
    }
    fn lifecycle_active_teams(&self) -> Option<Vec<String>> {
        None
    }
    fn control_url(&self) -> member_work_sync::application::host::ControlUrl {
        member_work_sync::application::host::ControlUrl::NotResolved
    }
    fn busy(
        &self,
        _: &member_work_sync::application::host::BusyQuestion<'_>,
        _: member_work_sync::application::host::BusyRank,
    ) -> Option<member_work_sync::application::host::HostBusy> {
        None
    }
    fn delivery_wake(
        &self,
        _: &member_work_sync::application::host::DeliveryWake<'_>,
    ) -> Result<(), String> {
        Ok(())
    }
    fn proof_missing_recovery(
        &self,
        question: &member_work_sync::application::host::RecoveryQuestion<'_>,
    ) -> Option<Result<member_work_sync::application::host::RecoveryVerdict, String>> {
        self.asked.lock().unwrap().push((
            question.team_name.to_string(),
            question.member_name.to_string(),
        ));
        Some(Ok(
            member_work_sync::application::host::RecoveryVerdict::Hold {
                reason: "proof_missing_recovery_suppressed".into(),
                retryable: false,
                retry_at: None,
            },
        ))
    }
}

#[test]
fn a_dispatch_asks_the_app_about_its_own_team_whatever_team_an_item_names() {
    // The dispatcher serves forge's outboxes: its questions to the app name
    // forge and the member as it checked the name, also for an item whose
    // stored teamName was edited to another team or to a name unsafe as a
    // folder (as the busy and can-deliver questions always did).
    for stored_team in ["forge", "atlas", "../forge", ""] {
        let f = Fixture::new();
        let asked = std::sync::Arc::default();
        f.services.host.connect(Box::new(RecoveryGuardApp {
            asked: std::sync::Arc::clone(&asked),
        }));
        f.queued_reconcile("jack");
        let mut item = f.outbox("jack").remove(0);
        item.team_name = stored_team.into();
        std::sync::Arc::make_mut(&mut item.payload).work_sync_intent_key =
            Some("proof-missing:m-1".into());
        write_outbox(&f.root, "jack", &[item]);
        assert_eq!(f.dispatch().claimed, 1, "{stored_team:?}");
        assert_eq!(
            *asked.lock().unwrap(),
            [("forge".to_string(), "jack".to_string())],
            "{stored_team:?}"
        );
        assert!(f.inbox("jack").is_empty(), "{stored_team:?}");
    }
}

#[test]
fn a_dispatch_delivers_and_records_in_its_own_team_whatever_team_an_item_names() {
    // The outbox file is the member's own, in forge's folder: an item whose
    // stored teamName was edited still goes to the inbox of the member whose
    // outbox holds it, and its delivery is recorded there. Another team's
    // folders are never written (nor a name unsafe as a folder followed).
    for stored_team in ["forge", "atlas", "../forge", ""] {
        let f = Fixture::new();
        fs::create_dir_all(f.root.join("teams/atlas")).unwrap();
        f.queued_reconcile("jack");
        let mut item = f.outbox("jack").remove(0);
        item.team_name = stored_team.into();
        write_outbox(&f.root, "jack", &[item]);
        let summary = f.dispatch();
        assert_eq!(
            (summary.claimed, summary.delivered, summary.failed),
            (1, 1, 0),
            "{stored_team:?}"
        );
        assert_eq!(f.inbox("jack").len(), 1, "{stored_team:?}");
        assert_eq!(
            f.outbox("jack")[0].status,
            OutboxStatus::Delivered,
            "{stored_team:?}"
        );
        assert!(
            !f.root.join("teams/atlas/inboxes").exists(),
            "{stored_team:?}"
        );
    }
}
