use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::domain::turn_settled::RuntimeProvider;
use crate::infrastructure::clock::ManualClock;
use crate::infrastructure::spool::testing::T0;

const OURS: &[u8] = b"\x7fELF ours";

/// An installed spool whose executable ships at `<tmp>/shipped`.
fn installed() -> (tempfile::TempDir, FsSpool) {
    let (dir, spool, _) = installed_with_clock();
    (dir, spool)
}

/// [`installed`], with the clock it reads (at [`T0`]).
fn installed_with_clock() -> (tempfile::TempDir, FsSpool, Arc<ManualClock>) {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("shipped");
    fs::write(&source, OURS).unwrap();
    let paths = SpoolPaths::for_teams_base(&dir.path().join("teams"));
    paths.install_hook(Some(&source)).unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let spool = FsSpool::keeping_executable(paths, clock.clone(), Some(source));
    (dir, spool, clock)
}

fn assert_ours(spool: &FsSpool, case: &str) {
    let paths = spool.paths();
    for (file, bytes) in [
        (paths.executable(), OURS),
        (paths.script(), HOOK_SCRIPT.as_bytes()),
    ] {
        let meta = fs::symlink_metadata(&file).unwrap();
        assert!(meta.is_file(), "{case}: {file:?}");
        assert_eq!(meta.permissions().mode() & 0o777, 0o755, "{case}: {file:?}");
        assert_eq!(fs::read(&file).unwrap(), bytes, "{case}: {file:?}");
    }
}

/// `.member-work-sync`, `runtime-hooks` and `bin` are folders of mode 0700.
fn assert_way_private(spool: &FsSpool, case: &str) {
    let script = spool.paths().script();
    let bin = script.parent().unwrap();
    for folder in [
        bin,
        bin.parent().unwrap(),
        bin.parent().unwrap().parent().unwrap(),
    ] {
        let meta = fs::symlink_metadata(folder).unwrap();
        assert!(meta.is_dir(), "{case}: {folder:?}");
        assert_eq!(
            meta.permissions().mode() & 0o777,
            0o700,
            "{case}: {folder:?}"
        );
    }
}

/// `count` pending files in `incoming/` (a claim of fewer takes a full
/// batch: a backlog drains).
fn spool_pending(spool: &FsSpool, count: usize) {
    let incoming = spool.paths().incoming();
    for i in 0..count {
        let name = format!("20261128T150000Z-{i}-{i:06}.claude.json");
        fs::write(incoming.join(name), b"{}").unwrap();
    }
}

type Tamper = fn(&Path, &Path);

