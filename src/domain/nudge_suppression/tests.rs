//! Nudge suppression: candidates, reset time, threshold, and the two steps
//! on a status.

use super::*;
use crate::domain::agenda::{ActionableWorkItem, Agenda, Evidence, ItemKind, Priority};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::status::{ReconciledBy, ReportState, Shadow};
use crate::domain::team::ProviderId;
use crate::domain::time::format_iso;

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

#[test]
fn suppression_threshold() {
    assert!(!is_suppressed(3));
    assert!(is_suppressed(4));
}

#[test]
fn suppression_reset_time_follows_the_previous_status() {
    let current = status(vec![work("1", "owned_pending")]);
    let history = |fingerprint: &str, report: Option<EpochMs>, reset: Option<EpochMs>| {
        Some(SuppressionHistory {
            fingerprint: fingerprint.into(),
            accepted_report_at: report.map(IsoTime::at),
            reset_at: reset.map(IsoTime::at),
        })
    };
    let cases: Vec<(Option<SuppressionHistory>, Option<EpochMs>, &str)> = vec![
        (None, None, "no previous status: every delivery counts"),
        (
            history("agenda:v1:old", Some(NOW - 5), Some(NOW - 1)),
            Some(NOW),
            "a new fingerprint resets at this evaluation",
        ),
        (
            history("agenda:v1:abc", None, None),
            None,
            "same fingerprint, nothing to reset",
        ),
        (
            history("agenda:v1:abc", Some(NOW - 9), None),
            Some(NOW - 9),
            "an accepted report of the fingerprint",
        ),
        (
            history("agenda:v1:abc", Some(NOW - 9), Some(NOW - 3)),
            Some(NOW - 3),
            "the later of report and previous reset",
        ),
        (
            history("agenda:v1:abc", Some(NOW - 2), Some(NOW - 3)),
            Some(NOW - 2),
            "the later of report and previous reset",
        ),
    ];
    for (previous, expected, why) in cases {
        let got = suppression_reset_at(&current, previous.as_ref());
        assert_eq!(got.and_then(|t| t.ms()), expected, "{why}");
    }
}

#[test]
fn suppression_candidates() {
    let needs_sync = status(vec![work("1", "owned_pending")]);
    let mut empty = status(vec![]);
    empty.shadow.as_mut().unwrap().would_nudge = false;
    let mut caught_up = needs_sync.clone();
    caught_up.state = StatusState::CaughtUp;
    let mut leased = needs_sync.clone();
    leased.report = Some(crate::domain::status::Report {
        state: ReportState::StillWorking,
        agenda_fingerprint: "agenda:v1:abc".into(),
        member_name: "Jack".into(),
        team_name: "forge".into(),
        reported_at: IsoTime::at(NOW - 1),
        expires_at: Some(IsoTime::at(NOW + 60_000)),
        task_ids: None,
        note: None,
        source: None,
        accepted: true,
        rejection_code: None,
    });
    let cases = [
        (needs_sync, true, "needs sync, would nudge"),
        (empty, false, "empty agenda"),
        (caught_up, false, "caught up"),
        (leased, false, "a live accepted work lease"),
    ];
    for (status, expected, why) in cases {
        assert_eq!(is_suppression_candidate(&status), expected, "{why}");
    }
}

/// A delivered nudge of `fingerprint`, delivered at `at`.
fn delivered(fingerprint: &str, at: EpochMs) -> OutboxItem {
    let planned = crate::domain::nudge::plan_nudge(&status(vec![work("1", "owned_pending")]))
        .expect("a needs-sync status plans a nudge");
    let (mut item, _) = crate::domain::nudge::ensure_pending(
        None,
        &planned,
        &TeamName::parse("forge").unwrap(),
        &MemberName::parse("jack").unwrap(),
        NOW,
    );
    item.agenda_fingerprint = fingerprint.into();
    item.status = OutboxStatus::Delivered;
    item.delivered_at = Some(IsoTime::at(at));
    item
}

/// Both steps on a fresh needs-sync status with `history`, as a reconcile
/// applies them.
fn applied(
    mut status: MemberStatus,
    history: Option<SuppressionHistory>,
    force_nudge: bool,
    outbox: &[OutboxItem],
) -> (MemberStatus, Option<SuppressedNudge>) {
    let suppressed = reset_count(&mut status, history.as_ref(), force_nudge)
        .and_then(|count| suppress(&mut status, &count, outbox));
    (status, suppressed)
}

