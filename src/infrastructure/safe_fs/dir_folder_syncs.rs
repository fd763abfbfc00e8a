//! Folder syncs deferred to the end of one request
//! ([`with_folder_syncs_deferred`]).
//!
//! A durable replacement ([`Dir::write_atomic`]) syncs the temp file's data,
//! renames it over the target, then syncs the folder so the rename survives a
//! power cut. A request that replaces several files (a member's status and
//! outbox, the team's metrics index) would wait on one folder sync per file.
//! Inside this scope the folder syncs wait for its end instead, and run then
//! once per folder, side by side, before the scope's result is handed back.
//!
//! What holds as before: every file's data is synced before its rename, so
//! each target is, after any crash, its old or its new content; and
//! everything the scope wrote is durable before its caller gets the result.
//! What the scope changes: until its end, a power cut may keep a later
//! rename and lose an earlier one (in another folder, or in the same one:
//! POSIX orders neither). A caller opens the scope only around work whose
//! files are each valid on their own in any such mix, and says why where it
//! opens it. Only this thread's writes are deferred: a write on another
//! thread, or a [`commit`](super::super::commit), syncs its folders at once.
//!
//! [`with_folder_syncs_trailing`] goes one step further for a request whose
//! answer needs its files visible but not yet durable against a power cut:
//! the scope's folder syncs run on a thread of their own after the scope
//! ends, while the answer goes back. They are joined ([`join_trailing`])
//! before any later durable replacement of this process renames anything,
//! and at dispose: no file written later can be durable while an earlier
//! rename is not, so every mix a power cut can leave is one a scope of
//! [`with_folder_syncs_deferred`] could leave too, with the one difference
//! that the caller may have seen the newer files.

use std::cell::RefCell;
use std::io;
use std::sync::Mutex;
use std::thread::JoinHandle;

use super::Dir;
use crate::infrastructure::side_by_side::map_side_by_side;

thread_local! {
    /// The folders whose sync waits for the end of this thread's scope;
    /// `None` outside a scope.
    static DEFERRED: RefCell<Option<Vec<Dir>>> = const { RefCell::new(None) };
}

/// Runs `work` with the folder syncs of its durable replacements deferred to
/// its end (see the module docs), then syncs each folder once. The work's
/// error comes first; a failed folder sync fails work that succeeded. Inside
/// an open scope, `work` joins it: the outer scope syncs.
pub fn with_folder_syncs_deferred<T, E: From<io::Error>>(
    work: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    in_scope(work, Scope::close)
}

/// Runs `work` like [`with_folder_syncs_deferred`], but its folder syncs
/// trail it: they start on a thread of their own when `work` ends and are
/// joined by the next durable replacement ([`join_trailing`]) or at
/// dispose, not waited for here. A failed trailing sync is retried and
/// reported by whoever joins it. Inside an open scope, `work` joins it.
pub fn with_folder_syncs_trailing<T, E: From<io::Error>>(
    work: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    in_scope(work, Scope::trail)
}

/// Runs `work` in a scope of its own that `end` ends (syncing its folders
/// or handing them off), or in the scope already open on this thread. The
/// work's error comes first; a failed end fails work that succeeded.
fn in_scope<T, E: From<io::Error>>(
    work: impl FnOnce() -> Result<T, E>,
    end: impl FnOnce(Scope) -> io::Result<()>,
) -> Result<T, E> {
    if DEFERRED.with(|deferred| deferred.borrow().is_some()) {
        return work();
    }
    let scope = Scope::open();
    let result = work();
    let ended = end(scope);
    match (result, ended) {
        (Ok(value), Ok(())) => Ok(value),
        (Ok(_), Err(error)) => Err(E::from(error)),
        (Err(error), _) => Err(error),
    }
}

/// Folder syncs handed off by ended trailing scopes, maybe still running:
/// each thread answers the folders whose sync failed.
static TRAILING: Mutex<Vec<JoinHandle<Vec<Dir>>>> = Mutex::new(Vec::new());

/// Waits for every trailing folder sync handed off so far (see
/// [`with_folder_syncs_trailing`]). Folders whose sync failed (or whose
/// thread could not run) are synced again here; the first failure is
/// returned. Called before a durable replacement renames anything, and at
/// dispose.
pub fn join_trailing() -> io::Result<()> {
    let handles = std::mem::take(&mut *TRAILING.lock().unwrap_or_else(|p| p.into_inner()));
    let mut result = Ok(());
    for handle in handles {
        // A panicked sync thread (none is expected) left its folders unknown:
        // nothing to retry, and nothing of it is reported as synced.
        let failed = handle.join().unwrap_or_default();
        for dir in failed {
            result = result.and(dir.sync());
        }
    }
    result
}

/// Makes the entries of `dir` (a rename just made) durable: now, or at the
/// end of this thread's [`with_folder_syncs_deferred`] scope.
pub(in crate::infrastructure::safe_fs) fn sync_entries(dir: &Dir) -> io::Result<()> {
    let deferred = DEFERRED.with(|deferred| {
        let mut deferred = deferred.borrow_mut();
        let Some(folders) = deferred.as_mut() else {
            return false;
        };
        if folders.iter().any(|folder| folder.path() == dir.path()) {
            return true;
        }
        // Without a handle of its own the folder is synced now.
        match dir.try_clone() {
            Ok(handle) => {
                folders.push(handle);
                true
            }
            Err(_) => false,
        }
    });
    if deferred {
        Ok(())
    } else {
        dir.sync()
    }
}

