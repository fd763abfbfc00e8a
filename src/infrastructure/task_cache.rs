//! The parsed task files of each team, kept between reads so a reconcile
//! after a one-task change costs one file, not the whole board.
//!
//! Each team's tasks folder is read once in full; afterwards a read looks
//! only at what may have changed:
//!
//! * the folder is still the same one (device and inode of the folder opened
//!   again through the file boundary), else everything is read again;
//! * the names its [`DirWatch`] reported since the last read (the notices are
//!   queued by the kernel inside the writing system call and drained here, so
//!   every change made before this read is among them);
//! * everything, by [`Stamp`], when the watch lost notices, when there is no
//!   watch (not Linux, no inotify left), and every [`REVALIDATE_EVERY`] (for
//!   the writes inotify never reports: through a hard link elsewhere or a
//!   shared mapping).
//!
//! A file whose stamp is not [`settled`](Stamp::settled) when read (changed
//! within the file system's clock tick of the read, or with more than one
//! name) is read again by every full pass until it is. Files that failed to
//! read are read again every time. The result is what a cold read of the
//! folder gives (same tasks, same order, same diagnostics); the tests below
//! compare the two over random change sequences.
//!
//! Memory is bounded: at most [`MAX_TASK_FILES`] entries per team (the rest
//! are only counted, as the cold read does) and [`MAX_CACHED_TEAMS`] teams
//! (least recently read dropped first). Tasks are shared (`Arc`) with every
//! snapshot handed out, never copied.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use self::references::BoardReferences;
use super::safe_fs::{Changes, Dir, DirWatch, FileKind, FileRead, Stamp};
use crate::domain::team::Task;

pub(crate) mod references;

/// Task files read per team, in name order; the rest are left out with a
/// `tasks_truncated` diagnostic (a board of this size is far beyond a real
/// team's, and every status carries the agenda built from it).
pub const MAX_TASK_FILES: usize = 10_000;
/// Cap of one task file.
pub const MAX_TASK_BYTES: u64 = 2 * 1024 * 1024;
/// Per-file task diagnostics kept per team; the rest are counted in one
/// `task_file_diagnostics_truncated:<n>` so a folder of junk cannot bloat
/// every status.
pub const MAX_TASK_DIAGNOSTICS: usize = 50;
/// Teams whose tasks are kept; reading another drops the least recently read.
const MAX_CACHED_TEAMS: usize = 4;
/// How often a watched folder is still checked in full, by stamp.
const REVALIDATE_EVERY: Duration = Duration::from_secs(30);

/// What one task file amounts to.
#[derive(Debug, Clone)]
pub(crate) enum TaskFile {
    /// A task that can be on an agenda, shared with the cache.
    Task(Arc<Task>),
    /// Internal or deleted: never on an agenda, not an error.
    Skipped,
    /// Not JSON, or not a task object (`task_file_invalid:<name>`).
    Invalid,
    /// A link, FIFO or folder (`task_file_not_a_file:<name>`).
    NotAFile,
    /// Over [`MAX_TASK_BYTES`] (`task_file_too_large:<name>`).
    TooLarge,
    /// Reading failed (`task_file_unreadable:<name>`).
    Unreadable,
}

impl TaskFile {
    fn diagnostic(&self, name: &str) -> Option<String> {
        let what = match self {
            Self::Task(_) | Self::Skipped => return None,
            Self::Invalid => "invalid",
            Self::NotAFile => "not_a_file",
            Self::TooLarge => "too_large",
            Self::Unreadable => "unreadable",
        };
        Some(format!("task_file_{what}:{name}"))
    }
}

/// Turns a task file's bytes into what it amounts to.
type ParseTaskFile = fn(&[u8]) -> TaskFile;

/// The tasks of a folder and what reading them found.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskBoard {
    /// Tasks in file-name order, shared with the folder's kept board: a
    /// copy of the board costs a count, not one per task (routing reads
    /// the board at every task change event).
    pub tasks: Arc<Vec<Arc<Task>>>,
    /// `tasks_dir_unreadable`, `tasks_truncated`, per-file diagnostics of
    /// files refused at the boundary (capped with the invalid ones).
    pub diagnostics: Vec<String>,
    /// `task_file_invalid:<name>` of files that do not parse (capped).
    pub invalid_files: Vec<String>,
}

/// Reads every task file of `dir` with nothing kept: the reference the
/// cache's tests compare it with.
#[cfg(test)]
fn read_cold(dir: &Dir, parse: ParseTaskFile) -> TaskBoard {
    let mut folder = TaskFolder::default();
    folder.rescan(dir, parse, false);
    folder.board()
}

