//! What a team's folder says about its sessions, read through `safe_fs`:
//! the team folders in turn, which teams are active, the lead's sessions,
//! the sessions launched for members (`launch-state.json`) and the members
//! the team knows.

use crate::domain::js_semantics::js_trim;
use std::collections::HashSet;
use std::path::{Component, Path};

use serde_json::Value;

use crate::domain::names::validate_name;
use crate::infrastructure::safe_fs::{Dir, FileKind, FileRead, TrustedRoot};
use crate::infrastructure::team_config::TeamConfig;
use crate::infrastructure::team_reader::parse_meta_member;

use super::{MAX_CONFIG_BYTES, MAX_SMALL_JSON_BYTES};

/// The names of the folders right below the teams root that can be teams
/// (not hidden, valid names; links left out when the listing says so), sorted.
/// A listing only: nothing in them is read.
pub(crate) fn team_folders(teams: &TrustedRoot) -> Vec<String> {
    let Some(root) = teams.open_dir(teams.path()).ok().flatten() else {
        return vec![];
    };
    let Ok(entries) = root.entries() else {
        return vec![];
    };
    let mut names: Vec<String> = entries
        .into_iter()
        .filter(|e| matches!(e.kind, Some(FileKind::Dir) | None))
        .map(|e| e.name)
        .filter(|n| !n.starts_with('.') && validate_name(n).is_ok())
        .collect();
    names.sort();
    names
}

/// `folders` (sorted) in turn after `cursor`, the last folder an earlier
/// build read, wrapping round: the order of a round-robin index build, so
/// which folders a capped build reads is never decided by how they sort.
pub(crate) fn folders_in_turn<'a>(
    folders: &'a [String],
    cursor: Option<&String>,
) -> impl Iterator<Item = &'a String> {
    let start = cursor.map_or(0, |cursor| folders.partition_point(|f| f <= cursor));
    folders[start..].iter().chain(&folders[..start])
}

/// The team folder `name` in `root` (never a link) with its config, when the
/// config is named and not deleted: a team the roster reader finds, read the
/// same way ([`TeamConfig`]).
pub(crate) fn active_team(root: &Dir, name: &str) -> Option<(Dir, TeamConfig)> {
    let team_dir = subfolder(root, name)?;
    let config = read_json(&team_dir, "config.json", MAX_CONFIG_BYTES)?;
    let config = TeamConfig::parse(&config).filter(|c| !c.deleted)?;
    Some((team_dir, config))
}

/// The active teams whose folder name is `name` trimmed and lowercased
/// (folder names are case-sensitive; an agent may spell the team either way).
pub(crate) fn active_teams_named(
    teams: &TrustedRoot,
    name: &str,
) -> Vec<(String, Dir, TeamConfig)> {
    let Some(root) = teams.open_dir(teams.path()).ok().flatten() else {
        return vec![];
    };
    let wanted = js_trim(name).to_lowercase();
    team_folders(teams)
        .into_iter()
        .filter(|folder| js_trim(folder).to_lowercase() == wanted)
        .filter_map(|folder| {
            let (team_dir, config) = active_team(&root, &folder)?;
            Some((folder, team_dir, config))
        })
        .collect()
}

/// A team's lead sessions: `leadSessionId` and `sessionHistory`.
pub(super) fn team_sessions(config: &TeamConfig) -> HashSet<String> {
    config
        .lead_session_id
        .iter()
        .chain(&config.session_history)
        .cloned()
        .collect()
}

/// The capped JSON file `name` in `dir`, if it is a regular file that parses.
pub(crate) fn read_json(dir: &Dir, name: &str, max: u64) -> Option<Value> {
    match dir.read(name, max) {
        Ok(FileRead::Bytes(bytes)) => serde_json::from_slice(&bytes).ok(),
        _ => None,
    }
}

/// `launch-state.json` members with a usable `runtimeSessionId`.
pub(crate) fn launched_sessions(team_dir: &Dir, team: &str) -> Vec<(String, String, String)> {
    let Some(state) = read_json(team_dir, "launch-state.json", MAX_SMALL_JSON_BYTES) else {
        return vec![];
    };
    if state.get("teamName").and_then(Value::as_str) != Some(team) {
        return vec![];
    }
    let Some(members) = state.get("members").and_then(Value::as_object) else {
        return vec![];
    };
    members
        .iter()
        .filter_map(|(name, m)| {
            let failed = m
                .get("hardFailure")
                .is_some_and(|f| !f.is_null() && f != &Value::Bool(false))
                || matches!(
                    m.get("launchState").and_then(Value::as_str),
                    Some("skipped_for_launch" | "failed_to_start")
                );
            let session = js_trim(m.get("runtimeSessionId").and_then(Value::as_str)?);
            (!failed && !session.is_empty()).then(|| {
                (
                    team.to_string(),
                    js_trim(name).to_lowercase(),
                    session.to_string(),
                )
            })
        })
        .collect()
}

/// Config members, members-meta members (removed ones included) and inbox
/// names, lowercased.
pub(crate) fn known_members(team_dir: &Dir, config: &TeamConfig) -> HashSet<String> {
    let mut known: HashSet<String> = config
        .members
        .iter()
        .map(|m| m.name.to_lowercase())
        .collect();
    if let Some(meta) = read_json(team_dir, "members.meta.json", MAX_SMALL_JSON_BYTES) {
        let members = meta.get("members").and_then(Value::as_array);
        known.extend(
            members
                .into_iter()
                .flatten()
                .filter_map(parse_meta_member)
                .map(|m| m.name.to_lowercase()),
        );
    }
    // Names only: the inbox files themselves are not opened.
    if let Some(entries) = team_dir
        .open_dir("inboxes")
        .ok()
        .flatten()
        .and_then(|inboxes| inboxes.entries().ok())
    {
        known.extend(entries.into_iter().filter_map(|e| {
            let stem = e.name.strip_suffix(".json")?;
            (!stem.starts_with('.') && !stem.contains('*')).then(|| js_trim(stem).to_lowercase())
        }));
    }
    known
}

/// The folder `name` in `dir`; `None` when missing, a link, a file or unreadable.
pub(crate) fn subfolder(dir: &Dir, name: &str) -> Option<Dir> {
    dir.open_dir(name).ok().flatten()
}

/// `name` is one plain path component (no separator, not `.`/`..`).
pub(crate) fn is_plain_name(name: &str) -> bool {
    let mut parts = Path::new(name).components();
    matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(part)), None) if part == name
    )
}
