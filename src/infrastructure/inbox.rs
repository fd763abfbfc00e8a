//! Idempotent nudge delivery into a member's inbox,
//! `teams/<team>/inboxes/<member>.json` (DATA.md §3 "Inbox").
//!
//! The inbox is not an addon store: the desktop app's `TeamInboxWriter` and the
//! agents read and write the same file. So the file keeps the app's format
//! (a bare JSON array, `JSON.stringify(list, null, 2)`, no envelope) and the
//! app's lock protocol: an O_EXCL `<inbox>.json.lock` file holding
//! `<pid>\n<epochMs>\n`, not the `flock` of [`super::lock`], which the app would
//! not see. A corrupt inbox is never replaced or quarantined: it holds messages
//! the addon does not own, so delivery fails retryably and says why.

use std::collections::{HashMap, VecDeque};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::atomic_file::write_atomic;
use super::clock::{epoch_ms, modified_ms};
use super::json_store::{read_capped, Capped};
use super::process::process_alive;
use crate::domain::names::{normalize_member_name, validate_name, NameError};

/// `messageKind` of every nudge row.
pub const NUDGE_MESSAGE_KIND: &str = "member_work_sync_nudge";

/// How many times a write is attempted when its re-read does not show the row.
pub const VERIFY_ATTEMPTS: u32 = 3;

/// Largest inbox the writer reads; a bigger one is reported as unusable, never
/// truncated or replaced.
pub const MAX_INBOX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// Start of the control-API line that [`with_control_url_line`] keeps unique.
pub const CONTROL_URL_LINE_PREFIX: &str = "Required control API:";

/// Waits and ages of the lock protocol and the verify retries.
///
/// The defaults are the app's numbers; tests shorten them to stay fast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboxTimings {
    /// Total wait for the in-process mutex plus the lock file (default 5 s).
    pub lock_timeout: Duration,
    /// Pause between attempts to create the lock file (default 20 ms).
    pub lock_retry_every: Duration,
    /// A lock file older than this many ms is stale (default 30 000).
    pub stale_lock_age_ms: i64,
    /// Pause before verify attempt `n + 1` is this times `2^n` (default 10 ms).
    pub verify_backoff_base: Duration,
}

impl Default for InboxTimings {
    fn default() -> Self {
        Self {
            lock_timeout: Duration::from_secs(5),
            lock_retry_every: Duration::from_millis(20),
            stale_lock_age_ms: 30_000,
            verify_backoff_base: Duration::from_millis(10),
        }
    }
}

/// One task a nudge is about: `{teamName, taskId, displayId}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NudgeTaskRef {
    /// Team of the task.
    pub team_name: String,
    /// Canonical task id.
    pub task_id: String,
    /// Display id (the planner falls back to the first 8 chars of the id).
    pub display_id: String,
}

/// The caller-supplied fields of a nudge row; the constant fields (`from`,
/// `read`, `actionMode`, `summary`, `source`, `messageKind`) are added by
/// [`NudgeRow::to_json`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NudgeRow {
    /// Recipient member name.
    pub to: String,
    /// Message body shown to the member.
    pub text: String,
    /// Dispatch time, ISO 8601.
    pub timestamp: String,
    /// Tasks the nudge is about.
    pub task_refs: Vec<NudgeTaskRef>,
    /// The outbox item id; the idempotency key of the inbox.
    pub message_id: String,
    /// `agenda_sync` or `review_pickup`.
    pub work_sync_intent: String,
    /// The outbox intent key, when the item has one.
    pub work_sync_intent_key: Option<String>,
    /// Review-request event ids of a pickup nudge; omitted from the row when empty.
    pub work_sync_review_request_event_ids: Vec<String>,
    /// sha256 hex of the canonical payload; decides idempotent vs conflict.
    pub work_sync_payload_hash: String,
}

impl NudgeRow {
    /// The row exactly as it is stored in the inbox array.
    pub fn to_json(&self) -> Value {
        let text = |s: &str| Value::String(s.to_string());
        let mut row = Map::new();
        row.insert("from".into(), text("system"));
        row.insert("to".into(), text(&self.to));
        row.insert("text".into(), text(&self.text));
        row.insert("timestamp".into(), text(&self.timestamp));
        row.insert("read".into(), Value::Bool(false));
        let refs = self
            .task_refs
            .iter()
            .map(|r| {
                let mut task = Map::new();
                task.insert("teamName".into(), text(&r.team_name));
                task.insert("taskId".into(), text(&r.task_id));
                task.insert("displayId".into(), text(&r.display_id));
                Value::Object(task)
            })
            .collect();
        row.insert("taskRefs".into(), Value::Array(refs));
        row.insert("actionMode".into(), text("do"));
        row.insert("summary".into(), text("Work sync check"));
        row.insert("messageId".into(), text(&self.message_id));
        row.insert("source".into(), text("system_notification"));
        row.insert("messageKind".into(), text(NUDGE_MESSAGE_KIND));
        row.insert("workSyncIntent".into(), text(&self.work_sync_intent));
        if let Some(key) = &self.work_sync_intent_key {
            row.insert("workSyncIntentKey".into(), text(key));
        }
        if !self.work_sync_review_request_event_ids.is_empty() {
            let ids = self
                .work_sync_review_request_event_ids
                .iter()
                .map(|id| text(id))
                .collect();
            row.insert("workSyncReviewRequestEventIds".into(), Value::Array(ids));
        }
        row.insert(
            "workSyncPayloadHash".into(),
            text(&self.work_sync_payload_hash),
        );
        Value::Object(row)
    }
}

