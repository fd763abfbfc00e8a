//! Atomic replacements made durable as a batch (group commit).
//!
//! [`Dir::stage`] writes the new content to a temp file beside its target
//! (the same `.<name>.mws-tmp.<pid>.<n>` name as [`Dir::write_atomic`]) and
//! neither syncs nor renames it. [`sync_staged`] then makes the data of a
//! whole batch durable: writeback of every file starts first (Linux
//! `sync_file_range`), and the fsyncs wait side by side on a few threads, so
//! they find their data on its way and share the file system's journal
//! commits (or, without a journal, the disk's queue) instead of each waiting
//! for one of its own. [`Staged::publish`] renames one file into place;
//! one [`Dir::sync`] per folder makes the names durable. [`commit`] does all
//! three for callers that need all or nothing of the batch reported.
//!
//! Each target is, at any instant and after a crash, either its old or its
//! new content, exactly as with [`Dir::write_atomic`]; a crash before a
//! rename leaves only the temp file, which the sweep removes. A staged file
//! dropped without being published removes its temp file.
//!
//! [`Dir::stage_new`] is for a target that does not exist yet: it writes the
//! target itself (created exclusively), saving the temp file's rename. Until
//! its data is synced, a crash can leave it empty or torn, so a caller uses
//! it only where nothing reads the file before then (see the spool's
//! results, whose commit point comes after the sync).

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;

use super::dir::Dir;
use super::umask::CreationMask;
use super::with_path;
use crate::infrastructure::side_by_side::map_side_by_side;

/// New content for one file, written beside it under a temp name, not yet
/// synced and not yet in place. It holds a handle of its folder (its own,
/// or one shared by a batch staged in that folder: [`Staged::new_in`]), so
/// a batch may span folders.
#[derive(Debug)]
pub struct Staged {
    dir: Arc<Dir>,
    name: OsString,
    /// Where the content is written.
    written: Written,
    file: File,
    published: bool,
}

/// Where a [`Staged`] file's content is written.
#[derive(Debug)]
enum Written {
    /// A temp file of this name, renamed to the target on publish and
    /// removed when dropped unpublished.
    Temp(OsString),
    /// The target's spare of this name ([`Dir::stage_swapping`], see
    /// `spare.rs`), locked by this handle, exchanged with the target on
    /// publish. Dropped unpublished, it is left: a spare is rewritten from
    /// its start by its next writer, and no reader takes it.
    Spare(OsString),
    /// The target itself ([`Dir::stage_new`]). Dropped unpublished, it is
    /// left as it is: by then another writer may have replaced it (a
    /// recovered claim's second filing), and removing by name would remove
    /// that writer's file. Its caller's commit point never came, so a torn
    /// one sits beside nothing, and the retry replaces it.
    InPlace,
}

impl Dir {
    /// Writes `bytes` to a fresh temp file for `name` (permission bits
    /// `mode`, set on the handle so the umask cannot change them). Nothing
    /// is synced and nothing is at `name` yet: see [`sync_staged`],
    /// [`Staged::publish`] and [`commit`]. Takes the folder handle along;
    /// use [`Staged::replacing_in`] to stage several files in one folder.
    pub fn stage(self, name: impl AsRef<OsStr>, bytes: &[u8], mode: u32) -> io::Result<Staged> {
        Staged::replacing_in(&Arc::new(self), name, bytes, mode)
    }

    /// [`Dir::stage`] through the target's spare where it can be used (see
    /// `spare.rs`): for files read only with [`Dir::read_swapped`].
    pub fn stage_swapping(
        self,
        name: impl AsRef<OsStr>,
        bytes: &[u8],
        mode: u32,
    ) -> io::Result<Staged> {
        let dir = Arc::new(self);
        let name = name.as_ref().to_os_string();
        match dir.take_spare(&name, mode)? {
            Some((spare, file)) => Staged::write(
                Arc::clone(&dir),
                name,
                Written::Spare(spare.into()),
                file,
                bytes,
                Some(mode),
            ),
            None => Staged::replacing_in(&dir, name, bytes, mode),
        }
    }

    #[cfg(test)]
    /// Writes `bytes` to `name` itself, created only if nothing (a link
    /// included) is there: `None` when something is (stage a replacement
    /// with [`Dir::stage`] then). Nothing is synced; [`Staged::publish`]
    /// has nothing left to rename. Dropped unpublished, the file is left (see [`Written::InPlace`]).
    pub(crate) fn stage_new(
        self,
        name: impl AsRef<OsStr>,
        bytes: &[u8],
        mode: u32,
    ) -> io::Result<Option<Staged>> {
        Staged::new_in(&Arc::new(self), name, bytes, mode, CreationMask::unknown())
    }
}

