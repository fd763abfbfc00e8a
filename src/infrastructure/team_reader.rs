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

use super::safe_fs::{Dir, FileRead, TrustedRoot};
use super::task_cache::{TaskCache, TaskFile};
pub use super::task_cache::{MAX_TASK_BYTES, MAX_TASK_DIAGNOSTICS, MAX_TASK_FILES};
use super::task_file::{parse_task_file, TaskParse};
use super::team_config::{effort, string, trimmed_name, TeamConfig};
use crate::application::ports::{TaskImpactSource, TeamSource};
use crate::domain::js_semantics::{js_trim, locale_compare};
use crate::domain::names::{normalize_member_name, validate_name};
use crate::domain::team::{
    merge_team_members, meta_backend_id, tidy_meta_members, Clarification, KanbanColumn,
    KanbanEntry, MemberOverlay, ProviderId, ReviewState, Task, TaskStatus, TeamSnapshot,
};
use crate::domain::time::parse_iso;

/// Cap of `config.json`.
pub const MAX_CONFIG_BYTES: u64 = 10 * 1024 * 1024;
/// Cap of `members.meta.json`.
pub const MAX_MEMBERS_META_BYTES: u64 = 256 * 1024;
/// Cap of `kanban-state.json`.
pub const MAX_KANBAN_BYTES: u64 = 512 * 1024;
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
}

impl FsTeamSource {
    /// A reader over the given base dirs.
    pub fn new(teams_base: PathBuf, tasks_base: PathBuf) -> Self {
        Self {
            teams: TrustedRoot::new(teams_base),
            tasks: TrustedRoot::new(tasks_base),
            cache: Arc::new(TaskCache::new(read_task_file)),
        }
    }

    /// Drops every cached task folder and the watch it holds (the
    /// instance is disposed); a later read starts cold.
    pub fn release(&self) {
        self.cache.clear();
    }

    /// Every task file of the team, through the cache; `<what>_*` folder
    /// diagnostics as [`open_below`] gives them.
    fn read_tasks(
        &self,
        team_name: &str,
        diags: &mut Vec<String>,
        content: &mut Vec<String>,
    ) -> Vec<Arc<Task>> {
        match open_below(&self.tasks, team_name, "tasks_dir", diags) {
            Some(dir) => {
                let board = self.cache.read(team_name, &dir);
                diags.extend(board.diagnostics);
                content.extend(board.invalid_files);
                board.tasks
            }
            None => {
                self.cache.forget(team_name);
                Vec::new()
            }
        }
    }
}