/// Whatever was done to a program, the next drain (its claim) puts the
/// addon's back; a link's target is never written or chmod'ed, nor
/// another name of a hard-linked program (`<tmp>/other`).
#[test]
fn every_drain_puts_back_a_replaced_program() {
    let tamperings: [(&str, Tamper); 8] = [
        ("hard link", |file, outside| {
            let other = outside.with_file_name("other");
            fs::hard_link(file, &other).unwrap();
            fs::set_permissions(&other, fs::Permissions::from_mode(0o600)).unwrap();
        }),
        // Run as root (as here) the mode alone cannot stop the repair:
        // what is checked is that the drain puts 0700 back, which is what
        // lets the user's own process create the temp file in `bin/`.
        ("chmod 0500 bin", |file, _| {
            let bin = file.parent().unwrap();
            for folder in [
                bin,
                bin.parent().unwrap(),
                bin.parent().unwrap().parent().unwrap(),
            ] {
                fs::set_permissions(folder, fs::Permissions::from_mode(0o500)).unwrap();
            }
        }),
        ("overwritten", |file, _| {
            fs::write(file, b"#!/bin/sh\necho planted\n").unwrap()
        }),
        ("same size", |file, _| {
            let mut bytes = fs::read(file).unwrap();
            *bytes.last_mut().unwrap() ^= 1;
            fs::write(file, bytes).unwrap();
        }),
        ("chmod", |file, _| {
            fs::set_permissions(file, fs::Permissions::from_mode(0o600)).unwrap()
        }),
        ("link", |file, outside| {
            fs::remove_file(file).unwrap();
            symlink(outside, file).unwrap();
        }),
        ("folder", |file, _| {
            fs::remove_file(file).unwrap();
            fs::create_dir_all(file.join("inside")).unwrap();
        }),
        ("removed", |file, _| fs::remove_file(file).unwrap()),
    ];
    for (how, tamper) in tamperings {
        for script in [false, true] {
            let (dir, spool) = installed();
            let outside = dir.path().join("outside");
            fs::write(&outside, b"theirs").unwrap();
            fs::set_permissions(&outside, fs::Permissions::from_mode(0o600)).unwrap();
            let paths = spool.paths();
            let file = if script {
                paths.script()
            } else {
                paths.executable()
            };
            // A drain before: the shipped executable's hash is known.
            spool.claim_all(50).unwrap();
            tamper(&file, &outside);
            let case = format!("{how}, script: {script}");
            spool
                .claim_all(50)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_ours(&spool, &case);
            assert_eq!(fs::read(&outside).unwrap(), b"theirs", "{case}");
            let mode = fs::metadata(&outside).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{case}");
            assert_way_private(&spool, &case);
            let other = dir.path().join("other");
            if other.exists() {
                let meta = fs::symlink_metadata(&other).unwrap();
                assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{case}");
                let ours = if script { HOOK_SCRIPT.as_bytes() } else { OURS };
                assert_eq!(fs::read(&other).unwrap(), ours, "{case}");
            }
        }
    }
}

/// While a backlog drains (the last claim took a full batch), the
/// executable is read and hashed once [`CHECK_EXECUTABLE_IN_BACKLOG_MS`]
/// passed since it last was; the drains between put back at once what its
/// metadata shows (removed, another size, chmod'ed, a link on the way to
/// `bin/`) and the script, and leave only a same-size change for the next
/// hash. A clock stepped back, or a drain at rest, hashes at once.
#[test]
fn a_backlog_hashes_the_executable_once_a_second() {
    let (dir, spool, clock) = installed_with_clock();
    spool_pending(&spool, 22);
    let outside = dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let untouched: Tamper = |_, _| {};
    let same_size: Tamper = |file, _| {
        let mut bytes = fs::read(file).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        fs::write(file, bytes).unwrap();
    };
    let removed: Tamper = |file, _| fs::remove_file(file).unwrap();
    let resized: Tamper = |file, _| fs::write(file, b"planted, longer").unwrap();
    let chmod: Tamper =
        |file, _| fs::set_permissions(file, fs::Permissions::from_mode(0o700)).unwrap();
    let bin_linked: Tamper = |file, outside| {
        let bin = file.parent().unwrap();
        fs::remove_dir_all(bin).unwrap();
        symlink(outside, bin).unwrap();
    };
    let second = CHECK_EXECUTABLE_IN_BACKLOG_MS;
    // (case, tampering of the executable, clock, executable ours after the
    // drain); every drain's claim takes a full batch of 2.
    let drains: [(&str, Tamper, EpochMs, bool); 10] = [
        ("the first drain", untouched, T0, true),
        ("same size", same_size, T0 + 1, false),
        ("removed", removed, T0 + 2, true),
        ("another size", resized, T0 + 2, true),
        ("same size again", same_size, T0 + 3, false),
        ("chmod", chmod, T0 + 4, true),
        ("bin/ a link", bin_linked, T0 + 5, true),
        (
            "same size, within the second",
            same_size,
            T0 + 5 + second - 1,
            false,
        ),
        (
            "a second after the last hash",
            untouched,
            T0 + 5 + second,
            true,
        ),
        ("the clock stepped back", same_size, T0 - 1, true),
    ];
    for (case, tamper, now, want_ours) in drains {
        let executable = spool.paths().executable();
        fs::write(spool.paths().script(), b"#!/bin/sh\necho planted\n").unwrap();
        tamper(&executable, &outside);
        clock.set(now);
        let claimed = spool.claim_all(2).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert_eq!(claimed.len(), 2, "{case}");
        let ours = fs::read(&executable).is_ok_and(|bytes| bytes == OURS);
        assert_eq!(ours, want_ours, "{case}");
        let script = fs::read(spool.paths().script()).unwrap();
        assert_eq!(script, HOOK_SCRIPT.as_bytes(), "{case}");
        assert_way_private(&spool, case);
        if want_ours {
            assert_ours(&spool, case);
        }
    }
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "written through the link"
    );
    // At rest (a claim that took less than a full batch), the next drain
    // hashes at once.
    assert!(spool.claim_all(50).unwrap().len() < 50);
    same_size(&spool.paths().executable(), &outside);
    clock.set(T0);
    spool.claim_all(50).unwrap();
    assert_ours(&spool, "at rest");
}

