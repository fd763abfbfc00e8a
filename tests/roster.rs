//! Store folders: any name safe on disk gets one, names off the roster only
//! up to a cap; huge rosters are capped.

mod common;

use std::fs;
use std::path::Path;

use member_work_sync::application::engine::Engine;
use member_work_sync::application::reconcile::MAX_MEMBER_STORES;
use member_work_sync::application::turn_settled::{
    TeamChangeEvent, TeamChangeSink, TurnSettledQueue,
};
use member_work_sync::domain::names::normalize_member_name;
use member_work_sync::domain::status::{MemberStatus, StatusState};
use member_work_sync::infrastructure::team_reader::MAX_ROSTER_MEMBERS;

/// A checked team name of a test.
fn team(name: &str) -> member_work_sync::domain::names::TeamName {
    member_work_sync::domain::names::TeamName::parse(name).unwrap()
}

/// A checked member name of a test.
fn member(name: &str) -> member_work_sync::domain::names::MemberName {
    member_work_sync::domain::names::MemberName::parse(name).unwrap()
}

fn member_dir(root: &Path, key: &str) -> std::path::PathBuf {
    root.join("teams/forge/members").join(key)
}

/// The member store folders of team forge, sorted.
fn stored_members(root: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(root.join("teams/forge/members")) else {
        return vec![];
    };
    let mut keys: Vec<String> = entries
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    keys.sort();
    keys
}