#[test]
fn four_deliveries_of_the_agenda_since_the_reset_suppress_the_nudge() {
    const FP: &str = "agenda:v1:abc";
    let four = vec![delivered(FP, NOW - 40); 4];
    let mut pending = four.clone();
    pending[0].status = OutboxStatus::Pending;
    let mut other_agenda = four.clone();
    other_agenda[0].agenda_fingerprint = "agenda:v1:old".into();
    let mut one_before_reset = four.clone();
    one_before_reset[0].delivered_at = Some(IsoTime::at(NOW - 60));
    let reset_at = |at: EpochMs| {
        Some(SuppressionHistory {
            fingerprint: FP.into(),
            accepted_report_at: None,
            reset_at: Some(IsoTime::at(at)),
        })
    };
    let mut caught_up = status(vec![work("1", "owned_pending")]);
    caught_up.state = StatusState::CaughtUp;
    let needs_sync = || status(vec![work("1", "owned_pending")]);
    // (why, status, history, forced, outbox, suppressed, reset time, added diagnostic)
    type Case = (
        &'static str,
        MemberStatus,
        Option<SuppressionHistory>,
        bool,
        Vec<OutboxItem>,
        bool,
        Option<EpochMs>,
        Option<Diagnostic>,
    );
    let cases: Vec<Case> = vec![
        (
            "four delivered",
            needs_sync(),
            None,
            false,
            four.clone(),
            true,
            None,
            Some(Diagnostic::NudgeSuppressed),
        ),
        (
            "three delivered",
            needs_sync(),
            None,
            false,
            four[..3].to_vec(),
            false,
            None,
            None,
        ),
        (
            "one still pending",
            needs_sync(),
            None,
            false,
            pending,
            false,
            None,
            None,
        ),
        (
            "one of another agenda",
            needs_sync(),
            None,
            false,
            other_agenda,
            false,
            None,
            None,
        ),
        (
            "one delivered before the reset",
            needs_sync(),
            reset_at(NOW - 50),
            false,
            one_before_reset,
            false,
            Some(NOW - 50),
            None,
        ),
        (
            "all delivered after the reset",
            needs_sync(),
            reset_at(NOW - 50),
            false,
            four.clone(),
            true,
            Some(NOW - 50),
            Some(Diagnostic::NudgeSuppressed),
        ),
        (
            "a forced nudge resets now and suppresses nothing",
            needs_sync(),
            reset_at(NOW - 50),
            true,
            four.clone(),
            false,
            Some(NOW),
            Some(Diagnostic::SuppressionManualReset),
        ),
        (
            "not a candidate",
            caught_up,
            None,
            false,
            four,
            false,
            None,
            None,
        ),
    ];
    for (why, before, history, force, outbox, suppressed, reset, added) in cases {
        let (after, line) = applied(before.clone(), history, force, &outbox);
        let shadow = after.shadow.as_ref().unwrap();
        assert_eq!(line.is_some(), suppressed, "{why}");
        assert_eq!(is_recorded(&after), suppressed, "{why}");
        assert_eq!(
            shadow.would_nudge,
            before.shadow.as_ref().unwrap().would_nudge && !suppressed,
            "{why}"
        );
        assert_eq!(shadow.nudge_suppression.is_some(), suppressed, "{why}");
        assert_eq!(
            shadow
                .nudge_suppression_reset_at
                .as_ref()
                .and_then(IsoTime::ms),
            reset,
            "{why}"
        );
        let added_now: Vec<&String> = after.diagnostics[before.diagnostics.len()..]
            .iter()
            .collect();
        assert_eq!(
            added_now,
            added
                .map(|d| d.as_str().to_string())
                .iter()
                .collect::<Vec<_>>(),
            "{why}"
        );
        if let Some(line) = line {
            assert_eq!(line.diagnostics, after.diagnostics, "{why}");
            assert_eq!(line.metadata["deliveredCount"], 4, "{why}");
            assert_eq!(
                line.metadata["suppressionLimit"], SUPPRESS_AFTER_DELIVERIES,
                "{why}"
            );
            assert_eq!(
                line.metadata.get("resetAt").is_some(),
                reset.is_some(),
                "{why}"
            );
        }
    }
}