/// While a backlog drains and the shipped file cannot be read, an
/// executable put in `bin/` is removed at the next drain, not a second
/// later: with no known hash, nothing there looks kept.
#[test]
fn a_backlog_without_the_shipped_file_removes_a_planted_executable_at_once() {
    let (dir, spool, clock) = installed_with_clock();
    spool_pending(&spool, 6);
    let executable = spool.paths().executable();
    assert_eq!(spool.claim_all(2).unwrap().len(), 2);
    fs::remove_file(dir.path().join("shipped")).unwrap();
    // The hash a second later finds it changed and nothing to restore it
    // from: it goes, and the shipped file's hash is no longer known.
    fs::write(&executable, b"\x7fELF ourz").unwrap();
    clock.set(T0 + CHECK_EXECUTABLE_IN_BACKLOG_MS);
    assert_eq!(spool.claim_all(2).unwrap().len(), 2);
    assert!(fs::symlink_metadata(&executable).is_err());
    // Within the next second: planted again, removed again at once.
    fs::write(&executable, b"\x7fELF ourz").unwrap();
    fs::set_permissions(&executable, fs::Permissions::from_mode(0o755)).unwrap();
    clock.set(T0 + CHECK_EXECUTABLE_IN_BACKLOG_MS + 1);
    assert_eq!(spool.claim_all(2).unwrap().len(), 2);
    assert!(fs::symlink_metadata(&executable).is_err());
}

/// A link (or a file) in place of a folder on the way to `bin/` is
/// replaced by a real folder holding the addon's programs; the folder
/// the link led to keeps its planted program, untouched.
#[test]
fn a_drain_repairs_a_linked_folder_on_the_way_to_bin() {
    for rel in [
        ".member-work-sync",
        ".member-work-sync/runtime-hooks",
        ".member-work-sync/runtime-hooks/bin",
    ] {
        for file_instead in [false, true] {
            let (dir, spool) = installed();
            let outside = dir.path().join("outside");
            let planted = outside.join("runtime-hooks/bin");
            fs::create_dir_all(&planted).unwrap();
            fs::write(planted.join(HOOK_EXECUTABLE_NAME), b"planted").unwrap();
            let at = dir.path().join("teams").join(rel);
            fs::remove_dir_all(&at).unwrap();
            if file_instead {
                fs::write(&at, b"a file").unwrap();
            } else {
                let depth = rel.matches('/').count();
                let target = ["", "runtime-hooks", "runtime-hooks/bin"][depth];
                symlink(outside.join(target), &at).unwrap();
            }
            spool.claim_all(50).unwrap();
            assert!(fs::symlink_metadata(&at).unwrap().is_dir(), "{rel}");
            assert_ours(&spool, rel);
            assert_eq!(
                fs::read(planted.join(HOOK_EXECUTABLE_NAME)).unwrap(),
                b"planted"
            );
            assert_eq!(fs::read_dir(&planted).unwrap().count(), 1, "{rel}");
            // The hook writes into `incoming/` and never creates it: a
            // Stop after the repair is spooled and the next drain takes it.
            let root = &spool.paths().root;
            for folder in ["incoming", "processing", "processed", "invalid"] {
                let meta = fs::symlink_metadata(root.join(folder)).unwrap();
                assert!(meta.is_dir(), "{rel}: {folder}");
                assert_eq!(meta.permissions().mode() & 0o777, 0o700, "{rel}: {folder}");
            }
            run_hook(&spool, b"{\"session_id\":\"s\"}");
            let claims = spool.claim_all(50).unwrap();
            assert_eq!(claims.len(), 1, "{rel}");
            assert_eq!(claims[0].provider, Some(RuntimeProvider::Claude), "{rel}");
        }
    }
}

