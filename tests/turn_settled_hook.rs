//! The shipped Stop hooks run for real: the script under every POSIX shell on
//! the machine (`sh`, `dash` when installed, `bash --posix` when installed)
//! and the native executable (`hooks/native`, built here with cargo), through
//! the same behavioural cases where they apply; and the settings command as
//! Claude Code runs it (`sh -c "<command>"`).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use member_work_sync::domain::turn_settled::settings::{executable_hook_command, hook_command};
use member_work_sync::domain::turn_settled::{RuntimeProvider, MAX_PAYLOAD_BYTES};
use member_work_sync::infrastructure::spool::{
    parse_spool_name, HookProgram, SpoolName, SpoolPaths, HOOK_EXECUTABLE_NAME,
};
use proptest::prelude::*;

/// The native hook, built once per test run with the cargo that runs the
/// tests, release profile as shipped, into a target folder of its own (the
/// running `cargo test` may hold the lock of the usual one).
fn built_executable() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hook-build");
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--release",
                "--quiet",
                "--package",
                "turn-settled-hook",
            ])
            .arg("--target-dir")
            .arg(&target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("run cargo");
        assert!(status.success(), "cargo build --package turn-settled-hook");
        target_dir.join("release").join(HOOK_EXECUTABLE_NAME)
    })
}

/// Waits until `program`, just written, can be started: while any other
/// test thread's child, forked but not yet exec'd, still holds a copy of
/// the descriptor it was written through, exec fails with ETXTBSY ("text
/// file busy"). Runs it once with no arguments and no input (the hook then
/// writes nothing and exits 0), retrying only that error.
fn ready_to_run(program: &Path) {
    for _ in 0..400 {
        let started = Command::new(program)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        match started {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => {
                other.unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
                return;
            }
        }
    }
    panic!("{} stayed busy", program.display());
}

