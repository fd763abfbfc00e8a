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

use super::safe_fs::TrustedRoot;

/// How long a writer waits for the lock before giving up.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(5);
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
pub struct StoreLock {
    path: PathBuf,
    file: Option<File>,
}

impl StoreLock {
    /// Locks `target` below `root` (via `<target>.lock`, its folders created),
    /// waiting at most [`LOCK_TIMEOUT`] in all.
    pub fn acquire(root: &TrustedRoot, target: &Path) -> io::Result<Self> {
        let started = Instant::now();
        claim_in_process(target, started)?;
        let mut lock = Self {
            path: target.to_path_buf(),
            file: None,
        };
        lock.file = Some(lock_file(root, target, started)?);
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
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a store file path", target.display()),
        ));
    };
    let mut lock_name = name.to_owned();
    lock_name.push(".lock");
    let file = root.create_dir_all(dir)?.open_lock_file(&lock_name)?;
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
    fn a_dangling_lock_link_creates_nothing_at_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path());
        let target = dir.path().join("created-through-link");
        std::os::unix::fs::symlink(&target, dir.path().join("status.json.lock")).unwrap();
        let error = StoreLock::acquire(&root, &dir.path().join("status.json")).unwrap_err();
        assert!(error.to_string().contains("status.json.lock"), "{error}");
        assert!(!target.exists());
        // The in-process claim was released with the failed attempt.
        std::fs::remove_file(dir.path().join("status.json.lock")).unwrap();
        StoreLock::acquire(&root, &dir.path().join("status.json")).unwrap();
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
