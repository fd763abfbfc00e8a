//! Reports end to end over the real file stores: leases, rejections, replay,
//! metrics. Uses the bundled example team and a manual clock.

mod common;

use common::{MINUTE, NOW};
use std::fs;
use std::path::{Path, PathBuf};

use member_work_sync::application::queue::Trigger;
use member_work_sync::domain::status::{MemberStatus, ReconciledBy, StatusState};
use member_work_sync::runtime::composition::Services;
use serde_json::{json, Value};

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    services: Services,
}

impl Fixture {
    fn new() -> Self {
        let (dir, root) = common::example_root();
        let services = common::services(&root);
        Self {
            _dir: dir,
            root,
            services,
        }
    }

    fn set_now(&self, now: i64) {
        self.services.manual_clock.as_ref().unwrap().set(now);
    }

    fn refresh(&self, name: &str) -> MemberStatus {
        self.services
            .reconciler
            .refresh_status(
                &team("forge"),
                &member(name),
                ReconciledBy::Request,
                &[Trigger::ManualRefresh],
            )
            .unwrap()
    }

    fn report(&self, request: Value) -> member_work_sync::application::report::ReportResult {
        self.services.reconciler.report(&request).unwrap()
    }

    fn journal_types(&self, member: &str) -> Vec<String> {
        let text = fs::read_to_string(self.root.join(format!(
            "teams/forge/members/{member}/.member-work-sync/journal.jsonl"
        )))
        .unwrap_or_default();
        text.lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }
}

fn team(name: &str) -> member_work_sync::domain::names::TeamName {
    member_work_sync::domain::names::TeamName::parse(name).unwrap()
}

fn member(name: &str) -> member_work_sync::domain::names::MemberName {
    member_work_sync::domain::names::MemberName::parse(name).unwrap()
}

fn still_working(status: &MemberStatus) -> Value {
    json!({
        "teamName": "forge", "memberName": status.member_name, "state": "still_working",
        "agendaFingerprint": status.agenda.fingerprint, "reportToken": status.report_token,
    })
}

#[test]
fn accepted_report_gives_a_lease_that_expires() {
    let f = Fixture::new();
    let status = f.refresh("jack");
    assert_eq!(status.state, StatusState::NeedsSync);
    assert!(status
        .report_token
        .as_deref()
        .unwrap()
        .starts_with("wrs:v1."));
    assert_eq!(
        status.report_token_expires_at.as_ref().map(|t| t.as_str()),
        Some("2026-11-18T11:21:40.000Z")
    );
    assert!(status
        .diagnostics
        .contains(&"report_token_issued".to_string()));

    let result = f.report(still_working(&status));
    assert!(result.accepted, "{}", result.code);
    assert_eq!(result.code, "accepted");
    assert_eq!(result.message, "Member work sync report accepted.");
    assert_eq!(result.status.state, StatusState::StillWorking);
    let report = result.status.report.as_ref().unwrap();
    assert_eq!(
        report.expires_at.as_ref().map(|t| t.as_str()),
        Some("2026-11-18T11:21:40.000Z"),
        "15 min from the app clock"
    );
    assert_eq!(report.source.as_deref(), Some("app"));
    assert_eq!(
        result.status.shadow.as_ref().unwrap().reconciled_by,
        ReconciledBy::Report
    );
    assert!(result
        .status
        .diagnostics
        .ends_with(&["report_accepted".into(), "report_token_issued".into()]));

    f.set_now(NOW + 14 * MINUTE);
    assert_eq!(f.refresh("jack").state, StatusState::StillWorking);
    f.set_now(NOW + 15 * MINUTE);
    let expired = f.refresh("jack");
    assert_eq!(expired.state, StatusState::NeedsSync);
    assert!(expired
        .diagnostics
        .contains(&"report_lease_expired".to_string()));
    let journal = f.journal_types("jack");
    assert!(
        journal.contains(&"report_received".to_string())
            && journal.contains(&"report_accepted".to_string())
    );
}

#[test]
fn reported_at_in_the_request_is_ignored_and_lease_ttl_is_clamped() {
    let f = Fixture::new();
    let status = f.refresh("jack");
    let mut request = still_working(&status);
    request["reportedAt"] = json!("2030-01-01T00:00:00.000Z");
    request["leaseTtlMs"] = json!(10);
    let result = f.report(request);
    let report = result.status.report.unwrap();
    assert_eq!(report.reported_at, "2026-11-18T11:06:40.000Z");
    assert_eq!(
        report.expires_at.as_ref().map(|t| t.as_str()),
        Some("2026-11-18T11:07:40.000Z"),
        "clamped to 60 s"
    );
}

