//! Change stamps: what `lstat`/`fstat` say about a file's identity and last
//! change, so a reader can keep what it parsed until the file changes.
//!
//! A stamp is the inode (device and number), size, modification time and
//! status-change time (`ctime`), both to the nanosecond. Every write,
//! truncation, `chmod`, link count change and rename sets `ctime` to the file
//! system's clock, and nothing can set it back (`utimensat` moves `mtime`
//! only, and that again sets `ctime`), so an unchanged stamp means an
//! unchanged file, with one exception: two changes within one tick of the
//! file system's clock (a jiffy on Linux, a second on some file systems)
//! leave the same `ctime`. [`Stamp::settled`] says when that can no longer
//! happen: a stamp whose `ctime` lies more than [`SETTLE_MARGIN`] before the
//! moment the file was opened cannot be repeated by a later change.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[cfg(unix)]
use rustix::fs::Stat;

use super::FileRead;

/// How far a stamp's `ctime` must lie before the moment its file was opened
/// for the stamp to be trusted: more than the coarsest timestamp granularity
/// of a common file system (one second) plus clock jitter.
pub const SETTLE_MARGIN: Duration = Duration::from_secs(2);

/// Identity and last change of a file (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Device of the file system.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
    /// Size in bytes.
    pub len: u64,
    /// Last modification, nanoseconds since the epoch.
    pub modified_ns: i128,
    /// Last status change, nanoseconds since the epoch.
    pub changed_ns: i128,
    /// Hard links to the file: a file with more than one can be written
    /// through a name in another folder.
    pub links: u64,
}

impl Stamp {
    #[cfg(unix)]
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    pub(super) fn of(stat: &Stat) -> Self {
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        Self {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            len: u64::try_from(stat.st_size).unwrap_or(0),
            modified_ns: ns(stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            changed_ns: ns(stat.st_ctime as i64, stat.st_ctime_nsec as i64),
            links: stat.st_nlink as u64,
        }
    }

    /// Whether no later change can leave this same stamp: its `ctime` lies
    /// more than [`SETTLE_MARGIN`] before `opened_at`, the clock reading taken
    /// before the file was opened, and the file has a single name.
    pub fn settled(&self, opened_at: SystemTime) -> bool {
        let Ok(opened) = opened_at.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let limit = opened.as_nanos() as i128 - SETTLE_MARGIN.as_nanos() as i128;
        self.links == 1 && self.changed_ns < limit
    }
}

/// A file read with the stamp it had when opened.
#[derive(Debug, PartialEq, Eq)]
pub struct StampedRead<B = Vec<u8>> {
    /// What was read.
    pub read: FileRead<B>,
    /// The stamp from the open handle, taken before reading (so a change
    /// during the read shows as a newer stamp next time); `None` when nothing
    /// was opened.
    pub stamp: Option<Stamp>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::FileKind;
    use crate::infrastructure::safe_fs::TrustedRoot;

    #[test]
    fn a_rewrite_changes_the_stamp_and_only_old_single_link_stamps_are_settled() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TrustedRoot::new(tmp.path())
            .open_dir(tmp.path())
            .unwrap()
            .unwrap();
        std::fs::write(tmp.path().join("a.json"), b"{}").unwrap();
        let (kind, first) = dir.stamp("a.json").unwrap().unwrap();
        assert_eq!(kind, FileKind::File);
        let read = dir.read_stamped("a.json", 10).unwrap();
        assert_eq!(read.read, FileRead::Bytes(b"{}".to_vec()));
        assert_eq!(read.stamp, Some(first));
        // Same size, same content length, rewritten in place: ctime moves.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(tmp.path().join("a.json"), b"[]").unwrap();
        let (_, second) = dir.stamp("a.json").unwrap().unwrap();
        assert_ne!(first, second);
        assert!(!second.settled(SystemTime::now()), "just written");
        assert!(second.settled(SystemTime::now() + SETTLE_MARGIN * 2));
        std::fs::hard_link(tmp.path().join("a.json"), tmp.path().join("b")).unwrap();
        let (_, linked) = dir.stamp("a.json").unwrap().unwrap();
        assert!(!linked.settled(SystemTime::now() + SETTLE_MARGIN * 2));
        assert_eq!(dir.stamp("gone").unwrap(), None);
        assert_eq!(
            dir.read_stamped("a.json", 1).unwrap().read,
            FileRead::TooLarge
        );
    }

    /// One buffer read into again and again holds each file's content
    /// alone, whatever the previous read left; a refused or missing file
    /// leaves it empty.
    #[test]
    fn a_reused_buffer_holds_each_file_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = TrustedRoot::new(tmp.path())
            .open_dir(tmp.path())
            .unwrap()
            .unwrap();
        std::fs::write(tmp.path().join("long.json"), b"0123456789").unwrap();
        std::fs::write(tmp.path().join("short.json"), b"ab").unwrap();
        std::fs::write(tmp.path().join("empty.json"), b"").unwrap();
        std::fs::create_dir(tmp.path().join("folder.json")).unwrap();
        #[cfg(unix)]
        crate::infrastructure::safe_fs::mkfifo(&tmp.path().join("fifo.json"));
        let mut buffer = Vec::new();
        let cases: &[(&str, FileRead<&[u8]>)] = &[
            ("long.json", FileRead::Bytes(b"0123456789")),
            ("short.json", FileRead::Bytes(b"ab")),
            ("long.json", FileRead::TooLarge),
            ("empty.json", FileRead::Bytes(b"")),
            ("long.json", FileRead::Bytes(b"0123456789")),
            ("missing.json", FileRead::Missing),
            ("long.json", FileRead::Bytes(b"0123456789")),
            ("folder.json", FileRead::NotAFile),
            #[cfg(unix)]
            ("fifo.json", FileRead::NotAFile),
        ];
        for (i, (name, want)) in cases.iter().enumerate() {
            let max = if i == 2 { 9 } else { 10 };
            let read = dir.read_stamped_into(name, max, &mut buffer).unwrap();
            assert_eq!(&read.read, want, "{i}: {name}");
            assert_eq!(
                read.stamp.is_some(),
                matches!(want, FileRead::Bytes(_) | FileRead::TooLarge),
                "{i}: {name}"
            );
            if !matches!(want, FileRead::Bytes(_) | FileRead::TooLarge) {
                assert!(buffer.is_empty(), "{i}: {name} left {buffer:?}");
            }
        }
    }
}
