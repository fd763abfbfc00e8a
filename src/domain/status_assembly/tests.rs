//! The status assembled from each kind of input: decision, carried report,
//! shadow, stall, busy, store and token diagnostics, accepted reports.

use super::*;
use crate::domain::agenda::{ActionableWorkItem, Evidence, ItemKind, Priority};
use crate::domain::status::ReportState;

const NOW: EpochMs = 1_700_000_000_000;

fn item(task_id: &str) -> ActionableWorkItem {
    ActionableWorkItem {
        task_id: task_id.into(),
        display_id: Some(format!("#{task_id}")),
        subject: "s".into(),
        kind: ItemKind::Work,
        assignee: "jack".into(),
        priority: Priority::Normal,
        reason: "r".into(),
        evidence: Evidence::default(),
    }
}

fn agenda(fingerprint: &str, items: usize) -> Agenda {
    Agenda {
        team_name: "forge".into(),
        member_name: "jack".into(),
        generated_at: "2023-11-14T22:13:20.000Z".into(),
        fingerprint: fingerprint.into(),
        items: (0..items).map(|i| item(&i.to_string()).into()).collect(),
        diagnostics: vec!["agenda_note".into()],
    }
}

fn report(state: ReportState, fingerprint: &str, accepted: bool) -> Report {
    Report {
        state,
        agenda_fingerprint: fingerprint.into(),
        member_name: "jack".into(),
        team_name: "forge".into(),
        reported_at: IsoTime::at(NOW - 1_000),
        expires_at: Some(IsoTime::at(NOW + 60_000)),
        task_ids: None,
        note: None,
        source: None,
        accepted,
        rejection_code: None,
    }
}

/// A stored status of `state` over agenda `fingerprint`, carrying `report`.
fn stored(state: StatusState, fingerprint: &str, report: Option<Report>) -> MemberStatus {
    let mut status = assemble(inputs());
    status.state = state;
    status.agenda.fingerprint = fingerprint.into();
    status.report = report;
    status
}

/// An active member, one item on agenda `fp`, nothing stored, token issued.
fn inputs() -> StatusInputs {
    StatusInputs {
        team_name: "forge".into(),
        on_active_roster: true,
        provider_id: Some(ProviderId::Codex),
        agenda: agenda("fp", 1),
        previous: None,
        store_diagnostic: None,
        runtime: RuntimeActivity {
            team_active: true,
            member_active: true,
        },
        member_busy: None,
        now: NOW,
        by: ReconciledBy::Queue,
        trigger_reasons: vec![],
        stall_trigger: None,
        accepted_report: None,
        recovery: None,
        token: TokenGrant::Issued {
            token: "tok".into(),
            expires_at: IsoTime::at(NOW + 1),
        },
    }
}

fn diag(d: Diagnostic) -> String {
    d.as_str().to_string()
}

struct Case {
    name: &'static str,
    inputs: StatusInputs,
    state: StatusState,
    diagnostics: Vec<String>,
    /// The fingerprint of the report carried, if one is.
    carried: Option<&'static str>,
    would_nudge: bool,
    fingerprint_changed: bool,
}

