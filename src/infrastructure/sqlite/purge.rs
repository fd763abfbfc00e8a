//! Team deletion through durable purge markers: a marker
//! at `<claudeRoot>/.member-work-sync-deletions/<team key>.json` says a
//! team's member-work-sync state is being deleted, and whoever finds it
//! (this process after a crash, or the next SQLite session after a JSON
//! session's purge) finishes the job: the live JSON files are deleted while
//! the marker's generation of the team is still the one on disk, then the
//! team's rows are replaced by an exact snapshot of whatever live JSON is
//! left (normally nothing), the replica is published clean and the marker
//! removed.
//!
//! A generation is fenced by `config.json._backupIdentityId` (the deletion
//! id) or, without one, by the team folder's (dev, inode, birth time): a
//! same-name team created afterwards is a new generation, and its files are
//! never deleted by the old marker.
//!
//! Markers and config files lie under the Claude root: read without
//! following links or opening FIFOs, written atomically; deletions unlink
//! the entry itself.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::identity::team_key;
use super::js_json;
use super::legacy_json::{LegacyFileError, LegacyFiles};
use crate::domain::js_semantics::js_trim;
use crate::domain::names::member_key;
use crate::infrastructure::safe_fs::{FileRead, TrustedRoot};

/// The markers' folder, beside `teams/`.
const DELETIONS_DIR: &str = ".member-work-sync-deletions";
/// A marker or config file larger than this is not read.
const MAX_MARKER_BYTES: u64 = 1024 * 1024;

/// A purge step that failed.
#[derive(Debug, thiserror::Error)]
pub enum PurgeError {
    /// The file system failed.
    #[error("member-work-sync purge marker {path}: {source}")]
    Io {
        /// The purge marker being read, written or removed.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// Deleting a live JSON file failed.
    #[error(transparent)]
    Legacy(#[from] LegacyFileError),
    /// The team on disk is no longer the generation the marker fences.
    #[error("member-work-sync active-state purge generation changed")]
    GenerationChanged,
    /// Another deletion id already owns a purge of the current generation.
    #[error(
        "member-work-sync purge already belongs to another deletion generation for \"{team}\""
    )]
    OtherGeneration {
        /// The team whose purge belongs to another deletion.
        team: String,
    },
}

/// `lstat` of a team folder as Node reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RootIdentity {
    /// `dev`: the device holding the folder.
    pub dev: f64,
    /// `ino`: the folder's inode number; with `dev` and the birth time it
    /// tells a recreated team folder from the one the marker fences.
    pub ino: f64,
    /// `birthtimeMs`: seconds × 1000 + nanoseconds / 10⁶.
    pub birthtime_ms: f64,
}

/// A purge marker as read (or about to be written).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PurgeMarker {
    /// The team, trimmed.
    pub team_name: String,
    /// `config.json._backupIdentityId` of the deleted generation.
    pub deletion_identity_id: Option<String>,
    /// The team folder's identity when the marker was made.
    pub team_root_identity: Option<RootIdentity>,
    /// The live JSON files are gone.
    pub active_json_state_cleared: bool,
    /// Version 2, this team, and a fence: only then may it delete files.
    pub recovery_safe: bool,
}

/// The markers and the files they fence, for the teams under one folder.
#[derive(Debug, Clone)]
pub(crate) struct PurgeMarkers {
    teams: TrustedRoot,
    claude: TrustedRoot,
}

fn identity_of(path: &Path) -> io::Result<Option<RootIdentity>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    #[cfg(unix)]
    let (dev, ino) = {
        use std::os::unix::fs::MetadataExt;
        (meta.dev() as f64, meta.ino() as f64)
    };
    #[cfg(not(unix))]
    let (dev, ino) = (0.0, 0.0);
    let birthtime_ms = meta
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0.0, |d| {
            d.as_secs() as f64 * 1000.0 + f64::from(d.subsec_nanos()) / 1e6
        });
    Ok(Some(RootIdentity {
        dev,
        ino,
        birthtime_ms,
    }))
}

