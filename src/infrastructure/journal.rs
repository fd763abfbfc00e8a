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
pub const MAX_STRING_CHARS: usize = 240;
/// Longest list kept in an event.
pub const MAX_LIST_ITEMS: usize = 20;

/// Appends `event` to the journal at `path`, rotating first when it is full.
pub fn append(
    root: &TrustedRoot,
    path: &Path,
    event: &AuditEvent,
    retention: &Retention,
) -> io::Result<()> {
    append_all(root, path, std::slice::from_ref(event), retention)
}

/// Appends `events` in order with one lock and one write, rotating first when
/// the journal is full (events of one moment stay together in one file).
pub fn append_all(
    root: &TrustedRoot,
    path: &Path,
    events: &[AuditEvent],
    retention: &Retention,
) -> io::Result<()> {
    let mut lines = String::new();
    for event in events {
        lines.push_str(&serde_json::to_string(&event_json(event)).map_err(io::Error::other)?);
        lines.push('\n');
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a journal path", path.display()),
        ));
    };
    let _lock = StoreLock::acquire(root, path)?;
    let dir = root.create_dir_all(dir)?;
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
    match dir.append_lines(name, lines.as_bytes()) {
        // A file with another hard link (maybe outside the root) is never
        // appended to: the name is moved aside the same way and a new
        // journal begins.
        Err(e) if is_hard_linked(&e) => {
            super::json_store::quarantine(root, path, at_ms)?;
            dir.append_lines(name, lines.as_bytes())
        }
        appended => appended,
    }
}

/// Most bytes read of one journal file: the largest journal a rotation
/// setting allows, plus one more append.
pub const MAX_READ_BYTES: u64 = bounds::JOURNAL_ROTATE_BYTES.1 + 1024 * 1024;

/// What one journal file held.
#[derive(Debug, Default)]
pub struct ReadLines {
    /// Lines that parsed as JSON, in file order.
    pub lines: Vec<Value>,
    /// Lines that did not (torn or foreign).
    pub unreadable: usize,
    /// Why the file was not read at all (`not_a_file`, `too_large`).
    pub skipped: Option<&'static str>,
}