impl Staged {
    /// [`Dir::stage`] in `dir`, a folder handle shared by the files a batch
    /// stages there: each file keeps the handle alive, and no file costs a
    /// handle of its own (a `dup` and a `close` each).
    pub(crate) fn replacing_in(
        dir: &Arc<Dir>,
        name: impl AsRef<OsStr>,
        bytes: &[u8],
        mode: u32,
    ) -> io::Result<Staged> {
        let name = name.as_ref().to_os_string();
        let (temp_name, file) = dir.create_temp_for(&name, mode)?;
        let written = Written::Temp(temp_name.into());
        Staged::write(Arc::clone(dir), name, written, file, bytes, Some(mode))
    }

    /// [`Dir::stage_new`] in `dir`, a folder handle shared as with
    /// [`Staged::replacing_in`]. `mask` is the umask read for the batch:
    /// where it spares `mode`, the file is created with exactly `mode` and
    /// is not given it again on its handle (see [`CreationMask`]).
    pub(crate) fn new_in(
        dir: &Arc<Dir>,
        name: impl AsRef<OsStr>,
        bytes: &[u8],
        mode: u32,
        mask: CreationMask,
    ) -> io::Result<Option<Staged>> {
        let name = name.as_ref().to_os_string();
        let Some(file) = dir.create_exclusive(&name, mode)? else {
            return Ok(None);
        };
        // Created with `mode & 0o600` (see `create_exclusive`): a mode
        // within that and spared by the umask is already the file's.
        let set = (mode & !CREATED_BITS != 0 || !mask.spares(mode)).then_some(mode);
        Staged::write(Arc::clone(dir), name, Written::InPlace, file, bytes, set).map(Some)
    }

    /// `bytes` into the freshly created `file`, `written` in `dir`, then
    /// `mode` set on its handle (`None`: it has its mode already).
    fn write(
        dir: Arc<Dir>,
        name: OsString,
        written: Written,
        file: File,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> io::Result<Staged> {
        // Built first, so that a failed write drops it and removes the file.
        let mut staged = Staged {
            dir,
            name,
            written,
            file,
            published: false,
        };
        staged
            .file
            .write_all(bytes)
            // A spare held older content: cut what is past the new.
            .and_then(|()| match staged.written {
                Written::Spare(_) => staged.file.set_len(bytes.len() as u64),
                Written::Temp(_) | Written::InPlace => Ok(()),
            })
            .and_then(|()| mode.map_or(Ok(()), |mode| set_mode(&staged.file, mode)))
            .map_err(|e| with_path(&staged.target(), e))?;
        Ok(staged)
    }

    fn target(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }

    /// Renames the file into place, replacing what is there (a link is
    /// replaced, never followed), or exchanges a spare with it; a file staged in place
    /// ([`Dir::stage_new`]) is there already. Durable once its data
    /// ([`sync_staged`]) and its folder are synced.
    pub fn publish(mut self) -> io::Result<()> {
        let placed = match &self.written {
            Written::Temp(temp_name) => self.dir.rename(temp_name, &self.dir, &self.name, true),
            Written::Spare(spare) => self.dir.swap_in(spare, &self.name),
            Written::InPlace => {
                self.published = true;
                return Ok(());
            }
        };
        match placed {
            Ok(true) => {
                self.published = true;
                super::dir::note_write(&self.dir);
                Ok(())
            }
            Ok(false) => Err(with_path(
                &self.target(),
                io::Error::new(io::ErrorKind::NotFound, "temp file vanished"),
            )),
            Err(e) => Err(e),
        }
    }

    /// Whether the file was written as its target itself
    /// ([`Dir::stage_new`]): nothing is left to rename.
    pub(crate) fn is_in_place(&self) -> bool {
        matches!(self.written, Written::InPlace)
    }

    /// Writes `bytes` after what the file holds so far (a file staged empty
    /// in place, filled once its content is known: see the spool's foreseen
    /// outcome records).
    pub(crate) fn write_more(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file
            .write_all(bytes)
            .map_err(|e| with_path(&self.target(), e))
    }

    /// Whether the file is still at its name in `dir`, and `dir` is the
    /// folder it was staged in: another process may have removed it, or
    /// moved the folder away, since it was staged.
    pub(crate) fn is_still_in(&self, dir: &Dir) -> io::Result<bool> {
        #[cfg(unix)]
        let own = super::stamp::Stamp::of(
            &rustix::fs::fstat(&self.file).map_err(|e| with_path(&self.target(), e))?,
        );
        #[cfg(windows)]
        let own = super::dir::stamp_of_file(&self.file, &self.target())?;
        let (folder, staged_folder) = (dir.own_stamp()?, self.dir.own_stamp()?);
        let same =
            |a: &super::stamp::Stamp, b: &super::stamp::Stamp| a.dev == b.dev && a.ino == b.ino;
        Ok(same(&folder, &staged_folder)
            && dir
                .stamp(&self.name)?
                .is_some_and(|(_, at_name)| same(&at_name, &own)))
    }

    /// The file's data, to disk.
    fn sync(&self) -> io::Result<()> {
        self.file
            .sync_data()
            .map_err(|e| with_path(&self.target(), e))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let (false, Written::Temp(temp_name)) = (self.published, &self.written) {
            let _ = self.dir.remove_file(temp_name);
        }
    }
}

/// The permission bits [`Dir::create_exclusive`](super::dir::Dir) creates
/// a file with, before the umask: no more of its mode than these.
const CREATED_BITS: u32 = 0o600;

/// Sets the permission bits of the open `file`.
#[cfg(unix)]
fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    rustix::fs::fchmod(file, super::dir::permission_mode(mode)).map_err(Into::into)
}