impl FsTeamSource {
    /// The team's kanban cards; problems become `kanban_state_*` diagnostics
    /// (`kanban_state_invalid` into `content`).
    fn read_kanban(
        &self,
        team_name: &str,
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
    fn team_dir(&self, team_name: &str, diags: &mut Vec<String>) -> Option<Dir> {
        open_below(&self.teams, team_name, "team_dir", diags)
    }

    /// Config and roster only (no tasks, no kanban): what routing needs.
    fn read_roster(&self, team_name: &str) -> TeamSnapshot {
        let mut snapshot = TeamSnapshot {
            team_name: team_name.to_string(),
            ..TeamSnapshot::default()
        };
        let diags = &mut snapshot.diagnostics;
        let content = &mut snapshot.content_diagnostics;
        let Some(team_dir) = self.team_dir(team_name, diags) else {
            return snapshot;
        };
        snapshot.folder_found = true;
        let config = read_json(
            &team_dir,
            "config.json",
            MAX_CONFIG_BYTES,
            "team_config",
            diags,
            content,
        );
        let Some(config) = config.as_ref().and_then(TeamConfig::parse) else {
            return snapshot;
        };
        snapshot.config_found = true;
        snapshot.deleted = config.deleted;
        let meta = read_json(
            &team_dir,
            "members.meta.json",
            MAX_MEMBERS_META_BYTES,
            "members_meta",
            diags,
            content,
        )
        .map(|meta| {
            tidy_meta_members(
                array(&meta, "members")
                    .filter_map(parse_meta_member)
                    .collect(),
            )
        })
        .unwrap_or_default();
        snapshot.members = merge_team_members(&config.members, &meta);
        if snapshot.members.len() > MAX_ROSTER_MEMBERS {
            snapshot.members.truncate(MAX_ROSTER_MEMBERS);
            snapshot.diagnostics.push("roster_truncated".into());
        }
        snapshot
    }

    /// One task file by id (`<tasks>/<team>/<id>.json`), if it parses.
    fn read_task(&self, team_name: &str, task_id: &str) -> Option<Task> {
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

/// The folder `name` right below `root`. Missing: `None`, silently; a link or
/// file there: `<what>_not_a_folder`; any other failure: `<what>_unreadable`.
fn open_below(root: &TrustedRoot, name: &str, what: &str, diags: &mut Vec<String>) -> Option<Dir> {
    if validate_name(name).is_err() {
        diags.push(format!("{what}_unreadable"));
        return None;
    }
    match root.open_dir(&root.join(name)) {
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
    fn load_roster(&self, team_name: &str) -> TeamSnapshot {
        self.read_roster(team_name)
    }

    fn load(&self, team_name: &str) -> TeamSnapshot {
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

    fn active_members(&self, team_name: &str) -> Vec<String> {
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
        names
    }
}

impl TaskImpactSource for FsTeamSource {
    fn impacted_members(&self, team_name: &str, task_id: &str) -> Option<Vec<String>> {
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
                let found = tasks.iter().find(|t| names_task(&tasks, task_id, t))?;
                Task::clone(found)
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
            let dependent = dependent.trim().trim_start_matches('#');
            if validate_name(dependent).is_ok() {
                members.extend(self.read_task(team_name, dependent).and_then(|t| t.owner));
            }
        }
        // `blocks` is often missing or stale: the dependents are the open
        // tasks whose `blockedBy` names this one.
        let all_tasks = self.read_tasks(team_name, &mut ignored, &mut ignored_content);
        members.extend(
            all_tasks
                .iter()
                .filter(|t| t.id != task.id && !terminal_for_dependents(t, &kanban))
                .filter(|t| {
                    t.blocked_by
                        .iter()
                        .any(|reference| names_task(&all_tasks, reference, &task))
                })
                .filter_map(|t| t.owner.clone()),
        );
        members.retain(|m| validate_name(m).is_ok());
        members.sort_by_key(|m| normalize_member_name(m));
        members.dedup_by_key(|m| normalize_member_name(m));
        Some(members)
    }
}

/// True when a `blockedBy` reference names `task`: by canonical id, or by
/// display id when no task has that canonical id (a leading `#` is ignored).
fn names_task(tasks: &[Arc<Task>], reference: &str, task: &Task) -> bool {
    // Both sides as the app's index keys them: trimmed, one `#` dropped.
    fn key(reference: &str) -> &str {
        let reference = reference.trim();
        reference.strip_prefix('#').unwrap_or(reference)
    }
    let reference = key(reference);
    if reference.is_empty() {
        return false;
    }
    if tasks.iter().any(|t| key(&t.id) == reference) {
        key(&task.id) == reference
    } else {
        key(&task.display_id) == reference
    }
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
        Ok(FileRead::Bytes(bytes)) => match serde_json::from_slice(&bytes) {
            Ok(value) => Some(value),
            Err(_) => {
                content.push(format!("{what}_invalid"));
                None
            }
        },
        Err(_) => {
            diags.push(format!("{what}_unreadable"));
            None
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

#[cfg(test)]
mod tests {
    use super::*;
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
        let snapshot = source.load("forge");
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

        let snapshot = source.load("forge");
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
            let snapshot = source.load("forge");
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
        let snapshot = source.load("forge");
        let agenda = TeamIndex::build(&snapshot).agenda_for("jack", "2026-11-22T10:00:00.000Z");
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
        let snapshot = source.load("forge");
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
        let snapshot = source.load("forge");
        assert_eq!(snapshot.active_member_names(), ["bob", "boss", "olga"]);
        // A config agent type is compared as written; a meta one is trimmed first.
        assert_eq!(snapshot.lead().map(|m| m.name.as_str()), Some("olga"));
    }

    #[test]
    fn missing_and_deleted_teams() {
        let (root, source) = fixture();
        let missing = source.load("ghost");
        assert!(!missing.config_found && !missing.is_active());
        write(
            &root.path().join("teams/gone/config.json"),
            r#"{"name":"gone","deletedAt":"2026-05-06T11:00:00Z","members":[]}"#,
        );
        let gone = source.load("gone");
        assert!(gone.config_found && gone.deleted && !gone.is_active());
        write(
            &root.path().join("teams/noname/config.json"),
            r#"{"name":"  "}"#,
        );
        assert!(!source.load("noname").config_found);
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
        let snapshot = source.load("forge");
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
                let snapshot = source.load("forge");
                assert_eq!(snapshot.config_found, config_found, "{file} {replacement}");
                assert_eq!(snapshot.diagnostics, [diagnostic], "{file} {replacement}");
                if file.starts_with("tasks/") {
                    assert!(snapshot.tasks.is_empty(), "{file} {replacement}");
                    assert_eq!(source.impacted_members("forge", "7"), None);
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
            let snapshot = source.load("forge");
            assert_eq!(snapshot.diagnostics, [diagnostic], "{folder}");
            assert!(snapshot.tasks.is_empty(), "{folder}");
            assert_eq!(
                snapshot.config_found,
                folder.starts_with("tasks/"),
                "{folder}"
            );
            assert_eq!(source.impacted_members("forge", "7"), impacted, "{folder}");
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
                source.impacted_members("forge", "7"),
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
                source.impacted_members("forge", reference),
                expected,
                "{reference}"
            );
        }
        // A name that is no task on the board still falls back to the team.
        assert_eq!(source.impacted_members("forge", "#99999999"), None);
    }

    #[test]
    fn a_task_change_event_has_the_board_read_the_task_again() {
        let (root, source) = fixture();
        healthy_team(root.path());
        let owner = |s: &FsTeamSource| s.load("forge").tasks[0].owner.clone();
        assert_eq!(owner(&source).as_deref(), Some("jack"));
        // A write the folder watch cannot see: through a second name elsewhere.
        let elsewhere = root.path().join("elsewhere.json");
        fs::hard_link(root.path().join("tasks/forge/7.json"), &elsewhere).unwrap();
        fs::write(&elsewhere, r#"{"id":"7","owner":"jill"}"#).unwrap();
        // The board event for task 7 routes through the impact lookup.
        assert_eq!(
            source.impacted_members("forge", "7"),
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
                &serde_json::json!({"name": "forge", "members": names("m", config_count)})
                    .to_string(),
            );
            write(
                &root.path().join("teams/forge/members.meta.json"),
                &serde_json::json!({ "members": names("x", meta_count) }).to_string(),
            );
            let snapshot = source.load("forge");
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
            assert_eq!(source.active_members("forge").len(), kept);
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
            source.active_members("forge"),
            ["bob", "Carol", "dave", "dev.ops", "team-lead", "zoe"]
        );
    }
}