/// Reads the journal at `path` (or its rotation `generation` ≥ 1) without
/// writing anything: no lock, no folder created, a link or FIFO never opened.
pub fn read_lines(root: &TrustedRoot, path: &Path, generation: u32) -> io::Result<ReadLines> {
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
    map.insert("teamName".into(), event.team_name.clone().into());
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
    use crate::domain::audit::{AuditKind, AuditSource};
    use serde_json::json;
    use std::fs;
    use std::io::Write;

    fn event(diags: Vec<String>) -> AuditEvent {
        AuditEvent {
            kind: AuditKind::ReconcileStarted,
            source: AuditSource::Reconciler,
            team_name: "forge".into(),
            member_name: "jack".into(),
            at_ms: 0,
            diagnostics: diags,
            metadata: serde_json::Map::new(),
        }
    }

    fn journal() -> (tempfile::TempDir, TrustedRoot, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path());
        let path = dir.path().join("journal.jsonl");
        (dir, root, path)
    }

    fn rotated_path(path: &Path, n: u32) -> std::path::PathBuf {
        path.with_file_name(rotated("journal.jsonl", n))
    }

    /// Appends one event with `diagnostic`, under the default retention.
    fn append_default(root: &TrustedRoot, path: &Path, diagnostic: &str) {
        append(
            root,
            path,
            &event(vec![diagnostic.into()]),
            &Retention::default(),
        )
        .unwrap();
    }

    #[test]
    fn lines_are_bounded() {
        let (_dir, root, path) = journal();
        append(
            &root,
            &path,
            &event((0..30).map(|i| format!("{i}{}", "x".repeat(300))).collect()),
            &Retention::default(),
        )
        .unwrap();
        let line: Value = serde_json::from_str(fs::read_to_string(&path).unwrap().trim()).unwrap();
        let diags = line["diagnostics"].as_array().unwrap();
        assert_eq!(diags.len(), MAX_LIST_ITEMS);
        assert_eq!(diags[0].as_str().unwrap().chars().count(), MAX_STRING_CHARS);
        assert!(diags[0].as_str().unwrap().ends_with("..."));
        assert_eq!(line["schemaVersion"], 1);
        assert_eq!(line["event"], "reconcile_started");
    }

    #[test]
    fn lines_have_the_app_journal_shape() {
        // (metadata passed, the line's keys in order, what stays in metadata)
        let cases = [
            (
                json!({}),
                vec![
                    "event",
                    "timestamp",
                    "teamName",
                    "memberName",
                    "source",
                    "schemaVersion",
                ],
                None,
            ),
            (
                json!({"outboxId": "o1", "reason": "team_inactive", "actionableCount": 2,
                       "state": "needs_sync", "agendaFingerprint": "agenda:v1:x",
                       "messagePreview": "hi", "providerId": "codex",
                       "taskRefs": [{"taskId": "7"}], "triggerReasons": ["task_changed"]}),
                vec![
                    "event",
                    "timestamp",
                    "teamName",
                    "memberName",
                    "source",
                    "agendaFingerprint",
                    "state",
                    "actionableCount",
                    "reason",
                    "triggerReasons",
                    "providerId",
                    "taskRefs",
                    "diagnostics",
                    "messagePreview",
                    "metadata",
                    "schemaVersion",
                ],
                Some(json!({"outboxId": "o1"})),
            ),
            // A known name with another shape is not lifted: it stays in metadata.
            (
                json!({"reason": 5, "actionableCount": "two", "triggerReasons": [1]}),
                vec![
                    "event",
                    "timestamp",
                    "teamName",
                    "memberName",
                    "source",
                    "diagnostics",
                    "metadata",
                    "schemaVersion",
                ],
                Some(json!({"reason": 5, "actionableCount": "two", "triggerReasons": [1]})),
            ),
        ];
        for (metadata, keys, rest) in cases {
            let mut e = event(if keys.contains(&"diagnostics") {
                vec!["d".into()]
            } else {
                vec![]
            });
            e.at_ms = 1_779_000_000_000;
            e.metadata = metadata.as_object().unwrap().clone();
            let line = event_json(&e);
            let got: Vec<&str> = line
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            assert_eq!(got, keys, "{metadata}");
            assert_eq!(line["event"], "reconcile_started");
            assert_eq!(line["timestamp"], format_iso(1_779_000_000_000));
            assert_eq!(line["source"], "reconciler");
            assert_eq!(line.get("metadata"), rest.as_ref(), "{metadata}");
            assert!(line.get("type").is_none() && line.get("recordedAt").is_none());
            for (key, _) in LIFTED_BEFORE_DIAGNOSTICS
                .iter()
                .chain(&LIFTED_AFTER_DIAGNOSTICS)
            {
                if let Some(value) = line.get(*key) {
                    assert_eq!(Some(value), metadata.get(*key), "{key}");
                }
            }
        }
    }

    #[test]
    fn reading_parses_whole_lines_and_writes_nothing() {
        let (dir, root, path) = journal();
        // (content, parsed events, unreadable lines, skipped)
        type Case<'a> = (&'a [u8], Vec<&'a str>, usize, Option<&'a str>);
        let cases: [Case; 3] = [
            (b"", vec![], 0, None),
            (
                b"{\"event\":\"a\"}\nnot json\n{\"event\":\"b\"}\n{\"event\":",
                vec!["a", "b"],
                2,
                None,
            ),
            (b"{\"event\":\"c\"}\n", vec!["c"], 0, None),
        ];
        for (content, events, unreadable, skipped) in cases {
            fs::write(&path, content).unwrap();
            let read = read_lines(&root, &path, 0).unwrap();
            let got: Vec<&str> = read
                .lines
                .iter()
                .map(|l| l["event"].as_str().unwrap())
                .collect();
            assert_eq!(got, events);
            assert_eq!(read.unreadable, unreadable);
            assert_eq!(read.skipped, skipped);
        }
        fs::write(rotated_path(&path, 1), b"{\"event\":\"old\"}\n").unwrap();
        assert_eq!(
            read_lines(&root, &path, 1).unwrap().lines[0]["event"],
            "old"
        );
        assert!(read_lines(&root, &path, 2).unwrap().lines.is_empty());
        // A FIFO is never opened (it would block), a missing folder not created.
        fs::remove_file(&path).unwrap();
        crate::infrastructure::safe_fs::mkfifo(&path);
        assert_eq!(
            read_lines(&root, &path, 0).unwrap().skipped,
            Some("not_a_file")
        );
        let absent = dir.path().join("nope").join("journal.jsonl");
        assert!(read_lines(&root, &absent, 0).unwrap().lines.is_empty());
        assert!(!dir.path().join("nope").exists());
    }

    #[test]
    fn rotates_when_full_and_keeps_five() {
        let (_dir, root, path) = journal();
        for round in 0..7 {
            fs::write(
                &path,
                vec![b'x'; Retention::default().journal_rotate_bytes as usize],
            )
            .unwrap();
            append_default(&root, &path, &format!("round{round}"));
        }
        assert!(fs::metadata(&path).unwrap().len() < 1000);
        for n in 1..=Retention::default().journal_rotations {
            assert!(rotated_path(&path, n).exists(), "rotation {n}");
        }
        assert!(!rotated_path(&path, Retention::default().journal_rotations + 1).exists());
    }

    #[test]
    fn rotation_follows_the_retention_setting() {
        let (_dir, root, path) = journal();
        let retention = Retention {
            journal_rotate_bytes: 64 * 1024,
            journal_rotations: 2,
            ..Retention::default()
        };
        for round in 0..4 {
            fs::write(&path, vec![b'x'; 64 * 1024]).unwrap();
            append(
                &root,
                &path,
                &event(vec![format!("round{round}")]),
                &retention,
            )
            .unwrap();
        }
        assert!(rotated_path(&path, 2).exists());
        assert!(!rotated_path(&path, 3).exists());
        // Below the setting nothing rotates.
        fs::write(&path, vec![b'x'; 64 * 1024 - 1]).unwrap();
        let before = fs::read(rotated_path(&path, 1)).unwrap();
        append(&root, &path, &event(vec!["small".into()]), &retention).unwrap();
        assert_eq!(fs::read(rotated_path(&path, 1)).unwrap(), before);
    }

    #[test]
    fn append_all_writes_the_events_in_order_after_rotating_a_full_journal() {
        let (_dir, root, path) = journal();
        fs::write(
            &path,
            vec![b'x'; Retention::default().journal_rotate_bytes as usize],
        )
        .unwrap();
        let mut second = event(vec!["second".into()]);
        second.kind = AuditKind::DecisionMade;
        append_all(
            &root,
            &path,
            &[event(vec!["first".into()]), second],
            &Retention::default(),
        )
        .unwrap();
        let lines: Vec<Value> = fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let got: Vec<(&str, &str)> = lines
            .iter()
            .map(|l| {
                (
                    l["event"].as_str().unwrap(),
                    l["diagnostics"][0].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [("reconcile_started", "first"), ("decision_made", "second")]
        );
        assert_eq!(
            fs::metadata(rotated_path(&path, 1)).unwrap().len(),
            Retention::default().journal_rotate_bytes
        );
    }

    #[test]
    fn a_torn_tail_costs_only_its_own_line() {
        let (_dir, root, path) = journal();
        append_default(&root, &path, "before");
        // A crash or a full disk cut the next append short.
        fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(br#"{"event":"torn","timestamp":"#)
            .unwrap();
        append_default(&root, &path, "after");
        let text = fs::read_to_string(&path).unwrap();
        let parsed: Vec<Option<Value>> =
            text.lines().map(|l| serde_json::from_str(l).ok()).collect();
        assert_eq!(parsed.len(), 3, "{text}");
        assert!(parsed[1].is_none(), "only the torn line is lost");
        assert_eq!(parsed[2].as_ref().unwrap()["diagnostics"][0], "after");
    }

    /// Issue 23 item 6: a journal hard-linked to a file outside the root is
    /// moved aside, never appended to (nor its missing newline "repaired").
    #[cfg(unix)]
    #[test]
    fn a_hard_linked_journal_is_moved_aside_and_the_other_name_never_written() {
        let (_dir, root, path) = journal();
        let outside_dir = tempfile::tempdir().unwrap();
        let outside = outside_dir.path().join("precious");
        fs::write(&outside, b"no final newline").unwrap();
        fs::hard_link(&outside, &path).unwrap();
        append_default(&root, &path, "after link");
        assert_eq!(fs::read(&outside).unwrap(), b"no final newline");
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("after link"), "{text}");
        let aside: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.starts_with("journal.jsonl.invalid."))
            .collect();
        assert_eq!(aside.len(), 1, "{aside:?}");
    }

    #[test]
    fn a_fifo_or_link_journal_is_moved_aside_unopened_and_restarted() {
        let (dir, root, path) = journal();
        crate::infrastructure::safe_fs::mkfifo(&path);
        append_default(&root, &path, "after fifo");
        assert!(fs::read_to_string(&path).unwrap().contains("after fifo"));
        fs::remove_file(&path).unwrap();
        let outside = dir.path().join("outside.jsonl");
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        append_default(&root, &path, "after link");
        assert!(fs::read_to_string(&path).unwrap().contains("after link"));
        assert!(!outside.exists());
        let kept: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("journal.jsonl.invalid."))
            .collect();
        assert_eq!(kept.len(), 2, "{kept:?}");
    }
}