/// Windows has no permission bits: the file keeps the ACL it inherits.
#[cfg(windows)]
fn set_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// Makes the data of every staged file durable, one result per file, in
/// order. Writeback of all of them starts before the first fsync waits.
pub fn sync_staged<S: std::borrow::Borrow<Staged> + Sync>(staged: &[S]) -> Vec<io::Result<()>> {
    // An earlier request's trailing folder syncs first (their renames
    // before any of these): see `join_trailing`.
    if let Err(error) = super::join_trailing() {
        return staged.iter().map(|_| Err(clone_error(&error))).collect();
    }
    #[cfg(target_os = "linux")]
    for file in staged {
        use std::os::fd::AsRawFd;
        let file: &Staged = file.borrow();
        // A hint only (start writeback, wait for nothing): a failure shows
        // in the fsync that follows.
        // SAFETY: a valid open descriptor; the call reads no memory of ours.
        unsafe {
            libc::sync_file_range(file.file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    // The waits overlap too: a file system without a journal writes each
    // file's inode on its own, one round trip to the disk per fsync.
    map_side_by_side(staged, SYNC_THREADS, |file| file.borrow().sync())
}

/// One wait on the disk of [`sync_with_folders`].
enum Wait<'a> {
    Data(&'a Staged),
    Names(&'a Dir),
}

/// Makes the data of every staged file and the names in every folder of
/// `folders` durable in one round: all the fsyncs wait side by side, so the
/// batch pays one wait where [`sync_staged`] then [`Dir::sync`] pay two.
/// Only for files with nothing left to rename ([`Staged::is_in_place`]):
/// the names synced are those already in place. One result per file, then
/// one per folder, in order.
pub fn sync_with_folders<S: std::borrow::Borrow<Staged> + Sync>(
    staged: &[S],
    folders: &[&Dir],
) -> (Vec<io::Result<()>>, Vec<io::Result<()>>) {
    if let Err(error) = super::join_trailing() {
        return (
            staged.iter().map(|_| Err(clone_error(&error))).collect(),
            folders.iter().map(|_| Err(clone_error(&error))).collect(),
        );
    }
    let waits: Vec<Wait<'_>> = staged
        .iter()
        .map(|file| Wait::Data(file.borrow()))
        .chain(folders.iter().map(|dir| Wait::Names(dir)))
        .collect();
    let mut results = map_side_by_side(&waits, SYNC_THREADS, |wait| match wait {
        Wait::Data(file) => file.sync(),
        Wait::Names(dir) => dir.sync(),
    });
    let of_folders = results.split_off(staged.len());
    (results, of_folders)
}

/// `error` again, for each result it fails.
fn clone_error(error: &io::Error) -> io::Error {
    io::Error::new(error.kind(), error.to_string())
}

/// Threads [`sync_staged`] waits on fsyncs with.
const SYNC_THREADS: usize = 8;

/// Syncs, publishes and makes durable every staged file (see the module
/// docs). On an error the files not yet published are dropped (their temp
/// files removed), the ones published stay, and their folders are still
/// synced.
pub fn commit(staged: Vec<Staged>) -> io::Result<()> {
    let synced = sync_staged(&staged).into_iter().collect::<io::Result<()>>();
    let mut published = Vec::with_capacity(staged.len());
    let result = synced.and_then(|()| publish_each(staged, &mut published));
    result.and(sync_folders(&published))
}

/// [`commit`] of `staged` with `companion` along: the companion's data is
/// synced side by side with the others', it is published after them and its
/// folder synced with theirs. A companion that fails to sync or publish is
/// dropped (its temp file removed) without failing the commit: `Ok(false)`,
/// and its target keeps its old content. For a derived file written with
/// the files it derives from (a team's metrics index with a member's
/// status), whose own writer retries it.
pub fn commit_with_companion(staged: Vec<Staged>, companion: Staged) -> io::Result<bool> {
    let mut all = staged;
    all.push(companion);
    let mut synced = sync_staged(&all).into_iter();
    let companion = all.pop().expect("the companion was pushed");
    let companion_synced = synced.next_back().is_some_and(|r| r.is_ok());
    synced.collect::<io::Result<()>>()?;
    let mut published = Vec::with_capacity(all.len() + 1);
    let result = publish_each(all, &mut published);
    let companion_published =
        result.is_ok() && companion_synced && publish_each(vec![companion], &mut published).is_ok();
    result.and(sync_folders(&published))?;
    Ok(companion_published)
}

/// Publishes `files` in order, keeping a handle on each one's folder in
/// `published` (the file's own, shared: no second handle opened) to sync it
/// after; stops at the first failure, and the files left are dropped (their
/// temp files removed).
fn publish_each(files: Vec<Staged>, published: &mut Vec<Arc<Dir>>) -> io::Result<()> {
    for file in files {
        let dir = Arc::clone(&file.dir);
        file.publish()?;
        published.push(dir);
    }
    Ok(())
}

/// Syncs each folder in `published` once (now, or at the end of a request's
/// deferred folder syncs), every one of them even after a failure; the
/// first error is returned.
fn sync_folders(published: &[Arc<Dir>]) -> io::Result<()> {
    let mut synced = HashSet::new();
    let mut result = Ok(());
    for dir in published {
        if synced.insert(dir.path().to_path_buf()) {
            result = result.and(super::dir::sync_entries(dir));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::TrustedRoot;
    use std::os::unix::fs::PermissionsExt;

    fn names(path: &std::path::Path) -> Vec<String> {
        let mut names: Vec<_> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
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
            .map(|name| {
                let folder = dir.try_clone().unwrap();
                folder.stage(name, name.as_bytes(), 0o600).unwrap()
            })
            .collect();
        // Staged only: the targets are untouched, the temp files hidden.
        assert_eq!(std::fs::read(tmp.path().join("b.json")).unwrap(), b"old");
        assert!(!tmp.path().join("a.json").exists());
        assert!(sync_staged(&staged).iter().all(Result::is_ok));
        for file in staged {
            file.publish().unwrap();
        }
        dir.sync().unwrap();
        assert_eq!(names(tmp.path()), ["a.json", "b.json"]);
        assert_eq!(std::fs::read(tmp.path().join("b.json")).unwrap(), b"b.json");
        assert_eq!(mode(&tmp.path().join("a.json")), 0o600);
    }

    #[test]
    fn a_commit_replaces_every_target_across_folders_and_a_dropped_stage_leaves_nothing() {
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
        assert_eq!(
            (
                mode(&tmp.path().join("a/status.json")),
                mode(&tmp.path().join("b/status.json"))
            ),
            (0o644, 0o600)
        );
        drop(open("a").stage("status.json", b"never", 0o644).unwrap());
        assert_eq!(names(&tmp.path().join("a")), ["status.json"]);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("a/status.json")).unwrap(),
            "new a"
        );
    }

    /// `stage_new` writes the target itself, only where nothing is: an
    /// existing file or a link (even a dangling one) is left alone and never
    /// followed; dropped unpublished, it is left, since by then it may be
    /// another writer's.
    #[test]
    fn a_new_file_is_staged_in_place_and_nothing_existing_is_touched() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        let dir = root.create_dir_all(tmp.path()).unwrap();
        std::fs::write(tmp.path().join("outside"), "precious").unwrap();
        std::fs::write(tmp.path().join("old.json"), "old").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), tmp.path().join("link.json"))
            .unwrap();
        std::os::unix::fs::symlink(tmp.path().join("nowhere"), tmp.path().join("dangling.json"))
            .unwrap();
        for taken in ["old.json", "link.json", "dangling.json"] {
            let staged = dir.try_clone().unwrap().stage_new(taken, b"new", 0o600);
            assert!(staged.unwrap().is_none(), "{taken}");
        }
        assert!(!tmp.path().join("nowhere").exists());
        let staged = dir
            .try_clone()
            .unwrap()
            .stage_new("new.json", b"new", 0o640)
            .unwrap()
            .unwrap();
        // In place at once: no temp file beside it.
        assert_eq!(
            names(tmp.path()),
            [
                "dangling.json",
                "link.json",
                "new.json",
                "old.json",
                "outside"
            ]
        );
        assert!(sync_staged(std::slice::from_ref(&staged))
            .iter()
            .all(Result::is_ok));
        staged.publish().unwrap();
        assert_eq!(std::fs::read(tmp.path().join("new.json")).unwrap(), b"new");
        assert_eq!(mode(&tmp.path().join("new.json")), 0o640);
        // Dropped unpublished after another writer replaced it (a recovered
        // claim filed twice): the other writer's file stays.
        let dropped = dir
            .try_clone()
            .unwrap()
            .stage_new("dropped.json", b"torn", 0o600)
            .unwrap()
            .unwrap();
        std::fs::write(tmp.path().join("other"), "whole").unwrap();
        std::fs::rename(tmp.path().join("other"), tmp.path().join("dropped.json")).unwrap();
        drop(dropped);
        assert_eq!(
            std::fs::read(tmp.path().join("dropped.json")).unwrap(),
            b"whole"
        );
        assert_eq!(std::fs::read(tmp.path().join("old.json")).unwrap(), b"old");
        assert_eq!(
            std::fs::read(tmp.path().join("outside")).unwrap(),
            b"precious"
        );
        assert!(dir.stage_new("../escape", b"x", 0o600).is_err());
    }

    #[test]
    fn a_companion_that_cannot_be_published_is_dropped_and_the_commit_stands() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        let open = |p: &str| root.create_dir_all(&tmp.path().join(p)).unwrap();
        // A full folder where the companion's file belongs: no rename replaces it.
        std::fs::create_dir_all(tmp.path().join("b/index.json/inside")).unwrap();
        let recorded = commit_with_companion(
            vec![open("a").stage("status.json", b"new", 0o644).unwrap()],
            open("b").stage("index.json", b"index", 0o644).unwrap(),
        );
        assert!(!recorded.unwrap());
        assert_eq!(
            std::fs::read(tmp.path().join("a/status.json")).unwrap(),
            b"new"
        );
        assert_eq!(names(&tmp.path().join("b")), ["index.json"], "temp removed");
        let recorded = commit_with_companion(
            vec![open("a").stage("status.json", b"newer", 0o644).unwrap()],
            open("c").stage("index.json", b"index", 0o644).unwrap(),
        );
        assert!(recorded.unwrap());
        assert_eq!(
            std::fs::read(tmp.path().join("a/status.json")).unwrap(),
            b"newer"
        );
        assert_eq!(
            std::fs::read(tmp.path().join("c/index.json")).unwrap(),
            b"index"
        );
        assert_eq!(names(&tmp.path().join("a")), ["status.json"]);
    }

    #[test]
    fn a_link_at_the_target_is_replaced_never_followed_and_names_are_single_components() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        std::fs::write(tmp.path().join("outside"), "precious").unwrap();
        std::fs::create_dir(tmp.path().join("a")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), tmp.path().join("a/s.json"))
            .unwrap();
        let dir = root.open_dir(&tmp.path().join("a")).unwrap().unwrap();
        let escape = dir.try_clone().unwrap().stage("../escape", b"x", 0o600);
        assert!(escape.is_err());
        commit(vec![dir.stage("s.json", b"mine", 0o644).unwrap()]).unwrap();
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("outside")).unwrap(),
            "precious"
        );
        assert!(std::fs::symlink_metadata(tmp.path().join("a/s.json"))
            .unwrap()
            .is_file());
        assert_eq!(names(&tmp.path().join("a")), ["s.json"]);
    }
}
