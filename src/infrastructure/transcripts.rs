//! Finds the team member behind a Claude session: first the
//! exact evidence of `launch-state.json` (`runtimeSessionId`), then the
//! attributed transcripts under `<claudeRoot>/projects/`. `cwd` is never used.
//!
//! One departure from the TypeScript resolver: a subagent transcript under
//! `<session>/subagents/` carries its parent's session id, so a Stop with that
//! id is the parent's turn (usually the lead's), never a match for the newest
//! teammate file there; those files match by exact path only. A Stop from a
//! team's lead session (`leadSessionId`, `sessionHistory`) is the lead's own
//! turn, which the turn-settled signal ignores; attributing it to a teammate would
//! reconcile the wrong member.
//!
//! The index of attributed files is rebuilt at most every few seconds (a drain
//! resolves up to 50 events against one index), and a transcript is only
//! re-read when its size or mtime changed. One build indexes at most
//! [`MAX_TEAMS`] teams: first those the Stop's transcript names in its head,
//! then the next ones in turn after where the last build stopped; every other
//! team keeps what its last build found. So the work per drain is bounded,
//! and which teams exist is never decided by how their folders sort.
//!
//! Every read goes through [`safe_fs`](super::safe_fs) below the teams root and
//! the projects root: no link is followed at any component and only regular
//! files are opened (a FIFO in place of a transcript or config never blocks).
//! The `transcript_path` of a Stop payload counts only when it lies lexically
//! below `<claudeRoot>/projects/` without `.` or `..` components; there it
//! selects an indexed file, and its head (the parent session's, for a
//! subagent file) is read as the index reads any transcript, only to learn
//! which teams to index first.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::safe_fs::{Dir, FileKind, FileRead, TrustedRoot};
use super::team_config::TeamConfig;
use super::team_reader::parse_meta_member;
use crate::application::turn_settled::{ClaudeMatch, ClaudeSessionLocator};
use crate::domain::names::validate_name;
use crate::domain::time::EpochMs;
use crate::domain::turn_settled::transcript::{
    attribute_root, attribute_subagent, encode_project_dir, named_teams, ProjectDirName, HEAD_LINES,
};

/// Most teams (re)indexed by one index build. With more team folders, each
/// build continues where the last one stopped (round robin) and the others
/// keep what their last build found, so every team is in the index within
/// a few builds whatever the folders are called; the teams a Stop's
/// transcript names are indexed first.
pub const MAX_TEAMS: usize = 200;
/// How long an index is reused.
const INDEX_TTL: Duration = Duration::from_secs(5);
/// A miss rebuilds an index older than this once, so a brand-new session is found.
const MISS_REBUILD_AFTER: Duration = Duration::from_millis(500);
/// Most bytes read from one transcript head (its lines can be long).
const MAX_HEAD_BYTES: u64 = 4 * 1024 * 1024;
/// Most cached attributions.
const MAX_CACHED: usize = 5000;
/// Most remembered named teams without an indexed folder (forgotten all at
/// once when full, as each index build forgets them).
const MAX_ABSENT: usize = 1000;
/// Largest `config.json` / `launch-state.json` / `members.meta.json` read.
const MAX_CONFIG_BYTES: u64 = 10 * 1024 * 1024;
const MAX_SMALL_JSON_BYTES: u64 = 256 * 1024;

#[derive(Debug, Clone)]
struct AttributedFile {
    team: String,
    member: String,
    path: PathBuf,
    /// The session of a root transcript; for a subagent file, its parent's.
    session_id: String,
    /// Under `<session>/subagents/`: matched by exact path only.
    subagent: bool,
    modified: EpochMs,
}

#[derive(Debug, Default)]
struct Index {
    /// (team, member, runtime session id) from launch state.
    launched: Vec<(String, String, String)>,
    /// (team, session id) of each team's lead sessions.
    lead_sessions: Vec<(String, String)>,
    files: Vec<AttributedFile>,
}

impl Index {
    fn is_empty(&self) -> bool {
        self.launched.is_empty() && self.lead_sessions.is_empty() && self.files.is_empty()
    }

    fn extend(&mut self, other: &Index) {
        self.launched.extend(other.launched.iter().cloned());
        self.lead_sessions
            .extend(other.lead_sessions.iter().cloned());
        self.files.extend(other.files.iter().cloned());
    }
}