/// One implementation of the hook under test.
#[derive(Debug, Clone)]
enum Hook {
    /// The script, run by this shell (program and options).
    Script(Vec<&'static str>),
    /// The native executable, run directly.
    Executable,
}

impl Hook {
    /// What it keeps of a payload of `len` bytes over the bound `max`: the
    /// script at least `max + 1` bytes, up to whole 512-byte blocks of the
    /// file size limit that stops its copy; the executable exactly `max + 1`.
    fn kept_of_oversized(&self, max: usize, len: usize) -> usize {
        match self {
            Hook::Script(_) => len.min((max + 1).div_ceil(512) * 512),
            Hook::Executable => max + 1,
        }
    }
}

/// Every implementation: the script under each shell, then the executable.
fn hooks() -> Vec<Hook> {
    let mut hooks: Vec<Hook> = shells().into_iter().map(Hook::Script).collect();
    hooks.push(Hook::Executable);
    hooks
}

/// A spool with `hook` installed, and the argv prefix that runs it
/// (`shell… script` or `executable`).
fn installed_hook(hook: &Hook) -> (tempfile::TempDir, SpoolPaths, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let paths = SpoolPaths::for_teams_base(&dir.path().join("teams"));
    let prefix = match hook {
        Hook::Script(shell) => {
            let script = paths.install().unwrap();
            let mut prefix: Vec<String> = shell.iter().map(|s| s.to_string()).collect();
            prefix.push(script.to_string_lossy().into_owned());
            prefix
        }
        Hook::Executable => {
            let installed = paths.install_hook(Some(built_executable())).unwrap();
            let HookProgram::Executable(executable) = installed.program else {
                panic!(
                    "executable not installed: {:?}",
                    installed.executable_failure
                );
            };
            ready_to_run(&executable);
            vec![executable.to_string_lossy().into_owned()]
        }
    };
    (dir, paths, prefix)
}

/// `prefix` as the `&str`s [`run`] takes.
fn argv(prefix: &[String]) -> Vec<&str> {
    prefix.iter().map(String::as_str).collect()
}

/// The shells to run the script under: `sh` always; the others when present.
fn shells() -> Vec<Vec<&'static str>> {
    let mut shells = vec![vec!["sh"]];
    let present = |name: &str| {
        Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if present("dash") {
        shells.push(vec!["dash"]);
    } else {
        eprintln!("dash not installed: skipping the dash runs");
    }
    if present("bash") {
        shells.push(vec!["bash", "--posix"]);
    }
    shells
}

struct Run {
    status: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Runs `hook args…` (`hook`: `shell script` or `executable`) with `stdin` piped in.
fn run(hook: &[&str], args: &[&str], stdin: &[u8]) -> Run {
    run_limited(hook, args, stdin, None)
}

/// [`run`], with writes past `max_file_bytes` failing (`RLIMIT_FSIZE`, with
/// `SIGXFSZ` ignored so a write past it returns `EFBIG`): a full disk.
fn run_limited(hook: &[&str], args: &[&str], stdin: &[u8], max_file_bytes: Option<u64>) -> Run {
    let mut command = Command::new(hook[0]);
    command
        .args(&hook[1..])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(max) = max_file_bytes {
        use std::os::unix::process::CommandExt;
        let limit = libc::rlimit {
            rlim_cur: max as libc::rlim_t,
            rlim_max: max as libc::rlim_t,
        };
        // SAFETY: between fork and exec only async-signal-safe calls
        // (setrlimit, signal) on values prepared before the fork.
        unsafe {
            command.pre_exec(move || {
                if libc::signal(libc::SIGXFSZ, libc::SIG_IGN) == libc::SIG_ERR
                    || libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = command.spawn().expect("spawn the hook");
    let mut pipe = child.stdin.take().expect("stdin");
    let payload = stdin.to_vec();
    // Write from another thread: a hook that stopped reading must not hang the test.
    let writer = std::thread::spawn(move || {
        let result = pipe.write_all(&payload);
        drop(pipe);
        result
    });
    let out = child.wait_with_output().expect("wait");
    let write_result = writer.join().expect("writer thread");
    assert!(
        write_result.is_ok(),
        "hook stopped reading stdin: {write_result:?}"
    );
    Run {
        status: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: out.stderr,
    }
}

fn installed_spool() -> (tempfile::TempDir, SpoolPaths, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let paths = SpoolPaths::for_teams_base(&dir.path().join("teams"));
    let script = paths.install().unwrap();
    (dir, paths, script)
}

fn incoming(paths: &SpoolPaths) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(paths.incoming())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| b"abcdefghij{}\"\n "[i % 15]).collect()
}

/// Every payload is kept whole up to the bound, and an oversized one's
/// first bytes are, through a pipe and whatever its size.
#[test]
fn captures_payloads_completely_up_to_the_bound() {
    let max = MAX_PAYLOAD_BYTES as usize;
    for shell in hooks() {
        let (_dir, paths, hook) = installed_hook(&shell);
        let root = paths.root.to_string_lossy().into_owned();
        // An oversized payload keeps its first bytes, more than the bound
        // (the drainer reads bound + 1 and files it as truncated).
        let block_end = (max + 1).div_ceil(512) * 512;
        let lengths = [
            1,
            2048,
            max,
            max + 1,
            max + 2,
            block_end + 1,
            300 * 1024,
            1024 * 1024,
        ];
        for len in lengths {
            let kept = if len <= max {
                len
            } else {
                shell.kept_of_oversized(max, len)
            };
            let body = payload(len);
            let out = run(&argv(&hook), &[&root, "claude", "262144"], &body);
            assert_eq!(
                (out.status, out.stdout.len(), out.stderr.len()),
                (0, 0, 0),
                "{shell:?} {len}"
            );
            let names = incoming(&paths);
            assert_eq!(names.len(), 1, "{shell:?} {len}: {names:?}");
            assert!(matches!(
                parse_spool_name(&names[0]),
                SpoolName::Event {
                    provider: RuntimeProvider::Claude,
                    ..
                }
            ));
            // The name's UTC timestamp (boot time + uptime on Linux, else date) is now.
            let stamp = chrono::NaiveDateTime::parse_from_str(&names[0][..16], "%Y%m%dT%H%M%SZ")
                .unwrap()
                .and_utc()
                .timestamp();
            let now = chrono::Utc::now().timestamp();
            assert!(
                (now - 5..=now + 1).contains(&stamp),
                "{shell:?}: {} vs now {now}",
                names[0]
            );
            let path = paths.incoming().join(&names[0]);
            let stored = fs::read(&path).unwrap();
            assert_eq!(stored.len(), kept, "{shell:?} {len}");
            assert_eq!(&stored[..], &body[..kept], "{shell:?} {len}");
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
            fs::remove_file(path).unwrap();
        }
    }
}

/// The hook copies its input in blocks: the number of `read`s of stdin does
/// not grow with the payload. (The shell's `read` builtin, which it used to
/// copy with, takes a pipe one byte per system call: 65,536 reads for 64 KiB,
/// which made a 256 KiB payload cost a hundred times a bare `sh -c :`.)
/// Counted with strace; skipped where it is not installed or not allowed.
#[test]
fn reads_its_input_in_blocks_not_bytes() {
    let traced = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=read", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !traced {
        eprintln!("strace not available: skipping the read count");
        return;
    }
    let len = 64 * 1024;
    let many_lines = payload(len);
    let one_line: Vec<u8> = many_lines
        .iter()
        .map(|&b| if b == b'\n' { b' ' } else { b })
        .collect();
    let max = MAX_PAYLOAD_BYTES as usize;
    let oversized = payload(max + 64 * 1024);
    for shell in hooks() {
        for (what, body) in [
            ("64 KiB in many lines", &many_lines),
            ("one 64 KiB line", &one_line),
            ("320 KiB, oversized", &oversized),
        ] {
            let (dir, paths, hook) = installed_hook(&shell);
            let root = paths.root.to_string_lossy().into_owned();
            let trace = dir.path().join("trace");
            let mut traced_shell = vec!["strace", "-f", "-qq", "-e", "trace=read", "-o"];
            let trace_s = trace.to_string_lossy().into_owned();
            traced_shell.push(&trace_s);
            traced_shell.extend(argv(&hook));
            let out = run(&traced_shell, &[&root, "claude", "262144"], body);
            assert_eq!(out.status, 0, "{shell:?} {what}");
            let names = incoming(&paths);
            assert_eq!(names.len(), 1, "{shell:?} {what}: {names:?}");
            let stored = fs::read(paths.incoming().join(&names[0])).unwrap();
            assert_eq!(
                &stored[..stored.len().min(max + 1)],
                &body[..body.len().min(max + 1)]
            );
            let stdin_reads = fs::read_to_string(&trace)
                .unwrap()
                .lines()
                .filter(|line| line.contains(" read(0,"))
                .count();
            // A block copy takes a few reads (pipe-sized chunks); a
            // byte-wise one, one per byte. (The clock's few dozen bytes of
            // /proc are read through fd 0 too, a byte at a time.)
            assert!(
                stdin_reads <= body.len() / 64,
                "{shell:?} {what}: {stdin_reads} reads of stdin for {} bytes",
                body.len()
            );
        }
    }
}

/// Where the shell cannot set a file size limit (here `ulimit` is shadowed
/// by a function that fails), the copy is bounded by `head -c` instead:
/// payloads are still kept whole up to the bound and cut past it.
#[test]
fn without_a_file_size_limit_the_copy_is_bounded_by_count() {
    let max = MAX_PAYLOAD_BYTES as usize;
    // The script only: the executable counts its bytes whatever the limits.
    for shell in shells() {
        let (_dir, paths, script) = installed_spool();
        let root = paths.root.to_string_lossy().into_owned();
        for (len, kept) in [(2048, 2048), (max, max), (300 * 1024, max + 1)] {
            let body = payload(len);
            let mut command = Command::new(shell[0]);
            command
                .args(&shell[1..])
                .arg("-c")
                .arg("ulimit() { return 1; }; . \"$0\"")
                .arg(&script)
                .args([&root, "claude", "262144"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            let mut child = command.spawn().unwrap();
            let mut pipe = child.stdin.take().unwrap();
            let writer = std::thread::spawn(move || pipe.write_all(&body).map(|()| body));
            let out = child.wait_with_output().unwrap();
            let body = writer.join().unwrap().expect("the hook read all of stdin");
            assert_eq!(
                (out.status.code(), out.stdout.len(), out.stderr.len()),
                (Some(0), 0, 0),
                "{shell:?} {len}"
            );
            let names = incoming(&paths);
            assert_eq!(names.len(), 1, "{shell:?} {len}: {names:?}");
            let path = paths.incoming().join(&names[0]);
            assert_eq!(fs::read(&path).unwrap(), &body[..kept], "{shell:?} {len}");
            fs::remove_file(path).unwrap();
        }
    }
}

/// Names in `incoming/`, hidden ones (temp files) included.
fn incoming_all(paths: &SpoolPaths) -> Vec<String> {
    fs::read_dir(paths.incoming())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// A write that fails part-way (a full disk: here a 24 KiB file size
/// limit) publishes nothing and leaves no temp file; the hook still exits 0
/// silently. It used to rename the first 24,576 bytes into `incoming/` as if
/// they were the whole payload.
#[test]
fn a_failed_write_publishes_nothing() {
    let one_line = payload(64 * 1024)
        .into_iter()
        .map(|b| if b == b'\n' { b' ' } else { b })
        .collect::<Vec<u8>>();
    let cases: [(&str, Vec<u8>); 3] = [
        ("one 64 KiB line", one_line),
        ("64 KiB in many lines", payload(64 * 1024)),
        ("oversized, cut by head", payload(300 * 1024)),
    ];
    for shell in hooks() {
        for (what, body) in &cases {
            let (_dir, paths, hook) = installed_hook(&shell);
            let root = paths.root.to_string_lossy().into_owned();
            let args = [root.as_str(), "claude", "262144"];
            let out = run_limited(&argv(&hook), &args, body, Some(24 * 1024));
            assert_eq!(
                (out.status, out.stdout.len(), out.stderr.len()),
                (0, 0, 0),
                "{shell:?} {what}"
            );
            assert!(
                incoming_all(&paths).is_empty(),
                "{shell:?} {what}: {:?}",
                incoming_all(&paths)
            );
            // Under the same limit a payload that fits is still published.
            let out = run_limited(&argv(&hook), &args, &payload(2048), Some(24 * 1024));
            assert_eq!(out.status, 0);
            assert_eq!(incoming(&paths).len(), 1, "{shell:?} {what}");
        }
    }
}

#[test]
fn every_provider_is_kept_and_anything_else_is_dropped() {
    for shell in hooks() {
        let (_dir, paths, hook) = installed_hook(&shell);
        let root = paths.root.to_string_lossy().into_owned();
        for provider in ["claude", "codex", "opencode", "gemini", "", "../x"] {
            let out = run(&argv(&hook), &[&root, provider, "262144"], b"{}");
            assert_eq!((out.status, out.stdout.len(), out.stderr.len()), (0, 0, 0));
        }
        // No arguments at all, or an empty spool root: nothing, silently.
        for args in [&[][..], &["", "claude"][..]] {
            let out = run(&argv(&hook), args, b"{}");
            assert_eq!((out.status, out.stdout.len(), out.stderr.len()), (0, 0, 0));
        }
        let names = incoming(&paths);
        let providers: Vec<&str> = names.iter().map(|n| n.split('.').nth(1).unwrap()).collect();
        assert_eq!(names.len(), 3, "{names:?}");
        for p in ["claude", "codex", "opencode"] {
            assert!(providers.contains(&p), "{shell:?} {names:?}");
        }
    }
}

#[test]
fn empty_input_missing_and_read_only_spools_exit_zero_silently() {
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    for shell in hooks() {
        let (dir, paths, hook) = installed_hook(&shell);
        let script = PathBuf::from(hook.last().unwrap());
        let root = paths.root.to_string_lossy().into_owned();
        let out = run(&argv(&hook), &[&root, "claude", "262144"], b"");
        assert_eq!((out.status, out.stdout.len(), out.stderr.len()), (0, 0, 0));
        assert!(incoming(&paths).is_empty(), "empty payload must be dropped");

        let missing = dir.path().join("nope").to_string_lossy().into_owned();
        let out = run(
            &argv(&hook),
            &[&missing, "claude", "262144"],
            &payload(5000),
        );
        assert_eq!((out.status, out.stdout.len(), out.stderr.len()), (0, 0, 0));
        assert!(
            !dir.path().join("nope").exists(),
            "the hook never creates the spool"
        );

        // Root writes through mode bits, so as root the hook runs as `nobody`
        // (setpriv), with the spool readable but `incoming/` not writable.
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &Path, mode: u32| {
            fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap()
        };
        let nobody = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ];
        let as_user: Option<Vec<&str>> = if root_user {
            let mut reach = paths.root.join("bin");
            while reach.starts_with(dir.path()) {
                mode(&reach, 0o755);
                reach.pop();
            }
            // Only when `nobody` can be switched to and can reach the script
            // (a temp dir under /root would not be): else nothing is tested.
            let reaches = Command::new(nobody[0])
                .args(&nobody[1..])
                .args(["test", "-r"])
                .arg(&script)
                .status()
                .is_ok_and(|s| s.success());
            if reaches {
                Some(nobody.to_vec())
            } else {
                eprintln!("cannot run the hook as nobody: skipping the read-only spool case");
                None
            }
        } else {
            Some(vec![])
        };
        if let Some(as_user) = as_user {
            mode(&paths.incoming(), 0o555);
            let hook_as_user: Vec<&str> = as_user.iter().copied().chain(argv(&hook)).collect();
            let out = run(
                &hook_as_user,
                &[&root, "claude", "262144"],
                &payload(300 * 1024),
            );
            assert_eq!((out.status, out.stdout.len(), out.stderr.len()), (0, 0, 0));
            assert!(
                incoming(&paths).is_empty(),
                "{shell:?}: wrote into a read-only spool"
            );
            mode(&paths.incoming(), 0o700);
        }

        // A bad maxBytes falls back to the default rather than failing; a
        // leading zero, which shell arithmetic would read as octal, too.
        for max_bytes in ["12x", "08", "-1", "99999999999"] {
            let before = incoming(&paths).len();
            let out = run(&argv(&hook), &[&root, "codex", max_bytes], b"{\"a\":1}");
            assert_eq!(out.status, 0, "{shell:?} {max_bytes}");
            assert_eq!(incoming(&paths).len(), before + 1, "{shell:?} {max_bytes}");
        }
    }
}

#[test]
fn leftover_temp_files_of_a_crashed_hook_do_not_block_the_next_one() {
    for shell in hooks() {
        let (_dir, paths, hook) = installed_hook(&shell);
        let root = paths.root.to_string_lossy().into_owned();
        let quoted: Vec<String> = hook.iter().map(|a| format!("'{a}'")).collect();
        // Any pid the next hook may get: leave temp files for the first few suffixes of every pid is
        // impossible, so take the one the shell will report.
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "for n in 0 1 2; do : > '{}/.turn-settled.'$$.$n; done; exec {} '{}' claude 262144",
                paths.incoming().display(),
                quoted.join(" "),
                root
            ))
            .stdin(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                child.stdin.take().unwrap().write_all(b"{\"x\":1}")?;
                child.wait()
            })
            .unwrap();
        assert!(out.success());
        let names = incoming(&paths);
        let complete: Vec<&String> = names.iter().filter(|n| !n.starts_with('.')).collect();
        assert_eq!(complete.len(), 1, "{shell:?} {names:?}");
        assert_eq!(
            fs::read(paths.incoming().join(complete[0])).unwrap(),
            b"{\"x\":1}"
        );
    }
}

/// The executable opens `incoming/` without following a link: with a link
/// to a folder elsewhere in its place, nothing is written there (the script,
/// which writes through the path, has no such guarantee), and it still
/// reads all of stdin and exits 0 silently.
#[test]
fn the_executable_never_writes_through_a_linked_incoming_folder() {
    let (dir, paths, hook) = installed_hook(&Hook::Executable);
    let root = paths.root.to_string_lossy().into_owned();
    let outside = dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::remove_dir(paths.incoming()).unwrap();
    std::os::unix::fs::symlink(&outside, paths.incoming()).unwrap();
    for body in [payload(10), payload(300 * 1024)] {
        let out = run(&argv(&hook), &[&root, "claude", "262144"], &body);
        assert_eq!((out.status, out.stdout.len(), out.stderr.len()), (0, 0, 0));
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    }
}

/// A link planted at a temp name the executable would take is neither
/// written through nor replaced: it takes the next suffix.
#[test]
fn the_executable_never_writes_through_a_link_at_its_temp_name() {
    let (dir, paths, hook) = installed_hook(&Hook::Executable);
    let root = paths.root.to_string_lossy().into_owned();
    let target = dir.path().join("target");
    let quoted = format!("'{}'", hook[0]);
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ln -s '{}' '{}/.turn-settled.'$$.0; exec {quoted} '{root}' claude 262144",
            target.display(),
            paths.incoming().display(),
        ))
        .stdin(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child.stdin.take().unwrap().write_all(b"{\"x\":1}")?;
            child.wait()
        })
        .unwrap();
    assert!(out.success());
    assert!(!target.exists(), "wrote through the link");
    let names = incoming(&paths);
    let complete: Vec<&String> = names.iter().filter(|n| !n.starts_with('.')).collect();
    assert_eq!(complete.len(), 1, "{names:?}");
    assert!(complete[0].contains("-1.claude.json"), "{names:?}");
}

