//! One test per agenda rule and per review-cycle outcome the agenda exposes.

use std::collections::{BTreeMap, HashMap};

use super::reference_map::ReferenceMap;
use super::task_facts::{task_reference, TaskFacts};
use super::task_index::MAX_INCREMENTAL_CHANGE;
use super::*;
use crate::domain::fingerprint::agenda_fingerprint;
use crate::domain::names::{MemberName, TeamName};
use crate::domain::team::{
    Clarification, HistoryEvent, KanbanColumn, KanbanEntry, ReviewState, Task, TaskStatus,
    TeamMember, TeamSnapshot,
};
use crate::domain::time::parse_iso;

const NOW: &str = "2026-11-22T10:00:00.000Z";

fn member(name: &str) -> TeamMember {
    TeamMember {
        name: name.into(),
        ..TeamMember::default()
    }
}

fn task(id: &str, owner: &str, status: TaskStatus) -> Task {
    Task {
        id: id.into(),
        display_id: format!("#{id}"),
        subject: format!("Task {id}"),
        status,
        owner: (!owner.is_empty()).then(|| owner.into()),
        blocked_by: vec![],
        blocks: vec![],
        needs_clarification: None,
        review_state: ReviewState::None,
        history: vec![],
    }
}

fn event(id: &str, ts: &str, kind: &str, to: &str) -> HistoryEvent {
    HistoryEvent {
        id: id.into(),
        timestamp: ts.into(),
        at_ms: parse_iso(ts),
        kind: kind.into(),
        to: (!to.is_empty()).then(|| to.into()),
        ..HistoryEvent::default()
    }
}

fn review_requested(id: &str, ts: &str, reviewer: &str) -> HistoryEvent {
    HistoryEvent {
        reviewer: Some(reviewer.into()),
        ..event(id, ts, "review_requested", "review")
    }
}

fn review_started(id: &str, ts: &str, actor: &str) -> HistoryEvent {
    HistoryEvent {
        actor: Some(actor.into()),
        ..event(id, ts, "review_started", "review")
    }
}

fn team(tasks: Vec<Task>) -> TeamSnapshot {
    let mut lead = member("team-lead");
    lead.agent_type = Some("team-lead".into());
    TeamSnapshot {
        config_found: true,
        members: vec![lead, member("jack"), member("jill"), member("bob")],
        tasks: std::sync::Arc::new(tasks.into_iter().map(std::sync::Arc::new).collect()),
        ..TeamSnapshot::empty(TeamName::parse("forge").unwrap())
    }
}

fn agenda(snapshot: &TeamSnapshot, who: &str) -> Agenda {
    TeamIndex::build(snapshot).agenda_for(&member_name(who), NOW)
}

fn member_name(name: &str) -> MemberName {
    MemberName::parse(name).unwrap()
}

fn team_name(name: &str) -> TeamName {
    TeamName::parse(name).unwrap()
}

/// `(taskId, reason)` of every item, in agenda order.
fn reasons(agenda: &Agenda) -> Vec<(&str, &str)> {
    agenda
        .items
        .iter()
        .map(|i| (i.task_id.as_str(), i.reason.as_str()))
        .collect()
}

#[test]
fn owned_pending_and_in_progress_work_is_listed() {
    let snapshot = team(vec![
        task("1", "jack", TaskStatus::Pending),
        task("2", "jack", TaskStatus::InProgress),
        task("3", "jack", TaskStatus::Completed),
        task("4", "jill", TaskStatus::Pending),
    ]);
    let a = agenda(&snapshot, "jack");
    assert_eq!(
        reasons(&a),
        vec![("1", "owned_pending_task"), ("2", "owned_in_progress_task")]
    );
    let item = &a.items[0];
    assert_eq!(item.kind, ItemKind::Work);
    assert_eq!(item.priority, Priority::Normal);
    assert_eq!(item.assignee, "jack");
    assert_eq!(item.display_id.as_deref(), Some("#1"));
    assert_eq!(item.evidence.owner.as_deref(), Some("jack"));
    assert_eq!(item.evidence.status, "pending");
}

#[test]
fn completed_and_deleted_work_is_excluded() {
    let snapshot = team(vec![
        task("1", "jack", TaskStatus::Completed),
        task("3", "jack", TaskStatus::Deleted),
    ]);
    assert!(agenda(&snapshot, "jack").items.is_empty());
}

#[test]
fn owner_is_matched_case_insensitively_and_subject_defaults() {
    let mut t = task("1", " JACK ", TaskStatus::Pending);
    t.subject = String::new();
    let a = agenda(&team(vec![t]), "Jack");
    assert_eq!(a.member_name, "jack");
    assert_eq!(a.items[0].subject, "Untitled task");
}

#[test]
fn reopened_work_is_listed_again() {
    let mut t = task("1", "jack", TaskStatus::InProgress);
    t.history = vec![
        event("e1", "2026-05-06T10:00:00Z", "status_changed", "completed"),
        review_requested("e2", "2026-05-06T10:01:00Z", "jill"),
        event("e3", "2026-05-06T10:02:00Z", "review_approved", "approved"),
        event(
            "e4",
            "2026-05-06T11:00:00Z",
            "status_changed",
            "in_progress",
        ),
    ];
    assert_eq!(
        reasons(&agenda(&team(vec![t]), "jack")),
        vec![("1", "owned_in_progress_task")]
    );
}