/// What the index builds have found so far, per team folder.
#[derive(Debug, Default)]
struct IndexState {
    /// Each indexed team folder's part of the index; a folder without an
    /// active config has none, so the map grows with active teams only.
    teams: BTreeMap<String, Index>,
    /// Named teams (lowercase) found without an active folder since the
    /// last build: a Stop naming one again reuses the index instead of
    /// listing the teams root, until the index expires.
    absent: HashSet<String>,
    /// The team folder the last build indexed last in turn.
    cursor: Option<String>,
    /// The union of `teams`, and when it was last built.
    merged: Option<(Instant, Arc<Index>)>,
}

impl IndexState {
    /// Keeps `part` as the team folder's index, or drops the folder when
    /// the part is empty.
    fn keep(&mut self, team: &str, part: Index) {
        if part.is_empty() {
            self.teams.remove(team);
        } else {
            self.teams.insert(team.to_string(), part);
        }
    }

    /// Some indexed team folder is named `team` (lowercase).
    fn indexes(&self, team: &str) -> bool {
        self.teams
            .keys()
            .any(|folder| folder.trim().to_lowercase() == team)
    }

    /// Remembers the `named` teams (lowercase) the index has no part for.
    fn remember_absent(&mut self, named: &[String]) {
        for team in named {
            if !self.indexes(team) {
                if self.absent.len() >= MAX_ABSENT {
                    self.absent.clear();
                }
                self.absent.insert(team.clone());
            }
        }
    }
}

type CacheKey = (String, PathBuf);
type CacheEntry = (EpochMs, u64, Option<String>);

/// File-backed [`ClaudeSessionLocator`].
pub struct FsClaudeSessionLocator {
    teams: TrustedRoot,
    projects: TrustedRoot,
    index: Mutex<IndexState>,
    attributions: Mutex<HashMap<CacheKey, CacheEntry>>,
}

impl FsClaudeSessionLocator {
    /// A locator over `<teamsBase>` and `<claudeRoot>/projects`.
    pub fn new(teams_base: PathBuf, projects_dir: PathBuf) -> Self {
        Self {
            teams: TrustedRoot::new(teams_base),
            projects: TrustedRoot::new(projects_dir),
            index: Mutex::new(IndexState::default()),
            attributions: Mutex::new(HashMap::new()),
        }
    }

    /// The index, rebuilt when older than `rebuild_older_than`; the teams
    /// `named` (lowercase) are indexed first, and at once when the index is
    /// reused but has never seen them.
    fn index(&self, rebuild_older_than: Duration, named: &[String]) -> (Arc<Index>, Duration) {
        let mut state = self.index.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((built, index)) = state.merged.as_ref() {
            let seen = |team: &String| state.absent.contains(team) || state.indexes(team);
            // Reused without listing the teams root when nothing is missing.
            if built.elapsed() < rebuild_older_than && named.iter().all(seen) {
                return (index.clone(), built.elapsed());
            }
        }
        let folders = team_folders(&self.teams);
        let named_folders: Vec<&String> = folders
            .iter()
            .filter(|folder| named.contains(&folder.trim().to_lowercase()))
            .collect();
        if let Some((built, index)) = state.merged.clone() {
            if built.elapsed() < rebuild_older_than {
                let missing: Vec<&String> = named_folders
                    .iter()
                    .copied()
                    .filter(|team| !state.teams.contains_key(*team))
                    .collect();
                let mut index = index;
                if !missing.is_empty() {
                    let projects = self.projects_listing();
                    let root = self.teams_root();
                    for team in missing {
                        let part = self.index_team(root.as_ref(), projects.as_ref(), team);
                        state.keep(team, part);
                    }
                    index = merge(&state.teams);
                    state.merged = Some((built, index.clone()));
                }
                state.remember_absent(named);
                return (index, built.elapsed());
            }
        }
        self.build_step(&mut state, &folders, &named_folders);
        state.absent.clear();
        state.remember_absent(named);
        let index = merge(&state.teams);
        state.merged = Some((Instant::now(), index.clone()));
        (index, Duration::ZERO)
    }