/// Runs the installed hook script with `payload` as a Claude Stop.
fn run_hook(spool: &FsSpool, payload: &[u8]) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut hook = Command::new("sh")
        .arg(spool.paths().script())
        .arg(&spool.paths().root)
        .args(["claude", "262144"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    hook.stdin.take().unwrap().write_all(payload).unwrap();
    assert!(hook.wait().unwrap().success());
}

#[derive(Default)]
struct Recorded(Mutex<Vec<LogEntry>>);

impl LogSink for Recorded {
    fn log(&self, entry: LogEntry) {
        self.0.lock().unwrap().push(entry);
    }
}

/// `chattr <flag> <path>`; false where it cannot be set (not root, or a
/// file system without the attribute).
fn chattr(flag: &str, path: &Path) -> bool {
    std::process::Command::new("chattr")
        .arg(flag)
        .arg(path)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Programs that cannot be put back (`bin/` immutable, which stops root
/// too) do not stop the drain: the payload waiting is claimed, and the
/// failure is logged once however many drains meet it.
#[test]
fn a_failure_to_keep_the_programs_is_logged_once_and_the_drain_goes_on() {
    let (_dir, spool) = installed();
    let log = Arc::new(Recorded::default());
    let spool = spool.with_log(log.clone());
    let bin = spool.paths().script().parent().unwrap().to_path_buf();
    fs::write(spool.paths().script(), b"#!/bin/sh\necho planted\n").unwrap();
    let name = "20261122T100000Z-1-0.claude.json";
    fs::write(spool.paths().incoming().join(name), b"{}").unwrap();
    if !chattr("+i", &bin) {
        eprintln!("skipped: `chattr +i` needs root and a file system with the attribute");
        return;
    }
    let first = spool.claim_all(50);
    let second = spool.claim_all(50);
    assert!(chattr("-i", &bin));
    let first = first.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].id, name);
    assert!(second.unwrap().is_empty());
    let entries = log.0.lock().unwrap().clone();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].code, LogCode::HookProgramsNotKept);
    assert!(
        entries[0].message.contains(&*bin.to_string_lossy()),
        "{}",
        entries[0].message
    );
    // Kept again once possible.
    spool.claim_all(50).unwrap();
    assert_ours(&spool, "after chattr -i");
}

/// With the shipped file gone, a program at the executable's name that
/// is not known to be the addon's is removed, never left to run.
#[test]
fn without_the_shipped_file_an_unknown_executable_is_removed() {
    let (dir, spool) = installed();
    fs::remove_file(dir.path().join("shipped")).unwrap();
    fs::write(spool.paths().executable(), b"planted").unwrap();
    spool.claim_all(50).unwrap();
    assert!(!spool.paths().executable().exists());
    assert_eq!(
        fs::read(spool.paths().script()).unwrap(),
        HOOK_SCRIPT.as_bytes()
    );
}

/// A drain where no spool was ever installed creates nothing.
#[test]
fn a_drain_installs_nothing_where_no_spool_was_installed() {
    let dir = tempfile::tempdir().unwrap();
    let teams = dir.path().join("teams");
    fs::create_dir_all(teams.join(".member-work-sync")).unwrap();
    let paths = SpoolPaths::for_teams_base(&teams);
    let clock = Arc::new(ManualClock::new(T0));
    let spool = FsSpool::keeping_executable(paths, clock, None);
    assert!(spool.claim_all(50).unwrap().is_empty());
    assert_eq!(
        fs::read_dir(teams.join(".member-work-sync"))
            .unwrap()
            .count(),
        0
    );
}