#[test]
fn an_approved_kanban_card_counts_however_old_it_is() {
    // The reference reads the card as it is: a card older than the task's
    // reopening still makes the task approved (terminal).
    let mut t = task("1", "jack", TaskStatus::InProgress);
    t.history = vec![event(
        "e4",
        "2026-05-06T11:00:00Z",
        "status_changed",
        "in_progress",
    )];
    let mut snapshot = team(vec![t]);
    snapshot.kanban.insert(
        "1".into(),
        KanbanEntry {
            column: KanbanColumn::Approved,
            moved_at_ms: parse_iso("2026-05-06T10:30:00Z"),
            reviewer: None,
        },
    );
    assert!(agenda(&snapshot, "jack").items.is_empty());
    snapshot.kanban.get_mut("1").unwrap().moved_at_ms = parse_iso("2026-05-06T12:00:00Z");
    assert!(agenda(&snapshot, "jack").items.is_empty());
    snapshot.kanban.clear();
    assert_eq!(
        reasons(&agenda(&snapshot, "jack")),
        vec![("1", "owned_in_progress_task")]
    );
}

#[test]
fn needs_fix_is_owner_work() {
    let mut t = task("1", "jack", TaskStatus::Completed);
    t.history = vec![
        review_requested("e1", "2026-05-06T10:00:00Z", "jill"),
        event(
            "e2",
            "2026-05-06T10:30:00Z",
            "review_changes_requested",
            "needsFix",
        ),
    ];
    let a = agenda(&team(vec![t]), "jack");
    assert_eq!(reasons(&a), vec![("1", "review_changes_requested")]);
    assert_eq!(
        a.items[0].evidence.review_state.as_deref(),
        Some("needsFix")
    );
    // Moved back to pending after changes were requested: still needsFix.
    let mut t = task("2", "jack", TaskStatus::Pending);
    t.history = vec![
        event(
            "e2",
            "2026-05-06T10:30:00Z",
            "review_changes_requested",
            "needsFix",
        ),
        event("e3", "2026-05-06T10:31:00Z", "status_changed", "pending"),
    ];
    assert_eq!(
        reasons(&agenda(&team(vec![t]), "jack")),
        vec![("2", "review_changes_requested")]
    );
}

#[test]
fn approved_dependencies_do_not_block() {
    let mut dep = task("1", "jill", TaskStatus::Completed);
    dep.review_state = ReviewState::Approved;
    let mut t = task("2", "jack", TaskStatus::Pending);
    t.blocked_by = vec!["1".into()];
    assert_eq!(
        reasons(&agenda(&team(vec![dep, t]), "jack")),
        vec![("2", "owned_pending_task")]
    );
}

#[test]
fn completed_dependency_without_review_does_not_block() {
    let dep = task("1", "jill", TaskStatus::Completed);
    let mut t = task("2", "jack", TaskStatus::Pending);
    t.blocked_by = vec!["1".into()];
    assert_eq!(agenda(&team(vec![dep, t]), "jack").items.len(), 1);
}

#[test]
fn completed_but_unapproved_dependency_still_blocks() {
    let mut dep = task("1", "jill", TaskStatus::Completed);
    dep.history = vec![review_requested("e1", "2026-05-06T10:00:00Z", "bob")];
    let mut t = task("2", "jack", TaskStatus::Pending);
    t.blocked_by = vec!["1".into()];
    let snapshot = team(vec![dep, t]);
    assert!(agenda(&snapshot, "jack").items.is_empty());
    // A waiting (not broken) dependency is no lead business either.
    assert!(agenda(&snapshot, "team-lead").items.is_empty());
}

#[test]
fn a_shared_id_is_broken_even_where_display_ids_name_it() {
    // Two tasks have id "8" (display "#8", their own id); a third shows
    // "8" as its display id. "#8" names no single task by id, and display
    // ids are not asked then: the dependency is broken, not the third task.
    let twin_a = task("8", "jill", TaskStatus::Completed);
    let twin_b = task("8", "bob", TaskStatus::Completed);
    let mut shows_eight = task("z", "bob", TaskStatus::Completed);
    shows_eight.display_id = "8".into();
    let mut waits = task("2", "jack", TaskStatus::Pending);
    waits.blocked_by = vec!["#8".into()];
    let snapshot = team(vec![twin_a, twin_b, shows_eight, waits]);
    assert!(agenda(&snapshot, "jack").items.is_empty());
    assert_eq!(
        reasons(&agenda(&snapshot, "team-lead")),
        vec![("2", "task_has_broken_dependency")]
    );
}

#[test]
fn display_id_dependencies_resolve_and_canonical_ids_win() {
    // Task "a" has display id "#7"; task "7" exists too: "#7" means canonical "7".
    let mut by_display = task("a", "jill", TaskStatus::Pending);
    by_display.display_id = "#9".into();
    let canonical = task("7", "bob", TaskStatus::Completed);
    let mut colliding = task("x", "bob", TaskStatus::Pending);
    colliding.display_id = "7".into();
    let mut waits_on_display = task("2", "jack", TaskStatus::Pending);
    waits_on_display.blocked_by = vec!["#9".into()];
    let mut waits_on_canonical = task("3", "jack", TaskStatus::Pending);
    waits_on_canonical.blocked_by = vec!["#7".into()];
    let snapshot = team(vec![
        by_display,
        canonical,
        colliding,
        waits_on_display,
        waits_on_canonical,
    ]);
    // "#9" resolves by display id to an unfinished task: waiting. "#7" resolves
    // to the completed canonical task 7, not the pending "x": free to work.
    assert_eq!(
        reasons(&agenda(&snapshot, "jack")),
        vec![("3", "owned_pending_task")]
    );
    assert!(agenda(&snapshot, "team-lead").items.is_empty());
}

