//! Atomic writes made durable as a batch: each file is written to its own
//! temp name ([`Dir::stage`]), the batch's data is synced in one pass
//! ([`sync_staged`]), and each file is then renamed into place
//! ([`Staged::publish`]); one [`Dir::sync`] per folder makes the names
//! durable.
//!
//! Every file still gets its own fsync (nothing else makes its data
//! durable), but on Linux writeback of the whole batch is started first
//! (`sync_file_range`), and the fsyncs then wait side by side on a few
//! threads, so they find their data on its way and share the file system's
//! journal commits (or, without a journal, the disk's queue) instead of each
//! waiting for one of its own: fifty small files sync in about the time of a
//! few.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};

use rustix::fs::{self as rfs, Mode};

use super::dir::Dir;
use super::{temp, with_path};

/// A file written under a temp name beside its target, not yet synced and
/// not yet in place. Dropped without [`Staged::publish`], its temp file is
/// removed.
#[derive(Debug)]
pub struct Staged<'d> {
    dir: &'d Dir,
    name: String,
    temp_name: String,
    file: File,
    published: bool,
}

impl Dir {
    /// Writes `bytes` to a fresh temp file for `name` (permission bits
    /// `mode`, set on the handle so the umask cannot change them). Nothing
    /// is synced and nothing is at `name` yet: see [`sync_staged`] and
    /// [`Staged::publish`].
    pub fn stage(&self, name: &str, bytes: &[u8], mode: u32) -> io::Result<Staged<'_>> {
        let name = self
            .component(OsStr::new(name))?
            .to_string_lossy()
            .into_owned();
        let (temp_name, file) = self.create_temp(OsStr::new(&name), mode)?;
        // Built first, so that a failed write drops it and removes the temp file.
        let mut staged = Staged {
            dir: self,
            name,
            temp_name,
            file,
            published: false,
        };
        staged
            .file
            .write_all(bytes)
            .and_then(|()| rfs::fchmod(&staged.file, Mode::from_raw_mode(mode)).map_err(Into::into))
            .map_err(|e| with_path(&self.path().join(&staged.name), e))?;
        Ok(staged)
    }
}

impl Staged<'_> {
    /// Renames the file into place, replacing what is there (a link is
    /// replaced, never followed). Durable once its folder is synced.
    pub fn publish(mut self) -> io::Result<()> {
        let target = self.dir.path().join(&self.name);
        match self.dir.rename(&self.temp_name, self.dir, &self.name, true) {
            Ok(true) => {
                self.published = true;
                temp::note_write(self.dir);
                Ok(())
            }
            Ok(false) => Err(with_path(
                &target,
                io::Error::new(io::ErrorKind::NotFound, "temp file vanished"),
            )),
            Err(e) => Err(e),
        }
    }

    /// The file's data, to disk.
    fn sync(&self) -> io::Result<()> {
        self.file
            .sync_data()
            .map_err(|e| with_path(&self.dir.path().join(&self.name), e))
    }
}

impl Drop for Staged<'_> {
    fn drop(&mut self) {
        if !self.published {
            let _ = self.dir.remove_file(&self.temp_name);
        }
    }
}

/// Makes the data of every staged file durable, one result per file, in
/// order. Writeback of all of them starts before the first fsync waits.
pub fn sync_staged(staged: &[Staged<'_>]) -> Vec<io::Result<()>> {
    #[cfg(target_os = "linux")]
    for file in staged {
        use std::os::fd::AsRawFd;
        // A hint only (start writeback, wait for nothing): a failure shows
        // in the fsync that follows.
        // SAFETY: a valid open descriptor; the call reads no memory of ours.
        unsafe {
            libc::sync_file_range(file.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    // The waits overlap too: a file system without a journal writes each
    // file's inode on its own, one round trip to the disk per fsync.
    let chunk = staged.len().div_ceil(SYNC_THREADS).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = staged
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(Staged::sync).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|part| {
                part.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// Threads [`sync_staged`] waits on fsyncs with.
const SYNC_THREADS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::TrustedRoot;

    fn names(dir: &Dir) -> Vec<String> {
        let mut names: Vec<String> = dir.entries().unwrap().into_iter().map(|e| e.name).collect();
        names.sort();
        names
    }

    #[test]
    fn a_batch_is_staged_synced_and_published() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TrustedRoot::new(tmp.path())
            .create_dir_all(tmp.path())
            .unwrap();
        std::fs::write(tmp.path().join("b.json"), b"old").unwrap();
        let staged: Vec<Staged> = ["a.json", "b.json"]
            .iter()
            .map(|name| dir.stage(name, name.as_bytes(), 0o600).unwrap())
            .collect();
        // Staged only: the targets are untouched, the temp files hidden.
        assert_eq!(std::fs::read(tmp.path().join("b.json")).unwrap(), b"old");
        assert!(!tmp.path().join("a.json").exists());
        assert!(sync_staged(&staged).iter().all(Result::is_ok));
        for file in staged {
            file.publish().unwrap();
        }
        dir.sync().unwrap();
        assert_eq!(names(&dir), ["a.json", "b.json"]);
        assert_eq!(std::fs::read(tmp.path().join("b.json")).unwrap(), b"b.json");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(tmp.path().join("a.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn an_unpublished_file_leaves_nothing_and_a_link_is_replaced_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TrustedRoot::new(tmp.path())
            .create_dir_all(tmp.path())
            .unwrap();
        drop(dir.stage("dropped.json", b"x", 0o600).unwrap());
        assert!(names(&dir).is_empty());
        let outside = tmp.path().join("outside");
        std::fs::write(&outside, b"keep").unwrap();
        std::os::unix::fs::symlink(&outside, tmp.path().join("link.json")).unwrap();
        let staged = dir.stage("link.json", b"new", 0o600).unwrap();
        staged.publish().unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep");
        assert_eq!(std::fs::read(tmp.path().join("link.json")).unwrap(), b"new");
        assert!(dir.stage("../escape", b"x", 0o600).is_err());
    }
}
