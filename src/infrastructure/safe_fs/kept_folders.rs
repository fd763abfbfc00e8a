//! Folders opened once per request ([`with_folders_kept`]).
//!
//! A [`TrustedRoot`](super::TrustedRoot) opens every folder it is asked for
//! from the root down: the root by its path, then the way below it without
//! following a link, then closes both when the caller is done. One member's
//! status after a change asks for the same few folders (the member's store
//! folder, the team's indexes, the team and task folders) some twenty times,
//! and those opens and closes were about a tenth of its CPU.
//!
//! Inside this scope the first open of a folder is kept, by its path, and
//! each later open of the same path on this thread gets a second handle of
//! it (one `dup`, no path walk) until the scope ends. What holds as before:
//! every folder was reached without following a link when it was opened, and
//! every file is still opened, read, written and renamed relative to a folder
//! handle without following one. What the scope changes: a folder an agent
//! renames or replaces during the request is still the one the request
//! writes in, as it already was for the span of each single store call; a
//! folder it deletes takes the request's later writes into nothing (a create
//! there fails) instead of seeing the folder made again. The addon itself
//! never renames or removes a folder below a root, and a folder that was
//! missing is never kept, so nothing the scope keeps goes stale through its
//! own work.
//!
//! Bounded: at most [`KEPT_FOLDERS`] handles per scope; past that, folders
//! are opened as outside a scope. Only this thread's opens are kept.

use std::cell::RefCell;
use std::io;
use std::path::Path;

use super::Dir;

/// The most folders one scope keeps open.
pub const KEPT_FOLDERS: usize = 16;

thread_local! {
    /// The folders this thread's scope opened; `None` outside a scope.
    static KEPT: RefCell<Option<Vec<Dir>>> = const { RefCell::new(None) };
}

/// Runs `work` with the folders it opens through a
/// [`TrustedRoot`](super::TrustedRoot) kept for its length (see the module
/// docs), then closes them. Inside an open scope, `work` joins it.
pub fn with_folders_kept<T>(work: impl FnOnce() -> T) -> T {
    let opened = KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        let outer = kept.is_some();
        if !outer {
            *kept = Some(Vec::new());
        }
        !outer
    });
    // Closes the scope it opened even when `work` unwinds.
    struct Close(bool);
    impl Drop for Close {
        fn drop(&mut self) {
            if self.0 {
                KEPT.with(|kept| kept.borrow_mut().take());
            }
        }
    }
    let _close = Close(opened);
    work()
}

/// A second handle of the folder at `path` when this thread's scope keeps
/// it; `None` outside a scope or when it does not.
pub(super) fn kept(path: &Path) -> io::Result<Option<Dir>> {
    KEPT.with(|kept| match &*kept.borrow() {
        Some(folders) => folders
            .iter()
            .find(|dir| dir.path() == path)
            .map(Dir::try_clone)
            .transpose(),
        None => Ok(None),
    })
}

/// Keeps a second handle of `dir` in this thread's scope, if one is open and
/// has room; hands `dir` back either way.
pub(super) fn keep(dir: Dir) -> io::Result<Dir> {
    KEPT.with(|kept| {
        let mut kept = kept.borrow_mut();
        match &mut *kept {
            Some(folders) if folders.len() < KEPT_FOLDERS => {
                folders.push(dir.try_clone()?);
                Ok(dir)
            }
            _ => Ok(dir),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::TrustedRoot;

    fn kept_count() -> Option<usize> {
        KEPT.with(|kept| kept.borrow().as_ref().map(Vec::len))
    }

    /// Inside the scope the second open of a folder is the kept one: it still
    /// leads to the folder first opened after the path was moved away.
    /// (Windows refuses to move a folder that has an open handle.)
    #[cfg(unix)]
    #[test]
    fn a_folder_opened_twice_in_a_scope_is_the_one_first_opened() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        let member = root.join("forge/members/bob");
        root.create_dir_all(&member).unwrap();
        with_folders_kept(|| {
            root.open_dir(&member).unwrap().unwrap();
            std::fs::rename(root.join("forge"), dir.path().join("moved")).unwrap();
            let again = root.open_dir(&member).unwrap().expect("kept");
            again.create_new("marker", b"x", 0o600).unwrap();
        });
        assert!(dir.path().join("moved/members/bob/marker").exists());
        // Outside the scope every open walks the path again.
        assert!(root.open_dir(&member).unwrap().is_none());
    }

    #[test]
    fn outside_a_scope_nothing_is_kept_and_a_missing_folder_never_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        let team = root.join("forge");
        root.create_dir_all(&team).unwrap();
        assert_eq!(kept_count(), None);
        with_folders_kept(|| {
            assert!(root.open_dir(&root.join("absent/x")).unwrap().is_none());
            assert_eq!(kept_count(), Some(0));
            root.open_dir(&team).unwrap().unwrap();
            root.open_dir(&team).unwrap().unwrap();
            assert_eq!(
                kept_count(),
                Some(1),
                "a second open reuses the kept folder"
            );
            // A nested scope joins the outer one.
            with_folders_kept(|| root.open_dir(&team).unwrap().unwrap());
            assert_eq!(kept_count(), Some(1));
        });
        assert_eq!(kept_count(), None);
    }

    #[test]
    fn a_scope_keeps_at_most_its_bound_and_closes_when_work_panics() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        let folders: Vec<_> = (0..KEPT_FOLDERS + 4)
            .map(|i| root.join(format!("f{i}")))
            .collect();
        let unwound = std::panic::catch_unwind(|| {
            with_folders_kept(|| {
                for folder in &folders {
                    root.create_dir_all(folder).unwrap();
                }
                assert_eq!(kept_count(), Some(KEPT_FOLDERS));
                panic!("work fails");
            })
        });
        assert!(unwound.is_err());
        assert_eq!(kept_count(), None);
    }
}
