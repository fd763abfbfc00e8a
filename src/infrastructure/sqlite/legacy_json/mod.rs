//! The legacy JSON files of a team as the app's importer reads them
//! (`JsonMemberWorkSyncStore.readSnapshotForImport` and
//! `readArchivedSnapshotForImport`), and their archiving as `*.pre-sqlite`
//! generations (`archiveFileWithGenerations`).
//!
//! Rows stay JSON values: the import must carry every field the files
//! hold, in the files' order, exactly as the app's mappers would.
//!
//! Everything here lies under the Claude root. Reads go through
//! [`TrustedRoot`]: no link is followed and no FIFO opened. A live file that
//! is not a regular file, or does not parse or validate, is quarantined
//! (the entry itself renamed to `<name>.invalid.<ms>`, as the app does with
//! invalid files) and read as empty; an archive that is not a regular file
//! is an error (the app fails on an unreadable archive); an archive
//! renames the entry itself, never through a link.
//!
//! Here: the files' paths, reads, archiving and removal. `shape` says what
//! each file must look like, `snapshot` how rows of several files combine,
//! `read` reads a team's live and archived snapshots.

mod read;
mod shape;
mod snapshot;

pub(crate) use snapshot::LegacySnapshot;
pub(super) use snapshot::{compare_iso, member_of, pick_domain_intent, pick_domain_outbox, str_of};

use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::domain::names::{member_key, normalize_member_name};
use crate::infrastructure::json_store::quarantine;
use crate::infrastructure::safe_fs::{FileKind, FileRead, TrustedRoot};

use self::shape::{Shape, Source};
use self::snapshot::Keyed;
use crate::domain::names::decode_uri_component;

/// A legacy file larger than this is not read.
const MAX_LEGACY_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// The archive suffix.
const PRE_SQLITE: &str = ".pre-sqlite";
/// Generations tried before an archive gives up (`MAX_ARCHIVE_ATTEMPTS`).
const MAX_ARCHIVE_ATTEMPTS: u64 = 100;

/// A legacy file that could not be read or archived.
#[derive(Debug, thiserror::Error)]
pub enum LegacyFileError {
    /// The file system failed.
    #[error("member-work-sync legacy JSON {path}: {source}")]
    Io {
        /// The legacy file or archive being read, written or deleted.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// An archive generation that is a link, FIFO, folder or device.
    #[error("member-work-sync legacy JSON archive {path} is not a regular file; not opened")]
    NotAFile {
        /// The archive generation found in its place.
        path: PathBuf,
    },
    /// Bigger than [`MAX_LEGACY_FILE_BYTES`].
    #[error("member-work-sync legacy JSON {path} is larger than {MAX_LEGACY_FILE_BYTES} bytes")]
    TooLarge {
        /// The file that was not read.
        path: PathBuf,
    },
    /// Every generation up to [`MAX_ARCHIVE_ATTEMPTS`] is taken.
    #[error("No free archive slot for {path}{PRE_SQLITE} after {MAX_ARCHIVE_ATTEMPTS} attempts")]
    NoFreeArchiveSlot {
        /// The file to archive.
        path: PathBuf,
    },
}

/// The legacy files of the teams under one teams folder.
#[derive(Debug, Clone)]
pub(crate) struct LegacyFiles {
    root: TrustedRoot,
}

impl LegacyFiles {
    /// The files below `teams_base`.
    pub(crate) fn new(teams_base: PathBuf) -> Self {
        Self {
            root: TrustedRoot::new(teams_base),
        }
    }

    fn team_dir(&self, team: &str) -> PathBuf {
        self.root.join(team).join(".member-work-sync")
    }

    fn legacy_status(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("status.json")
    }
    fn legacy_reports(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("pending-reports.json")
    }
    fn legacy_outbox(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("outbox.json")
    }
    fn index(&self, team: &str, name: &str) -> PathBuf {
        self.team_dir(team).join("indexes").join(name)
    }
    fn member_file(&self, team: &str, member: &str, name: &str) -> PathBuf {
        self.root
            .join(team)
            .join("members")
            .join(member_key(member))
            .join(".member-work-sync")
            .join(name)
    }

    /// The live files that make a snapshot, team files first.
    pub(crate) fn candidates(&self, team: &str, members: &[String]) -> Vec<PathBuf> {
        let mut files = vec![
            self.legacy_status(team),
            self.legacy_reports(team),
            self.legacy_outbox(team),
            self.index(team, "metrics.json"),
            self.index(team, "outbox-index.json"),
            self.index(team, "pending-reports-index.json"),
        ];
        for member in members {
            for name in ["status.json", "reports.json", "outbox.json"] {
                files.push(self.member_file(team, member, name));
            }
        }
        files
    }

    fn io(path: &Path) -> impl Fn(io::Error) -> LegacyFileError + '_ {
        move |source| LegacyFileError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn exists(&self, path: &Path) -> Result<bool, LegacyFileError> {
        match self.root.meta(path) {
            Ok(meta) => Ok(meta.is_some()),
            // A link or file where a folder should be: nothing below it.
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => Ok(false),
            Err(e) => Err(Self::io(path)(e)),
        }
    }