    /// One index build: the `named` teams, then the next teams in turn after
    /// the cursor, [`MAX_TEAMS`] in all; folders that are gone leave the index.
    fn build_step(&self, state: &mut IndexState, folders: &[String], named: &[&String]) {
        state
            .teams
            .retain(|team, _| folders.binary_search(team).is_ok());
        let projects = self.projects_listing();
        let root = self.teams_root();
        let in_turn = folders_in_turn(folders, state.cursor.as_ref());
        let mut done: HashSet<&String> = HashSet::new();
        for team in named.iter().copied() {
            if done.len() >= MAX_TEAMS {
                break;
            }
            done.insert(team);
            let part = self.index_team(root.as_ref(), projects.as_ref(), team);
            state.keep(team, part);
        }
        for team in in_turn {
            if done.len() >= MAX_TEAMS {
                break;
            }
            if !done.insert(team) {
                continue;
            }
            let part = self.index_team(root.as_ref(), projects.as_ref(), team);
            state.keep(team, part);
            state.cursor = Some(team.clone());
        }
    }

    /// The teams root, opened once per build (`None`: no teams).
    fn teams_root(&self) -> Option<Dir> {
        self.teams.open_dir(self.teams.path()).ok().flatten()
    }

    /// One handle on the projects root and one listing of it for every team
    /// of a build (`None`: no transcripts).
    fn projects_listing(&self) -> Option<(Dir, Vec<String>)> {
        self.projects
            .open_dir(self.projects.path())
            .ok()
            .flatten()
            .map(|dir| {
                let folders = project_folders(&dir);
                (dir, folders)
            })
    }

    /// The index part of the team folder `team`: empty unless it holds an
    /// active config.
    fn index_team(
        &self,
        root: Option<&Dir>,
        projects: Option<&(Dir, Vec<String>)>,
        team: &str,
    ) -> Index {
        let mut index = Index::default();
        let Some((team_dir, config)) = root.and_then(|root| active_team(root, team)) else {
            return index;
        };
        index.launched.extend(launched_sessions(&team_dir, team));
        let lead_sessions = team_sessions(&config);
        let known = known_members(&team_dir, &config);
        if let Some((projects, folders)) = projects {
            let dirs = team_project_dirs(projects, folders, &config);
            self.attribute_team(
                projects,
                &dirs,
                team,
                &config,
                &lead_sessions,
                &known,
                &mut index.files,
            );
        }
        index.lead_sessions.extend(
            lead_sessions
                .into_iter()
                .map(|session| (team.to_string(), session)),
        );
        index
    }

    /// The teams the head of the Stop's transcript names (lowercase); for a
    /// subagent transcript, its parent session's root transcript too. The
    /// file is read as the index reads it (below the projects root, no link,
    /// regular files only, capped).
    fn named_teams(&self, transcript: Option<&Path>) -> Vec<String> {
        let Some(transcript) = transcript else {
            return vec![];
        };
        let mut files = vec![transcript.to_path_buf()];
        let parent = transcript.parent();
        if parent
            .and_then(Path::file_name)
            .is_some_and(|n| n == "subagents")
        {
            let session_dir = parent.and_then(Path::parent);
            let session = session_dir
                .and_then(Path::file_name)
                .and_then(|n| n.to_str());
            if let (Some(project), Some(session)) = (session_dir.and_then(Path::parent), session) {
                files.push(project.join(format!("{session}.jsonl")));
            }
        }
        let mut named = Vec::new();
        for file in files {
            let (Some(dir), Some(name)) =
                (file.parent(), file.file_name().and_then(|n| n.to_str()))
            else {
                continue;
            };
            let Some(dir) = self.projects.open_dir(dir).ok().flatten() else {
                continue;
            };
            for team in named_teams(&read_head(&dir, name)) {
                if !named.contains(&team) {
                    named.push(team);
                }
            }
        }
        named
    }

