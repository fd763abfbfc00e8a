//! Every validator code, the order between them, lease rules and request parsing.

use serde_json::json;

use super::*;
use crate::domain::agenda::{ActionableWorkItem, Evidence};

fn item(task_id: &str, kind: ItemKind, priority: Priority) -> ActionableWorkItem {
    ActionableWorkItem {
        task_id: task_id.into(),
        display_id: Some(format!("#{task_id}")),
        subject: "s".into(),
        kind,
        assignee: "jack".into(),
        priority,
        reason: "r".into(),
        evidence: Evidence::default(),
    }
}

fn agenda(items: Vec<ActionableWorkItem>) -> Agenda {
    Agenda {
        team_name: "forge".into(),
        member_name: "jack".into(),
        generated_at: "2026-11-22T10:00:00.000Z".into(),
        fingerprint: "fp".into(),
        items: items.into_iter().map(std::sync::Arc::new).collect(),
        diagnostics: vec![],
    }
}

fn request(state: &str) -> ReportRequest {
    ReportRequest::parse(&json!({
        "teamName": "forge", "memberName": "jack", "state": state,
        "agendaFingerprint": "fp", "reportToken": "t",
    }))
    .unwrap()
}

fn ctx(agenda: &Agenda) -> ValidationContext<'_> {
    ValidationContext {
        agenda,
        team_runtime_active: true,
        member_runtime_active: true,
        on_active_roster: true,
        token: TokenCheck::Valid,
    }
}

fn work() -> Agenda {
    agenda(vec![
        item("1", ItemKind::Work, Priority::Normal),
        item("2", ItemKind::Work, Priority::Normal),
    ])
}

#[test]
fn accepts_a_valid_still_working_report() {
    let a = work();
    assert_eq!(validate(&request("still_working"), &ctx(&a)), Ok(()));
}

#[test]
fn every_code_in_documented_order() {
    // Each step breaks one more precondition than the next; the earliest must win.
    let a = work();
    let mut r = request("caught_up");
    r.task_ids = Some(vec!["99".into()]);
    let mut c = ValidationContext {
        team_runtime_active: false,
        member_runtime_active: false,
        on_active_roster: false,
        token: TokenCheck::Missing,
        ..ctx(&a)
    };
    r.member_name = "user".into();
    r.agenda_fingerprint = "old".into();
    assert_eq!(validate(&r, &c), Err(Rejection::TeamRuntimeInactive));
    c.team_runtime_active = true;
    assert_eq!(validate(&r, &c), Err(Rejection::MemberRuntimeInactive));
    c.member_runtime_active = true;
    assert_eq!(validate(&r, &c), Err(Rejection::ReservedOrInvalidMember));
    // The agenda is jack's: any other reporting member is a mismatch.
    r.member_name = "jill".into();
    assert_eq!(validate(&r, &c), Err(Rejection::IdentityMismatch));
    r.member_name = " JACK ".into();
    assert_eq!(validate(&r, &c), Err(Rejection::MemberInactive));
    c.on_active_roster = true;
    assert_eq!(validate(&r, &c), Err(Rejection::StaleFingerprint));
    r.agenda_fingerprint = "fp".into();
    assert_eq!(validate(&r, &c), Err(Rejection::IdentityUntrusted));
    c.token = TokenCheck::Expired;
    assert_eq!(validate(&r, &c), Err(Rejection::InvalidReportToken));
    c.token = TokenCheck::Invalid;
    assert_eq!(validate(&r, &c), Err(Rejection::InvalidReportToken));
    c.token = TokenCheck::Valid;
    assert_eq!(validate(&r, &c), Err(Rejection::ForeignTaskId));
    r.task_ids = Some(vec!["#1".into()]);
    assert_eq!(
        validate(&r, &c),
        Err(Rejection::CaughtUpRejectedActionableItemsExist)
    );
    r.state = ReportState::Blocked;
    assert_eq!(validate(&r, &c), Err(Rejection::BlockedWithoutEvidence));
    r.state = ReportState::StillWorking;
    assert_eq!(validate(&r, &c), Ok(()));
    let empty = agenda(vec![]);
    assert_eq!(validate(&r, &ctx(&empty)), Err(Rejection::ForeignTaskId));
    r.task_ids = None;
    assert_eq!(
        validate(&r, &ctx(&empty)),
        Err(Rejection::StillWorkingRejectedAgendaEmpty)
    );
    r.state = ReportState::CaughtUp;
    assert_eq!(validate(&r, &ctx(&empty)), Ok(()));
}