/// The journal events of a member of team forge, in order.
fn journal_events(root: &Path, key: &str) -> Vec<String> {
    let path = member_dir(root, key).join(".member-work-sync/journal.jsonl");
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["event"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn reserved_and_unknown_names_are_stored_inactive_as_the_app_stores_them() {
    let (_dir, root) = common::example_root();
    let services = common::services(&root);
    let engine = &services.engine;
    // A name the app reserves and one nobody has: both are safe on disk, and
    // the app reconciles and stores them (inactive) like any other name.
    for (name, first) in [
        ("user", "member_invalid_or_reserved"),
        ("ghost", "member_not_active"),
    ] {
        let status = engine
            .refresh_status(&team("forge"), &member(name))
            .unwrap();
        assert_eq!(status.state, StatusState::Inactive, "{name}");
        assert_eq!(
            status.diagnostics,
            [first, "member_or_team_inactive", "report_token_issued"],
            "{name}"
        );
        let stored =
            fs::read_to_string(member_dir(&root, name).join(".member-work-sync/status.json"))
                .unwrap();
        assert!(
            stored.contains("\"state\": \"inactive\""),
            "{name}: {stored}"
        );
        assert_eq!(
            journal_events(&root, name),
            [
                "reconcile_started",
                "agenda_loaded",
                "team_inactive",
                "status_written"
            ],
            "{name}"
        );
    }
    // A report from `user` is reconciled in full, then recorded as rejected.
    let result = engine
        .report(&serde_json::json!({
            "teamName": "forge", "memberName": "user", "state": "caught_up",
            "agendaFingerprint": "agenda:v1:none",
        }))
        .unwrap();
    assert!(!result.accepted);
    assert_eq!(result.code, "reserved_or_invalid_member");
    let report = result.status.report.as_ref().unwrap();
    assert!(!report.accepted);
    assert_eq!(
        report.rejection_code.as_deref(),
        Some("reserved_or_invalid_member")
    );
    assert_eq!(
        result.status.diagnostics,
        [
            "member_invalid_or_reserved",
            "member_or_team_inactive",
            "report_token_issued",
            "report_rejected:reserved_or_invalid_member"
        ]
    );
    assert_eq!(
        journal_events(&root, "user")[4..],
        [
            "report_received",
            "reconcile_started",
            "agenda_loaded",
            "team_inactive",
            "status_written",
            "status_written",
            "report_rejected"
        ]
    );
}

#[test]
fn names_off_the_roster_get_no_store_folder_past_the_cap() {
    let (_dir, root) = common::example_root();
    let services = common::services(&root);
    let engine = &services.engine;
    // getStatus never writes for a name with nothing stored.
    let status = engine
        .get_status(&team("forge"), &member("ghost"), false)
        .unwrap();
    assert!(status
        .diagnostics
        .contains(&"status_snapshot_not_persisted".to_string()));
    assert!(stored_members(&root).is_empty());
    // A team whose store already holds the cap of member folders.
    for i in 0..MAX_MEMBER_STORES {
        fs::create_dir_all(member_dir(&root, &format!("filler-{i:04}"))).unwrap();
    }
    type Call = fn(&Engine, &str) -> MemberStatus;
    let calls: [(&str, Call); 2] = [
        ("refreshStatus", |e, m| {
            e.refresh_status(&team("forge"), &member(m)).unwrap()
        }),
        ("getStatus(forceNudge)", |e, m| {
            e.get_status(&team("forge"), &member(m), true).unwrap()
        }),
    ];
    for (what, call) in calls {
        for name in ["ghost", "Ghost-2", "made up", "user"] {
            let status = call(engine, name);
            assert_eq!(status.state, StatusState::Inactive, "{what} {name}");
            assert!(
                status
                    .diagnostics
                    .contains(&"status_snapshot_not_persisted".to_string()),
                "{what} {name}: {:?}",
                status.diagnostics
            );
        }
    }
    for name in ["ghost", "made up"] {
        let result = engine
            .report(&serde_json::json!({
                "teamName": "forge", "memberName": name, "state": "still_working",
                "agendaFingerprint": format!("agenda:v1:{}", "0".repeat(64)),
            }))
            .unwrap();
        assert!(!result.accepted, "report {name}");
    }
    assert_eq!(stored_members(&root).len(), MAX_MEMBER_STORES);
    // Roster members are stored whatever the count.
    engine.refresh_team(&team("forge")).unwrap();
    let stored = stored_members(&root);
    assert_eq!(stored.len(), MAX_MEMBER_STORES + 5);
    for name in ["bob", "jack", "jill", "kim", "team-lead"] {
        assert!(stored.contains(&name.to_string()), "{name}");
    }
}

#[test]
fn a_member_that_left_the_roster_keeps_its_store_updated() {
    let (_dir, root) = common::example_root();
    let services = common::services(&root);
    let engine = &services.engine;
    assert_ne!(
        engine
            .refresh_status(&team("forge"), &member("kim"))
            .unwrap()
            .state,
        StatusState::Inactive
    );
    let config = root.join("teams/forge/config.json");
    let text = fs::read_to_string(&config)
        .unwrap()
        .replace("\"name\": \"kim\"", "\"name\": \"kimberly\"");
    fs::write(&config, text).unwrap();
    let status = engine
        .refresh_status(&team("forge"), &member("kim"))
        .unwrap();
    assert_eq!(status.state, StatusState::Inactive);
    assert!(!status
        .diagnostics
        .contains(&"status_snapshot_not_persisted".to_string()));
    let stored =
        fs::read_to_string(member_dir(&root, "kim").join(".member-work-sync/status.json")).unwrap();
    assert!(stored.contains("\"state\": \"inactive\""), "{stored}");
}

#[test]
fn refresh_team_covers_at_most_the_capped_roster() {
    let (_dir, root) = common::example_root();
    let members: Vec<serde_json::Value> = (0..MAX_ROSTER_MEMBERS + 40)
        .map(|i| serde_json::json!({ "name": format!("m{i:04}") }))
        .collect();
    fs::write(
        root.join("teams/forge/config.json"),
        serde_json::json!({ "name": "forge", "members": members }).to_string(),
    )
    .unwrap();
    let services = common::services(&root);
    let statuses = services.engine.refresh_team(&team("forge")).unwrap();
    assert_eq!(statuses.len(), MAX_ROSTER_MEMBERS);
    assert!(statuses
        .iter()
        .all(|s| s.diagnostics.contains(&"roster_truncated".to_string())));
    assert_eq!(stored_members(&root).len(), MAX_ROSTER_MEMBERS);
    // A dropped member is off the roster: stored inactive, as any name
    // below the store cap.
    let dropped = format!("m{:04}", MAX_ROSTER_MEMBERS + 1);
    let status = services
        .engine
        .refresh_status(&team("forge"), &member(&dropped))
        .unwrap();
    assert_eq!(status.state, StatusState::Inactive);
    assert!(member_dir(&root, &dropped).exists());
}

struct NoQueue;

impl TurnSettledQueue for NoQueue {
    fn enqueue(
        &self,
        _: &member_work_sync::domain::names::TeamName,
        _: &member_work_sync::domain::names::MemberName,
    ) -> Result<(), String> {
        Ok(())
    }
}

struct NoChanges;

impl TeamChangeSink for NoChanges {
    fn emit(&self, _: TeamChangeEvent) {}
}

#[test]
fn a_turn_settled_payload_journals_for_any_name_safe_on_disk() {
    let (_dir, root) = common::example_root();
    let services = common::services(&root);
    let incoming = services.spool_paths.incoming();
    fs::create_dir_all(&incoming).unwrap();
    // (member the payload names, journaled) — jack runs Codex; bob does not
    // (provider_mismatch); old-timer was removed; the others were never
    // members, which the app journals too (below the store cap).
    let cases = [
        ("jack", true),
        ("bob", true),
        ("old-timer", true),
        ("made-up", true),
        ("Nobody 2", true),
    ];
    for (n, (member, _)) in cases.iter().enumerate() {
        let payload = serde_json::json!({
            "provider": "codex", "source": "agent-teams-orchestrator-codex-native",
            "eventName": "runtime_turn_settled", "sessionId": format!("s{n}"),
            "teamName": "forge", "memberName": member, "turnId": format!("t{n}"),
        });
        fs::write(
            incoming.join(format!("20261118T110640Z-0-{n}.codex.json")),
            payload.to_string(),
        )
        .unwrap();
    }
    let summary = services.turn_settled.drain(&NoQueue, &NoChanges).unwrap();
    assert_eq!(summary.claimed as usize, cases.len());
    let stored = stored_members(&root);
    for (member, journaled) in cases {
        let key = member.to_lowercase().replace(' ', "%20");
        assert_eq!(stored.contains(&key), journaled, "{member}: {stored:?}");
    }
}

/// Roster names whose `encodeURIComponent` key is longer than a file name may
/// be (255 bytes), though each passes the 128-byte name check (as given and
/// lowercased: 64 × İ would be 192 bytes, refused), and names at the boundary.
const LONG_KEY_NAMES: [(&str, &str, usize); 6] = [
    ("29 CJK characters (key 261 bytes)", "漢", 29),
    ("42 × İ (key 294 bytes)", "İ", 42),
    ("100 × % (key 300 bytes)", "%", 100),
    ("28 CJK characters (key 252 bytes)", "漢", 28),
    ("85 × % (key 255 bytes)", "%", 85),
    ("128 × x (key 128 bytes)", "x", 128),
];

#[test]
fn a_long_member_name_never_fails_the_team() {
    let (_dir, root) = common::example_root();
    let mut members = vec![serde_json::json!({ "name": "jack" })];
    let names: Vec<String> = LONG_KEY_NAMES
        .iter()
        .map(|(_, unit, count)| unit.repeat(*count))
        .collect();
    members.extend(names.iter().map(|name| serde_json::json!({ "name": name })));
    fs::write(
        root.join("teams/forge/config.json"),
        serde_json::json!({ "name": "forge", "members": members }).to_string(),
    )
    .unwrap();
    let services = common::services(&root);
    let statuses = services.engine.refresh_team(&team("forge")).unwrap();
    for ((what, _, _), name) in LONG_KEY_NAMES.iter().zip(&names) {
        let status = statuses
            .iter()
            .find(|s| s.member_name == normalize_member_name(name))
            .unwrap_or_else(|| {
                panic!(
                    "{what}: no status in {:?}",
                    statuses.iter().map(|s| &s.member_name).collect::<Vec<_>>()
                )
            });
        assert!(
            !status
                .diagnostics
                .iter()
                .any(|d| d.starts_with("status_") && d.contains("not_persisted")),
            "{what}: {:?}",
            status.diagnostics
        );
        let stored = services
            .engine
            .get_status(&team("forge"), &member(name), false)
            .unwrap();
        assert_eq!(
            stored.agenda.fingerprint, status.agenda.fingerprint,
            "{what}"
        );
    }
    let stored = stored_members(&root);
    assert_eq!(stored.len(), statuses.len(), "{stored:?}");
    assert!(stored.iter().all(|key| key.len() <= 255), "{stored:?}");
}

#[test]
fn a_member_whose_store_folder_is_unusable_does_not_fail_the_team() {
    let (_dir, root) = common::example_root();
    let members_dir = root.join("teams/forge/members");
    fs::create_dir_all(&members_dir).unwrap();
    // A file where jill's store folder belongs: her status cannot be written.
    fs::write(members_dir.join("jill"), "not a folder").unwrap();
    let services = common::services(&root);
    let statuses = services.engine.refresh_team(&team("forge")).unwrap();
    let names: Vec<&str> = statuses.iter().map(|s| s.member_name.as_str()).collect();
    assert_eq!(names, ["bob", "jack", "jill", "kim", "team-lead"]);
    for status in &statuses {
        let failed = status
            .diagnostics
            .contains(&"status_write_failed".to_string());
        assert_eq!(failed, status.member_name == "jill", "{status:?}");
    }
    for key in ["bob", "jack", "kim", "team-lead"] {
        assert!(
            member_dir(&root, key)
                .join(".member-work-sync/status.json")
                .is_file(),
            "{key}"
        );
    }
    assert_eq!(
        fs::read_to_string(members_dir.join("jill")).unwrap(),
        "not a folder"
    );
}

#[test]
fn a_team_whose_store_cannot_be_written_at_all_fails_the_call() {
    let (_dir, root) = common::example_root();
    // A file where the members folder belongs: no member can be written,
    // which is the store's failure, not one member's outcome.
    fs::write(root.join("teams/forge/members"), "not a folder").unwrap();
    let services = common::services(&root);
    let error = services
        .engine
        .refresh_team(&team("forge"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("teams/forge/members"), "{error}");
}

#[test]
fn a_team_folder_without_config_gets_inactive_statuses_as_in_the_app() {
    let (_dir, root) = common::example_root();
    fs::remove_file(root.join("teams/forge/config.json")).unwrap();
    let services = common::services(&root);
    let engine = &services.engine;
    let status = engine
        .refresh_status(&team("forge"), &member("jack"))
        .unwrap();
    assert_eq!(status.state, StatusState::Inactive);
    assert_eq!(
        status.diagnostics,
        [
            "team_config_missing",
            "member_or_team_inactive",
            "report_token_issued"
        ]
    );
    assert!(member_dir(&root, "jack")
        .join(".member-work-sync/status.json")
        .is_file());
    let result = engine
        .report(&serde_json::json!({
            "teamName": "forge", "memberName": "jack", "state": "caught_up",
            "agendaFingerprint": status.agenda.fingerprint,
            "reportToken": status.report_token,
        }))
        .unwrap();
    assert_eq!(result.code, "member_inactive");
    assert_eq!(
        journal_events(&root, "jack")[4..],
        [
            "report_received",
            "reconcile_started",
            "agenda_loaded",
            "team_inactive",
            "status_written",
            "status_written",
            "report_rejected"
        ]
    );
    // No team folder: nothing is created for it.
    engine
        .refresh_status(&team("nope"), &member("jack"))
        .unwrap();
    assert!(!root.join("teams/nope").exists());
}
