//! Reads a team from the Claude agent-teams layout: `config.json`,
//! `members.meta.json`, `kanban-state.json` and the task files.
//!
//! Every read goes through [`safe_fs`](super::safe_fs) below the teams and
//! tasks roots: no link is followed at any component, only regular files are
//! opened (a FIFO never blocks a thread) and every input is size-capped. A
//! missing or broken file degrades to its documented default plus a
//! diagnostic (`<what>_not_a_file`, `<what>_too_large`, `<what>_invalid`,
//! `<what>_unreadable`; a linked team or tasks folder is `<what>_not_a_folder`),
//! and one bad task file never hides the others. The roster is capped at
//! [`MAX_ROSTER_MEMBERS`].

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use self::kept_roster::{ConfigDecode, JsonDecode, KeptRosters, MetaDecode};
use super::safe_fs::{Dir, FileRead, TrustedRoot};
use super::task_cache::references::reference_key;
#[cfg(test)]
use super::task_cache::references::TaskReferences;
use super::task_cache::{TaskCache, TaskFile};
pub use super::task_cache::{MAX_TASK_BYTES, MAX_TASK_DIAGNOSTICS, MAX_TASK_FILES};
use super::task_file::{parse_task_file, TaskParse};
use super::team_config::{effort, string, trimmed_name, TeamConfig};
use crate::application::ports::{TaskImpactSource, TeamSource};
use crate::domain::js_semantics::{js_trim, locale_compare};
use crate::domain::names::{normalize_member_name, validate_name, MemberName, TeamName};
use crate::domain::team::{
    merge_team_members, meta_backend_id, tidy_meta_members, Clarification, KanbanColumn,
    KanbanEntry, MemberOverlay, ProviderId, ReviewState, Task, TaskStatus, TeamSnapshot,
};
use crate::domain::time::parse_iso;

/// Cap of `config.json`.
pub(crate) const MAX_CONFIG_BYTES: u64 = 10 * 1024 * 1024;
/// Cap of `members.meta.json`.
const MAX_MEMBERS_META_BYTES: u64 = 256 * 1024;
/// Cap of `kanban-state.json`.
const MAX_KANBAN_BYTES: u64 = 512 * 1024;
/// Most members of a roster (config and `members.meta.json` merged, in that
/// order); the rest are dropped with a `roster_truncated` diagnostic. Real
/// teams have a handful of members; the cap keeps a team's work (one status,
/// journal and metrics entry per member on each refresh) bounded when a
/// config lists thousands.
pub const MAX_ROSTER_MEMBERS: usize = 256;

/// Team data on disk under `<teams>/<team>` and `<tasks>/<team>`; task files
/// are parsed once and kept until they change ([`TaskCache`]).
#[derive(Debug, Clone)]
pub struct FsTeamSource {
    teams: TrustedRoot,
    tasks: TrustedRoot,
    cache: Arc<TaskCache>,
    rosters: Arc<KeptRosters>,
}

impl FsTeamSource {
    /// A reader over the given base dirs.
    pub fn new(teams_base: PathBuf, tasks_base: PathBuf) -> Self {
        Self {
            teams: TrustedRoot::new(teams_base),
            tasks: TrustedRoot::new(tasks_base),
            cache: Arc::new(TaskCache::new(read_task_file)),
            rosters: Arc::default(),
        }
    }

    /// Drops every cached task folder and the watch it holds (the
    /// instance is disposed); a later read starts cold.
    pub fn release(&self) {
        self.cache.clear();
        self.rosters.clear();
    }

    /// Every task file of the team, through the cache (the list is the
    /// cache's own, shared); `<what>_*` folder diagnostics as
    /// [`open_below`] gives them.
    fn read_tasks(
        &self,
        team_name: &TeamName,
        diags: &mut Vec<String>,
        content: &mut Vec<String>,
    ) -> Arc<Vec<Arc<Task>>> {
        let Some(dir) = self.tasks_dir(team_name, diags) else {
            return Arc::default();
        };
        let board = self.cache.read(team_name, &dir);
        diags.extend(board.diagnostics);
        content.extend(board.invalid_files);
        board.tasks
    }