#[test]
fn lead_gets_broken_dependency_oversight_and_owner_is_held() {
    let mut t = task("2", "jack", TaskStatus::Pending);
    t.blocked_by = vec![" 99 ".into(), "99".into()];
    t.blocks = vec!["5".into()];
    let snapshot = team(vec![t]);
    assert!(agenda(&snapshot, "jack").items.is_empty());
    let a = agenda(&snapshot, "team-lead");
    assert_eq!(reasons(&a), vec![("2", "task_has_broken_dependency")]);
    assert_eq!(a.items[0].kind, ItemKind::BlockedDependency);
    assert_eq!(a.items[0].priority, Priority::Blocked);
    assert_eq!(
        a.items[0].evidence.blocked_by_task_ids,
        Some(vec!["99".to_string()])
    );
    assert_eq!(
        a.items[0].evidence.blocker_task_ids,
        Some(vec!["5".to_string()])
    );
}

#[test]
fn dependency_on_a_deleted_task_is_broken() {
    let dep = task("1", "jill", TaskStatus::Deleted);
    let mut t = task("2", "jack", TaskStatus::Pending);
    t.blocked_by = vec!["1".into()];
    assert_eq!(
        reasons(&agenda(&team(vec![dep, t]), "team-lead")),
        vec![("2", "task_has_broken_dependency")]
    );
}

#[test]
fn lead_gets_clarification_and_owner_waits() {
    let mut t = task("1", "jack", TaskStatus::InProgress);
    t.needs_clarification = Some(Clarification::Lead);
    let mut for_user = task("2", "jack", TaskStatus::InProgress);
    for_user.needs_clarification = Some(Clarification::User);
    let snapshot = team(vec![t, for_user]);
    assert!(agenda(&snapshot, "jack").items.is_empty());
    let a = agenda(&snapshot, "team-lead");
    assert_eq!(reasons(&a), vec![("1", "task_needs_lead_clarification")]);
    assert_eq!(
        a.items[0].evidence.needs_clarification.as_deref(),
        Some("lead")
    );
    assert_eq!(a.items[0].priority, Priority::NeedsClarification);
}

fn in_review(history: Vec<HistoryEvent>) -> Task {
    let mut t = task("1", "jack", TaskStatus::Completed);
    t.history = history;
    t
}

#[test]
fn current_cycle_reviewer_gets_the_review() {
    let snapshot = team(vec![in_review(vec![review_requested(
        "r1",
        "2026-05-06T10:00:00Z",
        "jill",
    )])]);
    let a = agenda(&snapshot, "jill");
    assert_eq!(reasons(&a), vec![("1", "current_cycle_review_assigned")]);
    let e = &a.items[0].evidence;
    assert_eq!(a.items[0].priority, Priority::ReviewRequested);
    assert_eq!(e.reviewer.as_deref(), Some("jill"));
    assert_eq!(
        e.review_obligation.as_deref(),
        Some("review_pickup_required")
    );
    assert_eq!(e.can_bypass_phase2, Some(true));
    assert_eq!(e.review_request_event_id.as_deref(), Some("r1"));
    assert_eq!(e.history_event_ids, Some(vec!["r1".to_string()]));
    assert!(
        agenda(&snapshot, "jack").items.is_empty(),
        "owner waits for the review"
    );
    assert!(agenda(&snapshot, "bob").items.is_empty());
}

#[test]
fn older_review_started_events_do_not_count() {
    let snapshot = team(vec![in_review(vec![
        review_requested("r1", "2026-05-06T09:00:00Z", "bob"),
        review_started("s1", "2026-05-06T09:05:00Z", "bob"),
        event(
            "c1",
            "2026-05-06T09:30:00Z",
            "review_changes_requested",
            "needsFix",
        ),
        review_requested("r2", "2026-05-06T10:00:00Z", "jill"),
    ])]);
    assert!(agenda(&snapshot, "bob").items.is_empty());
    let a = agenda(&snapshot, "jill");
    assert_eq!(
        a.items[0].evidence.review_obligation.as_deref(),
        Some("review_pickup_required")
    );
    assert_eq!(a.items[0].evidence.review_started_event_id, None);
}

#[test]
fn a_newer_request_moves_the_review_to_the_new_reviewer() {
    let snapshot = team(vec![in_review(vec![
        review_requested("r1", "2026-05-06T09:00:00Z", "bob"),
        review_requested("r2", "2026-05-06T10:00:00Z", "jill"),
    ])]);
    assert!(agenda(&snapshot, "bob").items.is_empty());
    assert_eq!(
        agenda(&snapshot, "jill").items[0]
            .evidence
            .review_cycle_id
            .as_deref(),
        Some("r2")
    );
}

#[test]
fn started_review_carries_started_evidence_and_diagnostics() {
    let snapshot = team(vec![in_review(vec![
        review_requested("r1", "2026-05-06T09:00:00Z", "jill"),
        review_started("s1", "2026-05-06T09:05:00Z", "bob"),
    ])]);
    let a = agenda(&snapshot, "jill");
    let e = &a.items[0].evidence;
    assert_eq!(e.review_obligation.as_deref(), Some("review_in_progress"));
    assert_eq!(e.review_started_by.as_deref(), Some("bob"));
    assert_eq!(e.can_bypass_phase2, Some(false));
    assert_eq!(
        e.review_diagnostics,
        Some(vec![
            "review_started_actor_differs_from_requested_reviewer".to_string()
        ])
    );
    assert_eq!(
        e.history_event_ids,
        Some(vec!["r1".to_string(), "s1".to_string()])
    );
}

#[test]
fn legacy_kanban_reviewer_gets_the_review() {
    let t = task("1", "jack", TaskStatus::Completed);
    let mut snapshot = team(vec![t]);
    snapshot.kanban.insert(
        "1".into(),
        KanbanEntry {
            column: KanbanColumn::Review,
            moved_at_ms: parse_iso("2026-05-06T10:30:00Z"),
            reviewer: Some("bob".into()),
        },
    );
    let a = agenda(&snapshot, "bob");
    assert_eq!(
        a.items[0].evidence.review_cycle_id.as_deref(),
        Some("kanban:bob")
    );
    assert_eq!(
        a.items[0].evidence.review_diagnostics,
        Some(vec![
            "legacy_kanban_reviewer_without_current_review_cycle".to_string()
        ])
    );
}

