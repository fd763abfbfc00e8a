//! Crash-safe file replacement: temp file in the same dir, fsync, rename, fsync dir.
//!
//! A reader sees either the old or the new content, never a torn file, even
//! when the process dies at any point of the write.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use tempfile::{Builder, NamedTempFile};

/// A written and synced temp file that has not replaced its target yet.
pub struct StagedFile {
    temp: NamedTempFile,
}

impl StagedFile {
    /// Renames the temp file over the target and syncs the directory entry.
    pub fn commit(self, target: &Path) -> io::Result<()> {
        refuse_symlink(target)?;
        self.temp.persist(target).map_err(|e| e.error)?;
        sync_dir(target)
    }

    /// Sets the permissions the file will have once committed.
    pub fn set_permissions(&self, permissions: fs::Permissions) -> io::Result<()> {
        self.temp.as_file().set_permissions(permissions)
    }

    /// Leaves the temp file on disk as a crash would (tests only).
    #[cfg(test)]
    pub fn abandon(self) -> std::path::PathBuf {
        self.temp.into_temp_path().keep().unwrap_or_default()
    }
}

/// Writes `bytes` to a hidden temp file beside `target` and fsyncs it.
pub fn stage(target: &Path, bytes: &[u8]) -> io::Result<StagedFile> {
    let dir = parent_dir(target)?;
    fs::create_dir_all(dir)?;
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file");
    let mut temp = Builder::new()
        .prefix(&format!(".{name}.tmp."))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    Ok(StagedFile { temp })
}

/// Atomically replaces `target` with `bytes`.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<()> {
    refuse_symlink(target)?;
    stage(target, bytes)?.commit(target)
}

/// Writes are never followed through a symlink: it could point outside the team dir.
fn refuse_symlink(target: &Path) -> io::Result<()> {
    match fs::symlink_metadata(target) {
        Ok(meta) if meta.file_type().is_symlink() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to write through symlink {}", target.display()),
        )),
        _ => Ok(()),
    }
}

fn parent_dir(target: &Path) -> io::Result<&Path> {
    target
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no parent dir"))
}

fn sync_dir(target: &Path) -> io::Result<()> {
    fs::File::open(parent_dir(target)?)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/status.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
    }

    #[test]
    fn crash_between_temp_write_and_rename_keeps_old_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("status.json");
        write_atomic(&path, b"old").unwrap();
        let leftover = stage(&path, b"new half-done").unwrap().abandon();
        assert!(leftover.exists());
        assert_eq!(fs::read(&path).unwrap(), b"old");
        // The next writer is not disturbed by the leftover temp file.
        write_atomic(&path, b"next").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"next");
    }

    #[cfg(unix)]
    #[test]
    fn does_not_write_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.json");
        fs::write(&outside, b"precious").unwrap();
        let link = dir.path().join("status.json");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        assert!(write_atomic(&link, b"evil").is_err());
        assert_eq!(fs::read(&outside).unwrap(), b"precious");
    }
}
