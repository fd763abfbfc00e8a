//! Change notices for one open folder, read when the caller asks.
//!
//! On Linux an inotify instance watches the folder itself (through
//! `/proc/self/fd/<fd>`, so the watch lands on the folder that was opened
//! without following links, never on whatever its path names later). The
//! kernel queues a notice inside the very system call that changes an entry,
//! so a caller that drains the queue before reading sees every change made
//! before the drain: nothing is delivered late by a background thread.
//!
//! What inotify cannot see is reported as [`Changes::Lost`]: a queue
//! overflow, the folder itself moved or deleted, the watch dropped. Writes
//! through a hard link in another folder or through a shared mapping are not
//! reported at all; readers cover those by treating multi-link files as
//! unsettled (see [`super::Stamp::settled`]) and by rescanning now and then.
//! Where inotify is not available [`DirWatch::new`] fails and the caller
//! rescans every time.
//!
//! All watches of a process share one inotify instance (the per-user
//! default budget is 128 instances, and every app window or CLI process
//! loads the addon): each [`DirWatch`] is a registration on it with its own
//! queue of names. Whoever drains reads everything the kernel queued and
//! files each notice under the registrations of its watch descriptor, so
//! the guarantee above holds for every watch. Two watches of one folder
//! share the kernel's watch, removed with the last of them; the instance
//! is closed with the last watch. A queue overflow, shared now, makes every
//! watch report [`Changes::Lost`] once (their readers rescan).

use std::io;

use super::dir::Dir;

/// What changed in a watched folder since the last drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    /// The entries named changed (created, written, removed, renamed,
    /// chmod'ed), each named once, in no particular order.
    Names(Vec<String>),
    /// Notices were lost or the folder itself changed: trust nothing.
    Lost,
}

/// Notices cap per drain: more than this in one drain counts as lost (a
/// rescan is cheaper than tracking that many names).
#[cfg(target_os = "linux")]
const MAX_NAMES_PER_DRAIN: usize = 4096;

/// A watch on one open folder.
#[derive(Debug)]
pub struct DirWatch {
    #[cfg(target_os = "linux")]
    hub: std::sync::Arc<hub::Hub>,
    #[cfg(target_os = "linux")]
    id: u64,
}

#[cfg(target_os = "linux")]
impl DirWatch {
    /// Starts noticing changes in `dir` (not its subfolders) until dropped;
    /// [`Self::drain`] returns them.
    pub fn new(dir: &Dir) -> io::Result<Self> {
        use std::os::fd::{AsFd, AsRawFd};
        let hub = hub::Hub::shared().map_err(|e| super::with_path(dir.path(), e))?;
        let fd = dir.fd().as_fd().as_raw_fd();
        let id = hub
            .watch(format!("/proc/self/fd/{fd}"))
            .map_err(|e| super::with_path(dir.path(), e))?;
        Ok(Self { hub, id })
    }

    /// Everything noticed since the last drain (never blocks).
    pub fn drain(&mut self) -> Changes {
        self.hub.drain(self.id)
    }
}

#[cfg(target_os = "linux")]
impl Drop for DirWatch {
    fn drop(&mut self) {
        self.hub.unwatch(self.id);
    }
}

