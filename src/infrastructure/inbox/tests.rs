//! Delivery end to end on a temp teams folder: idempotency, conflicts,
//! corrupt inboxes, the lock protocol, refused paths and concurrency.

use super::turn::InProcessClaim;
use super::*;
use crate::infrastructure::clock::epoch_ms;
use serde_json::Value;
use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

const NOW: i64 = 1_746_500_000_000;
/// Beyond any real pid_max (Linux ≤ 2^22, macOS 99 999): never a live process.
const DEAD_PID: u32 = 2_147_483_000;

fn setup() -> (tempfile::TempDir, InboxWriter, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let teams = dir.path().join("teams");
    fs::create_dir_all(teams.join("forge")).unwrap();
    let inbox = teams.join("forge/inboxes/jack.json");
    (dir, InboxWriter::new(teams), inbox)
}

pub(super) fn row(id: &str, hash: &str) -> NudgeRow {
    NudgeRow {
        to: "jack".into(),
        text: "You have 1 actionable item: #1 Ship".into(),
        timestamp: "2025-05-06T03:33:20.000Z".into(),
        task_refs: vec![NudgeTaskRef {
            team_name: "forge".into(),
            task_id: "1".into(),
            display_id: "1".into(),
        }],
        message_id: id.into(),
        work_sync_intent: "agenda_sync".into(),
        work_sync_intent_key: None,
        work_sync_review_request_event_ids: Vec::new(),
        work_sync_payload_hash: hash.into(),
    }
}