#[test]
fn self_review_goes_to_the_lead_as_clarification() {
    let snapshot = team(vec![in_review(vec![review_requested(
        "r1",
        "2026-05-06T10:00:00Z",
        "jack",
    )])]);
    assert!(agenda(&snapshot, "jack").items.is_empty());
    let a = agenda(&snapshot, "team-lead");
    assert_eq!(reasons(&a), vec![("1", "self_review_invalid")]);
    assert_eq!(a.items[0].kind, ItemKind::Clarification);
    assert_eq!(
        a.items[0].evidence.review_diagnostics,
        Some(vec!["self_review_invalid".to_string()])
    );
}

#[test]
fn approved_review_leaves_every_agenda() {
    let snapshot = team(vec![in_review(vec![
        review_requested("r1", "2026-05-06T10:00:00Z", "jill"),
        event("a1", "2026-05-06T11:00:00Z", "review_approved", "approved"),
    ])]);
    for who in ["jack", "jill", "team-lead"] {
        assert!(agenda(&snapshot, who).items.is_empty(), "{who}");
    }
}

#[test]
fn reserved_removed_and_unknown_members_get_no_items() {
    let mut snapshot = team(vec![
        task("1", "user", TaskStatus::Pending),
        task("2", "bob", TaskStatus::Pending),
    ]);
    snapshot.members[3].removed_at = Some(1.0);
    assert_eq!(
        agenda(&snapshot, "user").diagnostics,
        ["member_invalid_or_reserved"]
    );
    assert_eq!(agenda(&snapshot, "bob").diagnostics, ["member_not_active"]);
    assert!(agenda(&snapshot, "bob").items.is_empty());
    assert_eq!(
        agenda(&snapshot, "ghost").diagnostics,
        ["member_not_active"]
    );
}

#[test]
fn missing_or_deleted_team_gets_no_items() {
    let mut snapshot = team(vec![task("1", "jack", TaskStatus::Pending)]);
    snapshot.deleted = true;
    assert_eq!(agenda(&snapshot, "jack").diagnostics, ["team_deleted"]);
    snapshot.config_found = false;
    assert_eq!(
        agenda(&snapshot, "jack").diagnostics,
        ["team_config_missing"]
    );
}

/// Asserts that `agenda`'s fingerprint hashes its items in `keys` order.
fn assert_fingerprinted_in(agenda: &Agenda, keys: &[&str]) {
    let ordered: Vec<ActionableWorkItem> = keys
        .iter()
        .map(|key| {
            let item = agenda.items.iter().find(|i| i.sort_key() == *key);
            ActionableWorkItem::clone(item.unwrap_or_else(|| panic!("no item {key}")))
        })
        .collect();
    assert_eq!(ordered.len(), agenda.items.len());
    assert_eq!(
        agenda_fingerprint(
            &team_name(&agenda.team_name),
            &member_name(&agenda.member_name),
            &ordered
        ),
        agenda.fingerprint
    );
}

#[test]
fn the_fingerprint_hashes_items_in_locale_order_of_kind_task_and_display_id() {
    // `localeCompare`: letters before case, so `work:C` sorts after `work:b`
    // (byte order would put it first).
    let mut clarify = task("B", "jack", TaskStatus::Pending);
    clarify.needs_clarification = Some(Clarification::Lead);
    let snapshot = team(vec![
        task("b", "team-lead", TaskStatus::Pending),
        task("a", "team-lead", TaskStatus::Pending),
        task("C", "team-lead", TaskStatus::Pending),
        clarify,
    ]);
    assert_fingerprinted_in(
        &agenda(&snapshot, "team-lead"),
        &["clarification:B:#B", "work:a:#a", "work:b:#b", "work:C:#C"],
    );
    // Punctuation before digits: `work:1:` before `work:10:`.
    let snapshot = team(vec![
        task("10", "jack", TaskStatus::Pending),
        task("1", "jack", TaskStatus::Pending),
    ]);
    assert_fingerprinted_in(&agenda(&snapshot, "jack"), &["work:1:#1", "work:10:#10"]);
}

#[test]
fn evidence_carries_the_review_state_even_when_none() {
    // (status, explicit reviewState, evidence reviewState)
    let cases = [
        (TaskStatus::Pending, ReviewState::None, "none"),
        (TaskStatus::InProgress, ReviewState::Review, "none"),
        (TaskStatus::Pending, ReviewState::NeedsFix, "needsFix"),
    ];
    for (status, review_state, want) in cases {
        let mut t = task("1", "jack", status);
        t.review_state = review_state;
        let a = agenda(&team(vec![t]), "jack");
        assert_eq!(a.items.len(), 1, "{status:?} {review_state:?}");
        assert_eq!(
            a.items[0].evidence.review_state.as_deref(),
            Some(want),
            "{status:?} {review_state:?}"
        );
    }
}

#[test]
fn names_in_evidence_are_trimmed_and_lowercased() {
    let mut clarify = task("1", " Jack ", TaskStatus::InProgress);
    clarify.needs_clarification = Some(Clarification::Lead);
    let mut review = task("2", " JACK", TaskStatus::Completed);
    review.history = vec![
        review_requested("r1", "2026-05-06T10:00:00Z", " Jill "),
        review_started("s1", "2026-05-06T10:05:00Z", "JILL "),
    ];
    review.review_state = ReviewState::Review;
    let snapshot = team(vec![clarify, review]);
    let lead = agenda(&snapshot, "Team-Lead");
    assert_eq!(lead.member_name, "team-lead");
    assert_eq!(lead.items[0].assignee, "team-lead");
    assert_eq!(lead.items[0].evidence.owner.as_deref(), Some("jack"));
    let jill = agenda(&snapshot, " JILL ");
    let item = &jill.items[0];
    assert_eq!(item.assignee, "jill");
    assert_eq!(item.evidence.owner.as_deref(), Some("jack"));
    assert_eq!(item.evidence.reviewer.as_deref(), Some("jill"));
    assert_eq!(item.evidence.review_started_by.as_deref(), Some("jill"));
    let mut snapshot = team(vec![task("3", " Jack ", TaskStatus::Pending)]);
    snapshot.members[1].name = "Jack".into();
    let jack = agenda(&snapshot, "Jack");
    assert_eq!(jack.member_name, "jack");
    assert_eq!(jack.items[0].assignee, "jack");
    assert_eq!(jack.items[0].evidence.owner.as_deref(), Some("jack"));
}

