//! Session lookup: launch state, attributed transcripts, subagents, bounded index builds, untrusted paths.

use super::*;
use crate::infrastructure::safe_fs::mkfifo;
use serde_json::json;
use std::fs;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A lead and two teammates with transcripts of each kind under one project.
fn example() -> (tempfile::TempDir, FsClaudeSessionLocator) {
    let root = tempfile::tempdir().unwrap();
    let home = root.path();
    write(
        &home.join("teams/forge/config.json"),
        &json!({"name": "forge", "projectPath": "/home/u/proj", "leadSessionId": "L1",
                "members": [{"name": "team-lead", "agentType": "team-lead"},
                            {"name": "jack", "model": "claude-sonnet-4-5"},
                            {"name": "jill"}]})
        .to_string(),
    );
    write(
        &home.join("projects/-home-u-proj/L1.jsonl"),
        "{\"teamName\":\"forge\",\"agentName\":\"team-lead\"}\n",
    );
    write(
        &home.join("projects/-home-u-proj/J7.jsonl"),
        &format!(
            "{}\n",
            json!({"type": "user", "sessionId": "J7", "teamName": "forge", "agentName": "jack",
                   "cwd": "/home/u/proj", "message": {"role": "user", "content": "Start task 3"}})
        ),
    );
    write(
        &home.join("projects/-home-u-proj/L1/subagents/agent-a1.jsonl"),
        "{\"process\":{\"team\":{\"teamName\":\"forge\",\"memberName\":\"jill\"}}}\n",
    );
    let locator = FsClaudeSessionLocator::new(home.join("teams"), home.join("projects"));
    (root, locator)
}

fn member(team: &str, member: &str) -> ClaudeMatch {
    ClaudeMatch::Member {
        team_name: team.into(),
        member_name: member.into(),
    }
}

