//! The stored inbox array: read it without trusting it, find a delivered
//! row by its `messageId`, append a row keeping every other byte.
//!
//! The file is never rebuilt from parsed rows: the rows other writers put
//! there are kept byte for byte (a lone surrogate, deep nesting, their own
//! spacing), memory is the file plus a constant however many rows it holds,
//! and the file grows by exactly the added row and its separator.

use super::error::InboxError;
use super::raw_json::{js_string_eq, js_string_lossy, scan, Field, FieldValue, Layout, RowFields};
use super::row::{NudgeRow, NUDGE_MESSAGE_KIND};
use crate::infrastructure::safe_fs::{not_a_file, Dir, FileKind, FileRead};

/// Largest inbox the writer reads, and so the largest it writes: a bigger
/// one is reported as unusable, never truncated or replaced.
pub const MAX_INBOX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// Permission bits of an inbox the addon creates. An existing inbox keeps its
/// own: the file belongs to the app.
const NEW_INBOX_MODE: u32 = 0o600;

/// Longest `workSyncPayloadHash` or `messageKind` of a conflicting row kept
/// in a [`Existing::Conflict`] (an agent can make them as long as the file).
const MAX_REPORTED_CHARS: usize = 200;

/// A stored row that carries the delivered row's `messageId`.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Existing {
    /// Same payload hash and kind: this very nudge, delivered before.
    Same,
    /// Another payload or kind under the same id (each cut at
    /// [`MAX_REPORTED_CHARS`]; `None` when absent or not a string).
    Conflict {
        payload_hash: Option<String>,
        message_kind: Option<String>,
    },
}

/// An inbox as read: its bytes and where a row goes.
pub(super) struct StoredInbox {
    bytes: Vec<u8>,
    /// `None`: no file yet.
    array: Option<ArraySpan>,
    existing: Option<Existing>,
}

/// Where the rows of the stored array are.
#[derive(Clone, Copy)]
struct ArraySpan {
    open: usize,
    close: usize,
    last_row_end: Option<usize>,
}

impl StoredInbox {
    /// The first stored row with `row`'s `messageId` (as the app's `find`).
    pub(super) fn existing(&self) -> Option<&Existing> {
        self.existing.as_ref()
    }

    /// The file's bytes with `row_text` (an [`indented_row`]) appended as the
    /// last row, in the parts to write one after another: the stored bytes
    /// are kept as they are, around it.
    pub(super) fn with_row<'a>(&'a self, row_text: &'a str) -> [&'a [u8]; 5] {
        let bytes = self.bytes.as_slice();
        let row = row_text.as_bytes();
        match self.array {
            None => [b"[\n", row, b"\n]", b"", b""],
            Some(ArraySpan {
                open,
                close,
                last_row_end: None,
            }) => [&bytes[..=open], b"\n", row, b"\n", &bytes[close..]],
            Some(ArraySpan {
                last_row_end: Some(end),
                ..
            }) => [&bytes[..end], b",\n", row, &bytes[end..], b""],
        }
    }
}

/// `row` as `JSON.stringify(row, null, 2)` writes it as an element of the
/// top-level array: every line indented by two more spaces.
pub(super) fn indented_row(row: &NudgeRow) -> String {
    let pretty = serde_json::to_string_pretty(&row.to_json())
        .expect("a JSON object of strings always serializes");
    format!("  {}", pretty.replace('\n', "\n  "))
}

/// Reads inbox `name` in `inboxes` and looks for `row`'s `messageId`; a
/// missing inbox has no rows. A link, FIFO or folder in its place is
/// refused, never opened; a file over the cap, not JSON or not an array is
/// corrupt (left exactly as it is).
pub(super) fn read_inbox(
    inboxes: &Dir,
    name: &str,
    row: &NudgeRow,
) -> Result<StoredInbox, InboxError> {
    let path = inboxes.path().join(name);
    let corrupt = |reason: String| InboxError::CorruptInbox {
        path: path.clone(),
        reason,
    };
    let bytes = match inboxes.read(name, MAX_INBOX_FILE_BYTES)? {
        FileRead::Missing => {
            return Ok(StoredInbox {
                bytes: Vec::new(),
                array: None,
                existing: None,
            })
        }
        FileRead::NotAFile => return Err(InboxError::Refused(not_a_file(&path))),
        FileRead::TooLarge => return Err(corrupt("file_too_large".into())),
        FileRead::Bytes(bytes) => bytes,
    };
    let mut existing = None;
    let layout = scan(&bytes, |fields| {
        if existing.is_none() {
            existing = existing_row(&bytes, fields, row);
        }
    });
    match layout {
        Ok(Layout::Array {
            open,
            close,
            last_row_end,
        }) => Ok(StoredInbox {
            array: Some(ArraySpan {
                open,
                close,
                last_row_end,
            }),
            bytes,
            existing,
        }),
        Ok(Layout::NotAnArray) => Err(corrupt("not_an_array".into())),
        Err(e) => Err(corrupt(format!("invalid_json: {e}"))),
    }
}

/// What a stored row with `fields` is to `row`: `None` unless its
/// `messageId` is the same string.
fn existing_row(bytes: &[u8], fields: &RowFields, row: &NudgeRow) -> Option<Existing> {
    let text = |field| match fields.get(field) {
        Some(FieldValue::Text(range)) => Some(&bytes[range.clone()]),
        _ => None,
    };
    if !text(Field::MessageId).is_some_and(|id| js_string_eq(id, &row.message_id)) {
        return None;
    }
    let payload_hash = text(Field::PayloadHash);
    let message_kind = text(Field::MessageKind);
    if payload_hash.is_some_and(|h| js_string_eq(h, &row.work_sync_payload_hash))
        && message_kind.is_some_and(|k| js_string_eq(k, NUDGE_MESSAGE_KIND))
    {
        return Some(Existing::Same);
    }
    let report = |raw: Option<&[u8]>| raw.map(|raw| js_string_lossy(raw, MAX_REPORTED_CHARS));
    Some(Existing::Conflict {
        payload_hash: report(payload_hash),
        message_kind: report(message_kind),
    })
}

/// Atomically replaces inbox `name` with `parts` written one after another,
/// unless they add up to more than the read cap: an inbox this writer could
/// not read back is never written. A link swapped in meanwhile is replaced,
/// not followed; an existing inbox keeps its permission bits.
pub(super) fn write_inbox(inboxes: &Dir, name: &str, parts: &[&[u8]]) -> Result<(), InboxError> {
    let size: u64 = parts.iter().map(|part| part.len() as u64).sum();
    if size > MAX_INBOX_FILE_BYTES {
        return Err(InboxError::InboxFull {
            path: inboxes.path().join(name),
            size,
        });
    }
    let mode = match inboxes.meta(name)? {
        Some(meta) if meta.kind == FileKind::File => meta.mode,
        _ => NEW_INBOX_MODE,
    };
    inboxes.write_atomic_parts(name, parts, mode)?;
    Ok(())
}
