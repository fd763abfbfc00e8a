//! A folder's stamps: of an entry, of the folder itself, and of a file
//! read with the stamp its handle had (what a stamp is: `stamp.rs`).

use std::ffi::OsStr;
use std::io::{self, Read};

#[cfg(unix)]
use rustix::fs::{self as rfs, AtFlags, FileType};
#[cfg(unix)]
use rustix::io::Errno;

#[cfg(unix)]
use super::super::stamp::Stamp;
use super::super::stamp::StampedRead;
#[cfg(unix)]
use super::super::FileKind;
use super::super::{with_path, FileRead};
#[cfg(windows)]
use super::stamp_of_file;
use super::Dir;

impl Dir {
    /// What is at `name` and its stamp, without following a link; `None`
    /// when nothing is. (Windows: `dir_windows.rs`.)
    #[cfg(unix)]
    pub fn stamp(&self, name: impl AsRef<OsStr>) -> io::Result<Option<(FileKind, Stamp)>> {
        let name = self.component(name.as_ref())?;
        let path = || self.path().join(name);
        match rfs::statat(self.fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some((
                FileKind::of(FileType::from_raw_mode(stat.st_mode as _)),
                Stamp::of(&stat),
            ))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(with_path(&path(), e)),
        }
    }

    /// The folder's own stamp (its device and inode say which folder it is).
    /// (Windows: `dir_windows.rs`.)
    #[cfg(unix)]
    pub fn own_stamp(&self) -> io::Result<Stamp> {
        rfs::fstat(self.fd())
            .map(|stat| Stamp::of(&stat))
            .map_err(|e| with_path(self.path(), e))
    }

    /// [`Dir::read`] that also returns the file's stamp, taken from the open
    /// handle before reading.
    pub fn read_stamped(&self, name: impl AsRef<OsStr>, max: u64) -> io::Result<StampedRead> {
        let mut bytes = Vec::new();
        let StampedRead { read, stamp } = self.read_stamped_into(name, max, &mut bytes)?;
        // The outcome alone, no longer borrowing `bytes`, which it then owns.
        let read = read.with_bytes(());
        Ok(StampedRead {
            read: read.with_bytes(bytes),
            stamp,
        })
    }

    /// [`Dir::read_stamped`] into `buffer` (emptied first), which keeps its
    /// capacity: a reader of many files allocates once, not once per file.
    pub fn read_stamped_into<'b>(
        &self,
        name: impl AsRef<OsStr>,
        max: u64,
        buffer: &'b mut Vec<u8>,
    ) -> io::Result<StampedRead<&'b [u8]>> {
        let name = name.as_ref();
        buffer.clear();
        #[cfg(unix)]
        let opened = self.open_file_stat(name);
        #[cfg(windows)]
        let opened = self.open_file(name);
        let opened = match opened {
            Ok(Some(opened)) => opened,
            Ok(None) => {
                return Ok(StampedRead {
                    read: FileRead::Missing,
                    stamp: None,
                })
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                return Ok(StampedRead {
                    read: FileRead::NotAFile,
                    stamp: None,
                })
            }
            Err(e) => return Err(e),
        };
        let path = || self.path().join(name);
        #[cfg(unix)]
        let (file, stamp) = (opened.0, Stamp::of(&opened.1));
        #[cfg(windows)]
        let (stamp, file) = (stamp_of_file(&opened, &path())?, opened);
        let within =
            read_capped(file, stamp.len, max, buffer).map_err(|e| with_path(&path(), e))?;
        let read = if within {
            FileRead::Bytes(&buffer[..])
        } else {
            FileRead::TooLarge
        };
        Ok(StampedRead {
            read,
            stamp: Some(stamp),
        })
    }
}

/// Reads `file` (of `len` bytes by its handle) into `buffer` up to one byte
/// past `max`; whether it held at most `max`.
pub(in crate::infrastructure::safe_fs) fn read_capped(
    file: std::fs::File,
    len: u64,
    max: u64,
    buffer: &mut Vec<u8>,
) -> io::Result<bool> {
    // Sized from the handle's stamp: one read fills it, one more sees the end.
    buffer.reserve(len.min(max) as usize + 1);
    file.take(max.saturating_add(1)).read_to_end(buffer)?;
    Ok(buffer.len() as u64 <= max)
}
