//! The app's inbox lock: an `O_EXCL` file `<inbox>.json.lock` holding
//! `<pid>\n<epochMs>\n`, broken when its owner is dead or it is too old.
//!
//! Not the `flock` of [`crate::infrastructure::lock`]: the desktop app's
//! `TeamInboxWriter` would not see that. A link, FIFO or folder at the lock
//! path is no lock of this protocol and never goes away by itself, so it is
//! refused at once instead of waited on (and never read: a FIFO would block).

use std::thread;
use std::time::Instant;

use super::error::InboxError;
use super::turn::InProcessClaim;
use super::InboxTimings;
use crate::infrastructure::process::process_alive;
use crate::infrastructure::safe_fs::{not_a_file, Dir, FileRead};

/// Permission bits of a lock file, as the app creates them.
const LOCK_FILE_MODE: u32 = 0o644;
/// Largest lock file read; the protocol's content is about 25 bytes.
const MAX_LOCK_FILE_BYTES: u64 = 1024;

/// Holds `<inbox>.json.lock` (and this process's turn) until dropped.
pub(super) struct InboxLock<'a> {
    inboxes: &'a Dir,
    name: String,
    /// What we wrote into the lock file; release removes only a file that still holds it.
    content: Vec<u8>,
    // Declared last so it is released after the lock file is gone.
    _turn: InProcessClaim,
}

impl<'a> InboxLock<'a> {
    /// Locks inbox `inbox_name` of the folder `inboxes`. `now_ms` is the wall
    /// clock at the call; it goes into the lock file and ages other locks.
    pub(super) fn acquire(
        inboxes: &'a Dir,
        inbox_name: &str,
        now_ms: i64,
        timings: &InboxTimings,
    ) -> Result<Self, InboxError> {
        let started = Instant::now();
        let deadline = started + timings.lock_timeout;
        let inbox_path = inboxes.path().join(inbox_name);
        let timeout = || InboxError::LockTimeout(inbox_path.clone());
        let turn = InProcessClaim::acquire(&inbox_path, deadline).ok_or_else(timeout)?;
        let name = format!("{inbox_name}.lock");
        loop {
            // The injected time advanced by the monotonic time spent waiting.
            let clock_ms = now_ms
                .saturating_add(i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX));
            let content = format!("{}\n{clock_ms}\n", std::process::id()).into_bytes();
            if inboxes.create_new(&name, &content, LOCK_FILE_MODE)? {
                return Ok(Self {
                    inboxes,
                    name,
                    content,
                    _turn: turn,
                });
            }
            let broke = break_if_stale(inboxes, &name, clock_ms, timings.stale_lock_age_ms)?;
            if Instant::now() >= deadline {
                return Err(timeout());
            }
            if !broke {
                let left = deadline.saturating_duration_since(Instant::now());
                thread::sleep(timings.lock_retry_every.min(left));
            }
        }
    }
}

impl Drop for InboxLock<'_> {
    fn drop(&mut self) {
        // If ours was broken as stale and another writer holds the path now,
        // its lock file must survive our release.
        let ours = matches!(
            self.inboxes.read(&self.name, MAX_LOCK_FILE_BYTES),
            Ok(FileRead::Bytes(content)) if content == self.content
        );
        if ours {
            let _ = self.inboxes.remove_file(&self.name);
        }
    }
}

/// Removes the lock file `name` if its owner is dead or it is older than
/// `stale_age_ms`; true when the caller should try to create it again at once.
fn break_if_stale(
    inboxes: &Dir,
    name: &str,
    clock_ms: i64,
    stale_age_ms: i64,
) -> Result<bool, InboxError> {
    let observed = read_lock(inboxes, name)?;
    let (pid, locked_at_ms) = match &observed {
        FileRead::Missing => return Ok(true),
        FileRead::Bytes(content) => parse_lock(content),
        _ => (None, None),
    };
    // A lock file without a time (its creator died mid-write) ages by its mtime.
    let locked_at_ms = match locked_at_ms {
        Some(at) => Some(at),
        None => inboxes.meta(name)?.map(|meta| meta.modified_ms),
    };
    let too_old = locked_at_ms.is_some_and(|at| clock_ms.saturating_sub(at) > stale_age_ms);
    let owner_dead = pid.is_some_and(|pid| !process_alive(pid));
    if !(too_old || owner_dead) {
        return Ok(false);
    }
    // Re-read right before unlinking: if another process broke the stale lock
    // and took the path since we read it, the file differs and stays. (A
    // window between this read and the unlink remains; it needs two breakers
    // of one stale lock racing a third writer.)
    if read_lock(inboxes, name)? == observed {
        inboxes.remove_file(name)?;
    }
    Ok(true)
}

/// The lock file's content; anything but a regular file is refused.
fn read_lock(inboxes: &Dir, name: &str) -> Result<FileRead, InboxError> {
    match inboxes.read(name, MAX_LOCK_FILE_BYTES)? {
        FileRead::NotAFile => Err(InboxError::Refused(not_a_file(&inboxes.path().join(name)))),
        read => Ok(read),
    }
}

/// `<pid>\n<epochMs>\n`; either part may be missing or garbage.
fn parse_lock(content: &[u8]) -> (Option<u32>, Option<i64>) {
    let text = String::from_utf8_lossy(content);
    let mut lines = text.lines().map(str::trim);
    let pid = lines
        .next()
        .and_then(|l| l.parse::<u32>().ok())
        .filter(|&pid| pid > 0);
    let at = lines.next().and_then(|l| l.parse::<i64>().ok());
    (pid, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_content_is_parsed_leniently() {
        for (content, expected) in [
            (&b"123\n1700\n"[..], (Some(123), Some(1700))),
            (b" 123 \r\n 1700 \r\n", (Some(123), Some(1700))),
            (b"123\n", (Some(123), None)),
            (b"0\n1700\n", (None, Some(1700))),
            (b"", (None, None)),
            (b"garbage\nmore", (None, None)),
        ] {
            assert_eq!(
                parse_lock(content),
                expected,
                "{}",
                String::from_utf8_lossy(content)
            );
        }
    }
}
