//! Nudge planning, activation, outbox transitions, backoff, cooldown, rate limit.

use super::*;
use crate::domain::agenda::{ActionableWorkItem, Evidence, Priority};
use crate::domain::metrics::{readiness, MetricsIndex, Thresholds};
use crate::domain::status::{ReconciledBy, Shadow};

const NOW: EpochMs = 1_800_000_000_000;

fn work(id: &str, reason: &str) -> ActionableWorkItem {
    ActionableWorkItem {
        task_id: id.into(),
        display_id: Some(format!("#{id}")),
        subject: format!("Task {id}"),
        kind: ItemKind::Work,
        assignee: "jack".into(),
        priority: Priority::Normal,
        reason: reason.into(),
        evidence: Evidence::default(),
    }
}

fn pickup(id: &str, request: &str) -> ActionableWorkItem {
    let mut item = work(id, "current_cycle_review_assigned");
    item.kind = ItemKind::Review;
    item.evidence.review_obligation = Some("review_pickup_required".into());
    item.evidence.can_bypass_phase2 = Some(true);
    item.evidence.review_request_event_id = Some(request.into());
    item
}

fn status(items: Vec<ActionableWorkItem>) -> MemberStatus {
    MemberStatus {
        team_name: "forge".into(),
        member_name: "Jack".into(),
        state: StatusState::NeedsSync,
        agenda: Agenda {
            team_name: "forge".into(),
            member_name: "Jack".into(),
            generated_at: format_iso(NOW),
            fingerprint: "agenda:v1:abc".into(),
            items,
            diagnostics: vec![],
        },
        report: None,
        report_token: None,
        report_token_expires_at: None,
        shadow: Some(Shadow {
            reconciled_by: ReconciledBy::Queue,
            would_nudge: true,
            fingerprint_changed: false,
            previous_fingerprint: None,
            trigger_reasons: None,
            recovery: None,
        }),
        evaluated_at: IsoTime::at(NOW),
        diagnostics: vec!["no_current_report".into()],
        provider_id: Some(ProviderId::Anthropic),
        nudge_suppression_reset_at: None,
        last_accepted_report: None,
    }
}

fn collecting() -> Readiness {
    readiness(&MetricsIndex::default(), Thresholds::default())
}

fn with_state(state: ReadinessState, reasons: Vec<ReadinessReason>) -> Readiness {
    let mut r = collecting();
    r.state = state;
    r.reasons = reasons;
    r
}

#[test]
fn agenda_sync_nudge_is_keyed_by_fingerprint() {
    let planned = plan_nudge(&status(vec![
        work("1", "owned_pending_task"),
        work("2", "owned_in_progress_task"),
    ]))
    .unwrap();
    assert_eq!(planned.id, "member-work-sync:forge:jack:agenda:v1:abc");
    assert_eq!(planned.payload.work_sync_intent, NudgeIntent::AgendaSync);
    assert_eq!(planned.preview, "#1 Task 1; #2 Task 2");
    assert!(planned
        .payload
        .text
        .starts_with(crate::domain::nudge_text::AGENDA_SYNC_OPENING));
    assert_eq!(planned.payload_hash, planned.payload.hash());
    assert_eq!(planned.payload.task_refs[0].display_id, "#1");
}

#[test]
fn strict_pickup_nudge_is_keyed_by_review_requests() {
    let planned = plan_nudge(&status(vec![pickup("7", "r2"), pickup("6", "r1")])).unwrap();
    assert_eq!(planned.payload.work_sync_intent, NudgeIntent::ReviewPickup);
    assert_eq!(
        planned.id,
        "member-work-sync:forge:jack:review-pickup:r1+r2"
    );
    assert_eq!(
        planned.payload.work_sync_review_request_event_ids,
        ["r1", "r2"]
    );
    let mut diag = pickup("6", "r1");
    diag.evidence.review_diagnostics = Some(vec!["x".into()]);
    assert!(!is_strict_pickup(&status(vec![diag]).agenda));
}

#[test]
fn only_needs_sync_with_would_nudge_is_planned() {
    let mut s = status(vec![work("1", "owned_pending_task")]);
    s.shadow.as_mut().unwrap().would_nudge = false;
    assert!(plan_nudge(&s).is_none());
    let mut s = status(vec![work("1", "owned_pending_task")]);
    s.state = StatusState::StillWorking;
    assert!(plan_nudge(&s).is_none());
    assert!(plan_nudge(&status(vec![])).is_none());
}