    /// The team's tasks folder for the task cache; when it cannot be
    /// opened (diagnostics as [`open_below`] gives them), the cache forgets
    /// the team.
    fn tasks_dir(&self, team_name: &TeamName, diags: &mut Vec<String>) -> Option<Dir> {
        let dir = open_below(&self.tasks, team_name, "tasks_dir", diags);
        if dir.is_none() {
            self.cache.forget(team_name);
        }
        dir
    }
}

impl FsTeamSource {
    /// The board's tasks whose `blockedBy` names `task` (see
    /// [`TaskReferences`](super::task_cache::references::TaskReferences)), in
    /// board order, through the task cache's kept references; none when the
    /// tasks folder cannot be opened.
    fn read_waiting_on(&self, team_name: &TeamName, task: &Task) -> Vec<Arc<Task>> {
        self.tasks_dir(team_name, &mut Vec::new())
            .map_or_else(Vec::new, |dir| self.cache.waiting_on(team_name, &dir, task))
    }

    /// The team's kanban cards; problems become `kanban_state_*` diagnostics
    /// (`kanban_state_invalid` into `content`).
    fn read_kanban(
        &self,
        team_name: &TeamName,
        diags: &mut Vec<String>,
        content: &mut Vec<String>,
    ) -> BTreeMap<String, KanbanEntry> {
        self.team_dir(team_name, diags)
            .and_then(|dir| {
                read_json(
                    &dir,
                    "kanban-state.json",
                    MAX_KANBAN_BYTES,
                    "kanban_state",
                    diags,
                    content,
                )
            })
            .map(|k| parse_kanban(&k))
            .unwrap_or_default()
    }

    /// `<teams>/<team>`, or `None` (with a diagnostic when it is not a plain folder).
    fn team_dir(&self, team_name: &TeamName, diags: &mut Vec<String>) -> Option<Dir> {
        open_below(&self.teams, team_name, "team_dir", diags)
    }

    /// Config and roster only (no tasks, no kanban): what routing needs.
    fn read_roster(&self, team_name: &TeamName) -> TeamSnapshot {
        let mut snapshot = TeamSnapshot::empty(team_name.clone());
        let diags = &mut snapshot.diagnostics;
        let content = &mut snapshot.content_diagnostics;
        let Some(team_dir) = self.team_dir(team_name, diags) else {
            return snapshot;
        };
        snapshot.folder_found = true;
        // Decoded, and merged, once per change of the bytes ([`KeptRosters`]).
        let Some(config_bytes) = read_file(
            &team_dir,
            "config.json",
            MAX_CONFIG_BYTES,
            "team_config",
            diags,
        ) else {
            return snapshot;
        };
        let config = self
            .rosters
            .config(team_name, &config_bytes, decode_config)
            .or_report("team_config", content);
        let Some(config) = config.flatten() else {
            return snapshot;
        };
        snapshot.config_found = true;
        snapshot.deleted = config.deleted;
        let meta_bytes = read_file(
            &team_dir,
            "members.meta.json",
            MAX_MEMBERS_META_BYTES,
            "members_meta",
            diags,
        );
        let meta = meta_bytes
            .as_deref()
            .and_then(|bytes| {
                let decode = self.rosters.meta(team_name, bytes, decode_meta);
                decode.or_report("members_meta", content)
            })
            .unwrap_or_default();
        snapshot.members = self.rosters.members(
            team_name,
            &config_bytes,
            meta_bytes.as_deref().unwrap_or_default(),
            || merge_team_members(&config.members, &meta),
        );
        if snapshot.members.len() > MAX_ROSTER_MEMBERS {
            snapshot.members.truncate(MAX_ROSTER_MEMBERS);
            snapshot.diagnostics.push("roster_truncated".into());
        }
        snapshot
    }

    /// One task file by id (`<tasks>/<team>/<id>.json`), if it parses.
    fn read_task(&self, team_name: &TeamName, task_id: &str) -> Option<Task> {
        // The id becomes one file name: nothing that could leave the folder.
        validate_name(task_id).ok()?;
        let dir = open_below(&self.tasks, team_name, "tasks_dir", &mut Vec::new())?;
        match dir.read(format!("{task_id}.json"), MAX_TASK_BYTES).ok()? {
            FileRead::Bytes(bytes) => match parse_task_file(&bytes) {
                TaskParse::Task(task) => Some(task),
                TaskParse::Skipped | TaskParse::Invalid => None,
            },
            FileRead::Missing | FileRead::NotAFile | FileRead::TooLarge => None,
        }
    }
}