/// What a delivery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The row was appended and read back.
    Inserted,
    /// A row with the same `messageId`, payload hash and kind was already there;
    /// nothing was written (a retried delivery after a crash lands here).
    AlreadyPresent,
    /// A row with the same `messageId` but another payload hash or kind is
    /// there. It is never overwritten; retrying cannot help.
    PayloadConflict {
        /// The stored row's `workSyncPayloadHash`, if it has one.
        existing_payload_hash: Option<String>,
        /// The stored row's `messageKind`, if it has one.
        existing_message_kind: Option<String>,
    },
}

/// The app's wording for a [`DeliveryOutcome::PayloadConflict`].
pub fn payload_conflict_message(message_id: &str) -> String {
    format!("Inbox messageId collision for immutable payload: {message_id}")
}

/// Why a delivery failed.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    /// A team or member name that could leave its directory.
    #[error("invalid {what} name {name:?}: {source}")]
    InvalidName {
        /// `team` or `member`.
        what: &'static str,
        /// The refused name.
        name: String,
        /// What is wrong with it.
        source: NameError,
    },
    /// `teams/<team>` does not exist; a delivery never creates a team.
    #[error("team directory does not exist: {}", .0.display())]
    TeamMissing(PathBuf),
    /// The inbox path is a symlink; writes never follow one out of the team dir.
    #[error("refusing to write through symlink {}", .0.display())]
    Symlink(PathBuf),
    /// Another writer held the lock for the whole timeout.
    #[error("File lock timeout: {}", .0.display())]
    LockTimeout(PathBuf),
    /// The inbox does not hold a JSON array; it is left exactly as it is.
    #[error("corrupt inbox {} ({reason}); left untouched, delivery will be retried", path.display())]
    CorruptInbox {
        /// The inbox file.
        path: PathBuf,
        /// `invalid_json: …`, `not_an_array` or `file_too_large`.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("inbox I/O error on {}: {source}", path.display())]
    Io {
        /// The file the operation was on.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// Every attempt wrote the row but the re-read did not show it.
    #[error("Failed to verify inbox write: {}", .0.display())]
    VerifyFailed(PathBuf),
}

impl InboxError {
    /// True when a later attempt may succeed (the outbox backs off and retries);
    /// false when the same call will always fail.
    pub fn is_retryable(&self) -> bool {
        !matches!(
            self,
            Self::InvalidName { .. } | Self::TeamMissing(_) | Self::Symlink(_)
        )
    }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> InboxError + '_ {
    move |source| InboxError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes nudge rows into `teams/<team>/inboxes/<member>.json`.
#[derive(Debug, Clone)]
pub struct InboxWriter {
    teams_base: PathBuf,
    timings: InboxTimings,
}

impl InboxWriter {
    /// A writer for the teams under `teams_base`, with the default timings.
    pub fn new(teams_base: PathBuf) -> Self {
        Self {
            teams_base,
            timings: InboxTimings::default(),
        }
    }

    /// The same writer with other timings.
    pub fn with_timings(mut self, timings: InboxTimings) -> Self {
        self.timings = timings;
        self
    }

    /// `teams/<team>/inboxes/<normalized member>.json`, after checking both names.
    pub fn inbox_path(&self, team: &str, member: &str) -> Result<PathBuf, InboxError> {
        for (what, name) in [("team", team), ("member", member)] {
            validate_name(name).map_err(|source| InboxError::InvalidName {
                what,
                name: name.to_string(),
                source,
            })?;
        }
        Ok(self
            .teams_base
            .join(team)
            .join("inboxes")
            .join(format!("{}.json", normalize_member_name(member))))
    }

    /// Appends `row` to the member's inbox unless a row with its `messageId` is
    /// already there. `now_ms` is the wall-clock time of the call: it is written
    /// into the lock file and ages other writers' locks.
    pub fn deliver(
        &self,
        team: &str,
        member: &str,
        row: &NudgeRow,
        now_ms: i64,
    ) -> Result<DeliveryOutcome, InboxError> {
        let path = self.inbox_path(team, member)?;
        let team_dir = self.teams_base.join(team);
        if !team_dir.is_dir() {
            return Err(InboxError::TeamMissing(team_dir));
        }
        refuse_symlink(&path)?;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io_error(dir))?;
        }
        let _lock = InboxLock::acquire(&path, now_ms, &self.timings)?;
        // Checked again under the lock: the file may have been swapped meanwhile.
        refuse_symlink(&path)?;
        let stored = row.to_json();
        let mut written = false;
        for attempt in 0..VERIFY_ATTEMPTS {
            let mut rows = read_rows(&path)?;
            match find_by_message_id(&rows, row) {
                Some(Existing::Same) if written => return Ok(DeliveryOutcome::Inserted),
                Some(Existing::Same) => return Ok(DeliveryOutcome::AlreadyPresent),
                Some(Existing::Conflict {
                    payload_hash,
                    message_kind,
                }) => {
                    return Ok(DeliveryOutcome::PayloadConflict {
                        existing_payload_hash: payload_hash,
                        existing_message_kind: message_kind,
                    })
                }
                None => {}
            }
            rows.push(stored.clone());
            write_rows(&path, &rows)?;
            written = true;
            if read_rows(&path)
                .is_ok_and(|rows| matches!(find_by_message_id(&rows, row), Some(Existing::Same)))
            {
                return Ok(DeliveryOutcome::Inserted);
            }
            if attempt + 1 < VERIFY_ATTEMPTS {
                thread::sleep(self.timings.verify_backoff_base * 2u32.pow(attempt));
            }
        }
        Err(InboxError::VerifyFailed(path))
    }
}

