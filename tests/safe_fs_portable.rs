//! The file boundary's guarantees, written once for every platform: this suite
//! runs with `cargo test` on Linux and, built for `x86_64-pc-windows-gnu`,
//! under wine in `npm run test:windows` (the Windows implementation,
//! `safe_fs/dir_windows.rs`, is the one exercised there).

use std::fs;
use std::io;

use member_work_sync::infrastructure::safe_fs::{
    commit, is_hard_linked, Dir, FileKind, FileRead, TrustedRoot, TEMP_MARK,
};

fn team() -> (tempfile::TempDir, TrustedRoot, Dir) {
    let dir = tempfile::tempdir().unwrap();
    let root = TrustedRoot::new(dir.path().join("teams"));
    let team = root.create_dir_all(&root.join("forge")).unwrap();
    (dir, root, team)
}

fn names(dir: &Dir) -> Vec<String> {
    let mut names: Vec<_> = dir.entries().unwrap().into_iter().map(|e| e.name).collect();
    names.sort();
    names
}

#[test]
fn atomic_writes_replace_whole_files_and_leave_no_temp_file() {
    let (_dir, _root, team) = team();
    team.write_atomic("status.json", b"{\"v\":1}", 0o600)
        .unwrap();
    team.write_atomic("status.json", b"{\"v\":2}", 0o600)
        .unwrap();
    team.write_replacing("boot-time", b"x\n", 0o600, false)
        .unwrap();
    assert_eq!(
        team.read("status.json", 100).unwrap(),
        FileRead::Bytes(b"{\"v\":2}".to_vec())
    );
    assert_eq!(names(&team), ["boot-time", "status.json"]);
    assert!(names(&team).iter().all(|n| !n.contains(TEMP_MARK)));
}

#[test]
fn reads_are_capped_and_only_of_regular_files() {
    let (_dir, _root, team) = team();
    team.write_atomic("a.json", b"12345", 0o644).unwrap();
    team.create_dir("folder.json").unwrap();
    let cases: [(&str, u64, FileRead); 4] = [
        ("a.json", 5, FileRead::Bytes(b"12345".to_vec())),
        ("a.json", 4, FileRead::TooLarge),
        ("folder.json", 100, FileRead::NotAFile),
        ("missing.json", 100, FileRead::Missing),
    ];
    for (name, max, expected) in cases {
        assert_eq!(team.read(name, max).unwrap(), expected, "{name} cap {max}");
    }
}

#[test]
fn create_new_publishes_once_and_rename_can_refuse_to_replace() {
    let (_dir, _root, team) = team();
    assert!(team.create_new("a.lock", b"1\n", 0o600).unwrap());
    assert!(!team.create_new("a.lock", b"2\n", 0o600).unwrap());
    assert_eq!(
        team.read("a.lock", 10).unwrap(),
        FileRead::Bytes(b"1\n".to_vec())
    );

    team.write_atomic("b", b"b", 0o644).unwrap();
    assert!(
        !team.rename("a.lock", &team, "b", false).unwrap(),
        "no replace"
    );
    assert_eq!(team.read("b", 10).unwrap(), FileRead::Bytes(b"b".to_vec()));
    let other = team.create_dir("processing").unwrap();
    assert!(team.rename("a.lock", &other, "a.lock", false).unwrap());
    assert!(
        !team.rename("a.lock", &other, "x", true).unwrap(),
        "source gone"
    );
    assert!(other.rename("a.lock", &team, "b", true).unwrap(), "replace");
    assert_eq!(
        team.read("b", 10).unwrap(),
        FileRead::Bytes(b"1\n".to_vec())
    );
    assert!(names(&team).iter().all(|n| !n.contains(TEMP_MARK)));
}

#[test]
fn appends_terminate_a_torn_tail_first() {
    let (_dir, _root, team) = team();
    team.append_lines("j.jsonl", b"{\"a\":1}\n").unwrap();
    let path = team.path().join("j.jsonl");
    let mut text = fs::read(&path).unwrap();
    text.extend_from_slice(b"{\"torn\":");
    fs::write(&path, text).unwrap();
    team.append_lines("j.jsonl", b"{\"b\":2}\n").unwrap();
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"a\":1}\n{\"torn\":\n{\"b\":2}\n"
    );
}

