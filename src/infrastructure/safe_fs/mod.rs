//! The file boundary: the only way the addon touches the Claude root.
//!
//! Agents run as the same OS user and write freely under the Claude root, so
//! everything below the configured roots is untrusted input. The rules hold
//! here, by construction, instead of at each call site:
//!
//! * A [`TrustedRoot`] (`teamsBasePath`, `tasksBasePath`, `<claudeRoot>/projects`)
//!   is trusted as the user set it up, symlinks included. Below it every
//!   component is opened relative to its parent's handle with
//!   `O_NOFOLLOW | O_DIRECTORY` (`openat`, through `rustix`): a link where a
//!   folder should be is never followed, so nothing reached through a link is
//!   read, written, renamed, chmod'ed or deleted. On Linux a way of several
//!   folders is first opened in one `openat2` with `RESOLVE_NO_SYMLINKS |
//!   RESOLVE_BENEATH`, which refuses a link at any step just the same; when
//!   that does not succeed (a gap, a link, a kernel without it) the
//!   components are walked one by one, which gives the answer and the error.
//! * Reads open `O_NONBLOCK | O_NOFOLLOW`, check the handle is a regular file
//!   (a FIFO would block a libuv thread forever) and read at most a cap.
//! * Writes go to a temp file named `.<name>.mws-tmp.<pid>.<n>` beside the
//!   target (created `O_EXCL`), are fsync'd and renamed over the target; a
//!   crash leaves at most that temp file, which [`Dir::sweep_temp_files`]
//!   removes once it is old and its writer is gone.
//! * Many such writes can be made durable together ([`Dir::stage`] then
//!   [`commit`]): one write-back for all, then the renames, then one fsync
//!   per folder; each file is still either old or new after a crash.
//! * A request that replaces several files can defer their folder syncs to
//!   its end ([`with_folder_syncs_deferred`]): one sync per folder, side by
//!   side, before its result is handed back; or let them trail it
//!   ([`with_folder_syncs_trailing`]): they run after it, and the next
//!   durable replacement waits for them first ([`join_trailing`]).
//! * A request can keep the folders it opens for its length
//!   ([`with_folders_kept`]): a second open of one is a `dup` of the first
//!   handle, not a walk from the root again.
//! * [`Stamp`]s and [`DirWatch`] let a reader keep what it parsed until a
//!   file changes.
//! * Appends write whole lines only and first terminate a torn tail, so a
//!   write cut short by a full disk loses at most its own line.
//! * Nothing is changed in place (appended to, chmod'ed) when its handle
//!   says it has more than one hard link ([`hard_linked`]): an agent can link
//!   a file from outside the root to any name below it. Rewrites replace the
//!   name (temp file + rename), so another name of the old file never sees
//!   them.
//!
//! `rustix` rather than `cap-std`: cap-std follows links that stay inside its
//! sandbox, and here no link below a root may be followed at all; rustix gives
//! the exact `openat`/`renameat2`/`unlinkat` calls with no hand-written FFI.
//! Every error names the path it concerns.
//!
//! Windows has the same API with the guarantees Windows allows
//! (`dir_windows.rs`): every component is opened with
//! `FILE_FLAG_OPEN_REPARSE_POINT` and refused when it is a reparse point
//! (symlink, junction), and each open folder keeps a handle that denies
//! delete sharing, so neither it nor a folder above it can be swapped for a
//! link while it is in use. Temp file + rename replaces the target
//! (`MoveFileEx` `REPLACE_EXISTING` semantics); folders are not fsync'd
//! (Windows cannot); POSIX permission bits do not exist there, so modes are
//! not applied and files keep the ACL they inherit from the user's profile.

#[cfg(unix)]
mod dir;
#[cfg(windows)]
#[path = "dir_windows.rs"]
mod dir;
mod kept_folders;
mod kinds;
mod root;
mod spare;
mod staged;
mod stamp;
mod temp;
mod umask;
mod watch;
#[cfg(any(windows, test))]
mod windows_name;

pub use dir::{join_trailing, with_folder_syncs_deferred, with_folder_syncs_trailing, Dir};
pub use kept_folders::{with_folders_kept, KEPT_FOLDERS};
pub use kinds::{Entry, FileKind, FileRead, Meta, Names};
pub use root::TrustedRoot;
pub use staged::{commit, commit_with_companion, sync_staged, sync_with_folders, Staged};
pub use stamp::{Stamp, StampedRead, SETTLE_MARGIN};
pub use temp::{is_temp_name, TEMP_ABANDONED_MS, TEMP_MARK};
pub(crate) use umask::CreationMask;
pub use watch::{Changes, DirWatch};

use std::io;
use std::path::Path;

/// `error` with `path` in its message, keeping its kind (and so its `MWS_IO`
/// mapping) intact.
pub(crate) fn with_path(path: &Path, error: impl Into<io::Error>) -> io::Error {
    let error = error.into();
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// The error for a link or another non-folder where a folder should be.
pub(crate) fn not_a_folder(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotADirectory,
        format!(
            "{}: not a folder (a link below the Claude root is never followed)",
            path.display()
        ),
    )
}

/// The error for a link, FIFO, folder or socket where a regular file should be.
pub(crate) fn not_a_file(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "{}: not a regular file (links, FIFOs and sockets are never opened)",
            path.display()
        ),
    )
}

/// The error for a file with more than one hard link where the addon would
/// change it in place (append to it, chmod it): the other name may be a
/// file outside the root that an agent linked in, so nothing is written
/// through it. Recognized by [`is_hard_linked`]; its kind is `InvalidData`,
/// a refusal like [`not_a_file`].
pub(crate) fn hard_linked(path: &Path, links: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        HardLinked(format!(
            "{}: has {links} hard links (another name may be outside the root); \
             never changed in place",
            path.display()
        )),
    )
}

/// True for the error [`hard_linked`] makes: the caller may move the file
/// aside or replace it (a rename never writes through the other name).
pub fn is_hard_linked(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<HardLinked>())
}

/// The message of a [`hard_linked`] error, and its type.
#[derive(Debug)]
struct HardLinked(String);

impl std::fmt::Display for HardLinked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HardLinked {}

/// Makes a FIFO at `path` (and its folders): the file that would block a
/// reader forever, planted by tests.
#[cfg(all(test, unix))]
pub fn mkfifo(path: &Path) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("folders");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .expect("mkfifo");
}
