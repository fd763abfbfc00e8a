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
use crate::application::ports::{AuditEvent, SettledTurnLines};
use crate::domain::audit::AuditKind;
use crate::domain::json_text::write_str;
use crate::domain::names::TeamName;
use crate::domain::retention::{bounds, Retention};
use crate::domain::time::{format_iso, EpochMs};

/// Longest string kept in an event.
const MAX_STRING_CHARS: usize = 240;
/// Longest list kept in an event.
const MAX_LIST_ITEMS: usize = crate::domain::audit::LIST_ITEMS_KEPT;

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
    // Each line written straight into the one buffer appended, with room
    // for lines of a usual length made at once (a drain's lines are about
    // 350 bytes; growing from empty copied its batch's lines over and over).
    let mut lines = Vec::with_capacity(events.len() * 384);
    for event in events {
        write_line(&mut lines, event).map_err(io::Error::other)?;
        lines.push(b'\n');
    }
    let at_ms = events.first().map_or(0, |e| e.at_ms);
    append_bytes(root, path, &lines, at_ms, retention)
}

/// Appends the two lines of each of `turns`, `member`'s of `team`, as
/// [`append_all`] appends [`SettledTurnLines::events`]: the same bytes,
/// written straight from the lines' fields.
pub(crate) fn append_settled_turns(
    root: &TrustedRoot,
    path: &Path,
    team: &TeamName,
    member: &str,
    turns: &[SettledTurnLines<'_>],
    retention: &Retention,
) -> io::Result<()> {
    let mut lines = Vec::with_capacity(turns.len() * 2 * 384);
    for turn in turns {
        write_settled_turn(&mut lines, team, member, turn).map_err(io::Error::other)?;
    }
    let at_ms = turns.first().map_or(0, |turn| turn.claimed_at_ms);
    append_bytes(root, path, &lines, at_ms, retention)
}

/// Appends whole `lines` to the journal at `path`, rotating first when it
/// is full; `at_ms` names a journal moved aside.
fn append_bytes(
    root: &TrustedRoot,
    path: &Path,
    lines: &[u8],
    at_ms: EpochMs,
    retention: &Retention,
) -> io::Result<()> {
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
    if let Some(meta) = dir.meta(name)? {
        if meta.kind != FileKind::File {
            // A link or FIFO planted there is moved aside (never opened) and
            // the journal starts afresh, rather than losing every event.
            super::json_store::quarantine(root, path, at_ms)?;
        } else if meta.len >= retention.journal_rotate_bytes {
            rotate(&dir, name, retention.journal_rotations)?;
        }
    }
    match dir.append_lines(name, lines) {
        // A file with another hard link (maybe outside the root) is never
        // appended to: the name is moved aside the same way and a new
        // journal begins.
        Err(e) if is_hard_linked(&e) => {
            super::json_store::quarantine(root, path, at_ms)?;
            dir.append_lines(name, lines)
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

/// Whether the metadata entry `key` = `value` is lifted to the top level.
fn lifts(key: &str, value: &Value) -> bool {
    LIFTED_BEFORE_DIAGNOSTICS
        .iter()
        .chain(&LIFTED_AFTER_DIAGNOSTICS)
        .any(|(lifted, shape)| *lifted == key && shape.fits(value))
}

/// The entries of `fields` that `metadata` has in their shape. Each is
/// found by comparing names, not by hashing: an event carries a few
/// metadata fields, and hashing each of the eight names per line cost more
/// than comparing them with those few.
fn lifted<'a>(
    metadata: &'a serde_json::Map<String, Value>,
    fields: &'static [(&'static str, Shape)],
) -> impl Iterator<Item = (&'static str, &'a Value)> {
    fields.iter().filter_map(move |(key, shape)| {
        let (_, value) = metadata.iter().find(|(name, _)| name.as_str() == *key)?;
        shape.fits(value).then_some((*key, value))
    })
}

/// Appends one journal line in the app's shape to `out` (compact JSON, no
/// newline): `event`, `timestamp`, `teamName`, `memberName`, `source`, the
/// known optional fields, `diagnostics`, `metadata` (what is left) and
/// `schemaVersion`, every value bounded (see [`write_bounded`]). Written
/// straight from the event, byte for byte as `serde_json` writes the same
/// line: building it as a [`Value`] first cost a clone of its metadata, a
/// map of owned keys and their drop, per line; serializing it through
/// `serde_json` escaped every string byte by byte (a drain journals two
/// lines per Stop event), where a string with nothing to escape, as they
/// almost all are, is now copied whole.
fn write_line(out: &mut Vec<u8>, event: &AuditEvent) -> serde_json::Result<()> {
    let mut first = true;
    let mut key = |out: &mut Vec<u8>, key: &str| -> serde_json::Result<()> {
        out.push(if std::mem::take(&mut first) {
            b'{'
        } else {
            b','
        });
        write_str(out, key)?;
        out.push(b':');
        Ok(())
    };
    key(out, "event")?;
    write_bounded_str(out, event.kind.as_str())?;
    key(out, "timestamp")?;
    write_bounded_str(out, &format_iso(event.at_ms))?;
    key(out, "teamName")?;
    write_bounded_str(out, event.team_name.as_str())?;
    key(out, "memberName")?;
    write_bounded_str(out, &event.member_name)?;
    key(out, "source")?;
    write_bounded_str(out, event.source.as_str())?;
    for (name, value) in lifted(&event.metadata, &LIFTED_BEFORE_DIAGNOSTICS) {
        key(out, name)?;
        write_bounded(out, value)?;
    }
    if !event.diagnostics.is_empty() {
        key(out, "diagnostics")?;
        out.push(b'[');
        for (i, text) in event.diagnostics.iter().take(MAX_LIST_ITEMS).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_bounded_str(out, text)?;
        }
        out.push(b']');
    }
    for (name, value) in lifted(&event.metadata, &LIFTED_AFTER_DIAGNOSTICS) {
        key(out, name)?;
        write_bounded(out, value)?;
    }
    let mut rest = event
        .metadata
        .iter()
        .filter(|(k, v)| !lifts(k, v))
        .peekable();
    if rest.peek().is_some() {
        key(out, "metadata")?;
        write_object(out, rest)?;
    }
    key(out, "schemaVersion")?;
    out.extend_from_slice(b"1}");
    Ok(())
}