/// A stored row that carries the delivered row's `messageId`.
enum Existing {
    Same,
    Conflict {
        payload_hash: Option<String>,
        message_kind: Option<String>,
    },
}

fn find_by_message_id(rows: &[Value], row: &NudgeRow) -> Option<Existing> {
    let found = rows
        .iter()
        .find(|r| r.get("messageId").and_then(Value::as_str) == Some(&row.message_id))?;
    let field = |name| found.get(name).and_then(Value::as_str);
    let payload_hash = field("workSyncPayloadHash");
    let message_kind = field("messageKind");
    if payload_hash == Some(&row.work_sync_payload_hash) && message_kind == Some(NUDGE_MESSAGE_KIND)
    {
        return Some(Existing::Same);
    }
    Some(Existing::Conflict {
        payload_hash: payload_hash.map(str::to_string),
        message_kind: message_kind.map(str::to_string),
    })
}

/// The stored rows as generic JSON, so unknown fields survive the rewrite.
fn read_rows(path: &Path) -> Result<Vec<Value>, InboxError> {
    let corrupt = |reason: String| InboxError::CorruptInbox {
        path: path.to_path_buf(),
        reason,
    };
    match read_capped(path, MAX_INBOX_FILE_BYTES).map_err(io_error(path))? {
        None => Ok(Vec::new()),
        Some(Capped::TooLarge) => Err(corrupt("file_too_large".into())),
        Some(Capped::Bytes(bytes)) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Array(rows)) => Ok(rows),
            Ok(_) => Err(corrupt("not_an_array".into())),
            Err(e) => Err(corrupt(format!("invalid_json: {e}"))),
        },
    }
}

/// Atomic replace with `JSON.stringify(rows, null, 2)` (no trailing newline, as the app writes it).
fn write_rows(path: &Path, rows: &[Value]) -> Result<(), InboxError> {
    let text =
        serde_json::to_string_pretty(rows).map_err(|e| io_error(path)(io::Error::other(e)))?;
    write_atomic(path, text.as_bytes()).map_err(io_error(path))
}

fn refuse_symlink(path: &Path) -> Result<(), InboxError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(InboxError::Symlink(path.to_path_buf())),
        _ => Ok(()),
    }
}

/// Replaces any control-API line of `text` with the one for `control_url`, at the end.
///
/// The app appends this line so the agent calls back the right control server;
/// a retried nudge may carry an older URL, hence replace rather than append.
pub fn with_control_url_line(text: &str, control_url: &str) -> String {
    let line = format!(
        "{CONTROL_URL_LINE_PREFIX} pass controlUrl \"{control_url}\" in both \
         member_work_sync_status and member_work_sync_report."
    );
    let body = text
        .lines()
        .filter(|l| !l.trim_start().starts_with(CONTROL_URL_LINE_PREFIX))
        .collect::<Vec<_>>()
        .join("\n");
    let body = body.trim_end();
    if body.is_empty() {
        line
    } else {
        format!("{body}\n\n{line}")
    }
}

/// Per inbox path, the threads of this process that hold or wait for it, in
/// arrival order; the front one holds it. Threads sleep on the condvar instead
/// of racing each other for the lock file every 20 ms, and first come is first
/// served, so no thread starves into the lock timeout under load.
struct InboxQueues {
    queues: Mutex<Waiters>,
    changed: Condvar,
}

#[derive(Default)]
struct Waiters {
    by_path: HashMap<PathBuf, VecDeque<u64>>,
    next_ticket: u64,
}