/// This boot's id, or `None` off Linux.
fn boot_id() -> Option<String> {
    fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_string())
}

/// `/proc/uptime` in centiseconds, as the hook reads it.
fn uptime_cs() -> i64 {
    let uptime = fs::read_to_string("/proc/uptime").unwrap();
    let (secs, cs) = uptime
        .split_whitespace()
        .next()
        .unwrap()
        .split_once('.')
        .unwrap();
    secs.parse::<i64>().unwrap() * 100 + cs.parse::<i64>().unwrap()
}

fn now_cs() -> i64 {
    chrono::Utc::now().timestamp_millis() / 10
}

/// Runs the hook once and returns its file's stamp as epoch seconds.
fn stamp_of_one_run(shell: &[&str], paths: &SpoolPaths, script: &Path) -> i64 {
    let root = paths.root.to_string_lossy().into_owned();
    let script = script.to_string_lossy();
    let hook: Vec<&str> = shell.iter().copied().chain([script.as_ref()]).collect();
    let out = run(&hook, &[&root, "claude", "262144"], b"{\"a\":1}");
    assert_eq!((out.status, out.stderr.len()), (0, 0), "{shell:?}");
    let names = incoming(paths);
    assert_eq!(names.len(), 1, "{shell:?}: {names:?}");
    fs::remove_file(paths.incoming().join(&names[0])).unwrap();
    chrono::NaiveDateTime::parse_from_str(&names[0][..16], "%Y%m%dT%H%M%SZ")
        .unwrap()
        .and_utc()
        .timestamp()
}