    /// A file of `shape`, `None` when absent or unusable (a live one then
    /// quarantined).
    fn read(
        &self,
        path: &Path,
        shape: Shape,
        source: Source,
        now_ms: i64,
    ) -> Result<Option<Value>, LegacyFileError> {
        // A live store file may be replaced through its spare meanwhile.
        let bytes = match self.root.read_swapped(path, MAX_LEGACY_FILE_BYTES) {
            Ok(FileRead::Missing) => return Ok(None),
            Ok(FileRead::Bytes(bytes)) => Some(bytes),
            Ok(FileRead::TooLarge) => {
                return Err(LegacyFileError::TooLarge {
                    path: path.to_path_buf(),
                })
            }
            Ok(FileRead::NotAFile) if source == Source::Archive => {
                return Err(LegacyFileError::NotAFile {
                    path: path.to_path_buf(),
                })
            }
            Ok(FileRead::NotAFile) => None,
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(None),
            Err(e) => return Err(Self::io(path)(e)),
        };
        let parsed = bytes
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .filter(|v| shape.accepts(v));
        if parsed.is_none() && source == Source::Live {
            quarantine(&self.root, path, now_ms).map_err(Self::io(path))?;
        }
        Ok(parsed)
    }

    /// The `*.pre-sqlite[-N]` generations of `path`, oldest first.
    fn generations(&self, path: &Path) -> Result<Vec<(u64, PathBuf)>, LegacyFileError> {
        let (Some(dir_path), Some(name)) =
            (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return Ok(Vec::new());
        };
        let dir = match self.root.open_dir(dir_path) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Ok(Vec::new()),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(Vec::new()),
            Err(e) => return Err(Self::io(dir_path)(e)),
        };
        let archive = format!("{name}{PRE_SQLITE}");
        let prefix = format!("{archive}-");
        let mut found: Vec<(u64, PathBuf)> = dir
            .entries()
            .map_err(Self::io(dir_path))?
            .into_iter()
            .filter_map(|entry| {
                let generation = if entry.name == archive {
                    1
                } else {
                    let digits = entry.name.strip_prefix(&prefix)?;
                    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                        return None;
                    }
                    digits
                        .parse::<u64>()
                        .ok()
                        .filter(|g| *g >= 2 && *g < (1 << 53))?
                };
                Some((generation, dir_path.join(&entry.name)))
            })
            .collect();
        found.sort_by_key(|(g, _)| *g);
        Ok(found)
    }

    /// The member names the import reads (`scanMemberNamesForImport`):
    /// those of `members/*/member.meta.json`, then metadata-free folders
    /// whose name is a canonical key holding a live or archived file.
    pub(crate) fn members(&self, team: &str) -> Result<Vec<String>, LegacyFileError> {
        let members_dir = self.root.join(team).join("members");
        let dirs: Vec<String> = match self.root.open_dir(&members_dir) {
            Ok(Some(dir)) => dir
                .entries()
                .map_err(Self::io(&members_dir))?
                .into_iter()
                .filter(|e| e.kind == Some(FileKind::Dir))
                .map(|e| e.name)
                .collect(),
            Ok(None) => Vec::new(),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => Vec::new(),
            Err(e) => return Err(Self::io(&members_dir)(e)),
        };
        let mut names = Keyed::new();
        let add = |names: &mut Keyed, name: &str| {
            let name = crate::domain::js_semantics::js_trim(name);
            if !name.is_empty() && names.get(&member_key(name)).is_none() {
                names.set(member_key(name), Value::from(name));
            }
        };
        for dir in &dirs {
            let meta = members_dir.join(dir).join("member.meta.json");
            if let Ok(FileRead::Bytes(bytes)) = self.root.read(&meta, MAX_LEGACY_FILE_BYTES) {
                if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
                    if let Some(name) = str_of(&value, "memberName") {
                        add(&mut names, name);
                    }
                }
            }
        }
        for dir in &dirs {
            if names.get(dir).is_some() {
                continue;
            }
            let Some(name) = decode_uri_component(dir) else {
                continue;
            };
            if normalize_member_name(&name).is_empty() || member_key(&name) != *dir {
                continue;
            }
            let mut has_file = false;
            for file in ["status.json", "reports.json", "outbox.json"] {
                let path = self.member_file(team, &name, file);
                if self.exists(&path)? || !self.generations(&path)?.is_empty() {
                    has_file = true;
                    break;
                }
            }
            if has_file {
                add(&mut names, &name);
            }
        }
        Ok(names
            .into_values()
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect())
    }

    /// Deletes the live file at `path` (the entry itself, never through a
    /// link); absent is fine. Returns its folder, to sync.
    pub(crate) fn remove(
        &self,
        path: &Path,
    ) -> Result<Option<crate::infrastructure::safe_fs::Dir>, LegacyFileError> {
        let (Some(dir_path), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(None);
        };
        let dir = match self.root.open_dir(dir_path) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(None),
            Err(e) => return Err(Self::io(dir_path)(e)),
        };
        dir.remove_file(name).map_err(Self::io(path))?;
        Ok(Some(dir))
    }

    /// Renames `path` to its next free `*.pre-sqlite[-N]` generation (the
    /// entry itself, never through a link, never over an existing name); a
    /// missing file is a no-op.
    pub(crate) fn archive(&self, path: &Path) -> Result<(), LegacyFileError> {
        let (Some(dir_path), Some(name)) =
            (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return Ok(());
        };
        let Some(dir) = self.root.open_dir(dir_path).map_err(Self::io(dir_path))? else {
            return Ok(());
        };
        let first = self.generations(path)?.last().map_or(0, |(g, _)| *g) + 1;
        for generation in first..=MAX_ARCHIVE_ATTEMPTS {
            let target = match generation {
                1 => format!("{name}{PRE_SQLITE}"),
                n => format!("{name}{PRE_SQLITE}-{n}"),
            };
            if dir.meta(&target).map_err(Self::io(path))?.is_some() {
                continue;
            }
            if dir
                .rename(name, &dir, &target, false)
                .map_err(Self::io(path))?
            {
                return dir.sync().map_err(Self::io(dir_path));
            }
            if dir.meta(name).map_err(Self::io(path))?.is_none() {
                return Ok(());
            }
        }
        Err(LegacyFileError::NoFreeArchiveSlot {
            path: path.to_path_buf(),
        })
    }
}