/// Parsed task files per team (see the module docs).
#[derive(Debug)]
pub(crate) struct TaskCache {
    parse: ParseTaskFile,
    /// Whether folders get a [`DirWatch`] (without one every read checks
    /// every stamp; tests use that to exercise the fallback alone).
    watch_folders: bool,
    teams: Mutex<HashMap<String, Arc<Mutex<TaskFolder>>>>,
}

impl TaskCache {
    /// An empty cache parsing files with `parse`.
    pub(crate) fn new(parse: ParseTaskFile) -> Self {
        Self {
            parse,
            watch_folders: true,
            teams: Mutex::new(HashMap::new()),
        }
    }

    /// A cache that never watches folders: every read is a full pass by
    /// stamp (what platforms without inotify get).
    #[cfg(test)]
    fn unwatched(parse: ParseTaskFile) -> Self {
        Self {
            watch_folders: false,
            ..Self::new(parse)
        }
    }

    /// The tasks of `team`, whose tasks folder is `dir`.
    pub(crate) fn read(&self, team: &str, dir: &Dir) -> TaskBoard {
        // What the previous reads and reconciles left (parse garbage, full
        // index builds: a few MB at 10,000 tasks) is spread over the malloc
        // arenas of the pool threads that ran them: hand it back now and
        // then, so a process keeps about one board's worth, not one per
        // thread. Not on every read: a trim walks every arena (about 0.7 ms
        // with a 10,000-task board), more than the rest of a warm read.
        release_freed_memory_now_and_then();
        let folder = self.folder(team);
        let mut folder = lock(&folder);
        folder.refresh(dir, self.parse, self.watch_folders);
        folder.board()
    }

    /// The tasks of `team`'s board (tasks folder `dir`, brought up to date
    /// as [`TaskCache::read`] does) whose `blockedBy` names `task`, in board
    /// order: found through the folder's [`BoardReferences`], in time
    /// proportional to what they are, not to the board.
    pub(crate) fn waiting_on(&self, team: &str, dir: &Dir, task: &Task) -> Vec<Arc<Task>> {
        release_freed_memory_now_and_then();
        let folder = self.folder(team);
        let mut folder = lock(&folder);
        folder.refresh(dir, self.parse, self.watch_folders);
        let task_of = |name: &str| match folder.entries.get(name).map(|e| &e.file) {
            Some(TaskFile::Task(task)) => Some(task),
            _ => None,
        };
        folder
            .references
            .waiting_on(task, |name| task_of(name).map(|t| &**t))
            .into_iter()
            .filter_map(|name| task_of(name).cloned())
            .collect()
    }

    /// Has the next read of `team` look at `file_name` again whatever the
    /// watch says: a change event named it, and a write inotify cannot see
    /// (through a hard link elsewhere, a shared mapping) is caught this way.
    pub(crate) fn invalidate(&self, team: &str, file_name: &str) {
        if !is_task_file_name(file_name) {
            return;
        }
        let folder = lock(&self.teams).get(team).cloned();
        if let Some(folder) = folder {
            lock(&folder).recheck.insert(file_name.to_string());
        }
    }

    /// Forgets every team, dropping their watches (and the inotify
    /// instances they hold). A folder being read right now keeps its watch
    /// until that read ends.
    pub(crate) fn clear(&self) {
        let folders: Vec<_> = lock(&self.teams).drain().collect();
        drop(folders);
    }

    /// Forgets `team` (its folder is gone or not readable).
    pub(crate) fn forget(&self, team: &str) {
        lock(&self.teams).remove(team);
    }

