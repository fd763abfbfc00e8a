//! Unit tests of the engine's use cases over the in-memory fakes of
//! [`super::fakes`]: duplicate events, waiting for in-flight work, retries,
//! and one table per policy (team gate, runtime stall, nudge suppression);
//! in [`use_cases`], what each use case writes and answers.

mod use_cases;

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
        assert_eq!(world.queued(), expected, "{events:?}");
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
            .enqueue(&team("forge"), &member("jack"), Trigger::ManualRefresh);
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
        let stored = world
            .store
            .peek(
                &crate::domain::names::TeamName::parse("forge").unwrap(),
                &crate::domain::names::MemberName::parse("jack").unwrap(),
            )
            .unwrap();
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
        world.engine.with_team(&team("forge"), || Ok(())),
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
        .enqueue(&team("forge"), &member("jack"), Trigger::ManualRefresh);
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

/// One team lifecycle call of the app, for the gate's table.
#[derive(Debug, Clone, Copy)]
enum Lifecycle {
    /// A `member-spawn` event for jack.
    Spawn,
    /// `prepareTeamDeletion`.
    Prepare,
    /// `completeTeamDeletion`.
    Complete,
    /// `resumeTeam`.
    Resume,
    /// A `config` event announcing `config.json` written (it is there).
    ConfigWritten,
}

fn apply(world: &FakeWorld, step: Lifecycle) {
    let forge = team("forge");
    match step {
        Lifecycle::Spawn => world
            .engine
            .note_team_change(&event("member-spawn", "jack")),
        Lifecycle::Prepare => world.engine.prepare_team_deletion(&forge, None).unwrap(),
        Lifecycle::Complete => world.engine.complete_team_deletion(&forge).unwrap(),
        Lifecycle::Resume => world.engine.resume_team(&forge).unwrap(),
        Lifecycle::ConfigWritten => world
            .engine
            .note_team_change(&event("config", "config.json")),
    }
}

/// The journal kinds recorded so far, oldest first.
fn journal_kinds(world: &FakeWorld) -> Vec<AuditKind> {
    let events = world.journal.events.lock().unwrap();
    events.iter().map(|e| e.kind).collect()
}

#[test]
fn a_deleting_or_deleted_team_takes_no_work_until_it_is_resumed() {
    use Lifecycle::*;
    const SPAWNED: (&str, &[&str]) = ("jack", &["member_spawned"]);
    const RESCANNED: (&str, &[&str]) = ("jack", &["startup_scan", "member_spawned"]);
    // (steps, then a `member-spawn` event: the items then queued, the
    // journal lines of that event, the `enqueued` and `coalesced`
    // counters, and whether a refresh is refused as quiesced)
    type GateCase = (
        &'static [Lifecycle],
        &'static [(&'static str, &'static [&'static str])],
        &'static [AuditKind],
        (u64, u64),
        bool,
    );
    let cases: [GateCase; 10] = [
        (&[], &[SPAWNED], &[AuditKind::QueueEnqueued], (1, 0), false),
        // Being deleted: the event is dropped, nothing is journaled.
        (&[Prepare], &[], &[], (0, 0), true),
        // What was queued before the deletion is dropped too.
        (&[Spawn, Prepare], &[], &[], (1, 0), true),
        // A completed deletion fences, with or without a prepare first.
        (&[Complete], &[], &[], (0, 0), true),
        (&[Prepare, Complete], &[], &[], (0, 0), true),
        // A quiesced team is not deleted: its config coming back resumes nothing.
        (&[Prepare, ConfigWritten], &[], &[], (0, 0), true),
        // Resumed: one startup scan, which the event joins.
        (
            &[Prepare, Resume],
            &[RESCANNED],
            &[AuditKind::QueueCoalesced],
            (1, 1),
            false,
        ),
        (
            &[Complete, Resume],
            &[RESCANNED],
            &[AuditKind::QueueCoalesced],
            (1, 1),
            false,
        ),
        // Its config came back: resumed once; a later resume scans no more.
        (
            &[Complete, ConfigWritten],
            &[RESCANNED],
            &[AuditKind::QueueCoalesced],
            (1, 1),
            false,
        ),
        (
            &[Complete, ConfigWritten, Resume],
            &[RESCANNED],
            &[AuditKind::QueueCoalesced],
            (1, 1),
            false,
        ),
    ];
    for (steps, items, kinds, counters, quiesced) in cases {
        let world = FakeWorld::new(NOW, &["jack"]);
        for step in steps {
            apply(&world, *step);
        }
        let before = journal_kinds(&world).len();
        apply(&world, Spawn);
        let expected: Vec<(String, Vec<&str>)> = items
            .iter()
            .map(|(m, t)| (m.to_string(), t.to_vec()))
            .collect();
        assert_eq!(world.queued(), expected, "{steps:?}");
        assert_eq!(&journal_kinds(&world)[before..], kinds, "{steps:?}");
        let diagnostics = world.engine.diagnostics();
        assert_eq!(
            (diagnostics.enqueued, diagnostics.coalesced),
            counters,
            "{steps:?}"
        );
        let refreshed = world.engine.refresh_status(&team("forge"), &member("jack"));
        assert_eq!(
            matches!(refreshed, Err(WorkSyncError::TeamQuiesced(_))),
            quiesced,
            "{steps:?}"
        );
    }
}

/// Runs every queued item now, as the worker would once it is due.
fn run_queue_now(world: &FakeWorld) {
    while let Some(at) = world.engine.next_run_at() {
        world.clock.set(at.max(world.engine.now_ms()));
        run_due(world);
    }
}