#[test]
fn each_input_lands_where_the_status_says() {
    let issued = diag(Diagnostic::ReportTokenIssued);
    let cases = vec![
        Case {
            name: "nothing stored: needs sync, token last",
            inputs: inputs(),
            state: StatusState::NeedsSync,
            diagnostics: vec![
                "agenda_note".into(),
                diag(Diagnostic::NoCurrentReport),
                issued.clone(),
            ],
            carried: None,
            would_nudge: true,
            fingerprint_changed: false,
        },
        Case {
            name: "empty agenda: caught up, no nudge",
            inputs: StatusInputs {
                agenda: agenda("fp", 0),
                ..inputs()
            },
            state: StatusState::CaughtUp,
            diagnostics: vec![
                "agenda_note".into(),
                diag(Diagnostic::AgendaEmpty),
                issued.clone(),
            ],
            carried: None,
            would_nudge: false,
            fingerprint_changed: false,
        },
        Case {
            name: "member off the roster: inactive, token withheld",
            inputs: StatusInputs {
                on_active_roster: false,
                token: TokenGrant::Withheld,
                ..inputs()
            },
            state: StatusState::Inactive,
            diagnostics: vec!["agenda_note".into(), diag(Diagnostic::MemberOrTeamInactive)],
            carried: None,
            would_nudge: false,
            fingerprint_changed: false,
        },
        Case {
            name: "stored lease of this agenda is carried",
            inputs: StatusInputs {
                previous: Some(stored(
                    StatusState::StillWorking,
                    "fp",
                    Some(report(ReportState::StillWorking, "fp", true)),
                )),
                token: TokenGrant::Unavailable,
                ..inputs()
            },
            state: StatusState::StillWorking,
            diagnostics: vec![
                "agenda_note".into(),
                diag(Diagnostic::LeaseStillWorking),
                diag(Diagnostic::ReportTokenUnavailable),
            ],
            carried: Some("fp"),
            would_nudge: false,
            fingerprint_changed: false,
        },
        Case {
            name: "stored rejected report is no lease",
            inputs: StatusInputs {
                previous: Some(stored(
                    StatusState::NeedsSync,
                    "old",
                    Some(report(ReportState::StillWorking, "fp", false)),
                )),
                ..inputs()
            },
            state: StatusState::NeedsSync,
            diagnostics: vec![
                "agenda_note".into(),
                diag(Diagnostic::NoCurrentReport),
                issued.clone(),
            ],
            carried: None,
            would_nudge: true,
            fingerprint_changed: true,
        },
        Case {
            name: "accepted report overrides the stored one",
            inputs: StatusInputs {
                previous: Some(stored(StatusState::NeedsSync, "fp", None)),
                accepted_report: Some(report(ReportState::Blocked, "fp", true)),
                ..inputs()
            },
            state: StatusState::Blocked,
            diagnostics: vec![
                "agenda_note".into(),
                diag(Diagnostic::LeaseBlocked),
                issued.clone(),
            ],
            carried: Some("fp"),
            would_nudge: false,
            fingerprint_changed: false,
        },
        Case {
            name: "runtime stall: same agenda still needs sync after a turn",
            inputs: StatusInputs {
                previous: Some(stored(StatusState::NeedsSync, "fp", None)),
                trigger_reasons: vec!["turn_settled".into()],
                stall_trigger: Some(StallTrigger::TurnSettled),
                member_busy: Some("tool_running"),
                store_diagnostic: Some("legacy_fallback_used:status_v1".into()),
                ..inputs()
            },
            state: StatusState::NeedsSync,
            diagnostics: vec![
                "agenda_note".into(),
                diag(Diagnostic::NoCurrentReport),
                "legacy_fallback_used:status_v1".into(),
                diag(Diagnostic::RuntimeStall),
                diag(Diagnostic::StallTrigger(StallTrigger::TurnSettled)),
                "member_busy:tool_running".into(),
                issued.clone(),
            ],
            carried: None,
            would_nudge: true,
            fingerprint_changed: false,
        },
        Case {
            name: "no stall when the agenda moved",
            inputs: StatusInputs {
                previous: Some(stored(StatusState::NeedsSync, "old", None)),
                stall_trigger: Some(StallTrigger::TurnSettled),
                ..inputs()
            },
            state: StatusState::NeedsSync,
            diagnostics: vec![
                "agenda_note".into(),
                diag(Diagnostic::NoCurrentReport),
                issued.clone(),
            ],
            carried: None,
            would_nudge: true,
            fingerprint_changed: true,
        },
    ];
    for case in cases {
        let status = assemble(case.inputs);
        assert_eq!(status.state, case.state, "{}", case.name);
        assert_eq!(status.diagnostics, case.diagnostics, "{}", case.name);
        assert_eq!(
            status
                .report
                .as_ref()
                .map(|r| r.agenda_fingerprint.as_str()),
            case.carried,
            "{}",
            case.name
        );
        let shadow = status.shadow.as_ref().expect("a shadow");
        assert_eq!(shadow.would_nudge, case.would_nudge, "{}", case.name);
        assert_eq!(
            shadow.fingerprint_changed, case.fingerprint_changed,
            "{}",
            case.name
        );
        assert_eq!(status.evaluated_at, IsoTime::at(NOW), "{}", case.name);
    }
}

#[test]
fn the_shadow_keeps_sorted_triggers_and_the_token_its_expiry() {
    let status = assemble(StatusInputs {
        previous: Some(stored(StatusState::NeedsSync, "old", None)),
        trigger_reasons: vec![
            "task_changed".into(),
            "manual".into(),
            "task_changed".into(),
        ],
        ..inputs()
    });
    let shadow = status.shadow.unwrap();
    assert_eq!(
        shadow.trigger_reasons,
        Some(vec!["manual".to_string(), "task_changed".to_string()])
    );
    assert_eq!(shadow.previous_fingerprint.as_deref(), Some("old"));
    assert_eq!(shadow.reconciled_by, ReconciledBy::Queue);
    assert_eq!(status.report_token.as_deref(), Some("tok"));
    assert_eq!(status.report_token_expires_at, Some(IsoTime::at(NOW + 1)));
    assert_eq!(status.provider_id, Some(ProviderId::Codex));
}

#[test]
fn an_accepted_report_writes_its_own_shadow_and_diagnostics() {
    let cases = [
        (
            TokenGrant::Unavailable,
            Some(Diagnostic::ReportTokenUnavailable),
        ),
        (TokenGrant::Withheld, None),
    ];
    for (token, token_diagnostic) in cases {
        let status = assemble_accepted(StatusInputs {
            previous: Some(stored(StatusState::NeedsSync, "old", None)),
            trigger_reasons: vec!["manual".into()],
            accepted_report: Some(report(ReportState::StillWorking, "fp", true)),
            token,
            ..inputs()
        });
        assert_eq!(status.state, StatusState::StillWorking);
        let mut expected = vec!["agenda_note".to_string(), diag(Diagnostic::ReportAccepted)];
        expected.extend(token_diagnostic.map(diag));
        assert_eq!(status.diagnostics, expected);
        let shadow = status.shadow.unwrap();
        assert_eq!(shadow.reconciled_by, ReconciledBy::Report);
        assert!(!shadow.would_nudge && !shadow.fingerprint_changed);
        assert_eq!(shadow.previous_fingerprint, None);
        assert_eq!(shadow.trigger_reasons, None);
    }
}

#[test]
fn only_an_active_member_with_work_can_need_sync() {
    let cases = [
        ("active with work", inputs(), true),
        (
            "no work",
            StatusInputs {
                agenda: agenda("fp", 0),
                ..inputs()
            },
            false,
        ),
        (
            "off the roster",
            StatusInputs {
                on_active_roster: false,
                ..inputs()
            },
            false,
        ),
        (
            "member runtime down",
            StatusInputs {
                runtime: RuntimeActivity {
                    team_active: true,
                    member_active: false,
                },
                ..inputs()
            },
            false,
        ),
    ];
    for (name, inputs, expected) in cases {
        assert_eq!(inputs.can_need_sync(), expected, "{name}");
        let needs_sync = assemble(inputs).state == StatusState::NeedsSync;
        assert!(expected || !needs_sync, "{name}");
    }
}
