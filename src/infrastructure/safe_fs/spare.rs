//! Store files replaced through a spare: no file is created or freed per
//! replacement.
//!
//! A replacement through a temp file creates an inode, and its rename frees
//! the target's old one. On Linux file systems both are the costly part of
//! a small durable replacement (here: a create 0.05–1 ms, growing with the
//! inodes freed recently, a rename 0.13–0.18 ms, against 0.015 ms for an
//! exchange); a reconcile replaces four store files. So a store file keeps
//! its previous inode beside it as its spare, `.<name>.mws-spare`, and the
//! next replacement rewrites the spare and exchanges the two names.
//!
//! The contract, for files written with [`Dir::stage_swapping`] and read
//! with [`Dir::read_swapped`] (the stores' envelopes, which nothing else
//! reads):
//!
//! * A writer uses the spare only when it is a regular file with one link,
//!   holds `flock(LOCK_EX)` on it, and finds it still at the spare's name
//!   after locking. Anything else (a link, a FIFO, a folder, a hard link, a
//!   lock held by anyone) and the writer takes a fresh temp file as before.
//! * It writes the spare from its start, cuts it to the new length, syncs
//!   its data when durable, then exchanges it with the target
//!   (`renameat2(RENAME_EXCHANGE)`): the commit point, atomic as a rename.
//!   The target's previous inode is now the spare. With nothing at the
//!   target, or a file system that cannot exchange, the spare is renamed
//!   onto it instead (the next write creates a spare again).
//! * A crash or failure mid-write leaves a torn spare and the target whole;
//!   the next writer rewrites the spare from its start. Folder syncs are
//!   those of a rename (the names changed), so every guarantee of
//!   `Dir::write_atomic` and of a staged commit holds as before.
//! * Unlike a replaced temp file, the old inode is written again later, so a
//!   reader still reading it then would see it torn. A reader therefore
//!   holds `flock(LOCK_SH)` on what it reads (a writer cannot lock it, and
//!   takes a temp file instead), and after reading checks the name still
//!   leads to what it read: if not, or if it could not lock, it reads again
//!   (a bounded number of times, ~13 ms, then fails naming the file: only a
//!   lock held by another program lasts that long). A reader never
//!   takes a spare left torn by a failed writer: that inode is never at the
//!   target's name.
//! * Growth stays bounded: one spare per store file, removed with its
//!   folder.
//!
//! Elsewhere than Linux every replacement takes a temp file, and a read
//! takes no lock.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io;

use super::dir::Dir;
use super::FileRead;

/// Marks a spare: `.<name>.mws-spare`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) const SPARE_MARK: &str = ".mws-spare";

/// The spare's name for a target.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub(super) struct SpareName<'a>(pub(super) &'a OsStr);

impl fmt::Display for SpareName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ".{}{SPARE_MARK}", self.0.to_string_lossy())
    }
}

/// Reads a reader of a swapped file attempts before giving up: each failed
/// one means a writer replaced or was rewriting what it opened, which takes
/// well under a millisecond.
#[cfg(target_os = "linux")]
pub(super) const READ_ATTEMPTS: u32 = 64;

/// Pause after a read that could not lock: a writer is mid-write.
#[cfg(target_os = "linux")]
pub(super) const LOCKED_PAUSE: std::time::Duration = std::time::Duration::from_micros(200);

