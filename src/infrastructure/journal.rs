//! Per-member audit journal `journal.jsonl`: one JSON event per line, bounded
//! strings and lists, rotated (by default at 5 MiB, to `.1` … `.5`; see
//! [`Retention`]).
//!
//! The journal only ever grows by whole lines: an append that a full disk
//! cuts short is cut back, and a tail torn by a crash is terminated before the
//! next append, so one torn write loses at most its own line.

use std::io;
use std::path::Path;

use serde_json::Value;

use super::lock::StoreLock;
use super::safe_fs::{is_hard_linked, Dir, FileKind, FileRead, TrustedRoot};
use crate::application::ports::AuditEvent;
use crate::domain::retention::{bounds, Retention};
use crate::domain::time::format_iso;

/// Longest string kept in an event.
const MAX_STRING_CHARS: usize = 240;
/// Longest list kept in an event.
const MAX_LIST_ITEMS: usize = 20;

/// Appends `event` to the journal at `path`, rotating first when it is full.
pub(crate) fn append(
    root: &TrustedRoot,
    path: &Path,
    event: &AuditEvent,
    retention: &Retention,
) -> io::Result<()> {
    append_all(root, path, std::slice::from_ref(event), retention)
}

/// Appends `events` in order with one lock and one write, rotating first when
/// the journal is full (events of one moment stay together in one file).
pub(crate) fn append_all(
    root: &TrustedRoot,
    path: &Path,
    events: &[AuditEvent],
    retention: &Retention,
) -> io::Result<()> {
    // Each line serialized straight into the one buffer appended.
    let mut lines = Vec::new();
    for event in events {
        serde_json::to_writer(&mut lines, &event_json(event)).map_err(io::Error::other)?;
        lines.push(b'\n');
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a journal path", path.display()),
        ));
    };
    // The folder walked to once, for the lock and the journal both (it
    // used to be walked to from the root twice per append).
    let dir = root.create_dir_all(dir)?;
    let _lock = StoreLock::acquire_in(&dir, path)?;
    let at_ms = events.first().map_or(0, |e| e.at_ms);
    if let Some(meta) = dir.meta(name)? {
        if meta.kind != FileKind::File {
            // A link or FIFO planted there is moved aside (never opened) and
            // the journal starts afresh, rather than losing every event.
            super::json_store::quarantine(root, path, at_ms)?;
        } else if meta.len >= retention.journal_rotate_bytes {
            rotate(&dir, name, retention.journal_rotations)?;
        }
    }
    match dir.append_lines(name, &lines) {
        // A file with another hard link (maybe outside the root) is never
        // appended to: the name is moved aside the same way and a new
        // journal begins.
        Err(e) if is_hard_linked(&e) => {
            super::json_store::quarantine(root, path, at_ms)?;
            dir.append_lines(name, &lines)
        }
        appended => appended,
    }
}

/// Most bytes read of one journal file: the largest journal a rotation
/// setting allows, plus one more append.
pub(crate) const MAX_READ_BYTES: u64 = bounds::JOURNAL_ROTATE_BYTES.1 + 1024 * 1024;

/// What one journal file held.
#[derive(Debug, Default)]
pub(crate) struct ReadLines {
    /// Lines that parsed as JSON, in file order.
    pub lines: Vec<Value>,
    /// Lines that did not (torn or foreign).
    pub unreadable: usize,
    /// Why the file was not read at all (`not_a_file`, `too_large`).
    pub skipped: Option<&'static str>,
}

/// Reads the journal at `path` (or its rotation `generation` ≥ 1) without
/// writing anything: no lock, no folder created, a link or FIFO never opened.
pub(crate) fn read_lines(
    root: &TrustedRoot,
    path: &Path,
    generation: u32,
) -> io::Result<ReadLines> {
    let path = match (generation, path.file_name().and_then(|n| n.to_str())) {
        (0, _) => path.to_path_buf(),
        (n, Some(name)) => path.with_file_name(rotated(name, n)),
        (_, None) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: not a journal path", path.display()),
            ))
        }
    };
    let skipped = |why| ReadLines {
        skipped: Some(why),
        ..ReadLines::default()
    };
    let bytes = match root.read(&path, MAX_READ_BYTES)? {
        FileRead::Missing => return Ok(ReadLines::default()),
        FileRead::NotAFile => return Ok(skipped("not_a_file")),
        FileRead::TooLarge => return Ok(skipped("too_large")),
        FileRead::Bytes(bytes) => bytes,
    };
    let mut read = ReadLines::default();
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        match serde_json::from_slice::<Value>(line) {
            Ok(value) => read.lines.push(value),
            Err(_) => read.unreadable += 1,
        }
    }
    Ok(read)
}