/// The folder of `team` right below `root` (a checked name: one path
/// component). Missing: `None`, silently; a link or file there:
/// `<what>_not_a_folder`; any other failure: `<what>_unreadable`.
fn open_below(
    root: &TrustedRoot,
    team: &TeamName,
    what: &str,
    diags: &mut Vec<String>,
) -> Option<Dir> {
    match root.open_dir(&root.join(team.as_str())) {
        Ok(dir) => dir,
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => {
            diags.push(format!("{what}_not_a_folder"));
            None
        }
        Err(_) => {
            diags.push(format!("{what}_unreadable"));
            None
        }
    }
}

impl TeamSource for FsTeamSource {
    fn load_roster(&self, team_name: &TeamName) -> TeamSnapshot {
        self.read_roster(team_name)
    }

    fn load(&self, team_name: &TeamName) -> TeamSnapshot {
        let mut snapshot = self.read_roster(team_name);
        if !snapshot.config_found {
            return snapshot;
        }
        let diags = &mut snapshot.diagnostics;
        let content = &mut snapshot.content_diagnostics;
        snapshot.kanban = self.read_kanban(team_name, diags, content);
        snapshot.tasks = self.read_tasks(team_name, diags, content);
        snapshot
    }

    fn active_members(&self, team_name: &TeamName) -> Vec<MemberName> {
        let roster = self.read_roster(team_name);
        if !roster.is_active() {
            return Vec::new();
        }
        // In `localeCompare` order, as the app lists them: members are
        // reconciled, and their metric events recorded, in this order.
        let mut names: Vec<String> = roster
            .members
            .iter()
            .filter(|m| roster.is_active_member(&normalize_member_name(&m.name)))
            .map(|m| m.name.clone())
            .collect();
        names.sort_by(|a, b| locale_compare(a, b));
        // config.json is untrusted: a name unsafe as a store folder gets no reconcile.
        names
            .iter()
            .filter_map(|name| MemberName::parse(name).ok())
            .collect()
    }
}

impl TaskImpactSource for FsTeamSource {
    fn impacted_members(&self, team_name: &TeamName, task_id: &str) -> Option<Vec<MemberName>> {
        self.impacted_members_given(team_name, task_id, |task| {
            self.read_waiting_on(team_name, task)
        })
    }
}

