//! Nudge planning, activation, outbox transitions, backoff, cooldown, rate limit.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::domain::agenda::{ActionableWorkItem, Agenda, Evidence, ItemKind, Priority};
use crate::domain::diagnostic::Diagnostic;
use crate::domain::metrics::{
    readiness, MetricEvent, MetricKind, MetricsIndex, Readiness, ReadinessReason, ReadinessState,
    Thresholds,
};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::retention::Retention;
use crate::domain::status::{MemberStatus, ReconciledBy, ReportState, Shadow, StatusState};
use crate::domain::team::ProviderId;
use crate::domain::time::{format_iso, EpochMs, IsoTime, MonotonicMs};

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
            items: items.into_iter().map(std::sync::Arc::new).collect(),
            diagnostics: vec![],
        },
        report: None,
        report_token: None,
        report_token_expires_at: None,
        shadow: Some(Shadow {
            would_nudge: true,
            ..Shadow::quiet(ReconciledBy::Queue)
        }),
        evaluated_at: IsoTime::at(NOW),
        diagnostics: vec!["no_current_report".into()],
        provider_id: Some(ProviderId::Anthropic),
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

/// An owned work item whose board status agrees with its reason.
fn owned(id: &str, reason: &str, board_status: &str) -> ActionableWorkItem {
    let mut item = work(id, reason);
    item.evidence.status = board_status.into();
    item
}

