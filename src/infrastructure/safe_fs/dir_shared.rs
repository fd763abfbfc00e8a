//! The [`Dir`] methods that are the same on every platform: they are built
//! only on the platform's own primitives (`component`, `read_stamped`, `open_file`,
//! `write_replacing`, `meta`, `remove_file`, `remove_empty_dir`). Included by both `dir.rs` (Unix)
//! and `dir_windows.rs` as their child module, so it sees `Dir`'s fields.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

use super::super::kinds::{FileKind, FileRead};
use super::{Dir, MAX_REMOVE_DEPTH};

/// Writes `parts` to `file` one after another.
pub(super) fn write_all_parts(file: &mut impl io::Write, parts: &[&[u8]]) -> io::Result<()> {
    parts.iter().try_for_each(|part| file.write_all(part))
}

impl Dir {
    /// The folder's path (for messages and for callers building child paths).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn child(&self, name: &OsStr) -> PathBuf {
        self.path.join(name)
    }

    /// Reads `name` whole if it is a regular file of at most `max` bytes.
    ///
    /// [`Dir::read_stamped`] without the stamp: the buffer is sized from the
    /// `fstat` that found the file regular, so a read is open, `fstat`, the
    /// reads and close (asking the handle for its size again would cost every
    /// read one more system call).
    pub fn read(&self, name: impl AsRef<OsStr>, max: u64) -> io::Result<FileRead> {
        self.read_stamped(name, max).map(|stamped| stamped.read)
    }

    /// Atomically replaces `name` with `bytes`: a temp file beside it, made
    /// durable, renamed over the target (on Unix created with permission
    /// bits `mode` and followed by an fsync of the folder; Windows has
    /// neither). A link at `name` is replaced, never followed.
    pub fn write_atomic(&self, name: impl AsRef<OsStr>, bytes: &[u8], mode: u32) -> io::Result<()> {
        self.write_replacing(name.as_ref(), bytes, mode, true)
    }

    /// Replaces `name` with `bytes` through a temp file and a rename, so a
    /// reader sees the old content or the new, never a torn file; `durable`
    /// adds what makes it survive a power cut (what [`Dir::write_atomic`]
    /// does), without it for diagnostics that need not.
    pub fn write_replacing(
        &self,
        name: impl AsRef<OsStr>,
        bytes: &[u8],
        mode: u32,
        durable: bool,
    ) -> io::Result<()> {
        if durable {
            // An earlier request's trailing folder syncs first: this rename
            // must not be durable while an earlier one is not.
            crate::infrastructure::safe_fs::join_trailing()?;
        }
        self.write_replacing_parts(name, &[bytes], mode, durable)
    }

    /// [`Dir::write_atomic`] of `parts` written one after another.
    pub fn write_atomic_parts(
        &self,
        name: impl AsRef<OsStr>,
        parts: &[&[u8]],
        mode: u32,
    ) -> io::Result<()> {
        crate::infrastructure::safe_fs::join_trailing()?;
        self.write_replacing_parts(name.as_ref(), parts, mode, true)
    }

    /// The subfolder `name`, created 0700 when missing; a link, file, FIFO
    /// or anything else that is not a folder there is removed first (the
    /// entry itself: what a link points to is never touched). For folders
    /// whose whole content the addon writes (the hook programs' `bin/` and
    /// the folders above it), so an agent's link there is repaired, not
    /// only refused.
    pub(crate) fn create_dir_replacing(&self, name: impl AsRef<OsStr>) -> io::Result<Dir> {
        let name = self.component(name.as_ref())?;
        if self
            .meta(name)?
            .is_some_and(|meta| meta.kind != FileKind::Dir)
        {
            self.remove_file(name)?;
        }
        self.create_dir(name)
    }

    /// Removes `name` and, if it is a folder, everything in it, descending
    /// through handles (links inside are removed, not followed) at most a
    /// few levels deep.
    pub fn remove_tree(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        self.remove_tree_at(self.component(name.as_ref())?, MAX_REMOVE_DEPTH)
    }

    fn remove_tree_at(&self, name: &OsStr, depth: usize) -> io::Result<()> {
        // Almost every entry removed is a file or a link: one unlink, no
        // `lstat` first (retention removes two per drained event). A folder
        // refuses the unlink (EISDIR, EPERM, access denied) and only then
        // is looked at.
        let unlink_failed = match self.remove_file(name) {
            Ok(_) => return Ok(()),
            Err(e) => e,
        };
        match self.meta(name)? {
            None => return Ok(()),
            Some(meta) if meta.kind != FileKind::Dir => return Err(unlink_failed),
            Some(_) => {}
        }
        if depth == 0 {
            return Err(io::Error::other(format!(
                "{}: more than {MAX_REMOVE_DEPTH} folders deep; not removed",
                self.child(name).display()
            )));
        }
        // The subfolder's handle is dropped at the end of this block, before
        // the folder itself is removed (Windows refuses while it is open).
        if let Some(sub) = self.open_dir(name)? {
            for child in sub.raw_names()? {
                sub.remove_tree_at(&child, depth - 1)?;
            }
        }
        self.remove_empty_dir(name)
    }
}
