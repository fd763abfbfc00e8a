//! An open folder below a trusted root and the operations inside it (Windows).
//!
//! Windows has no `openat`, so a name is joined to the folder's path. Two
//! rules keep that path the one that was checked:
//!
//! * Every component is opened with `FILE_FLAG_OPEN_REPARSE_POINT`, which
//!   opens a symlink or junction itself instead of its target, and is refused
//!   when its attributes say reparse point (or not the expected kind).
//! * Every open folder keeps a handle that shares read and write but not
//!   delete, and keeps its parent's such handle alive. Renaming or deleting a
//!   folder needs delete access, so while a `Dir` is in use neither it nor any
//!   folder above it up to the root can be swapped for a link. (Another
//!   program removing such a folder meanwhile gets a sharing violation and
//!   retries, as Node's `fs.rm` does.)
//!
//! What Windows lacks is documented where it matters: no folder fsync, no
//! permission bits (modes are not applied; files keep the ACL they inherit),
//! no FIFOs on disk (the device names that would reach a device, such as
//! `CON` or `NUL`, are refused as names instead).

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use windows_sys::Win32::Storage::FileSystem::{
    FileBasicInfo, GetFileInformationByHandle, GetFileInformationByHandleEx, GetFileType,
    MoveFileExW, BY_HANDLE_FILE_INFORMATION, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_READONLY,
    FILE_ATTRIBUTE_REPARSE_POINT, FILE_BASIC_INFO, FILE_FLAG_BACKUP_SEMANTICS,
    FILE_FLAG_OPEN_REPARSE_POINT, FILE_LIST_DIRECTORY, FILE_READ_ATTRIBUTES, FILE_SHARE_DELETE,
    FILE_SHARE_READ, FILE_SHARE_WRITE, FILE_TYPE_DISK, SYNCHRONIZE,
};

use super::kinds::{Entry, FileKind, Meta, Names};
use super::stamp::Stamp;
use super::temp::TempName;
use super::windows_name::is_plain_name;
use super::{hard_linked, not_a_file, not_a_folder, with_path};
use crate::infrastructure::clock::epoch_ms;

/// How files are shared while open here: other programs may read, write,
/// rename and delete them, as on Unix (Node opens files the same way).
const SHARE_ALL: u32 = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;
/// How an open folder is shared: never delete, so it cannot be renamed or
/// removed, and replaced by a link, while in use.
const SHARE_PINNED: u32 = FILE_SHARE_READ | FILE_SHARE_WRITE;

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
pub(super) use sweep::note_write;

/// Attempts of a rename or delete that meets a sharing violation (a virus
/// scanner or indexer holding the file for a moment), and the pause between.
const SHARING_ATTEMPTS: usize = 20;
const SHARING_PAUSE: Duration = Duration::from_millis(5);

/// `ERROR_ACCESS_DENIED`, `ERROR_SHARING_VIOLATION`, `ERROR_LOCK_VIOLATION`:
/// what Windows answers while another handle is in the way.
const SHARING_ERRORS: [i32; 3] = [5, 32, 33];

/// The handle that pins an open folder, and its parent's.
#[derive(Debug)]
struct Pin {
    handle: File,
    _parent: Option<Arc<Pin>>,
}

/// An open folder; its path names it for messages and for the path-based
/// calls Windows offers.
#[derive(Debug)]
pub struct Dir {
    pin: Arc<Pin>,
    path: PathBuf,
}

impl Dir {
    /// Opens a configured root, following links: the user set it up.
    pub(super) fn open_trusted(path: &Path) -> io::Result<Option<Self>> {
        let Some(handle) = open_folder_handle(path, FILE_FLAG_BACKUP_SEMANTICS)? else {
            return Ok(None);
        };
        let is_folder = handle.metadata().map_err(|e| with_path(path, e))?.is_dir();
        if !is_folder {
            return Err(not_a_folder(path));
        }
        Ok(Some(Self {
            pin: Arc::new(Pin {
                handle,
                _parent: None,
            }),
            path: path.to_path_buf(),
        }))
    }