/// Issue 23 item 6 on every platform (`st_nlink` on Unix,
/// `nNumberOfLinks` on Windows): an append never goes through another hard
/// link; a rewrite replaces the name and leaves the other one as it was.
#[test]
fn a_hard_linked_file_is_never_appended_to_and_a_rewrite_replaces_it() {
    let (dir, _root, team) = team();
    let outside = dir.path().join("outside.jsonl");
    fs::write(&outside, b"precious").unwrap();
    fs::hard_link(&outside, team.path().join("journal.jsonl")).unwrap();
    let refused = team.append_lines("journal.jsonl", b"{}\n").unwrap_err();
    assert!(is_hard_linked(&refused), "{refused}");
    assert_eq!(refused.kind(), io::ErrorKind::InvalidData);
    assert!(refused.to_string().contains("journal.jsonl"), "{refused}");
    team.write_atomic_parts("journal.jsonl", &[b"{}", b"\n"], 0o600)
        .unwrap();
    assert_eq!(fs::read(&outside).unwrap(), b"precious");
    team.append_lines("journal.jsonl", b"[]\n").unwrap();
    assert_eq!(
        team.read("journal.jsonl", 100).unwrap(),
        FileRead::Bytes(b"{}\n[]\n".to_vec())
    );
}

#[test]
fn remove_file_refuses_folders_and_remove_tree_takes_them() {
    let (_dir, _root, team) = team();
    let old = team.create_dir("old").unwrap();
    old.create_dir("deeper")
        .unwrap()
        .write_atomic("f", b"x", 0o644)
        .unwrap();
    drop(old);
    assert!(team.remove_file("old").is_err());
    assert!(!team.remove_file("missing").unwrap());
    team.remove_tree("old").unwrap();
    assert_eq!(team.meta("old").unwrap(), None);
}

#[test]
fn lock_files_exclude_a_second_holder() {
    let (_dir, _root, team) = team();
    let first = team.open_lock_file("status.json.lock").unwrap();
    let second = team.open_lock_file("status.json.lock").unwrap();
    first.try_lock().unwrap();
    assert!(matches!(
        second.try_lock(),
        Err(fs::TryLockError::WouldBlock)
    ));
    drop(first);
    second.try_lock().unwrap();
}

#[test]
fn names_are_single_plain_components() {
    let (_dir, _root, team) = team();
    let mut refused = vec!["a/b", "..", ".", "", "a\0b"];
    // Windows would alias these or open a device or an alternate data stream.
    if cfg!(windows) {
        refused.extend([
            "a\\b",
            "CON",
            "nul.json",
            "COM1",
            "a:b",
            "trailing.",
            "trailing ",
        ]);
    }
    for name in refused {
        let error = team.write_atomic(name, b"x", 0o644).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{name:?}");
        assert!(team.read(name, 10).is_err(), "{name:?}");
    }
    assert_eq!(names(&team), Vec::<String>::new());
}

#[test]
fn meta_reports_kind_and_size_without_following() {
    let (_dir, _root, team) = team();
    team.write_atomic("a", b"abc", 0o644).unwrap();
    team.create_dir("d").unwrap();
    let file = team.meta("a").unwrap().unwrap();
    assert_eq!((file.kind, file.len), (FileKind::File, 3));
    assert!(file.modified_ms > 0);
    assert_eq!(team.meta("d").unwrap().unwrap().kind, FileKind::Dir);
    let mut kinds: Vec<_> = team
        .entries()
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.kind))
        .collect();
    kinds.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        kinds,
        [
            ("a".to_string(), Some(FileKind::File)),
            ("d".to_string(), Some(FileKind::Dir))
        ]
    );
}