#[test]
fn only_the_apps_reserved_names_cannot_report() {
    let a = work();
    for name in ["user", "System", " "] {
        let mut r = request("still_working");
        r.member_name = name.into();
        assert_eq!(
            validate(&r, &ctx(&a)),
            Err(Rejection::ReservedOrInvalidMember),
            "{name:?}"
        );
    }
    // Provider ids and lead aliases are names like any other, as in the app:
    // reporting on jack's agenda is a mismatch, not a reserved name.
    for name in ["codex", "anthropic", "lead", "team-leader"] {
        let mut r = request("still_working");
        r.member_name = name.into();
        assert_eq!(
            validate(&r, &ctx(&a)),
            Err(Rejection::IdentityMismatch),
            "{name}"
        );
    }
    // A member named `team-lead` that is not the lead reports its own work.
    let mut own_agenda = work();
    own_agenda.member_name = "team-lead".into();
    let mut r = request("still_working");
    r.member_name = "team-lead".into();
    assert_eq!(validate(&r, &ctx(&own_agenda)), Ok(()));
}

#[test]
fn blocked_needs_blocked_evidence_within_task_ids() {
    let a = agenda(vec![
        item("1", ItemKind::Work, Priority::Normal),
        item("5", ItemKind::BlockedDependency, Priority::Blocked),
    ]);
    let mut r = request("blocked");
    assert_eq!(validate(&r, &ctx(&a)), Ok(()));
    r.task_ids = Some(vec!["1".into()]);
    assert_eq!(
        validate(&r, &ctx(&a)),
        Err(Rejection::BlockedWithoutEvidence)
    );
    r.task_ids = Some(vec!["#5".into()]);
    assert_eq!(validate(&r, &ctx(&a)), Ok(()));
}

#[test]
fn lease_defaults_and_clamping() {
    let a = work();
    assert_eq!(lease_ms(ReportState::CaughtUp, &a, Some(5e6)), None);
    assert_eq!(
        lease_ms(ReportState::StillWorking, &a, None),
        Some(15 * 60_000)
    );
    assert_eq!(lease_ms(ReportState::Blocked, &a, None), Some(30 * 60_000));
    assert_eq!(
        lease_ms(ReportState::StillWorking, &a, Some(1.0)),
        Some(60_000)
    );
    assert_eq!(
        lease_ms(ReportState::StillWorking, &a, Some(90_000.9)),
        Some(90_000)
    );
    assert_eq!(
        lease_ms(ReportState::StillWorking, &a, Some(1e12)),
        Some(60 * 60_000)
    );
    assert_eq!(lease_ms(ReportState::Blocked, &a, Some(-5.0)), Some(60_000));

    let mut pickup = item("7", ItemKind::Review, Priority::ReviewRequested);
    pickup.evidence.review_obligation = Some("review_pickup_required".into());
    pickup.evidence.can_bypass_phase2 = Some(true);
    let pickups = agenda(vec![pickup.clone()]);
    assert_eq!(
        lease_ms(ReportState::StillWorking, &pickups, None),
        Some(3 * 60_000)
    );
    assert_eq!(
        lease_ms(ReportState::StillWorking, &pickups, Some(3.6e6)),
        Some(10 * 60_000)
    );
    let mixed = agenda(vec![pickup, item("1", ItemKind::Work, Priority::Normal)]);
    assert_eq!(
        lease_ms(ReportState::StillWorking, &mixed, None),
        Some(15 * 60_000)
    );
}