/// [`activation`] in wire spelling: the reason, or the planner code.
fn wire_activation(
    status: &MemberStatus,
    readiness: &Readiness,
    since: Option<EpochMs>,
    now: EpochMs,
) -> Result<&'static str, &'static str> {
    activation(status, readiness, since, now)
        .map(Activation::as_str)
        .map_err(ActivationHold::as_str)
}

#[test]
fn activation_order() {
    let s = status(vec![work("1", "owned_pending_task")]);
    assert_eq!(
        wire_activation(&s, &collecting(), None, NOW),
        Err("phase2_not_ready")
    );
    assert_eq!(
        wire_activation(
            &s,
            &with_state(ReadinessState::ShadowReady, vec![]),
            None,
            NOW
        ),
        Ok("shadow_ready")
    );
    assert_eq!(
        wire_activation(
            &s,
            &with_state(
                ReadinessState::Blocked,
                vec![ReadinessReason::ReportRejectionRateHigh]
            ),
            None,
            NOW
        ),
        Err("blocking_metrics")
    );
    // Native stale work: needs_sync for ≥ 6 min goes out even while collecting.
    assert_eq!(
        wire_activation(&s, &collecting(), Some(NOW - NATIVE_STALE_MS + 1), NOW),
        Err("phase2_not_ready")
    );
    assert_eq!(
        wire_activation(&s, &collecting(), Some(NOW - NATIVE_STALE_MS), NOW),
        Ok("native_stale_assigned_work")
    );
    let busy = status(vec![work("2", "owned_in_progress_task")]);
    assert_eq!(
        wire_activation(&busy, &collecting(), Some(0), NOW),
        Ok("native_stale_in_progress")
    );
    let mut opencode = status(vec![work("1", "owned_pending_task")]);
    opencode.provider_id = Some(ProviderId::Opencode);
    assert_eq!(
        wire_activation(&opencode, &collecting(), Some(0), NOW),
        Err("phase2_not_ready")
    );
    let mut lead = status(vec![work("1", "owned_pending_task")]);
    lead.member_name = "Team_Lead".into();
    assert_eq!(
        wire_activation(&lead, &collecting(), Some(0), NOW),
        Err("phase2_not_ready")
    );
    // Pickups go out while collecting.
    let p = status(vec![pickup("6", "r1")]);
    assert_eq!(
        wire_activation(&p, &collecting(), None, NOW),
        Ok("review_pickup_required")
    );
    let mut oversight = work("5", "task_has_broken_dependency");
    oversight.kind = ItemKind::BlockedDependency;
    let mut clarification = work("8", "task_needs_lead_clarification");
    clarification.kind = ItemKind::Clarification;
    // Oversight items alone (a lead's clarifications, broken dependencies)
    // are nudged like any agenda once shadow data is ready.
    for items in [
        vec![oversight.clone()],
        vec![clarification],
        vec![oversight],
    ] {
        let mut lead_only = status(items);
        lead_only.member_name = "team-lead".into();
        assert_eq!(
            wire_activation(
                &lead_only,
                &with_state(ReadinessState::ShadowReady, vec![]),
                Some(0),
                NOW
            ),
            Ok("shadow_ready")
        );
    }
    let mut caught_up = status(vec![]);
    caught_up.state = StatusState::CaughtUp;
    assert_eq!(
        wire_activation(&caught_up, &collecting(), None, NOW),
        Err("status_not_nudgeable")
    );
}

fn planned() -> PlannedNudge {
    plan_nudge(&status(vec![work("1", "owned_pending_task")])).unwrap()
}