fn parse_identity(value: Option<&Value>) -> Option<RootIdentity> {
    let value = value?.as_object()?;
    let number = |f: &str| {
        value
            .get(f)
            .and_then(Value::as_f64)
            .filter(|n| n.is_finite())
    };
    Some(RootIdentity {
        dev: number("dev")?,
        ino: number("ino")?,
        birthtime_ms: number("birthtimeMs")?,
    })
}

impl PurgeMarkers {
    /// The markers of the teams below `teams_base` (in its parent folder).
    pub(crate) fn new(teams_base: PathBuf) -> Self {
        let claude = teams_base
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| teams_base.clone());
        Self {
            teams: TrustedRoot::new(teams_base),
            claude: TrustedRoot::new(claude),
        }
    }

    /// The marker file of `team`.
    pub(crate) fn path(&self, team: &str) -> PathBuf {
        self.claude
            .join(DELETIONS_DIR)
            .join(format!("{}.json", member_key(team)))
    }

    fn io(path: &Path) -> impl Fn(io::Error) -> PurgeError + '_ {
        move |source| PurgeError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// The marker of `team`; a present one that cannot be parsed (or is not
    /// a regular file) is present and not safe.
    pub(crate) fn read(&self, team: &str) -> Result<Option<PurgeMarker>, PurgeError> {
        let path = self.path(team);
        let unsafe_marker = || PurgeMarker {
            team_name: js_trim(team).to_string(),
            deletion_identity_id: None,
            team_root_identity: None,
            active_json_state_cleared: false,
            recovery_safe: false,
        };
        let bytes = match self.claude.read(&path, MAX_MARKER_BYTES) {
            Ok(FileRead::Missing) => return Ok(None),
            Ok(FileRead::Bytes(bytes)) => bytes,
            Ok(FileRead::NotAFile | FileRead::TooLarge) => return Ok(Some(unsafe_marker())),
            Err(e) => return Err(Self::io(&path)(e)),
        };
        let Ok(parsed) = serde_json::from_slice::<Value>(&bytes) else {
            return Ok(Some(unsafe_marker()));
        };
        let deletion_identity_id = parsed
            .get("deletionIdentityId")
            .and_then(Value::as_str)
            .map(js_trim)
            .filter(|id| !id.is_empty())
            .map(str::to_string);
        let team_root_identity = parse_identity(parsed.get("teamRootIdentity"));
        let recovery_safe = parsed.get("schemaVersion").and_then(Value::as_f64) == Some(2.0)
            && parsed
                .get("teamName")
                .and_then(Value::as_str)
                .is_some_and(|name| team_key(name) == team_key(team))
            && (deletion_identity_id.is_some() || team_root_identity.is_some());
        Ok(Some(PurgeMarker {
            team_name: js_trim(team).to_string(),
            deletion_identity_id,
            team_root_identity,
            active_json_state_cleared: parsed.get("activeJsonStateCleared")
                == Some(&Value::Bool(true)),
            recovery_safe,
        }))
    }

    /// Writes `marker` with `cleared`, durably.
    pub(crate) fn write(&self, marker: &PurgeMarker, cleared: bool) -> Result<(), PurgeError> {
        let path = self.path(&marker.team_name);
        let identity = marker
            .team_root_identity
            .map(|i| json!({"dev": i.dev, "ino": i.ino, "birthtimeMs": i.birthtime_ms}));
        let value = json!({
            "schemaVersion": 2,
            "teamName": marker.team_name,
            "deletionIdentityId": marker.deletion_identity_id,
            "teamRootIdentity": identity,
            "activeJsonStateCleared": cleared,
        });
        let text =
            js_json::stringify_pretty(&value).map_err(|e| Self::io(&path)(io::Error::other(e)))?;
        self.claude
            .write_atomic(&path, format!("{text}\n").as_bytes())
            .map_err(Self::io(&path))
    }

    /// Removes the marker of `team` (when there is one) and syncs its folder.
    pub(crate) fn remove(&self, team: &str) -> Result<(), PurgeError> {
        if self.read(team)?.is_none() {
            return Ok(());
        }
        let path = self.path(team);
        let dir_path = self.claude.join(DELETIONS_DIR);
        if let Some(dir) = self
            .claude
            .open_dir(&dir_path)
            .map_err(Self::io(&dir_path))?
        {
            let name = path.file_name().unwrap_or_default();
            dir.remove_file(name).map_err(Self::io(&path))?;
            dir.sync().map_err(Self::io(&dir_path))?;
        }
        Ok(())
    }

    /// The existing marker (when it has no other deletion id, or its
    /// generation is gone), else a new one for the team as it is now.
    pub(crate) fn get_or_create(
        &self,
        team: &str,
        deletion_id: Option<&str>,
    ) -> Result<PurgeMarker, PurgeError> {
        let deletion_id = deletion_id.map(js_trim).filter(|id| !id.is_empty());
        if let Some(existing) = self.read(team)? {
            if deletion_id.is_none() || existing.deletion_identity_id.as_deref() == deletion_id {
                return Ok(existing);
            }
            if self.is_current(&existing) {
                return Err(PurgeError::OtherGeneration {
                    team: team.to_string(),
                });
            }
            self.remove(team)?;
        }
        let root = self.teams.join(team);
        Ok(PurgeMarker {
            team_name: js_trim(team).to_string(),
            deletion_identity_id: deletion_id.map(str::to_string),
            team_root_identity: identity_of(&root).map_err(Self::io(&root))?,
            active_json_state_cleared: false,
            recovery_safe: true,
        })
    }

    /// Whether the team on disk is still the generation `marker` fences.
    pub(crate) fn is_current(&self, marker: &PurgeMarker) -> bool {
        if !marker.recovery_safe {
            return false;
        }
        let root = self.teams.join(&marker.team_name);
        let current = match identity_of(&root) {
            Ok(current) => current,
            Err(_) => return false,
        };
        let Some(current) = current else {
            return marker.deletion_identity_id.is_some();
        };
        if let Some(id) = &marker.deletion_identity_id {
            let config = root.join("config.json");
            return match self.teams.read(&config, MAX_MARKER_BYTES) {
                Ok(FileRead::Bytes(bytes)) => serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .and_then(|v| {
                        v.get("_backupIdentityId")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .is_some_and(|current_id| current_id == *id),
                _ => false,
            };
        }
        marker.team_root_identity == Some(current)
    }

    /// Deletes the team's live JSON files while the marker's generation is
    /// on disk, syncs their folders, and records that in the marker.
    pub(crate) fn purge_active_json(
        &self,
        files: &LegacyFiles,
        marker: &PurgeMarker,
    ) -> Result<(), PurgeError> {
        let team = &marker.team_name;
        let members = files.members(team)?;
        let mut dirs = Vec::new();
        for path in files.candidates(team, &members) {
            if !self.is_current(marker) {
                return Err(PurgeError::GenerationChanged);
            }
            if let Some(dir) = files.remove(&path)? {
                dirs.push((path.parent().map(Path::to_path_buf), dir));
            }
        }
        let mut synced = std::collections::HashSet::new();
        for (path, dir) in dirs {
            if synced.insert(path.clone()) {
                dir.sync()
                    .map_err(Self::io(path.as_deref().unwrap_or(Path::new(""))))?;
            }
        }
        if !self.is_current(marker) {
            return Err(PurgeError::GenerationChanged);
        }
        self.write(marker, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node's `JSON.parse` is correctly rounded; a marker's `birthtimeMs`
    /// (milliseconds with a nanosecond fraction, 17 digits) must read back
    /// as the number written, or the generation counts as changed.
    #[test]
    fn a_root_identity_reads_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let teams = dir.path().join("teams");
        std::fs::create_dir_all(teams.join("team-a")).unwrap();
        let markers = PurgeMarkers::new(teams);
        for birthtime_ms in [
            1_764_273_077_198.793_5,
            1_764_273_063_889.922,
            1_700_000_000_123.456_7,
        ] {
            let identity = RootIdentity {
                dev: 66_306.0,
                ino: 1_234_567.0,
                birthtime_ms,
            };
            let marker = PurgeMarker {
                team_name: "team-a".into(),
                deletion_identity_id: None,
                team_root_identity: Some(identity),
                active_json_state_cleared: false,
                recovery_safe: true,
            };
            markers.write(&marker, false).unwrap();
            let read = markers.read("team-a").unwrap().unwrap();
            assert_eq!(read.team_root_identity, Some(identity), "{birthtime_ms}");
        }
    }
}