#[test]
fn malformed_requests_are_invalid_payload() {
    let base = json!({"teamName": "forge", "memberName": "jack", "state": "still_working", "agendaFingerprint": "fp"});
    assert!(ReportRequest::parse(&base).is_ok());
    let with = |key: &str, value: serde_json::Value| {
        let mut v = base.clone();
        v[key] = value;
        ReportRequest::parse(&v)
    };
    assert!(with("state", json!("done")).is_err());
    assert!(with("note", json!("x".repeat(1001))).is_err());
    assert!(with("note", json!("x".repeat(1000))).is_ok());
    assert!(with(
        "taskIds",
        json!((0..21).map(|i| i.to_string()).collect::<Vec<_>>())
    )
    .is_err());
    assert!(with("taskIds", json!(["x".repeat(129)])).is_err());
    assert!(with("taskIds", json!([1])).is_err());
    assert!(with("teamName", json!(5)).is_err());
    assert!(with("reportToken", json!({})).is_err());
    assert!(with("leaseTtlMs", json!("10")).is_err());
    assert!(with("source", json!("robot")).is_err());
    // Every string field is bounded: nothing unbounded reaches the stores.
    let real_fingerprint = format!("agenda:v1:{}", "a".repeat(64));
    assert!(with("agendaFingerprint", json!(real_fingerprint)).is_ok());
    assert!(with("agendaFingerprint", json!(format!("{real_fingerprint}0"))).is_err());
    assert!(with("agendaFingerprint", json!("f".repeat(10 << 20))).is_err());
    assert!(with("reportToken", json!("t".repeat(2048))).is_ok());
    assert!(with("reportToken", json!("t".repeat(2049))).is_err());
    assert!(with("reportedAt", json!("2".repeat(65))).is_err());
    assert!(ReportRequest::parse(&json!([])).is_err());
    assert!(ReportRequest::parse(&json!({"state": "blocked"})).is_err());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    fn token_check() -> impl Strategy<Value = TokenCheck> {
        prop_oneof![
            Just(TokenCheck::Valid),
            Just(TokenCheck::Missing),
            Just(TokenCheck::Invalid),
            Just(TokenCheck::Expired),
        ]
    }

    proptest! {
        #[test]
        fn accepted_only_with_a_valid_token_for_the_current_fingerprint(
            member in prop_oneof![Just("jack".to_string()), Just("user".to_string()), Just("codex".to_string()), "[a-z]{1,6}"],
            fp in prop_oneof![Just("fp".to_string()), "[a-z]{1,4}"],
            state in prop_oneof![Just("still_working"), Just("blocked"), Just("caught_up")],
            task_ids in proptest::option::of(proptest::collection::vec("#?[0-9]{1,2}", 0..4)),
            token in token_check(),
            team_up in any::<bool>(), member_up in any::<bool>(), roster in any::<bool>(),
            items in 0usize..4,
        ) {
            let a = agenda((0..items).map(|i| item(&i.to_string(), ItemKind::Work, Priority::Normal)).collect());
            let mut r = request(state);
            r.member_name = member.clone();
            r.agenda_fingerprint = fp.clone();
            r.task_ids = task_ids;
            let c = ValidationContext {
                team_runtime_active: team_up,
                member_runtime_active: member_up,
                on_active_roster: roster,
                token,
                ..ctx(&a)
            };
            if validate(&r, &c).is_ok() {
                prop_assert_eq!(member.as_str(), "jack");
                prop_assert_eq!(token, TokenCheck::Valid);
                prop_assert_eq!(fp, a.fingerprint.clone());
                prop_assert!(team_up && member_up && roster);
                prop_assert!(!["user", "system", "codex"].contains(&member.as_str()));
            }
        }
    }
}