#[test]
fn activation_follows_the_apps_rules_in_order() {
    let ready = || with_state(ReadinessState::ShadowReady, vec![]);
    let noisy = || {
        with_state(
            ReadinessState::Blocked,
            vec![
                ReadinessReason::WouldNudgeRateHigh,
                ReadinessReason::FingerprintChurnHigh,
            ],
        )
    };
    let rejecting = || {
        with_state(
            ReadinessState::Blocked,
            vec![ReadinessReason::ReportRejectionRateHigh],
        )
    };
    let pending = || owned("1", "owned_pending_task", "pending");
    let in_progress = || owned("2", "owned_in_progress_task", "in_progress");
    let with = |items: Vec<ActionableWorkItem>, edit: &dyn Fn(&mut MemberStatus)| {
        let mut s = status(items);
        edit(&mut s);
        s
    };
    let provider = |p: Option<ProviderId>| move |s: &mut MemberStatus| s.provider_id = p;
    let lead = |s: &mut MemberStatus| s.member_name = "Team_Lead".into();
    let plain = |_: &mut MemberStatus| {};
    let stalled_turn = |s: &mut MemberStatus| {
        s.provider_id = Some(ProviderId::Codex);
        s.diagnostics.push(Diagnostic::RuntimeStall.as_str().into());
        s.diagnostics
            .push("runtime_stall:trigger=turn_settled".into());
    };
    let stale = Some(NOW - NATIVE_STALE_MS);
    let fresh = Some(NOW - NATIVE_STALE_MS + 1);
    type Case = (
        &'static str,
        MemberStatus,
        Readiness,
        Option<EpochMs>,
        Result<&'static str, &'static str>,
    );
    let cases: Vec<Case> = vec![
        // Native inbox watchers are targeted in any state but shadow_ready,
        // noisy rates included; only rejections hold them back.
        (
            "native collecting",
            with(vec![pending()], &plain),
            collecting(),
            None,
            Ok("native_targeted_shadow_collecting"),
        ),
        (
            "native noisy",
            with(vec![pending()], &plain),
            noisy(),
            None,
            Ok("native_targeted_shadow_collecting"),
        ),
        (
            "native rejecting",
            with(vec![pending()], &plain),
            rejecting(),
            None,
            Err("blocking_metrics"),
        ),
        (
            "native ready",
            with(vec![pending()], &plain),
            ready(),
            None,
            Ok("shadow_ready"),
        ),
        // OpenCode and lead-like members: targeted whatever the readiness.
        (
            "opencode rejecting",
            with(vec![pending()], &provider(Some(ProviderId::Opencode))),
            rejecting(),
            None,
            Ok("opencode_targeted_shadow_collecting"),
        ),
        (
            "opencode ready",
            with(vec![pending()], &provider(Some(ProviderId::Opencode))),
            ready(),
            None,
            Ok("opencode_targeted_shadow_collecting"),
        ),
        (
            "lead noisy",
            with(vec![pending()], &lead),
            noisy(),
            stale,
            Ok("lead_targeted_shadow_collecting"),
        ),
        // Unknown provider: only phase 2 proper.
        (
            "no provider collecting",
            with(vec![pending()], &provider(None)),
            collecting(),
            None,
            Err("phase2_not_ready"),
        ),
        (
            "no provider noisy",
            with(vec![pending()], &provider(None)),
            noisy(),
            None,
            Err("phase2_not_ready"),
        ),
        (
            "no provider ready",
            with(vec![pending()], &provider(None)),
            ready(),
            None,
            Ok("shadow_ready"),
        ),
        // Stale owned work of a native member: 6 minutes under one agenda.
        (
            "stale pending",
            with(vec![pending()], &plain),
            rejecting(),
            stale,
            Ok("native_stale_assigned_work"),
        ),
        (
            "not yet stale",
            with(vec![pending()], &plain),
            rejecting(),
            fresh,
            Err("blocking_metrics"),
        ),
        (
            "stale in progress",
            with(vec![in_progress()], &plain),
            noisy(),
            stale,
            Ok("native_stale_in_progress"),
        ),
        (
            "stale mixed",
            with(vec![in_progress(), pending()], &plain),
            noisy(),
            stale,
            Ok("native_stale_assigned_work"),
        ),
        (
            "board disagrees",
            with(vec![work("1", "owned_pending_task")], &plain),
            rejecting(),
            stale,
            Err("blocking_metrics"),
        ),
        (
            "stale lead",
            with(vec![pending()], &lead),
            rejecting(),
            stale,
            Ok("lead_targeted_shadow_collecting"),
        ),
        // A Codex turn that settled with its one in-progress task untouched.
        (
            "protocol repair",
            with(vec![in_progress()], &stalled_turn),
            rejecting(),
            None,
            Ok("native_task_protocol_repair"),
        ),
        (
            "repair needs one task",
            with(vec![in_progress(), pending()], &stalled_turn),
            rejecting(),
            None,
            Err("blocking_metrics"),
        ),
        // Clean pickups: first while collecting, after rejections otherwise.
        (
            "pickup collecting",
            with(vec![pickup("6", "r1")], &plain),
            collecting(),
            None,
            Ok("review_pickup_required"),
        ),
        (
            "pickup noisy",
            with(vec![pickup("6", "r1")], &plain),
            noisy(),
            None,
            Ok("review_pickup_required"),
        ),
        (
            "pickup rejecting",
            with(vec![pickup("6", "r1")], &plain),
            rejecting(),
            None,
            Err("blocking_metrics"),
        ),
        (
            "opencode pickup ready",
            with(
                vec![pickup("6", "r1")],
                &provider(Some(ProviderId::Opencode)),
            ),
            ready(),
            None,
            Ok("review_pickup_required"),
        ),
        // Nothing to nudge.
        (
            "caught up",
            with(vec![], &|s: &mut MemberStatus| {
                s.state = StatusState::CaughtUp
            }),
            ready(),
            None,
            Err("status_not_nudgeable"),
        ),
        (
            "suppressed",
            with(vec![pending()], &|s: &mut MemberStatus| {
                s.shadow.as_mut().unwrap().would_nudge = false
            }),
            collecting(),
            stale,
            Err("phase2_not_ready"),
        ),
    ];
    for (name, status, readiness, since, expected) in cases {
        assert_eq!(
            wire_activation(&status, &readiness, since, NOW),
            expected,
            "{name}"
        );
    }
}

