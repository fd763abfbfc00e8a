//! Unit tests of the engine's use cases over the in-memory fakes of
//! [`super::fakes`]: duplicate events, waiting for in-flight work, retries.

use std::sync::{Arc, Mutex};
use std::thread;

use super::fakes::FakeWorld;
use super::log::LogCode;
use super::ports::{StatusStore, StoredStatus};
use super::queue::{FinishOutcome, Trigger, MAX_RETRIES, RETRY_DELAY_MS};
use super::reconcile::WorkSyncError;
use super::router::TeamChangeEvent;
use crate::domain::audit::AuditKind;
use crate::domain::time::EpochMs;

/// A checked team name of a test.
fn team(name: &str) -> crate::domain::names::TeamName {
    crate::domain::names::TeamName::parse(name).unwrap()
}

/// A checked member name of a test.
fn member(name: &str) -> crate::domain::names::MemberName {
    crate::domain::names::MemberName::parse(name).unwrap()
}

const NOW: EpochMs = 1_800_000_000_000;

fn event(kind: &str, detail: &str) -> TeamChangeEvent {
    TeamChangeEvent {
        kind: kind.into(),
        team_name: "forge".into(),
        detail: Some(detail.into()),
        ..TeamChangeEvent::default()
    }
}

/// `(member, trigger reasons)` of every waiting item.
fn queued(world: &FakeWorld) -> Vec<(String, Vec<&'static str>)> {
    world
        .engine
        .diagnostics()
        .queued_items
        .into_iter()
        .map(|i| (i.member_name, i.trigger_reasons))
        .collect()
}

/// Events noted in order, the items then queued as `(member, triggers)`,
/// and the `enqueued` and `coalesced` counters.
type DuplicateCase = (
    Vec<TeamChangeEvent>,
    Vec<(&'static str, Vec<&'static str>)>,
    u64,
    u64,
);

#[test]
fn a_repeated_event_joins_the_queued_item_and_an_announced_turn_is_not_routed_again() {
    let settled = r#"{"memberName":"jack","provider":"claude","sourceId":"turn-1"}"#;
    let unknown = r#"{"memberName":"jack","provider":"claude","sourceId":"turn-2"}"#;
    let cases: [DuplicateCase; 4] = [
        (
            vec![event("member-spawn", "jack"), event("member-spawn", "jack")],
            vec![("jack", vec!["member_spawned"])],
            1,
            1,
        ),
        (
            vec![event("config", ""), event("config", "")],
            vec![
                ("jack", vec!["config_changed"]),
                ("jill", vec!["config_changed"]),
            ],
            2,
            2,
        ),
        (
            vec![
                event("member-turn-settled", unknown),
                event("member-turn-settled", unknown),
            ],
            vec![("jack", vec!["turn_settled"])],
            1,
            1,
        ),
        // The drain handled turn-1 (queued it, announced it): an app
        // forwarding the announcement back changes nothing.
        (vec![event("member-turn-settled", settled)], vec![], 0, 0),
    ];
    for (events, items, enqueued, coalesced) in cases {
        let world = FakeWorld::new(NOW, &["jack", "jill"]);
        world.settled_turns.remember("turn-1");
        for e in &events {
            world.engine.note_team_change(e);
        }
        let expected: Vec<(String, Vec<&str>)> =
            items.into_iter().map(|(m, t)| (m.to_string(), t)).collect();
        assert_eq!(queued(&world), expected, "{events:?}");
        let diagnostics = world.engine.diagnostics();
        assert_eq!(
            (diagnostics.enqueued, diagnostics.coalesced),
            (enqueued, coalesced),
            "{events:?}"
        );
    }
}

/// Runs the due items like the worker does, reporting each finish.
fn run_due(world: &FakeWorld) -> Vec<FinishOutcome> {
    let mut outcomes = Vec::new();
    for (key, item) in world.engine.take_due() {
        let ok = world.engine.run(&item).is_ok();
        outcomes.push(finish_outcome(world, &key, &item, ok));
    }
    outcomes
}

/// Finishes a run and reads the outcome back from the journal.
fn finish_outcome(
    world: &FakeWorld,
    key: &super::queue::QueueKey,
    item: &super::queue::QueueItem,
    ok: bool,
) -> FinishOutcome {
    world.engine.finish(key, item, ok);
    let last = world
        .journal
        .events
        .lock()
        .unwrap()
        .last()
        .cloned()
        .unwrap();
    match last.kind {
        AuditKind::QueueReconciled if last.metadata["followUp"] == true => FinishOutcome::FollowUp,
        AuditKind::QueueReconciled => FinishOutcome::Done,
        AuditKind::QueueRetryScheduled => FinishOutcome::RetryScheduled(
            crate::domain::time::parse_iso(last.metadata["runAt"].as_str().unwrap()).unwrap(),
        ),
        AuditKind::QueueDropped => FinishOutcome::DroppedAfterRetries,
        other => panic!("unexpected journal kind {other}"),
    }
}