/// The boot time a boot-time file holds, in centiseconds.
fn boot_cs_in(paths: &SpoolPaths, boot_id: &str) -> i64 {
    let content = fs::read_to_string(paths.boot_time_file()).unwrap();
    let (id, cs) = content.strip_suffix('\n').unwrap().split_once(' ').unwrap();
    assert_eq!(id, boot_id);
    cs.parse().unwrap()
}

#[test]
fn install_writes_the_boot_time_of_this_boot_for_the_hook() {
    let Some(boot_id) = boot_id() else {
        eprintln!("no /proc: the hook uses date, there is no boot-time file");
        return;
    };
    let (_dir, paths, _script) = installed_spool();
    // The wall-clock time at which /proc/uptime read 0, to the centisecond.
    let expected = now_cs() - uptime_cs();
    let written = boot_cs_in(&paths, &boot_id);
    assert!((written - expected).abs() <= 5, "{written} vs {expected}");
    // Jitter within half a second leaves the file alone...
    fs::write(
        paths.boot_time_file(),
        format!("{boot_id} {}\n", written + 30),
    )
    .unwrap();
    paths.refresh_boot_time().unwrap();
    assert_eq!(boot_cs_in(&paths, &boot_id), written + 30);
    // ...a wall-clock step or another boot's file is replaced.
    for stale in [
        format!("{boot_id} {}\n", written - 360_000),
        format!("00000000-0000-0000-0000-000000000000 {written}\n"),
        "garbage".to_string(),
    ] {
        fs::write(paths.boot_time_file(), &stale).unwrap();
        paths.refresh_boot_time().unwrap();
        assert!(
            (boot_cs_in(&paths, &boot_id) - expected).abs() <= 5,
            "{stale:?}"
        );
    }
}

