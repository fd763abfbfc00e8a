//! Where the spool lives, and its folders opened through the file boundary.

use std::io;
use std::path::{Path, PathBuf};

use crate::infrastructure::safe_fs::{Dir, FileKind, TrustedRoot};

/// Spool folders are the user's own.
pub(super) const FOLDER_MODE: u32 = 0o700;

/// The addon's folder in the teams folder, holding the spool root.
const MEMBER_WORK_SYNC: &str = ".member-work-sync";
/// The spool root's own name, in `<teamsBase>/.member-work-sync`.
const RUNTIME_HOOKS: &str = "runtime-hooks";

/// One folder of the spool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Folder {
    /// `bin/`: the hook script and `boot-time`.
    Bin,
    /// `incoming/`: complete payloads written by the hook.
    Incoming,
    /// `processing/`: claimed by a drainer.
    Processing,
    /// `processed/`: done, with `<file>.meta.json`.
    Processed,
    /// `invalid/`: unusable payloads, with `<file>.meta.json`.
    Invalid,
}

impl Folder {
    /// Every folder, in the order install creates them.
    pub(super) const ALL: [Folder; 5] = [
        Folder::Bin,
        Folder::Incoming,
        Folder::Processing,
        Folder::Processed,
        Folder::Invalid,
    ];

    /// This folder of the spool `root` (see [`SpoolPaths::open_root`]);
    /// `None` when missing; a link or file there is an error naming it.
    pub(super) fn open_in(self, root: &Dir) -> io::Result<Option<Dir>> {
        root.open_dir(self.name())
    }

    /// This folder of the spool `root`, created (0700) when missing.
    pub(super) fn create_in(self, root: &Dir) -> io::Result<Dir> {
        root.create_dir(self.name())
    }

    /// The folder's name in the spool root.
    pub(super) fn name(self) -> &'static str {
        match self {
            Folder::Bin => "bin",
            Folder::Incoming => "incoming",
            Folder::Processing => "processing",
            Folder::Processed => "processed",
            Folder::Invalid => "invalid",
        }
    }
}

/// Where the spool lives: `<teamsBase>/.member-work-sync/runtime-hooks`. The
/// teams folder is trusted as configured; nothing below it is followed if it
/// is a link (agents may write there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolPaths {
    /// `<teamsBase>/.member-work-sync/runtime-hooks`.
    pub root: PathBuf,
    teams: TrustedRoot,
}

impl SpoolPaths {
    /// The spool of a teams dir.
    pub fn for_teams_base(teams_base: &Path) -> Self {
        Self {
            root: teams_base.join(MEMBER_WORK_SYNC).join(RUNTIME_HOOKS),
            teams: TrustedRoot::new(teams_base),
        }
    }

    /// `incoming/`: complete payloads written by the hook.
    pub fn incoming(&self) -> PathBuf {
        self.path(Folder::Incoming)
    }

    /// `incoming/` when it exists as a real folder, reached without
    /// following a link below the teams folder: what a watcher may watch.
    pub(crate) fn watchable_incoming(&self) -> Option<PathBuf> {
        matches!(self.open(Folder::Incoming), Ok(Some(_))).then(|| self.incoming())
    }

    /// `bin/` when it exists as a real folder, reached without following a
    /// link below the teams folder: watched for changes to the hook programs.
    pub(crate) fn watchable_bin(&self) -> Option<PathBuf> {
        matches!(self.open(Folder::Bin), Ok(Some(_))).then(|| self.path(Folder::Bin))
    }

    /// `processing/`: claimed by a drainer.
    pub fn processing(&self) -> PathBuf {
        self.path(Folder::Processing)
    }

    /// `processed/`: done, with `<file>.meta.json`.
    pub fn processed(&self) -> PathBuf {
        self.path(Folder::Processed)
    }

    /// `invalid/`: unusable payloads, with `<file>.meta.json`.
    pub fn invalid(&self) -> PathBuf {
        self.path(Folder::Invalid)
    }

    pub(super) fn path(&self, folder: Folder) -> PathBuf {
        self.root.join(folder.name())
    }

