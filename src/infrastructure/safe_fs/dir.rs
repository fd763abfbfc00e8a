//! An open folder below a trusted root and the operations inside it (Unix).
//!
//! Every name passed here is one path component, resolved relative to the
//! folder's handle with `O_NOFOLLOW`, so a rename or unlink acts on the entry
//! itself and never on what a link points to.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags, RenameFlags, Stat};
use rustix::io::Errno;

use super::kinds::{Entry, FileKind, Meta, Names};
use super::temp::TempName;
use super::{hard_linked, not_a_file, not_a_folder, with_path};
use crate::domain::time::EpochMs;

/// Flags of every file open: never a link, never block on a FIFO, never leak
/// the descriptor into a child process.
pub(super) const FILE_FLAGS: OFlags = OFlags::NOFOLLOW
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOCTTY);
const DIR_FLAGS: OFlags = OFlags::NOFOLLOW
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::RDONLY);

/// Deepest folder tree [`Dir::remove_tree`] descends into.
const MAX_REMOVE_DEPTH: usize = 8;

#[path = "dir_folder_syncs.rs"]
mod folder_syncs;
#[path = "dir_shared.rs"]
mod shared;
#[path = "dir_stamp.rs"]
mod stamp;
#[path = "dir_sweep.rs"]
mod sweep;
pub(super) use folder_syncs::sync_entries;
pub use folder_syncs::{join_trailing, with_folder_syncs_deferred, with_folder_syncs_trailing};
use shared::write_all_parts;

/// Bytes of directory entries one `getdents64` call fills in a listing
/// (about 600 names of the spool's length).
#[cfg(any(target_os = "linux", target_os = "android"))]
const LISTING_BUFFER_BYTES: usize = 32 * 1024;
#[cfg(target_os = "linux")]
pub(super) use stamp::read_capped;
pub(super) use sweep::note_write;

impl FileKind {
    pub(super) fn of(file_type: FileType) -> Self {
        match file_type {
            FileType::RegularFile => Self::File,
            FileType::Directory => Self::Dir,
            FileType::Symlink => Self::Symlink,
            _ => Self::Other,
        }
    }
}

impl Meta {
    fn of(stat: &Stat) -> Self {
        Self {
            kind: FileKind::of(FileType::from_raw_mode(stat.st_mode as _)),
            len: u64::try_from(stat.st_size).unwrap_or(0),
            modified_ms: (stat.st_mtime as EpochMs)
                .saturating_mul(1000)
                .saturating_add(stat.st_mtime_nsec as EpochMs / 1_000_000),
            uid: stat.st_uid,
            mode: permission_bits(stat),
        }
    }
}

/// `bits` (`0o7777` at most) as a rustix [`Mode`]: `mode_t` is a `u16` on
/// macOS, a `u32` on Linux.
pub(super) fn permission_mode(bits: u32) -> Mode {
    Mode::from_raw_mode((bits & 0o7777) as rustix::fs::RawMode)
}

/// The permission bits of `stat` (`st_mode` is a `u16` on macOS, a `u32` on Linux).
#[allow(clippy::useless_conversion)]
fn permission_bits(stat: &Stat) -> u32 {
    u32::from(stat.st_mode) & 0o7777
}

/// An open folder; its path is kept for messages only.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