    fn folder(&self, team: &str) -> Arc<Mutex<TaskFolder>> {
        let mut teams = lock(&self.teams);
        if let Some(folder) = teams.get(team) {
            return folder.clone();
        }
        if teams.len() >= MAX_CACHED_TEAMS {
            // A folder being read right now is not waited for.
            let oldest = teams
                .iter()
                .filter_map(|(name, f)| Some((name, f.try_lock().ok()?.last_read)))
                .min_by_key(|(_, last_read)| *last_read)
                .map(|(name, _)| name.clone());
            if let Some(oldest) = oldest {
                teams.remove(&oldest);
            }
        }
        teams
            .entry(team.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(TaskFolder::default())))
            .clone()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// One file as last read.
#[derive(Debug, Clone)]
struct Entry {
    file: TaskFile,
    /// The stamp it was read with; `None` when nothing was opened.
    stamp: Option<Stamp>,
    /// The stamp cannot be trusted to change with the file (see
    /// [`Stamp::settled`]), or the read failed: a full pass reads it again.
    unsettled: bool,
    /// Where its task is on the kept board, while that board is kept: set
    /// when the board is built, carried over when the task is replaced in
    /// place (any other change drops the board), so a patch finds the slot
    /// without counting the entries before it.
    board_at: usize,
}

/// One team's tasks folder as last read.
#[derive(Debug, Default)]
struct TaskFolder {
    /// Device and inode of the folder read.
    identity: Option<(u64, u64)>,
    watch: Option<DirWatch>,
    /// The first [`MAX_TASK_FILES`] task file names of the folder, sorted,
    /// with what each amounts to.
    entries: BTreeMap<String, Entry>,
    /// The tasks of `entries` by id and by what they wait on; every change
    /// of `entries` goes through [`TaskFolder::store`] and
    /// [`TaskFolder::take`], which keep the two together.
    references: BoardReferences,
    /// The folder held more task file names than [`MAX_TASK_FILES`].
    truncated: bool,
    /// Listing the folder failed (`tasks_dir_unreadable`).
    unreadable: bool,
    /// Names looked at again on every refresh: reads that failed, files
    /// with more than one name (writable through a folder the watch does not
    /// see) and names a change event reported ([`TaskCache::invalidate`]).
    recheck: BTreeSet<String>,
    validated_at: Option<Instant>,
    last_read: Option<Instant>,
    /// What [`TaskFolder::board`] gave last, while still true: a task
    /// replaced by another one is patched in, any other change drops it.
    board: Option<TaskBoard>,
}

/// Whether `name` is a task file name: `*.json`, not hidden.
fn is_task_file_name(name: &str) -> bool {
    name.ends_with(".json") && !name.starts_with('.')
}

impl TaskFolder {
    fn refresh(&mut self, dir: &Dir, parse: ParseTaskFile, watch_folder: bool) {
        let now = Instant::now();
        self.last_read = Some(now);
        let identity = dir.own_stamp().ok().map(|s| (s.dev, s.ino));
        if identity.is_none() || identity != self.identity {
            *self = Self {
                identity,
                last_read: Some(now),
                ..Self::default()
            };
        }
        if self.watch.is_none() && identity.is_some() && watch_folder {
            // Watch before listing: a change during the listing is noticed.
            self.watch = DirWatch::new(dir).ok();
            self.validated_at = None;
        }
        let changes = match self.watch.as_mut() {
            Some(watch) => watch.drain(),
            None => Changes::Lost,
        };
        let due = self
            .validated_at
            .is_none_or(|at| now.duration_since(at) >= REVALIDATE_EVERY);
        match changes {
            Changes::Names(names) if !due && !self.unreadable && !self.truncated => {
                let names: BTreeSet<String> = names
                    .into_iter()
                    .filter(|n| is_task_file_name(n))
                    .chain(std::mem::take(&mut self.recheck))
                    .collect();
                for name in names {
                    self.refresh_name(dir, parse, &name);
                }
                if self.entries.len() > MAX_TASK_FILES {
                    // New names pushed the folder over the cap: the cold
                    // read keeps the first ones in name order.
                    while self.entries.len() > MAX_TASK_FILES {
                        let Some(last) = self.entries.keys().next_back().cloned() else {
                            break;
                        };
                        self.take(&last);
                    }
                    self.board = None;
                    self.truncated = true;
                    self.recheck.retain(|n| self.entries.contains_key(n));
                }
            }
            Changes::Names(names) if !due && self.truncated && names.is_empty() => {
                let recheck = std::mem::take(&mut self.recheck);
                for name in recheck {
                    self.refresh_name(dir, parse, &name);
                }
            }
            changes => {
                if changes == Changes::Lost && watch_folder {
                    // A watch that lost notices (or was dropped with its
                    // folder) is replaced before the listing.
                    self.watch = DirWatch::new(dir).ok();
                }
                // No trim after the pass: it reads every file into one
                // buffer, so it leaves no garbage to hand back, and a trim
                // here would hand back the pages the caller's index build
                // is about to fault in again.
                self.rescan(dir, parse, true);
                self.validated_at = Some(now);
            }
        }
    }