#[test]
fn an_active_work_lease_keeps_stale_native_work_quiet() {
    let mut s = status(vec![owned("1", "owned_pending_task", "pending")]);
    s.report = Some(crate::domain::status::Report {
        state: ReportState::StillWorking,
        agenda_fingerprint: s.agenda.fingerprint.clone(),
        member_name: "Jack".into(),
        team_name: "forge".into(),
        reported_at: IsoTime::at(NOW - 1),
        expires_at: Some(IsoTime::at(NOW + 1)),
        task_ids: None,
        note: None,
        source: None,
        accepted: true,
        rejection_code: None,
    });
    s.diagnostics.push("report_lease_expired".into());
    let rejecting = with_state(
        ReadinessState::Blocked,
        vec![ReadinessReason::ReportRejectionRateHigh],
    );
    assert!(has_active_work_lease(&s));
    assert_eq!(
        wire_activation(&s, &rejecting, Some(0), NOW),
        Err("blocking_metrics")
    );
}

fn metric(kind: MetricKind, state: StatusState, fingerprint: &str, at: EpochMs) -> MetricEvent {
    MetricEvent {
        id: format!("{at}"),
        team_name: "forge".into(),
        member_name: "jack".into(),
        kind,
        state,
        agenda_fingerprint: fingerprint.into(),
        recorded_at: format_iso(at),
        actionable_count: 1,
        rejection_code: None,
    }
}

#[test]
fn stable_since_starts_after_the_last_other_agenda_and_accepted_report() {
    let s = status(vec![owned("1", "owned_pending_task", "pending")]);
    let fp = s.agenda.fingerprint.clone();
    let evaluated =
        |fp: &str, at| metric(MetricKind::StatusEvaluated, StatusState::NeedsSync, fp, at);
    let cases: Vec<(&str, Vec<MetricEvent>, Option<EpochMs>)> = vec![
        ("none", vec![], None),
        (
            "first needs_sync",
            vec![evaluated(&fp, NOW - 9), evaluated(&fp, NOW - 5)],
            Some(NOW - 9),
        ),
        (
            "another agenda in between",
            vec![
                evaluated(&fp, NOW - 9),
                evaluated("agenda:v1:other", NOW - 7),
                evaluated(&fp, NOW - 5),
            ],
            Some(NOW - 5),
        ),
        (
            "change into this agenda",
            vec![
                evaluated(&fp, NOW - 9),
                metric(
                    MetricKind::FingerprintChanged,
                    StatusState::NeedsSync,
                    &fp,
                    NOW - 6,
                ),
                evaluated(&fp, NOW - 6),
            ],
            Some(NOW - 6),
        ),
        (
            "accepted report",
            vec![
                evaluated(&fp, NOW - 9),
                metric(
                    MetricKind::ReportAccepted,
                    StatusState::StillWorking,
                    &fp,
                    NOW - 7,
                ),
                evaluated(&fp, NOW - 7),
                evaluated(&fp, NOW - 3),
            ],
            Some(NOW - 3),
        ),
        ("future events ignored", vec![evaluated(&fp, NOW + 1)], None),
        (
            "other states ignored",
            vec![metric(
                MetricKind::StatusEvaluated,
                StatusState::StillWorking,
                &fp,
                NOW - 9,
            )],
            None,
        ),
    ];
    for (name, events, expected) in cases {
        let events: Vec<Arc<MetricEvent>> = events.into_iter().map(Arc::new).collect();
        assert_eq!(
            current_fingerprint_stable_since(&events, &s, NOW),
            expected,
            "{name}"
        );
    }
}

/// [`ensure_pending`] for jack of forge at `NOW`.
fn ensure_for_jack(
    previous: Option<OutboxItem>,
    planned: &PlannedNudge,
) -> (OutboxItem, EnsureOutcome) {
    ensure_pending(
        previous,
        planned,
        &TeamName::parse("forge").unwrap(),
        &MemberName::parse("jack").unwrap(),
        NOW,
    )
}

