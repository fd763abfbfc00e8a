use super::*;

/// The names a source listed, as strings.
fn spelled(names: Option<Vec<MemberName>>) -> Option<Vec<String>> {
    names.map(|names| names.iter().map(ToString::to_string).collect())
}
use crate::domain::agenda::TeamIndex;
use crate::domain::team::TeamMember;
use crate::infrastructure::safe_fs::mkfifo;
use std::fs;
use std::path::Path;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn fixture() -> (tempfile::TempDir, FsTeamSource) {
    let root = tempfile::tempdir().unwrap();
    let source = FsTeamSource::new(root.path().join("teams"), root.path().join("tasks"));
    (root, source)
}

#[test]
fn task_files_and_their_diagnostics_are_bounded() {
    let (root, source) = fixture();
    write(
        &root.path().join("teams/forge/config.json"),
        r#"{"name":"forge","members":[{"name":"jack"}]}"#,
    );
    let tasks = root.path().join("tasks/forge");
    fs::create_dir_all(&tasks).unwrap();
    for i in 0..MAX_TASK_FILES + 5 {
        let text = if i < MAX_TASK_DIAGNOSTICS + 7 {
            "not json".to_string()
        } else {
            format!(r#"{{"id":"{i}","owner":"jack","status":"pending"}}"#)
        };
        fs::write(tasks.join(format!("{i:06}.json")), text).unwrap();
    }
    let snapshot = source.load(&TeamName::parse("forge").unwrap());
    assert_eq!(
        snapshot.tasks.len(),
        MAX_TASK_FILES - MAX_TASK_DIAGNOSTICS - 7
    );
    let per_file = snapshot
        .content_diagnostics
        .iter()
        .filter(|d| d.starts_with("task_file_invalid:"))
        .count();
    assert_eq!(per_file, MAX_TASK_DIAGNOSTICS);
    assert!(snapshot
        .diagnostics
        .contains(&"task_file_diagnostics_truncated:7".to_string()));
    assert!(snapshot
        .diagnostics
        .contains(&"tasks_truncated".to_string()));
}

#[test]
fn reads_the_documented_layout() {
    let (root, source) = fixture();
    let team = root.path().join("teams/forge");
    write(
        &team.join("config.json"),
        r#"{"name":"forge","members":[{"name":"team-lead","agentType":"team-lead"},{"name":"jack","model":"gpt-5"},{"name":"bob"}]}"#,
    );
    write(
        &team.join("members.meta.json"),
        r#"{"version":1,"members":[{"name":"jill","providerBackendId":"opencode-cli"},{"name":"bob","removedAt":1746500000000},{"name":"jill-2"}]}"#,
    );
    write(
        &team.join("kanban-state.json"),
        r#"{"teamName":"forge","reviewers":[],"tasks":{"7":{"column":"review","movedAt":"2026-05-06T11:00:00Z","reviewer":"jill"},"8":{"column":"nope","movedAt":"x"}}}"#,
    );
    let tasks = root.path().join("tasks/forge");
    write(
        &tasks.join("7.json"),
        r#"{"id":7,"subject":" Ship ","status":"completed","owner":"jack","blockedBy":["6"],"historyEvents":[{"id":"e2","type":"review_requested","timestamp":"2026-05-06T11:00:00Z","from":"none","to":"review","reviewer":"jill","actor":"jack"},{"type":"broken"}]}"#,
    );
    write(
        &tasks.join("8.json"),
        r#"{"id":"123e4567-E89B-12d3-a456-426614174000","status":"weird"}"#,
    );
    write(&tasks.join("9.json"), r#"{"id":"9","status":"deleted"}"#);
    write(
        &tasks.join("10.json"),
        r#"{"id":"10","metadata":{"_internal":true}}"#,
    );
    write(&tasks.join("11.json"), "{broken");
    write(&tasks.join(".hidden.json"), "{broken");
    write(&tasks.join("12.json.lock"), "");
    write(&tasks.join("13.json"), r#"[1,2]"#);

    let snapshot = source.load(&TeamName::parse("forge").unwrap());
    assert!(snapshot.is_active());
    assert_eq!(snapshot.lead().unwrap().name, "team-lead");
    assert_eq!(
        snapshot.active_member_names(),
        ["jack", "jill", "team-lead"]
    );
    // A meta backend id without its provider id names no provider (the
    // app's members-meta reader drops it).
    assert_eq!(snapshot.member("jill").unwrap().derived_provider(), None);
    assert_eq!(
        snapshot.member("jack").unwrap().derived_provider(),
        Some(ProviderId::Codex)
    );
    assert_eq!(snapshot.kanban.len(), 1);
    assert_eq!(snapshot.kanban["7"].reviewer.as_deref(), Some("jill"));
    let ids: Vec<_> = snapshot.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["7", "123e4567-E89B-12d3-a456-426614174000"]);
    let ship = &snapshot.tasks[0];
    // Kept as written; the agenda trims it.
    assert_eq!(ship.subject, " Ship ");
    assert_eq!(ship.display_id, "7");
    assert_eq!(ship.history.len(), 1);
    assert_eq!(snapshot.tasks[1].display_id, "123e4567");
    assert_eq!(snapshot.tasks[1].status, TaskStatus::Pending);
    assert!(snapshot.diagnostics.is_empty());
    assert_eq!(
        snapshot.content_diagnostics,
        ["task_file_invalid:11.json", "task_file_invalid:13.json"]
    );
}

#[test]
fn task_files_follow_the_reference_task_reader() {
    /// `(id, display id, blockedBy)` of the task read.
    type Read = (&'static str, &'static str, &'static [&'static str]);
    // (file content, the task read or None when skipped)
    let cases: [(&str, Option<Read>); 8] = [
        // `deletedAt` is ignored: only `status: deleted` removes a task.
        (
            r#"{"id":"1","status":"in_progress","deletedAt":"2026-01-01T00:00:00Z"}"#,
            Some(("1", "1", &[])),
        ),
        (r#"{"id":"1","status":"deleted"}"#, None),
        // Numbers are spelled as JavaScript's String() does.
        (
            r#"{"id":1.0,"blockedBy":[2,"3"," 4 "]}"#,
            Some(("1", "1", &["3", " 4 "])),
        ),
        (r#"{"id":1e21}"#, Some(("1e+21", "1e+21", &[]))),
        // The id is as written; the display id is derived from it trimmed.
        (r#"{"id":" 5 "}"#, Some((" 5 ", "5", &[]))),
        // No usable id: still a task (a dependency through its display id).
        (r##"{"id":null,"displayId":" #7 "}"##, Some(("", "#7", &[]))),
        // Only a canonical UUID (version 1-5, variant 8-b) is shortened.
        (
            r#"{"id":"123e4567-e89b-02d3-a456-426614174000"}"#,
            Some((
                "123e4567-e89b-02d3-a456-426614174000",
                "123e4567-e89b-02d3-a456-426614174000",
                &[],
            )),
        ),
        (
            r#"{"id":"123E4567-e89b-42d3-B456-426614174000"}"#,
            Some(("123E4567-e89b-42d3-B456-426614174000", "123e4567", &[])),
        ),
    ];
    for (content, want) in cases {
        let (root, source) = fixture();
        write(
            &root.path().join("teams/forge/config.json"),
            r#"{"name":"forge","members":[{"name":"jack"}]}"#,
        );
        write(&root.path().join("tasks/forge/t.json"), content);
        let snapshot = source.load(&TeamName::parse("forge").unwrap());
        let got = snapshot.tasks.first().map(|t| {
            (
                t.id.as_str(),
                t.display_id.as_str(),
                t.blocked_by.iter().map(String::as_str).collect::<Vec<_>>(),
            )
        });
        let want = want.map(|(id, display, blocked)| (id, display, blocked.to_vec()));
        assert_eq!(got, want, "{content}");
    }
}

#[test]
fn a_task_with_deleted_at_but_a_live_status_is_work() {
    let (root, source) = fixture();
    write(
        &root.path().join("teams/forge/config.json"),
        r#"{"name":"forge","members":[{"name":"jack"}]}"#,
    );
    write(
        &root.path().join("tasks/forge/1.json"),
        r#"{"id":"1","status":"pending","owner":"jack","deletedAt":"2026-01-01T00:00:00Z"}"#,
    );
    let snapshot = source.load(&TeamName::parse("forge").unwrap());
    let agenda = TeamIndex::build(&snapshot).agenda_for(
        &crate::domain::names::MemberName::parse("jack").unwrap(),
        "2026-11-22T10:00:00.000Z",
    );
    let reasons: Vec<_> = agenda.items.iter().map(|i| i.reason.as_str()).collect();
    assert_eq!(reasons, ["owned_pending_task"]);
}

#[test]
fn a_meta_backend_id_without_its_provider_names_no_provider() {
    let (root, source) = fixture();
    write(
        &root.path().join("teams/forge/config.json"),
        r#"{"name":"forge","members":[{"name":" oscar "},{"name":"dave"},{"name":"carl"},{"name":"olga"}]}"#,
    );
    // The app's members-meta reader drops a backend id that does not
    // belong to the entry's provider (none without a provider id).
    write(
        &root.path().join("teams/forge/members.meta.json"),
        r#"{"providerBackendId":"codex-native","members":[{"name":"oscar","providerBackendId":"codex-native"},{"name":"dave","providerBackendId":"opencode-cli","model":"minimax/m2"},{"name":"carl","providerId":"codex","providerBackendId":"api"},{"name":"olga","providerId":"opencode","providerBackendId":"opencode-cli"}]}"#,
    );
    let snapshot = source.load(&TeamName::parse("forge").unwrap());
    let provider = |name: &str| snapshot.member(name).and_then(TeamMember::derived_provider);
    assert_eq!(provider("oscar"), None);
    // dave's model still names OpenCode (`provider/model`).
    assert_eq!(provider("dave"), Some(ProviderId::Opencode));
    assert_eq!(provider("carl"), Some(ProviderId::Codex));
    assert_eq!(provider("olga"), Some(ProviderId::Opencode));
    let carl = snapshot.member("carl").unwrap();
    assert_eq!(carl.provider_backend_id.as_deref(), Some("codex-native"));
}

#[test]
fn roster_entries_follow_the_reference_readers() {
    let (root, source) = fixture();
    write(
        &root.path().join("teams/forge/config.json"),
        r#"{"name":"forge","members":[{"name":"boss","agentType":" lead"},{"name":"Bob","removedAt":1},{"name":"gone","removedAt":{}},{"name":"kim","removedAt":2}]}"#,
    );
    // bob: an entry without a numeric removedAt restores him; kim stays removed.
    write(
        &root.path().join("teams/forge/members.meta.json"),
        r#"{"members":[{"name":" bob "},{"name":"kim","removedAt":3},{"name":"olga","agentType":" orchestrator "}]}"#,
    );
    let snapshot = source.load(&TeamName::parse("forge").unwrap());
    assert_eq!(snapshot.active_member_names(), ["bob", "boss", "olga"]);
    // A config agent type is compared as written; a meta one is trimmed first.
    assert_eq!(snapshot.lead().map(|m| m.name.as_str()), Some("olga"));
}

#[test]
fn missing_and_deleted_teams() {
    let (root, source) = fixture();
    let missing = source.load(&TeamName::parse("ghost").unwrap());
    assert!(!missing.config_found && !missing.is_active());
    write(
        &root.path().join("teams/gone/config.json"),
        r#"{"name":"gone","deletedAt":"2026-05-06T11:00:00Z","members":[]}"#,
    );
    let gone = source.load(&TeamName::parse("gone").unwrap());
    assert!(gone.config_found && gone.deleted && !gone.is_active());
    write(
        &root.path().join("teams/noname/config.json"),
        r#"{"name":"  "}"#,
    );
    assert!(
        !source
            .load(&TeamName::parse("noname").unwrap())
            .config_found
    );
}

#[test]
fn broken_side_files_degrade_with_diagnostics() {
    let (root, source) = fixture();
    let team = root.path().join("teams/forge");
    write(
        &team.join("config.json"),
        r#"{"name":"forge","members":[{"name":"jack"}]}"#,
    );
    write(&team.join("members.meta.json"), "not json");
    write(
        &team.join("kanban-state.json"),
        &"x".repeat(MAX_KANBAN_BYTES as usize + 1),
    );
    let snapshot = source.load(&TeamName::parse("forge").unwrap());
    assert_eq!(snapshot.active_member_names(), ["jack"]);
    assert!(snapshot.kanban.is_empty());
    // Refused at the boundary (agendas carry it) vs read past (they do not).
    assert_eq!(snapshot.diagnostics, ["kanban_state_too_large"]);
    assert_eq!(snapshot.content_diagnostics, ["members_meta_invalid"]);
}

/// A team whose every input is readable, and one task.
fn healthy_team(root: &Path) {
    write(
        &root.join("teams/forge/config.json"),
        r#"{"name":"forge","members":[{"name":"jack"}]}"#,
    );
    write(
        &root.join("teams/forge/members.meta.json"),
        r#"{"members":[]}"#,
    );
    write(
        &root.join("teams/forge/kanban-state.json"),
        r#"{"tasks":{}}"#,
    );
    write(
        &root.join("tasks/forge/7.json"),
        r#"{"id":"7","owner":"jack"}"#,
    );
}

#[test]
fn non_regular_files_are_never_opened_and_say_so() {
    // (file replaced by a FIFO, by a link to a file outside, config still found, diagnostic)
    let cases = [
        ("teams/forge/config.json", false, "team_config_not_a_file"),
        (
            "teams/forge/members.meta.json",
            true,
            "members_meta_not_a_file",
        ),
        (
            "teams/forge/kanban-state.json",
            true,
            "kanban_state_not_a_file",
        ),
        ("tasks/forge/7.json", true, "task_file_not_a_file:7.json"),
    ];
    for (file, config_found, diagnostic) in cases {
        for replacement in ["fifo", "link"] {
            let (root, source) = fixture();
            healthy_team(root.path());
            let path = root.path().join(file);
            let outside = root.path().join("outside.json");
            fs::rename(&path, &outside).unwrap();
            if replacement == "fifo" {
                mkfifo(&path);
            } else {
                std::os::unix::fs::symlink(&outside, &path).unwrap();
            }
            let snapshot = source.load(&TeamName::parse("forge").unwrap());
            assert_eq!(snapshot.config_found, config_found, "{file} {replacement}");
            assert_eq!(snapshot.diagnostics, [diagnostic], "{file} {replacement}");
            if file.starts_with("tasks/") {
                assert!(snapshot.tasks.is_empty(), "{file} {replacement}");
                assert_eq!(
                    spelled(source.impacted_members(&TeamName::parse("forge").unwrap(), "7")),
                    None
                );
            }
        }
    }
}

#[test]
fn linked_team_and_tasks_folders_are_not_followed() {
    // (folder replaced by a link to a healthy copy elsewhere, diagnostic,
    // members a change of task 7 impacts: its owner, read from the task file)
    let cases = [
        (
            "teams/forge",
            "team_dir_not_a_folder",
            Some(vec!["jack".to_string()]),
        ),
        ("tasks/forge", "tasks_dir_not_a_folder", None),
    ];
    for (folder, diagnostic, impacted) in cases {
        let (root, source) = fixture();
        healthy_team(root.path());
        let elsewhere = root.path().join("elsewhere");
        fs::rename(root.path().join(folder), &elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.path().join(folder)).unwrap();
        let snapshot = source.load(&TeamName::parse("forge").unwrap());
        assert_eq!(snapshot.diagnostics, [diagnostic], "{folder}");
        assert!(snapshot.tasks.is_empty(), "{folder}");
        assert_eq!(
            snapshot.config_found,
            folder.starts_with("tasks/"),
            "{folder}"
        );
        assert_eq!(
            spelled(source.impacted_members(&TeamName::parse("forge").unwrap(), "7")),
            impacted,
            "{folder}"
        );
    }
}

#[test]
fn a_task_change_reaches_the_owners_of_open_tasks_waiting_on_it() {
    // (dependent task 20 owned by jill, an extra task file, jill impacted);
    // task 7 (owner jack, display id ab12) lists no `blocks`.
    let cases = [
        (r##""blockedBy":["7"]"##, None, true),
        (
            r##""blockedBy":[" #7 "],"status":"in_progress""##,
            None,
            true,
        ),
        (r##""blockedBy":["#ab12"]"##, None, true),
        // The task reader keeps string references only, as the reference does.
        (r##""blockedBy":[7]"##, None, false),
        (
            r##""blockedBy":["7"],"status":"completed","reviewState":"review""##,
            None,
            true,
        ),
        (
            r##""blockedBy":["7"],"status":"completed","reviewState":"needsFix""##,
            None,
            true,
        ),
        (r##""blockedBy":["7"],"status":"completed""##, None, false),
        // `deletedAt` alone does not delete a task (only its status does).
        (
            r##""blockedBy":["7"],"deletedAt":"2026-05-06T11:00:00Z""##,
            None,
            true,
        ),
        (r##""blockedBy":["7"],"status":"deleted""##, None, false),
        (r##""blockedBy":["8"]"##, None, false),
        (r##""blockedBy":["#"]"##, None, false),
        // A canonical id wins over a display id.
        (
            r##""blockedBy":["#ab12"]"##,
            Some(r#"{"id":"ab12","status":"pending"}"#),
            false,
        ),
    ];
    for (fields, extra, impacted) in cases {
        let (root, source) = fixture();
        write(
            &root.path().join("teams/forge/config.json"),
            r#"{"name":"forge","members":[{"name":"team-lead","agentType":"team-lead"},{"name":"jack"},{"name":"jill"}]}"#,
        );
        let tasks = root.path().join("tasks/forge");
        write(
            &tasks.join("7.json"),
            r#"{"id":"7","displayId":"ab12","owner":"jack","status":"in_progress"}"#,
        );
        write(
            &tasks.join("20.json"),
            &format!(r#"{{"id":"20","owner":"jill",{fields}}}"#),
        );
        if let Some(extra) = extra {
            write(&tasks.join("ab12.json"), extra);
        }
        let expected: Vec<String> = if impacted {
            vec!["jack".into(), "jill".into()]
        } else {
            vec!["jack".into()]
        };
        assert_eq!(
            spelled(source.impacted_members(&TeamName::parse("forge").unwrap(), "7")),
            Some(expected),
            "{fields}"
        );
    }
}

#[test]
fn an_event_naming_a_task_by_display_id_routes_to_its_owner_reviewer_and_dependents() {
    // The reference's impact resolver: a task event may carry the display
    // id (`#11111111`); owner, requested reviewer and the owner of a task
    // blocked by it are woken, nobody else.
    let (root, source) = fixture();
    write(
        &root.path().join("teams/forge/config.json"),
        r#"{"name":"forge","members":[{"name":"team-lead","agentType":"team-lead"},{"name":"alice"},{"name":"bob"},{"name":"tom"},{"name":"zed"}]}"#,
    );
    write(
        &root.path().join("tasks/forge/task-a.json"),
        r##"{"id":"task-a","displayId":"#11111111","status":"in_progress","owner":"alice","reviewState":"review","historyEvents":[{"id":"e1","type":"review_requested","timestamp":"2026-04-29T00:00:00.000Z","from":"none","to":"review","reviewer":"bob"}]}"##,
    );
    write(
        &root.path().join("tasks/forge/task-b.json"),
        r#"{"id":"task-b","status":"pending","owner":"tom","blockedBy":["task-a"]}"#,
    );
    let expected = Some(vec!["alice".to_string(), "bob".into(), "tom".into()]);
    for reference in ["#11111111", "11111111", "task-a"] {
        assert_eq!(
            spelled(source.impacted_members(&TeamName::parse("forge").unwrap(), reference)),
            expected,
            "{reference}"
        );
    }
    // A name that is no task on the board still falls back to the team.
    assert_eq!(
        spelled(source.impacted_members(&TeamName::parse("forge").unwrap(), "#99999999")),
        None
    );
}

#[test]
fn a_task_change_event_has_the_board_read_the_task_again() {
    let (root, source) = fixture();
    healthy_team(root.path());
    let owner = |s: &FsTeamSource| {
        s.load(&TeamName::parse("forge").unwrap()).tasks[0]
            .owner
            .clone()
    };
    assert_eq!(owner(&source).as_deref(), Some("jack"));
    // A write the folder watch cannot see: through a second name elsewhere.
    let elsewhere = root.path().join("elsewhere.json");
    fs::hard_link(root.path().join("tasks/forge/7.json"), &elsewhere).unwrap();
    fs::write(&elsewhere, r#"{"id":"7","owner":"jill"}"#).unwrap();
    // The board event for task 7 routes through the impact lookup.
    assert_eq!(
        spelled(source.impacted_members(&TeamName::parse("forge").unwrap(), "7")),
        Some(vec!["jill".to_string()])
    );
    assert_eq!(owner(&source).as_deref(), Some("jill"));
}

#[test]
fn the_roster_is_capped() {
    // (config members, meta-only members, kept, truncated)
    let cases = [
        (MAX_ROSTER_MEMBERS, 0, MAX_ROSTER_MEMBERS, false),
        (MAX_ROSTER_MEMBERS + 1, 0, MAX_ROSTER_MEMBERS, true),
        (MAX_ROSTER_MEMBERS - 1, 5, MAX_ROSTER_MEMBERS, true),
        (5_000, 0, MAX_ROSTER_MEMBERS, true),
    ];
    for (config_count, meta_count, kept, truncated) in cases {
        let (root, source) = fixture();
        let names = |prefix: &str, count: usize| -> Vec<Value> {
            (0..count)
                .map(|i| serde_json::json!({ "name": format!("{prefix}{i:05}") }))
                .collect()
        };
        write(
            &root.path().join("teams/forge/config.json"),
            &serde_json::json!({"name": "forge", "members": names("m", config_count)}).to_string(),
        );
        write(
            &root.path().join("teams/forge/members.meta.json"),
            &serde_json::json!({ "members": names("x", meta_count) }).to_string(),
        );
        let snapshot = source.load(&TeamName::parse("forge").unwrap());
        assert_eq!(snapshot.members.len(), kept, "{config_count}+{meta_count}");
        // Config order first: its members are the ones kept.
        assert_eq!(snapshot.members[0].name, "m00000");
        assert_eq!(
            snapshot
                .diagnostics
                .contains(&"roster_truncated".to_string()),
            truncated,
            "{config_count}+{meta_count}"
        );
        assert_eq!(
            source
                .active_members(&TeamName::parse("forge").unwrap())
                .len(),
            kept
        );
    }
}

#[test]
fn active_members_are_listed_in_locale_order() {
    let (root, source) = fixture();
    write(
        &root.path().join("teams/forge/config.json"),
        &serde_json::json!({"name": "forge", "members": [
            {"name": "zoe"}, {"name": "team-lead"}, {"name": "dev.ops"},
            {"name": "Carol"}, {"name": "dave"}, {"name": "bob"}
        ]})
        .to_string(),
    );
    assert_eq!(
        spelled(Some(
            source.active_members(&TeamName::parse("forge").unwrap())
        ))
        .unwrap(),
        ["bob", "Carol", "dave", "dev.ops", "team-lead", "zoe"]
    );
}

/// A reference names `task` as the app's index resolves it, checked the
/// slow way: ids win; a display id counts only when no task has it as id.
fn names_task_by_definition(tasks: &[Arc<Task>], reference: &str, task: &Task) -> bool {
    let key = reference_key(reference);
    if key.is_empty() {
        return false;
    }
    if tasks.iter().any(|t| reference_key(&t.id) == key) {
        reference_key(&task.id) == key
    } else {
        reference_key(&task.display_id) == key
    }
}

#[test]
fn task_references_resolve_as_the_definition_does() {
    let task = |id: &str, display: &str| Arc::new(Task::with_ids(id, display));
    // Boards: plain; a display id shadowed by another task's id; the task
    // itself missing from the board (a truncated board); empty keys.
    let boards: Vec<(Vec<Arc<Task>>, Arc<Task>)> = vec![
        (vec![task("1", "#a1"), task("2", "#a2")], task("1", "#a1")),
        (vec![task("1", "#2"), task("2", "#b2")], task("1", "#2")),
        (
            vec![task(" #7 ", "#x"), task("8", "#8")],
            task(" #7 ", "#x"),
        ),
        (vec![task("9", "#9")], task("5", "#5")),
        (vec![task("9", "#9")], task("", "#")),
    ];
    let references = [
        "1", "#1", " 1 ", "2", "#2", "a1", "#a1", "7", "#7", "x", "5", "#5", "", "#", "##1",
    ];
    for (board, target) in &boards {
        let resolved = TaskReferences::of(board, target);
        for reference in references {
            assert_eq!(
                resolved.named_by(reference),
                names_task_by_definition(board, reference, target),
                "{reference:?} naming {:?}/{:?}",
                target.id,
                target.display_id
            );
        }
        for reference in references {
            let found = find_named(board, reference);
            let expected = board
                .iter()
                .find(|t| names_task_by_definition(board, reference, t));
            assert_eq!(
                found.map(Arc::as_ptr),
                expected.map(Arc::as_ptr),
                "{reference:?}"
            );
        }
    }
}

/// The roster keeps its last decodes: every read after a change of
/// `config.json` or `members.meta.json` sees the new bytes, and a repeated
/// read of bad bytes reports them every time, not only when first decoded.
#[test]
fn repeated_roster_reads_follow_every_change_of_the_files() {
    let (root, source) = fixture();
    let forge = TeamName::parse("forge").unwrap();
    let config = root.path().join("teams/forge/config.json");
    let meta = root.path().join("teams/forge/members.meta.json");
    let names = |snapshot: &TeamSnapshot| -> Vec<String> {
        snapshot.members.iter().map(|m| m.name.clone()).collect()
    };
    // (config, meta, members read, content diagnostics); each row is read twice.
    let rows: [(&str, &str, &[&str], &[&str]); 5] = [
        (
            r#"{"name":"forge","members":[{"name":"jack"}]}"#,
            "",
            &["jack"],
            &[],
        ),
        (
            r#"{"name":"forge","members":[{"name":"jill"}]}"#,
            "",
            &["jill"],
            &[],
        ),
        (
            r#"{"name":"forge","members":[{"name":"jill"}]}"#,
            r#"{"members":[{"name":"bob"}]}"#,
            &["jill", "bob"],
            &[],
        ),
        (
            r#"{"name":"forge","members":[{"name":"jill"}]}"#,
            "not json",
            &["jill"],
            &["members_meta_invalid"],
        ),
        ("not json", "not json", &[], &["team_config_invalid"]),
    ];
    for (config_text, meta_text, members, content) in rows {
        write(&config, config_text);
        if meta_text.is_empty() {
            let _ = fs::remove_file(&meta);
        } else {
            write(&meta, meta_text);
        }
        for read in 0..2 {
            let roster = source.load_roster(&forge);
            assert_eq!(
                names(&roster),
                members,
                "{config_text} {meta_text} read {read}"
            );
            assert_eq!(
                roster.content_diagnostics, content,
                "{config_text} {meta_text} read {read}"
            );
        }
    }
}

/// Task changes for [`kept_references_route_as_a_full_scan_does`]: task
/// files written (ids, display ids and `blockedBy` drawn from small pools
/// that collide on purpose: `#`, spaces, ids naming other files, display
/// ids shadowed by ids), deleted, made unreadable, and kanban cards moved.
mod routing_against_a_scan {
    use super::*;
    use proptest::prelude::*;

    const FILES: [&str; 5] = ["1", "2", "3", "4", "x"];
    const IDS: [&str; 8] = ["1", "2", "3", "4", "x", " 2 ", "#3", ""];
    const DISPLAY_IDS: [&str; 6] = ["#1", "#2", "#x", "d1", "#d2", ""];
    const REFERENCES: [&str; 12] = [
        "1", "#1", " 2 ", "3", "#x", "d1", "#d2", "", "#", "x", "4", "#4",
    ];
    const OWNERS: [&str; 4] = ["jack", "Jack", "jill", "bob"];
    const STATUSES: [&str; 4] = ["pending", "in_progress", "completed", "deleted"];
    const REVIEW_STATES: [&str; 4] = ["none", "review", "needsFix", "approved"];
    const COLUMNS: [&str; 3] = ["review", "approved", "done"];

    #[derive(Debug, Clone)]
    pub(super) enum Change {
        /// Writes `FILES[file]` with the task (id of its own file when `None`).
        Write {
            file: usize,
            id: Option<usize>,
            display_id: Option<usize>,
            owner: Option<usize>,
            status: usize,
            review_state: usize,
            blocked_by: Vec<usize>,
            blocks: Vec<usize>,
        },
        Delete(usize),
        Garbage(usize),
        /// Cards `(id, column)` of `kanban-state.json`.
        Kanban(Vec<(usize, usize)>),
    }

    fn change() -> impl Strategy<Value = Change> {
        let file = 0..FILES.len();
        let write = (
            file.clone(),
            prop_oneof![3 => Just(None), 1 => (0..IDS.len()).prop_map(Some)],
            prop::option::of(0..DISPLAY_IDS.len()),
            prop::option::of(0..OWNERS.len()),
            0..STATUSES.len(),
            0..REVIEW_STATES.len(),
            prop::collection::vec(0..REFERENCES.len(), 0..4),
            prop::collection::vec(0..FILES.len(), 0..2),
        )
            .prop_map(
                |(file, id, display_id, owner, status, review_state, blocked_by, blocks)| {
                    Change::Write {
                        file,
                        id,
                        display_id,
                        owner,
                        status,
                        review_state,
                        blocked_by,
                        blocks,
                    }
                },
            );
        prop_oneof![
            8 => write,
            2 => file.clone().prop_map(Change::Delete),
            1 => file.prop_map(Change::Garbage),
            2 => prop::collection::vec((0..IDS.len(), 0..COLUMNS.len()), 0..3)
                .prop_map(Change::Kanban),
        ]
    }

    pub(super) fn apply(root: &Path, change: &Change) {
        let tasks = root.join("tasks/forge");
        match change {
            Change::Write {
                file,
                id,
                display_id,
                owner,
                status,
                review_state,
                blocked_by,
                blocks,
            } => {
                let mut task = serde_json::json!({
                    "id": id.map_or(FILES[*file], |i| IDS[i]),
                    "status": STATUSES[*status],
                    "reviewState": REVIEW_STATES[*review_state],
                    "blockedBy": blocked_by.iter().map(|&r| REFERENCES[r]).collect::<Vec<_>>(),
                    "blocks": blocks.iter().map(|&f| FILES[f]).collect::<Vec<_>>(),
                });
                if let Some(display_id) = display_id {
                    task["displayId"] = DISPLAY_IDS[*display_id].into();
                }
                if let Some(owner) = owner {
                    task["owner"] = OWNERS[*owner].into();
                }
                write(
                    &tasks.join(format!("{}.json", FILES[*file])),
                    &task.to_string(),
                );
            }
            Change::Delete(file) => {
                let _ = fs::remove_file(tasks.join(format!("{}.json", FILES[*file])));
            }
            Change::Garbage(file) => {
                write(&tasks.join(format!("{}.json", FILES[*file])), "{not json")
            }
            Change::Kanban(cards) => {
                let cards: serde_json::Map<String, Value> = cards
                    .iter()
                    .map(|&(id, column)| {
                        let card = serde_json::json!({
                            "column": COLUMNS[column],
                            "movedAt": "2026-05-06T11:00:00Z",
                            "reviewer": "jill",
                        });
                        (IDS[id].to_string(), card)
                    })
                    .collect();
                let kanban = serde_json::json!({ "tasks": cards });
                write(
                    &root.join("teams/forge/kanban-state.json"),
                    &kanban.to_string(),
                );
            }
        }
    }

    /// The board's tasks whose `blockedBy` names `task`, the slow way: one
    /// pass over a cold read of the board.
    fn scan_waiting_on(board: &[Arc<Task>], task: &Task) -> Vec<Arc<Task>> {
        let references = TaskReferences::of(board, task);
        board
            .iter()
            .filter(|t| t.blocked_by.iter().any(|r| references.named_by(r)))
            .cloned()
            .collect()
    }

    /// What identifies a task in a comparison (the two sources parse their
    /// own copies).
    fn described(tasks: &[Arc<Task>]) -> Vec<(String, String, Option<String>, Vec<String>)> {
        tasks
            .iter()
            .map(|t| {
                let t = Task::clone(t);
                (t.id, t.display_id, t.owner, t.blocked_by)
            })
            .collect()
    }

    /// After each change: the kept source's dependents of every task on the
    /// board, and its routing of every reference, against a full scan of a
    /// cold read (a fresh source).
    pub(super) fn run(changes: &[Change]) {
        let root = tempfile::tempdir().unwrap();
        write(
            &root.path().join("teams/forge/config.json"),
            r#"{"name":"forge","members":[{"name":"team-lead","agentType":"team-lead"},{"name":"jack"},{"name":"jill"},{"name":"bob"}]}"#,
        );
        fs::create_dir_all(root.path().join("tasks/forge")).unwrap();
        let forge = TeamName::parse("forge").unwrap();
        let fresh = || FsTeamSource::new(root.path().join("teams"), root.path().join("tasks"));
        let kept = fresh();
        for (step, change) in changes.iter().enumerate() {
            apply(root.path(), change);
            let cold = fresh();
            let board = cold.load(&forge).tasks;
            for task in board.iter() {
                assert_eq!(
                    described(&kept.read_waiting_on(&forge, task)),
                    described(&scan_waiting_on(&board, task)),
                    "waiting on {:?}/{:?} after {step}: {change:?}",
                    task.id,
                    task.display_id
                );
            }
            for reference in IDS.iter().chain(&DISPLAY_IDS).chain(&REFERENCES) {
                let scanned = cold.impacted_members_given(&forge, reference, |task| {
                    scan_waiting_on(&cold.load(&forge).tasks, task)
                });
                assert_eq!(
                    spelled(kept.impacted_members(&forge, reference)),
                    spelled(scanned),
                    "routing {reference:?} after {step}: {change:?}"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn kept_references_route_as_a_full_scan_does(
            changes in prop::collection::vec(change(), 1..40)
        ) {
            run(&changes);
        }
    }
}

/// Edits that add and drop a reference, and a display id shadowed and
/// freed again, routed by the kept references as by a full scan.
#[test]
fn kept_references_follow_blocked_by_edits() {
    use routing_against_a_scan::{run, Change};
    let write = |file, id, display_id, blocked_by: &[usize]| Change::Write {
        file,
        id,
        display_id,
        owner: Some(2),
        status: 0,
        review_state: 0,
        blocked_by: blocked_by.to_vec(),
        blocks: vec![],
    };
    run(&[
        // 1.json (display d1); 2.json waits on 1, then on d1, then on nothing.
        write(0, None, Some(3), &[]),
        write(1, None, None, &[0]),
        write(1, None, None, &[5]),
        write(1, None, None, &[]),
        // 3.json waits on #x; x.json arrives with id x, then goes.
        write(2, None, None, &[4]),
        write(4, None, None, &[]),
        Change::Delete(4),
        Change::Delete(0),
    ]);
}

/// A reference is keyed as the app's index keys it: JavaScript's trim (which
/// removes U+FEFF and keeps U+0085), then one `#` dropped.
#[test]
fn reference_keys_trim_as_javascript_does() {
    use crate::infrastructure::task_cache::references::reference_key;
    for (reference, key) in [
        (" #12 ", "12"),
        ("\u{feff}#12\u{feff}", "12"),
        ("\u{85}#12", "\u{85}#12"),
        ("##12", "#12"),
        ("", ""),
    ] {
        assert_eq!(reference_key(reference), key, "{reference:?}");
    }
}