    /// Lists the folder and reads every task file whose stamp changed (or
    /// every one, without `reuse`).
    fn rescan(&mut self, dir: &Dir, parse: ParseTaskFile, reuse: bool) {
        self.board = None;
        let listing = match dir.entries() {
            Ok(listing) => listing,
            Err(_) => {
                self.entries.clear();
                self.references = BoardReferences::default();
                self.recheck.clear();
                self.truncated = false;
                self.unreadable = true;
                return;
            }
        };
        self.unreadable = false;
        let mut names: Vec<(String, Option<FileKind>)> = listing
            .into_iter()
            .filter(|e| is_task_file_name(&e.name))
            .map(|e| (e.name, e.kind))
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        self.truncated = names.len() > MAX_TASK_FILES;
        names.truncate(MAX_TASK_FILES);
        let mut previous = std::mem::take(&mut self.entries);
        self.references = BoardReferences::default();
        self.recheck.clear();
        // One buffer for every file of the pass.
        let mut buffer = Vec::new();
        for (name, kind) in names {
            let known = previous.remove(&name).filter(|_| reuse);
            // The listing's kind spares a look; the read checks the handle anyway.
            let entry = match kind {
                Some(FileKind::Dir | FileKind::Symlink | FileKind::Other) => Some(Entry {
                    file: TaskFile::NotAFile,
                    stamp: None,
                    unsettled: false,
                    board_at: 0,
                }),
                Some(FileKind::File) | None => read_entry(dir, parse, &name, known, &mut buffer),
            };
            self.store(name, entry);
        }
    }

    /// Looks at one name again (it was reported changed, or failed before).
    fn refresh_name(&mut self, dir: &Dir, parse: ParseTaskFile, name: &str) {
        let known = self.take(name);
        let before = known.as_ref().map(|k| (k.file.clone(), k.board_at));
        let mut entry = read_entry(dir, parse, name, known, &mut Vec::new());
        let at = before.as_ref().map_or(0, |(_, at)| *at);
        if let Some(entry) = entry.as_mut() {
            entry.board_at = at;
        }
        self.patch_board(
            at,
            before.as_ref().map(|(file, _)| file),
            entry.as_ref().map(|e| &e.file),
        );
        self.store(name.to_string(), entry);
    }

    /// Brings the kept board along with one file going from `before` to
    /// `after`; `at` is where its task was on the board (its entry's
    /// `board_at`).
    fn patch_board(&mut self, at: usize, before: Option<&TaskFile>, after: Option<&TaskFile>) {
        match (before, after) {
            (Some(TaskFile::Task(old)), Some(TaskFile::Task(new))) => {
                if Arc::ptr_eq(old, new) {
                    return;
                }
                // The task keeps its place. The slot must hold the old task:
                // anything else (a place not kept up) costs a rebuild, never
                // a wrong board.
                let slot = self.board.as_mut().and_then(|board| {
                    let held = board.tasks.get(at).is_some_and(|t| Arc::ptr_eq(t, old));
                    // A board still shared with a reader is copied first.
                    held.then(|| &mut Arc::make_mut(&mut board.tasks)[at])
                });
                match slot {
                    Some(slot) => *slot = new.clone(),
                    None => self.board = None,
                }
            }
            (None, None) => {}
            // Same kind of failure, same diagnostic; anything else moves
            // tasks or diagnostics.
            (Some(old), Some(new))
                if !matches!(old, TaskFile::Task(_))
                    && std::mem::discriminant(old) == std::mem::discriminant(new) => {}
            _ => self.board = None,
        }
    }

    /// Files `entry` (if any) as what `name` amounts to now (`name` is
    /// not in `entries`).
    fn store(&mut self, name: String, entry: Option<Entry>) {
        let Some(entry) = entry else {
            return;
        };
        let linked = entry.stamp.is_some_and(|s| s.links > 1);
        if matches!(entry.file, TaskFile::Unreadable) || linked {
            self.recheck.insert(name.clone());
        }
        if let TaskFile::Task(task) = &entry.file {
            self.references.add(&name, task);
        }
        self.entries.insert(name, entry);
    }

    /// Takes `name` out of `entries` (and its task out of `references`).
    fn take(&mut self, name: &str) -> Option<Entry> {
        let entry = self.entries.remove(name)?;
        if let TaskFile::Task(task) = &entry.file {
            self.references.remove(name, task);
        }
        Some(entry)
    }

    /// The tasks and diagnostics of the folder as read (see
    /// [`TaskFolder::board`] for the kept copy).
    fn board(&mut self) -> TaskBoard {
        if let Some(board) = &self.board {
            return board.clone();
        }
        let board = self.build_board();
        self.board = Some(board.clone());
        board
    }