#[test]
fn history_event_ids_keep_request_then_start_order_on_the_item() {
    let mut t = task("1", "jack", TaskStatus::Completed);
    t.history = vec![
        review_requested("z-request", "2026-05-06T10:00:00Z", "jill"),
        review_started("a-start", "2026-05-06T10:05:00Z", "jill"),
    ];
    t.review_state = ReviewState::Review;
    let a = agenda(&team(vec![t]), "jill");
    assert_eq!(
        a.items[0].evidence.history_event_ids,
        Some(vec!["z-request".to_string(), "a-start".to_string()])
    );
    // The fingerprint sorts the list: the order on the item does not change it.
    let mut swapped: Vec<ActionableWorkItem> = a.items.iter().map(|i| (**i).clone()).collect();
    swapped[0].evidence.history_event_ids =
        Some(vec!["a-start".to_string(), "z-request".to_string()]);
    assert_eq!(
        agenda_fingerprint(&team_name("forge"), &member_name("jill"), &swapped),
        a.fingerprint
    );
}

#[test]
fn blank_event_ids_and_timestamps_are_left_out() {
    let mut t = task("1", "jack", TaskStatus::Completed);
    t.history = vec![review_requested(" ", "  ", "jill")];
    t.review_state = ReviewState::Review;
    let a = agenda(&team(vec![t]), "jill");
    let evidence = &a.items[0].evidence;
    assert_eq!(evidence.review_request_event_id, None);
    assert_eq!(evidence.review_requested_at, None);
    assert_eq!(evidence.history_event_ids, None);
    assert_eq!(evidence.review_cycle_id.as_deref(), Some("kanban:jill"));
}

#[test]
fn dependency_references_lose_one_leading_hash_on_both_sides() {
    // (blockedBy entry, dependency id, broken for the lead)
    let cases = [
        ("#1", "1", false),
        (" 1 ", "#1", false),
        ("##1", "1", true),
        ("1", "##1", true),
    ];
    for (reference, dependency_id, broken) in cases {
        let mut dependency = task(dependency_id, "jill", TaskStatus::InProgress);
        dependency.display_id = String::new();
        let mut t = task("2", "jack", TaskStatus::Pending);
        t.blocked_by = vec![reference.into()];
        let lead = agenda(&team(vec![dependency, t]), "team-lead");
        assert_eq!(
            reasons(&lead).contains(&("2", "task_has_broken_dependency")),
            broken,
            "{reference} -> {dependency_id}"
        );
    }
}

#[test]
fn a_task_without_id_is_a_dependency_by_display_id_but_never_an_item() {
    let mut anonymous = task("", "jack", TaskStatus::Completed);
    anonymous.display_id = "#7".into();
    let mut t = task("2", "jack", TaskStatus::Pending);
    t.blocked_by = vec!["7".into()];
    let snapshot = team(vec![anonymous, t]);
    assert_eq!(
        reasons(&agenda(&snapshot, "jack")),
        vec![("2", "owned_pending_task")]
    );
    assert!(reasons(&agenda(&snapshot, "team-lead")).is_empty());
}

#[test]
fn an_empty_display_id_is_left_out_of_the_item() {
    let mut t = task("1", "jack", TaskStatus::Pending);
    t.display_id = String::new();
    let a = agenda(&team(vec![t]), "jack");
    assert_eq!(a.items[0].display_id, None);
    assert_eq!(a.items[0].sort_key(), "work:1:");
}

#[test]
fn review_state_from_history_follows_the_reference_reader() {
    /// `(type, to)` of each history event.
    type History = &'static [(&'static str, &'static str)];
    // (status, history, explicit reviewState, effective)
    let cases: [(TaskStatus, History, ReviewState, ReviewState); 6] = [
        // A review event without `to` means none, not the event's usual state.
        (
            TaskStatus::Completed,
            &[("review_approved", "")],
            ReviewState::Approved,
            ReviewState::None,
        ),
        // Reopened to pending across an in_progress boundary: the older needsFix is gone.
        (
            TaskStatus::Pending,
            &[
                ("review_changes_requested", "needsFix"),
                ("status_changed", "in_progress"),
                ("status_changed", "pending"),
            ],
            ReviewState::None,
            ReviewState::None,
        ),
        (
            TaskStatus::Pending,
            &[
                ("review_changes_requested", "needsFix"),
                ("status_changed", "pending"),
            ],
            ReviewState::None,
            ReviewState::NeedsFix,
        ),
        // No review or status event: the explicit field.
        (
            TaskStatus::Completed,
            &[("task_created", "")],
            ReviewState::Review,
            ReviewState::Review,
        ),
        (
            TaskStatus::Completed,
            &[("review_requested", "review"), ("comment_added", "")],
            ReviewState::None,
            ReviewState::Review,
        ),
        (
            TaskStatus::InProgress,
            &[("review_requested", "review")],
            ReviewState::None,
            ReviewState::None,
        ),
    ];
    for (status, history, explicit, want) in cases {
        let mut t = task("1", "jack", status);
        t.review_state = explicit;
        t.history = history
            .iter()
            .enumerate()
            .map(|(i, (kind, to))| event(&format!("e{i}"), "2026-05-06T10:00:00Z", kind, to))
            .collect();
        assert_eq!(effective_review_state(&t), want, "{history:?}");
    }
}