#[test]
fn outbox_transitions_with_generation_fencing() {
    let (mut item, outcome) = ensure_pending(None, &planned(), "forge", "jack", NOW);
    assert_eq!(
        (outcome, item.status, item.attempt_generation),
        (EnsureOutcome::Created, OutboxStatus::Pending, 0)
    );
    assert!(is_claimable(&item, NOW));
    claim(&mut item, "a", NOW);
    assert_eq!(
        (item.status, item.attempt_generation),
        (OutboxStatus::Claimed, 1)
    );
    assert!(!is_claimable(&item, NOW + STALE_CLAIM_MS - 1));
    // Dispatcher a died; b takes over after 5 minutes.
    assert!(is_claimable(&item, NOW + STALE_CLAIM_MS));
    claim(&mut item, "b", NOW + STALE_CLAIM_MS);
    assert_eq!(item.attempt_generation, 2);
    // a's late mark changes nothing.
    assert!(!finish_attempt(
        &mut item,
        1,
        &AttemptEnd::Delivered,
        NOW + STALE_CLAIM_MS + 1
    ));
    assert_eq!(item.status, OutboxStatus::Claimed);
    assert!(finish_attempt(
        &mut item,
        2,
        &AttemptEnd::Delivered,
        NOW + STALE_CLAIM_MS + 2
    ));
    assert_eq!(item.status, OutboxStatus::Delivered);
    assert_eq!(item.delivered_message_id.as_deref(), Some(item.id.as_str()));
    assert!(!is_claimable(&item, NOW + 10 * STALE_CLAIM_MS));
    // Delivered is terminal: same hash stays, another hash is a conflict.
    let (same, outcome) = ensure_pending(Some(item.clone()), &planned(), "forge", "jack", NOW);
    assert_eq!(
        (outcome, same.status),
        (EnsureOutcome::Existing, OutboxStatus::Delivered)
    );
    let mut other = planned();
    other.payload.text.push('!');
    other.payload_hash = other.payload.hash();
    assert_eq!(
        ensure_pending(Some(item), &other, "forge", "jack", NOW).1,
        EnsureOutcome::PayloadConflict
    );
}

#[test]
fn ensure_pending_revives_and_refreshes() {
    let (mut item, _) = ensure_pending(None, &planned(), "forge", "jack", NOW);
    claim(&mut item, "a", NOW);
    finish_attempt(
        &mut item,
        1,
        &AttemptEnd::Superseded { reason: "x".into() },
        NOW,
    );
    let (revived, outcome) = ensure_pending(Some(item.clone()), &planned(), "forge", "jack", NOW);
    assert_eq!(
        (outcome, revived.status),
        (EnsureOutcome::Existing, OutboxStatus::Pending)
    );
    // A new payload for a claimed item fences the claim.
    let mut claimed = revived;
    claim(&mut claimed, "a", NOW);
    let mut other = planned();
    other.payload.text.push('!');
    other.payload_hash = other.payload.hash();
    let (refreshed, _) = ensure_pending(Some(claimed), &other, "forge", "jack", NOW);
    assert_eq!(
        (refreshed.status, refreshed.attempt_generation),
        (OutboxStatus::Pending, 3)
    );
    assert_eq!(refreshed.payload_hash, other.payload_hash);
}

#[test]
fn backoff_and_jitter_values() {
    let id = "member-work-sync:forge:jack:agenda:v1:abc";
    assert_eq!(jitter_minutes(id, 1), 4);
    assert_eq!(jitter_minutes(id, 2), 0);
    assert_eq!(jitter_minutes("x", 0), 2);
    assert_eq!(retry_at(id, 1, NOW), NOW + (10 + 4) * MINUTE);
    assert_eq!(retry_at(id, 2, NOW), NOW + 20 * MINUTE);
    for generation in 0..40 {
        let at = retry_at(id, generation, NOW);
        assert!(
            (NOW + 10 * MINUTE..=NOW + 64 * MINUTE).contains(&at),
            "{generation}"
        );
    }
    assert_eq!(retry_at("x", 0, NOW), NOW + 12 * MINUTE);
}