    /// The board of `entries`; each task's entry learns its place on it.
    fn build_board(&mut self) -> TaskBoard {
        let mut board = TaskBoard::default();
        if self.unreadable {
            board.diagnostics.push("tasks_dir_unreadable".into());
            return board;
        }
        if self.truncated {
            board.diagnostics.push("tasks_truncated".into());
        }
        let mut tasks = Vec::with_capacity(self.entries.len());
        let mut file_diagnostics = 0;
        for (name, entry) in &mut self.entries {
            match &entry.file {
                TaskFile::Task(task) => {
                    entry.board_at = tasks.len();
                    tasks.push(task.clone());
                }
                other => {
                    if let Some(diagnostic) = other.diagnostic(name) {
                        if file_diagnostics < MAX_TASK_DIAGNOSTICS {
                            match other {
                                TaskFile::Invalid => board.invalid_files.push(diagnostic),
                                _ => board.diagnostics.push(diagnostic),
                            }
                        }
                        file_diagnostics += 1;
                    }
                }
            }
        }
        if file_diagnostics > MAX_TASK_DIAGNOSTICS {
            board.diagnostics.push(format!(
                "task_file_diagnostics_truncated:{}",
                file_diagnostics - MAX_TASK_DIAGNOSTICS
            ));
        }
        board.tasks = Arc::new(tasks);
        board
    }
}

/// The least time between two trims of [`release_freed_memory_now_and_then`].
const RELEASE_EVERY: Duration = Duration::from_secs(1);

/// [`release_freed_memory`], at most once per [`RELEASE_EVERY`] (whoever
/// comes first after that trims; the others go on).
fn release_freed_memory_now_and_then() {
    static LAST: Mutex<Option<Instant>> = Mutex::new(None);
    let Ok(mut last) = LAST.try_lock() else {
        return;
    };
    let now = Instant::now();
    if last.is_some_and(|at| now.duration_since(at) < RELEASE_EVERY) {
        return;
    }
    *last = Some(now);
    drop(last);
    release_freed_memory();
}

/// Gives the free pages of every malloc arena back to the system: garbage
/// made on a pool thread otherwise stays in that thread's arena for good
/// (glibc keeps an arena's peak once the dynamic mmap threshold has grown).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_freed_memory() {
    // SAFETY: glibc's malloc_trim only returns free memory; no pointer held
    // anywhere is affected.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_freed_memory() {}

/// What `name` amounts to now: `known` again when its stamp is unchanged
/// and settled, else read afresh (into `buffer`); `None` when nothing is there.
fn read_entry(
    dir: &Dir,
    parse: ParseTaskFile,
    name: &str,
    known: Option<Entry>,
    buffer: &mut Vec<u8>,
) -> Option<Entry> {
    if let Some(known) = known.filter(|k| !k.unsettled && k.stamp.is_some()) {
        match dir.stamp(name) {
            Ok(None) => return None,
            Ok(Some((FileKind::File, stamp))) if Some(stamp) == known.stamp => return Some(known),
            // Changed, replaced or unreadable: the read below says what it is now.
            Ok(Some(_)) | Err(_) => {}
        }
    }
    let opened_at = SystemTime::now();
    let read = match dir.read_stamped_into(name, MAX_TASK_BYTES, buffer) {
        Ok(read) => read,
        Err(_) => {
            return Some(Entry {
                file: TaskFile::Unreadable,
                stamp: None,
                unsettled: true,
                board_at: 0,
            })
        }
    };
    let file = match read.read {
        FileRead::Missing => return None,
        FileRead::NotAFile => TaskFile::NotAFile,
        FileRead::TooLarge => TaskFile::TooLarge,
        FileRead::Bytes(bytes) => parse(bytes),
    };
    Some(Entry {
        file,
        stamp: read.stamp,
        unsettled: !read.stamp.is_some_and(|s| s.settled(opened_at)),
        board_at: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::agenda::{TaskIndex, TeamIndex};
    use crate::domain::names::{MemberName, TeamName};
    use crate::domain::team::{ReviewState, TaskStatus, TeamMember, TeamSnapshot};
    use crate::infrastructure::safe_fs::{mkfifo, TrustedRoot};
    use proptest::prelude::*;
    use std::cell::Cell;
    use std::path::Path;

    thread_local! {
        static PARSED: Cell<usize> = const { Cell::new(0) };
    }

    /// `task:<id>` is a task (owned by the first letter of `<id>`, waiting
    /// on the next letter's task), `skip` is skipped, anything else invalid.
    fn parse(bytes: &[u8]) -> TaskFile {
        PARSED.with(|p| p.set(p.get() + 1));
        match std::str::from_utf8(bytes) {
            Ok(text) if text.starts_with("task:") => TaskFile::Task(Arc::new(Task {
                id: text.to_string(),
                display_id: text.to_string(),
                subject: String::new(),
                status: TaskStatus::Pending,
                owner: text[5..].get(..1).map(str::to_string),
                blocked_by: match text[5..].chars().next() {
                    Some('a') => vec!["task:bbbb".into()],
                    Some('b') => vec!["task:cc".into()],
                    Some(_) => vec!["task:outside".into()],
                    None => vec![],
                },
                blocks: vec![],
                needs_clarification: None,
                review_state: ReviewState::None,
                history: vec![],
            })),
            Ok("skip") => TaskFile::Skipped,
            _ => TaskFile::Invalid,
        }
    }

    fn parsed() -> usize {
        PARSED.with(Cell::get)
    }

    fn open(path: &Path) -> Dir {
        TrustedRoot::new(path).open_dir(path).unwrap().unwrap()
    }

    /// The cached read against a cold one, and the agendas of an index
    /// kept across reads of the cache ([`TaskIndex::refresh`], fed the
    /// cache's own tasks) against ones built fresh from the cold read.
    fn assert_same(cache: &TaskCache, kept: &mut TaskIndex, path: &Path, step: &str) {
        let dir = open(path);
        let cached = cache.read("forge", &dir);
        let cold = read_cold(&dir, parse);
        let ids = |b: &TaskBoard| b.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&cached), ids(&cold), "tasks after {step}");
        assert_eq!(
            cached.diagnostics, cold.diagnostics,
            "diagnostics after {step}"
        );
        let team = |tasks: Arc<Vec<Arc<Task>>>| TeamSnapshot {
            config_found: true,
            members: MEMBERS
                .map(|name| TeamMember {
                    name: name.into(),
                    ..TeamMember::default()
                })
                .to_vec(),
            tasks,
            ..TeamSnapshot::empty(TeamName::parse("forge").unwrap())
        };
        let (warm, cold) = (team(cached.tasks), team(cold.tasks));
        let (warm_index, cold_index) = (TeamIndex::cached(&warm, kept), TeamIndex::build(&cold));
        for member in MEMBERS {
            let at = "2026-11-22T10:00:00.000Z";
            assert_eq!(
                warm_index.agenda_for(&MemberName::parse(member).unwrap(), at),
                cold_index.agenda_for(&MemberName::parse(member).unwrap(), at),
                "agenda of {member} after {step}"
            );
        }
    }

    /// The roster the agendas are compared for: the lead and every owner.
    const MEMBERS: [&str; 5] = ["team-lead", "a", "b", "c", "o"];

    /// One change to the folder.
    #[derive(Debug, Clone)]
    enum Change {
        /// Rewrites in place (same inode; same size as the other contents
        /// of the same length, so a rewrite can keep size and clock tick).
        Write(usize, usize),
        /// Writes a new file and renames it over the name.
        Replace(usize, usize),
        Delete(usize),
        Fifo(usize),
        Link(usize),
        Folder(usize),
        /// A second name for the file, in another folder, written through.
        WriteThroughHardLink(usize, usize),
    }

    const NAMES: [&str; 7] = [
        "1.json",
        "2.json",
        "3.json",
        "10.json",
        ".hidden.json",
        "notes.txt",
        "a.json",
    ];
    const CONTENTS: [&str; 6] = ["task:aaaa", "task:bbbb", "task:cc", "skip", "{bad", "x"];

    fn change() -> impl Strategy<Value = Change> {
        let name = 0..NAMES.len();
        let content = 0..CONTENTS.len();
        prop_oneof![
            4 => (name.clone(), content.clone()).prop_map(|(n, c)| Change::Write(n, c)),
            2 => (name.clone(), content.clone()).prop_map(|(n, c)| Change::Replace(n, c)),
            2 => name.clone().prop_map(Change::Delete),
            1 => name.clone().prop_map(Change::Fifo),
            1 => name.clone().prop_map(Change::Link),
            1 => name.clone().prop_map(Change::Folder),
            1 => (name, content).prop_map(|(n, c)| Change::WriteThroughHardLink(n, c)),
        ]
    }

    /// Applies `change`; returns the file a change event would name when
    /// inotify cannot see the change.
    fn apply(root: &Path, change: &Change) -> Option<&'static str> {
        let folder = root.join("tasks");
        let path = |n: usize| folder.join(NAMES[n]);
        let clear = |p: &Path| {
            if p.is_dir() && !p.is_symlink() {
                std::fs::remove_dir_all(p).unwrap();
            } else if p.symlink_metadata().is_ok() {
                std::fs::remove_file(p).unwrap();
            }
        };
        match *change {
            Change::Write(n, c) => {
                if path(n).symlink_metadata().is_ok_and(|m| !m.is_file()) {
                    clear(&path(n));
                }
                std::fs::write(path(n), CONTENTS[c]).unwrap();
            }
            Change::Replace(n, c) => {
                let temp = root.join("staging");
                std::fs::write(&temp, CONTENTS[c]).unwrap();
                clear(&path(n));
                std::fs::rename(&temp, path(n)).unwrap();
            }
            Change::Delete(n) => clear(&path(n)),
            Change::Fifo(n) => {
                clear(&path(n));
                mkfifo(&path(n));
            }
            Change::Link(n) => {
                clear(&path(n));
                std::os::unix::fs::symlink(root.join("outside"), path(n)).unwrap();
            }
            Change::Folder(n) => {
                clear(&path(n));
                std::fs::create_dir(path(n)).unwrap();
            }
            Change::WriteThroughHardLink(n, c) => {
                if !path(n).symlink_metadata().is_ok_and(|m| m.is_file()) {
                    return None;
                }
                let other = root.join("elsewhere").join(NAMES[n]);
                let _ = std::fs::remove_file(&other);
                std::fs::hard_link(path(n), &other).unwrap();
                std::fs::write(&other, CONTENTS[c]).unwrap();
                return Some(NAMES[n]);
            }
        }
        None
    }

