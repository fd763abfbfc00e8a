//! `teams/.member-work-sync/activity.json`: what a running addon's reconcile
//! queue is doing, published for operators' views in other processes.
//!
//! The queue lives in the app's memory; `member-work-sync watch` runs in a
//! terminal, in another process, and would otherwise never see it. So an
//! instance that drives its queue (`autoStart`) writes its queue diagnostics
//! here whenever they change, at most once a second, and removes the file
//! when it is disposed. The file is a view, not state: it is written without
//! fsync (a crash leaves an old view, which names a dead pid) and nothing in
//! the addon ever reads it back.
//!
//! Shape: `{schemaVersion: 1, pid, startedAt, updatedAt, queue}` where
//! `queue` is exactly what `getQueueDiagnostics()` returns.

use std::io;
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::application::engine::QueueDiagnostics;
use crate::domain::time::{format_iso, EpochMs};
use crate::infrastructure::safe_fs::{FileRead, TrustedRoot};

/// The file's name, in the teams base's `.member-work-sync/` folder.
const ACTIVITY_FILE: &str = "activity.json";
/// Envelope version.
const SCHEMA_VERSION: u64 = 1;
/// Largest activity file [`ActivityFile::remove`] reads to check its owner.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

/// Publishes one instance's queue diagnostics.
pub(crate) struct ActivityFile {
    root: TrustedRoot,
    folder: PathBuf,
    pid: u32,
    started_at: String,
    /// The queue as last written (nothing is written while it is unchanged).
    last: Mutex<Option<Value>>,
}

impl ActivityFile {
    /// The activity file of this process under `teams_base`, started at `now`.
    pub(super) fn new(teams_base: PathBuf, now: EpochMs) -> Self {
        Self {
            folder: teams_base.join(".member-work-sync"),
            root: TrustedRoot::new(teams_base),
            pid: std::process::id(),
            started_at: format_iso(now),
            last: Mutex::new(None),
        }
    }

    /// Path of the file.
    pub(super) fn path(&self) -> PathBuf {
        self.folder.join(ACTIVITY_FILE)
    }

    /// Writes `queue` unless it equals what was written last; `Ok(true)` when
    /// it wrote. A failed write is tried again on the next call.
    pub(super) fn publish(&self, queue: &QueueDiagnostics, now: EpochMs) -> io::Result<bool> {
        let queue = serde_json::to_value(queue).map_err(io::Error::other)?;
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.as_ref() == Some(&queue) {
            return Ok(false);
        }
        let file = json!({
            "schemaVersion": SCHEMA_VERSION,
            "pid": self.pid,
            "startedAt": self.started_at,
            "updatedAt": format_iso(now),
            "queue": queue,
        });
        let mut bytes = serde_json::to_vec_pretty(&file).map_err(io::Error::other)?;
        bytes.push(b'\n');
        let dir = self.root.create_dir_all(&self.folder)?;
        dir.write_replacing(ACTIVITY_FILE, &bytes, 0o600, false)?;
        *last = Some(queue);
        Ok(true)
    }

    /// Removes the file if this process wrote it (another instance may have
    /// written since). Absent is fine.
    pub(super) fn remove(&self) -> io::Result<()> {
        let Some(dir) = self.root.open_dir(&self.folder)? else {
            return Ok(());
        };
        let ours = match dir.read(ACTIVITY_FILE, MAX_READ_BYTES)? {
            FileRead::Bytes(bytes) => {
                serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .and_then(|file| file.get("pid").and_then(Value::as_u64))
                    == Some(u64::from(self.pid))
            }
            FileRead::Missing | FileRead::NotAFile | FileRead::TooLarge => false,
        };
        if ours {
            dir.remove_file(ACTIVITY_FILE)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::application::engine::QueuedItemView;
    use std::fs;

    fn queue(queued: usize) -> QueueDiagnostics {
        QueueDiagnostics {
            queued,
            running: 0,
            enqueued: queued as u64,
            coalesced: 0,
            reconciled: 0,
            dropped: 0,
            failed: 0,
            dropped_events: 0,
            merged_events: 0,
            next_run_at: None,
            oldest_queued_age_ms: None,
            oldest_running_age_ms: None,
            queued_items: (0..queued)
                .map(|n| QueuedItemView {
                    team_name: "forge".into(),
                    member_name: format!("m{n}"),
                    first_queued_at: "2026-11-23T09:59:45.000Z".into(),
                    last_queued_at: "2026-11-23T09:59:45.000Z".into(),
                    run_at: "2026-11-23T10:00:00.000Z".into(),
                    max_run_at: "2026-11-23T10:00:45.000Z".into(),
                    trigger_reasons: vec!["task_changed"],
                    trigger_reason_counts: serde_json::Map::new(),
                })
                .collect(),
            running_items: Vec::new(),
        }
    }

    #[test]
    fn writes_on_change_only_and_removes_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let activity = ActivityFile::new(dir.path().to_path_buf(), 0);
        assert!(activity.publish(&queue(1), 1_000).unwrap());
        assert!(!activity.publish(&queue(1), 2_000).unwrap(), "unchanged");
        assert!(activity.publish(&queue(2), 3_000).unwrap());
        let file: Value = serde_json::from_slice(&fs::read(activity.path()).unwrap()).unwrap();
        assert_eq!(file["pid"], std::process::id());
        assert_eq!(file["updatedAt"], "1970-01-01T00:00:03.000Z");
        assert_eq!(file["queue"]["queued"], 2);
        assert_eq!(file["queue"]["queuedItems"][1]["memberName"], "m1");
        activity.remove().unwrap();
        assert!(!activity.path().exists());
        activity.remove().unwrap();
    }

    #[test]
    fn leaves_another_writers_file_and_never_follows_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let activity = ActivityFile::new(dir.path().to_path_buf(), 0);
        fs::create_dir_all(dir.path().join(".member-work-sync")).unwrap();
        fs::write(activity.path(), r#"{"pid": 1}"#).unwrap();
        activity.remove().unwrap();
        assert!(activity.path().exists(), "another process's file stays");

        let outside = dir.path().join("outside");
        fs::write(&outside, "keep").unwrap();
        fs::remove_file(activity.path()).unwrap();
        std::os::unix::fs::symlink(&outside, activity.path()).unwrap();
        assert!(activity.publish(&queue(1), 1_000).unwrap());
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
        assert!(!fs::symlink_metadata(activity.path())
            .unwrap()
            .file_type()
            .is_symlink());
    }
}