#[test]
fn the_resolver_and_the_roster_reader_agree_on_which_teams_are_active() {
    use crate::application::ports::TeamSource;
    let root = tempfile::tempdir().unwrap();
    let configs = [
        ("kept", r#"{"name":"kept","deletedAt":false}"#),
        ("nulled", r#"{"name":"nulled","deletedAt":null}"#),
        (
            "deleted",
            r#"{"name":"deleted","deletedAt":"2026-01-01T00:00:00Z"}"#,
        ),
        ("unnamed", r#"{"name":" "}"#),
        ("broken", "{"),
    ];
    for (team, config) in configs {
        write(
            &root.path().join("teams").join(team).join("config.json"),
            config,
        );
    }
    let teams = TrustedRoot::new(root.path().join("teams"));
    let teams_dir = teams.open_dir(teams.path()).unwrap().unwrap();
    let resolver: Vec<String> = team_folders(&teams)
        .into_iter()
        .filter(|team| active_team(&teams_dir, team).is_some())
        .collect();
    let reader = crate::infrastructure::team_reader::FsTeamSource::new(
        root.path().join("teams"),
        root.path().join("tasks"),
    );
    let mut roster: Vec<String> = configs
        .iter()
        .map(|(team, _)| team.to_string())
        .filter(|team| {
            let team = crate::domain::names::TeamName::parse(team).unwrap();
            reader.load_roster(&team).is_active()
        })
        .collect();
    roster.sort();
    assert_eq!(resolver, ["kept", "nulled"]);
    assert_eq!(resolver, roster);
}

#[test]
fn resolves_the_documented_example() {
    let (root, locator) = example();
    let path = root.path().join("projects/-home-u-proj/J7.jsonl");
    assert_eq!(locator.locate(Some("J7"), None), member("forge", "jack"));
    assert_eq!(locator.locate(None, path.to_str()), member("forge", "jack"));
    // The lead's own turn (its session, its root transcript) is the lead's,
    // not that of the teammate whose subagent file carries its session id;
    // that file, named exactly, is jill's.
    let lead = ClaudeMatch::Lead {
        team_name: "forge".into(),
    };
    let lead_root = root.path().join("projects/-home-u-proj/L1.jsonl");
    assert_eq!(locator.locate(Some("L1"), None), lead);
    assert_eq!(locator.locate(Some("L1"), lead_root.to_str()), lead);
    assert_eq!(locator.locate(None, lead_root.to_str()), lead);
    let subagent = root
        .path()
        .join("projects/-home-u-proj/L1/subagents/agent-a1.jsonl");
    assert_eq!(
        locator.locate(Some("L1"), subagent.to_str()),
        member("forge", "jill")
    );
    assert_eq!(locator.locate(Some("nope"), None), ClaudeMatch::NoMatch);
}

#[test]
fn a_session_id_never_matches_a_subagent_file_of_that_session() {
    let (root, _) = example();
    // A team without a known lead session: the parent session P has a
    // teammate's subagent file; P's own Stop is not that teammate's turn.
    write(
        &root.path().join("teams/atlas/config.json"),
        &json!({"name": "atlas", "projectPath": "/home/u/other",
                "members": [{"name": "lead", "agentType": "team-lead"}, {"name": "kim"}]})
        .to_string(),
    );
    let subagent = root
        .path()
        .join("projects/-home-u-other/P/subagents/agent-k1.jsonl");
    write(
        &subagent,
        "{\"process\":{\"team\":{\"teamName\":\"atlas\",\"memberName\":\"kim\"}}}\n",
    );
    let fresh =
        FsClaudeSessionLocator::new(root.path().join("teams"), root.path().join("projects"));
    assert_eq!(fresh.locate(Some("P"), None), ClaudeMatch::NoMatch);
    assert_eq!(
        fresh.locate(Some("P"), subagent.to_str()),
        member("atlas", "kim")
    );
}

#[test]
fn launch_state_wins_and_two_members_are_ambiguous() {
    let (root, locator) = example();
    write(
        &root.path().join("teams/forge/launch-state.json"),
        &json!({"version": 2, "teamName": "forge", "members": {
            "jill": {"runtimeSessionId": "S9"}, "jack": {"runtimeSessionId": "S9", "hardFailure": true}}})
        .to_string(),
    );
    assert_eq!(locator.locate(Some("S9"), None), member("forge", "jill"));
    write(
        &root.path().join("teams/atlas/config.json"),
        &json!({"name": "atlas", "projectPath": "/home/u/proj",
                "members": [{"name": "jack"}]})
        .to_string(),
    );
    let (_, other) = (
        0,
        FsClaudeSessionLocator::new(root.path().join("teams"), root.path().join("projects")),
    );
    // J7 names team forge, so atlas does not claim it.
    assert_eq!(other.locate(Some("J7"), None), member("forge", "jack"));
    write(
        &root.path().join("teams/atlas/launch-state.json"),
        &json!({"teamName": "atlas", "members": {"jack": {"runtimeSessionId": "S9"}}}).to_string(),
    );
    let fresh =
        FsClaudeSessionLocator::new(root.path().join("teams"), root.path().join("projects"));
    assert_eq!(fresh.locate(Some("S9"), None), ClaudeMatch::Ambiguous);
}

/// Moves `path` to `<root>/outside/<n>` and leaves a link to it in its place.
fn link_from_outside(root: &Path, path: &str) {
    let outside = root.join("outside");
    fs::create_dir_all(&outside).unwrap();
    let moved = outside.join(fs::read_dir(&outside).unwrap().count().to_string());
    fs::rename(root.join(path), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, root.join(path)).unwrap();
}

fn jsonl(path: &Path, line: Value) {
    write(path, &format!("{line}\n"));
}

#[test]
fn project_folders_are_found_as_claude_names_them_or_by_the_lead_session() {
    let long = format!("/work/{}", "deep/".repeat(50));
    let long_prefix: String = long
        .trim_end_matches('/')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(200)
        .collect();
    // (config projectPath, folder holding the transcripts, the lead's
    // session file in that folder too, jack found)
    let cases = [
        (
            "/Users/jane.doe/my app",
            "-Users-jane-doe-my-app".to_string(),
            false,
            true,
        ),
        ("/srv/my_app", "-srv-my-app".to_string(), false, true),
        ("/srv/my_app", "-srv-my_app".to_string(), false, true),
        (long.as_str(), format!("{long_prefix}-1x9k2"), false, true),
        (
            long.as_str(),
            format!("{long_prefix}-3f8w0q1j4pz7m"),
            false,
            true,
        ),
        // The project moved: the folder holding the lead's session is found.
        ("/moved/away", "-elsewhere".to_string(), true, true),
        // A folder that neither the paths name nor holds the lead's session.
        ("/moved/away", "-elsewhere".to_string(), false, false),
        (
            "/Users/jane.doe/my app",
            "-Users-jane.doe-my-app-x".to_string(),
            false,
            false,
        ),
    ];
    for (project, folder, lead_file, found) in cases {
        let root = tempfile::tempdir().unwrap();
        let home = root.path();
        write(
            &home.join("teams/forge/config.json"),
            &json!({"name": "forge", "projectPath": project, "leadSessionId": "L1",
                    "members": [{"name": "team-lead", "agentType": "team-lead"}, {"name": "jack"}]})
            .to_string(),
        );
        let dir = home.join("projects").join(&folder);
        jsonl(
            &dir.join("J7.jsonl"),
            json!({"type": "user", "sessionId": "J7", "teamName": "forge", "agentName": "jack"}),
        );
        if lead_file {
            jsonl(&dir.join("L1.jsonl"), json!({"teamName": "forge"}));
        }
        let locator = FsClaudeSessionLocator::new(home.join("teams"), home.join("projects"));
        let expected = if found {
            member("forge", "jack")
        } else {
            ClaudeMatch::NoMatch
        };
        assert_eq!(
            locator.locate(Some("J7"), None),
            expected,
            "{project} {folder}"
        );
    }
}

#[test]
fn links_and_fifos_below_the_roots_are_never_read() {
    let lead = || ClaudeMatch::Lead {
        team_name: "forge".into(),
    };
    /// (what replaces a readable input, how, session id, transcript path, expected)
    type Case = (
        &'static str,
        fn(&Path),
        Option<&'static str>,
        Option<&'static str>,
        ClaudeMatch,
    );
    let cases: [Case; 8] = [
        (
            "a linked transcript",
            |root| {
                jsonl(
                    &root.join("projects/-home-u-proj/K1.jsonl"),
                    json!({"teamName": "forge", "agentName": "jill"}),
                );
                link_from_outside(root, "projects/-home-u-proj/K1.jsonl");
            },
            Some("K1"),
            None,
            ClaudeMatch::NoMatch,
        ),
        (
            "a FIFO transcript",
            |root| mkfifo(&root.join("projects/-home-u-proj/K1.jsonl")),
            Some("K1"),
            None,
            ClaudeMatch::NoMatch,
        ),
        (
            "a linked project folder",
            |root| link_from_outside(root, "projects/-home-u-proj"),
            Some("J7"),
            None,
            ClaudeMatch::NoMatch,
        ),
        (
            "a linked subagents folder",
            |root| link_from_outside(root, "projects/-home-u-proj/L1/subagents"),
            Some("L1"),
            Some("projects/-home-u-proj/L1/subagents/agent-a1.jsonl"),
            lead(),
        ),
        (
            "a linked team folder",
            |root| {
                write(
                    &root.join("teams/forge/launch-state.json"),
                    &json!({"teamName": "forge", "members": {"jill": {"runtimeSessionId": "S9"}}})
                        .to_string(),
                );
                link_from_outside(root, "teams/forge");
            },
            Some("S9"),
            None,
            ClaudeMatch::NoMatch,
        ),
        (
            "a linked launch state",
            |root| {
                write(
                    &root.join("teams/forge/launch-state.json"),
                    &json!({"teamName": "forge", "members": {"jill": {"runtimeSessionId": "S9"}}})
                        .to_string(),
                );
                link_from_outside(root, "teams/forge/launch-state.json");
            },
            Some("S9"),
            None,
            ClaudeMatch::NoMatch,
        ),
        (
            "a FIFO launch state and members meta",
            |root| {
                mkfifo(&root.join("teams/forge/launch-state.json"));
                mkfifo(&root.join("teams/forge/members.meta.json"));
            },
            Some("J7"),
            None,
            member("forge", "jack"),
        ),
        (
            "a FIFO config of another team",
            |root| mkfifo(&root.join("teams/atlas/config.json")),
            Some("J7"),
            None,
            member("forge", "jack"),
        ),
    ];
    for (what, setup, session, transcript, expected) in cases {
        let (root, _) = example();
        setup(root.path());
        let transcript = transcript.map(|t| root.path().join(t));
        let locator =
            FsClaudeSessionLocator::new(root.path().join("teams"), root.path().join("projects"));
        assert_eq!(
            locator.locate(session, transcript.as_deref().and_then(Path::to_str)),
            expected,
            "{what}"
        );
    }
}

#[test]
fn a_stop_payload_names_a_transcript_only_below_projects() {
    let (root, locator) = example();
    // The same transcript outside the projects folder.
    let outside = root.path().join("elsewhere/-home-u-proj/J7.jsonl");
    fs::create_dir_all(outside.parent().unwrap()).unwrap();
    fs::copy(root.path().join("projects/-home-u-proj/J7.jsonl"), &outside).unwrap();
    let home = root.path().display();
    // (transcript path, expected)
    let cases = [
        (
            format!("{home}/projects/-home-u-proj/J7.jsonl"),
            member("forge", "jack"),
        ),
        (
            format!("{home}/projects/./-home-u-proj/J7.jsonl"),
            member("forge", "jack"),
        ),
        (
            format!("{home}/projects/x/../-home-u-proj/J7.jsonl"),
            ClaudeMatch::NoMatch,
        ),
        (
            format!("{home}/elsewhere/../projects/-home-u-proj/J7.jsonl"),
            ClaudeMatch::NoMatch,
        ),
        (outside.display().to_string(), ClaudeMatch::NoMatch),
        (format!("{home}/projects"), ClaudeMatch::NoMatch),
        ("-home-u-proj/J7.jsonl".to_string(), ClaudeMatch::NoMatch),
    ];
    for (path, expected) in cases {
        assert_eq!(locator.locate(None, Some(&path)), expected, "{path}");
    }
}

/// [`example`] with `junk` old teams whose folders sort before `forge`,
/// each with a valid config, a launch state and a project folder.
fn example_behind_old_teams(junk: usize) -> (tempfile::TempDir, FsClaudeSessionLocator) {
    let (root, _) = example();
    for n in 0..junk {
        let team = format!("aaa-old-{n:04}");
        write(
            &root.path().join("teams").join(&team).join("config.json"),
            &json!({"name": team, "projectPath": format!("/home/u/old{n}"),
                    "members": [{"name": "lead", "agentType": "team-lead"}, {"name": "kim"}]})
            .to_string(),
        );
        write(
            &root
                .path()
                .join("teams")
                .join(&team)
                .join("launch-state.json"),
            &json!({"teamName": team, "members": {"kim": {"runtimeSessionId": format!("K{n}")}}})
                .to_string(),
        );
    }
    let locator =
        FsClaudeSessionLocator::new(root.path().join("teams"), root.path().join("projects"));
    (root, locator)
}

#[test]
fn a_stop_is_attributed_however_many_team_folders_sort_first() {
    let (root, locator) = example_behind_old_teams(MAX_TEAMS + 50);
    let started = Instant::now();
    let transcript = root.path().join("projects/-home-u-proj/J7.jsonl");
    let subagent = root
        .path()
        .join("projects/-home-u-proj/L1/subagents/agent-a1.jsonl");
    // (session, transcript, attributed to)
    let cases = [
        (Some("J7"), transcript.to_str(), member("forge", "jack")),
        (Some("L1"), subagent.to_str(), member("forge", "jill")),
        (None, transcript.to_str(), member("forge", "jack")),
    ];
    for (session, path, expected) in &cases {
        assert_eq!(locator.locate(*session, *path), *expected, "{path:?}");
    }
    eprintln!(
        "{} old team folders + forge: {:?} for {} Stop lookups",
        MAX_TEAMS + 50,
        started.elapsed(),
        cases.len()
    );
}

#[test]
fn every_team_is_indexed_within_a_few_builds() {
    let (_root, locator) = example_behind_old_teams(2 * MAX_TEAMS + 10);
    // Session-only lookups (no transcript names a team): the launch
    // state of the last old team and forge's member session are found
    // once the builds have come round to them.
    let last = format!("aaa-old-{:04}", 2 * MAX_TEAMS + 9);
    let mut found = (false, false);
    for _ in 0..4 {
        let (index, _) = locator.index(Duration::ZERO, &[]);
        found.0 |=
            FsClaudeSessionLocator::find(&index, Some(&format!("K{}", 2 * MAX_TEAMS + 9)), None)
                == member(&last, "kim");
        found.1 |=
            FsClaudeSessionLocator::find(&index, Some("J7"), None) == member("forge", "jack");
    }
    assert_eq!(found, (true, true));
    // A team never leaves the index once indexed: the first old team is
    // still found after the builds moved past it.
    let (index, _) = locator.index(Duration::ZERO, &[]);
    assert_eq!(
        FsClaudeSessionLocator::find(&index, Some("K0"), None),
        member("aaa-old-0000", "kim")
    );
}

#[test]
fn folders_without_an_active_team_take_no_room_in_the_index() {
    let (root, locator) = example();
    for n in 0..20 {
        let dir = root.path().join(format!("teams/empty-{n:02}"));
        fs::create_dir_all(&dir).unwrap();
        if n % 2 == 0 {
            write(
                &dir.join("config.json"),
                r#"{"name":"x","deletedAt":"2026-01-01"}"#,
            );
        }
    }
    locator.index(Duration::ZERO, &[]);
    let state = locator.index.lock().unwrap();
    let parts: Vec<&String> = state.teams.keys().collect();
    assert_eq!(parts, ["forge"]);
}

#[test]
fn a_named_team_without_a_folder_is_remembered_until_the_index_expires() {
    let (root, locator) = example();
    let ghost = vec!["ghost".to_string()];
    locator.index(INDEX_TTL, &[]);
    locator.index(INDEX_TTL, &ghost);
    // The folder appears while the index is fresh: the remembered
    // absence spares a listing of the teams root per Stop naming it...
    write(
        &root.path().join("teams/ghost/config.json"),
        &json!({"name": "ghost", "members": [{"name": "gus"}]}).to_string(),
    );
    write(
        &root.path().join("teams/ghost/launch-state.json"),
        &json!({"teamName": "ghost", "members": {"gus": {"runtimeSessionId": "G1"}}}).to_string(),
    );
    let (index, _) = locator.index(INDEX_TTL, &ghost);
    assert_eq!(
        FsClaudeSessionLocator::find(&index, Some("G1"), None),
        ClaudeMatch::NoMatch
    );
    // ...until the index is rebuilt.
    let (index, _) = locator.index(Duration::ZERO, &ghost);
    assert_eq!(
        FsClaudeSessionLocator::find(&index, Some("G1"), None),
        member("ghost", "gus")
    );
}