impl Dir {
    /// Opens a configured root, following links: the user set it up.
    pub(super) fn open_trusted(path: &Path) -> io::Result<Option<Self>> {
        match rfs::open(path, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => Ok(Some(Self {
                fd,
                path: path.to_path_buf(),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(Errno::NOTDIR) => Err(not_a_folder(path)),
            Err(e) => Err(with_path(path, e)),
        }
    }

    /// `name` as exactly one entry of this folder: a `/` in it, `.`, `..` or
    /// an empty name would make `openat` walk (and follow links in) other
    /// folders.
    pub(super) fn component<'a>(&self, name: &'a OsStr) -> io::Result<&'a OsStr> {
        let bytes = name.as_encoded_bytes();
        if bytes.is_empty()
            || bytes == b"."
            || bytes == b".."
            || bytes.contains(&b'/')
            || bytes.contains(&0)
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: {name:?} is not one plain name", self.path.display()),
            ));
        }
        Ok(name)
    }

    /// The subfolder `name`; `None` when missing; a link or file is an error.
    pub(crate) fn open_dir(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Dir>> {
        let name = self.component(name.as_ref())?;
        match rfs::openat(&self.fd, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(Some(Dir {
                fd,
                path: self.child(name),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(Errno::NOTDIR | Errno::LOOP) => Err(not_a_folder(&self.child(name))),
            Err(e) => Err(with_path(&self.child(name), e)),
        }
    }

    /// The folder `parts` below this one (plain names), opened in one
    /// `openat2` that refuses a link at any step (`RESOLVE_NO_SYMLINKS`,
    /// `RESOLVE_BENEATH`): the same guarantee as opening each component
    /// with `O_NOFOLLOW`, in one system call instead of one per component
    /// plus the closes. `None` when that does not succeed, for any reason
    /// (a part missing, a link or file on the way, a kernel before 5.6 or a
    /// sandbox refusing the call): the caller then walks the components one
    /// by one, which gives the exact answer and error.
    #[cfg(target_os = "linux")]
    pub(crate) fn open_descendant(&self, parts: &[&OsStr]) -> Option<Dir> {
        use std::sync::atomic::{AtomicBool, Ordering};
        /// Set once the kernel has refused the call itself: every later
        /// open walks without trying it.
        static UNAVAILABLE: AtomicBool = AtomicBool::new(false);
        if parts.len() < 2 || UNAVAILABLE.load(Ordering::Relaxed) {
            return None;
        }
        let mut below = PathBuf::new();
        for part in parts {
            below.push(self.component(part).ok()?);
        }
        let resolve = rfs::ResolveFlags::NO_SYMLINKS | rfs::ResolveFlags::BENEATH;
        match rfs::openat2(&self.fd, &below, DIR_FLAGS, Mode::empty(), resolve) {
            Ok(fd) => Some(Dir {
                fd,
                path: self.path.join(below),
            }),
            Err(Errno::NOSYS | Errno::PERM) => {
                UNAVAILABLE.store(true, Ordering::Relaxed);
                None
            }
            Err(_) => None,
        }
    }

    /// [`Dir::open_descendant`] where `openat2` does not exist: always the walk.
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn open_descendant(&self, _parts: &[&OsStr]) -> Option<Dir> {
        None
    }

    /// The subfolder `name`, created 0700 when missing.
    pub fn create_dir(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let name = self.component(name.as_ref())?;
        // Folders usually exist: open first, create only when missing.
        if let Some(dir) = self.open_dir(name)? {
            return Ok(dir);
        }
        match rfs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(with_path(&self.child(name), e)),
        }
        self.open_dir(name)?
            .ok_or_else(|| with_path(&self.child(name), Errno::NOENT))
    }

    /// What is at `name`, without following a link.
    pub fn meta(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Meta>> {
        let name = self.component(name.as_ref())?;
        match rfs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(Meta::of(&stat))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(with_path(&self.child(name), e)),
        }
    }

    /// Opens `name` for reading if it is a regular file.
    pub(crate) fn open_file(&self, name: impl AsRef<OsStr>) -> io::Result<Option<File>> {
        Ok(self.open_file_stat(name)?.map(|(file, _)| file))
    }

    /// [`Dir::open_file`] with what the handle's `fstat` (the one that found
    /// it a regular file) says of it: a reader that wants its size or
    /// modification time needs no second call.
    pub(crate) fn open_file_meta(
        &self,
        name: impl AsRef<OsStr>,
    ) -> io::Result<Option<(File, Meta)>> {
        Ok(self
            .open_file_stat(name)?
            .map(|(file, stat)| (file, Meta::of(&stat))))
    }

    /// [`Dir::open_file`] with the handle's `fstat`, the one that found it a
    /// regular file (a reader that wants the stamp needs no second call).
    pub(super) fn open_file_stat(
        &self,
        name: impl AsRef<OsStr>,
    ) -> io::Result<Option<(File, Stat)>> {
        let name = self.component(name.as_ref())?;
        let fd = match rfs::openat(&self.fd, name, FILE_FLAGS | OFlags::RDONLY, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            // ELOOP: a link; ENXIO: a socket or a FIFO without a writer.
            Err(Errno::LOOP | Errno::NXIO | Errno::OPNOTSUPP) => {
                return Err(not_a_file(&self.child(name)))
            }
            Err(e) => return Err(with_path(&self.child(name), e)),
        };
        let stat = rfs::fstat(&fd).map_err(|e| with_path(&self.child(name), e))?;
        if FileType::from_raw_mode(stat.st_mode as _) != FileType::RegularFile {
            return Err(not_a_file(&self.child(name)));
        }
        Ok(Some((File::from(fd), stat)))
    }

    /// [`Dir::write_replacing`] of `parts` written one after another, so a
    /// large file made of pieces is never copied into one buffer first.
    pub(crate) fn write_replacing_parts(
        &self,
        name: impl AsRef<OsStr>,
        parts: &[&[u8]],
        mode: u32,
        durable: bool,
    ) -> io::Result<()> {
        let name = self.component(name.as_ref())?;
        let target = self.child(name);
        let (temp_name, mut file) = self.create_temp(name, mode)?;
        let written = write_all_parts(&mut file, parts)
            .and_then(|()| if durable { file.sync_all() } else { Ok(()) })
            // The mode is set on the handle so the umask cannot narrow or widen it.
            .and_then(|()| rfs::fchmod(&file, permission_mode(mode)).map_err(Into::into))
            .and_then(|()| {
                // Closed before it gets its name: an executable (the hook)
                // still open for writing fails to start with ETXTBSY.
                drop(file);
                rfs::renameat(&self.fd, &temp_name, &self.fd, name).map_err(Into::into)
            });
        if let Err(e) = written {
            let _ = rfs::unlinkat(&self.fd, &temp_name, AtFlags::empty());
            return Err(with_path(&target, e));
        }
        if durable {
            // Now, or at the end of a request's deferred folder syncs.
            sync_entries(self)?;
        }
        note_write(self);
        Ok(())
    }

    /// Creates `name` with `bytes` only if nothing is there; `false` when
    /// something is. The content is written to a temp file first and
    /// hard-linked into place (`linkat` fails on an existing name, links
    /// included), so a reader never sees the file empty or half-written, even
    /// if the writer dies: a crash leaves at most the temp file, swept later.
    pub fn create_new(&self, name: impl AsRef<OsStr>, bytes: &[u8], mode: u32) -> io::Result<bool> {
        let name = self.component(name.as_ref())?;
        let (temp_name, mut file) = self.create_temp(name, mode)?;
        let written = file
            .write_all(bytes)
            .and_then(|()| rfs::fchmod(&file, permission_mode(mode)).map_err(Into::into));
        drop(file);
        let linked = match written {
            Ok(()) => match rfs::linkat(&self.fd, &temp_name, &self.fd, name, AtFlags::empty()) {
                Ok(()) => Ok(true),
                Err(Errno::EXIST) => Ok(false),
                Err(e) => Err(with_path(&self.child(name), e)),
            },
            Err(e) => Err(with_path(&self.child(name), e)),
        };
        let _ = rfs::unlinkat(&self.fd, &temp_name, AtFlags::empty());
        note_write(self);
        linked
    }

    /// Appends `lines` (each ending in `\n`) to `name`, creating it. A tail
    /// left without its newline by an earlier torn write is terminated first,
    /// and a write that fails part-way is cut back, so the file only ever
    /// grows by whole lines.
    pub fn append_lines(&self, name: impl AsRef<OsStr>, lines: &[u8]) -> io::Result<()> {
        let name = self.component(name.as_ref())?;
        let path = self.child(name);
        let flags = FILE_FLAGS | OFlags::RDWR | OFlags::APPEND | OFlags::CREATE;
        let fd = rfs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o644)).map_err(
            |e| match e {
                Errno::LOOP | Errno::NXIO => not_a_file(&path),
                e => with_path(&path, e),
            },
        )?;
        let stat = rfs::fstat(&fd).map_err(|e| with_path(&path, e))?;
        if FileType::from_raw_mode(stat.st_mode as _) != FileType::RegularFile {
            return Err(not_a_file(&path));
        }
        refuse_hard_linked(&stat, &path)?;
        let len = u64::try_from(stat.st_size).unwrap_or(0);
        let mut last = [0u8; 1];
        let torn = len > 0
            && rustix::io::pread(&fd, &mut last, len - 1).map_err(|e| with_path(&path, e))? == 1
            && last[0] != b'\n';
        let mut bytes = Vec::with_capacity(lines.len() + 1);
        if torn {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(lines);
        let mut file = File::from(fd);
        if let Err(e) = file.write_all(&bytes) {
            // Best effort: a full disk still allows shrinking the file.
            let _ = file.set_len(len);
            return Err(with_path(&path, e));
        }
        Ok(())
    }

    /// Every name in the folder, UTF-8 or not, `.` and `..` left out.
    fn raw_names(&self) -> io::Result<Vec<std::ffi::OsString>> {
        use std::os::unix::ffi::OsStrExt;
        let mut listing = rfs::Dir::read_from(&self.fd).map_err(|e| with_path(&self.path, e))?;
        let mut names = Vec::new();
        while let Some(entry) = listing.read() {
            let entry = entry.map_err(|e| with_path(&self.path, e))?;
            let name = entry.file_name().to_bytes();
            if name != b"." && name != b".." {
                names.push(OsStr::from_bytes(name).to_owned());
            }
        }
        Ok(names)
    }

    /// The names in the folder, `.` and `..` left out.
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        let mut entries = Vec::new();
        self.list(|name, file_type| {
            let kind = match file_type {
                FileType::Unknown => None,
                known => Some(FileKind::of(known)),
            };
            entries.push(Entry {
                name: name.to_owned(),
                kind,
            });
        })?;
        Ok(entries)
    }

    /// The names in the folder, `.` and `..` left out, as [`Dir::entries`]
    /// lists them but in one buffer: a results folder of thousands of names
    /// listed every hundred drained events cost an allocation and a free
    /// per name, most of retention's share of them.
    pub fn names(&self) -> io::Result<Names> {
        let mut names = Names::default();
        self.list(|name, _| names.push(name))?;
        Ok(names)
    }

    /// Hands `keep` each UTF-8 name in the folder (`.` and `..` left out)
    /// and its type as the listing says it.
    fn list(&self, mut keep: impl FnMut(&str, FileType)) -> io::Result<()> {
        let mut keep = |name: &std::ffi::CStr, file_type: FileType| {
            let Ok(name) = name.to_str() else {
                return;
            };
            if name == "." || name == ".." {
                return;
            }
            keep(name, file_type);
        };
        // Linux lists into one buffer for the whole listing: `rfs::Dir`
        // copies each name into a `CString` of its own first, and a
        // results folder of two thousand names is listed every hundred
        // drained events (retention). The folder is opened afresh, as
        // `rfs::Dir` opens it, so that no two listings share an offset.
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let folder = rfs::openat(&self.fd, ".", flags, Mode::empty())
                .map_err(|e| with_path(&self.path, e))?;
            let mut buffer = vec![std::mem::MaybeUninit::uninit(); LISTING_BUFFER_BYTES];
            let mut listing = rfs::RawDir::new(&folder, &mut buffer);
            while let Some(entry) = listing.next() {
                let entry = entry.map_err(|e| with_path(&self.path, e))?;
                keep(entry.file_name(), entry.file_type());
            }
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let mut listing =
                rfs::Dir::read_from(&self.fd).map_err(|e| with_path(&self.path, e))?;
            while let Some(entry) = listing.read() {
                let entry = entry.map_err(|e| with_path(&self.path, e))?;
                keep(entry.file_name(), entry.file_type());
            }
        }
        Ok(())
    }

    /// Renames `from` here to `to` in `dest` (the same folder or another
    /// below the same root), replacing a file there unless `replace` is false.
    /// `Ok(false)`: `from` is gone, or `to` exists and was not replaced.
    pub fn rename(
        &self,
        from: impl AsRef<OsStr>,
        dest: &Dir,
        to: impl AsRef<OsStr>,
        replace: bool,
    ) -> io::Result<bool> {
        let (from, to) = (self.component(from.as_ref())?, dest.component(to.as_ref())?);
        let result = if replace {
            rfs::renameat(&self.fd, from, &dest.fd, to)
        } else {
            rename_noreplace(self, from, dest, to)
        };
        match result {
            Ok(()) => Ok(true),
            Err(Errno::NOENT | Errno::EXIST) => Ok(false),
            Err(e) => Err(with_path(&self.child(from), e)),
        }
    }

    /// Removes the entry `name` (a link itself, never its target); `false`
    /// when it was not there. A folder is refused: see [`Dir::remove_tree`].
    pub fn remove_file(&self, name: impl AsRef<OsStr>) -> io::Result<bool> {
        let name = self.component(name.as_ref())?;
        match rfs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(with_path(&self.child(name), e)),
        }
    }

    /// Removes the folder `name`, now empty (see `remove_tree_at`); absent is fine.
    fn remove_empty_dir(&self, name: &OsStr) -> io::Result<()> {
        match rfs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(with_path(&self.child(name), e)),
        }
    }

    /// Sets the permission bits of the regular file or folder `name` through
    /// its own handle, so a link there is never chmod'ed through.
    pub(crate) fn set_mode(&self, name: impl AsRef<OsStr>, mode: u32) -> io::Result<()> {
        let name = self.component(name.as_ref())?;
        let fd = rfs::openat(&self.fd, name, FILE_FLAGS | OFlags::RDONLY, Mode::empty()).map_err(
            |e| match e {
                Errno::LOOP | Errno::NXIO => not_a_file(&self.child(name)),
                e => with_path(&self.child(name), e),
            },
        )?;
        let stat = rfs::fstat(&fd).map_err(|e| with_path(&self.child(name), e))?;
        match FileType::from_raw_mode(stat.st_mode as _) {
            FileType::RegularFile => refuse_hard_linked(&stat, &self.child(name))?,
            FileType::Directory => {}
            _ => return Err(not_a_file(&self.child(name))),
        }
        if permission_bits(&stat) != mode {
            rfs::fchmod(&fd, permission_mode(mode)).map_err(|e| with_path(&self.child(name), e))?;
        }
        Ok(())
    }

    /// Sets this folder's own permission bits.
    pub(crate) fn set_own_mode(&self, mode: u32) -> io::Result<()> {
        let stat = rfs::fstat(&self.fd).map_err(|e| with_path(&self.path, e))?;
        if permission_bits(&stat) != mode {
            rfs::fchmod(&self.fd, permission_mode(mode)).map_err(|e| with_path(&self.path, e))?;
        }
        Ok(())
    }

    /// Opens (creating) `name` for writing, as a lock file: a regular file
    /// only, never through a link.
    pub fn open_lock_file(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = self.component(name.as_ref())?;
        let flags = FILE_FLAGS | OFlags::WRONLY | OFlags::CREATE;
        let fd = rfs::openat(&self.fd, name, flags, Mode::from_raw_mode(0o644)).map_err(
            |e| match e {
                Errno::LOOP | Errno::NXIO => not_a_file(&self.child(name)),
                e => with_path(&self.child(name), e),
            },
        )?;
        let stat = rfs::fstat(&fd).map_err(|e| with_path(&self.child(name), e))?;
        if FileType::from_raw_mode(stat.st_mode as _) != FileType::RegularFile {
            return Err(not_a_file(&self.child(name)));
        }
        Ok(File::from(fd))
    }

    /// Flushes the folder's entries (a rename) to disk.
    pub fn sync(&self) -> io::Result<()> {
        rfs::fsync(&self.fd).map_err(|e| with_path(&self.path, e))
    }

    /// Creates a fresh temp file for `target` (see [`TempName`]).
    pub(super) fn create_temp(&self, target: &OsStr, mode: u32) -> io::Result<(String, File)> {
        let flags = FILE_FLAGS | OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        loop {
            let name = TempName::next(target).to_string();
            match rfs::openat(
                &self.fd,
                name.as_str(),
                flags,
                permission_mode(mode & 0o600),
            ) {
                Ok(fd) => return Ok((name, File::from(fd))),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(with_path(&self.child(target), e)),
            }
        }
    }

    /// Creates `name` itself for writing, only if nothing is there (a link
    /// at `name` counts: `O_EXCL` never follows one); `None` when something
    /// is. Permission bits `mode & 0o600` until set on the handle.
    pub(super) fn create_exclusive(&self, name: &OsStr, mode: u32) -> io::Result<Option<File>> {
        let name = self.component(name)?;
        let flags = FILE_FLAGS | OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL;
        match rfs::openat(&self.fd, name, flags, permission_mode(mode & 0o600)) {
            Ok(fd) => Ok(Some(File::from(fd))),
            Err(Errno::EXIST) => Ok(None),
            Err(e) => Err(with_path(&self.child(name), e)),
        }
    }

    /// The folder's handle, for the sibling modules' system calls.
    pub(super) fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&self.fd)
    }

    /// [`Dir::create_temp`] for [`Dir::stage`](super::staged): the name is
    /// checked to be one plain component first.
    /// A second handle of this folder (a batch of staged files each carries
    /// one, see [`Dir::stage`]).
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
        })
    }

    pub(super) fn create_temp_for(&self, target: &OsStr, mode: u32) -> io::Result<(String, File)> {
        let target = self.component(target)?;
        self.create_temp(target, mode)
    }
}