    /// Appends the attributed transcripts of `team` to `out`; the root
    /// transcripts of `lead_sessions` are the lead's and never attributed.
    #[allow(clippy::too_many_arguments)]
    fn attribute_team(
        &self,
        projects: &Dir,
        project_dirs: &[String],
        team: &str,
        config: &TeamConfig,
        lead_sessions: &HashSet<String>,
        known: &HashSet<String>,
        out: &mut Vec<AttributedFile>,
    ) {
        let team_lc = team.trim().to_lowercase();
        let lead_session = config.lead_session_id.as_deref();
        let mut roots: BTreeMap<String, AttributedFile> = BTreeMap::new();
        for dir_name in project_dirs {
            let Some(dir) = subfolder(projects, dir_name) else {
                continue;
            };
            let Ok(entries) = dir.entries() else {
                continue;
            };
            let mut subagent_dirs = Vec::new();
            for entry in entries {
                let name = entry.name;
                if let Some(session) = name.strip_suffix(".jsonl") {
                    if lead_sessions.contains(session) {
                        continue;
                    }
                    let Some((modified, member)) = self.attribution(team, &dir, &name, |lines| {
                        attribute_root(lines, &team_lc, known)
                    }) else {
                        continue;
                    };
                    // Only a member's newest root session can match.
                    let key = member.to_lowercase();
                    if roots.get(&key).is_none_or(|f| modified > f.modified) {
                        roots.insert(
                            key,
                            AttributedFile {
                                team: team.to_string(),
                                member: member.to_lowercase(),
                                path: dir.path().join(&name),
                                session_id: session.to_string(),
                                subagent: false,
                                modified,
                            },
                        );
                    }
                } else if !name.starts_with('.')
                    && name != "memory"
                    && matches!(entry.kind, Some(FileKind::Dir) | None)
                {
                    let keep = lead_session.is_none_or(|lead| lead == name);
                    if keep {
                        subagent_dirs.push(name);
                    }
                }
            }
            for session in subagent_dirs {
                let Some(sub_dir) =
                    subfolder(&dir, &session).and_then(|d| subfolder(&d, "subagents"))
                else {
                    continue;
                };
                let Ok(files) = sub_dir.entries() else {
                    continue;
                };
                for file in files {
                    let name = file.name;
                    if !name.starts_with("agent-")
                        || !name.ends_with(".jsonl")
                        || name.starts_with("agent-acompact")
                    {
                        continue;
                    }
                    if let Some((modified, member)) =
                        self.attribution(team, &sub_dir, &name, |lines| {
                            attribute_subagent(lines, known)
                        })
                    {
                        out.push(AttributedFile {
                            team: team.to_string(),
                            member: member.to_lowercase(),
                            path: sub_dir.path().join(&name),
                            session_id: session.clone(),
                            subagent: true,
                            modified,
                        });
                    }
                }
            }
        }
        out.extend(roots.into_values());
    }

    /// The cached or fresh attribution of the regular file `name` in `dir`:
    /// (mtime, member). Links, FIFOs and folders are never attributed.
    fn attribution(
        &self,
        team: &str,
        dir: &Dir,
        name: &str,
        attribute: impl Fn(&[Value]) -> Option<String>,
    ) -> Option<(EpochMs, String)> {
        let meta = dir.meta(name).ok()??;
        if meta.kind != FileKind::File {
            return None;
        }
        let modified = meta.modified_ms;
        let key = (team.to_string(), dir.path().join(name));
        {
            let cache = self.attributions.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, len, member)) = cache.get(&key) {
                if *at == modified && *len == meta.len {
                    return member.clone().map(|m| (modified, m));
                }
            }
        }
        let member = attribute(&read_head(dir, name));
        let mut cache = self.attributions.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(key, (modified, meta.len, member.clone()));
        member.map(|m| (modified, m))
    }

    fn find(index: &Index, session_id: Option<&str>, transcript: Option<&Path>) -> ClaudeMatch {
        if let Some(session) = session_id {
            let launched: HashSet<(&str, &str)> = index
                .launched
                .iter()
                .filter(|(_, _, s)| s == session)
                .map(|(t, m, _)| (t.as_str(), m.as_str()))
                .collect();
            if let Some(result) = single(launched.into_iter()) {
                return result;
            }
        }
        // The exact transcript, wherever it is attributed.
        if let Some(path) = transcript {
            let exact = index
                .files
                .iter()
                .filter(|f| f.path == path)
                .map(|f| (f.team.as_str(), f.member.as_str()));
            if let Some(result) = single(exact) {
                return result;
            }
        }
        // The lead's own turn: its session id, or its root transcript.
        let root_session = transcript
            .filter(|t| !t.components().any(|c| c.as_os_str() == "subagents"))
            .and_then(|t| t.file_name()?.to_str()?.strip_suffix(".jsonl"));
        let leads: HashSet<&str> = index
            .lead_sessions
            .iter()
            .filter(|(_, s)| session_id == Some(s.as_str()) || root_session == Some(s.as_str()))
            .map(|(team, _)| team.as_str())
            .collect();
        match leads.len() {
            0 => {}
            1 => {
                let team = leads.into_iter().next().unwrap_or_default();
                return ClaudeMatch::Lead {
                    team_name: team.to_string(),
                };
            }
            _ => return ClaudeMatch::Ambiguous,
        }
        // A member's own session: per team, its newest root transcript. (A
        // subagent file carries its parent's session id: a Stop with that id
        // is the parent's turn, never the subagent's.)
        let mut best: BTreeMap<&str, (EpochMs, &str)> = BTreeMap::new();
        for file in &index.files {
            if file.subagent || session_id != Some(file.session_id.as_str()) {
                continue;
            }
            if best
                .get(file.team.as_str())
                .is_none_or(|(modified, _)| file.modified > *modified)
            {
                best.insert(file.team.as_str(), (file.modified, file.member.as_str()));
            }
        }
        let targets = best.iter().map(|(team, (_, member))| (*team, *member));
        single(targets).unwrap_or(ClaudeMatch::NoMatch)
    }
}

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
    let wanted = name.trim().to_lowercase();
    team_folders(teams)
        .into_iter()
        .filter(|folder| folder.trim().to_lowercase() == wanted)
        .filter_map(|folder| {
            let (team_dir, config) = active_team(&root, &folder)?;
            Some((folder, team_dir, config))
        })
        .collect()
}