fn planned() -> PlannedNudge {
    plan_nudge(&status(vec![work("1", "owned_pending_task")])).unwrap()
}

#[test]
fn outbox_transitions_with_generation_fencing() {
    let (mut item, outcome) = ensure_for_jack(None, &planned());
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
    let (same, outcome) = ensure_for_jack(Some(item.clone()), &planned());
    assert_eq!(
        (outcome, same.status),
        (EnsureOutcome::Existing, OutboxStatus::Delivered)
    );
    let mut other = planned();
    std::sync::Arc::make_mut(&mut other.payload).text.push('!');
    other.payload_hash = other.payload.hash();
    assert_eq!(
        ensure_for_jack(Some(item), &other).1,
        EnsureOutcome::PayloadConflict
    );
}

#[test]
fn ensure_pending_revives_and_refreshes() {
    let (mut item, _) = ensure_for_jack(None, &planned());
    claim(&mut item, "a", NOW);
    finish_attempt(
        &mut item,
        1,
        &AttemptEnd::Superseded { reason: "x".into() },
        NOW,
    );
    let (revived, outcome) = ensure_for_jack(Some(item.clone()), &planned());
    assert_eq!(
        (outcome, revived.status),
        (EnsureOutcome::Existing, OutboxStatus::Pending)
    );
    // A new payload for a claimed item fences the claim.
    let mut claimed = revived;
    claim(&mut claimed, "a", NOW);
    let mut other = planned();
    std::sync::Arc::make_mut(&mut other.payload).text.push('!');
    other.payload_hash = other.payload.hash();
    let (refreshed, _) = ensure_for_jack(Some(claimed), &other);
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
fn jitter_folds_one_utf16_unit_per_code_point_as_the_app_does() {
    // The app folds `for (const char of seed)` with `char.charCodeAt(0)`: a
    // character outside the BMP adds its high surrogate only. Expected values
    // computed with the app's rule in Node.
    let cases: [(&str, u32, EpochMs); 6] = [
        ("member-work-sync:forge:jack:agenda:v1:abc", 1, 4),
        ("member-work-sync:forge:jürgen:agenda:v1:abc", 1, 1),
        ("a😀", 1, 0),
        ("a😀", 2, 1),
        ("member-work-sync:forge:🦀:agenda:v1:abc", 1, 0),
        ("member-work-sync:forge:🦀:agenda:v1:abc", 2, 1),
    ];
    for (id, generation, jitter) in cases {
        assert_eq!(jitter_minutes(id, generation), jitter, "{id} {generation}");
    }
}

#[test]
fn retry_time_of_the_apps_own_still_stuck_id_is_the_apps_retry_time() {
    // Behaviour driver seed 2, case 125: the app's still-stuck item (its id
    // embeds the app's base payload hash) failed retryable at 11:35 in its
    // first attempt and was due at 11:48. The addon's id carries its own
    // wording's hash, hence another jitter (README, deliberate differences);
    // given the app's id, the addon's rule gives the app's time.
    let id = "member-work-sync:team-0125-x_y:trent:agenda-sync-still-stuck:\
              agenda:v1:b54d4ab994fdb63d5a6c01c22f93c27089bc6b4fd74c8ef90b32f0da8ecfc6bd:\
              f7e4cd25b7ba5d57d16c7d1e9c6d01b16516115299594a44dc82deb7d37baaee:\
              2026-11-22T10:30:00.000Z";
    let failed_at = crate::domain::time::parse_iso("2026-11-22T11:35:00.000Z").unwrap();
    let due = crate::domain::time::parse_iso("2026-11-22T11:48:00.000Z").unwrap();
    assert_eq!(retry_at(id, 1, failed_at), due);
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
        watchdog_cooldown(
            &[alert("1", None, NOW)],
            &tasks,
            &MemberName::parse("jack").unwrap(),
            NOW
        ),
        Some(NOW + WATCHDOG_COOLDOWN_MS)
    );
    let just_inside = NOW - WATCHDOG_COOLDOWN_MS + 1;
    assert!(watchdog_cooldown(
        &[alert("1", Some("Jack"), just_inside)],
        &tasks,
        &MemberName::parse("jack").unwrap(),
        NOW
    )
    .is_some());
    let exactly = NOW - WATCHDOG_COOLDOWN_MS;
    assert_eq!(
        watchdog_cooldown(
            &[alert("1", None, exactly)],
            &tasks,
            &MemberName::parse("jack").unwrap(),
            NOW
        ),
        None,
        "10 min boundary"
    );
    assert_eq!(
        watchdog_cooldown(
            &[alert("1", None, NOW + 1)],
            &tasks,
            &MemberName::parse("jack").unwrap(),
            NOW
        ),
        None,
        "future ignored"
    );
    assert_eq!(
        watchdog_cooldown(
            &[alert("9", None, NOW)],
            &tasks,
            &MemberName::parse("jack").unwrap(),
            NOW
        ),
        None,
        "other task"
    );
    assert_eq!(
        watchdog_cooldown(
            &[alert("1", Some("jill"), NOW)],
            &tasks,
            &MemberName::parse("jack").unwrap(),
            NOW
        ),
        None,
        "other member"
    );
    let mut resolved = alert("1", None, NOW);
    resolved.state = Some("resolved".into());
    assert_eq!(
        watchdog_cooldown(
            &[resolved],
            &tasks,
            &MemberName::parse("jack").unwrap(),
            NOW
        ),
        None
    );
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
    // (deliveries, wall now, limited, why)
    const YEAR: EpochMs = 365 * 24 * 60 * MINUTE;
    let cases: [(Vec<DeliveryTime>, EpochMs, bool, &str); 13] = [
        (vec![wall(NOW - 10 * MINUTE)], NOW, false, "1 delivered: a 2nd may go"),
        (
            vec![wall(NOW - 10 * MINUTE), wall(NOW - 5 * MINUTE)],
            NOW,
            true,
            "2 delivered: the 3rd waits",
        ),
        (
            vec![wall(NOW - 60 * MINUTE), wall(NOW - 5 * MINUTE)],
            NOW,
            false,
            "oldest is out of the window",
        ),
        (
            vec![wall(NOW + 70 * MINUTE), wall(NOW + 75 * MINUTE)],
            NOW,
            true,
            "the clock stepped back 80 min: both still count until it passes them by an hour",
        ),
        (
            vec![wall(NOW - 50 * MINUTE), wall(NOW + 24 * 60 * MINUTE)],
            NOW,
            true,
            "one from before and one from after a step back",
        ),
        (
            vec![wall(NOW - 50 * MINUTE), wall(NOW + MAX_FUTURE_DELIVERY_MS + MINUTE)],
            NOW,
            false,
            "one dated more than 24 h ahead no longer counts by the wall clock",
        ),
        (
            vec![wall(NOW + YEAR), wall(NOW + YEAR + 5 * MINUTE)],
            NOW,
            false,
            "the clock stepped back a year, stored deliveries only: they do not block a year",
        ),
        (
            vec![
                here(NOW + YEAR, MONO - 10 * MINUTE),
                here(NOW + YEAR + 5 * MINUTE, MONO - 5 * MINUTE),
            ],
            NOW,
            true,
            "the clock stepped back a year in this process: the monotonic record counts both",
        ),
        (
            vec![
                here(NOW - 10 * MINUTE, MONO - 10 * MINUTE),
                here(NOW - 5 * MINUTE, MONO - 5 * MINUTE),
            ],
            NOW + STEP,
            true,
            "the clock stepped forward 2 h: this process made both 10 and 5 min ago",
        ),
        (
            vec![
                wall(NOW - 10 * MINUTE),
                here(NOW - 5 * MINUTE, MONO - 5 * MINUTE),
            ],
            NOW + STEP,
            false,
            "after a restart and a step forward only the one this process made counts",
        ),
        (
            vec![
                wall(NOW + STEP - 20 * MINUTE),
                here(NOW - 5 * MINUTE, MONO - 5 * MINUTE),
            ],
            NOW + STEP,
            true,
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
            true,
            "a delivery whose outbox row is gone still counts; one an hour old by both clocks does not",
        ),
        (
            vec![
                here(NOW - 10 * MINUTE, MONO - 70 * MINUTE),
                here(NOW - 5 * MINUTE, MONO - 65 * MINUTE),
            ],
            NOW,
            true,
            "the clock stepped back 1 h: the wall clock still counts both",
        ),
    ];
    for (deliveries, now, limited, why) in cases {
        assert_eq!(is_rate_limited(&deliveries, now, MONO), limited, "{why}");
    }
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
    // `trim()` and `/[\s_]+/` as in Node: U+FEFF is whitespace there, U+0085 is not.
    // (name, name.trim().toLowerCase().replace(/[\s_]+/g, "-") in Node is lead-like)
    let cases = [
        ("\u{feff}Lead\u{feff}", true),
        ("team\u{feff}lead", true),
        ("team\u{85}lead", false),
        ("\u{85}lead", false),
        // A run of whitespace and `_` becomes one dash; a dash written
        // beside it stays, so these are `team--lead`, not lead-like.
        ("team- lead", false),
        ("team-_lead", false),
        ("team -lead", false),
        ("team--lead", false),
        ("team _lead", true),
        ("team\u{a0}lead", true),
    ];
    for (name, lead_like) in cases {
        assert_eq!(is_lead_like(name), lead_like, "{name:?}");
    }
}