#[test]
fn fingerprint_ignores_generated_at_and_reason() {
    let snapshot = team(vec![task("1", "jack", TaskStatus::Pending)]);
    let index = TeamIndex::build(&snapshot);
    let a = index.agenda_for(&member_name("jack"), NOW);
    let b = index.agenda_for(&member_name("jack"), "2030-01-01T00:00:00.000Z");
    assert_eq!(a.fingerprint, b.fingerprint);
    let mut reworded: Vec<ActionableWorkItem> = a.items.iter().map(|i| (**i).clone()).collect();
    reworded[0].reason = "something else".into();
    assert_eq!(
        agenda_fingerprint(&team_name("forge"), &member_name("jack"), &reworded),
        a.fingerprint
    );
}

#[test]
fn fingerprint_changes_with_any_evidence() {
    let base = agenda(&team(vec![task("1", "jack", TaskStatus::Pending)]), "jack").fingerprint;
    let started = agenda(
        &team(vec![task("1", "jack", TaskStatus::InProgress)]),
        "jack",
    )
    .fingerprint;
    let mut renamed = task("1", "jack", TaskStatus::Pending);
    renamed.subject = "Renamed".into();
    let renamed = agenda(&team(vec![renamed]), "jack").fingerprint;
    let more = agenda(
        &team(vec![
            task("1", "jack", TaskStatus::Pending),
            task("2", "jack", TaskStatus::Pending),
        ]),
        "jack",
    )
    .fingerprint;
    let all = [&base, &started, &renamed, &more];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a, b);
        }
    }
    // Unrelated board changes leave the fingerprint alone.
    let unrelated = agenda(
        &team(vec![
            task("1", "jack", TaskStatus::Pending),
            task("9", "jill", TaskStatus::Pending),
        ]),
        "jack",
    )
    .fingerprint;
    assert_eq!(base, unrelated);
}

#[test]
fn effective_review_state_is_clamped_by_status() {
    let mut t = task("1", "jack", TaskStatus::Pending);
    t.review_state = ReviewState::Review;
    assert_eq!(effective_review_state(&t), ReviewState::None);
    t.review_state = ReviewState::NeedsFix;
    assert_eq!(effective_review_state(&t), ReviewState::NeedsFix);
    t.status = TaskStatus::InProgress;
    assert_eq!(effective_review_state(&t), ReviewState::None);
    t.status = TaskStatus::Completed;
    t.review_state = ReviewState::Approved;
    assert_eq!(effective_review_state(&t), ReviewState::Approved);
    t.history = vec![review_requested("r", "2026-05-06T10:00:00Z", "jill")];
    assert_eq!(effective_review_state(&t), ReviewState::Review);
}

/// The incrementally kept [`TaskIndex`] against a fresh build, over random
/// board changes: every member's agenda and every internal list must match.
mod incremental {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    const IDS: [&str; 6] = ["1", "2", "3", "#2", " 3", ""];
    const DISPLAY_IDS: [&str; 4] = ["#1", "#2", "x", ""];
    const OWNERS: [Option<&str>; 5] = [
        Some("jack"),
        Some(" Jill "),
        Some("bob"),
        Some("team-lead"),
        None,
    ];
    const REFERENCES: [&str; 6] = ["1", "#2", "3", "x", "9", " #1"];
    const STATUSES: [TaskStatus; 4] = [
        TaskStatus::Pending,
        TaskStatus::InProgress,
        TaskStatus::Completed,
        TaskStatus::Deleted,
    ];
    const REVIEW_STATES: [ReviewState; 4] = [
        ReviewState::None,
        ReviewState::Review,
        ReviewState::NeedsFix,
        ReviewState::Approved,
    ];
    /// Every name an agenda can be asked for.
    const MEMBERS: [&str; 5] = ["jack", "jill", "bob", "team-lead", "nobody"];

    fn a_task() -> impl Strategy<Value = Task> {
        (
            (
                0..IDS.len(),
                0..DISPLAY_IDS.len(),
                0..OWNERS.len(),
                0..STATUSES.len(),
            ),
            prop::collection::vec(0..REFERENCES.len(), 0..3),
            (
                0..3usize,
                0..REVIEW_STATES.len(),
                0..5usize,
                0..OWNERS.len(),
            ),
        )
            .prop_map(
                |((id, display, owner, status), blocked, (clar, review, history, reviewer))| {
                    let mut t = task(IDS[id], OWNERS[owner].unwrap_or(""), STATUSES[status]);
                    t.display_id = DISPLAY_IDS[display].to_string();
                    t.blocked_by = blocked.iter().map(|&r| REFERENCES[r].to_string()).collect();
                    t.needs_clarification =
                        [None, Some(Clarification::Lead), Some(Clarification::User)][clar];
                    t.review_state = REVIEW_STATES[review];
                    let reviewer = OWNERS[reviewer].unwrap_or("");
                    t.history = match history {
                        0 => vec![],
                        1 => vec![review_requested("r1", "2026-05-06T10:00:00Z", reviewer)],
                        2 => vec![
                            review_requested("r1", "2026-05-06T10:00:00Z", reviewer),
                            review_started("s1", "2026-05-06T11:00:00Z", "bob"),
                        ],
                        3 => vec![event(
                            "c1",
                            "2026-05-06T10:00:00Z",
                            "review_changes_requested",
                            "needsFix",
                        )],
                        _ => vec![event(
                            "a1",
                            "2026-05-06T10:00:00Z",
                            "review_approved",
                            "approved",
                        )],
                    };
                    t
                },
            )
    }

