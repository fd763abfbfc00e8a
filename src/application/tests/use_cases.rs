//! Use-case tests over the in-memory fakes of [`crate::application::fakes`]: what a
//! report writes (or does not) for each outcome, how a replayed intent is
//! finished, and the reconcile that plans a member's nudge into the outbox. The rules they decide on (the
//! validator's order, activation, the outbox's `ensure`) have their own
//! tests in `domain`; these check what the use case does with them.

use serde_json::{json, Value};

use crate::application::fakes::FakeWorld;
use crate::application::ports::{
    AuditEvent, IntentStatus, ReportIntent, ReportIntentStore, StatusStore, StoredStatus,
};
use crate::application::reconcile::WorkSyncError;
use crate::application::report::ReplaySummary;
use crate::domain::audit::AuditKind;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::status::{MemberStatus, ReconciledBy, StatusState};
use crate::domain::team::ProviderId;
use crate::domain::time::{format_iso, EpochMs, IsoTime};
use crate::domain::token::{TokenCheck, TOKEN_TTL_MS};

const NOW: EpochMs = 1_800_000_000_000;
const MINUTE: EpochMs = 60_000;

fn team(name: &str) -> TeamName {
    TeamName::parse(name).unwrap()
}

fn member(name: &str) -> MemberName {
    MemberName::parse(name).unwrap()
}

/// A team `forge` of jack and jill, where jack owns task 1 (he needs sync).
fn world() -> FakeWorld {
    let world = FakeWorld::new(NOW, &["jack", "jill"]);
    world.teams.give_task("forge", "1", "jack");
    world
}

/// Reconciles `name` of `forge` as a direct request would.
fn refresh(world: &FakeWorld, name: &str) -> MemberStatus {
    world
        .engine
        .refresh_status(&team("forge"), &member(name))
        .unwrap()
}

/// The journal lines recorded so far, oldest first.
fn journal(world: &FakeWorld) -> Vec<AuditEvent> {
    world.journal.events.lock().unwrap().clone()
}

fn kinds(events: &[AuditEvent]) -> Vec<AuditKind> {
    events.iter().map(|e| e.kind).collect()
}

/// The stored status of `member` of `team`, if any.
fn stored(world: &FakeWorld, team_name: &str, member_name: &str) -> Option<MemberStatus> {
    match world
        .store
        .peek(&team(team_name), &member(member_name))
        .unwrap()
    {
        StoredStatus::Current(status) => Some(status),
        _ => None,
    }
}

/// How many members have a stored status in `forge` and in `ghost`.
fn stores(world: &FakeWorld) -> (usize, usize) {
    let count = |name| world.store.member_count(&team(name)).unwrap();
    (count("forge"), count("ghost"))
}

/// A `still_working` report of `status` with its fingerprint and token.
fn still_working(status: &MemberStatus) -> Value {
    json!({
        "teamName": "forge", "memberName": status.member_name, "state": "still_working",
        "agendaFingerprint": status.agenda.fingerprint, "reportToken": status.report_token,
    })
}

#[test]
fn an_accepted_report_writes_its_status_and_then_its_journal_line() {
    let world = world();
    let status = refresh(&world, "jack");
    assert_eq!(status.state, StatusState::NeedsSync);
    let before = journal(&world).len();
    world.clock.set(NOW + MINUTE);

    let result = world.engine.report(&still_working(&status)).unwrap();

    assert_eq!(
        (result.accepted, result.code, result.rejection),
        (true, "accepted", None)
    );
    assert_eq!(result.token_check, TokenCheck::Valid);
    assert_eq!(result.status.state, StatusState::StillWorking);
    let shadow = result.status.shadow.as_ref().unwrap();
    assert_eq!(shadow.reconciled_by, ReconciledBy::Report);
    let report = result.status.report.as_ref().unwrap();
    assert!(report.accepted);
    assert_eq!(report.rejection_code, None);
    assert_eq!(report.agenda_fingerprint, status.agenda.fingerprint);
    assert_eq!(report.reported_at, IsoTime::at(NOW + MINUTE));
    assert!(
        report
            .expires_at
            .as_ref()
            .and_then(IsoTime::ms)
            .is_some_and(|at| at > NOW + MINUTE),
        "a still_working report holds a lease: {report:?}"
    );
    assert_eq!(
        stored(&world, "forge", "jack").as_ref(),
        Some(&result.status)
    );
    let lines = &journal(&world)[before..];
    assert_eq!(
        kinds(lines),
        [
            AuditKind::ReportReceived,
            AuditKind::StatusWritten,
            AuditKind::ReportAccepted
        ]
    );
    assert!(lines.iter().all(|l| l.member_name == "jack"));
    assert_eq!(
        lines[2].metadata["agendaFingerprint"],
        json!(status.agenda.fingerprint)
    );
}