/// While a folder is open, swapping it for a link never makes a write land
/// elsewhere. Unix: the handle follows the folder wherever it was moved, so
/// the write lands in the moved folder, never through the planted link.
/// Windows: the open folder denies delete sharing, so it cannot be moved
/// away (and replaced) at all while in use.
#[test]
fn an_open_folder_cannot_be_swapped_for_a_link_under_a_write() {
    let (_dir, root, team) = team();
    let members = team.create_dir("members").unwrap();
    let moved = root.join("forge/moved");
    let swapped = fs::rename(members.path(), &moved);
    #[cfg(windows)]
    {
        assert!(swapped.is_err(), "renamed an open folder");
        drop(members);
        fs::rename(root.join("forge/members"), &moved).unwrap();
    }
    #[cfg(unix)]
    {
        swapped.unwrap();
        let elsewhere = _dir.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, root.join("forge/members")).unwrap();
        members.write_atomic("status.json", b"x", 0o600).unwrap();
        assert!(moved.join("status.json").exists());
        assert!(!elsewhere.join("status.json").exists());
        // A fresh walk refuses the link.
        let error = root
            .write_atomic(&root.join("forge/members/status.json"), b"y")
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotADirectory);
    }
}

/// The temp-file sweep removes a crashed writer's file only once its pid is
/// gone (process liveness: `kill(pid, 0)` on Unix, `OpenProcess` on
/// Windows): a child that has exited is gone, this process is not.
#[test]
fn the_sweep_removes_a_gone_writers_temp_file_and_keeps_a_running_ones() {
    let (_dir, _root, team) = team();
    // This test binary again, only listing its tests: it exits at once.
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .arg("--list")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(child.wait().unwrap().success());
    let gone = format!(".status.json{TEMP_MARK}{}.0", child.id());
    drop(child);
    let running = format!(".status.json{TEMP_MARK}{}.0", std::process::id());
    for name in [&gone, &running] {
        fs::write(team.path().join(name), b"x").unwrap();
    }
    // Ten minutes on: past "may still be in use", short of "abandoned anyway".
    let later = team.meta(&gone).unwrap().unwrap().modified_ms + 10 * 60 * 1000;
    let swept = team.sweep_temp_files(later).unwrap();
    assert_eq!((swept.removed, swept.kept), (1, 1));
    assert_eq!(names(&team), [running]);
}

/// A staged batch is published whole (each file old or new, no temp file
/// left, an unpublished one removed), and stamps follow the change: from
/// `lstat`/`fstat` on Unix, from the handle's file index and change time on
/// Windows.
#[test]
fn a_staged_batch_is_published_whole_and_stamps_see_the_change() {
    let (_dir, root, team) = team();
    team.write_atomic("a.json", b"old", 0o600).unwrap();
    let (_, before) = team.stamp("a.json").unwrap().unwrap();
    let batch = vec![
        team.try_clone()
            .unwrap()
            .stage("a.json", b"new-a", 0o600)
            .unwrap(),
        team.try_clone()
            .unwrap()
            .stage("b.json", b"new-b", 0o600)
            .unwrap(),
    ];
    commit(batch).unwrap();
    drop(
        team.try_clone()
            .unwrap()
            .stage("c.json", b"c", 0o600)
            .unwrap(),
    );
    assert_eq!(names(&team), ["a.json", "b.json"]);
    assert_eq!(
        team.read("b.json", 100).unwrap(),
        FileRead::Bytes(b"new-b".to_vec())
    );

    let (kind, after) = team.stamp("a.json").unwrap().unwrap();
    assert_eq!((kind, after.len, after.links), (FileKind::File, 5, 1));
    assert_ne!(after, before);
    let read = team.read_stamped("a.json", 100).unwrap();
    assert_eq!(read.read, FileRead::Bytes(b"new-a".to_vec()));
    assert_eq!(read.stamp, Some(after));
    assert_eq!(team.stamp("missing").unwrap(), None);

    let teams = root.create_dir_all(root.path()).unwrap();
    let (kind, forge) = teams.stamp("forge").unwrap().unwrap();
    let own = team.own_stamp().unwrap();
    assert_eq!(
        (kind, forge.dev, forge.ino),
        (FileKind::Dir, own.dev, own.ino)
    );
}
