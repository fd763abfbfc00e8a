//! `incoming/` on Windows, through std only. What std offers against links:
//! the folder is refused when `symlink_metadata` shows a link or reparse
//! point there when it is opened (a check, not a handle: a link swapped in
//! afterwards is not caught), the temp file is created with `CREATE_NEW`
//! (fails on any existing entry, a link included) and the final name is
//! checked for absence just before the rename.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// Nothing to prepare: Windows has no `SIGXFSZ`.
pub fn prepare_process() {}

/// The `incoming/` folder of a spool.
pub struct Incoming(PathBuf);

impl Incoming {
    /// `<spoolRoot>\incoming`, when it is a folder and not a link.
    pub fn open(spool_root: &Path) -> io::Result<Incoming> {
        let path = spool_root.join("incoming");
        let meta = fs::symlink_metadata(&path)?;
        if !meta.is_dir() || meta.file_type().is_symlink() {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        Ok(Incoming(path))
    }

    /// Creates `name` exclusively, for writing.
    pub fn create_temp(&self, name: &str) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.0.join(name))
    }

    /// Renames `from` to `to` unless `to` exists (`AlreadyExists`).
    pub fn rename_new(&self, from: &str, to: &str) -> io::Result<()> {
        let to = self.0.join(to);
        if fs::symlink_metadata(&to).is_ok() {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        fs::rename(self.0.join(from), to)
    }

    /// Removes the entry `name`.
    pub fn remove(&self, name: &str) -> io::Result<()> {
        fs::remove_file(self.0.join(name))
    }
}