    /// `name` as exactly one plain entry of this folder. Beyond what Unix
    /// refuses: `\`, `:` (an alternate data stream), wildcard characters,
    /// a trailing dot or space (Windows strips them, so two names would be
    /// one) and the device names (`CON`, `NUL`, `COM1`, ...).
    pub(super) fn component<'a>(&self, name: &'a OsStr) -> io::Result<&'a OsStr> {
        if !is_plain_name(&name.to_string_lossy()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: {name:?} is not one plain name", self.path.display()),
            ));
        }
        Ok(name)
    }

    /// Always `None`: on Windows every component is opened and checked for
    /// a reparse point on its own ([`Dir::open_dir`]).
    pub(crate) fn open_descendant(&self, _parts: &[&OsStr]) -> Option<Dir> {
        None
    }

    /// The subfolder `name`; `None` when missing; a link or file is an error.
    pub(crate) fn open_dir(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Dir>> {
        let name = self.component(name.as_ref())?;
        let path = self.child(name);
        let flags = FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT;
        let Some(handle) = open_folder_handle(&path, flags)? else {
            return Ok(None);
        };
        let attributes = handle
            .metadata()
            .map_err(|e| with_path(&path, e))?
            .file_attributes();
        if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0
            || attributes & FILE_ATTRIBUTE_DIRECTORY == 0
        {
            return Err(not_a_folder(&path));
        }
        Ok(Some(Dir {
            pin: Arc::new(Pin {
                handle,
                _parent: Some(Arc::clone(&self.pin)),
            }),
            path,
        }))
    }

    /// The subfolder `name`, created when missing (it inherits the parent's
    /// ACL: Windows has no 0700).
    pub fn create_dir(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let name = self.component(name.as_ref())?;
        if let Some(dir) = self.open_dir(name)? {
            return Ok(dir);
        }
        // `CreateDirectoryW` fails on any existing name, a link included.
        match fs::create_dir(self.child(name)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(with_path(&self.child(name), e)),
        }
        self.open_dir(name)?
            .ok_or_else(|| with_path(&self.child(name), io::Error::from(io::ErrorKind::NotFound)))
    }

    /// What is at `name`, without following a link.
    pub fn meta(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Meta>> {
        let name = self.component(name.as_ref())?;
        match fs::symlink_metadata(self.child(name)) {
            Ok(meta) => Ok(Some(meta_of(&meta))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(with_path(&self.child(name), e)),
        }
    }

    /// [`Dir::open_file`] with what the opened handle says of the file.
    pub(crate) fn open_file_meta(
        &self,
        name: impl AsRef<OsStr>,
    ) -> io::Result<Option<(File, Meta)>> {
        let Some(file) = self.open_file(name.as_ref())? else {
            return Ok(None);
        };
        let meta = file
            .metadata()
            .map_err(|e| with_path(&self.child(name.as_ref()), e))?;
        Ok(Some((file, meta_of(&meta))))
    }

    /// Opens `name` for reading if it is a regular file.
    pub(crate) fn open_file(&self, name: impl AsRef<OsStr>) -> io::Result<Option<File>> {
        let name = self.component(name.as_ref())?;
        let path = self.child(name);
        // Backup semantics opens a folder too, so it is refused below like a
        // link rather than failing with "access denied".
        let opened = OpenOptions::new()
            .read(true)
            .share_mode(SHARE_ALL)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
            .open(&path);
        let file = match opened {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(with_path(&path, e)),
        };
        regular_file_len(&file, &path)?;
        Ok(Some(file))
    }

    /// [`Dir::write_replacing`] of `parts` written one after another, so a
    /// large file made of pieces is never copied into one buffer first.
    pub(crate) fn write_replacing_parts(
        &self,
        name: impl AsRef<OsStr>,
        parts: &[&[u8]],
        _mode: u32,
        durable: bool,
    ) -> io::Result<()> {
        let name = self.component(name.as_ref())?;
        let target = self.child(name);
        let (temp_name, mut file) = self.create_temp(name)?;
        let temp_path = self.child(OsStr::new(&temp_name));
        let written = write_all_parts(&mut file, parts).and_then(|()| {
            if durable {
                file.sync_all()
            } else {
                Ok(())
            }
        });
        // Closed before the rename: Windows renames an open file only when
        // every handle on it shares delete.
        drop(file);
        // `std::fs::rename` replaces an existing target (POSIX rename
        // semantics where the file system has them, else `MoveFileExW` with
        // `MOVEFILE_REPLACE_EXISTING`), a link there included, never its target.
        let renamed = written.and_then(|()| while_shared(|| fs::rename(&temp_path, &target)));
        if let Err(e) = renamed {
            let _ = fs::remove_file(&temp_path);
            return Err(with_path(&target, e));
        }
        // No folder fsync: Windows has none (a folder handle cannot be
        // flushed); NTFS records the rename in its metadata journal.
        note_write(self);
        Ok(())
    }

    /// Creates `name` with `bytes` only if nothing is there; `false` when
    /// something is. The content is written to a temp file first and
    /// hard-linked into place (`CreateHardLinkW` fails on an existing name,
    /// links included), so a reader never sees the file half-written.
    pub fn create_new(
        &self,
        name: impl AsRef<OsStr>,
        bytes: &[u8],
        _mode: u32,
    ) -> io::Result<bool> {
        let name = self.component(name.as_ref())?;
        let (temp_name, mut file) = self.create_temp(name)?;
        let temp_path = self.child(OsStr::new(&temp_name));
        let written = file.write_all(bytes);
        drop(file);
        let linked = match written {
            Ok(()) => match fs::hard_link(&temp_path, self.child(name)) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(with_path(&self.child(name), e)),
            },
            Err(e) => Err(with_path(&self.child(name), e)),
        };
        let _ = while_shared(|| fs::remove_file(&temp_path));
        note_write(self);
        linked
    }

    /// Appends `lines` (each ending in `\n`) to `name`, creating it. A tail
    /// left without its newline by an earlier torn write is terminated first,
    /// and a write that fails part-way is cut back, so the file only ever
    /// grows by whole lines. Opened for appending only, so concurrent
    /// appenders never overwrite each other.
    pub fn append_lines(&self, name: impl AsRef<OsStr>, lines: &[u8]) -> io::Result<()> {
        let name = self.component(name.as_ref())?;
        let path = self.child(name);
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .share_mode(SHARE_ALL)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(&path)
            .map_err(|e| with_path(&path, e))?;
        let len = regular_file_len(&file, &path)?;
        // nNumberOfLinks of GetFileInformationByHandle, as `st_nlink` on Unix.
        let links = stamp_of_file(&file, &path)?.links;
        if links > 1 {
            return Err(hard_linked(&path, links));
        }
        let mut last = [0u8; 1];
        let torn = len > 0
            && file
                .seek_read(&mut last, len - 1)
                .map_err(|e| with_path(&path, e))?
                == 1
            && last[0] != b'\n';
        let mut bytes = Vec::with_capacity(lines.len() + 1);
        if torn {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(lines);
        if let Err(e) = file.write_all(&bytes) {
            drop(file);
            // Best effort: an append-only handle cannot truncate, so a
            // second one does (a full disk still allows shrinking the file).
            let _ = OpenOptions::new()
                .write(true)
                .share_mode(SHARE_ALL)
                .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
                .open(&path)
                .and_then(|f| match regular_file_len(&f, &path) {
                    Ok(_) => f.set_len(len),
                    Err(e) => Err(e),
                });
            return Err(with_path(&path, e));
        }
        Ok(())
    }

    /// Every name in the folder, UTF-8 or not.
    fn raw_names(&self) -> io::Result<Vec<OsString>> {
        fs::read_dir(&self.path)
            .and_then(|listing| listing.map(|e| e.map(|e| e.file_name())).collect())
            .map_err(|e| with_path(&self.path, e))
    }

    /// The names in the folder, `.` and `..` left out. The kind comes from
    /// the listing itself (`FindNextFileW` reports attributes).
    pub fn entries(&self) -> io::Result<Vec<Entry>> {
        let listing = fs::read_dir(&self.path).map_err(|e| with_path(&self.path, e))?;
        let mut entries = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| with_path(&self.path, e))?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let kind = entry.metadata().ok().map(|meta| meta_of(&meta).kind);
            entries.push(Entry { name, kind });
        }
        Ok(entries)
    }

    /// The names in the folder, as [`Dir::entries`] lists them, in one
    /// buffer (see the Unix `Dir::names`).
    pub fn names(&self) -> io::Result<Names> {
        let listing = fs::read_dir(&self.path).map_err(|e| with_path(&self.path, e))?;
        let mut names = Names::default();
        for entry in listing {
            let entry = entry.map_err(|e| with_path(&self.path, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name);
            }
        }
        Ok(names)
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
        let (source, target) = (self.child(from), dest.child(to));
        let result = if replace {
            while_shared(|| fs::rename(&source, &target))
        } else {
            while_shared(|| move_noreplace(&source, &target))
        };
        match result {
            Ok(()) => Ok(true),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::AlreadyExists
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(with_path(&source, e)),
        }
    }

    /// Removes the entry `name` (a link itself, never its target); `false`
    /// when it was not there. A folder is refused: see [`Dir::remove_tree`].
    pub fn remove_file(&self, name: impl AsRef<OsStr>) -> io::Result<bool> {
        let name = self.component(name.as_ref())?;
        let path = self.child(name);
        let attributes = match fs::symlink_metadata(&path) {
            Ok(meta) => meta.file_attributes(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(with_path(&path, e)),
        };
        let removed = match (
            attributes & FILE_ATTRIBUTE_DIRECTORY != 0,
            attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0,
        ) {
            (true, false) => {
                return Err(with_path(
                    &path,
                    io::Error::new(io::ErrorKind::IsADirectory, "a folder, not removed"),
                ))
            }
            // A folder link or junction: `RemoveDirectoryW` removes the link
            // itself (and only an empty folder, should one appear meanwhile).
            (true, true) => while_shared(|| fs::remove_dir(&path)),
            (false, _) => while_shared(|| fs::remove_file(&path)),
        };
        match removed {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(with_path(&path, e)),
        }
    }

    /// Removes the folder `name`, now empty (see `remove_tree_at`); absent
    /// is fine. Its own pin was dropped by then: a folder cannot be removed
    /// while a handle denies delete sharing.
    fn remove_empty_dir(&self, name: &OsStr) -> io::Result<()> {
        match while_shared(|| fs::remove_dir(self.child(name))) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(with_path(&self.child(name), e)),
        }
    }

    /// Checks that `name` is a regular file or folder, not a link. Windows
    /// has no permission bits, so `mode` is not applied (and nothing is
    /// changed through another hard link of the file).
    pub(crate) fn set_mode(&self, name: impl AsRef<OsStr>, _mode: u32) -> io::Result<()> {
        let name = self.component(name.as_ref())?;
        let path = self.child(name);
        let handle = OpenOptions::new()
            .access_mode(FILE_READ_ATTRIBUTES)
            .share_mode(SHARE_ALL)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
            .open(&path)
            .map_err(|e| with_path(&path, e))?;
        let attributes = handle
            .metadata()
            .map_err(|e| with_path(&path, e))?
            .file_attributes();
        if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
            return Err(not_a_file(&path));
        }
        Ok(())
    }

    /// Windows has no permission bits: nothing to set on the folder itself.
    pub(crate) fn set_own_mode(&self, _mode: u32) -> io::Result<()> {
        Ok(())
    }

    /// Opens (creating) `name` for writing, as a lock file: a regular file
    /// only, never through a link.
    pub fn open_lock_file(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = self.component(name.as_ref())?;
        let path = self.child(name);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .share_mode(SHARE_ALL)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(&path)
            .map_err(|e| with_path(&path, e))?;
        regular_file_len(&file, &path)?;
        Ok(file)
    }

    /// Windows cannot flush a folder's entries: a no-op there (NTFS
    /// records renames in its metadata journal).
    pub fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    /// A second handle of this folder (a batch of staged files each carries
    /// one, see [`Dir::stage`]); it shares this one's pins.
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self {
            pin: Arc::clone(&self.pin),
            path: self.path.clone(),
        })
    }

    /// [`Dir::create_temp`] for [`Dir::stage`](super::staged): the name is
    /// checked to be one plain component first. `mode` is not applied.
    pub(super) fn create_temp_for(&self, target: &OsStr, _mode: u32) -> io::Result<(String, File)> {
        let target = self.component(target)?;
        self.create_temp(target)
    }

    /// What is at `name` and its stamp, without following a link; `None`
    /// when nothing is.
    pub fn stamp(&self, name: impl AsRef<OsStr>) -> io::Result<Option<(FileKind, Stamp)>> {
        let name = self.component(name.as_ref())?;
        let path = self.child(name);
        let opened = OpenOptions::new()
            .access_mode(FILE_READ_ATTRIBUTES)
            .share_mode(SHARE_ALL)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
            .open(&path);
        let handle = match opened {
            Ok(handle) => handle,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(with_path(&path, e)),
        };
        let kind = meta_of(&handle.metadata().map_err(|e| with_path(&path, e))?).kind;
        Ok(Some((kind, stamp_of_file(&handle, &path)?)))
    }

    /// The folder's own stamp (its volume and file index say which folder it is).
    pub fn own_stamp(&self) -> io::Result<Stamp> {
        stamp_of_file(&self.pin.handle, &self.path)
    }

    /// Creates `name` itself for writing, only if nothing is there
    /// (`CREATE_NEW` fails on any existing name, a link included); `None`
    /// when something is.
    pub(super) fn create_exclusive(&self, name: &OsStr, _mode: u32) -> io::Result<Option<File>> {
        let name = self.component(name)?;
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .share_mode(SHARE_ALL)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
            .open(self.child(name));
        match created {
            Ok(file) => Ok(Some(file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(None),
            Err(e) => Err(with_path(&self.child(name), e)),
        }
    }

    /// Creates a fresh temp file for `target` (see [`TempName`]).
    pub(super) fn create_temp(&self, target: &OsStr) -> io::Result<(String, File)> {
        loop {
            let name = TempName::next(target).to_string();
            // `CREATE_NEW` fails on any existing name, a link included.
            let created = OpenOptions::new()
                .write(true)
                .create_new(true)
                .share_mode(SHARE_ALL)
                .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
                .open(self.child(OsStr::new(&name)));
            match created {
                Ok(file) => return Ok((name, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(with_path(&self.child(target), e)),
            }
        }
    }
}

/// The [`Stamp`] of the open `file`: volume serial and file index for the
/// device and inode, `ChangeTime` (NTFS's change time, set by every write,
/// rename and attribute change) for `ctime`, the link count.
pub(super) fn stamp_of_file(file: &File, path: &Path) -> io::Result<Stamp> {
    let handle = file.as_raw_handle();
    // SAFETY: both structs are plain data for which all zeroes is valid.
    let (mut info, mut basic): (BY_HANDLE_FILE_INFORMATION, FILE_BASIC_INFO) =
        unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: `handle` is open for the duration of both calls; each writes
    // at most the size of the struct it is given.
    let queried = unsafe {
        GetFileInformationByHandle(handle, &mut info) != 0
            && GetFileInformationByHandleEx(
                handle,
                FileBasicInfo,
                (&mut basic as *mut FILE_BASIC_INFO).cast(),
                std::mem::size_of::<FILE_BASIC_INFO>() as u32,
            ) != 0
    };
    if !queried {
        return Err(with_path(path, io::Error::last_os_error()));
    }
    let wide = |high: u32, low: u32| (u64::from(high) << 32) | u64::from(low);
    Ok(Stamp {
        dev: u64::from(info.dwVolumeSerialNumber),
        ino: wide(info.nFileIndexHigh, info.nFileIndexLow),
        len: wide(info.nFileSizeHigh, info.nFileSizeLow),
        modified_ns: filetime_ns(basic.LastWriteTime),
        changed_ns: filetime_ns(basic.ChangeTime),
        links: u64::from(info.nNumberOfLinks),
    })
}

/// A FILETIME (100 ns ticks since 1601) as nanoseconds since the Unix epoch.
fn filetime_ns(ticks: i64) -> i128 {
    const TICKS_1601_TO_1970: i128 = 116_444_736_000_000_000;
    (i128::from(ticks) - TICKS_1601_TO_1970) * 100
}

/// A handle on the folder at `path` that denies delete sharing; `None` when
/// nothing is there.
fn open_folder_handle(path: &Path, flags: u32) -> io::Result<Option<File>> {
    let opened = OpenOptions::new()
        .access_mode(FILE_LIST_DIRECTORY | FILE_READ_ATTRIBUTES | SYNCHRONIZE)
        .share_mode(SHARE_PINNED)
        .custom_flags(flags)
        .open(path);
    match opened {
        Ok(handle) => Ok(Some(handle)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotADirectory => Err(not_a_folder(path)),
        Err(e) => Err(with_path(path, e)),
    }
}

/// The length of the open `file` if it is a regular file on disk: not a
/// link or other reparse point, not a folder, not a device or pipe.
fn regular_file_len(file: &File, path: &Path) -> io::Result<u64> {
    // SAFETY: `file` owns a valid handle for the duration of the call;
    // GetFileType only reads its type.
    let file_type = unsafe { GetFileType(file.as_raw_handle()) };
    if file_type != FILE_TYPE_DISK {
        return Err(not_a_file(path));
    }
    let meta = file.metadata().map_err(|e| with_path(path, e))?;
    let attributes = meta.file_attributes();
    if attributes & (FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DIRECTORY) != 0 {
        return Err(not_a_file(path));
    }
    Ok(meta.len())
}

/// [`Meta`] from Windows metadata: any reparse point counts as a link.
fn meta_of(meta: &fs::Metadata) -> Meta {
    let attributes = meta.file_attributes();
    let kind = if attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 {
        FileKind::Symlink
    } else if attributes & FILE_ATTRIBUTE_DIRECTORY != 0 {
        FileKind::Dir
    } else {
        FileKind::File
    };
    let writable = if attributes & FILE_ATTRIBUTE_READONLY != 0 {
        0o444
    } else {
        0o666
    };
    Meta {
        kind,
        len: meta.len(),
        modified_ms: meta.modified().ok().and_then(epoch_ms).unwrap_or(0),
        uid: 0,
        mode: if kind == FileKind::Dir {
            writable | 0o111
        } else {
            writable
        },
    }
}

/// `op`, tried again for a moment while another handle denies the sharing
/// it needs.
fn while_shared(mut op: impl FnMut() -> io::Result<()>) -> io::Result<()> {
    let mut attempt = 1;
    loop {
        match op() {
            Err(e)
                if attempt < SHARING_ATTEMPTS
                    && e.raw_os_error()
                        .is_some_and(|c| SHARING_ERRORS.contains(&c)) =>
            {
                attempt += 1;
                std::thread::sleep(SHARING_PAUSE);
            }
            other => return other,
        }
    }
}

/// `MoveFileExW` without `MOVEFILE_REPLACE_EXISTING`: fails with
/// `AlreadyExists` when `to` exists, atomically (no check-then-rename race).
fn move_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (from, to) = (wide(from), wide(to));
    // SAFETY: both are NUL-terminated UTF-16 strings that outlive the call.
    if unsafe { MoveFileExW(from.as_ptr(), to.as_ptr(), 0) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `path` as a NUL-terminated UTF-16 string.
fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str()
        .encode_wide()
        .chain(std::iter::once(0))
        .collect()
}