/// The union of every team's part of the index.
fn merge(teams: &BTreeMap<String, Index>) -> Arc<Index> {
    let mut index = Index::default();
    for part in teams.values() {
        index.extend(part);
    }
    Arc::new(index)
}

/// A team's lead sessions in rank order: `leadSessionId`, then
/// `sessionHistory` newest first, without repeats.
fn ordered_team_sessions(config: &TeamConfig) -> Vec<String> {
    let history = config.session_history.iter().rev().map(String::as_str);
    let mut out: Vec<String> = Vec::new();
    for session in config.lead_session_id.as_deref().into_iter().chain(history) {
        if !out.iter().any(|s| s == session) {
            out.push(session.to_string());
        }
        if out.len() >= MAX_SCANNED_SESSIONS {
            break;
        }
    }
    out
}

/// A team's lead sessions: `leadSessionId` and `sessionHistory`.
fn team_sessions(config: &TeamConfig) -> HashSet<String> {
    config
        .lead_session_id
        .iter()
        .chain(&config.session_history)
        .cloned()
        .collect()
}

/// One distinct target → a match; several → ambiguous; none → `None`.
fn single<'a>(targets: impl Iterator<Item = (&'a str, &'a str)>) -> Option<ClaudeMatch> {
    let distinct: HashSet<(&str, &str)> = targets.collect();
    match distinct.len() {
        0 => None,
        1 => distinct
            .into_iter()
            .next()
            .map(|(team, member)| ClaudeMatch::Member {
                team_name: team.to_string(),
                member_name: member.to_string(),
            }),
        _ => Some(ClaudeMatch::Ambiguous),
    }
}

impl ClaudeSessionLocator for FsClaudeSessionLocator {
    fn locate(&self, session_id: Option<&str>, transcript_path: Option<&str>) -> ClaudeMatch {
        // A payload's path counts only below `<claudeRoot>/projects/`.
        let transcript = transcript_path.and_then(|p| self.projects.entry_below(Path::new(p)));
        let named = self.named_teams(transcript.as_deref());
        let (index, age) = self.index(INDEX_TTL, &named);
        let found = Self::find(&index, session_id, transcript.as_deref());
        if found != ClaudeMatch::NoMatch || age < MISS_REBUILD_AFTER {
            return found;
        }
        let (fresh, _) = self.index(MISS_REBUILD_AFTER, &named);
        Self::find(&fresh, session_id, transcript.as_deref())
    }
}

/// Project folders scanned for a team's lead session when none of the
/// folders its config names holds one.
const MAX_SCANNED_PROJECT_FOLDERS: usize = 2048;
/// Lead sessions looked for in each scanned folder (`leadSessionId`, then
/// `sessionHistory` newest first).
const MAX_SCANNED_SESSIONS: usize = 8;