    fn a_kanban() -> impl Strategy<Value = BTreeMap<String, KanbanEntry>> {
        prop::collection::btree_map(
            prop::sample::select(vec!["1", "2", "3"]).prop_map(str::to_string),
            (any::<bool>(), 0..OWNERS.len()).prop_map(|(approved, reviewer)| KanbanEntry {
                column: if approved {
                    KanbanColumn::Approved
                } else {
                    KanbanColumn::Review
                },
                moved_at_ms: None,
                reviewer: OWNERS[reviewer].map(str::to_string),
            }),
            0..2,
        )
    }

    /// One change to the board; positions wrap around the task count.
    #[derive(Debug, Clone)]
    enum Step {
        Replace(usize, Task),
        Insert(usize, Task),
        Remove(usize),
        /// The same content in a new `Arc` (a file read again).
        Reread(usize),
        /// Two tasks apart replaced at once.
        ReplaceTwo(usize, Task, usize, Task),
        Kanban(BTreeMap<String, KanbanEntry>),
    }

    fn a_step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (any::<usize>(), a_task()).prop_map(|(i, t)| Step::Replace(i, t)),
            3 => (any::<usize>(), a_task()).prop_map(|(i, t)| Step::Insert(i, t)),
            2 => any::<usize>().prop_map(Step::Remove),
            1 => any::<usize>().prop_map(Step::Reread),
            2 => (any::<usize>(), a_task(), any::<usize>(), a_task())
                .prop_map(|(i, t, j, u)| Step::ReplaceTwo(i, t, j, u)),
            1 => a_kanban().prop_map(Step::Kanban),
        ]
    }

    fn apply(snapshot: &mut TeamSnapshot, step: &Step) {
        let tasks = Arc::make_mut(&mut snapshot.tasks);
        let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
        match step.clone() {
            Step::Replace(i, t) if !tasks.is_empty() => {
                let i = at(i, tasks.len());
                tasks[i] = Arc::new(t);
            }
            Step::Insert(i, t) | Step::Replace(i, t) => {
                let i = at(i, tasks.len() + 1);
                tasks.insert(i, Arc::new(t));
            }
            Step::Remove(i) if !tasks.is_empty() => {
                let i = at(i, tasks.len());
                tasks.remove(i);
            }
            Step::Reread(i) if !tasks.is_empty() => {
                let i = at(i, tasks.len());
                tasks[i] = Arc::new((*tasks[i]).clone());
            }
            Step::ReplaceTwo(i, t, j, u) if !tasks.is_empty() => {
                let (i, j) = (at(i, tasks.len()), at(j, tasks.len()));
                tasks[i] = Arc::new(t);
                tasks[j] = Arc::new(u);
            }
            Step::Kanban(kanban) => snapshot.kanban = kanban,
            Step::Remove(_) | Step::Reread(_) | Step::ReplaceTwo(..) => {}
        }
    }

    /// The index's lists with their order made canonical where it carries
    /// no meaning (positions under one reference).
    fn lists(index: &TaskIndex) -> Vec<(String, Vec<usize>)> {
        let named = |tag: &str, map: &HashMap<String, Vec<usize>>| {
            map.iter()
                .map(|(key, positions)| {
                    let mut positions = positions.clone();
                    positions.sort_unstable();
                    (format!("{tag}:{key}"), positions)
                })
                .collect::<Vec<_>>()
        };
        // Filed by hash: every position under the key of its own reference,
        // listed by that reference.
        let by_reference =
            |tag: &str, map: &ReferenceMap, reference_of: &dyn Fn(usize) -> String| {
                let mut grouped: BTreeMap<String, Vec<usize>> = BTreeMap::new();
                for (key, positions) in map.lists() {
                    for &p in positions {
                        let reference = reference_of(p);
                        assert_eq!(
                            map.key(&reference),
                            key,
                            "{tag} {reference} filed by its key"
                        );
                        grouped
                            .entry(format!("{tag}:{reference}"))
                            .or_default()
                            .push(p);
                    }
                }
                grouped
                    .into_iter()
                    .map(|(key, mut positions)| {
                        positions.sort_unstable();
                        (key, positions)
                    })
                    .collect::<Vec<_>>()
            };
        let facts = &index.facts;
        let mut lists = by_reference("id", &index.by_id, &|p| {
            task_reference(&facts[p].task.id).to_string()
        });
        lists.extend(by_reference("display", &index.by_display, &|p| {
            task_reference(&facts[p].task.display_id).to_string()
        }));
        lists.extend(named("dependents", &index.dependents));
        // Bucket order is meaningful: kept as is.
        lists.extend(
            index
                .by_member
                .iter()
                .map(|(key, positions)| (format!("member:{key}"), positions.clone())),
        );
        lists.push(("lead".into(), index.lead_oversight.clone()));
        lists.sort();
        lists
    }

    fn assert_same(kept: &mut TaskIndex, snapshot: &TeamSnapshot, step: &str) {
        let cold = TeamIndex::build(snapshot);
        let warm = TeamIndex::cached(snapshot, kept);
        for member in MEMBERS {
            assert_eq!(
                warm.agenda_for(&member_name(member), NOW),
                cold.agenda_for(&member_name(member), NOW),
                "agenda of {member} after {step}"
            );
        }
        assert_eq!(lists(&warm.tasks), lists(&cold.tasks), "lists after {step}");
        let (warm_facts, cold_facts) = (&warm.tasks.facts, &cold.tasks.facts);
        assert_eq!(
            warm.tasks.task_addresses, cold.tasks.task_addresses,
            "task addresses after {step}"
        );
        assert_eq!(warm_facts.len(), cold_facts.len(), "tasks after {step}");
        for (w, c) in warm_facts.iter().zip(cold_facts) {
            assert!(Arc::ptr_eq(&w.task, &c.task), "task order after {step}");
            assert_eq!(
                (w.broken(), w.waiting()),
                (c.broken(), c.waiting()),
                "deps after {step}"
            );
        }
    }

    fn run(start: Vec<Task>, steps: &[Step]) {
        let mut snapshot = team(start);
        let mut kept = TaskIndex::default();
        assert_same(&mut kept, &snapshot, "start");
        for (i, step) in steps.iter().enumerate() {
            apply(&mut snapshot, step);
            assert_same(&mut kept, &snapshot, &format!("{i}: {step:?}"));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn a_kept_index_builds_what_a_fresh_build_builds(
            start in prop::collection::vec(a_task(), 0..8),
            steps in prop::collection::vec(a_step(), 1..30),
        ) {
            run(start, &steps);
        }
    }

    #[test]
    fn far_apart_replacements_on_a_large_board_match_a_build() {
        // The first and last tasks replaced: a window past the incremental
        // limit, two tasks changed in place.
        let start: Vec<Task> = (0..MAX_INCREMENTAL_CHANGE + 10)
            .map(|i| Task {
                blocked_by: if i % 3 == 1 {
                    vec![(i - 1).to_string()]
                } else {
                    vec![]
                },
                ..task(&i.to_string(), "jack", TaskStatus::Pending)
            })
            .collect();
        let mut snapshot = team(start);
        let mut kept = TaskIndex::default();
        assert_same(&mut kept, &snapshot, "start");
        let last = snapshot.tasks.len() - 1;
        for (step, status) in [
            TaskStatus::Completed,
            TaskStatus::Deleted,
            TaskStatus::Pending,
        ]
        .into_iter()
        .enumerate()
        {
            for i in [0, last] {
                let tasks = Arc::make_mut(&mut snapshot.tasks);
                tasks[i] = Arc::new(Task {
                    status,
                    ..(*tasks[i]).clone()
                });
            }
            assert_same(&mut kept, &snapshot, &format!("step {step}: {status:?}"));
        }
    }

    #[test]
    fn a_change_past_the_incremental_limit_is_a_full_build() {
        let start: Vec<Task> = (0..MAX_INCREMENTAL_CHANGE + 10)
            .map(|i| task(&i.to_string(), "jack", TaskStatus::Pending))
            .collect();
        let mut snapshot = team(start);
        let mut kept = TaskIndex::default();
        assert_same(&mut kept, &snapshot, "start");
        for task in Arc::make_mut(&mut snapshot.tasks).iter_mut() {
            *task = Arc::new(Task {
                blocked_by: vec!["0".into()],
                ..(**task).clone()
            });
        }
        assert_same(&mut kept, &snapshot, "every task changed");
    }
}

