//! The stored inbox array: read it without trusting it, find a delivered
//! row by its `messageId`, write it back whole.

use std::io;

use serde_json::Value;

use super::error::InboxError;
use super::row::{NudgeRow, NUDGE_MESSAGE_KIND};
use crate::infrastructure::safe_fs::{not_a_file, with_path, Dir, FileKind, FileRead};

/// Largest inbox the writer reads; a bigger one is reported as unusable, never
/// truncated or replaced.
pub const MAX_INBOX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// Permission bits of an inbox the addon creates. An existing inbox keeps its
/// own: the file belongs to the app.
const NEW_INBOX_MODE: u32 = 0o600;

/// A stored row that carries the delivered row's `messageId`.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Existing {
    /// Same payload hash and kind: this very nudge, delivered before.
    Same,
    /// Another payload or kind under the same id.
    Conflict {
        payload_hash: Option<String>,
        message_kind: Option<String>,
    },
}

/// The stored row with `row`'s `messageId`, if any.
pub(super) fn find_by_message_id(rows: &[Value], row: &NudgeRow) -> Option<Existing> {
    let found = rows
        .iter()
        .find(|r| r.get("messageId").and_then(Value::as_str) == Some(&row.message_id))?;
    let field = |name| found.get(name).and_then(Value::as_str);
    let payload_hash = field("workSyncPayloadHash");
    let message_kind = field("messageKind");
    if payload_hash == Some(&row.work_sync_payload_hash) && message_kind == Some(NUDGE_MESSAGE_KIND)
    {
        return Some(Existing::Same);
    }
    Some(Existing::Conflict {
        payload_hash: payload_hash.map(str::to_string),
        message_kind: message_kind.map(str::to_string),
    })
}

/// The rows of inbox `name` in `inboxes` as generic JSON, so unknown fields
/// survive the rewrite; a missing inbox has none. A link, FIFO or folder in
/// its place is refused, never opened.
pub(super) fn read_rows(inboxes: &Dir, name: &str) -> Result<Vec<Value>, InboxError> {
    let path = inboxes.path().join(name);
    let corrupt = |reason: String| InboxError::CorruptInbox {
        path: path.clone(),
        reason,
    };
    match inboxes.read(name, MAX_INBOX_FILE_BYTES)? {
        FileRead::Missing => Ok(Vec::new()),
        FileRead::NotAFile => Err(InboxError::Refused(not_a_file(&path))),
        FileRead::TooLarge => Err(corrupt("file_too_large".into())),
        FileRead::Bytes(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Array(rows)) => Ok(rows),
            Ok(_) => Err(corrupt("not_an_array".into())),
            Err(e) => Err(corrupt(format!("invalid_json: {e}"))),
        },
    }
}

/// Atomic replace with `JSON.stringify(rows, null, 2)` (no trailing newline,
/// as the app writes it). A link swapped in meanwhile is replaced, not followed.
pub(super) fn write_rows(inboxes: &Dir, name: &str, rows: &[Value]) -> Result<(), InboxError> {
    let path = inboxes.path().join(name);
    let text = serde_json::to_string_pretty(rows)
        .map_err(|e| InboxError::Io(with_path(&path, io::Error::other(e))))?;
    let mode = match inboxes.meta(name)? {
        Some(meta) if meta.kind == FileKind::File => meta.mode,
        _ => NEW_INBOX_MODE,
    };
    inboxes.write_atomic(name, text.as_bytes(), mode)?;
    Ok(())
}