#[test]
fn report_against_an_old_fingerprint_is_stale() {
    let f = Fixture::new();
    let old = f.refresh("jack");
    let task = f.root.join("tasks/forge/1.json");
    let mut value: Value = serde_json::from_str(&fs::read_to_string(&task).unwrap()).unwrap();
    value["status"] = json!("completed");
    fs::write(&task, value.to_string()).unwrap();
    let result = f.report(still_working(&old));
    assert!(!result.accepted);
    assert_eq!(result.code, "stale_fingerprint");
    let report = result.status.report.as_ref().unwrap();
    assert_eq!(report.rejection_code.as_deref(), Some("stale_fingerprint"));
    assert!(!report.accepted);
    assert!(result
        .status
        .diagnostics
        .contains(&"report_rejected:stale_fingerprint".to_string()));
    assert_eq!(result.status.state, StatusState::NeedsSync);
    assert!(f
        .journal_types("jack")
        .contains(&"report_rejected".to_string()));
}

#[test]
fn tokens_of_other_members_and_teams_are_refused() {
    let f = Fixture::new();
    let jack = f.refresh("jack");
    let jill = f.refresh("jill");
    // Another member's correctly signed token is an invalid token, checked
    // where tokens are checked: after the fingerprint.
    let mut borrowed = still_working(&jack);
    borrowed["reportToken"] = json!(jill.report_token);
    assert_eq!(f.report(borrowed.clone()).code, "invalid_report_token");
    borrowed["agendaFingerprint"] = json!("agenda:v1:0000");
    assert_eq!(f.report(borrowed).code, "stale_fingerprint");
    let mut missing = still_working(&jack);
    missing.as_object_mut().unwrap().remove("reportToken");
    assert_eq!(f.report(missing).code, "identity_untrusted");
    let mut garbage = still_working(&jack);
    garbage["reportToken"] = json!("wrs:v1.e30.AAAA");
    assert_eq!(f.report(garbage).code, "invalid_report_token");
    let mut reserved = still_working(&jack);
    reserved["memberName"] = json!("system");
    assert_eq!(f.report(reserved).code, "reserved_or_invalid_member");
}

#[test]
fn caught_up_and_blocked_rules() {
    let f = Fixture::new();
    let jack = f.refresh("jack");
    let mut caught_up = still_working(&jack);
    caught_up["state"] = json!("caught_up");
    assert_eq!(
        f.report(caught_up).code,
        "caught_up_rejected_actionable_items_exist"
    );
    let lead = f.refresh("team-lead");
    let mut blocked = still_working(&lead);
    blocked["state"] = json!("blocked");
    blocked["taskIds"] = json!(["#5"]);
    let result = f.report(blocked);
    assert!(result.accepted, "{}", result.code);
    assert_eq!(result.status.state, StatusState::Blocked);
    let lead = f.refresh("team-lead");
    let mut foreign = still_working(&lead);
    foreign["taskIds"] = json!(["1"]);
    assert_eq!(f.report(foreign).code, "foreign_task_id");
}

#[test]
fn malformed_report_changes_nothing() {
    let f = Fixture::new();
    let status = f.refresh("jack");
    let file = f
        .root
        .join("teams/forge/members/jack/.member-work-sync/status.json");
    let before = fs::read(&file).unwrap();
    let mut request = still_working(&status);
    request["note"] = json!("x".repeat(1001));
    // Refused before the feature runs, as the app's report route refuses it.
    let error = f.services.reconciler.report(&request).unwrap_err();
    assert!(
        matches!(
            &error,
            member_work_sync::application::reconcile::WorkSyncError::InvalidArgument { reason, .. }
                if reason.contains("note")
        ),
        "{error}"
    );
    assert_eq!(fs::read(&file).unwrap(), before);
}

fn write_legacy_intents(root: &Path, intents: Value) {
    let path = root.join("teams/forge/.member-work-sync/pending-reports.json");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(
        path,
        json!({"schemaVersion": 1, "intents": intents}).to_string(),
    )
    .unwrap();
}

fn intent(id: &str, request: Value) -> Value {
    json!({"id": id, "teamName": "forge", "memberName": request["memberName"], "request": request,
           "reason": "control_api_unavailable", "status": "pending", "recordedAt": "2026-11-18T11:00:00.000Z"})
}

