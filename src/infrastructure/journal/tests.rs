use super::*;
use crate::domain::audit::{AuditKind, AuditSource};
use serde_json::json;
use std::fs;
use std::io::Write;

fn event(diags: Vec<String>) -> AuditEvent {
    AuditEvent {
        kind: AuditKind::ReconcileStarted,
        source: AuditSource::Reconciler,
        team_name: crate::domain::names::TeamName::parse("forge").unwrap(),
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
        let line = line_of(&e);
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
    let parsed: Vec<Option<Value>> = text.lines().map(|l| serde_json::from_str(l).ok()).collect();
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

/// The line [`write_line`] writes for `e`, parsed.
fn line_of(e: &AuditEvent) -> Value {
    let mut bytes = Vec::new();
    write_line(&mut bytes, e).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The line as it was built before it was serialized straight from the
/// event: a [`Value`] assembled key by key, then bounded in place.
fn line_value(event: &AuditEvent) -> Value {
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

/// A line serialized straight from its event is byte for byte the line
/// built as a value and bounded: lifted and left fields in order, strings
/// cut at the cap (multi-byte ones by chars), lists and nested lists cut,
/// object keys kept whole, numbers and literals as they are.
#[test]
fn a_line_is_serialized_byte_for_byte_as_its_value_was() {
    let long = |c: &str, n: usize| c.repeat(n);
    let metadatas = [
        json!({}),
        json!({"reason": "team_inactive"}),
        json!({"reason": long("é", 241), "state": long("x", 240), "providerId": long("y", 241)}),
        json!({"sourceId": long("z", 500), "provider": "claude", "spoolFile": "a.json",
               "reason": "claude", "recordedAt": "2026-01-01T00:00:00.000Z"}),
        json!({"taskRefs": (0..25).map(|i| json!({"taskId": i.to_string(), "n": i})).collect::<Vec<_>>(),
               "triggerReasons": (0..30).map(|i| format!("{i}{}", long("r", 250))).collect::<Vec<_>>(),
               "actionableCount": 3, "agendaFingerprint": "agenda:v1:x",
               "messagePreview": long("m", 300)}),
        json!({"reason": 5, "actionableCount": -2, "triggerReasons": [1], "taskRefs": ["t"],
               "messagePreview": null, "nested": {long("k", 300): [long("v", 300), {"deep": (0..22).collect::<Vec<_>>()}]},
               "flag": true, "ratio": 0.5, "empty": {}, "none": []}),
        // What JSON escapes (control characters, quotes, backslashes), in
        // keys and values, lifted and left, and what it does not.
        json!({"reason": "a\"b\\c\n\u{1}\u{1f}é", "k\"e\\y\t": ["q\"", {"\u{0}": "\u{7f}/ <>&'"}],
               "messagePreview": long("\"", 300), "spoolFile": "x\r"}),
    ];
    let diagnostics = [
        vec![],
        vec!["d".to_string()],
        (0..21).map(|i| format!("{i}{}", long("ü", 240))).collect(),
    ];
    for metadata in &metadatas {
        for diags in &diagnostics {
            let mut e = event(diags.clone());
            e.at_ms = 1_779_000_000_123;
            e.member_name = format!("\"\\\u{8}{}", long("n", 250));
            e.metadata = metadata.as_object().unwrap().clone();
            let mut got = Vec::new();
            write_line(&mut got, &e).unwrap();
            let want = serde_json::to_vec(&line_value(&e)).unwrap();
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap(),
                "{metadata}"
            );
        }
    }
}

/// A drained event's two lines written straight from their fields are byte
/// for byte the lines of their events (`SettledTurnLines::events`), with
/// and without a reason, with strings JSON escapes and strings past the
/// cap (multi-byte ones cut by chars), and go to the journal in order with
/// one append, as `append_all` of those events would write them.
#[test]
fn settled_turn_lines_are_written_as_their_events_would_be() {
    let long = |c: &str, n: usize| c.repeat(n);
    let team = TeamName::parse("forge").unwrap();
    let turn = |reason: Option<String>, text: &str| SettledTurnLines {
        outcome: AuditKind::TurnSettledUnresolved,
        reason,
        claimed_at_ms: 1_779_000_000_001,
        at_ms: 1_779_000_000_123,
        provider: "claude",
        source_id: format!("runtime-turn-settled:claude:{text}"),
        spool_file: "20261128T150000Z-1-a.claude.json",
        recorded_at: text.to_string(),
    };
    let texts = [
        "2026-11-28T15:00:00.000Z".to_string(),
        "a\"b\\c\n\u{1}\u{1f}é".to_string(),
        long("é", 241),
        long("\"", 300),
    ];
    let mut turns = Vec::new();
    for text in &texts {
        turns.push(turn(None, text));
        turns.push(turn(Some(text.clone()), text));
        let mut resolved = turn(None, text);
        resolved.outcome = AuditKind::TurnSettledResolved;
        resolved.spool_file = text;
        turns.push(resolved);
    }
    for member in ["jack", "j\"a\tck"] {
        let events: Vec<AuditEvent> = turns.iter().flat_map(|t| t.events(&team, member)).collect();
        let (_dir, root, path) = journal();
        append_settled_turns(&root, &path, &team, member, &turns, &Retention::default()).unwrap();
        let (_dir, root, want_path) = journal();
        append_all(&root, &want_path, &events, &Retention::default()).unwrap();
        let got = fs::read_to_string(&path).unwrap();
        assert_eq!(got, fs::read_to_string(&want_path).unwrap());
        assert_eq!(got.lines().count(), turns.len() * 2);
    }
}