/// The stored status of jack.
fn stored_jack(world: &FakeWorld) -> crate::domain::status::MemberStatus {
    world
        .store
        .peek(
            &crate::domain::names::TeamName::parse("forge").unwrap(),
            &crate::domain::names::MemberName::parse("jack").unwrap(),
        )
        .unwrap()
        .into_status()
        .expect("jack has a stored status")
}

#[test]
fn a_runtime_signal_on_the_same_agenda_still_needing_sync_is_a_stall() {
    use crate::domain::diagnostic::{Diagnostic, StallTrigger};
    // (why, a status stored first, a task given before the queued run,
    // the queued trigger, the stall observed)
    let cases: [(&str, bool, bool, Trigger, Option<StallTrigger>); 6] = [
        (
            "a turn settled",
            true,
            false,
            Trigger::TurnSettled,
            Some(StallTrigger::TurnSettled),
        ),
        (
            "a tool finished",
            true,
            false,
            Trigger::ToolFinished,
            Some(StallTrigger::ToolFinished),
        ),
        (
            "runtime activity",
            true,
            false,
            Trigger::RuntimeActivity,
            Some(StallTrigger::RuntimeActivity),
        ),
        (
            "no runtime signal",
            true,
            false,
            Trigger::ManualRefresh,
            None,
        ),
        ("the agenda moved", true, true, Trigger::TurnSettled, None),
        (
            "nothing stored before",
            false,
            false,
            Trigger::TurnSettled,
            None,
        ),
    ];
    for (why, stored_first, agenda_moves, trigger, expected) in cases {
        let world = FakeWorld::new(NOW, &["jack"]);
        world.teams.give_task("forge", "1", "jack");
        if stored_first {
            world
                .engine
                .refresh_status(&team("forge"), &member("jack"))
                .unwrap();
        }
        if agenda_moves {
            world.teams.give_task("forge", "2", "jack");
        }
        world
            .engine
            .enqueue(&team("forge"), &member("jack"), trigger);
        run_queue_now(&world);
        let status = stored_jack(&world);
        assert_eq!(
            status.state,
            crate::domain::status::StatusState::NeedsSync,
            "{why}"
        );
        let stall_diagnostics: Vec<&str> = status
            .diagnostics
            .iter()
            .filter(|d| Diagnostic::parse(d).is_some_and(Diagnostic::is_runtime_stall))
            .map(String::as_str)
            .collect();
        let expected_diagnostics: Vec<&str> = expected
            .map(|t| {
                vec![
                    Diagnostic::RuntimeStall.as_str(),
                    Diagnostic::StallTrigger(t).as_str(),
                ]
            })
            .unwrap_or_default();
        assert_eq!(stall_diagnostics, expected_diagnostics, "{why}");
        let events = world.journal.events.lock().unwrap();
        let observed: Vec<String> = events
            .iter()
            .filter(|e| e.kind == AuditKind::RuntimeStallObserved)
            .map(|e| e.metadata["reason"].as_str().unwrap().to_string())
            .collect();
        let expected_reasons: Vec<String> = expected
            .map(|t| format!("same_agenda_still_needs_sync_after_{}", t.as_str()))
            .into_iter()
            .collect();
        assert_eq!(observed, expected_reasons, "{why}");
    }
}

#[test]
fn four_delivered_nudges_of_the_same_agenda_suppress_the_next_one() {
    use crate::domain::diagnostic::{has, Diagnostic};
    use crate::domain::nudge::{ensure_pending, plan_nudge, OutboxStatus};
    // (why, delivered nudges of the current agenda, of an older one,
    // suppressed)
    let cases: [(&str, usize, usize, bool); 4] = [
        ("none delivered", 0, 0, false),
        ("three delivered", 3, 0, false),
        ("four delivered", 4, 0, true),
        ("three of this agenda, one of an older one", 3, 1, false),
    ];
    for (why, current, older, suppressed) in cases {
        let world = FakeWorld::new(NOW, &["jack"]);
        world.teams.give_task("forge", "1", "jack");
        let first = world
            .engine
            .refresh_status(&team("forge"), &member("jack"))
            .unwrap();
        assert!(first.shadow.as_ref().unwrap().would_nudge, "{why}");
        let planned = plan_nudge(&first).expect("a needs-sync status plans a nudge");
        for n in 0..current + older {
            let (mut item, _) =
                ensure_pending(None, &planned, &team("forge"), &member("jack"), NOW);
            item.id = format!("{}-{n}", item.id);
            if n >= current {
                item.agenda_fingerprint = "agenda:v1:older".into();
            }
            item.status = OutboxStatus::Delivered;
            item.delivered_at = Some(crate::domain::time::IsoTime::at(NOW + 1));
            world.outbox.put(item);
        }
        world.clock.set(NOW + 2);
        let before = journal_kinds(&world).len();
        let status = world
            .engine
            .refresh_status(&team("forge"), &member("jack"))
            .unwrap();
        let shadow = status.shadow.as_ref().unwrap();
        assert_eq!(shadow.would_nudge, !suppressed, "{why}");
        assert_eq!(
            shadow.nudge_suppression.as_ref().map(|s| s.delivered_count),
            suppressed.then_some(current),
            "{why}"
        );
        assert_eq!(
            has(&status.diagnostics, Diagnostic::NudgeSuppressed),
            suppressed,
            "{why}"
        );
        assert_eq!(stored_jack(&world), status, "{why}");
        let kinds = &journal_kinds(&world)[before..];
        assert_eq!(
            kinds.contains(&AuditKind::NudgeSuppressed),
            suppressed,
            "{why}: {kinds:?}"
        );
    }
}