impl Dir {
    /// The spare of `target` open for rewriting from its start, locked
    /// `LOCK_EX`, created when missing; `None` when it cannot be used (see
    /// the module docs): a temp file is taken instead.
    #[cfg(target_os = "linux")]
    pub(super) fn take_spare(
        &self,
        target: &OsStr,
        mode: u32,
    ) -> io::Result<Option<(String, File)>> {
        use rustix::fs::{self as rfs, AtFlags, FileType, FlockOperation, Mode, OFlags};
        let name = SpareName(self.component(target)?).to_string();
        let flags = super::dir::FILE_FLAGS | OFlags::WRONLY | OFlags::CREATE;
        let mode = Mode::from_raw_mode((mode & 0o600) as _);
        // A link (ELOOP), a FIFO without a reader (ENXIO), a folder (EISDIR):
        // not a spare; the temp file's own open reports a real failure.
        let Ok(fd) = rfs::openat(self.fd(), name.as_str(), flags, mode) else {
            return Ok(None);
        };
        let usable = rfs::fstat(&fd).is_ok_and(|stat| {
            FileType::from_raw_mode(stat.st_mode as _) == FileType::RegularFile
                && stat.st_nlink == 1
                && rfs::flock(&fd, FlockOperation::NonBlockingLockExclusive).is_ok()
                // Locked: still the file at the spare's name, not an inode a
                // writer has just exchanged into the target.
                && rfs::statat(self.fd(), name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|at_name| at_name.st_dev == stat.st_dev && at_name.st_ino == stat.st_ino)
        });
        Ok(usable.then(|| (name, File::from(fd))))
    }

    /// Elsewhere than Linux there is no exchange: always a temp file.
    #[cfg(not(target_os = "linux"))]
    pub(super) fn take_spare(
        &self,
        target: &OsStr,
        _mode: u32,
    ) -> io::Result<Option<(String, File)>> {
        self.component(target).map(|_| None)
    }

    /// Puts the written spare `spare` in place of `target`: exchanged with
    /// it, or renamed onto it when nothing is there or the file system
    /// cannot exchange. `false` when the spare is gone.
    pub(super) fn swap_in(&self, spare: &OsStr, target: &OsStr) -> io::Result<bool> {
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{renameat_with, RenameFlags};
            use rustix::io::Errno;
            let target = self.component(target)?;
            match renameat_with(self.fd(), spare, self.fd(), target, RenameFlags::EXCHANGE) {
                Ok(()) => return Ok(true),
                Err(Errno::NOENT | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
                Err(e) => return Err(super::with_path(&self.path().join(target), e)),
            }
        }
        self.rename(spare, self, target, true)
    }