/// The hook's clock agrees with the wall clock with the file the addon
/// writes (to the centisecond, so a run next to a second boundary may name
/// the neighbouring second).
#[test]
fn the_hooks_clock_agrees_with_the_wall_clock() {
    if boot_id().is_none() {
        eprintln!("no /proc: the hook uses date");
        return;
    }
    for shell in shells() {
        let (_dir, paths, script) = installed_spool();
        for _ in 0..20 {
            let before = chrono::Utc::now().timestamp();
            let got = stamp_of_one_run(&shell, &paths, &script);
            let after = chrono::Utc::now().timestamp();
            assert!(
                (before - 1..=after + 1).contains(&got),
                "{shell:?}: {got} not in {before}..={after} ± 1"
            );
        }
    }
}

/// The hook's civil-date arithmetic, fed through a forged boot time so that
/// boot time + uptime lands on dates that catch calendar mistakes: leap days,
/// century years, year ends, 2038 and a far one.
#[test]
fn the_hooks_clock_names_files_by_utc_calendar_date() {
    let Some(boot_id) = boot_id() else {
        eprintln!("no /proc: the hook uses date");
        return;
    };
    let targets = [
        "2000-02-29T12:00:00Z",
        "2000-03-01T00:00:00Z",
        "2000-12-31T23:59:58Z",
        "2024-02-29T23:59:58Z",
        "2026-11-23T07:00:00Z",
        "2038-01-19T03:14:07Z",
        "2099-12-31T23:59:58Z",
        "2100-02-28T23:59:58Z",
        "2100-03-01T00:00:00Z",
        "2286-11-20T17:46:30Z",
        "4000-02-29T12:00:00Z",
    ];
    for shell in shells() {
        let (_dir, paths, script) = installed_spool();
        for target in targets {
            let want = chrono::DateTime::parse_from_rfc3339(target)
                .unwrap()
                .timestamp();
            fs::write(
                paths.boot_time_file(),
                format!("{boot_id} {}\n", want * 100 - uptime_cs()),
            )
            .unwrap();
            let got = stamp_of_one_run(&shell, &paths, &script);
            assert!(
                (want..=want + 2).contains(&got),
                "{shell:?} {target}: stamp {got}, want {want}"
            );
        }
    }
}