/// An open scope of this thread. Dropped without [`Scope::close`] (the work
/// panicked), it still syncs what was deferred, ignoring failures.
struct Scope {
    closed: bool,
}

impl Scope {
    fn open() -> Self {
        DEFERRED.with(|deferred| *deferred.borrow_mut() = Some(Vec::new()));
        Self { closed: false }
    }

    /// Ends the scope and hands its folders to a thread that syncs them,
    /// side by side, for [`join_trailing`] to wait for. Without a thread
    /// they are synced now, and a failure is returned.
    fn trail(mut self) -> io::Result<()> {
        self.closed = true;
        let folders = take();
        if folders.is_empty() {
            return Ok(());
        }
        // Shared with the thread so that, if none can be started, the
        // folders are still here to sync now.
        let handed = std::sync::Arc::new(Mutex::new(Some(folders)));
        let for_thread = handed.clone();
        let spawned = std::thread::Builder::new()
            .name("mws-folder-sync".into())
            .spawn(move || {
                let folders = for_thread
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take()
                    .unwrap_or_default();
                let results = map_side_by_side(&folders, folders.len(), Dir::sync);
                folders
                    .into_iter()
                    .zip(results)
                    .filter_map(|(dir, synced)| synced.is_err().then_some(dir))
                    .collect()
            });
        match spawned {
            Ok(handle) => {
                TRAILING
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(handle);
                Ok(())
            }
            Err(_) => {
                let folders = handed.lock().unwrap_or_else(|p| p.into_inner()).take();
                sync_all(folders.unwrap_or_default())
            }
        }
    }

    /// Ends the scope and syncs every deferred folder, side by side.
    fn close(mut self) -> io::Result<()> {
        self.closed = true;
        sync_all(take())
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if !self.closed {
            let _ = sync_all(take());
        }
    }
}

fn take() -> Vec<Dir> {
    DEFERRED
        .with(|deferred| deferred.borrow_mut().take())
        .unwrap_or_default()
}

fn sync_all(folders: Vec<Dir>) -> io::Result<()> {
    map_side_by_side(&folders, folders.len(), Dir::sync)
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::TrustedRoot;

    /// The folders waiting in this thread's scope.
    fn waiting() -> Option<Vec<std::path::PathBuf>> {
        DEFERRED.with(|deferred| {
            deferred
                .borrow()
                .as_ref()
                .map(|folders| folders.iter().map(|f| f.path().to_path_buf()).collect())
        })
    }

    #[test]
    fn a_scope_defers_each_folder_once_and_ends_with_none_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        let written: io::Result<()> = with_folder_syncs_deferred(|| {
            root.write_atomic(&a.join("status.json"), b"s")?;
            root.write_atomic(&a.join("outbox.json"), b"o")?;
            root.write_atomic(&b.join("metrics.json"), b"m")?;
            // Nested: joins this scope.
            with_folder_syncs_deferred(|| root.write_atomic(&b.join("x.json"), b"x"))?;
            assert_eq!(waiting(), Some(vec![a.clone(), b.clone()]));
            Ok(())
        });
        written.unwrap();
        assert_eq!(waiting(), None);
        for (path, content) in [
            ("a/status.json", "s"),
            ("a/outbox.json", "o"),
            ("b/x.json", "x"),
        ] {
            assert_eq!(
                std::fs::read_to_string(tmp.path().join(path)).unwrap(),
                content
            );
        }
    }

    #[test]
    fn outside_a_scope_nothing_waits_and_a_failed_work_keeps_its_error() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        root.write_atomic(&tmp.path().join("a/s.json"), b"s")
            .unwrap();
        assert_eq!(waiting(), None);
        let failed: io::Result<()> = with_folder_syncs_deferred(|| {
            root.write_atomic(&tmp.path().join("a/s.json"), b"new")?;
            Err(io::Error::other("later step failed"))
        });
        assert_eq!(failed.unwrap_err().to_string(), "later step failed");
        assert_eq!(waiting(), None);
        assert_eq!(
            std::fs::read_to_string(tmp.path().join("a/s.json")).unwrap(),
            "new"
        );
    }

    #[test]
    fn a_trailing_scope_hands_its_folders_off_and_a_join_waits_for_them() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        let cases: [(&str, io::Result<()>); 2] = [
            ("a", Ok(())),
            ("b", Err(io::Error::other("later step failed"))),
        ];
        for (folder, outcome) in cases {
            let file = tmp.path().join(folder).join("status.json");
            let expected = outcome.as_ref().map_err(ToString::to_string).cloned();
            let result: io::Result<()> = with_folder_syncs_trailing(|| {
                root.write_atomic(&file, folder.as_bytes())?;
                assert_eq!(waiting(), Some(vec![tmp.path().join(folder)]));
                outcome
            });
            // The work's own outcome; the file is in place, no scope open.
            assert_eq!(result.map_err(|e| e.to_string()), expected);
            assert_eq!(waiting(), None);
            assert_eq!(std::fs::read_to_string(&file).unwrap(), folder);
            // The next durable write joins the handed-off syncs first.
            root.write_atomic(&tmp.path().join(folder).join("next.json"), b"n")
                .unwrap();
            join_trailing().unwrap();
            assert!(TRAILING.lock().unwrap().is_empty());
        }
    }

    #[test]
    fn a_panicking_work_leaves_no_scope_open() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _: io::Result<()> = with_folder_syncs_deferred(|| {
                root.write_atomic(&tmp.path().join("a/s.json"), b"s")?;
                panic!("work panicked");
            });
        }));
        assert!(panicked.is_err());
        assert_eq!(waiting(), None);
    }
}
