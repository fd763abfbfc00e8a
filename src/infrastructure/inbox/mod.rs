//! Idempotent nudge delivery into a member's inbox,
//! `teams/<team>/inboxes/<member>.json`.
//!
//! The inbox is not an addon store: the desktop app's `TeamInboxWriter` and the
//! agents read and write the same file. So the file keeps the app's format
//! (a bare JSON array, a row as `JSON.stringify(list, null, 2)` writes it, no
//! envelope; the other rows byte for byte) and the app's lock protocol
//! ([`lock`]). A corrupt inbox is never replaced or
//! quarantined: it holds messages the addon does not own, so delivery fails
//! retryably and says why.
//!
//! Every file access goes through [`crate::infrastructure::safe_fs`] below the
//! teams base: a link or file in place of the team folder or `inboxes/`, and a
//! link, FIFO or folder in place of the inbox or its lock, is refused with an
//! error naming the path. Nothing is written through a link, and nothing
//! blocks on a FIFO.
//!
//! Parts: [`row`] the stored row, [`rows`] the stored array, [`raw_json`] the
//! array read as the app's `JSON.parse` reads it, [`lock`] the lock file,
//! [`turn`] the in-process queue, [`error`], [`sink`] the port.

mod error;
mod lock;
mod raw_json;
mod row;
mod rows;
mod sink;
mod turn;

use std::path::PathBuf;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

pub use error::InboxError;
pub use row::{
    with_control_url_line, NudgeRow, NudgeTaskRef, CONTROL_URL_LINE_PREFIX, NUDGE_MESSAGE_KIND,
};
pub use rows::MAX_INBOX_FILE_BYTES;

use crate::application::host::HostRelay;
use crate::domain::names::{normalize_member_name, validate_name};
use crate::infrastructure::safe_fs::{not_a_file, FileKind, TrustedRoot};
use lock::InboxLock;
use rows::{indented_row, read_inbox, write_inbox, Existing};

/// How many times a write is attempted when its re-read does not show the row.
const VERIFY_ATTEMPTS: u32 = 3;

/// The folder of a team that holds the inboxes.
const INBOXES_DIR: &str = "inboxes";

/// Waits and ages of the lock protocol and the verify retries.
///
/// The defaults are the app's numbers; tests shorten them to stay fast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InboxTimings {
    /// Total wait for the in-process turn plus the lock file (default 5 s).
    pub lock_timeout: Duration,
    /// Pause between attempts to create the lock file (default 20 ms).
    pub lock_retry_every: Duration,
    /// A lock file older than this many ms is stale (default 30 000).
    pub stale_lock_age_ms: i64,
    /// Pause before verify attempt `n + 1` is this times `2^n` (default 10 ms).
    pub verify_backoff_base: Duration,
}

impl Default for InboxTimings {
    fn default() -> Self {
        Self {
            lock_timeout: Duration::from_secs(5),
            lock_retry_every: Duration::from_millis(20),
            stale_lock_age_ms: 30_000,
            verify_backoff_base: Duration::from_millis(10),
        }
    }
}

/// What a delivery did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The row was appended and read back.
    Inserted,
    /// A row with the same `messageId`, payload hash and kind was already there;
    /// nothing was written (a retried delivery after a crash lands here).
    AlreadyPresent,
    /// A row with the same `messageId` but another payload hash or kind is
    /// there. It is never overwritten; retrying cannot help.
    PayloadConflict {
        /// The stored row's `workSyncPayloadHash`, if it has one.
        existing_payload_hash: Option<String>,
        /// The stored row's `messageKind`, if it has one.
        existing_message_kind: Option<String>,
    },
}

#[cfg(test)]
/// The app's wording for a [`DeliveryOutcome::PayloadConflict`].
fn payload_conflict_message(message_id: &str) -> String {
    format!("Inbox messageId collision for immutable payload: {message_id}")
}

/// Writes nudge rows into `teams/<team>/inboxes/<member>.json`.
#[derive(Debug, Clone)]
pub struct InboxWriter {
    teams: TrustedRoot,
    timings: InboxTimings,
    /// The app's control API URL, named in a line at the end of every
    /// delivered text (the payload and its hash stay as planned).
    control_url: Option<String>,
    /// Asked per delivery for the app's `resolveControlUrl`, which replaces
    /// `control_url` when the app has one.
    host: Option<Arc<HostRelay>>,
}