    /// [`Dir::read`] of a file replaced through its spare: what it reads is
    /// locked `LOCK_SH` while read and checked to be still at `name` after
    /// (see the module docs).
    #[cfg(target_os = "linux")]
    pub fn read_swapped(&self, name: impl AsRef<OsStr>, max: u64) -> io::Result<FileRead> {
        use rustix::fs::{self as rfs, AtFlags, FlockOperation};
        use rustix::io::Errno;
        let name = self.component(name.as_ref())?;
        let path = || self.path().join(name);
        for _ in 0..READ_ATTEMPTS {
            let (file, stat) = match self.open_file_stat(name) {
                Ok(Some(opened)) => opened,
                Ok(None) => return Ok(FileRead::Missing),
                Err(e) if e.kind() == io::ErrorKind::InvalidData => return Ok(FileRead::NotAFile),
                Err(e) => return Err(e),
            };
            // Locked out: a writer has just exchanged this file in, or is
            // rewriting it as a spare; read again. Any other failure means no
            // locks on this file system: then no writer could lock a spare
            // either, and nothing is rewritten in place.
            if let Err(Errno::WOULDBLOCK) = rfs::flock(&file, FlockOperation::NonBlockingLockShared)
            {
                std::thread::sleep(LOCKED_PAUSE);
                continue;
            }
            let mut bytes = Vec::new();
            let within = super::dir::read_capped(file, stat.st_size as u64, max, &mut bytes)
                .map_err(|e| super::with_path(&path(), e))?;
            match rfs::statat(self.fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(now) if now.st_dev == stat.st_dev && now.st_ino == stat.st_ino => {
                    return Ok(if within {
                        FileRead::Bytes(bytes)
                    } else {
                        FileRead::TooLarge
                    });
                }
                Ok(_) | Err(Errno::NOENT) => continue,
                Err(e) => return Err(super::with_path(&path(), e)),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "{}: replaced or locked by another writer through {READ_ATTEMPTS} reads; not read",
                path().display()
            ),
        ))
    }

    /// Elsewhere than Linux nothing is rewritten in place: a plain read.
    #[cfg(not(target_os = "linux"))]
    pub fn read_swapped(&self, name: impl AsRef<OsStr>, max: u64) -> io::Result<FileRead> {
        self.read(name, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spare_is_named_after_its_target() {
        assert_eq!(
            SpareName(OsStr::new("status.json")).to_string(),
            ".status.json.mws-spare"
        );
        assert!(!super::super::is_temp_name(".status.json.mws-spare"));
    }
}

#[cfg(all(test, target_os = "linux"))]
mod linux_tests {
    use super::*;
    use crate::infrastructure::safe_fs::{commit, TrustedRoot};
    use rustix::fs::{flock, FlockOperation};
    use std::os::unix::fs::{symlink, MetadataExt};
    use std::path::Path;

    fn root() -> (tempfile::TempDir, TrustedRoot) {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        root.create_dir_all(&root.join("forge")).unwrap();
        (dir, root)
    }

    fn folder(root: &TrustedRoot) -> Dir {
        root.open_dir(&root.join("forge")).unwrap().unwrap()
    }

    /// A durable replacement of `status.json`, as the stores make one.
    fn write(root: &TrustedRoot, bytes: &[u8]) {
        commit(vec![folder(root)
            .stage_swapping("status.json", bytes, 0o644)
            .unwrap()])
        .unwrap();
    }

    fn read(root: &TrustedRoot) -> FileRead {
        folder(root).read_swapped("status.json", 1 << 20).unwrap()
    }

    fn names(path: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn ino(path: &Path) -> u64 {
        std::fs::symlink_metadata(path).unwrap().ino()
    }

    #[test]
    fn replacements_take_turns_between_two_files_and_never_keep_a_stale_tail() {
        let (_dir, root) = root();
        let target = root.join("forge/status.json");
        let spare = root.join("forge/.status.json.mws-spare");
        write(&root, b"first, the longest content");
        assert_eq!(names(&root.join("forge")), ["status.json"], "no spare yet");
        write(&root, b"second");
        let (a, b) = (ino(&target), ino(&spare));
        for (round, content) in [&b"third, long again"[..], b"4th", b"fifth"]
            .iter()
            .enumerate()
        {
            write(&root, content);
            assert_eq!(read(&root), FileRead::Bytes(content.to_vec()), "{round}");
            let at_target = ino(&target);
            assert!(
                at_target == a || at_target == b,
                "{round}: a third file was made"
            );
            assert_eq!(ino(&spare), if at_target == a { b } else { a }, "{round}");
        }
        assert_eq!(
            std::fs::read(&spare).unwrap(),
            b"4th",
            "the spare holds the previous content"
        );
        assert_eq!(
            names(&root.join("forge")),
            [".status.json.mws-spare", "status.json"]
        );
        let mode = std::fs::metadata(&target).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }

    #[test]
    fn an_unusable_spare_is_left_alone_and_a_temp_file_taken() {
        let (dir, root) = root();
        let outside = dir.path().join("outside.json");
        let spare = root.join("forge/.status.json.mws-spare");
        let cases: [(&str, &dyn Fn()); 4] = [
            ("a link to a file outside", &|| {
                symlink(&outside, &spare).unwrap()
            }),
            ("a hard link of a file outside", &|| {
                std::fs::hard_link(&outside, &spare).unwrap()
            }),
            ("a FIFO", &|| crate::infrastructure::safe_fs::mkfifo(&spare)),
            ("a folder", &|| std::fs::create_dir(&spare).unwrap()),
        ];
        for (case, plant) in cases {
            std::fs::write(&outside, b"the user's own").unwrap();
            write(&root, b"old");
            let _ = std::fs::remove_file(&spare).or_else(|_| std::fs::remove_dir(&spare));
            plant();
            write(&root, b"new");
            assert_eq!(read(&root), FileRead::Bytes(b"new".to_vec()), "{case}");
            assert_eq!(
                std::fs::read(&outside).unwrap(),
                b"the user's own",
                "{case}"
            );
            let left = std::fs::symlink_metadata(&spare).unwrap().file_type();
            assert!(
                !left.is_file() || std::fs::read(&spare).unwrap() == b"the user's own",
                "{case}"
            );
            let temps = names(&root.join("forge"))
                .into_iter()
                .filter(|n| super::super::is_temp_name(n))
                .count();
            assert_eq!(temps, 0, "{case}: the temp file was renamed into place");
            let _ = std::fs::remove_file(&spare).or_else(|_| std::fs::remove_dir(&spare));
        }
    }

    #[test]
    fn a_file_a_reader_still_holds_is_never_rewritten() {
        let (_dir, root) = root();
        write(&root, b"one");
        write(&root, b"two");
        // A reader opened `two` and reads slowly; meanwhile `three` is
        // written, and `two` becomes the spare the next write would reuse.
        let reading = std::fs::File::open(root.join("forge/status.json")).unwrap();
        flock(&reading, FlockOperation::LockShared).unwrap();
        write(&root, b"three");
        write(&root, b"four");
        let mut held = String::new();
        std::io::Read::read_to_string(&mut &reading, &mut held).unwrap();
        assert_eq!(held, "two", "what the reader holds was rewritten under it");
        assert_eq!(read(&root), FileRead::Bytes(b"four".to_vec()));
    }

    #[test]
    fn a_spare_left_torn_is_never_read_and_the_next_write_mends_it() {
        let (_dir, root) = root();
        write(&root, b"one");
        write(&root, b"two");
        // A writer fails after writing part of the spare: dropped unpublished.
        let torn = folder(&root)
            .stage_swapping("status.json", b"{\"torn", 0o644)
            .unwrap();
        drop(torn);
        assert_eq!(read(&root), FileRead::Bytes(b"two".to_vec()));
        write(&root, b"three");
        assert_eq!(read(&root), FileRead::Bytes(b"three".to_vec()));
        assert_eq!(
            std::fs::read(root.join("forge/.status.json.mws-spare")).unwrap(),
            b"two"
        );
    }

    #[test]
    fn a_read_waits_out_a_writer_and_names_the_file_when_it_never_finishes() {
        let (_dir, root) = root();
        write(&root, b"one");
        let held = std::fs::File::open(root.join("forge/status.json")).unwrap();
        flock(&held, FlockOperation::LockExclusive).unwrap();
        let error = folder(&root).read_swapped("status.json", 100).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::ResourceBusy);
        assert!(error.to_string().contains("forge/status.json"), "{error}");
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(3));
            drop(held);
        });
        assert_eq!(read(&root), FileRead::Bytes(b"one".to_vec()));
        release.join().unwrap();
    }

    #[test]
    fn concurrent_writers_and_readers_only_ever_see_whole_documents() {
        let (_dir, root) = root();
        let document =
            |writer: usize, n: usize| format!("{writer}:{n}:{}", "x".repeat((n * 37) % 3000));
        write(&root, document(9, 0).as_bytes());
        let root = &root;
        std::thread::scope(|scope| {
            for writer in 0..2 {
                scope.spawn(move || {
                    for n in 0..300 {
                        write(root, document(writer, n).as_bytes());
                    }
                });
            }
            for _ in 0..2 {
                scope.spawn(move || {
                    for _ in 0..600 {
                        let FileRead::Bytes(bytes) = read(root) else {
                            panic!("missing")
                        };
                        let text = String::from_utf8(bytes).unwrap();
                        let mut parts = text.splitn(3, ':');
                        let (w, n) = (parts.next().unwrap(), parts.next().unwrap());
                        let want = document(w.parse().unwrap(), n.parse().unwrap());
                        assert_eq!(text, want, "a torn read");
                    }
                });
            }
        });
    }
}