#[test]
fn replay_processes_legacy_intents_once() {
    let f = Fixture::new();
    let jack = f.refresh("jack");
    let jill = f.refresh("jill");
    let mut stale = still_working(&jill);
    stale["agendaFingerprint"] = json!("agenda:v1:old");
    let mut gone = still_working(&jack);
    gone["memberName"] = json!("old-timer");
    gone["reportToken"] = Value::Null;
    write_legacy_intents(
        &f.root,
        json!({
            "i-accept": intent("i-accept", still_working(&jack)),
            "i-stale": intent("i-stale", stale),
            "i-gone": intent("i-gone", gone),
            "i-done": {"id": "i-done", "memberName": "jack", "status": "accepted", "request": {}},
        }),
    );
    let summary = f
        .services
        .reconciler
        .replay_pending_reports(&[team("forge")])
        .unwrap();
    assert_eq!(
        (
            summary.processed,
            summary.accepted,
            summary.rejected,
            summary.superseded
        ),
        (3, 1, 1, 1)
    );
    assert_eq!(f.refresh("jack").state, StatusState::StillWorking);
    let reports: Value = serde_json::from_str(
        &fs::read_to_string(
            f.root
                .join("teams/forge/members/jill/.member-work-sync/reports.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(reports["schemaVersion"], 2);
    assert_eq!(reports["intents"]["i-stale"]["status"], "rejected");
    assert_eq!(
        reports["intents"]["i-stale"]["rejectionCode"],
        "stale_fingerprint"
    );
    // As the app's replayer records it: the outcome's code on every intent.
    assert_eq!(
        reports["intents"]["i-stale"]["resultCode"],
        "stale_fingerprint"
    );
    let jack_reports: Value = serde_json::from_str(
        &fs::read_to_string(
            f.root
                .join("teams/forge/members/jack/.member-work-sync/reports.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        jack_reports["intents"]["i-accept"]["resultCode"],
        "accepted"
    );
    let index: Value = serde_json::from_str(
        &fs::read_to_string(
            f.root
                .join("teams/forge/.member-work-sync/indexes/pending-reports-index.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(index["items"]["i-gone"]["status"], "superseded");
    // Idempotent: the legacy file still lists them, but every id is already done.
    let again = f
        .services
        .reconciler
        .replay_pending_reports(&[team("forge")])
        .unwrap();
    assert_eq!(again.processed, 0);
}

/// `(event, reason)` of a member's journal lines written by the store (`source: json_store`).
fn store_journal(root: &Path, member: &str) -> Vec<(String, String)> {
    let path = root.join(format!(
        "teams/forge/members/{member}/.member-work-sync/journal.jsonl"
    ));
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line["source"] == "json_store" && line["event"] != "status_written")
        .map(|line| {
            let text = |key: &str| line[key].as_str().unwrap_or_default().to_string();
            (text("event"), text("reason"))
        })
        .collect()
}

#[test]
fn replay_journals_each_member_moved_out_of_the_legacy_file_once() {
    let f = Fixture::new();
    let jack = f.refresh("jack");
    let jill = f.refresh("jill");
    write_legacy_intents(
        &f.root,
        json!({
            "j-1": intent("j-1", still_working(&jack)),
            "j-2": intent("j-2", still_working(&jack)),
            "g-1": intent("g-1", still_working(&jill)),
        }),
    );
    f.services
        .reconciler
        .replay_pending_reports(&[team("forge")])
        .unwrap();
    // As the app's store journals the move: the repaired index, then the fallback.
    let moved = vec![
        ("index_repaired".to_string(), "pending_reports".to_string()),
        (
            "legacy_fallback_used".to_string(),
            "pending_reports_v1".to_string(),
        ),
    ];
    assert_eq!(store_journal(&f.root, "jack"), moved);
    assert_eq!(store_journal(&f.root, "jill"), moved);
    assert_eq!(store_journal(&f.root, "bob"), vec![]);
    // The ids are in the member files now: a second replay moves nothing.
    f.services
        .reconciler
        .replay_pending_reports(&[team("forge")])
        .unwrap();
    assert_eq!(store_journal(&f.root, "jack"), moved);
}

#[test]
fn replay_retries_an_expired_token_once_when_the_agenda_did_not_move() {
    let f = Fixture::new();
    let jack = f.refresh("jack");
    f.set_now(NOW + 20 * MINUTE);
    write_legacy_intents(
        &f.root,
        json!({"late": intent("late", still_working(&jack))}),
    );
    let summary = f
        .services
        .reconciler
        .replay_pending_reports(&[team("forge")])
        .unwrap();
    assert_eq!(summary.accepted, 1);
    let status = f.refresh("jack");
    assert_eq!(status.state, StatusState::StillWorking);
    assert_eq!(
        status
            .report
            .unwrap()
            .expires_at
            .as_ref()
            .map(|t| t.as_str()),
        Some("2026-11-18T11:41:40.000Z"),
        "lease from replay time"
    );
    // The same expired token for a moved agenda is never turned into a lease.
    let f = Fixture::new();
    let jack = f.refresh("jack");
    f.set_now(NOW + 20 * MINUTE);
    let task = f.root.join("tasks/forge/2.json");
    let mut value: Value = serde_json::from_str(&fs::read_to_string(&task).unwrap()).unwrap();
    value["status"] = json!("completed");
    fs::write(&task, value.to_string()).unwrap();
    write_legacy_intents(
        &f.root,
        json!({"late": intent("late", still_working(&jack))}),
    );
    let summary = f
        .services
        .reconciler
        .replay_pending_reports(&[team("forge")])
        .unwrap();
    assert_eq!((summary.accepted, summary.rejected), (0, 1));
}

#[test]
fn metrics_count_status_writes_and_reports() {
    let f = Fixture::new();
    let jack = f.refresh("jack");
    f.refresh("jill");
    f.report(still_working(&jack));
    let mut bad = still_working(&jack);
    bad["agendaFingerprint"] = json!("agenda:v1:old");
    f.report(bad);
    let metrics = f.services.reconciler.get_metrics(&team("forge")).unwrap();
    assert_eq!(metrics.member_count, 2);
    assert_eq!(metrics.report_accepted_count, 1);
    assert_eq!(metrics.report_rejected_count, 1);
    assert_eq!(
        metrics.state_counts["needs_sync"] + metrics.state_counts["still_working"],
        2
    );
    assert!(metrics.would_nudge_count >= 2);
    let readiness = &metrics.phase2_readiness;
    assert_eq!(
        readiness.state,
        member_work_sync::domain::metrics::ReadinessState::CollectingShadowData
    );
    assert_eq!(readiness.reasons[0].as_str(), "insufficient_status_events");
    assert_eq!(readiness.rates.report_rejection_rate, 0.5);
}

#[test]
fn a_report_for_a_team_without_config_creates_nothing() {
    let f = Fixture::new();
    let result = f.report(json!({"teamName": "ghost", "memberName": "jack", "state": "caught_up", "agendaFingerprint": "x"}));
    assert_eq!((result.accepted, result.code), (false, "member_inactive"));
    assert!(!f.root.join("teams/ghost").exists());
}

/// As in the app, a rejected report replaces the stored one: the reconcile it
/// runs first still holds the earlier accepted lease, the next one has no
/// current report.
#[test]
fn a_rejected_report_ends_the_lease_of_an_earlier_accepted_one() {
    let f = Fixture::new();
    let status = f.refresh("jack");
    assert!(f.report(still_working(&status)).accepted);
    let mut forged = still_working(&status);
    forged["reportToken"] = json!("wrs:v1.e30.AAAA");
    let rejected = f.report(forged);
    assert_eq!(rejected.code, "invalid_report_token");
    assert_eq!(rejected.status.state, StatusState::StillWorking);
    f.set_now(NOW + 5 * MINUTE);
    let later = f.refresh("jack");
    assert_eq!(later.state, StatusState::NeedsSync);
    assert!(later.report.is_none());
    assert!(
        later.diagnostics.contains(&"no_current_report".to_string()),
        "{:?}",
        later.diagnostics
    );
}

/// How long a `still_working` lease reported at [`NOW`] keeps the member
/// `still_working` once the clock steps back `step_back_ms` right after the
/// report, probing every 15 minutes of the stepped clock.
fn lease_held_after_a_step_back(step_back_ms: i64) -> i64 {
    let f = Fixture::new();
    let status = f.refresh("jack");
    assert!(f.report(still_working(&status)).accepted);
    let stepped = NOW - step_back_ms;
    let mut held = 0;
    while held <= step_back_ms + 60 * MINUTE {
        f.set_now(stepped + held);
        if f.refresh("jack").state != StatusState::StillWorking {
            return held;
        }
        held += 15 * MINUTE;
    }
    held
}

#[test]
fn a_lease_never_outlives_its_longest_ttl_after_a_clock_step_back() {
    // (clock step back, how long the 15-minute lease still holds): a lease
    // that ends further than the longest lease (60 min) from now is over.
    let cases = [
        (0, 15 * MINUTE),
        (30 * MINUTE, 45 * MINUTE),
        (24 * 60 * MINUTE, 0),
    ];
    let held: Vec<(i64, i64)> = cases
        .iter()
        .map(|&(step, _)| (step, lease_held_after_a_step_back(step)))
        .collect();
    assert_eq!(held, cases);
}

/// Journal lines of `member` from line `from` on: (event, top-level reason).
fn journal_since(f: &Fixture, member: &str, from: usize) -> Vec<(String, Option<String>)> {
    let text = fs::read_to_string(f.root.join(format!(
        "teams/forge/members/{member}/.member-work-sync/journal.jsonl"
    )))
    .unwrap();
    text.lines()
        .skip(from)
        .map(|l| {
            let line: Value = serde_json::from_str(l).unwrap();
            (
                line["event"].as_str().unwrap().to_string(),
                line["reason"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn a_rejected_report_reconciles_in_full_before_the_rejection_is_recorded() {
    // As the reference's reporter: a refused report first runs a requested
    // reconcile (journal, status, metric events, nudge planning), then writes
    // the rejection onto that status.
    let f = Fixture::new();
    let old = f.refresh("jack");
    let task = f.root.join("tasks/forge/1.json");
    let mut value: Value = serde_json::from_str(&fs::read_to_string(&task).unwrap()).unwrap();
    value["subject"] = json!("a new subject moves the fingerprint");
    fs::write(&task, value.to_string()).unwrap();
    let before = f.journal_types("jack").len();
    let metrics_before = f.services.reconciler.get_metrics(&team("forge")).unwrap();

    let result = f.report(still_working(&old));

    assert_eq!((result.accepted, result.code), (false, "stale_fingerprint"));
    let status = &result.status;
    let shadow = status.shadow.as_ref().unwrap();
    assert_eq!(shadow.reconciled_by, ReconciledBy::Request);
    assert_eq!(
        shadow.previous_fingerprint.as_deref(),
        Some(old.agenda.fingerprint.as_str())
    );
    assert!(shadow.fingerprint_changed);
    assert_ne!(status.agenda.fingerprint, old.agenda.fingerprint);
    assert_eq!(status.state, StatusState::NeedsSync);
    assert!(
        status.report_token.is_some(),
        "the reconcile issued a token"
    );
    assert_eq!(
        status.diagnostics.last().map(String::as_str),
        Some("report_rejected:stale_fingerprint")
    );
    let report = status.report.as_ref().unwrap();
    assert_eq!(
        (report.accepted, report.rejection_code.as_deref()),
        (false, Some("stale_fingerprint"))
    );
    assert_eq!(report.agenda_fingerprint, old.agenda.fingerprint);
    assert_eq!(report.reported_at, status.evaluated_at);
    assert!(report.expires_at.is_none());

    let lines = journal_since(&f, "jack", before);
    let planner_lines = lines
        .iter()
        .filter(|(event, _)| event.starts_with("nudge_"))
        .count();
    assert_eq!(
        planner_lines, 1,
        "the reconciled status went to the planner: {lines:?}"
    );
    let events: Vec<&str> = lines
        .iter()
        .map(|(event, _)| event.as_str())
        .filter(|event| !event.starts_with("nudge_"))
        .collect();
    assert_eq!(
        events,
        [
            "report_received",
            "reconcile_started",
            "agenda_loaded",
            "decision_made",
            "status_written",
            "status_written",
            "report_rejected"
        ]
    );
    let planner_at = lines
        .iter()
        .position(|(event, _)| event.starts_with("nudge_"))
        .unwrap();
    assert_eq!(lines[planner_at - 1].0, "status_written");
    assert_eq!(
        lines.last().unwrap().1.as_deref(),
        Some("stale_fingerprint"),
        "the code is the line's reason"
    );

    // Two status writes: each adds its evaluation; the second one the rejection.
    let metrics = f.services.reconciler.get_metrics(&team("forge")).unwrap();
    assert_eq!(
        metrics.report_rejected_count,
        metrics_before.report_rejected_count + 1
    );
    assert_eq!(
        metrics.would_nudge_count,
        metrics_before.would_nudge_count + 2
    );
    assert_eq!(
        metrics.fingerprint_change_count,
        metrics_before.fingerprint_change_count + 2
    );

    // The rejection is not an input of the next reconcile.
    f.set_now(NOW + MINUTE);
    let next = f.refresh("jack");
    assert!(next.report.is_none());
    assert!(!next
        .diagnostics
        .iter()
        .any(|d| d.starts_with("report_rejected")));
}

#[test]
fn an_accepted_report_is_written_by_the_report_itself() {
    let f = Fixture::new();
    let status = f.refresh("jack");
    let before = f.journal_types("jack").len();
    let result = f.report(still_working(&status));
    assert!(result.accepted);
    let shadow = result.status.shadow.as_ref().unwrap();
    assert_eq!(shadow.reconciled_by, ReconciledBy::Report);
    assert!(shadow.previous_fingerprint.is_none());
    let events: Vec<String> = journal_since(&f, "jack", before)
        .into_iter()
        .map(|(event, _)| event)
        .collect();
    assert_eq!(
        events,
        ["report_received", "status_written", "report_accepted"]
    );
}

fn team_name() -> member_work_sync::domain::names::TeamName {
    member_work_sync::domain::names::TeamName::parse("forge").unwrap()
}

#[test]
fn a_status_never_stored_is_reportable_at_once() {
    // The reference's "returns a reportable status with a token when no
    // stored status exists": the snapshot is listed as not persisted before
    // its token, and the token is good for a report.
    let f = Fixture::new();
    let jack = member_work_sync::domain::names::MemberName::parse("jack").unwrap();
    let status = f
        .services
        .engine
        .get_status(&team_name(), &jack, false)
        .unwrap();
    assert!(status.diagnostics.ends_with(&[
        "status_snapshot_not_persisted".to_string(),
        "report_token_issued".to_string()
    ]));
    let result = f.report(still_working(&status));
    assert!(result.accepted, "{}", result.code);
    assert_eq!(result.status.state, StatusState::StillWorking);
}

#[test]
fn inactive_members_get_a_token_and_the_runtime_reason_first() {
    let f = Fixture::new();
    f.services
        .engine
        .set_team_runtime_state(&team_name(), false, None);
    let status = f.refresh("jack");
    assert_eq!(status.state, StatusState::Inactive);
    assert!(status.report_token.is_some());
    assert!(status.diagnostics.ends_with(&[
        "team_runtime_inactive".to_string(),
        "member_or_team_inactive".to_string(),
        "report_token_issued".to_string()
    ]));
    f.services.engine.set_team_runtime_state(
        &team_name(),
        true,
        Some(vec!["jill".into(), "team-lead".into()]),
    );
    let status = f.refresh("jack");
    assert!(status.diagnostics.ends_with(&[
        "member_runtime_inactive".to_string(),
        "member_or_team_inactive".to_string(),
        "report_token_issued".to_string()
    ]));
}

#[test]
fn unparsable_task_files_are_not_agenda_diagnostics() {
    // The app reads past a task file it cannot parse; it names none on the
    // agenda. A preview of the team still lists it.
    let f = Fixture::new();
    fs::write(f.root.join("tasks/forge/broken.json"), "{nope").unwrap();
    let status = f.refresh("jack");
    assert!(!status
        .agenda
        .diagnostics
        .iter()
        .any(|d| d.starts_with("task_file_")));
    assert!(!status
        .diagnostics
        .iter()
        .any(|d| d.starts_with("task_file_")));
    let preview = f.services.reconciler.preview_team(&team("forge")).unwrap();
    assert!(preview
        .diagnostics
        .contains(&"task_file_invalid:broken.json".to_string()));
}

#[test]
fn a_runtime_stall_names_when_the_previous_status_was_evaluated() {
    // The app journals runtime_stall_observed with
    // metadata.previousEvaluatedAt, the evaluatedAt of the status it replaces.
    let f = Fixture::new();
    let first = f.refresh("jack");
    assert_eq!(first.state, StatusState::NeedsSync);
    f.set_now(NOW + MINUTE);
    let before = f.journal_types("jack").len();
    f.services
        .reconciler
        .refresh_status(
            &team("forge"),
            &member("jack"),
            ReconciledBy::Queue,
            &[Trigger::TurnSettled],
        )
        .unwrap();
    let text = fs::read_to_string(
        f.root
            .join("teams/forge/members/jack/.member-work-sync/journal.jsonl"),
    )
    .unwrap();
    let stall: Value = text
        .lines()
        .skip(before)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["event"] == "runtime_stall_observed")
        .expect("a runtime stall is journaled");
    assert_eq!(
        stall["metadata"],
        json!({"previousEvaluatedAt": first.evaluated_at.as_str()})
    );
}
