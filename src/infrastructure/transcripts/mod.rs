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
//!
//! Here: the index and the lookup. `team_files` reads what a team's folder
//! says (active teams, lead and launched sessions, known members),
//! `projects` finds a team's project folders and reads transcript heads.

mod projects;
mod team_files;

use crate::domain::js_semantics::js_trim;
pub(crate) use projects::read_head;
use projects::{project_folders, team_project_dirs};
use team_files::team_sessions;
pub(crate) use team_files::{
    active_team, active_teams_named, folders_in_turn, known_members, launched_sessions, subfolder,
    team_folders,
};

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::safe_fs::{Dir, FileKind, TrustedRoot};
use super::team_config::TeamConfig;
use crate::application::turn_settled::{ClaudeMatch, ClaudeSessionLocator};
use crate::domain::time::EpochMs;
use crate::domain::turn_settled::transcript::{attribute_root, attribute_subagent, named_teams};

/// Most teams (re)indexed by one index build. With more team folders, each
/// build continues where the last one stopped (round robin) and the others
/// keep what their last build found, so every team is in the index within
/// a few builds whatever the folders are called; the teams a Stop's
/// transcript names are indexed first.
pub(crate) const MAX_TEAMS: usize = 200;
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
            .any(|folder| js_trim(folder).to_lowercase() == team)
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
            .filter(|folder| named.contains(&js_trim(folder).to_lowercase()))
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
        let team_lc = js_trim(team).to_lowercase();
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

/// The union of every team's part of the index.
fn merge(teams: &BTreeMap<String, Index>) -> Arc<Index> {
    let mut index = Index::default();
    for part in teams.values() {
        index.extend(part);
    }
    Arc::new(index)
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

#[cfg(test)]
mod tests;
