//! Exclusive locks on a store file: an in-process claim per path plus an
//! advisory `flock` on `<file>.lock`, so two threads and two processes (two app
//! windows) serialize their read-modify-write cycles. The lock file is opened
//! through the file boundary: a link or FIFO planted there is an error, never
//! a file created at the link's target.

use std::collections::HashSet;
use std::fs::{File, TryLockError};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use super::safe_fs::{Dir, FileKind, TrustedRoot};

/// How long a writer waits for the lock before giving up.
const LOCK_TIMEOUT: Duration = Duration::from_secs(5);
const RETRY_EVERY: Duration = Duration::from_millis(10);

/// Paths locked by this process.
struct HeldPaths {
    held: Mutex<HashSet<PathBuf>>,
    released: Condvar,
}

fn held_paths() -> &'static HeldPaths {
    static HELD: OnceLock<HeldPaths> = OnceLock::new();
    HELD.get_or_init(|| HeldPaths {
        held: Mutex::new(HashSet::new()),
        released: Condvar::new(),
    })
}

/// Holds both locks of one store file until dropped.
#[derive(Debug)]
pub(crate) struct StoreLock {
    path: PathBuf,
    file: Option<File>,
}

impl StoreLock {
    /// Locks `target` below `root` (via `<target>.lock`, its folders created),
    /// waiting at most [`LOCK_TIMEOUT`] in all.
    pub(crate) fn acquire(root: &TrustedRoot, target: &Path) -> io::Result<Self> {
        let started = Instant::now();
        claim_in_process(target, started)?;
        let mut lock = Self {
            path: target.to_path_buf(),
            file: None,
        };
        lock.file = Some(lock_file(root, target, started)?);
        Ok(lock)
    }

    /// [`StoreLock::acquire`] of `target`, a file in `dir`, the handle of its
    /// folder the caller opened already: the folder is not walked to again
    /// from the root.
    pub(crate) fn acquire_in(dir: &Dir, target: &Path) -> io::Result<Self> {
        let started = Instant::now();
        claim_in_process(target, started)?;
        let mut lock = Self {
            path: target.to_path_buf(),
            file: None,
        };
        lock.file = Some(lock_file_in(dir, target, started)?);
        Ok(lock)
    }
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        // Closing the file releases the flock before other threads may proceed.
        drop(self.file.take());
        let paths = held_paths();
        let mut held = paths.held.lock().unwrap_or_else(|p| p.into_inner());
        held.remove(&self.path);
        paths.released.notify_all();
    }
}

fn timeout_error(target: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("File lock timeout: {}", target.display()),
    )
}

fn claim_in_process(target: &Path, started: Instant) -> io::Result<()> {
    let paths = held_paths();
    let mut held = paths.held.lock().unwrap_or_else(|p| p.into_inner());
    while held.contains(target) {
        let left = LOCK_TIMEOUT.saturating_sub(started.elapsed());
        if left.is_zero() {
            return Err(timeout_error(target));
        }
        held = paths
            .released
            .wait_timeout(held, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    held.insert(target.to_path_buf());
    Ok(())
}

fn lock_file(root: &TrustedRoot, target: &Path, started: Instant) -> io::Result<File> {
    let Some(dir) = target.parent() else {
        return Err(not_a_store_file(target));
    };
    lock_file_in(&root.create_dir_all(dir)?, target, started)
}

fn not_a_store_file(target: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: not a store file path", target.display()),
    )
}

/// The lock file of `target` in `dir` (its folder), opened and locked.
fn lock_file_in(dir: &Dir, target: &Path, started: Instant) -> io::Result<File> {
    let Some(name) = target.file_name() else {
        return Err(not_a_store_file(target));
    };
    let mut lock_name = name.to_owned();
    lock_name.push(".lock");
    // A lock file holds nothing: a link, FIFO or folder planted in its place
    // is removed (the entry itself, never what a link points to) rather than
    // blocking the store for good.
    if dir
        .meta(&lock_name)?
        .is_some_and(|meta| meta.kind != FileKind::File)
    {
        dir.remove_tree(&lock_name)?;
    }
    let file = dir.open_lock_file(&lock_name)?;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(TryLockError::WouldBlock) if started.elapsed() < LOCK_TIMEOUT => {
                thread::sleep(RETRY_EVERY)
            }
            Err(TryLockError::WouldBlock) => return Err(timeout_error(target)),
            Err(TryLockError::Error(e)) => return Err(super::safe_fs::with_path(target, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_link_fifo_or_folder_in_place_of_the_lock_file_is_replaced_not_followed() {
        for planted in ["dangling_link", "link_to_folder", "fifo", "folder"] {
            let dir = tempfile::tempdir().unwrap();
            let root = TrustedRoot::new(dir.path());
            let lock = dir.path().join("status.json.lock");
            let target = dir.path().join("target");
            match planted {
                "dangling_link" => std::os::unix::fs::symlink(&target, &lock).unwrap(),
                "link_to_folder" => {
                    std::fs::create_dir(&target).unwrap();
                    std::os::unix::fs::symlink(&target, &lock).unwrap()
                }
                "fifo" => rustix::fs::mkfifoat(
                    rustix::fs::CWD,
                    &lock,
                    rustix::fs::Mode::from_raw_mode(0o600),
                )
                .unwrap(),
                _ => std::fs::create_dir_all(lock.join("sub")).unwrap(),
            }
            let held = StoreLock::acquire(&root, &dir.path().join("status.json")).unwrap();
            assert!(
                std::fs::symlink_metadata(&lock).unwrap().is_file(),
                "{planted}"
            );
            assert_eq!(
                target.exists(),
                planted == "link_to_folder",
                "{planted}: nothing created at or removed from the link's target"
            );
            drop(held);
        }
    }

    #[test]
    fn threads_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path());
        let path = dir.path().join("status.json");
        let inside = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (root, path, inside) = (root.clone(), path.clone(), inside.clone());
                thread::spawn(move || {
                    for _ in 0..20 {
                        let _lock = StoreLock::acquire(&root, &path).unwrap();
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        thread::sleep(Duration::from_micros(200));
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}