impl InboxWriter {
    /// A writer for the teams under `teams_base`, with the default timings.
    pub fn new(teams_base: PathBuf) -> Self {
        Self {
            teams: TrustedRoot::new(teams_base),
            timings: InboxTimings::default(),
            control_url: None,
            host: None,
        }
    }

    /// The same writer naming `control_url` in every text it delivers.
    pub fn with_control_url(mut self, control_url: Option<String>) -> Self {
        self.control_url = control_url;
        self
    }

    /// The same writer asking `host` for the control URL of each delivery.
    pub(crate) fn with_host(mut self, host: Arc<HostRelay>) -> Self {
        self.host = Some(host);
        self
    }

    #[cfg(test)]
    /// The same writer with other timings.
    pub(crate) fn with_timings(mut self, timings: InboxTimings) -> Self {
        self.timings = timings;
        self
    }

    /// `teams/<team>/inboxes/<normalized member>.json`, after checking both names.
    pub(crate) fn inbox_path(&self, team: &str, member: &str) -> Result<PathBuf, InboxError> {
        for (what, name) in [("team", team), ("member", member)] {
            validate_name(name).map_err(|source| InboxError::InvalidName {
                what,
                name: name.to_string(),
                source,
            })?;
        }
        Ok(self
            .teams
            .join(team)
            .join(INBOXES_DIR)
            .join(inbox_name(member)))
    }

    /// Appends `row` to the member's inbox unless a row with its `messageId` is
    /// already there. `now_ms` is the wall-clock time of the call: it is written
    /// into the lock file and ages other writers' locks.
    pub fn deliver(
        &self,
        team: &str,
        member: &str,
        row: &NudgeRow,
        now_ms: i64,
    ) -> Result<DeliveryOutcome, InboxError> {
        let path = self.inbox_path(team, member)?;
        let name = inbox_name(member);
        let team_path = self.teams.join(team);
        let team_dir = self
            .teams
            .open_dir(&team_path)?
            .ok_or(InboxError::TeamMissing(team_path))?;
        let inboxes = team_dir.create_dir(INBOXES_DIR)?;
        // Refused before taking the lock: waiting cannot turn a link or a FIFO
        // into an inbox. Reads under the lock refuse one swapped in meanwhile.
        if inboxes
            .meta(&name)?
            .is_some_and(|meta| meta.kind != FileKind::File)
        {
            return Err(InboxError::Refused(not_a_file(&path)));
        }
        let _lock = InboxLock::acquire(&inboxes, &name, now_ms, &self.timings)?;
        let row_text = indented_row(row);
        let mut written = false;
        for attempt in 0..VERIFY_ATTEMPTS {
            let stored = match read_inbox(&inboxes, &name, row) {
                Ok(stored) => stored,
                // Said as it is: the row may be there, the file is not "left untouched".
                Err(e) if written => {
                    return Err(InboxError::WrittenUnverified {
                        path,
                        source: Box::new(e),
                    })
                }
                Err(e) => return Err(e),
            };
            match stored.existing() {
                Some(Existing::Same) if written => return Ok(DeliveryOutcome::Inserted),
                Some(Existing::Same) => return Ok(DeliveryOutcome::AlreadyPresent),
                Some(Existing::Conflict {
                    payload_hash,
                    message_kind,
                }) => {
                    return Ok(DeliveryOutcome::PayloadConflict {
                        existing_payload_hash: payload_hash.clone(),
                        existing_message_kind: message_kind.clone(),
                    })
                }
                None => {}
            }
            write_inbox(&inboxes, &name, &stored.with_row(&row_text))?;
            written = true;
            // One copy of the file in memory at a time.
            drop(stored);
            if read_inbox(&inboxes, &name, row)
                .is_ok_and(|stored| stored.existing() == Some(&Existing::Same))
            {
                return Ok(DeliveryOutcome::Inserted);
            }
            if attempt + 1 < VERIFY_ATTEMPTS {
                thread::sleep(self.timings.verify_backoff_base * 2u32.pow(attempt));
            }
        }
        Err(InboxError::VerifyFailed(path))
    }
}

/// `<normalized member>.json` (the name was checked by [`InboxWriter::inbox_path`]).
fn inbox_name(member: &str) -> String {
    format!("{}.json", normalize_member_name(member))
}

#[cfg(test)]
mod tests;
