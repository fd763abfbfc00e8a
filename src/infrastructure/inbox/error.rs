//! Why a delivery failed, and whether trying again can help.

use std::io;
use std::path::PathBuf;

use crate::domain::names::NameError;

/// Why a delivery failed.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    /// A team or member name that could leave its directory.
    #[error("invalid {what} name {name:?}: {source}")]
    InvalidName {
        /// `team` or `member`.
        what: &'static str,
        /// The refused name.
        name: String,
        /// What is wrong with it.
        source: NameError,
    },
    /// `teams/<team>` does not exist; a delivery never creates a team.
    #[error("team directory does not exist: {}", .0.display())]
    TeamMissing(PathBuf),
    /// A link, FIFO, folder or socket where the team folder, `inboxes/`, the
    /// inbox or its lock file should be: nothing is opened, followed or written
    /// through it. The message names the path. Retried (as the app retries a
    /// write that fails with `EISDIR`): the path is checked afresh each time,
    /// and the item goes out once a regular inbox is back.
    #[error("refusing to deliver: {0}")]
    Refused(#[source] io::Error),
    /// Another writer held the lock for the whole timeout.
    #[error("File lock timeout: {}", .0.display())]
    LockTimeout(PathBuf),
    /// The inbox does not hold a JSON array; it is left exactly as it is.
    #[error("corrupt inbox {} ({reason}); left untouched, delivery will be retried", path.display())]
    CorruptInbox {
        /// The inbox file.
        path: PathBuf,
        /// `invalid_json: …`, `not_an_array` or `file_too_large`.
        reason: String,
    },
    /// The inbox with the row added would be larger than
    /// [`MAX_INBOX_FILE_BYTES`](super::MAX_INBOX_FILE_BYTES), so this writer
    /// (and the next delivery) could not read it back: nothing is written.
    /// Retried: the app or the member may shorten the inbox.
    #[error(
        "inbox {} would be {size} bytes with this nudge, over the {} byte read cap; \
         not delivered, left untouched, delivery will be retried",
        path.display(),
        super::MAX_INBOX_FILE_BYTES
    )]
    InboxFull {
        /// The inbox file.
        path: PathBuf,
        /// Its size with the row added.
        size: u64,
    },
    /// The row was written but reading the inbox back failed (another writer
    /// replaced it meanwhile); the next attempt finds the row or writes it.
    #[error("nudge written to {} but not read back: {source}", path.display())]
    WrittenUnverified {
        /// The inbox file.
        path: PathBuf,
        /// Why the read back failed.
        source: Box<InboxError>,
    },
    /// Reading or writing failed (full disk, permissions); the message names the path.
    #[error("inbox I/O error: {0}")]
    Io(#[source] io::Error),
    /// Every attempt wrote the row but the re-read did not show it.
    #[error("Failed to verify inbox write: {}", .0.display())]
    VerifyFailed(PathBuf),
}

impl InboxError {
    /// True when a later attempt may succeed (the outbox backs off and retries);
    /// false when the same call will always fail.
    pub(crate) fn is_retryable(&self) -> bool {
        !matches!(self, Self::InvalidName { .. } | Self::TeamMissing(_))
    }
}

/// Errors of the file boundary: a link or non-folder on the way
/// (`NotADirectory`) and a non-regular file (`InvalidData`, see
/// [`crate::infrastructure::safe_fs::not_a_file`]) are refusals; the rest is IO.
impl From<io::Error> for InboxError {
    fn from(error: io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::NotADirectory | io::ErrorKind::InvalidData => Self::Refused(error),
            _ => Self::Io(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::{not_a_file, not_a_folder};
    use std::path::Path;

    #[test]
    fn refusals_and_io_are_retried() {
        let path = Path::new("/teams/forge/inboxes/jack.json");
        for (error, refused) in [
            (not_a_file(path), true),
            (not_a_folder(path.parent().unwrap()), true),
            (io::Error::from(io::ErrorKind::StorageFull), false),
            (io::Error::from(io::ErrorKind::PermissionDenied), false),
        ] {
            let error = InboxError::from(error);
            assert_eq!(matches!(error, InboxError::Refused(_)), refused, "{error}");
            assert!(error.is_retryable(), "{error}");
        }
    }
}
