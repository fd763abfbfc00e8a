//! What the file boundary reports about names and reads, the same on every
//! platform.

use crate::domain::time::EpochMs;

/// What a name in a folder is (never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link (on Windows: any reparse point, junctions included).
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

/// A name in a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The name (entries whose name is not UTF-8 are skipped by `Dir::entries`).
    pub name: String,
    /// What it is, from the folder listing (`None` where the file system does not say).
    pub kind: Option<FileKind>,
}

/// The names of a folder listing (see `Dir::names`), in one buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    text: String,
    /// Where each name ends in `text`.
    ends: Vec<usize>,
}

impl Names {
    /// Adds `name` after the others.
    pub(crate) fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    /// The names, in listing order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| &self.text[start..end])
    }
}

/// What `lstat` says of a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// What it is.
    pub kind: FileKind,
    /// Size in bytes.
    pub len: u64,
    /// Last modification, epoch milliseconds.
    pub modified_ms: EpochMs,
    /// Owner (always 0 on Windows, which has no numeric owner).
    pub uid: u32,
    /// Permission bits (`0o7777`). Windows has none: there it is `0o666`,
    /// `0o444` for a read-only file, plus `0o111` for a folder, as Node reports.
    pub mode: u32,
}

/// A file read through the boundary; its content is owned (`Vec<u8>`) or,
/// read into a caller's buffer, borrowed from it (`&[u8]`).
#[derive(Debug, PartialEq, Eq)]
pub enum FileRead<B = Vec<u8>> {
    /// Nothing by that name.
    Missing,
    /// A link, FIFO, folder, socket or device: not opened.
    NotAFile,
    /// A regular file bigger than the cap: not read past it.
    TooLarge,
    /// The whole content.
    Bytes(B),
}

impl<B> FileRead<B> {
    /// The same outcome with the content `bytes` instead.
    pub(super) fn with_bytes<C>(self, bytes: C) -> FileRead<C> {
        match self {
            Self::Missing => FileRead::Missing,
            Self::NotAFile => FileRead::NotAFile,
            Self::TooLarge => FileRead::TooLarge,
            Self::Bytes(_) => FileRead::Bytes(bytes),
        }
    }
}