    /// The spool root, created (0700 for new folders) with the folders above it.
    pub(super) fn create_root(&self) -> io::Result<Dir> {
        self.teams.create_dir_all(&self.root)
    }

    /// The spool root and `bin/`, created with the folders above them, each
    /// link, file or other non-folder on the way replaced by a real folder
    /// (never followed). Each folder on the way (`.member-work-sync`,
    /// `runtime-hooks`, `bin`) is set to 0700 through its own handle before
    /// the next is opened: an agent's `chmod 0500` there would otherwise
    /// keep the programs from being put back (no temp file can be made).
    pub(super) fn create_bin_repairing(&self) -> io::Result<(Dir, Dir)> {
        let private = |dir: Dir| dir.set_own_mode(FOLDER_MODE).map(|()| dir);
        let teams = self.teams.create_dir_all(self.teams.path())?;
        let parent = private(teams.create_dir_replacing(MEMBER_WORK_SYNC)?)?;
        let root = private(parent.create_dir_replacing(RUNTIME_HOOKS)?)?;
        let bin = private(root.create_dir_replacing(Folder::Bin.name())?)?;
        Ok((root, bin))
    }

    /// Creates (0700) each spool folder missing from `root`, as install
    /// does: the hook writes into `incoming/` and never creates it, so a
    /// spool root repaired by a drain must get it back. A link or file
    /// there is left for the claim to refuse.
    pub(super) fn create_missing_folders(root: &Dir) -> io::Result<()> {
        for folder in Folder::ALL {
            if root.meta(folder.name())?.is_none() {
                root.create_dir(folder.name())?.set_own_mode(FOLDER_MODE)?;
            }
        }
        Ok(())
    }

    /// Whether a spool was installed: anything at `runtime-hooks`, or a link
    /// or file where `.member-work-sync` should be (which install would
    /// repair). Nothing is followed.
    pub(super) fn installed(&self) -> io::Result<bool> {
        let Some(teams) = self.teams.open_dir(self.teams.path())? else {
            return Ok(false);
        };
        let Some(parent) = self.root.parent().and_then(|p| p.file_name()) else {
            return Ok(false);
        };
        match teams.meta(parent)? {
            None => Ok(false),
            Some(meta) if meta.kind != FileKind::Dir => Ok(true),
            Some(_) => match teams.open_dir(parent) {
                Ok(Some(folder)) => Ok(folder.meta(RUNTIME_HOOKS)?.is_some()),
                Ok(None) => Ok(false),
                // Swapped for a link since: install repairs it.
                Err(_) => Ok(true),
            },
        }
    }

    /// The spool root; `None` when it does not exist. A link or file where
    /// a folder should be on the way is an error naming it. A drain's steps
    /// open their folders from it ([`Folder::open_in`]): one walk from the
    /// teams folder per step, not one per folder.
    pub(super) fn open_root(&self) -> io::Result<Option<Dir>> {
        self.teams.open_dir(&self.root)
    }

    /// `folder`; `None` when it or the spool does not exist. A link or file
    /// where a folder should be, anywhere below the teams folder, is an error
    /// naming it.
    pub(super) fn open(&self, folder: Folder) -> io::Result<Option<Dir>> {
        self.teams.open_dir(&self.path(folder))
    }

    /// `folder`, created when missing (with the same refusal of links).
    pub(super) fn create(&self, folder: Folder) -> io::Result<Dir> {
        self.teams.create_dir_all(&self.path(folder))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_real_incoming_folder_is_watchable() {
        let dir = tempfile::tempdir().unwrap();
        let teams = dir.path().join("teams");
        let paths = SpoolPaths::for_teams_base(&teams);
        assert_eq!(paths.watchable_incoming(), None, "no spool yet");
        std::fs::create_dir_all(paths.incoming()).unwrap();
        assert_eq!(paths.watchable_incoming(), Some(paths.incoming()));
        std::fs::remove_dir(paths.incoming()).unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, paths.incoming()).unwrap();
        assert_eq!(paths.watchable_incoming(), None, "a linked incoming/");
    }
}