#[test]
fn watchdog_cooldown_edges() {
    let alert = |task: &str, member: Option<&str>, at: EpochMs| WatchdogAlert {
        task_id: Some(task.into()),
        member_name: member.map(str::to_string),
        state: Some("alerted".into()),
        alerted_at: Some(format_iso(at)),
    };
    let tasks = ["1", "2"];
    assert_eq!(
        watchdog_cooldown(&[alert("1", None, NOW)], &tasks, "jack", NOW),
        Some(NOW + WATCHDOG_COOLDOWN_MS)
    );
    let just_inside = NOW - WATCHDOG_COOLDOWN_MS + 1;
    assert!(watchdog_cooldown(
        &[alert("1", Some("Jack"), just_inside)],
        &tasks,
        "jack",
        NOW
    )
    .is_some());
    let exactly = NOW - WATCHDOG_COOLDOWN_MS;
    assert_eq!(
        watchdog_cooldown(&[alert("1", None, exactly)], &tasks, "jack", NOW),
        None,
        "10 min boundary"
    );
    assert_eq!(
        watchdog_cooldown(&[alert("1", None, NOW + 1)], &tasks, "jack", NOW),
        None,
        "future ignored"
    );
    assert_eq!(
        watchdog_cooldown(&[alert("9", None, NOW)], &tasks, "jack", NOW),
        None,
        "other task"
    );
    assert_eq!(
        watchdog_cooldown(&[alert("1", Some("jill"), NOW)], &tasks, "jack", NOW),
        None,
        "other member"
    );
    let mut resolved = alert("1", None, NOW);
    resolved.state = Some("resolved".into());
    assert_eq!(watchdog_cooldown(&[resolved], &tasks, "jack", NOW), None);
}

/// A delivery known by its wall-clock time only (another process, or before a restart).
fn wall(at: EpochMs) -> DeliveryTime {
    DeliveryTime {
        wall: Some(at),
        monotonic: None,
    }
}

/// A delivery this process made: `at` by the wall clock, `mono` by its monotonic clock.
fn here(at: EpochMs, mono: MonotonicMs) -> DeliveryTime {
    DeliveryTime {
        wall: Some(at),
        monotonic: Some(mono),
    }
}

#[test]
fn rate_limit_second_vs_third_delivery() {
    // Monotonic now; a process that has run for a day.
    const MONO: MonotonicMs = 24 * 60 * MINUTE;
    const STEP: EpochMs = 2 * 60 * MINUTE;
    // (deliveries, wall now, next delivery allowed at, why)
    const YEAR: EpochMs = 365 * 24 * 60 * MINUTE;
    let cases: [(Vec<DeliveryTime>, EpochMs, Option<EpochMs>, &str); 13] = [
        (vec![wall(NOW - 10 * MINUTE)], NOW, None, "1 delivered: a 2nd may go"),
        (
            vec![wall(NOW - 10 * MINUTE), wall(NOW - 5 * MINUTE)],
            NOW,
            Some(NOW + 50 * MINUTE),
            "2 delivered: the 3rd waits until the oldest leaves the hour",
        ),
        (
            vec![wall(NOW - 60 * MINUTE), wall(NOW - 5 * MINUTE)],
            NOW,
            None,
            "oldest is out of the window",
        ),
        (
            vec![wall(NOW + 70 * MINUTE), wall(NOW + 75 * MINUTE)],
            NOW,
            Some(NOW + 130 * MINUTE),
            "the clock stepped back 80 min: both still count until it passes them by an hour",
        ),
        (
            vec![wall(NOW - 50 * MINUTE), wall(NOW + 24 * 60 * MINUTE)],
            NOW,
            Some(NOW + 10 * MINUTE),
            "one from before and one from after a step back",
        ),
        (
            vec![wall(NOW - 50 * MINUTE), wall(NOW + MAX_FUTURE_DELIVERY_MS + MINUTE)],
            NOW,
            None,
            "one dated more than 24 h ahead no longer counts by the wall clock",
        ),
        (
            vec![wall(NOW + YEAR), wall(NOW + YEAR + 5 * MINUTE)],
            NOW,
            None,
            "the clock stepped back a year, stored deliveries only: they do not block a year",
        ),
        (
            vec![
                here(NOW + YEAR, MONO - 10 * MINUTE),
                here(NOW + YEAR + 5 * MINUTE, MONO - 5 * MINUTE),
            ],
            NOW,
            Some(NOW + 50 * MINUTE),
            "the clock stepped back a year in this process: the monotonic record counts both",
        ),
        (
            vec![
                here(NOW - 10 * MINUTE, MONO - 10 * MINUTE),
                here(NOW - 5 * MINUTE, MONO - 5 * MINUTE),
            ],
            NOW + STEP,
            Some(NOW + STEP + 50 * MINUTE),
            "the clock stepped forward 2 h: this process made both 10 and 5 min ago",
        ),
        (
            vec![
                wall(NOW - 10 * MINUTE),
                here(NOW - 5 * MINUTE, MONO - 5 * MINUTE),
            ],
            NOW + STEP,
            None,
            "after a restart and a step forward only the one this process made counts",
        ),
        (
            vec![
                wall(NOW + STEP - 20 * MINUTE),
                here(NOW - 5 * MINUTE, MONO - 5 * MINUTE),
            ],
            NOW + STEP,
            Some(NOW + STEP + 40 * MINUTE),
            "one recent by the wall clock, one by the monotonic clock",
        ),
        (
            vec![
                DeliveryTime {
                    wall: None,
                    monotonic: Some(MONO - 30 * MINUTE),
                },
                here(NOW - 61 * MINUTE, MONO - 61 * MINUTE),
                here(NOW - 5 * MINUTE, MONO - 5 * MINUTE),
            ],
            NOW,
            Some(NOW + 30 * MINUTE),
            "a delivery whose outbox row is gone still counts; one an hour old by both clocks does not",
        ),
        (
            vec![
                here(NOW - 10 * MINUTE, MONO - 70 * MINUTE),
                here(NOW - 5 * MINUTE, MONO - 65 * MINUTE),
            ],
            NOW,
            Some(NOW + 50 * MINUTE),
            "the clock stepped back 1 h: the wall clock still counts both",
        ),
    ];
    for (deliveries, now, allowed_at, why) in cases {
        assert_eq!(rate_limit(&deliveries, now, MONO), allowed_at, "{why}");
    }
}