/// A boot-time file from another boot, with a damaged number (a leading zero
/// would be read as octal by shell arithmetic) or that is not a regular file
/// (a FIFO would block a `read`) is never trusted: the stamp is still now,
/// and the hook still exits 0 at once.
#[test]
fn a_stale_or_damaged_boot_time_file_still_gives_the_right_stamp() {
    let Some(boot_id) = boot_id() else {
        eprintln!("no /proc: the hook uses date");
        return;
    };
    for shell in shells() {
        let (_dir, paths, script) = installed_spool();
        for content in [
            "00000000-0000-0000-0000-000000000000 100000000000\n".to_string(),
            format!("{boot_id} 080000000000\n"),
            format!("{boot_id} 17x\n"),
            format!("{boot_id} -5\n"),
            format!("{boot_id} 99999999999999\n"),
            format!("{boot_id}\n"),
            String::new(),
        ] {
            fs::write(paths.boot_time_file(), &content).unwrap();
            let now = chrono::Utc::now().timestamp();
            let got = stamp_of_one_run(&shell, &paths, &script);
            assert!(
                (now - 2..=now + 2).contains(&got),
                "{shell:?} {content:?}: stamp {got}, now {now}"
            );
        }
        fs::remove_file(paths.boot_time_file()).unwrap();
        let now = chrono::Utc::now().timestamp();
        let got = stamp_of_one_run(&shell, &paths, &script);
        assert!((now - 2..=now + 2).contains(&got), "{shell:?} no file");

        let fifo = paths.boot_time_file();
        let made = Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("no mkfifo: skipping the FIFO case");
            continue;
        }
        let mut hook = Command::new(shell[0])
            .args(&shell[1..])
            .arg(&script)
            .args([paths.root.to_str().unwrap(), "claude", "262144"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        // A payload, so the hook gets as far as its clock.
        hook.stdin.take().unwrap().write_all(b"{}").unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = hook.try_wait().unwrap() {
                break Some(status);
            }
            if started.elapsed() > std::time::Duration::from_secs(10) {
                let _ = hook.kill();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert_eq!(
            status.and_then(|s| s.code()),
            Some(0),
            "{shell:?}: blocked on a FIFO"
        );
        fs::remove_file(fifo).unwrap();
    }
}

/// A path component made of characters that break naive quoting.
fn nasty() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just(" ".to_string()),
            Just("'".to_string()),
            Just("\"".to_string()),
            Just("$".to_string()),
            Just("`".to_string()),
            Just("\n".to_string()),
            Just("\\".to_string()),
            Just("$(x)".to_string()),
            Just("#".to_string()),
            Just(";".to_string()),
            "[a-z]{1,3}",
        ],
        1..6,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Both settings commands, run by `sh -c` as Claude Code runs hook
    /// commands, hand the program exactly the spool root, provider and bound
    /// (the script form through `/bin/sh`, the executable form directly).
    #[test]
    fn settings_command_passes_exact_arguments(script_dir in nasty(), spool in nasty()) {
        let dir = tempfile::tempdir().unwrap();
        let script_dir = dir.path().join(script_dir);
        fs::create_dir_all(&script_dir).unwrap();
        let script = script_dir.join("dump-args.sh");
        let out_file = dir.path().join("args");
        fs::write(&script, format!("#!/bin/sh\nprintf '%s\\001' \"$0\" \"$@\" > '{}'\n", out_file.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
        ready_to_run(&script);
        let spool_root = dir.path().join(&spool).to_string_lossy().into_owned();
        let program = script.to_string_lossy();
        for command in [
            hook_command(&program, &spool_root, RuntimeProvider::Claude, 262_144),
            executable_hook_command(&program, &spool_root, RuntimeProvider::Claude, 262_144),
        ] {
            let status = Command::new("sh").arg("-c").arg(&command).stdin(Stdio::null()).status().unwrap();
            prop_assert!(status.success());
            let dumped = fs::read(&out_file).unwrap();
            let args: Vec<String> = dumped
                .split(|b| *b == 1)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let expected = vec![program.clone().into_owned(), spool_root.clone(), "claude".into(), "262144".into()];
            prop_assert_eq!(args, expected, "{}", command);
        }
    }
}

/// The command the settings would carry for `installed`.
fn settings_command(paths: &SpoolPaths, program: &HookProgram) -> String {
    let root = paths.root.to_string_lossy();
    match program {
        HookProgram::Executable(executable) => executable_hook_command(
            &executable.to_string_lossy(),
            &root,
            RuntimeProvider::Claude,
            262_144,
        ),
        HookProgram::Script(script) => hook_command(
            &script.to_string_lossy(),
            &root,
            RuntimeProvider::Claude,
            262_144,
        ),
    }
}

/// The executable runs when it ships and installs; the script when none
/// ships or it cannot be installed (then the reason is kept for the log);
/// either command, run as Claude Code runs it from a spool path full of
/// shell syntax, spools the payload.
#[test]
fn the_settings_run_the_executable_when_shipped_and_the_script_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let teams = dir.path().join("it's a $HOME `x` \"dir\"\nnext");
    let paths = SpoolPaths::for_teams_base(&teams);
    let missing = dir.path().join("not-shipped");
    let folder = dir.path().join("a-folder");
    fs::create_dir(&folder).unwrap();
    // (source offered, executable expected to run, a failure to log)
    let cases: [(Option<&Path>, bool, bool); 4] = [
        (Some(built_executable()), true, false),
        (None, false, false),
        (Some(&missing), false, true),
        (Some(&folder), false, true),
    ];
    for (source, runs_executable, fails) in cases {
        let installed = paths.install_hook(source).unwrap();
        let want = if runs_executable {
            HookProgram::Executable(paths.executable())
        } else {
            HookProgram::Script(paths.script())
        };
        assert_eq!(installed.program, want, "{source:?}");
        assert_eq!(installed.executable_failure.is_some(), fails, "{source:?}");
        if let HookProgram::Executable(executable) = &installed.program {
            ready_to_run(executable);
        }
        let command = settings_command(&paths, &installed.program);
        assert_eq!(
            command.starts_with("/bin/sh "),
            !runs_executable,
            "{command}"
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"{\"hook_event_name\":\"Stop\"}")
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            (out.status.code(), out.stdout.len(), out.stderr.len()),
            (Some(0), 0, 0)
        );
        let names = incoming(&paths);
        assert_eq!(names.len(), 1, "{command}: {names:?}");
        fs::remove_file(paths.incoming().join(&names[0])).unwrap();
    }
}
