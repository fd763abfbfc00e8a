//! Per-member audit journal `journal.jsonl`: one JSON event per line, bounded
//! strings and lists, rotated at 5 MiB to `.1` … `.5`.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::lock::StoreLock;
use crate::application::ports::AuditEvent;
use crate::domain::time::format_iso;

/// Size at which the journal rotates.
pub const ROTATE_AT_BYTES: u64 = 5 * 1024 * 1024;
/// Rotated generations kept.
pub const KEEP_ROTATIONS: u32 = 5;
/// Longest string kept in an event.
pub const MAX_STRING_CHARS: usize = 240;
/// Longest list kept in an event.
pub const MAX_LIST_ITEMS: usize = 20;

/// Appends `event` to the journal at `path`, rotating first when it is full.
pub fn append(path: &Path, event: &AuditEvent) -> io::Result<()> {
    append_all(path, std::slice::from_ref(event))
}

/// Appends `events` in order with one lock and one write, rotating first when
/// the journal is full (events of one moment stay together in one file).
pub fn append_all(path: &Path, events: &[AuditEvent]) -> io::Result<()> {
    let mut lines = String::new();
    for event in events {
        lines.push_str(&serde_json::to_string(&event_json(event)).map_err(io::Error::other)?);
        lines.push('\n');
    }
    let _lock = StoreLock::acquire(path)?;
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "journal is a symlink",
        ));
    }
    if fs::metadata(path).is_ok_and(|m| m.len() >= ROTATE_AT_BYTES) {
        rotate(path)?;
    }
    let mut file = OpenOptions::new().create(true).append(true).open(path)?;
    file.write_all(lines.as_bytes())
}

fn rotated(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

fn rotate(path: &Path) -> io::Result<()> {
    for n in (1..KEEP_ROTATIONS).rev() {
        let from = rotated(path, n);
        if from.exists() {
            fs::rename(&from, rotated(path, n + 1))?;
        }
    }
    fs::rename(path, rotated(path, 1))
}

fn event_json(event: &AuditEvent) -> Value {
    let mut map = serde_json::Map::new();
    map.insert("schemaVersion".into(), 1.into());
    map.insert("type".into(), event.kind.into());
    map.insert("source".into(), event.source.into());
    map.insert("teamName".into(), event.team_name.clone().into());
    map.insert("memberName".into(), event.member_name.clone().into());
    map.insert("recordedAt".into(), format_iso(event.at_ms).into());
    if !event.diagnostics.is_empty() {
        map.insert("diagnostics".into(), event.diagnostics.clone().into());
    }
    if !event.metadata.is_empty() {
        map.insert("metadata".into(), Value::Object(event.metadata.clone()));
    }
    bound(Value::Object(map))
}

/// Caps strings at [`MAX_STRING_CHARS`] (with `...`) and lists at [`MAX_LIST_ITEMS`].
fn bound(value: Value) -> Value {
    match value {
        Value::String(s) if s.chars().count() > MAX_STRING_CHARS => {
            let mut cut: String = s.chars().take(MAX_STRING_CHARS - 3).collect();
            cut.push_str("...");
            Value::String(cut)
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().take(MAX_LIST_ITEMS).map(bound).collect())
        }
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, bound(v))).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(diags: Vec<String>) -> AuditEvent {
        AuditEvent {
            kind: "reconcile_started",
            source: "reconciler",
            team_name: "forge".into(),
            member_name: "jack".into(),
            at_ms: 0,
            diagnostics: diags,
            metadata: serde_json::Map::new(),
        }
    }

    #[test]
    fn lines_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        append(
            &path,
            &event((0..30).map(|i| format!("{i}{}", "x".repeat(300))).collect()),
        )
        .unwrap();
        let line: Value = serde_json::from_str(fs::read_to_string(&path).unwrap().trim()).unwrap();
        let diags = line["diagnostics"].as_array().unwrap();
        assert_eq!(diags.len(), MAX_LIST_ITEMS);
        assert_eq!(diags[0].as_str().unwrap().chars().count(), MAX_STRING_CHARS);
        assert!(diags[0].as_str().unwrap().ends_with("..."));
        assert_eq!(line["schemaVersion"], 1);
        assert_eq!(line["type"], "reconcile_started");
    }

    #[test]
    fn rotates_when_full_and_keeps_five() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        for round in 0..7 {
            fs::write(&path, vec![b'x'; ROTATE_AT_BYTES as usize]).unwrap();
            append(&path, &event(vec![format!("round{round}")])).unwrap();
        }
        assert!(fs::metadata(&path).unwrap().len() < 1000);
        for n in 1..=KEEP_ROTATIONS {
            assert!(rotated(&path, n).exists(), "rotation {n}");
        }
        assert!(!rotated(&path, KEEP_ROTATIONS + 1).exists());
    }

    #[test]
    fn append_all_writes_the_events_in_order_after_rotating_a_full_journal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.jsonl");
        fs::write(&path, vec![b'x'; ROTATE_AT_BYTES as usize]).unwrap();
        let mut second = event(vec!["second".into()]);
        second.kind = "decision_made";
        append_all(&path, &[event(vec!["first".into()]), second]).unwrap();
        let lines: Vec<Value> = fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let got: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| {
                (
                    l["type"].as_str().unwrap(),
                    l["diagnostics"][0].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [("reconcile_started", "first"), ("decision_made", "second")]
        );
        assert_eq!(
            fs::metadata(rotated(&path, 1)).unwrap().len(),
            ROTATE_AT_BYTES
        );
    }
}
