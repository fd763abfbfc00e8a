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
    inotify: std::os::fd::OwnedFd,
}

#[cfg(target_os = "linux")]
impl DirWatch {
    /// Watches `dir`.
    pub fn new(dir: &Dir) -> io::Result<Self> {
        use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
        use std::os::fd::{AsFd, AsRawFd};
        let inotify = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
            .map_err(|e| super::with_path(dir.path(), e))?;
        let flags = WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF;
        let fd = dir.fd().as_fd().as_raw_fd();
        inotify::add_watch(&inotify, format!("/proc/self/fd/{fd}"), flags)
            .map_err(|e| super::with_path(dir.path(), e))?;
        Ok(Self { inotify })
    }

    /// Everything noticed since the last drain (never blocks).
    pub fn drain(&mut self) -> Changes {
        use rustix::fs::inotify::{ReadFlags, Reader};
        use rustix::io::Errno;
        use std::mem::MaybeUninit;
        let lost_flags = ReadFlags::QUEUE_OVERFLOW
            | ReadFlags::IGNORED
            | ReadFlags::UNMOUNT
            | ReadFlags::DELETE_SELF
            | ReadFlags::MOVE_SELF;
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut reader = Reader::new(&self.inotify, &mut buf);
        let mut names = std::collections::BTreeSet::new();
        let mut lost = false;
        loop {
            match reader.next() {
                Ok(event) => {
                    if event.events().intersects(lost_flags) {
                        lost = true;
                        continue;
                    }
                    match event.file_name().map(|n| n.to_str()) {
                        Some(Ok(name)) if names.len() < MAX_NAMES_PER_DRAIN => {
                            names.insert(name.to_string());
                        }
                        // A name that is not UTF-8 is never a task file.
                        Some(Err(_)) => {}
                        // Too many names, or a notice about the folder itself.
                        _ => lost = true,
                    }
                }
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => continue,
                Err(_) => {
                    lost = true;
                    break;
                }
            }
        }
        if lost {
            Changes::Lost
        } else {
            Changes::Names(names.into_iter().collect())
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
}