/// The plain folder names right below the projects root, sorted (links and
/// files are left out when the listing says so; opening refuses them anyway).
fn project_folders(projects: &Dir) -> Vec<String> {
    let Ok(entries) = projects.entries() else {
        return vec![];
    };
    let mut names: Vec<String> = entries
        .into_iter()
        .filter(|e| matches!(e.kind, Some(FileKind::Dir) | None))
        .map(|e| e.name)
        .filter(|name| is_plain_name(name))
        .collect();
    names.sort();
    names
}

/// The project folders whose transcripts may belong to a team: those its
/// project paths encode to, and,
/// when none of them holds one of the team's lead sessions, every folder
/// that does (a project that moved, or a path spelled in a way not derived
/// here).
fn team_project_dirs(projects: &Dir, folders: &[String], config: &TeamConfig) -> Vec<String> {
    let listed: HashSet<&str> = folders.iter().map(String::as_str).collect();
    let mut dirs: Vec<String> = Vec::new();
    let mut push = |folder: &String| {
        if !dirs.contains(folder) {
            dirs.push(folder.clone());
        }
    };
    for project in &config.project_paths {
        for name in encode_project_dir(project) {
            match &name {
                ProjectDirName::Exact(exact) => {
                    if listed.contains(exact.as_str()) {
                        push(exact);
                    }
                }
                ProjectDirName::Hashed { .. } => {
                    folders
                        .iter()
                        .filter(|f| name.matches(f))
                        .for_each(&mut push);
                }
            }
        }
    }
    let sessions: Vec<String> = ordered_team_sessions(config)
        .into_iter()
        .map(|session| format!("{session}.jsonl"))
        .filter(|file| is_plain_name(file))
        .collect();
    let holds_session = |folder: &str| {
        subfolder(projects, folder).is_some_and(|dir| {
            sessions.iter().any(|file| {
                dir.meta(file)
                    .ok()
                    .flatten()
                    .is_some_and(|m| m.kind == FileKind::File)
            })
        })
    };
    if sessions.is_empty() || dirs.iter().any(|d| holds_session(d)) {
        return dirs;
    }
    for folder in folders.iter().take(MAX_SCANNED_PROJECT_FOLDERS) {
        if !dirs.contains(folder) && holds_session(folder) {
            dirs.push(folder.clone());
        }
    }
    dirs
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
            let session = m.get("runtimeSessionId").and_then(Value::as_str)?.trim();
            (!failed && !session.is_empty()).then(|| {
                (
                    team.to_string(),
                    name.trim().to_lowercase(),
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
            (!stem.starts_with('.') && !stem.contains('*')).then(|| stem.trim().to_lowercase())
        }));
    }
    known
}

/// The first [`HEAD_LINES`] non-empty lines of the regular file `name` in
/// `dir` that parse as JSON, from at most [`MAX_HEAD_BYTES`].
pub(crate) fn read_head(dir: &Dir, name: &str) -> Vec<Value> {
    let Ok(Some(file)) = dir.open_file(name) else {
        return vec![];
    };
    let reader = BufReader::with_capacity(64 * 1024, file.take(MAX_HEAD_BYTES));
    reader
        .split(b'\n')
        .map_while(Result::ok)
        .filter(|line| line.iter().any(|b| !b.is_ascii_whitespace()))
        .take(HEAD_LINES)
        .filter_map(|line| serde_json::from_slice(&line).ok())
        .collect()
}

#[cfg(test)]
mod tests {
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
            &json!({"teamName": "atlas", "members": {"jack": {"runtimeSessionId": "S9"}}})
                .to_string(),
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
            let locator = FsClaudeSessionLocator::new(
                root.path().join("teams"),
                root.path().join("projects"),
            );
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
                &root.path().join("teams").join(&team).join("launch-state.json"),
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
            found.0 |= FsClaudeSessionLocator::find(
                &index,
                Some(&format!("K{}", 2 * MAX_TEAMS + 9)),
                None,
            ) == member(&last, "kim");
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
            &json!({"teamName": "ghost", "members": {"gus": {"runtimeSessionId": "G1"}}})
                .to_string(),
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
}