#[test]
fn items_follow_the_apps_task_list_order() {
    // The app lists tasks by display label (display id): numeric labels
    // first by value, then the others by `localeCompare` with numeric
    // collation, case ignored; the agenda keeps that order (only the
    // fingerprint sorts its own copy).
    let labelled = |id: &str, label: &str, status| Task {
        display_id: label.into(),
        ..task(id, "jack", status)
    };
    let snapshot = team(vec![
        labelled("60", "#60", TaskStatus::Pending),
        labelled("9", "9", TaskStatus::InProgress),
        labelled("48", "#48", TaskStatus::Pending),
        labelled("33", "33", TaskStatus::Pending),
        labelled("x1", "b10", TaskStatus::Pending),
        labelled("x2", "B9", TaskStatus::Pending),
        labelled("100", "100", TaskStatus::Pending),
    ]);
    let a = agenda(&snapshot, "jack");
    let ids: Vec<&str> = a.items.iter().map(|i| i.task_id.as_str()).collect();
    assert_eq!(ids, ["9", "33", "100", "48", "60", "x2", "x1"]);
    // The fingerprint does not depend on that order.
    let mut reordered = snapshot.clone();
    std::sync::Arc::make_mut(&mut reordered.tasks).reverse();
    assert_eq!(agenda(&reordered, "jack").fingerprint, a.fingerprint);
}

#[test]
fn item_reasons_read_and_write_their_one_spelling_and_keep_foreign_ones() {
    let mut seen = std::collections::HashSet::new();
    for reason in ItemReason::KNOWN {
        assert!(
            seen.insert(reason.as_str().to_string()),
            "{reason} spelled twice"
        );
        let wire = serde_json::to_value(&reason).unwrap();
        assert_eq!(wire, reason.as_str());
        assert_eq!(serde_json::from_value::<ItemReason>(wire).unwrap(), reason);
    }
    let foreign: ItemReason = serde_json::from_value(serde_json::json!("new_app_reason")).unwrap();
    assert_eq!(foreign, ItemReason::Unrecognized("new_app_reason".into()));
    assert_eq!(serde_json::to_value(&foreign).unwrap(), "new_app_reason");
}

#[test]
fn task_owner_is_normalized_whether_or_not_it_is_copied() {
    // (owner as written, normalized owner the facts hold)
    let cases: [(Option<&str>, Option<&str>); 9] = [
        (None, None),
        (Some(""), None),
        (Some("   "), None),
        (Some("jack"), Some("jack")),
        (Some("member-1"), Some("member-1")),
        (Some("Jack"), Some("jack")),
        (Some(" jack\t"), Some("jack")),
        (Some("\u{b}jack\u{a0}"), Some("jack")),
        (Some("ÉLODIE"), Some("élodie")),
    ];
    for (written, expected) in cases {
        let mut owned = task("1", "", TaskStatus::Pending);
        owned.owner = written.map(str::to_string);
        let facts = TaskFacts::local(&std::sync::Arc::new(owned), &BTreeMap::new());
        assert_eq!(facts.owner(), expected, "owner {written:?}");
    }
}