impl FsTeamSource {
    /// [`TaskImpactSource::impacted_members`], with `waiting_on` giving the
    /// board's tasks whose `blockedBy` names a task, in board order (the
    /// tests pass the full scan the kept references are checked against).
    fn impacted_members_given(
        &self,
        team_name: &TeamName,
        task_id: &str,
        waiting_on: impl FnOnce(&Task) -> Vec<Arc<Task>>,
    ) -> Option<Vec<MemberName>> {
        // The event names the task: the next board read looks at its file
        // again even if the folder watch missed the write.
        if validate_name(task_id).is_ok() {
            self.cache.invalidate(team_name, &format!("{task_id}.json"));
        }
        // An event may name the task by its display id (`#11111111`), as
        // the app's routing accepts: found on the board when no file has
        // that name.
        let task = match self.read_task(team_name, task_id) {
            Some(task) => task,
            None => {
                let (mut ignored, mut ignored_content) = (Vec::new(), Vec::new());
                let tasks = self.read_tasks(team_name, &mut ignored, &mut ignored_content);
                Task::clone(find_named(&tasks, task_id)?)
            }
        };
        let roster = self.read_roster(team_name);
        let lead = roster.lead().map(|m| m.name.clone());
        // Problems reading the board are the reconcile's to report, not routing's.
        let (mut ignored, mut ignored_content) = (Vec::new(), Vec::new());
        let kanban = self.read_kanban(team_name, &mut ignored, &mut ignored_content);
        let kanban_reviewer = kanban
            .get(&task.id)
            .and_then(|entry| entry.reviewer.clone());
        let mut members: Vec<String> = task.owner.iter().cloned().collect();
        // A previous owner still has the task on its stored agenda.
        members.extend(
            task.history
                .iter()
                .filter(|e| e.kind == "owner_changed")
                .flat_map(|e| [e.from.clone(), e.to.clone()])
                .flatten(),
        );
        let reviewers: Vec<String> = task
            .history
            .iter()
            .filter_map(|e| match e.kind.as_str() {
                "review_requested" => e.reviewer.clone(),
                "review_started" => e.actor.clone(),
                _ => None,
            })
            .chain(kanban_reviewer)
            .collect();
        let owner = task
            .owner
            .as_deref()
            .map(crate::domain::names::normalize_member_name);
        let self_review = reviewers
            .iter()
            .any(|r| Some(normalize_member_name(r)) == owner);
        let lead_oversees = task.owner.is_none()
            || task.needs_clarification == Some(Clarification::Lead)
            || !task.blocked_by.is_empty()
            || self_review
            || (crate::domain::agenda::effective_review_state(&task) == ReviewState::Review
                && reviewers.is_empty());
        members.extend(reviewers);
        if lead_oversees {
            members.extend(lead);
        }
        for dependent in &task.blocks {
            let dependent = js_trim(dependent).trim_start_matches('#');
            if validate_name(dependent).is_ok() {
                members.extend(self.read_task(team_name, dependent).and_then(|t| t.owner));
            }
        }
        // `blocks` is often missing or stale: the dependents are the open
        // tasks whose `blockedBy` names this one.
        members.extend(
            waiting_on(&task)
                .iter()
                .filter(|t| t.id != task.id && !terminal_for_dependents(t, &kanban))
                .filter_map(|t| t.owner.clone()),
        );
        // Task files are untrusted: a name unsafe as a store folder is no member.
        let mut members: Vec<MemberName> = members
            .iter()
            .filter_map(|m| MemberName::parse(m).ok())
            .collect();
        members.sort_by_key(|m| normalize_member_name(m.as_str()));
        members.dedup_by_key(|m| normalize_member_name(m.as_str()));
        Some(members)
    }
}

/// The task of `tasks` a reference names: the first whose id has its key,
/// else (no id has it) the first whose display id has it.
fn find_named<'a>(tasks: &'a [Arc<Task>], reference: &str) -> Option<&'a Arc<Task>> {
    let key = reference_key(reference);
    if key.is_empty() {
        return None;
    }
    tasks
        .iter()
        .find(|t| reference_key(&t.id) == key)
        .or_else(|| tasks.iter().find(|t| reference_key(&t.display_id) == key))
}

/// True when a task can no longer act on a finished blocker: deleted, or
/// completed outside review and not sent back for fixes. A kanban "approved"
/// card on an unfinished task is not taken as terminal (it may predate a
/// reopening): waking an owner needlessly costs one reconcile, missing one
/// loses a wake-up.
fn terminal_for_dependents(task: &Task, kanban: &BTreeMap<String, KanbanEntry>) -> bool {
    if task.status == TaskStatus::Deleted {
        return true;
    }
    let review_state = crate::domain::agenda::effective_review_state(task);
    let column = kanban
        .get(&task.id)
        .map(|k| k.column)
        .or(match review_state {
            ReviewState::Approved => Some(KanbanColumn::Approved),
            ReviewState::Review => Some(KanbanColumn::Review),
            _ => None,
        });
    let needs_fix = review_state == ReviewState::NeedsFix && column.is_none();
    task.status == TaskStatus::Completed && column != Some(KanbanColumn::Review) && !needs_fix
}

/// Reads and parses the capped JSON file `name` in `dir`; problems become
/// `<what>_not_a_file` / `<what>_too_large` / `<what>_invalid` /
/// `<what>_unreadable` diagnostics (`<what>_invalid` into `content`). A
/// missing file is silent.
fn read_json(
    dir: &Dir,
    name: &str,
    max: u64,
    what: &str,
    diags: &mut Vec<String>,
    content: &mut Vec<String>,
) -> Option<Value> {
    let bytes = read_file(dir, name, max, what, diags)?;
    decode_json(&bytes, |value| value).or_report(what, content)
}