#[test]
fn suppression_threshold() {
    assert!(!is_suppressed(3));
    assert!(is_suppressed(4));
}

#[test]
fn lead_like_names() {
    for name in [
        "lead",
        "Team Lead",
        "team_lead",
        "TEAMLEAD",
        "team-leader",
        " team  lead ",
    ] {
        assert!(is_lead_like(name), "{name}");
    }
    assert!(!is_lead_like("leader"));
    assert!(!is_lead_like("jack"));
}

#[test]
fn keyed_nudges_get_their_own_id_and_hash() {
    let base = planned();
    let keyed = base.keyed(
        "forge",
        "Jack",
        "status-only:agenda:v1:abc",
        "Status check.",
    );
    assert_eq!(
        keyed.id,
        "member-work-sync:forge:jack:status-only:agenda:v1:abc"
    );
    assert_ne!(keyed.payload_hash, base.payload_hash);
    assert!(keyed.payload.text.starts_with("Status check.\n\n"));
    assert_eq!(half_hour_bucket(NOW), "2027-01-15T08:00:00.000Z");
    // (activation, may get a still-stuck follow-up)
    for (reason, still_stuck) in [
        (Activation::ShadowReady, true),
        (Activation::NativeStaleInProgress, true),
        (Activation::NativeStaleAssignedWork, true),
        (Activation::LeadTargetedShadowCollecting, true),
        (Activation::NativeTargetedShadowCollecting, true),
        (Activation::OpencodeTargetedShadowCollecting, true),
        (Activation::ReviewPickupRequired, false),
        (Activation::NativeTaskProtocolRepair, false),
    ] {
        assert_eq!(
            reason.allows_still_stuck(),
            still_stuck,
            "{}",
            reason.as_str()
        );
    }
}

#[test]
fn agenda_sync_text_names_both_tools_the_member_and_the_task_ids() {
    let text = planned().payload.text;
    for needle in [
        "member_work_sync_status tool with teamName \"forge\" and memberName \"Jack\"",
        "then call member_work_sync_report",
        "agendaFingerprint and reportToken",
        "Reading the status alone does not count",
        "mcp__agent-teams__member_work_sync_report",
        "Pass taskIds \"1\" in the report.",
        "memberName is exactly \"Jack\"",
        "Agenda: #1 Task 1.",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in {text}");
    }
    assert!(!text.contains("task_set_clarification"));
    let two = plan_nudge(&status(vec![
        work("1", "owned_pending_task"),
        work("2", "owned_pending_task"),
    ]))
    .unwrap();
    assert!(two
        .payload
        .text
        .contains("Pass taskIds \"1\", \"2\" in the report."));
}