impl Waiters {
    fn leave(&mut self, path: &Path, ticket: u64) {
        if let Some(queue) = self.by_path.get_mut(path) {
            queue.retain(|&t| t != ticket);
            if queue.is_empty() {
                self.by_path.remove(path);
            }
        }
    }
}

fn inbox_queues() -> &'static InboxQueues {
    static QUEUES: OnceLock<InboxQueues> = OnceLock::new();
    QUEUES.get_or_init(|| InboxQueues {
        queues: Mutex::new(Waiters::default()),
        changed: Condvar::new(),
    })
}

/// This process's turn on one inbox path, given up on drop.
struct InProcessClaim {
    path: PathBuf,
    ticket: u64,
}

impl InProcessClaim {
    /// `None` when the turn has not come by `deadline`.
    fn acquire(path: &Path, deadline: Instant) -> Option<Self> {
        let shared = inbox_queues();
        let mut waiters = shared.queues.lock().unwrap_or_else(|p| p.into_inner());
        let ticket = waiters.next_ticket;
        waiters.next_ticket = waiters.next_ticket.wrapping_add(1);
        waiters
            .by_path
            .entry(path.to_path_buf())
            .or_default()
            .push_back(ticket);
        loop {
            let front = waiters.by_path.get(path).and_then(|q| q.front().copied());
            if front == Some(ticket) {
                return Some(Self {
                    path: path.to_path_buf(),
                    ticket,
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                waiters.leave(path, ticket);
                return None;
            }
            waiters = shared
                .changed
                .wait_timeout(waiters, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Drop for InProcessClaim {
    fn drop(&mut self) {
        let shared = inbox_queues();
        let mut waiters = shared.queues.lock().unwrap_or_else(|p| p.into_inner());
        waiters.leave(&self.path, self.ticket);
        shared.changed.notify_all();
    }
}

/// Holds `<inbox>.json.lock` (and this process's claim) until dropped.
struct InboxLock {
    lock_path: PathBuf,
    /// What we wrote into the lock file; release removes only a file that still holds it.
    content: Vec<u8>,
    // Declared last so it is released after the lock file is gone.
    _claim: InProcessClaim,
}

impl InboxLock {
    fn acquire(inbox: &Path, now_ms: i64, timings: &InboxTimings) -> Result<Self, InboxError> {
        let started = Instant::now();
        let deadline = started + timings.lock_timeout;
        let timeout = || InboxError::LockTimeout(inbox.to_path_buf());
        let claim = InProcessClaim::acquire(inbox, deadline).ok_or_else(timeout)?;
        let mut name = inbox.as_os_str().to_owned();
        name.push(".lock");
        let lock_path = PathBuf::from(name);
        loop {
            // The injected time advanced by the monotonic time spent waiting.
            let clock_ms = now_ms
                .saturating_add(i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock_path)
            {
                Ok(mut file) => {
                    let content = format!("{}\n{clock_ms}\n", std::process::id()).into_bytes();
                    if let Err(e) = file.write_all(&content) {
                        drop(file);
                        let _ = fs::remove_file(&lock_path);
                        return Err(io_error(&lock_path)(e));
                    }
                    return Ok(Self {
                        lock_path,
                        content,
                        _claim: claim,
                    });
                }
                Err(e) if is_contention(&e) => {
                    let broke = break_if_stale(&lock_path, clock_ms, timings.stale_lock_age_ms);
                    if Instant::now() >= deadline {
                        return Err(timeout());
                    }
                    if !broke {
                        let left = deadline.saturating_duration_since(Instant::now());
                        thread::sleep(timings.lock_retry_every.min(left));
                    }
                }
                Err(e) => return Err(io_error(&lock_path)(e)),
            }
        }
    }
}

impl Drop for InboxLock {
    fn drop(&mut self) {
        // If ours was broken as stale and another writer holds the path now,
        // its lock file must survive our release.
        if fs::read(&self.lock_path).is_ok_and(|c| c == self.content) {
            let _ = fs::remove_file(&self.lock_path);
        }
    }
}

/// The lock file exists (Windows reports a file pending deletion as access denied).
fn is_contention(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::AlreadyExists
        || (cfg!(windows) && e.kind() == io::ErrorKind::PermissionDenied)
}

/// Removes the lock file if its owner is dead or it is older than `stale_age_ms`;
/// true when the caller should try to create it again at once.
fn break_if_stale(lock_path: &Path, clock_ms: i64, stale_age_ms: i64) -> bool {
    let observed = match fs::read(lock_path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
        Err(_) => return false,
    };
    let (pid, locked_at_ms) = parse_lock(&observed);
    // A lock file without a time (its creator died mid-write) ages by its mtime.
    let locked_at_ms = locked_at_ms.or_else(|| modified_ms(lock_path));
    let too_old = locked_at_ms.is_some_and(|at| clock_ms.saturating_sub(at) > stale_age_ms);
    let owner_dead = pid.is_some_and(|pid| !process_alive(pid));
    if !(too_old || owner_dead) {
        return false;
    }
    // Re-read right before unlinking: if another process broke the stale lock
    // and took the path since we read it, the file differs and stays. (A
    // window between this read and the unlink remains; it needs two breakers
    // of one stale lock racing a third writer.)
    match fs::read(lock_path) {
        Ok(current) if current == observed => match fs::remove_file(lock_path) {
            Ok(()) => true,
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        },
        _ => true,
    }
}

/// `<pid>\n<epochMs>\n`; either part may be missing or garbage.
fn parse_lock(content: &[u8]) -> (Option<u32>, Option<i64>) {
    let text = String::from_utf8_lossy(content);
    let mut lines = text.lines().map(str::trim);
    let pid = lines
        .next()
        .and_then(|l| l.parse::<u32>().ok())
        .filter(|&pid| pid > 0);
    let at = lines.next().and_then(|l| l.parse::<i64>().ok());
    (pid, at)
}

/// [`crate::application::ports::InboxSink`] over [`InboxWriter`]: the outbox
/// id is the inbox `messageId`, so a retried write finds its own row.
impl crate::application::ports::InboxSink for InboxWriter {
    fn deliver(
        &self,
        item: &crate::domain::nudge::OutboxItem,
        now: i64,
    ) -> Result<crate::application::ports::InboxOutcome, crate::application::ports::InboxFailure>
    {
        use crate::application::ports::InboxOutcome;
        let payload = &item.payload;
        let row = NudgeRow {
            to: payload.to.clone(),
            text: payload.text.clone(),
            timestamp: crate::domain::time::format_iso(now),
            task_refs: payload
                .task_refs
                .iter()
                .map(|r| NudgeTaskRef {
                    team_name: r.team_name.clone(),
                    task_id: r.task_id.clone(),
                    display_id: r.display_id.clone(),
                })
                .collect(),
            message_id: item.id.clone(),
            work_sync_intent: match payload.work_sync_intent {
                crate::domain::nudge::NudgeIntent::AgendaSync => "agenda_sync".into(),
                crate::domain::nudge::NudgeIntent::ReviewPickup => "review_pickup".into(),
            },
            work_sync_intent_key: payload.work_sync_intent_key.clone(),
            work_sync_review_request_event_ids: payload.work_sync_review_request_event_ids.clone(),
            work_sync_payload_hash: item.payload_hash.clone(),
        };
        // The lock file carries wall-clock time (other processes judge its age),
        // even when the app runs on a test clock; the row keeps the app time.
        let wall_ms = epoch_ms(std::time::SystemTime::now()).unwrap_or(now);
        match InboxWriter::deliver(self, &item.team_name, &item.member_name, &row, wall_ms) {
            Ok(DeliveryOutcome::Inserted) => Ok(InboxOutcome::Inserted),
            Ok(DeliveryOutcome::AlreadyPresent) => Ok(InboxOutcome::AlreadyPresent),
            Ok(DeliveryOutcome::PayloadConflict { .. }) => Ok(InboxOutcome::PayloadConflict),
            Err(e) => Err(crate::application::ports::InboxFailure {
                retryable: e.is_retryable(),
                reason: e.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::process::Command;
    use std::sync::Arc;
    use std::time::SystemTime;

    const NOW: i64 = 1_746_500_000_000;
    /// Beyond any real pid_max (Linux ≤ 2^22, macOS 99 999): never a live process.
    const DEAD_PID: u32 = 2_147_483_000;

    fn setup() -> (tempfile::TempDir, InboxWriter, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let teams = dir.path().join("teams");
        fs::create_dir_all(teams.join("forge")).unwrap();
        let inbox = teams.join("forge/inboxes/jack.json");
        (dir, InboxWriter::new(teams), inbox)
    }

    fn row(id: &str, hash: &str) -> NudgeRow {
        NudgeRow {
            to: "jack".into(),
            text: "You have 1 actionable item: #1 Ship".into(),
            timestamp: "2025-05-06T03:33:20.000Z".into(),
            task_refs: vec![NudgeTaskRef {
                team_name: "forge".into(),
                task_id: "1".into(),
                display_id: "1".into(),
            }],
            message_id: id.into(),
            work_sync_intent: "agenda_sync".into(),
            work_sync_intent_key: None,
            work_sync_review_request_event_ids: Vec::new(),
            work_sync_payload_hash: hash.into(),
        }
    }

    fn rows_of(path: &Path) -> Vec<Value> {
        serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
    }

    fn lock_path(inbox: &Path) -> PathBuf {
        PathBuf::from(format!("{}.lock", inbox.display()))
    }

    fn short_timeout() -> InboxTimings {
        InboxTimings {
            lock_timeout: Duration::from_millis(150),
            ..InboxTimings::default()
        }
    }

    #[test]
    fn inserted_then_already_present_leaves_the_file_unchanged() {
        let (_dir, writer, inbox) = setup();
        let nudge = row("member-work-sync:forge:jack:fp", "h1");
        assert_eq!(
            writer.deliver("forge", "jack", &nudge, NOW).unwrap(),
            DeliveryOutcome::Inserted
        );
        let first = fs::read(&inbox).unwrap();
        assert_eq!(
            writer.deliver("forge", "Jack", &nudge, NOW + 1).unwrap(),
            DeliveryOutcome::AlreadyPresent
        );
        assert_eq!(fs::read(&inbox).unwrap(), first);
        let text = String::from_utf8(first).unwrap();
        assert!(
            text.starts_with("[\n  {\n    \"") && text.ends_with("}\n]"),
            "{text}"
        );
        assert_eq!(rows_of(&inbox), [nudge.to_json()]);
        assert!(!lock_path(&inbox).exists(), "lock released");
    }

    #[test]
    fn row_carries_the_documented_fields() {
        let mut nudge = row("id-1", "h1");
        let plain = nudge.to_json();
        for (field, value) in [
            ("from", "system"),
            ("actionMode", "do"),
            ("summary", "Work sync check"),
            ("source", "system_notification"),
            ("messageKind", "member_work_sync_nudge"),
            ("messageId", "id-1"),
            ("workSyncPayloadHash", "h1"),
            ("workSyncIntent", "agenda_sync"),
        ] {
            assert_eq!(plain[field], value, "{field}");
        }
        assert_eq!(plain["read"], false);
        assert_eq!(plain["taskRefs"][0]["displayId"], "1");
        assert!(plain.get("workSyncIntentKey").is_none());
        assert!(plain.get("workSyncReviewRequestEventIds").is_none());
        nudge.work_sync_intent_key = Some("review-pickup:e1".into());
        nudge.work_sync_review_request_event_ids = vec!["e1".into()];
        let pickup = nudge.to_json();
        assert_eq!(pickup["workSyncIntentKey"], "review-pickup:e1");
        assert_eq!(
            pickup["workSyncReviewRequestEventIds"],
            serde_json::json!(["e1"])
        );
    }

    #[test]
    fn payload_conflict_never_overwrites() {
        let (_dir, writer, inbox) = setup();
        writer
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap();
        let before = fs::read(&inbox).unwrap();
        assert_eq!(
            writer
                .deliver("forge", "jack", &row("id-1", "h2"), NOW)
                .unwrap(),
            DeliveryOutcome::PayloadConflict {
                existing_payload_hash: Some("h1".into()),
                existing_message_kind: Some(NUDGE_MESSAGE_KIND.into()),
            }
        );
        assert_eq!(fs::read(&inbox).unwrap(), before);
        assert_eq!(
            payload_conflict_message("id-1"),
            "Inbox messageId collision for immutable payload: id-1"
        );
    }

    #[test]
    fn same_message_id_of_another_kind_is_a_conflict() {
        let (_dir, writer, inbox) = setup();
        let foreign = r#"[{"from":"jill","messageId":"id-1","messageKind":"chat","workSyncPayloadHash":"h1"}]"#;
        fs::create_dir_all(inbox.parent().unwrap()).unwrap();
        fs::write(&inbox, foreign).unwrap();
        let outcome = writer
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap();
        assert!(
            matches!(outcome, DeliveryOutcome::PayloadConflict { existing_message_kind: Some(k), .. } if k == "chat")
        );
        assert_eq!(fs::read(&inbox).unwrap(), foreign.as_bytes());
    }

    #[test]
    fn corrupt_inbox_stays_byte_identical_and_delivery_fails_retryably() {
        let (_dir, writer, inbox) = setup();
        fs::create_dir_all(inbox.parent().unwrap()).unwrap();
        for (content, reason) in [
            (&b"[{\"messageId\": \"x\""[..], "invalid_json"),
            (br#"{"messages":[]}"#, "not_an_array"),
            (b"", "invalid_json"),
        ] {
            fs::write(&inbox, content).unwrap();
            let err = writer
                .deliver("forge", "jack", &row("id-1", "h1"), NOW)
                .unwrap_err();
            assert!(
                matches!(&err, InboxError::CorruptInbox { reason: r, .. } if r.starts_with(reason)),
                "{err}"
            );
            assert!(err.is_retryable());
            assert!(err.to_string().contains("left untouched"), "{err}");
            assert_eq!(fs::read(&inbox).unwrap(), content);
        }
        let names: Vec<_> = fs::read_dir(inbox.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["jack.json"], "no temp or lock file left");
    }

    #[test]
    fn foreign_rows_are_preserved_in_meaning() {
        let (_dir, writer, inbox) = setup();
        let existing = serde_json::json!([
            {"from": "jill", "text": "héllo \"world\"\n", "read": true, "messageId": "m-1",
             "custom": {"nested": [1, 2.5, null, -7], "z": false}, "timestamp": "2025-01-01T00:00:00Z"},
            {"from": "user", "text": "no id", "attachments": []},
            "a bare string row",
            42
        ]);
        fs::create_dir_all(inbox.parent().unwrap()).unwrap();
        fs::write(&inbox, serde_json::to_vec(&existing).unwrap()).unwrap();
        writer
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap();
        let rows = rows_of(&inbox);
        assert_eq!(rows.len(), 5);
        assert_eq!(Value::Array(rows[..4].to_vec()), existing);
        assert_eq!(rows[4], row("id-1", "h1").to_json());
    }

    fn write_lock(inbox: &Path, content: &str) {
        fs::create_dir_all(inbox.parent().unwrap()).unwrap();
        fs::write(lock_path(inbox), content).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn lock_of_a_dead_process_is_broken() {
        let (_dir, writer, inbox) = setup();
        write_lock(&inbox, &format!("{DEAD_PID}\n{NOW}\n"));
        let writer = writer.with_timings(short_timeout());
        assert_eq!(
            writer
                .deliver("forge", "jack", &row("id-1", "h1"), NOW)
                .unwrap(),
            DeliveryOutcome::Inserted
        );
        assert!(!lock_path(&inbox).exists());
    }

    #[test]
    fn lock_older_than_30_s_is_broken_even_if_its_owner_lives() {
        let (_dir, writer, inbox) = setup();
        let writer = writer.with_timings(short_timeout());
        let me = std::process::id();
        // The wait advances the injected clock, so leave it more than the 150 ms timeout.
        write_lock(&inbox, &format!("{me}\n{}\n", NOW - 29_500));
        assert!(
            matches!(
                writer.deliver("forge", "jack", &row("id-1", "h1"), NOW),
                Err(InboxError::LockTimeout(_))
            ),
            "29.5 s is not stale yet"
        );
        write_lock(&inbox, &format!("{me}\n{}\n", NOW - 30_001));
        assert_eq!(
            writer
                .deliver("forge", "jack", &row("id-1", "h1"), NOW)
                .unwrap(),
            DeliveryOutcome::Inserted
        );
        assert!(!lock_path(&inbox).exists());
    }

    #[test]
    fn live_fresh_lock_times_out_and_is_left_alone() {
        let (_dir, writer, inbox) = setup();
        let writer = writer.with_timings(short_timeout());
        let held = format!("{}\n{NOW}\n", std::process::id());
        write_lock(&inbox, &held);
        let started = Instant::now();
        let err = writer
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(150));
        assert_eq!(
            err.to_string(),
            format!("File lock timeout: {}", inbox.display())
        );
        assert!(err.is_retryable());
        assert_eq!(fs::read_to_string(lock_path(&inbox)).unwrap(), held);
        assert!(!inbox.exists());
    }

    #[test]
    fn a_thread_that_timed_out_in_the_queue_does_not_block_later_ones() {
        let (_dir, writer, inbox) = setup();
        let writer = writer.with_timings(short_timeout());
        let holder = InProcessClaim::acquire(&inbox, Instant::now()).unwrap();
        assert!(matches!(
            writer.deliver("forge", "jack", &row("id-1", "h1"), NOW),
            Err(InboxError::LockTimeout(_))
        ));
        drop(holder);
        assert_eq!(
            writer
                .deliver("forge", "jack", &row("id-1", "h1"), NOW)
                .unwrap(),
            DeliveryOutcome::Inserted
        );
    }

    #[test]
    fn lock_without_a_time_ages_by_its_mtime() {
        let (_dir, writer, inbox) = setup();
        let writer = writer.with_timings(short_timeout());
        let real_now = epoch_ms(SystemTime::now()).unwrap();
        // An empty lock file: its creator may be writing the content right now.
        write_lock(&inbox, "");
        assert!(matches!(
            writer.deliver("forge", "jack", &row("id-1", "h1"), real_now),
            Err(InboxError::LockTimeout(_))
        ));
        assert_eq!(
            writer
                .deliver("forge", "jack", &row("id-1", "h1"), real_now + 31_000)
                .unwrap(),
            DeliveryOutcome::Inserted
        );
    }

    #[test]
    fn names_are_checked_and_the_member_is_normalized() {
        let (dir, writer, _inbox) = setup();
        for (team, member) in [
            ("../x", "jack"),
            ("forge", "a/b"),
            ("forge", " "),
            ("forge", ".."),
        ] {
            let err = writer
                .deliver(team, member, &row("id-1", "h1"), NOW)
                .unwrap_err();
            assert!(matches!(err, InboxError::InvalidName { .. }), "{err}");
            assert!(!err.is_retryable());
        }
        writer
            .deliver("forge", " Jack ", &row("id-1", "h1"), NOW)
            .unwrap();
        assert!(dir.path().join("teams/forge/inboxes/jack.json").exists());
    }

    #[test]
    fn a_missing_team_is_not_created() {
        let (dir, writer, _inbox) = setup();
        let err = writer
            .deliver("ghost", "jack", &row("id-1", "h1"), NOW)
            .unwrap_err();
        assert!(matches!(err, InboxError::TeamMissing(_)), "{err}");
        assert!(!dir.path().join("teams/ghost").exists());
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_inbox_is_not_written_through() {
        let (dir, writer, inbox) = setup();
        let outside = dir.path().join("outside.json");
        fs::write(&outside, "[]").unwrap();
        fs::create_dir_all(inbox.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &inbox).unwrap();
        let err = writer
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap_err();
        assert!(matches!(err, InboxError::Symlink(_)), "{err}");
        assert_eq!(fs::read_to_string(&outside).unwrap(), "[]");
    }

    #[test]
    fn threads_delivering_distinct_rows_lose_none() {
        let (_dir, writer, inbox) = setup();
        let writer = Arc::new(writer);
        let handles: Vec<_> = (0..8)
            .map(|t| {
                let writer = writer.clone();
                thread::spawn(move || {
                    for n in 0..50 {
                        let nudge = row(&format!("id-{t}-{n}"), "h");
                        assert_eq!(
                            writer.deliver("forge", "jack", &nudge, NOW).unwrap(),
                            DeliveryOutcome::Inserted
                        );
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let ids: HashSet<String> = rows_of(&inbox)
            .iter()
            .map(|r| r["messageId"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(rows_of(&inbox).len(), 400);
        assert_eq!(ids.len(), 400);
        assert!(!lock_path(&inbox).exists());
    }

    #[test]
    fn threads_delivering_the_same_row_insert_it_once() {
        let (_dir, writer, inbox) = setup();
        let writer = Arc::new(writer);
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let writer = writer.clone();
                thread::spawn(move || writer.deliver("forge", "jack", &row("id-1", "h1"), NOW))
            })
            .collect();
        let outcomes: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().unwrap().unwrap())
            .collect();
        let inserted = outcomes
            .iter()
            .filter(|o| **o == DeliveryOutcome::Inserted)
            .count();
        assert_eq!(inserted, 1);
        assert!(outcomes[..].iter().all(|o| matches!(
            o,
            DeliveryOutcome::Inserted | DeliveryOutcome::AlreadyPresent
        )));
        assert_eq!(rows_of(&inbox).len(), 1);
    }

    /// Child-process half of `processes_deliver_each_row_once`; a no-op in a normal run.
    #[test]
    fn child_process_deliverer() {
        let (Ok(teams), Ok(order)) = (
            std::env::var("MWS_TEST_INBOX_TEAMS_DIR"),
            std::env::var("MWS_TEST_INBOX_ORDER"),
        ) else {
            return;
        };
        let writer = InboxWriter::new(PathBuf::from(teams));
        let mut ids: Vec<usize> = (0..50).collect();
        if order == "reverse" {
            ids.reverse();
        }
        for n in ids {
            let outcome = writer
                .deliver("forge", "jack", &row(&format!("id-{n}"), "h"), NOW)
                .unwrap();
            assert!(matches!(
                outcome,
                DeliveryOutcome::Inserted | DeliveryOutcome::AlreadyPresent
            ));
        }
    }

    #[test]
    fn processes_deliver_each_row_once() {
        let (dir, _writer, inbox) = setup();
        let spawn = |order: &str| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "infrastructure::inbox::tests::child_process_deliverer",
                    "--quiet",
                ])
                .env("MWS_TEST_INBOX_TEAMS_DIR", dir.path().join("teams"))
                .env("MWS_TEST_INBOX_ORDER", order)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        };
        let children = [spawn("forward"), spawn("forward"), spawn("reverse")];
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let rows = rows_of(&inbox);
        let ids: HashSet<&str> = rows
            .iter()
            .map(|r| r["messageId"].as_str().unwrap())
            .collect();
        assert_eq!(rows.len(), 50);
        assert_eq!(ids.len(), 50);
        assert!(!lock_path(&inbox).exists());
    }

    #[test]
    fn control_url_line_is_appended_once_and_replaced() {
        let once = with_control_url_line("Sync your work.", "http://127.0.0.1:1/a");
        assert_eq!(
            once,
            "Sync your work.\n\nRequired control API: pass controlUrl \"http://127.0.0.1:1/a\" \
             in both member_work_sync_status and member_work_sync_report."
        );
        let again = with_control_url_line(&once, "http://127.0.0.1:2/b");
        assert!(again.starts_with("Sync your work.\n\nRequired control API"));
        assert!(again.contains(":2/b") && !again.contains(":1/a"));
        assert_eq!(again.matches(CONTROL_URL_LINE_PREFIX).count(), 1);
    }
}