/// The [`hard_linked`] error when the regular file `stat` describes has
/// another name.
#[allow(clippy::useless_conversion)]
fn refuse_hard_linked(stat: &Stat, path: &Path) -> io::Result<()> {
    // `st_nlink` is a u16 on macOS, a u64 on Linux.
    let links = u64::from(stat.st_nlink);
    if links > 1 {
        return Err(hard_linked(path, links));
    }
    Ok(())
}

/// `renameat2(RENAME_NOREPLACE)`; where the file system lacks it, a check
/// before a plain rename (racy, but only against another drainer of the
/// same file, which the claim protocol already excludes).
fn rename_noreplace(from_dir: &Dir, from: &OsStr, dest: &Dir, to: &OsStr) -> Result<(), Errno> {
    match rfs::renameat_with(&from_dir.fd, from, &dest.fd, to, RenameFlags::NOREPLACE) {
        Err(Errno::INVAL | Errno::NOSYS) => {}
        other => return other,
    }
    match rfs::statat(&dest.fd, to, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => Err(Errno::EXIST),
        Err(Errno::NOENT) => rfs::renameat(&from_dir.fd, from, &dest.fd, to),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::{FileRead, TrustedRoot, TEMP_MARK};
    use std::os::unix::fs::symlink;

    fn root() -> (tempfile::TempDir, TrustedRoot, Dir) {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        let team = root.create_dir_all(&root.join("forge")).unwrap();
        (dir, root, team)
    }

    #[test]
    fn fifo_link_and_folder_are_not_files_and_never_block() {
        let (dir, _root, team) = root();
        rustix::fs::mkfifoat(team.fd(), "config.json", Mode::from_raw_mode(0o600)).unwrap();
        std::fs::write(dir.path().join("outside.json"), b"{}").unwrap();
        symlink(
            dir.path().join("outside.json"),
            team.path().join("link.json"),
        )
        .unwrap();
        team.create_dir("folder.json").unwrap();
        for name in ["config.json", "link.json", "folder.json"] {
            assert_eq!(team.read(name, 100).unwrap(), FileRead::NotAFile, "{name}");
        }
        assert_eq!(team.read("none.json", 100).unwrap(), FileRead::Missing);
    }

    #[test]
    fn reads_are_capped() {
        let (_dir, _root, team) = root();
        team.write_atomic("a.json", b"12345", 0o644).unwrap();
        assert_eq!(team.read("a.json", 4).unwrap(), FileRead::TooLarge);
        assert_eq!(
            team.read("a.json", 5).unwrap(),
            FileRead::Bytes(b"12345".to_vec())
        );
    }

    #[test]
    fn a_write_replaces_a_link_and_never_writes_through_it() {
        let (dir, _root, team) = root();
        let outside = dir.path().join("outside.json");
        std::fs::write(&outside, b"precious").unwrap();
        symlink(&outside, team.path().join("status.json")).unwrap();
        team.write_atomic("status.json", b"mine", 0o600).unwrap();
        assert_eq!(std::fs::read(&outside).unwrap(), b"precious");
        let meta = team.meta("status.json").unwrap().unwrap();
        assert_eq!((meta.kind, meta.mode), (FileKind::File, 0o600));
        assert_eq!(
            std::fs::read(team.path().join("status.json")).unwrap(),
            b"mine"
        );
    }

    #[test]
    fn lock_files_and_appends_refuse_links() {
        let (dir, _root, team) = root();
        let target = dir.path().join("created-by-link");
        symlink(&target, team.path().join("status.json.lock")).unwrap();
        symlink(&target, team.path().join("journal.jsonl")).unwrap();
        assert!(team.open_lock_file("status.json.lock").is_err());
        assert!(team.append_lines("journal.jsonl", b"{}\n").is_err());
        assert!(!target.exists());
    }

    #[test]
    fn append_terminates_a_torn_tail_first() {
        let (_dir, _root, team) = root();
        team.append_lines("j.jsonl", b"{\"a\":1}\n").unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(team.path().join("j.jsonl"))
            .unwrap()
            .write_all(b"{\"torn\":")
            .unwrap();
        team.append_lines("j.jsonl", b"{\"b\":2}\n").unwrap();
        let text = std::fs::read_to_string(team.path().join("j.jsonl")).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"torn\":\n{\"b\":2}\n");
    }

    #[test]
    fn remove_tree_removes_links_not_their_targets() {
        let (dir, _root, team) = root();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("keep"), b"x").unwrap();
        let sub = team.create_dir("old").unwrap();
        sub.write_atomic("f", b"x", 0o644).unwrap();
        symlink(&outside, sub.path().join("link")).unwrap();
        team.remove_tree("old").unwrap();
        assert!(team.meta("old").unwrap().is_none());
        assert!(outside.join("keep").exists());
    }

    /// Issue 23 item 6: a file that also has a name outside the root (a hard
    /// link an agent made) is never changed in place; a rewrite replaces the
    /// name and leaves the other name's content and mode as they were.
    #[test]
    fn a_hard_linked_file_is_never_changed_through_its_other_name() {
        type Change = fn(&Dir, &str) -> io::Result<()>;
        let in_place: [(&str, Change); 2] = [
            ("append_lines", |dir, name| dir.append_lines(name, b"{}\n")),
            ("set_mode", |dir, name| dir.set_mode(name, 0o755)),
        ];
        let replacing: [(&str, Change); 4] = [
            ("write_atomic", |dir, name| {
                dir.write_atomic(name, b"new", 0o600)
            }),
            ("write_replacing", |dir, name| {
                dir.write_replacing(name, b"new", 0o600, false)
            }),
            ("write_atomic_parts", |dir, name| {
                dir.write_atomic_parts(name, &[b"ne", b"w"], 0o600)
            }),
            ("stage + commit", |dir, name| {
                crate::infrastructure::safe_fs::commit(vec![dir
                    .try_clone()?
                    .stage(name, b"new", 0o600)?])
            }),
        ];
        let changes = in_place
            .iter()
            .map(|c| (c, true))
            .chain(replacing.iter().map(|c| (c, false)));
        for ((what, change), refused) in changes {
            let (dir, _root, team) = root();
            let outside = dir.path().join("outside");
            std::fs::write(&outside, b"precious").unwrap();
            std::fs::set_permissions(
                &outside,
                std::os::unix::fs::PermissionsExt::from_mode(0o644),
            )
            .unwrap();
            std::fs::hard_link(&outside, team.path().join("file")).unwrap();
            let result = change(&team, "file");
            assert_eq!(
                result.as_ref().is_err_and(super::super::is_hard_linked),
                refused,
                "{what}: {result:?}"
            );
            let outside_meta = std::fs::metadata(&outside).unwrap();
            assert_eq!(std::fs::read(&outside).unwrap(), b"precious", "{what}");
            assert_eq!(
                std::os::unix::fs::PermissionsExt::mode(&outside_meta.permissions()) & 0o777,
                0o644,
                "{what}"
            );
            if !refused {
                let inside = team.path().join("file");
                assert_eq!(std::fs::read(&inside).unwrap(), b"new", "{what}");
                assert_eq!(
                    std::os::unix::fs::MetadataExt::nlink(&std::fs::metadata(&inside).unwrap()),
                    1,
                    "{what}"
                );
            }
        }
    }

    #[test]
    fn set_mode_refuses_a_link() {
        let (dir, _root, team) = root();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"x").unwrap();
        std::fs::set_permissions(
            &outside,
            std::os::unix::fs::PermissionsExt::from_mode(0o644),
        )
        .unwrap();
        symlink(&outside, team.path().join("script.sh")).unwrap();
        assert!(team.set_mode("script.sh", 0o755).is_err());
        let mode = std::fs::metadata(&outside).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o644
        );
    }

    #[test]
    fn create_new_publishes_whole_content_once() {
        let (dir, _root, team) = root();
        assert!(team.create_new("a.lock", b"123\n", 0o600).unwrap());
        assert!(!team.create_new("a.lock", b"456\n", 0o600).unwrap());
        assert_eq!(
            team.read("a.lock", 10).unwrap(),
            FileRead::Bytes(b"123\n".to_vec())
        );
        assert_eq!(team.meta("a.lock").unwrap().unwrap().mode, 0o600);
        // A link there counts as taken and is never written through.
        symlink(dir.path().join("target"), team.path().join("b.lock")).unwrap();
        assert!(!team.create_new("b.lock", b"x", 0o600).unwrap());
        assert!(!dir.path().join("target").exists());
        let names: Vec<_> = team
            .entries()
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert!(names.iter().all(|n| !n.contains(TEMP_MARK)), "{names:?}");
    }

    /// A listing longer than one `getdents64` buffer is whole: every
    /// UTF-8 name once, with its kind, `.`, `..` and other names left out;
    /// two listings of one handle, one after the other, each list it all;
    /// and the names in one buffer are the same names.
    #[test]
    fn a_long_listing_is_whole_and_listing_again_lists_it_all() {
        use std::os::unix::ffi::OsStrExt;
        let (dir, _root, team) = root();
        let mut want: Vec<(String, Option<FileKind>)> = (0..3000)
            .map(|i| {
                (
                    format!("{i:05}-{}.claude.json", "x".repeat(40)),
                    Some(FileKind::File),
                )
            })
            .collect();
        for (name, _) in &want {
            std::fs::write(team.path().join(name), b"").unwrap();
        }
        std::fs::create_dir(team.path().join("sub")).unwrap();
        symlink(dir.path().join("nowhere"), team.path().join("link")).unwrap();
        want.push(("sub".into(), Some(FileKind::Dir)));
        want.push(("link".into(), Some(FileKind::Symlink)));
        let not_utf8 = OsStr::from_bytes(b"bad-\xff");
        std::fs::write(team.path().join(not_utf8), b"").unwrap();
        want.sort_by(|a, b| a.0.cmp(&b.0));
        for _ in 0..2 {
            let mut got: Vec<(String, Option<FileKind>)> = team
                .entries()
                .unwrap()
                .into_iter()
                .map(|e| (e.name, e.kind))
                .collect();
            got.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(got, want);
            let listing = team.names().unwrap();
            let mut names: Vec<&str> = listing.iter().collect();
            names.sort_unstable();
            let want: Vec<&str> = want.iter().map(|(name, _)| name.as_str()).collect();
            assert_eq!(names, want);
        }
    }

    #[test]
    fn names_are_single_components() {
        let (dir, _root, team) = root();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        symlink(dir.path().join("outside"), team.path().join("link")).unwrap();
        for name in ["link/x.json", "..", ".", "", "a\0b"] {
            let error = team.write_atomic(name, b"x", 0o644).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{name:?}");
            assert!(team.read(name, 10).is_err(), "{name:?}");
        }
        assert_eq!(
            std::fs::read_dir(dir.path().join("outside"))
                .unwrap()
                .count(),
            0
        );
    }

    #[test]
    fn rename_without_replace_keeps_the_existing_file() {
        let (_dir, _root, team) = root();
        team.write_atomic("a", b"a", 0o644).unwrap();
        team.write_atomic("b", b"b", 0o644).unwrap();
        assert!(!team.rename("a", &team, "b", false).unwrap());
        assert_eq!(team.read("b", 10).unwrap(), FileRead::Bytes(b"b".to_vec()));
        assert!(team.rename("a", &team, "b", true).unwrap());
        assert_eq!(team.read("b", 10).unwrap(), FileRead::Bytes(b"a".to_vec()));
    }
}
