//! `incoming/` on Unix: opened once without following a link, every file
//! call relative to that handle (openat / renameat2 / unlinkat), so nothing
//! is ever created, renamed or removed through a link.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Payload files are the user's own (the script's `umask 077`).
const FILE_MODE: libc::c_uint = 0o600;

/// Pipe capacity asked for on stdin (Linux's default `pipe-max-size`).
#[cfg(any(target_os = "linux", target_os = "android"))]
const PIPE_BYTES: libc::c_int = 1 << 20;

/// With `SIGXFSZ` ignored, a write past a file size limit fails (`EFBIG`)
/// instead of killing the hook: a limit is a failed write, nothing more.
/// On Linux a stdin pipe is grown to 1 MiB, so the writer hands over a large
/// payload in a few large writes instead of sixteen 64 KiB ones, each a
/// round trip between the two processes (harmless where it fails: stdin
/// is no pipe, or the limit is lower).
pub fn prepare_process() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    // SAFETY: F_SETPIPE_SZ takes an int and only resizes a pipe's buffer.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    unsafe {
        libc::fcntl(libc::STDIN_FILENO, libc::F_SETPIPE_SZ, PIPE_BYTES)
    };
}

/// The open `incoming/` folder of a spool.
pub struct Incoming(OwnedFd);

impl Incoming {
    /// Opens `<spoolRoot>/incoming`; a link there (or anything not a
    /// folder) is an error, never followed. The spool root itself is the
    /// app's configured path, trusted as it is.
    pub fn open(spool_root: &Path) -> io::Result<Incoming> {
        let path = c_string(spool_root.join("incoming").as_os_str().as_bytes())?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: `path` is a valid C string for the duration of the call.
        let fd = unsafe { libc::open(path.as_ptr(), flags) };
        owned(fd).map(Incoming)
    }

    /// Creates `name` exclusively (an existing file or a link there is
    /// `AlreadyExists`, never opened), mode 0600, for writing.
    pub fn create_temp(&self, name: &str) -> io::Result<File> {
        let name = c_string(name.as_bytes())?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: a valid folder handle and C string; the mode is the
        // variadic argument O_CREAT requires.
        let fd = unsafe { libc::openat(self.0.as_raw_fd(), name.as_ptr(), flags, FILE_MODE) };
        owned(fd).map(File::from)
    }

    /// Renames `from` to `to` unless `to` exists (`AlreadyExists`).
    pub fn rename_new(&self, from: &str, to: &str) -> io::Result<()> {
        let (from, to) = (c_string(from.as_bytes())?, c_string(to.as_bytes())?);
        match rename_noreplace(self.0.as_raw_fd(), &from, &to) {
            Err(error) if unsupported(&error) => self.link_then_unlink(&from, &to),
            other => other,
        }
    }

    /// The no-replace rename where the file system has no such rename: a
    /// hard link (which never replaces) and the temp name's removal.
    fn link_then_unlink(&self, from: &CString, to: &CString) -> io::Result<()> {
        let dir = self.0.as_raw_fd();
        // SAFETY: valid folder handle and C strings; flags 0 follows nothing
        // (a link at `from` would be linked itself, and it is our own file).
        check(unsafe { libc::linkat(dir, from.as_ptr(), dir, to.as_ptr(), 0) })?;
        // SAFETY: as above.
        check(unsafe { libc::unlinkat(dir, from.as_ptr(), 0) })
    }

    /// Removes the entry `name` itself (a link is removed, not followed).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        let name = c_string(name.as_bytes())?;
        // SAFETY: a valid folder handle and C string.
        check(unsafe { libc::unlinkat(self.0.as_raw_fd(), name.as_ptr(), 0) })
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn rename_noreplace(dir: libc::c_int, from: &CString, to: &CString) -> io::Result<()> {
    // The raw system call: glibc's renameat2 wrapper would need glibc 2.28.
    // SAFETY: valid folder handle and C strings, as renameat2(2) takes them.
    let result = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            dir,
            from.as_ptr(),
            dir,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    check(if result == 0 { 0 } else { -1 })
}

#[cfg(target_vendor = "apple")]
fn rename_noreplace(dir: libc::c_int, from: &CString, to: &CString) -> io::Result<()> {
    // SAFETY: valid folder handle and C strings, as renameatx_np(2) takes them.
    check(unsafe { libc::renameatx_np(dir, from.as_ptr(), dir, to.as_ptr(), libc::RENAME_EXCL) })
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
fn rename_noreplace(_: libc::c_int, _: &CString, _: &CString) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// A file system or kernel without the no-replace rename.
fn unsupported(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::ENOTSUP)
    )
}

fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::ErrorKind::InvalidInput.into())
}

fn check(result: libc::c_int) -> io::Result<()> {
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a freshly opened descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
