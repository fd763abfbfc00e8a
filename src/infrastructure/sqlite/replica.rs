//! The JSON replica of a team's rows (the app's `InternalStorageJsonReplica`):
//! `teams/<team>/.member-work-sync/sqlite-fallback-replica.json`.
//!
//! It is the app's way back when its database cannot be opened: a JSON
//! session hydrates the JSON files from the last clean replica, and the
//! next SQLite session merges it into the database. So it is a fence: marked
//! `dirty` before a mutation touches the database, rewritten `clean` with
//! the whole team after it. A crash in between leaves it dirty, and a JSON
//! session then refuses to run on stale state instead of undoing deliveries.
//!
//! The file lies under the Claude root: it is read through [`TrustedRoot`]
//! (no link followed, no FIFO opened, a capped read) and written atomically
//! (temp file, fsync, rename, folder fsync).

use std::io;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::js_json;
use super::snapshot::is_valid_domain_snapshot;
use crate::infrastructure::safe_fs::{FileRead, TrustedRoot};

/// The file's name in the team's `.member-work-sync` folder.
const REPLICA_FILE: &str = "sqlite-fallback-replica.json";
/// A replica larger than this is not read (a team's outbox grows without
/// bound upstream, but not to this).
const MAX_REPLICA_BYTES: u64 = 64 * 1024 * 1024;

/// Why a replica cannot be used (the app's `InternalStorageFallbackUnsafeError`
/// reasons, and the two the addon adds for what it refuses to open).
#[derive(Debug, thiserror::Error)]
pub enum UnsafeReplica {
    /// No replica, where a JSON session requires one (`fallbackRequiresReplica`).
    #[error("replica is missing")]
    Missing,
    /// A link, FIFO, folder or device where the file should be: not opened.
    #[error("replica is not a regular file")]
    NotAFile,
    /// Bigger than [`MAX_REPLICA_BYTES`].
    #[error("replica is larger than {MAX_REPLICA_BYTES} bytes")]
    TooLarge,
    /// Opening or reading the file failed.
    #[error("{0}")]
    Unreadable(io::Error),
    /// The content does not parse as JSON (the parser's message).
    #[error("replica is malformed: {0}")]
    Malformed(String),
    /// Not `{schemaVersion: 1, state: dirty|clean, updatedAt: string}`.
    #[error("replica envelope is invalid")]
    InvalidEnvelope,
    /// Marked dirty, read where that is not allowed.
    #[error("last SQLite publication is dirty")]
    Dirty,
    /// Clean, with a snapshot the app would not accept.
    #[error("clean replica snapshot is invalid")]
    InvalidSnapshot,
}

/// A replica that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// The replica exists and cannot be used.
    #[error("Internal storage JSON fallback is unsafe: {reason} ({path})")]
    Unsafe {
        /// The replica file.
        path: PathBuf,
        /// What is wrong with it.
        reason: UnsafeReplica,
    },
    /// Writing it failed.
    #[error("cannot write the member-work-sync replica {path}: {source}")]
    Write {
        /// The replica file.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
}

/// The replicas of the teams under one teams folder.
#[derive(Debug, Clone)]
pub(crate) struct Replica {
    teams: TrustedRoot,
}

/// What the fence says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FenceState {
    Dirty,
    Clean,
}

impl Replica {
    /// The replicas below `teams_base` (`<claudeRoot>/teams`).
    pub(crate) fn new(teams_base: PathBuf) -> Self {
        Self {
            teams: TrustedRoot::new(teams_base),
        }
    }

    /// The replica file of `team`.
    pub(crate) fn path(&self, team: &str) -> PathBuf {
        self.teams
            .join(team)
            .join(".member-work-sync")
            .join(REPLICA_FILE)
    }

    /// Marks the replica dirty, durably, before a mutation.
    pub(crate) fn mark_dirty(&self, team: &str, now_iso: &str) -> Result<(), ReplicaError> {
        self.write(team, FenceState::Dirty, now_iso, None)
    }

    /// Replaces the replica with the team's whole domain snapshot, clean.
    pub(crate) fn write_clean(
        &self,
        team: &str,
        snapshot: &Value,
        now_iso: &str,
    ) -> Result<(), ReplicaError> {
        self.write(team, FenceState::Clean, now_iso, Some(snapshot))
    }

    /// The clean snapshot a SQLite session merges first (`readForPrimary`):
    /// `None` when there is no replica, or when it is dirty and
    /// `allow_dirty` (the database passed its integrity check, so it can
    /// republish what it holds); any unusable content is an error.
    pub(crate) fn read_for_primary(
        &self,
        team: &str,
        allow_dirty: bool,
    ) -> Result<Option<Value>, ReplicaError> {
        self.read(team, false, allow_dirty)
    }

    /// The clean snapshot a JSON session hydrates from (`readClean`): `None`
    /// when there is no replica and `required` is false; a missing one when
    /// required, a dirty one and any unusable content are errors.
    pub(crate) fn read_clean(
        &self,
        team: &str,
        required: bool,
    ) -> Result<Option<Value>, ReplicaError> {
        self.read(team, required, false)
    }