#[test]
fn keyed_nudges_get_their_own_id_and_hash() {
    let base = planned();
    let keyed = base.keyed(
        &TeamName::parse("forge").unwrap(),
        &MemberName::parse("Jack").unwrap(),
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
    let text = planned().payload.text.clone();
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
    let text = plan_nudge(&lead).unwrap().payload.text.clone();
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
        .text
        .clone();
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
        let (mut item, _) = ensure_for_jack(None, &planned());
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

#[test]
fn a_claim_clears_the_retry_time_and_the_last_error() {
    // As the app's store claims: the retry time and error of the attempt
    // before are gone, so an item delivered (or superseded) on a retry
    // carries no stale nextAttemptAt.
    let (mut item, _) = ensure_for_jack(None, &planned());
    claim(&mut item, "a", NOW);
    let retry = AttemptEnd::Retryable {
        reason: RetryReason::MemberBusy("active_tool_activity".into()),
        retry_at: NOW + 90_000,
        busy_tool: None,
    };
    assert!(finish_attempt(&mut item, 1, &retry, NOW));
    assert!(item.next_attempt_at.is_some());
    claim(&mut item, "a", NOW + 90_000);
    assert_eq!(
        (item.next_attempt_at.as_ref(), item.last_error.as_deref()),
        (None, None)
    );
    assert!(finish_attempt(
        &mut item,
        2,
        &AttemptEnd::Delivered,
        NOW + 90_001
    ));
    assert_eq!(item.next_attempt_at, None);
}

#[test]
fn planner_codes_have_one_spelling_each() {
    let mut seen = std::collections::HashSet::new();
    for code in PlannerCode::ALL {
        assert!(seen.insert(code.as_str()), "{code:?} spelled twice");
        assert_eq!(PlannerCode::parse(code.as_str()), Some(code));
    }
    for hold in [
        ActivationHold::StatusNotNudgeable,
        ActivationHold::BlockingMetrics,
        ActivationHold::Phase2NotReady,
    ] {
        assert_eq!(PlannerCode::from(hold).as_str(), hold.as_str());
    }
    for outcome in [
        EnsureOutcome::Created,
        EnsureOutcome::Existing,
        EnsureOutcome::PayloadConflict,
    ] {
        assert_eq!(PlannerCode::from(outcome).as_str(), outcome.code());
    }
    assert_eq!(PlannerCode::parse("brand_new_code"), None);
}

/// A payload's hash is written straight from its `Serialize` impl; it must
/// stay the hash of the canonical JSON of its `serde_json::Value`, which
/// the outboxes already on disk (and the app's) carry.
#[test]
fn payload_hash_is_the_hash_of_its_canonical_value() {
    use crate::domain::fingerprint::{canonical_json, sha256_hex};
    let task = |id: &str, display: &str| TaskRef {
        team_name: "forge".into(),
        task_id: id.into(),
        display_id: display.into(),
    };
    let base = NudgePayload {
        to: "jack".into(),
        text: "Work sync: 2 items".into(),
        task_refs: vec![task("1", "#1"), task("b-2", "#b2")],
        work_sync_intent: NudgeIntent::AgendaSync,
        work_sync_intent_key: None,
        work_sync_review_request_event_ids: vec![],
        agenda_fingerprint: "agenda:v1:abc".into(),
    };
    let payloads = [
        base.clone(),
        NudgePayload {
            work_sync_intent: NudgeIntent::ReviewPickup,
            work_sync_intent_key: Some("status-only:agenda:v1:abc".into()),
            work_sync_review_request_event_ids: vec!["e2".into(), "e1".into()],
            ..base.clone()
        },
        NudgePayload {
            to: "Zoë \u{1F600}".into(),
            text: "quote \" backslash \\ newline \n tab \t nul \u{0} sep \u{2028} bmp \u{FFFF}"
                .into(),
            task_refs: vec![task("\u{10000}", "\u{FB01}"), task("", "")],
            agenda_fingerprint: String::new(),
            ..base.clone()
        },
        NudgePayload {
            task_refs: vec![],
            ..base
        },
    ];
    for payload in payloads {
        let via_value =
            sha256_hex(canonical_json(&serde_json::to_value(&payload).unwrap()).as_bytes());
        assert_eq!(payload.hash(), via_value, "{payload:?}");
    }
}

mod payload_text {
    use super::*;
    use crate::domain::fingerprint::{canonical_json, sha256_hex};
    use crate::domain::json_text::a_test_text;
    use proptest::prelude::*;

    fn a_payload() -> impl Strategy<Value = NudgePayload> {
        let task_ref = (a_test_text(), a_test_text(), a_test_text()).prop_map(
            |(team_name, task_id, display_id)| TaskRef {
                team_name,
                task_id,
                display_id,
            },
        );
        (
            (
                a_test_text(),
                a_test_text(),
                prop::collection::vec(task_ref, 0..3),
            ),
            (any::<bool>(), prop::option::of(a_test_text())),
            (prop::collection::vec(a_test_text(), 0..3), a_test_text()),
        )
            .prop_map(
                |((to, text, task_refs), (review, key), (ids, fingerprint))| NudgePayload {
                    to,
                    text,
                    task_refs,
                    work_sync_intent: if review {
                        NudgeIntent::ReviewPickup
                    } else {
                        NudgeIntent::AgendaSync
                    },
                    work_sync_intent_key: key,
                    work_sync_review_request_event_ids: ids,
                    agenda_fingerprint: fingerprint,
                },
            )
    }

    proptest! {
        /// Every field set or unset: the hash is that of the canonical JSON
        /// of the payload's `serde_json::Value`.
        #[test]
        fn any_payload_hash_is_the_hash_of_its_canonical_value(payload in a_payload()) {
            let value = serde_json::to_value(&payload).unwrap();
            prop_assert_eq!(payload.hash(), sha256_hex(canonical_json(&value).as_bytes()));
        }
    }

    #[test]
    fn intent_spellings_are_serdes() {
        for intent in [NudgeIntent::AgendaSync, NudgeIntent::ReviewPickup] {
            assert_eq!(serde_json::to_value(intent).unwrap(), intent.as_str());
        }
    }
}