/// The process's one inotify instance and the registrations on it.
#[cfg(target_os = "linux")]
mod hub {
    use std::collections::{BTreeSet, HashMap};
    use std::io;
    use std::os::fd::OwnedFd;
    use std::sync::{Arc, Mutex, MutexGuard, Weak};

    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, Reader, WatchFlags};
    use rustix::io::Errno;

    use super::{Changes, MAX_NAMES_PER_DRAIN};

    /// The live instance, if any watch holds it.
    static SHARED: Mutex<Weak<Hub>> = Mutex::new(Weak::new());

    /// One inotify instance shared by every [`super::DirWatch`].
    #[derive(Debug)]
    pub(super) struct Hub {
        fd: OwnedFd,
        state: Mutex<State>,
    }

    #[derive(Debug, Default)]
    struct State {
        /// Registrations by kernel watch descriptor.
        by_wd: HashMap<i32, Vec<u64>>,
        queues: HashMap<u64, Queue>,
        next_id: u64,
    }

    /// What one registration was told since its last drain.
    #[derive(Debug)]
    struct Queue {
        wd: i32,
        names: BTreeSet<String>,
        lost: bool,
    }

    fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex.lock().unwrap_or_else(|p| p.into_inner())
    }

    impl Hub {
        /// The process's instance, created when no watch holds one.
        pub(super) fn shared() -> io::Result<Arc<Self>> {
            let mut shared = lock(&SHARED);
            if let Some(hub) = shared.upgrade() {
                return Ok(hub);
            }
            let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
            let hub = Arc::new(Self {
                fd,
                state: Mutex::default(),
            });
            *shared = Arc::downgrade(&hub);
            Ok(hub)
        }

        /// Registers a watch on the folder at `path`; its id.
        pub(super) fn watch(&self, path: String) -> io::Result<u64> {
            let flags = WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MODIFY
                | WatchFlags::ATTRIB
                | WatchFlags::CLOSE_WRITE
                | WatchFlags::MOVED_FROM
                | WatchFlags::MOVED_TO
                | WatchFlags::DELETE_SELF
                | WatchFlags::MOVE_SELF;
            let mut state = lock(&self.state);
            // Notices queued before this watch belong to the others.
            self.pump(&mut state);
            let wd = inotify::add_watch(&self.fd, path, flags)?;
            let id = state.next_id;
            state.next_id += 1;
            state.by_wd.entry(wd).or_default().push(id);
            let queue = Queue {
                wd,
                names: BTreeSet::new(),
                lost: false,
            };
            state.queues.insert(id, queue);
            Ok(id)
        }

        /// Ends registration `id`; the kernel's watch goes with the last
        /// registration on it.
        pub(super) fn unwatch(&self, id: u64) {
            let mut state = lock(&self.state);
            let Some(queue) = state.queues.remove(&id) else {
                return;
            };
            let last = state.by_wd.get_mut(&queue.wd).is_some_and(|ids| {
                ids.retain(|other| *other != id);
                ids.is_empty()
            });
            if last {
                state.by_wd.remove(&queue.wd);
                // EINVAL when the kernel already dropped it (folder gone).
                let _ = inotify::remove_watch(&self.fd, queue.wd);
            }
        }

        /// What registration `id` was told since its last drain.
        pub(super) fn drain(&self, id: u64) -> Changes {
            let mut state = lock(&self.state);
            self.pump(&mut state);
            match state.queues.get_mut(&id) {
                Some(queue) if !queue.lost => {
                    Changes::Names(std::mem::take(&mut queue.names).into_iter().collect())
                }
                Some(queue) => {
                    queue.lost = false;
                    queue.names.clear();
                    Changes::Lost
                }
                None => Changes::Lost,
            }
        }

        /// Reads every queued notice and files it under its registrations.
        fn pump(&self, state: &mut State) {
            use std::mem::MaybeUninit;
            let lost_flags = ReadFlags::IGNORED
                | ReadFlags::UNMOUNT
                | ReadFlags::DELETE_SELF
                | ReadFlags::MOVE_SELF;
            let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
            let mut reader = Reader::new(&self.fd, &mut buf);
            let State { by_wd, queues, .. } = state;
            loop {
                let event = match reader.next() {
                    Ok(event) => event,
                    Err(Errno::AGAIN) => break,
                    Err(Errno::INTR) => continue,
                    Err(_) => {
                        queues.values_mut().for_each(|q| q.lost = true);
                        break;
                    }
                };
                if event.events().contains(ReadFlags::QUEUE_OVERFLOW) {
                    queues.values_mut().for_each(|q| q.lost = true);
                    continue;
                }
                let Some(ids) = by_wd.get(&event.wd()) else {
                    // A watch removed since: nobody is told.
                    continue;
                };
                let lost = event.events().intersects(lost_flags);
                let name = event.file_name().map(|n| n.to_str());
                for id in ids {
                    let Some(queue) = queues.get_mut(id) else {
                        continue;
                    };
                    match &name {
                        _ if lost => queue.lost = true,
                        Some(Ok(name)) if queue.names.len() < MAX_NAMES_PER_DRAIN => {
                            queue.names.insert((*name).to_string());
                        }
                        // A name that is not UTF-8 is never a task file.
                        Some(Err(_)) => {}
                        // Too many names, or a notice about the folder itself.
                        _ => queue.lost = true,
                    }
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl DirWatch {
    /// No watcher on this platform: callers rescan every time.
    pub fn new(dir: &Dir) -> io::Result<Self> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "{}: folder notices are not available here",
                dir.path().display()
            ),
        ))
    }

    /// Never called: [`DirWatch::new`] fails here.
    pub fn drain(&mut self) -> Changes {
        Changes::Lost
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::TrustedRoot;

    #[test]
    fn every_change_before_the_drain_is_reported_and_folder_moves_are_lost() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("tasks");
        std::fs::create_dir(&path).unwrap();
        let dir = TrustedRoot::new(tmp.path())
            .open_dir(&path)
            .unwrap()
            .unwrap();
        let mut watch = DirWatch::new(&dir).unwrap();
        assert_eq!(watch.drain(), Changes::Names(vec![]));
        std::fs::write(path.join("1.json"), b"{}").unwrap();
        std::fs::write(path.join("2.json"), b"{}").unwrap();
        std::fs::rename(path.join("2.json"), path.join("3.json")).unwrap();
        std::fs::remove_file(path.join("1.json")).unwrap();
        assert_eq!(
            watch.drain(),
            Changes::Names(vec!["1.json".into(), "2.json".into(), "3.json".into()])
        );
        // In-place rewrite of the same size.
        std::fs::write(path.join("3.json"), b"[]").unwrap();
        assert_eq!(watch.drain(), Changes::Names(vec!["3.json".into()]));
        std::fs::rename(&path, tmp.path().join("moved")).unwrap();
        assert_eq!(watch.drain(), Changes::Lost);
    }

    /// Watches share the process's instance but each hears only its own
    /// folder, and every watch of one folder hears every change in it,
    /// whichever drains first; dropping one leaves the other's intact.
    #[test]
    fn watches_share_one_instance_and_hear_only_their_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(tmp.path());
        for name in ["a", "b"] {
            std::fs::create_dir(tmp.path().join(name)).unwrap();
        }
        let open = |name: &str| root.open_dir(&tmp.path().join(name)).unwrap().unwrap();
        let (dir_a, dir_b) = (open("a"), open("b"));
        let mut a = DirWatch::new(&dir_a).unwrap();
        let mut a_again = DirWatch::new(&dir_a).unwrap();
        let mut b = DirWatch::new(&dir_b).unwrap();
        assert!(std::sync::Arc::ptr_eq(&a.hub, &b.hub), "one instance");
        std::fs::write(tmp.path().join("a/1.json"), b"{}").unwrap();
        std::fs::write(tmp.path().join("b/2.json"), b"{}").unwrap();
        assert_eq!(b.drain(), Changes::Names(vec!["2.json".into()]));
        assert_eq!(a.drain(), Changes::Names(vec!["1.json".into()]));
        drop(a);
        std::fs::write(tmp.path().join("a/3.json"), b"{}").unwrap();
        assert_eq!(
            a_again.drain(),
            Changes::Names(vec!["1.json".into(), "3.json".into()])
        );
        assert_eq!(b.drain(), Changes::Names(vec![]));
    }
}