    fn read(
        &self,
        team: &str,
        required: bool,
        allow_dirty: bool,
    ) -> Result<Option<Value>, ReplicaError> {
        let path = self.path(team);
        let unsafe_replica = |reason| ReplicaError::Unsafe {
            path: path.clone(),
            reason,
        };
        let bytes = match self.teams.read(&path, MAX_REPLICA_BYTES) {
            Ok(FileRead::Missing) if required => {
                return Err(unsafe_replica(UnsafeReplica::Missing))
            }
            Ok(FileRead::Missing) => return Ok(None),
            Ok(FileRead::NotAFile) => return Err(unsafe_replica(UnsafeReplica::NotAFile)),
            Ok(FileRead::TooLarge) => return Err(unsafe_replica(UnsafeReplica::TooLarge)),
            Ok(FileRead::Bytes(bytes)) => bytes,
            Err(e) => return Err(unsafe_replica(UnsafeReplica::Unreadable(e))),
        };
        let envelope: Value = serde_json::from_slice(&bytes)
            .map_err(|e| unsafe_replica(UnsafeReplica::Malformed(e.to_string())))?;
        let state = match (
            envelope.get("schemaVersion").and_then(Value::as_f64),
            envelope.get("state").and_then(Value::as_str),
            envelope.get("updatedAt").map(Value::is_string),
        ) {
            (Some(1.0), Some("dirty"), Some(true)) => FenceState::Dirty,
            (Some(1.0), Some("clean"), Some(true)) => FenceState::Clean,
            _ => return Err(unsafe_replica(UnsafeReplica::InvalidEnvelope)),
        };
        if state == FenceState::Dirty {
            return if allow_dirty {
                Ok(None)
            } else {
                Err(unsafe_replica(UnsafeReplica::Dirty))
            };
        }
        match envelope.get("snapshot") {
            Some(snapshot) if is_valid_domain_snapshot(snapshot, team) => {
                Ok(Some(snapshot.clone()))
            }
            _ => Err(unsafe_replica(UnsafeReplica::InvalidSnapshot)),
        }
    }

    fn write(
        &self,
        team: &str,
        state: FenceState,
        now_iso: &str,
        snapshot: Option<&Value>,
    ) -> Result<(), ReplicaError> {
        let path = self.path(team);
        let mut envelope = Map::new();
        envelope.insert("schemaVersion".into(), Value::from(1));
        envelope.insert(
            "state".into(),
            Value::from(match state {
                FenceState::Dirty => "dirty",
                FenceState::Clean => "clean",
            }),
        );
        envelope.insert("updatedAt".into(), Value::from(now_iso));
        if let Some(snapshot) = snapshot {
            envelope.insert("snapshot".into(), snapshot.clone());
        }
        let text = js_json::stringify_pretty(&envelope).map_err(|e| ReplicaError::Write {
            path: path.clone(),
            source: io::Error::other(e),
        })?;
        self.teams
            .write_atomic(&path, format!("{text}\n").as_bytes())
            .map_err(|source| ReplicaError::Write { path, source })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_snapshot() -> Value {
        serde_json::json!({"statuses": [], "reportIntents": [], "outboxItems": [], "metricEvents": [], "filesToArchive": []})
    }

    #[test]
    fn reads_what_the_fence_says() {
        let dir = tempfile::tempdir().unwrap();
        let replica = Replica::new(dir.path().to_path_buf());
        let now = "2026-07-07T10:00:00.000Z";
        assert!(replica.read_for_primary("t", true).unwrap().is_none());
        replica.mark_dirty("t", now).unwrap();
        assert!(replica.read_for_primary("t", true).unwrap().is_none());
        let dirty = replica.read_for_primary("t", false).unwrap_err();
        assert!(
            dirty
                .to_string()
                .contains("last SQLite publication is dirty"),
            "{dirty}"
        );
        replica.write_clean("t", &empty_snapshot(), now).unwrap();
        assert_eq!(
            replica.read_for_primary("t", false).unwrap(),
            Some(empty_snapshot())
        );
        let text = std::fs::read_to_string(replica.path("t")).unwrap();
        assert!(
            text.starts_with("{\n  \"schemaVersion\": 1,\n  \"state\": \"clean\",\n"),
            "{text}"
        );
        assert!(text.ends_with("}\n"));
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_or_fifo_replica_is_refused_unopened() {
        let dir = tempfile::tempdir().unwrap();
        let replica = Replica::new(dir.path().to_path_buf());
        let path = replica.path("t");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let target = dir.path().join("elsewhere.json");
        std::fs::write(
            &target,
            r#"{"schemaVersion":1,"state":"dirty","updatedAt":""}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let linked = replica.read_for_primary("t", true).unwrap_err();
        assert!(
            matches!(
                linked,
                ReplicaError::Unsafe {
                    reason: UnsafeReplica::NotAFile,
                    ..
                }
            ),
            "{linked}"
        );
        std::fs::remove_file(&path).unwrap();
        crate::infrastructure::safe_fs::mkfifo(&path);
        let fifo = replica.read_for_primary("t", true).unwrap_err();
        assert!(
            matches!(
                fifo,
                ReplicaError::Unsafe {
                    reason: UnsafeReplica::NotAFile,
                    ..
                }
            ),
            "{fifo}"
        );
    }
}