#[test]
fn a_failing_reconcile_is_retried_every_30s_then_dropped() {
    let retries = MAX_RETRIES as usize;
    // (store failures, outcome of each attempt, log codes)
    let cases: [(u32, Vec<FinishOutcome>, Vec<LogCode>); 3] = [
        (0, vec![FinishOutcome::Done], vec![]),
        (
            1,
            vec![
                FinishOutcome::RetryScheduled(NOW + RETRY_DELAY_MS),
                FinishOutcome::Done,
            ],
            vec![LogCode::QueueRunFailed, LogCode::QueueRetryScheduled],
        ),
        (
            MAX_RETRIES + 1,
            (1..=retries)
                .map(|n| FinishOutcome::RetryScheduled(NOW + n as EpochMs * RETRY_DELAY_MS))
                .chain([FinishOutcome::DroppedAfterRetries])
                .collect(),
            [LogCode::QueueRunFailed, LogCode::QueueRetryScheduled]
                .repeat(retries)
                .into_iter()
                .chain([LogCode::QueueRunFailed, LogCode::QueueDropped])
                .collect(),
        ),
    ];
    for (failures, expected, codes) in cases {
        let world = FakeWorld::new(NOW, &["jack"]);
        world.store.fail_next(failures);
        world
            .engine
            .enqueue("forge", "jack", Trigger::ManualRefresh);
        let mut outcomes = Vec::new();
        while let Some(at) = world.engine.next_run_at() {
            world.clock.set(at.max(world.engine.now_ms()));
            outcomes.extend(run_due(&world));
        }
        assert_eq!(outcomes, expected, "{failures} failures");
        assert_eq!(
            *world.log.codes.lock().unwrap(),
            codes,
            "{failures} failures"
        );
        let stored = world.store.peek("forge", "jack").unwrap();
        assert_eq!(
            matches!(stored, StoredStatus::Current(_)),
            expected.last() == Some(&FinishOutcome::Done),
            "{failures} failures"
        );
    }
}

/// Waits (without a time limit) until `team` refuses new work: a deletion
/// running on another thread has put up its fence.
fn until_fenced(world: &FakeWorld) {
    while !matches!(
        world.engine.with_team("forge", || Ok(())),
        Err(WorkSyncError::TeamQuiesced(_))
    ) {
        thread::yield_now();
    }
}

#[test]
fn team_deletion_waits_for_an_admitted_reconcile() {
    let world = Arc::new(FakeWorld::new(NOW, &["jack"]));
    let held = world.store.hold_next_update();
    let trail = world.store.trail.clone();
    let reconcile = {
        let world = world.clone();
        thread::spawn(move || {
            world
                .engine
                .refresh_status(&team("forge"), &member("jack"))
                .is_ok()
        })
    };
    held.entered.recv().unwrap();
    let deletion = {
        let (world, trail) = (world.clone(), trail.clone());
        thread::spawn(move || {
            world
                .engine
                .prepare_team_deletion(&team("forge"), None)
                .unwrap();
            trail.lock().unwrap().push("deletion returned");
        })
    };
    until_fenced(&world);
    held.release.send(()).unwrap();
    assert!(reconcile.join().unwrap());
    deletion.join().unwrap();
    assert_eq!(
        *trail.lock().unwrap(),
        ["update finished", "deletion returned"]
    );
}

#[test]
fn waiting_for_idle_returns_only_after_the_running_reconcile_finished() {
    let world = Arc::new(FakeWorld::new(NOW, &["jack"]));
    let held = world.store.hold_next_update();
    let trail: Arc<Mutex<Vec<&'static str>>> = world.store.trail.clone();
    world
        .engine
        .enqueue("forge", "jack", Trigger::ManualRefresh);
    let taken = world.engine.take_due();
    assert_eq!(taken.len(), 1);
    let runner = {
        let world = world.clone();
        thread::spawn(move || {
            for (key, item) in taken {
                let ok = world.engine.run(&item).is_ok();
                world.engine.finish(&key, &item, ok);
            }
        })
    };
    held.entered.recv().unwrap();
    let idle = {
        let (world, trail) = (world.clone(), trail.clone());
        thread::spawn(move || {
            world.engine.wait_idle();
            trail.lock().unwrap().push("idle");
        })
    };
    assert_eq!(world.engine.running(), 1);
    held.release.send(()).unwrap();
    runner.join().unwrap();
    idle.join().unwrap();
    assert_eq!(*trail.lock().unwrap(), ["update finished", "idle"]);
    assert_eq!(world.engine.running(), 0);
}
