use super::*;
use serde_json::json;
use std::fs;

const SESSION: &str = "01a2091a-18f5-7b02-aa65-a14af49b3513";
const REAL_LOG: &str = include_str!(
    "../../../tests/fixtures/codex/rollout-2026-11-23T15-50-35-01a2091a-18f5-7b02-aa65-a14af49b3513.jsonl"
);
const LOG_NAME: &str = "rollout-2026-11-23T15-50-35-01a2091a-18f5-7b02-aa65-a14af49b3513.jsonl";

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn team(root: &Path, name: &str, members: &[&str]) {
    let members: Vec<_> = members.iter().map(|m| json!({"name": m})).collect();
    write(
        &root.join("teams").join(name).join("config.json"),
        &json!({"name": name, "members": members}).to_string(),
    );
}

struct Home {
    dir: tempfile::TempDir,
    locator: FsCodexSessionLocator,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        team(dir.path(), "forge", &["lead", "alice", "bob"]);
        let locator =
            FsCodexSessionLocator::new(dir.path().join("teams"), dir.path().join("codex/sessions"));
        Self { dir, locator }
    }

    /// A new locator: launch states are indexed for a few seconds.
    fn reopen(&mut self) {
        self.locator = FsCodexSessionLocator::new(
            self.dir.path().join("teams"),
            self.dir.path().join("codex/sessions"),
        );
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn log(&self, rel: &str) -> String {
        let path = self.path(rel);
        write(&path, REAL_LOG);
        path.to_string_lossy().into_owned()
    }

    fn launch_state(&self, team: &str, members: serde_json::Value) {
        write(
            &self.path(&format!("teams/{team}/launch-state.json")),
            &json!({"teamName": team, "members": members}).to_string(),
        );
    }
}

fn member(team: &str, member: &str) -> ClaudeMatch {
    ClaudeMatch::Member {
        team_name: team.into(),
        member_name: member.into(),
    }
}

#[test]
fn the_launch_prompt_in_the_session_log_names_the_member() {
    let home = Home::new();
    let log = home.log(&format!("codex/sessions/2026/11/23/{LOG_NAME}"));
    assert_eq!(
        home.locator.locate(SESSION, Some(&log)),
        member("forge", "alice")
    );
    // Another session's id never reads this log.
    assert_eq!(
        home.locator
            .locate("01a2091a-0000-7b02-aa65-a14af49b3513", Some(&log)),
        ClaudeMatch::NoMatch
    );
    assert_eq!(home.locator.locate(SESSION, None), ClaudeMatch::NoMatch);
}

#[test]
fn launch_state_session_ids_come_first_and_ambiguity_is_unresolved() {
    let mut home = Home::new();
    let log = home.log(&format!("codex/sessions/2026/11/23/{LOG_NAME}"));
    home.launch_state("forge", json!({"bob": {"runtimeSessionId": SESSION}}));
    assert_eq!(
        home.locator.locate(SESSION, Some(&log)),
        member("forge", "bob")
    );
    team(home.dir.path(), "other", &["carol"]);
    home.launch_state("other", json!({"carol": {"runtimeSessionId": SESSION}}));
    home.reopen();
    assert_eq!(
        home.locator.locate(SESSION, Some(&log)),
        ClaudeMatch::Ambiguous
    );
    // A failed launch's session id proves nothing.
    home.launch_state(
        "other",
        json!({"carol": {"runtimeSessionId": SESSION, "launchState": "failed_to_start"}}),
    );
    home.reopen();
    assert_eq!(
        home.locator.locate(SESSION, Some(&log)),
        member("forge", "bob")
    );
}

#[test]
fn logs_that_cannot_be_trusted_match_nobody() {
    // (setup, payload path) → NoMatch
    type Setup = fn(&Home) -> String;
    let cases: [(&str, Setup); 7] = [
        ("outside the sessions root", |h| {
            h.log(&format!("elsewhere/{LOG_NAME}"))
        }),
        ("through ..", |h| {
            h.log(&format!("codex/{LOG_NAME}"));
            h.path(&format!("codex/sessions/../{LOG_NAME}"))
                .to_string_lossy()
                .into_owned()
        }),
        ("named for another session", |h| {
            h.log("codex/sessions/2026/11/23/rollout-2026-11-23T15-50-35-other.jsonl")
        }),
        ("a linked folder on the way", |h| {
            h.log(&format!("real/23/{LOG_NAME}"));
            fs::create_dir_all(h.path("codex/sessions/2026/11")).unwrap();
            std::os::unix::fs::symlink(h.path("real/23"), h.path("codex/sessions/2026/11/23"))
                .unwrap();
            h.path(&format!("codex/sessions/2026/11/23/{LOG_NAME}"))
                .to_string_lossy()
                .into_owned()
        }),
        ("a linked log", |h| {
            h.log(&format!("real/{LOG_NAME}"));
            fs::create_dir_all(h.path("codex/sessions/2026")).unwrap();
            let link = h.path(&format!("codex/sessions/2026/{LOG_NAME}"));
            std::os::unix::fs::symlink(h.path(&format!("real/{LOG_NAME}")), &link).unwrap();
            link.to_string_lossy().into_owned()
        }),
        ("a team that is not here", |h| {
            fs::remove_dir_all(h.path("teams/forge")).unwrap();
            team(h.dir.path(), "forge-2", &["alice"]);
            h.log(&format!("codex/sessions/{LOG_NAME}"))
        }),
        ("a member not on the team", |h| {
            team(h.dir.path(), "forge", &["bob"]);
            h.log(&format!("codex/sessions/{LOG_NAME}"))
        }),
    ];
    for (name, setup) in cases {
        let home = Home::new();
        let path = setup(&home);
        assert_eq!(
            home.locator.locate(SESSION, Some(&path)),
            ClaudeMatch::NoMatch,
            "{name}"
        );
    }
}

#[test]
fn a_fifo_in_place_of_the_log_never_blocks() {
    let home = Home::new();
    let dir = home.path("codex/sessions");
    fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join(LOG_NAME);
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let path = fifo.to_string_lossy().into_owned();
    assert_eq!(
        home.locator.locate(SESSION, Some(&path)),
        ClaudeMatch::NoMatch
    );
}