fn rows_of(path: &Path) -> Vec<Value> {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

fn lock_path(inbox: &Path) -> PathBuf {
    PathBuf::from(format!("{}.lock", inbox.display()))
}

fn short_timeout() -> InboxTimings {
    InboxTimings {
        lock_timeout: Duration::from_millis(150),
        ..InboxTimings::default()
    }
}

#[test]
fn inserted_then_already_present_leaves_the_file_unchanged() {
    let (_dir, writer, inbox) = setup();
    let nudge = row("member-work-sync:forge:jack:fp", "h1");
    assert_eq!(
        writer.deliver("forge", "jack", &nudge, NOW).unwrap(),
        DeliveryOutcome::Inserted
    );
    let first = fs::read(&inbox).unwrap();
    assert_eq!(
        writer.deliver("forge", "Jack", &nudge, NOW + 1).unwrap(),
        DeliveryOutcome::AlreadyPresent
    );
    assert_eq!(fs::read(&inbox).unwrap(), first);
    let text = String::from_utf8(first).unwrap();
    assert!(
        text.starts_with("[\n  {\n    \"") && text.ends_with("}\n]"),
        "{text}"
    );
    assert_eq!(rows_of(&inbox), [nudge.to_json()]);
    assert!(!lock_path(&inbox).exists(), "lock released");
}

#[test]
fn payload_conflict_never_overwrites() {
    let (_dir, writer, inbox) = setup();
    writer
        .deliver("forge", "jack", &row("id-1", "h1"), NOW)
        .unwrap();
    let before = fs::read(&inbox).unwrap();
    assert_eq!(
        writer
            .deliver("forge", "jack", &row("id-1", "h2"), NOW)
            .unwrap(),
        DeliveryOutcome::PayloadConflict {
            existing_payload_hash: Some("h1".into()),
            existing_message_kind: Some(NUDGE_MESSAGE_KIND.into()),
        }
    );
    assert_eq!(fs::read(&inbox).unwrap(), before);
    assert_eq!(
        payload_conflict_message("id-1"),
        "Inbox messageId collision for immutable payload: id-1"
    );
}

#[test]
fn same_message_id_of_another_kind_is_a_conflict() {
    let (_dir, writer, inbox) = setup();
    let foreign =
        r#"[{"from":"jill","messageId":"id-1","messageKind":"chat","workSyncPayloadHash":"h1"}]"#;
    fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    fs::write(&inbox, foreign).unwrap();
    let outcome = writer
        .deliver("forge", "jack", &row("id-1", "h1"), NOW)
        .unwrap();
    assert!(
        matches!(outcome, DeliveryOutcome::PayloadConflict { existing_message_kind: Some(k), .. } if k == "chat")
    );
    assert_eq!(fs::read(&inbox).unwrap(), foreign.as_bytes());
}

#[test]
fn corrupt_inbox_stays_byte_identical_and_delivery_fails_retryably() {
    let (_dir, writer, inbox) = setup();
    fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    for (content, reason) in [
        (&b"[{\"messageId\": \"x\""[..], "invalid_json"),
        (br#"{"messages":[]}"#, "not_an_array"),
        (b"", "invalid_json"),
    ] {
        fs::write(&inbox, content).unwrap();
        let err = writer
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap_err();
        assert!(
            matches!(&err, InboxError::CorruptInbox { reason: r, .. } if r.starts_with(reason)),
            "{err}"
        );
        assert!(err.is_retryable());
        assert!(err.to_string().contains("left untouched"), "{err}");
        assert_eq!(fs::read(&inbox).unwrap(), content);
    }
    let names: Vec<_> = fs::read_dir(inbox.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["jack.json"], "no temp or lock file left");
}

#[test]
fn foreign_rows_are_preserved_in_meaning() {
    let (_dir, writer, inbox) = setup();
    let existing = serde_json::json!([
        {"from": "jill", "text": "héllo \"world\"\n", "read": true, "messageId": "m-1",
         "custom": {"nested": [1, 2.5, null, -7], "z": false}, "timestamp": "2025-01-01T00:00:00Z"},
        {"from": "user", "text": "no id", "attachments": []},
        "a bare string row",
        42
    ]);
    fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    fs::write(&inbox, serde_json::to_vec(&existing).unwrap()).unwrap();
    writer
        .deliver("forge", "jack", &row("id-1", "h1"), NOW)
        .unwrap();
    let rows = rows_of(&inbox);
    assert_eq!(rows.len(), 5);
    assert_eq!(Value::Array(rows[..4].to_vec()), existing);
    assert_eq!(rows[4], row("id-1", "h1").to_json());
}

fn write_lock(inbox: &Path, content: &str) {
    fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    fs::write(lock_path(inbox), content).unwrap();
}

#[cfg(unix)]
#[test]
fn lock_of_a_dead_process_is_broken() {
    let (_dir, writer, inbox) = setup();
    write_lock(&inbox, &format!("{DEAD_PID}\n{NOW}\n"));
    let writer = writer.with_timings(short_timeout());
    assert_eq!(
        writer
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap(),
        DeliveryOutcome::Inserted
    );
    assert!(!lock_path(&inbox).exists());
}

#[test]
fn lock_older_than_30_s_is_broken_even_if_its_owner_lives() {
    let (_dir, writer, inbox) = setup();
    let writer = writer.with_timings(short_timeout());
    let me = std::process::id();
    // The wait advances the injected clock, so leave it more than the 150 ms timeout.
    write_lock(&inbox, &format!("{me}\n{}\n", NOW - 29_500));
    assert!(
        matches!(
            writer.deliver("forge", "jack", &row("id-1", "h1"), NOW),
            Err(InboxError::LockTimeout(_))
        ),
        "29.5 s is not stale yet"
    );
    write_lock(&inbox, &format!("{me}\n{}\n", NOW - 30_001));
    assert_eq!(
        writer
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap(),
        DeliveryOutcome::Inserted
    );
    assert!(!lock_path(&inbox).exists());
}

#[test]
fn live_fresh_lock_times_out_and_is_left_alone() {
    let (_dir, writer, inbox) = setup();
    let writer = writer.with_timings(short_timeout());
    let held = format!("{}\n{NOW}\n", std::process::id());
    write_lock(&inbox, &held);
    let started = Instant::now();
    let err = writer
        .deliver("forge", "jack", &row("id-1", "h1"), NOW)
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(
        err.to_string(),
        format!("File lock timeout: {}", inbox.display())
    );
    assert!(err.is_retryable());
    assert_eq!(fs::read_to_string(lock_path(&inbox)).unwrap(), held);
    assert!(!inbox.exists());
}

#[test]
fn a_thread_that_timed_out_in_the_queue_does_not_block_later_ones() {
    let (_dir, writer, inbox) = setup();
    let writer = writer.with_timings(short_timeout());
    let holder = InProcessClaim::acquire(&inbox, Instant::now()).unwrap();
    assert!(matches!(
        writer.deliver("forge", "jack", &row("id-1", "h1"), NOW),
        Err(InboxError::LockTimeout(_))
    ));
    drop(holder);
    assert_eq!(
        writer
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap(),
        DeliveryOutcome::Inserted
    );
}

#[test]
fn lock_without_a_time_ages_by_its_mtime() {
    let (_dir, writer, inbox) = setup();
    let writer = writer.with_timings(short_timeout());
    let real_now = epoch_ms(SystemTime::now()).unwrap();
    // An empty lock file: its creator may be writing the content right now.
    write_lock(&inbox, "");
    assert!(matches!(
        writer.deliver("forge", "jack", &row("id-1", "h1"), real_now),
        Err(InboxError::LockTimeout(_))
    ));
    assert_eq!(
        writer
            .deliver("forge", "jack", &row("id-1", "h1"), real_now + 31_000)
            .unwrap(),
        DeliveryOutcome::Inserted
    );
}

#[test]
fn names_are_checked_and_the_member_is_normalized() {
    let (dir, writer, _inbox) = setup();
    for (team, member) in [
        ("../x", "jack"),
        ("forge", "a/b"),
        ("forge", " "),
        ("forge", ".."),
    ] {
        let err = writer
            .deliver(team, member, &row("id-1", "h1"), NOW)
            .unwrap_err();
        assert!(matches!(err, InboxError::InvalidName { .. }), "{err}");
        assert!(!err.is_retryable());
    }
    writer
        .deliver("forge", " Jack ", &row("id-1", "h1"), NOW)
        .unwrap();
    assert!(dir.path().join("teams/forge/inboxes/jack.json").exists());
}

#[test]
fn a_missing_team_is_not_created() {
    let (dir, writer, _inbox) = setup();
    let err = writer
        .deliver("ghost", "jack", &row("id-1", "h1"), NOW)
        .unwrap_err();
    assert!(matches!(err, InboxError::TeamMissing(_)), "{err}");
    assert!(!dir.path().join("teams/ghost").exists());
}

/// What a refused-path case puts in place of a file or folder of the inbox.
enum Planted {
    /// A link to `outside/<name>`.
    Link(&'static str),
    Fifo,
    Folder,
    File,
}

fn plant(at: &Path, what: &Planted, outside: &Path) {
    fs::create_dir_all(at.parent().unwrap()).unwrap();
    match what {
        Planted::Link(target) => std::os::unix::fs::symlink(outside.join(target), at).unwrap(),
        Planted::Fifo => {
            rustix::fs::mkfifoat(rustix::fs::CWD, at, rustix::fs::Mode::from_raw_mode(0o600))
                .unwrap()
        }
        Planted::Folder => fs::create_dir(at).unwrap(),
        Planted::File => fs::write(at, "[]").unwrap(),
    }
}

/// Everything below `dir`, with file contents, links not followed.
fn tree(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            let kind = fs::symlink_metadata(&path).unwrap().file_type();
            if kind.is_dir() {
                stack.push(path.clone());
            }
            let content = kind.is_file().then(|| fs::read(&path).unwrap());
            found.push((path, content));
        }
    }
    found.sort();
    found
}

#[cfg(unix)]
#[test]
fn links_fifos_and_folders_on_the_way_are_refused_at_once() {
    for (case, at, planted) in [
        (
            "inbox is a link",
            "forge/inboxes/jack.json",
            Planted::Link("keep.json"),
        ),
        ("inbox is a FIFO", "forge/inboxes/jack.json", Planted::Fifo),
        (
            "inbox is a folder",
            "forge/inboxes/jack.json",
            Planted::Folder,
        ),
        (
            "lock is a FIFO",
            "forge/inboxes/jack.json.lock",
            Planted::Fifo,
        ),
        (
            "lock is a link",
            "forge/inboxes/jack.json.lock",
            Planted::Link("lock"),
        ),
        ("inboxes/ is a link", "forge/inboxes", Planted::Link("")),
        ("inboxes/ is a file", "forge/inboxes", Planted::File),
        ("team folder is a link", "forge", Planted::Link("")),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let teams = dir.path().join("teams");
        let outside = dir.path().join("outside");
        fs::create_dir_all(teams.join("forge")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep.json"), "[]").unwrap();
        let at = teams.join(at);
        if at.exists() {
            fs::remove_dir(&at).unwrap();
        }
        plant(&at, &planted, &outside);
        let before = (tree(&teams), tree(&outside));
        // A FIFO opened for reading without O_NONBLOCK would never return here.
        let err = InboxWriter::new(teams.clone())
            .with_timings(short_timeout())
            .deliver("forge", "jack", &row("id-1", "h1"), NOW)
            .unwrap_err();
        assert!(matches!(err, InboxError::Refused(_)), "{case}: {err}");
        // Retried later: the next attempt checks the path afresh.
        assert!(err.is_retryable(), "{case}");
        assert!(
            err.to_string().contains(&at.display().to_string()),
            "{case}: {err}"
        );
        assert_eq!(
            (tree(&teams), tree(&outside)),
            before,
            "{case}: nothing written"
        );
    }
}

#[test]
fn threads_delivering_distinct_rows_lose_none() {
    let (_dir, writer, inbox) = setup();
    // Each thread waits in line behind up to 7 whole-inbox rewrites (read,
    // write, fsync, verify of up to 400 rows): about 0.3 s alone, 0.75 s with
    // four copies of this test, past the default 5 s under the whole suite at
    // load 8. What is checked is that no row is lost, not how long the line is.
    let writer = Arc::new(writer.with_timings(InboxTimings {
        lock_timeout: Duration::from_secs(120),
        ..InboxTimings::default()
    }));
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let writer = writer.clone();
            thread::spawn(move || {
                for n in 0..50 {
                    let nudge = row(&format!("id-{t}-{n}"), "h");
                    assert_eq!(
                        writer.deliver("forge", "jack", &nudge, NOW).unwrap(),
                        DeliveryOutcome::Inserted
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let ids: HashSet<String> = rows_of(&inbox)
        .iter()
        .map(|r| r["messageId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(rows_of(&inbox).len(), 400);
    assert_eq!(ids.len(), 400);
    assert!(!lock_path(&inbox).exists());
}

#[test]
fn threads_delivering_the_same_row_insert_it_once() {
    let (_dir, writer, inbox) = setup();
    let writer = Arc::new(writer);
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let writer = writer.clone();
            thread::spawn(move || writer.deliver("forge", "jack", &row("id-1", "h1"), NOW))
        })
        .collect();
    let outcomes: Vec<_> = handles
        .into_iter()
        .map(|h| h.join().unwrap().unwrap())
        .collect();
    let inserted = outcomes
        .iter()
        .filter(|o| **o == DeliveryOutcome::Inserted)
        .count();
    assert_eq!(inserted, 1);
    assert!(outcomes[..].iter().all(|o| matches!(
        o,
        DeliveryOutcome::Inserted | DeliveryOutcome::AlreadyPresent
    )));
    assert_eq!(rows_of(&inbox).len(), 1);
}

/// Child-process half of `processes_deliver_each_row_once`; a no-op in a normal run.
#[test]
fn child_process_deliverer() {
    let (Ok(teams), Ok(order)) = (
        std::env::var("MWS_TEST_INBOX_TEAMS_DIR"),
        std::env::var("MWS_TEST_INBOX_ORDER"),
    ) else {
        return;
    };
    let writer = InboxWriter::new(PathBuf::from(teams));
    let mut ids: Vec<usize> = (0..50).collect();
    if order == "reverse" {
        ids.reverse();
    }
    for n in ids {
        let outcome = writer
            .deliver("forge", "jack", &row(&format!("id-{n}"), "h"), NOW)
            .unwrap();
        assert!(matches!(
            outcome,
            DeliveryOutcome::Inserted | DeliveryOutcome::AlreadyPresent
        ));
    }
}

#[test]
fn processes_deliver_each_row_once() {
    let (dir, _writer, inbox) = setup();
    let spawn = |order: &str| {
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "infrastructure::inbox::tests::child_process_deliverer",
                "--quiet",
            ])
            .env("MWS_TEST_INBOX_TEAMS_DIR", dir.path().join("teams"))
            .env("MWS_TEST_INBOX_ORDER", order)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let children = [spawn("forward"), spawn("forward"), spawn("reverse")];
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let rows = rows_of(&inbox);
    let ids: HashSet<&str> = rows
        .iter()
        .map(|r| r["messageId"].as_str().unwrap())
        .collect();
    assert_eq!(rows.len(), 50);
    assert_eq!(ids.len(), 50);
    assert!(!lock_path(&inbox).exists());
}

/// `row` as `JSON.stringify(list, null, 2)` writes an element of `list`.
fn as_array_element(row: &NudgeRow) -> String {
    let pretty = serde_json::to_string_pretty(&row.to_json()).unwrap();
    format!("  {}", pretty.replace('\n', "\n  "))
}

/// An inbox of `rows` × `row` (`[row,row,…]`, no spaces), as an agent may write it.
fn poisoned(inbox: &Path, row: &str, rows: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(rows * (row.len() + 1) + 1);
    bytes.push(b'[');
    for i in 0..rows {
        if i > 0 {
            bytes.push(b',');
        }
        bytes.extend_from_slice(row.as_bytes());
    }
    bytes.push(b']');
    fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    fs::write(inbox, &bytes).unwrap();
    bytes
}

/// Issue 23 item 1: the inbox grows by the row and its separator only; the
/// stored rows are not pretty-printed into a larger form.
#[test]
fn a_poisoned_inbox_grows_by_one_row_and_keeps_its_bytes() {
    let (_dir, writer, inbox) = setup();
    let nudge = row("id-1", "h1");
    for element in ["0", "{}"] {
        let before = poisoned(&inbox, element, 1_000_000);
        assert_eq!(
            writer.deliver("forge", "jack", &nudge, NOW).unwrap(),
            DeliveryOutcome::Inserted,
            "{element}"
        );
        let after = fs::read(&inbox).unwrap();
        let added = format!(",\n{}", as_array_element(&nudge));
        assert_eq!(after.len(), before.len() + added.len(), "{element}");
        assert_eq!(after[..before.len() - 1], before[..before.len() - 1]);
        assert_eq!(
            after[before.len() - 1..before.len() - 1 + added.len()],
            *added.as_bytes()
        );
        assert_eq!(after.last(), Some(&b']'));
        let rows = rows_of(&inbox);
        assert_eq!(
            (rows.len(), &rows[1_000_000]),
            (1_000_001, &nudge.to_json())
        );
        assert_eq!(
            writer.deliver("forge", "jack", &nudge, NOW).unwrap(),
            DeliveryOutcome::AlreadyPresent
        );
    }
}

/// Issue 23 item 1: an inbox the row would push over the read cap is never
/// written (the old writer wrote it, could not read it back, and called
/// the delivered nudge "left untouched").
#[test]
fn an_inbox_the_row_would_push_over_the_read_cap_is_left_as_it_is() {
    let (_dir, writer, inbox) = setup();
    let cap = MAX_INBOX_FILE_BYTES as usize;
    let before = poisoned(&inbox, "0", (cap - 100) / 2);
    let err = writer
        .deliver("forge", "jack", &row("id-1", "h1"), NOW)
        .unwrap_err();
    assert!(
        matches!(&err, InboxError::InboxFull { size, .. } if *size > MAX_INBOX_FILE_BYTES),
        "{err}"
    );
    assert!(err.is_retryable());
    assert!(
        err.to_string().contains("not delivered, left untouched"),
        "{err}"
    );
    assert!(fs::read(&inbox).unwrap() == before, "byte-identical");
    let names: Vec<_> = fs::read_dir(inbox.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["jack.json"], "no temp or lock file left");
}

/// Issue 23 item 2: rows `JSON.parse` accepts and serde_json refuses (a
/// string cut mid-emoji, nesting deeper than 128) are delivered around and
/// kept byte for byte, spacing included.
#[test]
fn rows_the_app_accepts_are_delivered_around_and_kept_byte_for_byte() {
    let (_dir, writer, inbox) = setup();
    let deep = format!("{}{}", "[".repeat(5_000), "]".repeat(5_000));
    let stored = format!(
        "[ {{\"from\":\"jill\",\"text\":\"cut \\ud83d\",\"messageId\":\"m-1\"}},\n\t{{\"nested\": {deep}}} ,\"\\udc00\"  ]  \n"
    );
    fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    fs::write(&inbox, &stored).unwrap();
    let nudge = row("id-1", "h1");
    assert_eq!(
        writer.deliver("forge", "jack", &nudge, NOW).unwrap(),
        DeliveryOutcome::Inserted
    );
    let last_row_end = stored.rfind('"').unwrap() + 1;
    let expected = format!(
        "{},\n{}{}",
        &stored[..last_row_end],
        as_array_element(&nudge),
        &stored[last_row_end..]
    );
    assert_eq!(fs::read_to_string(&inbox).unwrap(), expected);
    assert_eq!(
        writer.deliver("forge", "jack", &nudge, NOW).unwrap(),
        DeliveryOutcome::AlreadyPresent
    );
    // A row whose messageId is a lone surrogate is another id, not ours.
    fs::write(&inbox, r#"[{"messageId":"id-2\ud83d"}]"#).unwrap();
    assert_eq!(
        writer
            .deliver("forge", "jack", &row("id-2\u{fffd}", "h1"), NOW)
            .unwrap(),
        DeliveryOutcome::Inserted
    );
}

#[test]
fn an_empty_array_and_a_missing_inbox_get_the_apps_layout() {
    let (_dir, writer, inbox) = setup();
    let nudge = row("id-1", "h1");
    let app_layout = format!("[\n{}\n]", as_array_element(&nudge));
    assert_eq!(
        app_layout,
        serde_json::to_string_pretty(&[nudge.to_json()]).unwrap()
    );
    writer.deliver("forge", "jack", &nudge, NOW).unwrap();
    assert_eq!(fs::read_to_string(&inbox).unwrap(), app_layout);
    fs::write(&inbox, " [ ] ").unwrap();
    writer.deliver("forge", "jack", &nudge, NOW).unwrap();
    assert_eq!(
        fs::read_to_string(&inbox).unwrap(),
        format!(" {app_layout} ")
    );
}

/// Issue 23 item 6: an inbox hard-linked to a file outside the root is
/// replaced by the delivery (temp file + rename), never written through.
#[test]
fn a_hard_linked_inbox_is_replaced_and_its_other_name_untouched() {
    let (dir, writer, inbox) = setup();
    let outside = dir.path().join("outside.json");
    fs::write(&outside, "[]").unwrap();
    fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    fs::hard_link(&outside, &inbox).unwrap();
    writer
        .deliver("forge", "jack", &row("id-1", "h1"), NOW)
        .unwrap();
    assert_eq!(fs::read(&outside).unwrap(), b"[]");
    assert_eq!(rows_of(&inbox), [row("id-1", "h1").to_json()]);
    #[cfg(unix)]
    assert_eq!(
        std::os::unix::fs::MetadataExt::nlink(&fs::metadata(&inbox).unwrap()),
        1
    );
}