/// How a rejection case bends the report (and the world) before it is sent.
type Bend = fn(&FakeWorld, &mut Value);

/// What a refused report answers: its code and how its token verified, or
/// the argument refused before anything ran.
type Answer = Result<(&'static str, TokenCheck), &'static str>;

#[test]
fn a_refused_report_answers_its_code_and_writes_only_where_a_store_may_be() {
    // (why, bend, answer, whether the rejection is written: the status of
    // the member reported for, with its journal lines)
    let cases: [(&str, Bend, Answer, bool); 10] = [
        (
            "no token",
            |_, r| {
                r.as_object_mut().unwrap().remove("reportToken");
            },
            Ok(("identity_untrusted", TokenCheck::Missing)),
            true,
        ),
        (
            "a forged token",
            |_, r| r["reportToken"] = json!("token|forge|jack|99999999999999|agenda:v1:x"),
            Ok(("invalid_report_token", TokenCheck::Invalid)),
            true,
        ),
        (
            "another member's token",
            |w, r| r["reportToken"] = json!(refresh(w, "jill").report_token),
            Ok(("invalid_report_token", TokenCheck::Invalid)),
            true,
        ),
        (
            "an expired token, same agenda",
            |w, _| w.clock.set(NOW + TOKEN_TTL_MS),
            Ok(("invalid_report_token", TokenCheck::Expired)),
            true,
        ),
        (
            "the agenda moved",
            |w, _| w.teams.give_task("forge", "2", "jack"),
            Ok(("stale_fingerprint", TokenCheck::Valid)),
            true,
        ),
        (
            "a member off the roster",
            |_, r| r["memberName"] = json!("ghost"),
            Ok(("member_inactive", TokenCheck::Invalid)),
            true,
        ),
        (
            "a reserved member name",
            |_, r| r["memberName"] = json!("system"),
            Ok(("reserved_or_invalid_member", TokenCheck::Invalid)),
            true,
        ),
        (
            "a team without a folder",
            |_, r| r["teamName"] = json!("ghost"),
            Ok(("member_inactive", TokenCheck::Missing)),
            false,
        ),
        (
            "an unsafe team name",
            |_, r| r["teamName"] = json!("../forge"),
            Err("teamName"),
            false,
        ),
        (
            "an unsafe member name",
            |_, r| r["memberName"] = json!("../jack"),
            Err("memberName"),
            false,
        ),
    ];
    for (why, bend, answer, written) in cases {
        let world = world();
        let status = refresh(&world, "jack");
        let mut request = still_working(&status);
        bend(&world, &mut request);
        let before = journal(&world);
        let jack_before = stored(&world, "forge", "jack");
        let (forge_stores, _) = stores(&world);

        let result = world.engine.report(&request);

        let result = match (result, answer) {
            (Err(WorkSyncError::InvalidArgument { what, .. }), Err(argument)) => {
                assert_eq!(what, argument, "{why}");
                None
            }
            (Ok(result), Ok((code, token_check))) => {
                assert_eq!(
                    (result.accepted, result.code, result.token_check),
                    (false, code, token_check),
                    "{why}"
                );
                assert_eq!(result.rejection.map(|r| r.code()), Some(code), "{why}");
                Some(result)
            }
            (other, _) => panic!("{why}: {other:?}"),
        };
        let journal = journal(&world);
        let lines = &journal[before.len()..];
        let (team_name, member_name) = (
            request["teamName"].as_str().unwrap(),
            request["memberName"].as_str().unwrap(),
        );
        if !written {
            assert_eq!(journal, before, "{why}: nothing journaled");
            assert_eq!(stored(&world, "forge", "jack"), jack_before, "{why}");
            assert_eq!(stores(&world), (forge_stores, 0), "{why}: no new store");
            continue;
        }
        let result = result.unwrap();
        let code = result.code;
        let kept = stored(&world, team_name, member_name).expect("the rejection is stored");
        assert_eq!(kept, result.status, "{why}");
        let report = kept.report.as_ref().unwrap();
        assert_eq!(
            (report.accepted, report.rejection_code.as_deref()),
            (false, Some(code)),
            "{why}"
        );
        assert_eq!(
            report.agenda_fingerprint, request["agendaFingerprint"],
            "{why}"
        );
        assert_eq!(
            kept.diagnostics.last(),
            Some(&format!("report_rejected:{code}")),
            "{why}"
        );
        assert_eq!(
            lines.first().map(|l| l.kind),
            Some(AuditKind::ReportReceived),
            "{why}"
        );
        let last = lines.last().unwrap();
        assert_eq!(
            (last.kind, &last.metadata["reason"]),
            (AuditKind::ReportRejected, &json!(code)),
            "{why}"
        );
        assert!(!kinds(lines).contains(&AuditKind::ReportAccepted), "{why}");
    }
}

/// The planner's lines (`nudge_planned` / `nudge_skipped`) as `(kind, reason)`.
fn planner_lines(world: &FakeWorld) -> Vec<(AuditKind, String)> {
    journal(world)
        .into_iter()
        .filter(|e| matches!(e.kind, AuditKind::NudgePlanned | AuditKind::NudgeSkipped))
        .map(|e| (e.kind, e.metadata["reason"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn a_reconcile_plans_one_outbox_item_per_agenda_and_none_when_the_store_fails() {
    use AuditKind::NudgePlanned;
    // (why, jack owns a task, store updates that fail, then for each
    // reconcile a minute apart: whether it succeeds; the planner lines)
    type PlanCase = (
        &'static str,
        bool,
        u32,
        &'static [bool],
        &'static [(AuditKind, &'static str)],
    );
    let cases: [PlanCase; 5] = [
        ("needs sync", true, 0, &[true], &[(NudgePlanned, "created")]),
        (
            "the same agenda twice",
            true,
            0,
            &[true, true],
            &[(NudgePlanned, "created"), (NudgePlanned, "existing")],
        ),
        ("the store fails", true, 1, &[false], &[]),
        (
            "the store fails, then the retry succeeds",
            true,
            1,
            &[false, true],
            &[(NudgePlanned, "created")],
        ),
        ("nothing to sync", false, 0, &[true, true], &[]),
    ];
    for (why, owns_task, failures, runs, lines) in cases {
        let world = FakeWorld::new(NOW, &["jack"]);
        // A native inbox watcher: its nudge may go while shadow data is collected.
        world
            .teams
            .set_provider("forge", "jack", ProviderId::Anthropic);
        if owns_task {
            world.teams.give_task("forge", "1", "jack");
        }
        world.store.fail_next(failures);
        let mut last_ok = None;
        for (n, succeeds) in runs.iter().enumerate() {
            world.clock.set(NOW + n as EpochMs * MINUTE);
            let result = world.engine.reconcile_and_plan(
                &team("forge"),
                &member("jack"),
                ReconciledBy::Queue,
                &[],
            );
            match (&result, succeeds) {
                (Ok(status), true) => last_ok = Some(status.clone()),
                (Err(WorkSyncError::Io(_)), false) => {}
                (other, _) => panic!("{why}, run {n}: {other:?}"),
            }
        }
        let expected: Vec<(AuditKind, String)> =
            lines.iter().map(|(k, r)| (*k, r.to_string())).collect();
        assert_eq!(planner_lines(&world), expected, "{why}");
        let items = world.outbox.items();
        let planned = usize::from(!lines.is_empty());
        assert_eq!(items.len(), planned, "{why}: {items:?}");
        if let (Some(item), Some(status)) = (items.first(), last_ok) {
            assert_eq!(item.member_name, "jack", "{why}");
            assert_eq!(item.agenda_fingerprint, status.agenda.fingerprint, "{why}");
            let first_ok = runs.iter().position(|ok| *ok).unwrap() as EpochMs;
            assert_eq!(
                item.created_at,
                IsoTime::at(NOW + first_ok * MINUTE),
                "{why}"
            );
        }
        if !runs.iter().any(|ok| *ok) {
            assert_eq!(stored(&world, "forge", "jack"), None, "{why}");
        }
    }
}

/// A pending intent `id` of `forge` recording `request`.
fn intent(id: &str, request: &Value, reason: Option<&str>) -> ReportIntent {
    ReportIntent {
        id: id.into(),
        team_name: "forge".into(),
        member_name: request["memberName"].as_str().unwrap_or_default().into(),
        request: request.clone(),
        reason: reason.map(str::to_string),
        status: IntentStatus::Pending,
        recorded_at: format_iso(NOW),
        processed_at: None,
        rejection_code: None,
        result_code: None,
        retried_with_fresh_token: false,
    }
}

#[test]
fn a_replayed_intent_is_finished_with_its_outcome_or_left_pending_after_a_store_failure() {
    use IntentStatus::{Accepted, Rejected, Superseded};
    const UNREACHABLE: Option<&str> = Some("control_api_unavailable");
    let expire: Bend = |w, _| w.clock.set(NOW + TOKEN_TTL_MS);
    // (why, bend, the intent's reason, store updates that fail, then the
    // intent as finished: status, result code, retried with a fresh
    // token; `None`: left pending)
    type ReplayCase = (
        &'static str,
        Bend,
        Option<&'static str>,
        u32,
        Option<(IntentStatus, &'static str, bool)>,
    );
    let cases: [ReplayCase; 8] = [
        (
            "a current report",
            |_, _| {},
            None,
            0,
            Some((Accepted, "accepted", false)),
        ),
        (
            "the agenda moved",
            |w, _| w.teams.give_task("forge", "2", "jack"),
            None,
            0,
            Some((Rejected, "stale_fingerprint", false)),
        ),
        (
            "a member off the roster",
            |_, r| r["memberName"] = json!("ghost"),
            None,
            0,
            Some((Superseded, "member_inactive", false)),
        ),
        (
            "a malformed request",
            |_, r| r["state"] = json!("sleeping"),
            None,
            0,
            Some((Rejected, "invalid_payload", false)),
        ),
        (
            "an unsafe member name",
            |_, r| r["memberName"] = json!("../jack"),
            None,
            0,
            Some((Rejected, "invalid_payload", false)),
        ),
        (
            "an expired token while the app was unreachable",
            expire,
            UNREACHABLE,
            0,
            Some((Accepted, "accepted", true)),
        ),
        (
            "an expired token",
            expire,
            None,
            0,
            Some((Rejected, "invalid_report_token", false)),
        ),
        ("the store fails", |_, _| {}, None, 1, None),
    ];
    for (why, bend, reason, failures, finished) in cases {
        let world = world();
        let status = refresh(&world, "jack");
        let mut request = still_working(&status);
        bend(&world, &mut request);
        world
            .intents
            .record(&intent("i-1", &request, reason))
            .unwrap();
        world.store.fail_next(failures);

        let summary = world
            .engine
            .replay_pending_reports(&[team("forge")])
            .unwrap();

        let outcome = finished.map(|f| f.0);
        let expected = ReplaySummary {
            processed: usize::from(finished.is_some()),
            accepted: usize::from(outcome == Some(Accepted)),
            rejected: usize::from(outcome == Some(Rejected)),
            superseded: usize::from(outcome == Some(Superseded)),
        };
        assert_eq!(summary, expected, "{why}");
        let held = world.intents.all();
        assert_eq!(held.len(), 1, "{why}");
        let held = &held[0];
        let got = (held.status != IntentStatus::Pending).then(|| {
            (
                held.status,
                held.result_code.as_deref().unwrap(),
                held.retried_with_fresh_token,
            )
        });
        assert_eq!(got, finished, "{why}");
        let code = finished.map(|f| f.1).filter(|code| *code != "accepted");
        assert_eq!(held.rejection_code.as_deref(), code, "{why}");
        let processed_at = finished.map(|_| format_iso(world.engine.now_ms()));
        assert_eq!(held.processed_at, processed_at, "{why}");
        if finished == Some((Accepted, "accepted", false)) {
            let kept = stored(&world, "forge", "jack").unwrap();
            assert_eq!(kept.state, StatusState::StillWorking, "{why}");
            assert_eq!(
                kept.report.as_ref().and_then(|r| r.source.as_deref()),
                Some("mcp"),
                "{why}: a replayed report is the controller's"
            );
        }
        // A finished intent is not replayed again; one left pending is.
        let again = world
            .engine
            .replay_pending_reports(&[team("forge")])
            .unwrap();
        assert_eq!(again.processed, usize::from(finished.is_none()), "{why}");
    }
}

#[test]
fn a_status_read_reconciles_a_stale_status_or_returns_it_marked_and_queued() {
    // How the stored status of jack is read back.
    #[derive(Debug, PartialEq)]
    enum Read {
        /// Nothing stored: a status from the board, not written.
        Unpersisted,
        /// The stored status as it is.
        AsStored,
        /// Reconciled now, written and planned.
        Reconciled,
        /// The stored status with this staleness diagnostic, queued for a
        /// `manual_refresh`.
        Stale(&'static str),
    }
    // (why, jack owns a task, a status stored first, its age when read,
    // store updates that fail on the read, the read)
    let cases: [(&str, bool, bool, EpochMs, u32, Read); 6] = [
        ("nothing stored", true, false, 0, 0, Read::Unpersisted),
        ("current", true, true, MINUTE, 0, Read::AsStored),
        ("work, stale", true, true, 3 * MINUTE, 0, Read::Reconciled),
        (
            "work, stale, the store fails",
            true,
            true,
            3 * MINUTE,
            1,
            Read::Stale("status_stale_refresh_enqueued"),
        ),
        (
            "caught up, current",
            false,
            true,
            4 * MINUTE,
            0,
            Read::AsStored,
        ),
        (
            "caught up, stale",
            false,
            true,
            6 * MINUTE,
            0,
            Read::Stale("caught_up_stale_refresh_enqueued"),
        ),
    ];
    for (why, owns_task, stored_first, age, failures, read) in cases {
        let world = FakeWorld::new(NOW, &["jack"]);
        world
            .teams
            .set_provider("forge", "jack", ProviderId::Anthropic);
        if owns_task {
            world.teams.give_task("forge", "1", "jack");
        }
        let first = stored_first.then(|| refresh(&world, "jack"));
        let lines_before = journal(&world).len();
        let planned_before = planner_lines(&world).len();
        world.clock.set(NOW + age);
        world.store.fail_next(failures);

        let status = world
            .engine
            .get_status(&team("forge"), &member("jack"), false)
            .unwrap();

        let kept = stored(&world, "forge", "jack");
        let refresh_queued = vec![("jack".to_string(), vec!["manual_refresh"])];
        match read {
            Read::Unpersisted => {
                assert!(
                    status
                        .diagnostics
                        .contains(&"status_snapshot_not_persisted".to_string()),
                    "{why}: {:?}",
                    status.diagnostics
                );
                assert_eq!(kept, None, "{why}");
                assert_eq!(journal(&world).len(), lines_before, "{why}");
            }
            Read::AsStored => {
                assert_eq!(Some(&status), first.as_ref(), "{why}");
                assert_eq!(kept, first, "{why}");
                assert_eq!(journal(&world).len(), lines_before, "{why}");
            }
            Read::Reconciled => {
                assert_eq!(status.evaluated_at, IsoTime::at(NOW + age), "{why}");
                assert_eq!(kept.as_ref(), Some(&status), "{why}");
                assert_eq!(
                    planner_lines(&world).len(),
                    planned_before + 1,
                    "{why}: a read that reconciled plans"
                );
            }
            Read::Stale(diagnostic) => {
                let mut marked = first.clone().unwrap();
                marked.diagnostics.push(diagnostic.to_string());
                assert_eq!(status, marked, "{why}");
                assert_eq!(kept, first, "{why}: the store is left as it was");
                assert_eq!(planner_lines(&world).len(), planned_before, "{why}");
            }
        }
        let expected = if matches!(read, Read::Stale(_)) {
            refresh_queued
        } else {
            vec![]
        };
        assert_eq!(world.queued(), expected, "{why}");
    }
}

#[test]
fn a_planner_line_names_the_first_tasks_of_the_agenda_a_journal_line_keeps() {
    let world = FakeWorld::new(NOW, &["jack"]);
    world
        .teams
        .set_provider("forge", "jack", ProviderId::Anthropic);
    for task in 1..=crate::domain::audit::LIST_ITEMS_KEPT + 5 {
        world.teams.give_task("forge", &task.to_string(), "jack");
    }
    let status = refresh(&world, "jack");
    assert_eq!(
        status.agenda.items.len(),
        crate::domain::audit::LIST_ITEMS_KEPT + 5
    );
    let line = journal(&world)
        .into_iter()
        .find(|e| e.kind == AuditKind::NudgePlanned)
        .expect("a planner line");
    let want: Vec<Value> = status
        .agenda
        .items
        .iter()
        .take(crate::domain::audit::LIST_ITEMS_KEPT)
        .map(|item| {
            let mut task = serde_json::json!({ "taskId": item.task_id, "teamName": "forge" });
            if let Some(display) = &item.display_id {
                task["displayId"] = serde_json::json!(display);
            }
            task
        })
        .collect();
    assert_eq!(line.metadata["taskRefs"], Value::Array(want));
}
