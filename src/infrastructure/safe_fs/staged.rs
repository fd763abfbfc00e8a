//! Group commit: many atomic replacements made durable together.
//!
//! [`Dir::stage`] writes the new content to a temp file beside its target
//! (the same `.<name>.mws-tmp.<pid>.<n>` name as [`Dir::write_atomic`]) and
//! neither syncs nor renames it. [`commit`] then starts write-back of every
//! temp file at once, fsyncs each (the first waits for the journal commit
//! that carries them all; the rest find their data already on disk), renames
//! each over its target and fsyncs every folder once. Each target is, at any
//! instant and after a crash, either its old or its new content, exactly as
//! with [`Dir::write_atomic`]; a crash before a rename leaves only the temp
//! file, which the sweep removes. A staged write dropped without a commit
//! removes its temp file.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

use rustix::fs::{self as rfs, AtFlags, Mode};

use super::dir::Dir;
use super::{temp, with_path};

/// New content for one file, written beside it and not yet committed.
#[derive(Debug)]
pub struct StagedWrite {
    dir: Dir,
    name: OsString,
    temp_name: String,
    /// `None` once renamed into place (nothing left to clean up).
    file: Option<File>,
}

impl Dir {
    /// Writes `bytes` to a fresh temp file for `name` (permission bits
    /// `mode`), unsynced and not yet in place; see [`commit`].
    pub fn stage(
        self,
        name: impl AsRef<OsStr>,
        bytes: &[u8],
        mode: u32,
    ) -> io::Result<StagedWrite> {
        let name = name.as_ref().to_os_string();
        let (temp_name, mut file) = self.create_temp_for(&name, mode)?;
        let written = file
            .write_all(bytes)
            // The mode is set on the handle so the umask cannot narrow or widen it.
            .and_then(|()| rfs::fchmod(&file, Mode::from_raw_mode(mode)).map_err(Into::into));
        // Built before the error check: dropping it removes the temp file.
        let staged = StagedWrite {
            dir: self,
            name,
            temp_name,
            file: Some(file),
        };
        written.map_err(|e| with_path(&staged.target(), e))?;
        Ok(staged)
    }
}

impl StagedWrite {
    fn target(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }
}

impl Drop for StagedWrite {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = rfs::unlinkat(self.dir.fd(), self.temp_name.as_str(), AtFlags::empty());
        }
    }
}

/// Makes every staged write durable and visible (see the module docs). On
/// an error the writes not yet renamed are dropped (their temp files
/// removed), the ones renamed stay, and their folders are still synced.
pub fn commit(mut writes: Vec<StagedWrite>) -> io::Result<()> {
    start_write_back(&writes);
    let mut result = Ok(());
    for write in &writes {
        if let Some(file) = &write.file {
            if let Err(e) = file.sync_all() {
                result = Err(with_path(&write.target(), e));
                break;
            }
        }
    }
    let mut renamed = 0;
    if result.is_ok() {
        for write in &mut writes {
            let moved = rfs::renameat(
                write.dir.fd(),
                write.temp_name.as_str(),
                write.dir.fd(),
                write.name.as_os_str(),
            );
            if let Err(e) = moved {
                result = Err(with_path(&write.target(), e));
                break;
            }
            write.file = None;
            renamed += 1;
        }
    }
    let mut synced = HashSet::new();
    for write in &writes[..renamed] {
        if synced.insert(write.dir.path().to_path_buf()) {
            if let Err(e) = write.dir.sync() {
                result = result.and(Err(e));
            }
            temp::note_write(&write.dir);
        }
    }
    result
}

/// Asks the kernel to start writing every temp file now, so the fsyncs that
/// follow wait for one batch instead of one file at a time.
#[cfg(target_os = "linux")]
fn start_write_back(writes: &[StagedWrite]) {
    use std::os::fd::AsRawFd;
    for file in writes.iter().filter_map(|w| w.file.as_ref()) {
        // SAFETY: a plain syscall on a descriptor this process owns; it only
        // schedules write-back and its failure is harmless (the fsync follows).
        unsafe {
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn start_write_back(_writes: &[StagedWrite]) {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::TrustedRoot;

    fn names(path: &std::path::Path) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_commit_replaces_every_target_and_a_dropped_stage_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        std::fs::create_dir_all(tmp.path().join("a")).unwrap();
        std::fs::write(tmp.path().join("a/status.json"), "old").unwrap();
        let open = |p: &str| root.create_dir_all(&tmp.path().join(p)).unwrap();
        let writes = vec![
            open("a").stage("status.json", b"new a", 0o644).unwrap(),
            open("b").stage("status.json", b"new b", 0o600).unwrap(),
        ];
        assert_eq!(names(&tmp.path().join("a")).len(), 2, "temp beside target");
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("a/status.json")).unwrap(),
            "old",
            "nothing visible before the commit"
        );
        commit(writes).unwrap();
        assert_eq!(names(&tmp.path().join("a")), ["status.json"]);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("b/status.json")).unwrap(),
            "new b"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &str| {
            std::fs::metadata(tmp.path().join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(
            (mode("a/status.json"), mode("b/status.json")),
            (0o644, 0o600)
        );
        drop(open("a").stage("status.json", b"never", 0o644).unwrap());
        assert_eq!(names(&tmp.path().join("a")), ["status.json"]);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("a/status.json")).unwrap(),
            "new a"
        );
    }

    #[test]
    fn a_link_at_the_target_is_replaced_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        std::fs::write(tmp.path().join("outside"), "precious").unwrap();
        std::fs::create_dir(tmp.path().join("a")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), tmp.path().join("a/s.json"))
            .unwrap();
        let dir = root.open_dir(&tmp.path().join("a")).unwrap().unwrap();
        commit(vec![dir.stage("s.json", b"mine", 0o644).unwrap()]).unwrap();
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("outside")).unwrap(),
            "precious"
        );
        assert!(std::fs::symlink_metadata(tmp.path().join("a/s.json"))
            .unwrap()
            .is_file());
    }
}