/// The bytes of `name`; `None` when it is missing, or with a `<what>_*`
/// diagnostic when it cannot be read.
fn read_file(
    dir: &Dir,
    name: &str,
    max: u64,
    what: &str,
    diags: &mut Vec<String>,
) -> Option<Vec<u8>> {
    match dir.read(name, max) {
        Ok(FileRead::Missing) => None,
        Ok(FileRead::NotAFile) => {
            diags.push(format!("{what}_not_a_file"));
            None
        }
        Ok(FileRead::TooLarge) => {
            diags.push(format!("{what}_too_large"));
            None
        }
        Ok(FileRead::Bytes(bytes)) => Some(bytes),
        Err(_) => {
            diags.push(format!("{what}_unreadable"));
            None
        }
    }
}

/// `bytes` as JSON, read by `read`.
fn decode_json<T>(bytes: &[u8], read: impl FnOnce(Value) -> T) -> JsonDecode<T> {
    match serde_json::from_slice(bytes) {
        Ok(value) => JsonDecode::Json(read(value)),
        Err(_) => JsonDecode::NotJson,
    }
}

fn decode_config(bytes: &[u8]) -> ConfigDecode {
    decode_json(bytes, |config| TeamConfig::parse(&config))
}

fn decode_meta(bytes: &[u8]) -> MetaDecode {
    decode_json(bytes, |meta| {
        tidy_meta_members(
            array(&meta, "members")
                .filter_map(parse_meta_member)
                .collect(),
        )
    })
}

impl<T> JsonDecode<T> {
    /// The decode, or `None` with `<what>_invalid` in `content`.
    fn or_report(self, what: &str, content: &mut Vec<String>) -> Option<T> {
        match self {
            JsonDecode::Json(read) => Some(read),
            JsonDecode::NotJson => {
                content.push(format!("{what}_invalid"));
                None
            }
        }
    }
}

fn array<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

pub(crate) fn parse_meta_member(value: &Value) -> Option<MemberOverlay> {
    let provider_id = value
        .get("providerId")
        .and_then(Value::as_str)
        .and_then(ProviderId::parse);
    Some(MemberOverlay {
        name: trimmed_name(value)?,
        // The members-meta reader trims the agent type (the config reader does not).
        agent_type: value
            .get("agentType")
            .and_then(Value::as_str)
            .map(js_trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string),
        provider_id,
        // The app's members-meta reader keeps a backend id only where it
        // belongs to the entry's provider.
        provider_backend_id: meta_backend_id(
            provider_id,
            value.get("providerBackendId").and_then(Value::as_str),
        ),
        model: string(value, "model"),
        effort: effort(value),
        fast_mode: value.get("fastMode").and_then(Value::as_bool),
        // Only a number counts; anything else (or nothing) restores a member
        // the config marks removed (the reference's members-meta rule).
        removed_at: value.get("removedAt").and_then(Value::as_f64),
    })
}

fn parse_kanban(value: &Value) -> BTreeMap<String, KanbanEntry> {
    let Some(tasks) = value.get("tasks").and_then(Value::as_object) else {
        return BTreeMap::new();
    };
    tasks
        .iter()
        .filter_map(|(id, entry)| {
            let column = match entry.get("column")?.as_str()? {
                "review" => KanbanColumn::Review,
                "approved" => KanbanColumn::Approved,
                _ => return None,
            };
            let moved_at = entry.get("movedAt")?.as_str()?;
            Some((
                id.clone(),
                KanbanEntry {
                    column,
                    moved_at_ms: parse_iso(moved_at),
                    reviewer: string(entry, "reviewer"),
                },
            ))
        })
        .collect()
}

/// A task file's bytes, by [`parse_task_file`]'s rules.
fn read_task_file(bytes: &[u8]) -> TaskFile {
    match parse_task_file(bytes) {
        TaskParse::Task(task) => TaskFile::Task(Arc::new(task)),
        TaskParse::Skipped => TaskFile::Skipped,
        TaskParse::Invalid => TaskFile::Invalid,
    }
}

mod kept_roster;
#[cfg(test)]
mod tests;