#[test]
fn an_escalated_lead_clarification_is_recorded_on_the_board_first() {
    let mut clarification = work("8", "task_needs_lead_clarification");
    clarification.kind = ItemKind::Clarification;
    clarification.evidence.needs_clarification = Some("lead".into());
    let mut lead = status(vec![clarification]);
    lead.member_name = "team-lead".into();
    let text = plan_nudge(&lead).unwrap().payload.text;
    assert!(
        text.contains("task_set_clarification and value \"user\""),
        "{text}"
    );
}

#[test]
fn review_pickups_get_their_own_text() {
    let text = plan_nudge(&status(vec![pickup("6", "r1")]))
        .unwrap()
        .payload
        .text;
    assert!(text.starts_with(crate::domain::nudge_text::REVIEW_PICKUP_OPENING));
    for needle in [
        "Reviews: #6 Task 6.",
        "member_work_sync_status with teamName \"forge\" and memberName \"Jack\"",
        "member_work_sync_report",
        "Reading the status alone does not count",
        "Do not mark the review complete",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in {text}");
    }
    assert!(!text.contains(crate::domain::nudge_text::AGENDA_SYNC_OPENING));
}

#[test]
fn a_proof_missing_recovery_keys_the_nudge_and_names_the_message() {
    use crate::domain::recovery::Recovery;
    let mut s = status(vec![work("1", "owned_pending_task")]);
    s.shadow.as_mut().unwrap().recovery = Some(Recovery::proof_missing("msg-7", &[]));
    let planned = plan_nudge(&s).unwrap();
    assert_eq!(
        planned.id,
        "member-work-sync:forge:jack:proof-missing:msg-7"
    );
    assert_eq!(
        planned.payload.work_sync_intent_key.as_deref(),
        Some("proof-missing:msg-7")
    );
    assert_eq!(planned.payload.work_sync_intent, NudgeIntent::AgendaSync);
    assert!(planned.payload.text.contains("message \"msg-7\""));
    assert!(planned.payload.text.contains("do not do it twice"));
    // A review pickup keeps its own key even during a recovery.
    let mut p = status(vec![pickup("6", "r1")]);
    p.shadow.as_mut().unwrap().recovery = Some(Recovery::proof_missing("msg-7", &[]));
    assert_eq!(
        plan_nudge(&p).unwrap().id,
        "member-work-sync:forge:jack:review-pickup:r1"
    );
}

#[test]
fn finished_outbox_items_are_bounded_open_ones_kept() {
    let item = |n: usize, status: OutboxStatus, age_ms: EpochMs| {
        let (mut item, _) = ensure_pending(None, &planned(), "forge", "jack", NOW);
        item.id = format!("item-{n:04}");
        item.status = status;
        item.updated_at = IsoTime::at(NOW - age_ms);
        (item.id.clone(), item)
    };
    let day = 24 * 60 * MINUTE;
    // 300 finished items of the last day, one of last month, two open ones of last month.
    let mut items: BTreeMap<String, OutboxItem> = (0..300)
        .map(|n| item(n, OutboxStatus::Delivered, (n as EpochMs) * MINUTE))
        .chain([
            item(900, OutboxStatus::Superseded, 30 * day),
            item(901, OutboxStatus::Pending, 30 * day),
            item(902, OutboxStatus::FailedRetryable, 30 * day),
        ])
        .collect();
    let retention = Retention::default();
    assert!(prune_finished(&mut items, NOW, &retention));
    assert_eq!(items.len(), retention.outbox_finished_max_items + 2);
    assert!(
        items.contains_key("item-0000"),
        "the newest finished item stays"
    );
    assert!(
        !items.contains_key("item-0299"),
        "the oldest beyond the cap goes"
    );
    assert!(
        !items.contains_key("item-0900"),
        "finished and past retention"
    );
    assert!(items.contains_key("item-0901") && items.contains_key("item-0902"));
    assert!(
        !prune_finished(&mut items, NOW, &retention),
        "nothing more to drop"
    );
    // A tighter setting: ten items, each at most two hours old.
    let tight = Retention {
        outbox_finished_max_age_ms: 2 * 60 * MINUTE,
        outbox_finished_max_items: 10,
        ..retention
    };
    assert!(prune_finished(&mut items, NOW, &tight));
    assert_eq!(items.len(), 10 + 2);
    assert!(items.contains_key("item-0009") && !items.contains_key("item-0010"));
}