/// `journal.jsonl.<n>`.
fn rotated(name: &str, n: u32) -> String {
    format!("{name}.{n}")
}

fn rotate(dir: &Dir, name: &str, keep: u32) -> io::Result<()> {
    for n in (1..keep).rev() {
        dir.rename(rotated(name, n), dir, rotated(name, n + 1), true)?;
    }
    dir.rename(name, dir, rotated(name, 1), true)?;
    Ok(())
}

/// The shape a lifted field must have; a value of another shape stays in
/// `metadata`, so nothing a caller passed is lost.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Text,
    Count,
    Texts,
    Objects,
}

impl Shape {
    fn fits(self, value: &Value) -> bool {
        match self {
            Shape::Text => value.is_string(),
            Shape::Count => value.is_u64(),
            Shape::Texts => value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_string)),
            Shape::Objects => value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_object)),
        }
    }
}

/// Optional fields the app's journal keeps at the top level of a line,
/// before `diagnostics`; callers pass them in the event's metadata.
const LIFTED_BEFORE_DIAGNOSTICS: [(&str, Shape); 7] = [
    ("agendaFingerprint", Shape::Text),
    ("state", Shape::Text),
    ("actionableCount", Shape::Count),
    ("reason", Shape::Text),
    ("triggerReasons", Shape::Texts),
    ("providerId", Shape::Text),
    ("taskRefs", Shape::Objects),
];
/// Lifted like the above, after `diagnostics`.
const LIFTED_AFTER_DIAGNOSTICS: [(&str, Shape); 1] = [("messagePreview", Shape::Text)];

/// One journal line in the app's shape: `event`, `timestamp`, `teamName`,
/// `memberName`, `source`, the known optional fields, `diagnostics`,
/// `metadata` (what is left) and `schemaVersion`.
fn event_json(event: &AuditEvent) -> Value {
    let mut metadata = event.metadata.clone();
    let mut lift = |map: &mut serde_json::Map<String, Value>, fields: &[(&str, Shape)]| {
        for (key, shape) in fields {
            if metadata.get(*key).is_some_and(|value| shape.fits(value)) {
                if let Some(value) = metadata.shift_remove(*key) {
                    map.insert((*key).into(), value);
                }
            }
        }
    };
    let mut map = serde_json::Map::new();
    map.insert("event".into(), event.kind.as_str().into());
    map.insert("timestamp".into(), format_iso(event.at_ms).into());
    map.insert("teamName".into(), event.team_name.as_str().into());
    map.insert("memberName".into(), event.member_name.clone().into());
    map.insert("source".into(), event.source.as_str().into());
    lift(&mut map, &LIFTED_BEFORE_DIAGNOSTICS);
    if !event.diagnostics.is_empty() {
        map.insert("diagnostics".into(), event.diagnostics.clone().into());
    }
    lift(&mut map, &LIFTED_AFTER_DIAGNOSTICS);
    if !metadata.is_empty() {
        map.insert("metadata".into(), Value::Object(metadata));
    }
    map.insert("schemaVersion".into(), 1.into());
    let mut line = Value::Object(map);
    bound(&mut line);
    line
}

/// Caps strings at [`MAX_STRING_CHARS`] (with `...`) and lists at
/// [`MAX_LIST_ITEMS`], in place (rebuilding every object cost a line's
/// keys hashed and its maps allocated twice).
fn bound(value: &mut Value) {
    match value {
        Value::String(s) if s.chars().count() > MAX_STRING_CHARS => {
            let mut cut: String = s.chars().take(MAX_STRING_CHARS - 3).collect();
            cut.push_str("...");
            *s = cut;
        }
        Value::Array(items) => {
            items.truncate(MAX_LIST_ITEMS);
            items.iter_mut().for_each(bound);
        }
        Value::Object(map) => map.values_mut().for_each(bound),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
