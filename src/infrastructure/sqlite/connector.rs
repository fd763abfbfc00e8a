//! Opens the database on first use, not when the instance is built (the
//! constructor reads no files), and again when the file at the path is no
//! longer the one open: the app's corruption recovery renames `app.db*` and
//! starts a new file, and a connection left on the renamed one would write
//! where the app never reads.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::direct::{DirectDatabase, OpenMode};
use super::error::SqliteStoreError;
use super::gateway::MemberWorkSyncGateway;

/// Where the store's rows live.
pub(crate) enum Connector {
    /// A gateway already there (tests; the app's worker later).
    Ready(Arc<dyn MemberWorkSyncGateway>),
    /// The addon's own connection to a database file.
    Direct(DirectFile),
}

/// A database file opened on demand.
pub(crate) struct DirectFile {
    path: PathBuf,
    mode: OpenMode,
    open: Mutex<Option<(FileIdentity, Arc<DirectDatabase>)>>,
}

/// What tells two files at one path apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    /// The identity of the file at `path`, when there is one.
    #[cfg(unix)]
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            device: meta.dev(),
            inode: meta.ino(),
        })
    }

    /// Windows cannot rename an open database file away, so the path keeps
    /// naming the open file: one identity for all.
    #[cfg(not(unix))]
    fn of(path: &Path) -> Option<Self> {
        path.exists().then_some(Self {
            device: 0,
            inode: 0,
        })
    }
}

impl DirectFile {
    /// The database at `path`, opened as `mode` says at the first call.
    pub(crate) fn new(path: PathBuf, mode: OpenMode) -> Self {
        Self {
            path,
            mode,
            open: Mutex::new(None),
        }
    }

    /// The open database, (re)opened when none is open or the file at the
    /// path changed since.
    pub(crate) fn database(&self) -> Result<Arc<DirectDatabase>, SqliteStoreError> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let current = FileIdentity::of(&self.path);
        if let Some((identity, database)) = open.as_ref() {
            if Some(*identity) == current {
                return Ok(database.clone());
            }
        }
        let database = Arc::new(DirectDatabase::open(&self.path, self.mode)?);
        // Opening creates a missing file (read-write): its identity is known now.
        match FileIdentity::of(&self.path) {
            Some(identity) => *open = Some((identity, database.clone())),
            None => *open = None,
        }
        Ok(database)
    }
}

impl Connector {
    /// The gateway to run an op on.
    pub(crate) fn gateway(&self) -> Result<Arc<dyn MemberWorkSyncGateway>, SqliteStoreError> {
        match self {
            Self::Ready(gateway) => Ok(gateway.clone()),
            Self::Direct(file) => Ok(file.database()?),
        }
    }

    /// What errors name: the database file, or the gateway.
    pub(crate) fn source(&self) -> PathBuf {
        match self {
            Self::Ready(_) => PathBuf::from("<gateway>"),
            Self::Direct(file) => file.path.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_renamed_away_is_left_and_the_new_one_at_the_path_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.db");
        let file = DirectFile::new(path.clone(), OpenMode::ReadWrite);
        let first = file.database().unwrap();
        assert!(Arc::ptr_eq(&first, &file.database().unwrap()));
        std::fs::rename(&path, dir.path().join("app.db.corrupt-1")).unwrap();
        let second = file.database().unwrap();
        assert!(!Arc::ptr_eq(&first, &second));
        assert!(path.exists());
    }
}