/// The claim's line and the outcome's line of `turn`, each with its
/// newline, as [`write_line`] writes [`SettledTurnLines::events`]: a
/// string field's `reason` is lifted to the top level, the rest of the
/// metadata (`provider`, `sourceId`, then `spoolFile` or `recordedAt`)
/// stays in `metadata`, in that order, and every value is bounded.
fn write_settled_turn(
    out: &mut Vec<u8>,
    team: &TeamName,
    member: &str,
    turn: &SettledTurnLines<'_>,
) -> serde_json::Result<()> {
    let provider = turn.provider;
    let reason = turn.reason.as_deref().unwrap_or(provider);
    let lines = [
        (
            AuditKind::TurnSettledClaimed,
            turn.claimed_at_ms,
            provider,
            "spoolFile",
            turn.spool_file,
        ),
        (
            turn.outcome,
            turn.at_ms,
            reason,
            "recordedAt",
            turn.recorded_at.as_str(),
        ),
    ];
    for (kind, at_ms, reason, last_key, last) in lines {
        out.extend_from_slice(b"{\"event\":");
        write_bounded_str(out, kind.as_str())?;
        out.extend_from_slice(b",\"timestamp\":");
        write_bounded_str(out, &format_iso(at_ms))?;
        out.extend_from_slice(b",\"teamName\":");
        write_bounded_str(out, team.as_str())?;
        out.extend_from_slice(b",\"memberName\":");
        write_bounded_str(out, member)?;
        out.extend_from_slice(b",\"source\":");
        write_bounded_str(out, SettledTurnLines::SOURCE.as_str())?;
        out.extend_from_slice(b",\"reason\":");
        write_bounded_str(out, reason)?;
        out.extend_from_slice(b",\"metadata\":{\"provider\":");
        write_bounded_str(out, provider)?;
        out.extend_from_slice(b",\"sourceId\":");
        write_bounded_str(out, &turn.source_id)?;
        out.push(b',');
        write_str(out, last_key)?;
        out.push(b':');
        write_bounded_str(out, last)?;
        out.extend_from_slice(b"},\"schemaVersion\":1}\n");
    }
    Ok(())
}

/// `entries` as a JSON object, each value bounded, keys as they are.
fn write_object<'a>(
    out: &mut Vec<u8>,
    entries: impl Iterator<Item = (&'a String, &'a Value)>,
) -> serde_json::Result<()> {
    out.push(b'{');
    for (i, (key, value)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key)?;
        out.push(b':');
        write_bounded(out, value)?;
    }
    out.push(b'}');
    Ok(())
}

/// A value as a line keeps it: strings capped at [`MAX_STRING_CHARS`]
/// (with `...`), lists at [`MAX_LIST_ITEMS`], all the way down; object keys
/// as they are; numbers and literals as `serde_json` writes them.
fn write_bounded(out: &mut Vec<u8>, value: &Value) -> serde_json::Result<()> {
    match value {
        Value::String(text) => write_bounded_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().take(MAX_LIST_ITEMS).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_bounded(out, item)?;
            }
            out.push(b']');
            Ok(())
        }
        Value::Object(map) => write_object(out, map.iter()),
        other => serde_json::to_writer(out, other),
    }
}

/// A string capped at [`MAX_STRING_CHARS`], the last three of them `...`.
fn write_bounded_str(out: &mut Vec<u8>, text: &str) -> serde_json::Result<()> {
    // No more bytes than the cap: no more chars either, nothing to count.
    if text.len() <= MAX_STRING_CHARS || text.chars().count() <= MAX_STRING_CHARS {
        return write_str(out, text);
    }
    let mut cut: String = text.chars().take(MAX_STRING_CHARS - 3).collect();
    cut.push_str("...");
    write_str(out, &cut)
}

#[cfg(test)]
mod tests;