    fn run(changes: &[Change], cache: &TaskCache) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("tasks")).unwrap();
        std::fs::create_dir(tmp.path().join("elsewhere")).unwrap();
        std::fs::write(tmp.path().join("outside"), "task:outside").unwrap();
        let kept = &mut TaskIndex::default();
        assert_same(cache, kept, &tmp.path().join("tasks"), "start");
        for (i, change) in changes.iter().enumerate() {
            if let Some(named) = apply(tmp.path(), change) {
                cache.invalidate("forge", named);
            }
            assert_same(
                cache,
                kept,
                &tmp.path().join("tasks"),
                &format!("{i}: {change:?}"),
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn a_watched_cache_reads_what_a_cold_read_reads(
            changes in prop::collection::vec(change(), 1..40)
        ) {
            run(&changes, &TaskCache::new(parse));
        }

        #[test]
        fn an_unwatched_cache_reads_what_a_cold_read_reads(
            changes in prop::collection::vec(change(), 1..40)
        ) {
            run(&changes, &TaskCache::unwatched(parse));
        }
    }

    #[test]
    fn a_change_costs_one_parse_and_the_folder_identity_is_checked() {
        let tmp = tempfile::tempdir().unwrap();
        let tasks = tmp.path().join("tasks");
        std::fs::create_dir(&tasks).unwrap();
        for i in 0..20 {
            std::fs::write(tasks.join(format!("{i}.json")), format!("task:{i}")).unwrap();
        }
        // Settled before the first read: a notice about a file that did not
        // change costs a stamp check, not a parse. Such notices do come: a
        // child process another test spawns holds a copy of our write handle
        // from its fork until its exec, and the close there queues a late
        // `IN_CLOSE_WRITE` for a file written above, after the watch exists.
        std::thread::sleep(
            crate::infrastructure::safe_fs::SETTLE_MARGIN + Duration::from_millis(200),
        );
        let cache = TaskCache::new(parse);
        let before = parsed();
        assert_eq!(cache.read("forge", &open(&tasks)).tasks.len(), 20);
        assert_eq!(parsed() - before, 20, "first read parses all");
        // Same size, in place.
        std::fs::write(tasks.join("7.json"), "task:x").unwrap();
        let before = parsed();
        let board = cache.read("forge", &open(&tasks));
        assert_eq!(parsed() - before, 1, "one change, one parse");
        assert!(board.tasks.iter().any(|t| t.id == "task:x"));
        let before = parsed();
        cache.read("forge", &open(&tasks));
        assert_eq!(parsed() - before, 0, "nothing changed");
        // A close after writing nothing: a notice, the same stamp.
        drop(
            std::fs::OpenOptions::new()
                .write(true)
                .open(tasks.join("3.json"))
                .unwrap(),
        );
        let before = parsed();
        cache.read("forge", &open(&tasks));
        assert_eq!(parsed() - before, 0, "a notice of an unchanged file");
        // Another folder at the same path: read afresh.
        std::fs::rename(&tasks, tmp.path().join("old")).unwrap();
        std::fs::create_dir(&tasks).unwrap();
        std::fs::write(tasks.join("1.json"), "task:new").unwrap();
        let board = cache.read("forge", &open(&tasks));
        let ids: Vec<_> = board.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["task:new"]);
    }

    /// A task replaced in place is patched into the kept board at the place
    /// its entry holds: the board is not rebuilt, and still reads as a cold
    /// read does, whichever task of the board changes.
    #[test]
    fn a_replaced_task_is_patched_in_at_its_place() {
        let tmp = tempfile::tempdir().unwrap();
        let tasks = tmp.path().join("tasks");
        std::fs::create_dir(&tasks).unwrap();
        // Name order is not number order; a bad file and a skipped one
        // take no place on the board.
        for i in 0..12 {
            std::fs::write(tasks.join(format!("{i}.json")), format!("task:{i}")).unwrap();
        }
        std::fs::write(tasks.join("05x.json"), "{bad").unwrap();
        std::fs::write(tasks.join("08x.json"), "skip").unwrap();
        let cache = TaskCache::new(parse);
        cache.read("forge", &open(&tasks));
        // Some changed twice: the place carried over from the first change
        // serves the second.
        for (round, i) in [0, 11, 3, 11, 10, 5, 3, 1, 9, 9].into_iter().enumerate() {
            let text = format!("task:{i}-{round}");
            std::fs::write(tasks.join(format!("{i}.json")), text).unwrap();
            let folder = cache.folder("forge");
            let mut folder = lock(&folder);
            folder.refresh(&open(&tasks), parse, true);
            assert!(folder.board.is_some(), "board kept after changing {i}");
            let ids = |b: &TaskBoard| b.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
            assert_eq!(
                ids(&folder.board()),
                ids(&read_cold(&open(&tasks), parse)),
                "after changing {i}"
            );
        }
    }

    #[test]
    fn settled_files_are_kept_by_stamp_without_a_watch() {
        let tmp = tempfile::tempdir().unwrap();
        let tasks = tmp.path().join("tasks");
        std::fs::create_dir(&tasks).unwrap();
        std::fs::write(tasks.join("1.json"), "task:1").unwrap();
        std::fs::write(tasks.join("2.json"), "task:2").unwrap();
        std::thread::sleep(
            crate::infrastructure::safe_fs::SETTLE_MARGIN + Duration::from_millis(200),
        );
        let cache = TaskCache::unwatched(parse);
        cache.read("forge", &open(&tasks));
        let before = parsed();
        cache.read("forge", &open(&tasks));
        assert_eq!(parsed() - before, 0, "settled stamps are trusted");
        std::fs::write(tasks.join("2.json"), "task:9").unwrap();
        let before = parsed();
        let board = cache.read("forge", &open(&tasks));
        assert_eq!(parsed() - before, 1, "a new ctime is seen");
        let ids: Vec<_> = board.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["task:1", "task:9"]);
    }

    #[test]
    fn the_caps_match_the_cold_read() {
        let tmp = tempfile::tempdir().unwrap();
        let tasks = tmp.path().join("tasks");
        std::fs::create_dir(&tasks).unwrap();
        for i in 0..MAX_TASK_FILES + 3 {
            let text = if i < MAX_TASK_DIAGNOSTICS + 4 {
                "bad"
            } else {
                "task:t"
            };
            std::fs::write(tasks.join(format!("{i:06}.json")), text).unwrap();
        }
        let cache = TaskCache::new(parse);
        let kept = &mut TaskIndex::default();
        assert_same(&cache, kept, &tasks, "over the cap");
        // A name sorting first pushes the last one out; a removal lets it back.
        std::fs::write(tasks.join("0.json"), "task:first").unwrap();
        assert_same(&cache, kept, &tasks, "a new first name");
        std::fs::remove_file(tasks.join("000001.json")).unwrap();
        std::fs::remove_file(tasks.join("000002.json")).unwrap();
        std::fs::remove_file(tasks.join("000003.json")).unwrap();
        std::fs::remove_file(tasks.join("0.json")).unwrap();
        assert_same(&cache, kept, &tasks, "back under the cap");
        let board = cache.read("forge", &open(&tasks));
        assert!(!board.diagnostics.contains(&"tasks_truncated".to_string()));
    }
}
