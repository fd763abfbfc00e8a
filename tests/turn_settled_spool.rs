//! The spool under crashes and concurrent drainers, with real files, the real
//! hook script and real processes.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use member_work_sync::application::ports::Clock;
use member_work_sync::application::turn_settled::{
    DrainSummary, TeamChangeEvent, TeamChangeSink, TurnSettledIngestor, TurnSettledQueue,
};
use member_work_sync::infrastructure::clock::{ManualClock, SystemClock};
use member_work_sync::infrastructure::codex_sessions::FsCodexSessionLocator;
use member_work_sync::infrastructure::spool::{FsSpool, SpoolPaths};
use member_work_sync::infrastructure::status_store::{FsAuditJournal, FsStatusStore, StorePaths};
use member_work_sync::infrastructure::team_reader::FsTeamSource;
use member_work_sync::infrastructure::transcripts::FsClaudeSessionLocator;

const CODEX_SOURCE: &str = "agent-teams-orchestrator-codex-native";
const CHILD_ENV: &str = "MWS_TEST_DRAINER_ROOT";
const UNTIL_EMPTY_ENV: &str = "MWS_TEST_DRAINER_UNTIL_EMPTY";

/// A Claude home with team `forge` and codex member `jack`.
fn claude_home() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let team = dir.path().join("teams/forge");
    fs::create_dir_all(&team).unwrap();
    fs::write(
        team.join("config.json"),
        r#"{"name":"forge","members":[{"name":"team-lead","agentType":"team-lead"},{"name":"jack","model":"gpt-5"}]}"#,
    )
    .unwrap();
    dir
}

fn codex_payload(id: usize) -> Vec<u8> {
    format!(
        r#"{{"provider":"codex","source":"{CODEX_SOURCE}","eventName":"runtime_turn_settled","sessionId":"s-{id}","teamName":"forge","memberName":"jack","turnId":"t-{id}"}}"#
    )
    .into_bytes()
}

/// Appends the source id of every resolved event to a log: what "acting on an
/// event" means here. One `write` per line with O_APPEND, so lines never interleave.
struct LogSink(Mutex<fs::File>);

impl LogSink {
    fn open(path: &Path) -> Self {
        let file = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        Self(Mutex::new(file))
    }
}

impl TeamChangeSink for LogSink {
    fn emit(&self, event: TeamChangeEvent) {
        let detail: serde_json::Value =
            serde_json::from_str(event.detail.as_deref().unwrap_or("{}")).unwrap();
        let line = format!("{}\n", detail["sourceId"].as_str().unwrap_or("?"));
        let _ = self.0.lock().unwrap().write_all(line.as_bytes());
    }
}

struct NoQueue;

impl TurnSettledQueue for NoQueue {
    fn enqueue(
        &self,
        _: &member_work_sync::domain::names::TeamName,
        _: &member_work_sync::domain::names::MemberName,
    ) -> Result<(), String> {
        Ok(())
    }
}

fn ingestor(home: &Path, clock: Arc<dyn Clock>) -> TurnSettledIngestor {
    let teams = home.join("teams");
    TurnSettledIngestor::new(
        clock.clone(),
        Arc::new(FsSpool::new(
            SpoolPaths::for_teams_base(&teams),
            clock.clone(),
        )),
        Arc::new(FsTeamSource::new(teams.clone(), home.join("tasks"))),
        Arc::new(FsClaudeSessionLocator::new(
            teams.clone(),
            home.join("projects"),
        )),
        Arc::new(FsAuditJournal::new(StorePaths::new(teams.clone()))),
        Arc::new(FsStatusStore::new(StorePaths::new(teams), clock)),
    )
}

fn drain_all(ingestor: &TurnSettledIngestor, sink: &dyn TeamChangeSink) -> DrainSummary {
    let mut total = DrainSummary::default();
    loop {
        let s = ingestor.drain(&NoQueue, sink).unwrap();
        total.claimed += s.claimed;
        total.enqueued += s.enqueued;
        total.unresolved += s.unresolved;
        total.ignored += s.ignored;
        total.invalid += s.invalid;
        total.failed += s.failed;
        if s.claimed == 0 {
            return total;
        }
    }
}

/// Not a test on its own: the drainer process the crash test starts and kills.
#[test]
#[ignore = "child process of the crash-safety test"]
fn drainer_child() {
    let Some(home) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let ingestor = ingestor(&home, Arc::new(SystemClock));
    let sink = LogSink::open(&home.join("acted.log"));
    if std::env::var_os(UNTIL_EMPTY_ENV).is_some() {
        let s = drain_all(&ingestor, &sink);
        println!("SUMMARY {} {}", s.claimed, s.enqueued);
        return;
    }
    let _ = fs::write(home.join(format!("ready-{}", std::process::id())), b"");
    loop {
        let _ = ingestor.drain(&NoQueue, &sink);
    }
}

/// Tiny deterministic PRNG so failures replay.
struct Rng(u64);

impl Rng {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

fn kill9(child: &mut std::process::Child) {
    let _ = child.kill(); // SIGKILL on unix
    let _ = child.wait();
}

/// kill -9 the hook and the drainer at random points, 200 times; afterwards
/// every payload whose hook finished is processed exactly once and no payload
/// is acted on twice.
#[test]
fn kill_nine_of_hook_and_drainer_loses_nothing_and_never_processes_twice() {
    let home = claude_home();
    let teams = home.path().join("teams");
    let paths = SpoolPaths::for_teams_base(&teams);
    let script = paths.install().unwrap();
    let root = paths.root.to_string_lossy().into_owned();
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    // Results older than 24 h are pruned, so direct files carry today's stamp.
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let mut completed: Vec<usize> = Vec::new();
    let trials = 200;
    let mut drainer: Option<std::process::Child> = None;
    let mut stranded = 0;
    for trial in 0..trials {
        if drainer.is_none() {
            drainer = Some(
                Command::new(&exe)
                    .args(["--exact", "drainer_child", "--ignored", "--test-threads=1"])
                    .env(CHILD_ENV, home.path())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
        }
        // Complete files written directly keep the drainer busy, so the kills
        // land inside drains, not only between them.
        // (Three per trial: with the hooks' payloads that stays under the 1,000
        // results retention keeps, so every result can be checked.)
        for k in 0..3 {
            let id = 10_000 + trial * 10 + k;
            // Like the hook: a hidden temp file, then a rename.
            let temp = paths.incoming().join(format!(".direct.{id}"));
            fs::write(&temp, codex_payload(id)).unwrap();
            // (Pid field 0, which no hook has: a real hook's name never
            // collides with these.)
            fs::rename(
                &temp,
                paths.incoming().join(format!("{stamp}-0-{id}.codex.json")),
            )
            .unwrap();
            completed.push(id);
        }
        let mut hook = Command::new("sh")
            .arg(&script)
            .args([&root, "codex", "262144"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = hook.stdin.take().unwrap();
        let _ = stdin.write_all(&codex_payload(trial));
        drop(stdin);
        let kill_hook = rng.next(3) == 0;
        if kill_hook {
            std::thread::sleep(Duration::from_micros(rng.next(3000)));
            kill9(&mut hook);
        } else if hook.wait().unwrap().success() {
            completed.push(trial);
        }
        if rng.next(2) == 0 {
            if let Some(child) = &drainer {
                // Kill while it drains, not while the process is still starting.
                let ready = home.path().join(format!("ready-{}", child.id()));
                for _ in 0..2000 {
                    if ready.exists() {
                        break;
                    }
                    std::thread::sleep(Duration::from_micros(500));
                }
            }
            std::thread::sleep(Duration::from_micros(rng.next(4_000)));
            if let Some(mut child) = drainer.take() {
                kill9(&mut child);
                stranded += fs::read_dir(paths.processing()).unwrap().count();
            }
        }
    }
    if let Some(mut child) = drainer.take() {
        std::thread::sleep(Duration::from_millis(50));
        kill9(&mut child);
    }
    let pending = fs::read_dir(paths.incoming()).unwrap().count();
    eprintln!("{} payloads complete, {stranded} processing/ entries seen right after kills, {pending} pending at the end", completed.len());
    assert!(
        stranded > 0,
        "no kill landed inside a drain; the test exercised nothing"
    );
    // A later app start, 10 minutes on: stale claims come back and are drained.
    let later = Arc::new(ManualClock::new(SystemClock.now_ms() + 10 * 60 * 1000));
    let sink = LogSink::open(&home.path().join("acted.log"));
    drain_all(&ingestor(home.path(), later), &sink);

    for dir in [paths.incoming(), paths.processing()] {
        let left: Vec<_> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| !n.to_string_lossy().starts_with('.'))
            .collect();
        assert!(left.is_empty(), "{} still holds {left:?}", dir.display());
    }
    // Which payloads reached processed/ (by content), and how often.
    let mut processed: HashMap<String, usize> = HashMap::new();
    for entry in fs::read_dir(paths.processed()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".meta.json") || name.starts_with('.') {
            continue;
        }
        let body = fs::read_to_string(paths.processed().join(&name)).unwrap();
        let session = body
            .split("\"sessionId\":\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string();
        *processed.entry(session).or_default() += 1;
    }
    let invalid = fs::read_dir(paths.invalid()).unwrap().count();
    assert_eq!(
        invalid, 0,
        "a killed hook never leaves a torn complete file"
    );
    for trial in &completed {
        assert_eq!(
            processed.get(&format!("s-{trial}")),
            Some(&1),
            "payload of hook {trial}"
        );
    }
    assert!(processed.values().all(|n| *n == 1), "{processed:?}");
    let log = fs::read_to_string(home.path().join("acted.log")).unwrap_or_default();
    let mut acted: HashMap<&str, usize> = HashMap::new();
    for line in log.lines() {
        *acted.entry(line).or_default() += 1;
    }
    let twice: Vec<_> = acted.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "acted on twice: {twice:?}");
    assert!(
        completed.len() >= trials * 3,
        "too few payloads: {}",
        completed.len()
    );
    assert!(acted.len() <= processed.len());
}

/// Four drainer processes (four app windows) over 2,000 pending events: each
/// event is processed exactly once.
#[test]
fn four_drainer_processes_process_each_of_two_thousand_events_once() {
    let home = claude_home();
    let paths = SpoolPaths::for_teams_base(&home.path().join("teams"));
    paths.install().unwrap();
    // Today's stamp: results older than 24 h would be pruned at once.
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    for id in 0..2000 {
        let name = format!("{stamp}-{}-{id:04}.codex.json", 1000 + id % 7);
        fs::write(paths.incoming().join(name), codex_payload(id)).unwrap();
    }
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "drainer_child",
                    "--ignored",
                    "--test-threads=1",
                    "--nocapture",
                ])
                .env(CHILD_ENV, home.path())
                .env(UNTIL_EMPTY_ENV, "1")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut claimed = Vec::new();
    let mut enqueued = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        // (libtest may print "test drainer_child ... " on the same line first)
        let line = text
            .lines()
            .find_map(|l| l.split_once("SUMMARY ").map(|(_, rest)| rest))
            .expect("summary line");
        let numbers: Vec<u32> = line
            .split_whitespace()
            .take(2)
            .map(|n| n.parse().unwrap())
            .collect();
        claimed.push(numbers[0]);
        enqueued += numbers[1];
    }
    eprintln!("claims per drainer process: {claimed:?}");
    // Whether the drainers overlapped depends on scheduling (one may finish
    // before the others start on a loaded machine); exactly-once is what counts.
    if claimed.iter().filter(|c| **c > 0).count() < 2 {
        eprintln!("note: one drainer took every event this run");
    }
    assert_eq!(
        (claimed.iter().sum::<u32>(), enqueued),
        (2000, 2000),
        "{claimed:?}"
    );
    let text = fs::read_to_string(home.path().join("acted.log")).unwrap();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for line in text.lines() {
        *seen.entry(line).or_default() += 1;
    }
    assert_eq!(seen.len(), 2000);
    assert!(seen.values().all(|n| *n == 1));
    assert_eq!(fs::read_dir(paths.incoming()).unwrap().count(), 0);
    assert_eq!(fs::read_dir(paths.processing()).unwrap().count(), 0);
    // Retention keeps the newest 1,000 results (beside their metas and the
    // batches' outcome records, which are hidden).
    let kept = fs::read_dir(paths.processed())
        .unwrap()
        .filter(|e| {
            let name = e
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .into_owned();
            !name.ends_with(".meta.json") && !name.starts_with('.')
        })
        .count();
    assert_eq!(kept, 1000);
}

/// A name and its content (`None` for anything but a regular file).
type Entry = (String, Option<Vec<u8>>);

/// The names in `dir` with their content (`None` for a folder), and the
/// folder's own mode: what a drain must leave alone.
fn snapshot(dir: &Path) -> (u32, Vec<Entry>) {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(dir).unwrap().permissions().mode() & 0o777;
    let mut entries: Vec<Entry> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let content = e
                .file_type()
                .unwrap()
                .is_file()
                .then(|| fs::read(e.path()).unwrap());
            (e.file_name().to_string_lossy().into_owned(), content)
        })
        .collect();
    entries.sort();
    (mode, entries)
}

/// Each spool folder in turn is a link to a folder outside the spool (with
/// an old event, a stray file and an old subfolder in it): the drain fails
/// with an error naming the link (`bin/`, where the hook programs live, is
/// repaired instead: the link removed and a real folder made), and nothing
/// behind it is claimed, written, pruned or chmod'ed. (It used to move that
/// folder's files into the spool and delete them in retention.)
#[test]
fn a_linked_spool_folder_fails_the_drain_and_nothing_behind_it_is_touched() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    for folder in ["incoming", "processing", "processed", "invalid", "bin"] {
        let home = claude_home();
        let paths = SpoolPaths::for_teams_base(&home.path().join("teams"));
        paths.install().unwrap();
        // One valid and one invalid payload pending: both result folders are used.
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
        let incoming = paths.incoming();
        fs::write(
            incoming.join(format!("{stamp}-0-1.codex.json")),
            codex_payload(1),
        )
        .unwrap();
        fs::write(
            incoming.join(format!("{stamp}-0-2.codex.json")),
            b"not json",
        )
        .unwrap();
        let outside = home.path().join("outside");
        fs::create_dir_all(outside.join("old-sub")).unwrap();
        fs::write(
            outside.join("20200101T000000Z-0-9.codex.json"),
            codex_payload(9),
        )
        .unwrap();
        fs::write(outside.join("notes.txt"), b"mine").unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o755)).unwrap();
        let before = snapshot(&outside);

        let at = paths.root.join(folder);
        fs::remove_dir_all(&at).unwrap();
        symlink(&outside, &at).unwrap();
        let sink = LogSink::open(&home.path().join("acted.log"));
        let drained = ingestor(home.path(), Arc::new(SystemClock)).drain(&NoQueue, &sink);
        if folder == "bin" {
            drained.expect("bin/ is repaired");
            assert!(fs::symlink_metadata(&at).unwrap().is_dir());
            assert!(paths.script().is_file());
        } else {
            let error = drained.expect_err(folder).to_string();
            assert!(
                error.contains(&format!("{}:", at.display())),
                "{folder}: {error}"
            );
        }
        assert_eq!(snapshot(&outside), before, "{folder}");
    }
}

const DRAIN_ONCE_ENV: &str = "MWS_TEST_DRAIN_ONCE_ROOT";

/// Not a test on its own: one drain in a child process (run as another user
/// by the read-only spool test), reported on stdout.
#[test]
#[ignore = "child process of the read-only spool test"]
fn drain_once_child() {
    let Some(home) = std::env::var_os(DRAIN_ONCE_ENV).map(PathBuf::from) else {
        return;
    };
    let sink = LogSink::open(&home.join("acted.log"));
    match ingestor(&home, Arc::new(SystemClock)).drain(&NoQueue, &sink) {
        Ok(summary) => println!("DRAIN OK claimed={}", summary.claimed),
        Err(error) => println!("DRAIN ERR {error}"),
    }
}

/// With `incoming/` read-only, events are pending but none can be claimed:
/// the drain fails naming the file instead of reporting `claimed: 0`. Root
/// renames through mode bits, so as root the drain runs as `nobody`
/// (setpriv) over a spool `nobody` owns.
#[test]
fn a_read_only_spool_fails_the_drain_instead_of_claiming_nothing() {
    use std::os::unix::fs::PermissionsExt;
    let home = claude_home();
    let paths = SpoolPaths::for_teams_base(&home.path().join("teams"));
    paths.install().unwrap();
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let event = paths.incoming().join(format!("{stamp}-0-1.codex.json"));
    fs::write(&event, codex_payload(1)).unwrap();
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
    ];
    let as_user: Vec<&str> = if root_user {
        let owned = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(home.path())
            .status()
            .is_ok_and(|s| s.success());
        let switches = Command::new(nobody[0])
            .args(&nobody[1..])
            .arg("true")
            .status()
            .is_ok_and(|s| s.success());
        if !(owned && switches) {
            eprintln!("cannot drain as nobody: skipping the read-only spool case");
            return;
        }
        nobody.to_vec()
    } else {
        vec![]
    };
    fs::set_permissions(paths.incoming(), fs::Permissions::from_mode(0o555)).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut command = match as_user.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(&exe);
            command
        }
        None => Command::new(&exe),
    };
    let out = command
        .args([
            "--exact",
            "drain_once_child",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(DRAIN_ONCE_ENV, home.path())
        .output()
        .unwrap();
    fs::set_permissions(paths.incoming(), fs::Permissions::from_mode(0o700)).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.split_once("DRAIN ").map(|(_, rest)| rest))
        .unwrap_or_else(|| panic!("no drain result: {text}"));
    assert!(line.starts_with("ERR "), "{line}");
    assert!(line.contains(&event.display().to_string()), "{line}");
    assert!(event.exists(), "the event stays pending");
}

/// Every outcome is durable before its claim leaves `processing/`: a drain
/// of three events and one bad payload, traced with strace, writes each
/// (new) meta file in place, makes its outcome durable (the three processed
/// ones in one outcome record whose data is synced once, the lone invalid
/// one by syncing its meta), syncs the results folder once that is written
/// (side by side with the data's sync), and only once both syncs returned
/// moves the payload out of `processing/`; the moves
/// are synced before the events are acted on. (The meta files used to be
/// written without any sync.) A meta that replaces an older one goes through
/// a temp file and a rename instead: see the spool's unit tests. Skipped
/// where strace is not installed or not allowed.
#[test]
fn outcomes_are_synced_before_their_claims_move() {
    let traced = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=fsync", "-o", "/dev/null", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !traced {
        eprintln!("strace not available: skipping the sync order check");
        return;
    }
    let home = claude_home();
    let paths = SpoolPaths::for_teams_base(&home.path().join("teams"));
    paths.install().unwrap();
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let mut ids = Vec::new();
    for i in 0..4 {
        let id = format!("{stamp}-0-{i}.codex.json");
        let payload = if i == 3 {
            b"not json".to_vec()
        } else {
            codex_payload(i)
        };
        fs::write(paths.incoming().join(&id), payload).unwrap();
        ids.push(id);
    }
    let trace = home.path().join("trace");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-y", "-s", "512", "-o"])
        .arg(&trace)
        .args([
            "-e",
            "trace=fsync,fdatasync,rename,renameat,renameat2,write",
        ])
        .arg(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "drain_once_child", "--nocapture"])
        .env(DRAIN_ONCE_ENV, home.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("DRAIN OK claimed=4"), "{stdout}");
    let trace = fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    let first = |what: &dyn Fn(&str) -> bool| lines.iter().position(|l| what(l));
    // Syncs run on threads of their own: a call may show as `<unfinished
    // ...>` and finish on a later `<... fsync resumed>` line of the same
    // thread. Where the call begun at line `i` returned 0, if it did.
    let pid = |l: &str| l.split_whitespace().next().unwrap_or("").to_string();
    let done = |i: usize| -> Option<usize> {
        let line = lines[i];
        if !line.contains("<unfinished ...>") {
            return line.ends_with(" = 0").then_some(i);
        }
        let call = line.split_whitespace().nth(1)?.split('(').next()?;
        let resumed = format!("<... {call} resumed>");
        (i + 1..lines.len())
            .find(|&j| pid(lines[j]) == pid(line) && lines[j].contains(&resumed))
            .filter(|&j| lines[j].ends_with(" = 0"))
    };
    // A sync matching `what` begun in `from..until` and finished before `until`.
    let synced_within = |from: usize, until: usize, what: &dyn Fn(&str) -> bool| {
        (from..until).any(|i| what(lines[i]) && done(i).is_some_and(|d| d < until))
    };
    let acted = first(&|l| l.contains("acted.log>")).expect("the events were acted on");
    for (i, id) in ids.iter().enumerate() {
        let folder = if i == 3 { "/invalid" } else { "/processed" };
        let meta = format!("{id}.meta.json");
        // The outcome's durable copy: the invalid one, alone in its folder,
        // is its meta, synced itself; the three processed ones are written
        // together into one outcome record, synced once, their metas not.
        let own_sync =
            first(&|l| l.contains("fdatasync(") && l.contains(&format!("{folder}/{meta}>")));
        let record_sync =
            first(&|l| l.contains("fdatasync(") && l.contains(&format!("{folder}/.outcomes-")));
        let meta_synced = if i == 3 {
            assert_eq!(record_sync, None, "{id}: no record for a single outcome");
            own_sync.unwrap_or_else(|| panic!("{id}: meta data never synced\n{trace}"))
        } else {
            assert_eq!(own_sync, None, "{id}: a recorded meta is not synced itself");
            let record = fs::read_dir(paths.processed())
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with(".outcomes-")
                })
                .expect("the batch's outcome record");
            let record: serde_json::Value =
                serde_json::from_slice(&fs::read(record).unwrap()).unwrap();
            let meta: serde_json::Value =
                serde_json::from_slice(&fs::read(paths.processed().join(&meta)).unwrap()).unwrap();
            let at = record["results"]
                .as_array()
                .unwrap()
                .iter()
                .position(|r| r == id.as_str());
            let at = at.unwrap_or_else(|| panic!("{id}: not in the record {record}"));
            assert_eq!(record["metas"][at], meta, "{id}: the record holds the meta");
            record_sync.unwrap_or_else(|| panic!("{id}: outcome record never synced\n{trace}"))
        };
        let meta_renamed = first(&|l| l.contains("rename") && l.contains(&format!("\"{meta}\"")));
        assert_eq!(meta_renamed, None, "{id}: a new meta is not renamed");
        // (Not the claim, which renames `<id>` to `<id>.claimed-<ms>`.)
        let moved = first(&|l| l.contains("rename") && l.contains(&format!(", \"{id}\") = 0")))
            .unwrap_or_else(|| panic!("{id}: payload never moved"));
        let meta_done = done(meta_synced);
        // The folder's sync may wait side by side with the data's (one
        // round): it must begin once the durable copy is written (its name
        // is in the folder by then) and end before the move.
        let durable_copy = if i == 3 {
            format!("{folder}/{meta}>")
        } else {
            format!("{folder}/.outcomes-")
        };
        let written = first(&|l| l.contains("write(") && l.contains(&durable_copy))
            .unwrap_or_else(|| panic!("{id}: durable copy never written\n{trace}"));
        let folder_synced = synced_within(written.min(moved), moved, &|l| {
            l.contains("fsync(") && l.contains(&format!("{folder}>"))
        });
        let moves_synced = synced_within(moved.min(acted), acted, &|l| {
            l.contains("fsync(") && l.contains("/processing>")
        });
        assert!(
            meta_done.is_some_and(|d| d < moved) && folder_synced && moves_synced,
            "{id}: meta sync begun at {meta_synced}, done at {meta_done:?}, \
             folder synced before the move: {folder_synced}, payload moved at {moved}, \
             moves synced before acting: {moves_synced}\n{trace}"
        );
    }
}

struct NoChanges;

impl TeamChangeSink for NoChanges {
    fn emit(&self, _: TeamChangeEvent) {}
}

/// A Stop of a `forge` member is attributed however many old team folders
/// sort before `forge` (more than one index build covers).
#[test]
fn a_claude_stop_is_attributed_behind_250_old_team_folders() {
    let home = claude_home();
    let root = home.path();
    for n in 0..250 {
        let team = format!("aaa-old-{n:04}");
        let dir = root.join("teams").join(&team);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("config.json"),
            serde_json::json!({"name": team, "projectPath": format!("/home/u/old{n}"),
                               "members": [{"name": "lead", "agentType": "team-lead"}, {"name": "kim"}]})
            .to_string(),
        )
        .unwrap();
    }
    fs::write(
        root.join("teams/forge/config.json"),
        r#"{"name":"forge","projectPath":"/home/u/proj","members":[{"name":"team-lead","agentType":"team-lead"},{"name":"bob"}]}"#,
    )
    .unwrap();
    let transcript = root.join("projects/-home-u-proj/B1.jsonl");
    fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    fs::write(
        &transcript,
        "{\"type\":\"user\",\"sessionId\":\"B1\",\"teamName\":\"forge\",\"agentName\":\"bob\"}\n",
    )
    .unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ingestor = ingestor(root, clock);
    let incoming = SpoolPaths::for_teams_base(&root.join("teams")).incoming();
    fs::create_dir_all(&incoming).unwrap();
    let payload = serde_json::json!({"hook_event_name": "Stop", "session_id": "B1",
                                     "transcript_path": transcript, "cwd": "/home/u/proj"});
    fs::write(
        incoming.join("20261118T110640Z-0-0.claude.json"),
        payload.to_string(),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let summary = drain_all(&ingestor, &NoChanges);
    eprintln!(
        "250 old team folders + forge: drain {:?}, {summary:?}",
        started.elapsed()
    );
    assert_eq!(
        (summary.enqueued, summary.unresolved),
        (1, 0),
        "{summary:?}"
    );
}

/// A native Codex Stop whose session a `forge` member's launch state names
/// is attributed however many old team folders sort before `forge`, even
/// when its `transcript_path` is not a session log the locator may read.
#[test]
fn a_codex_stop_is_attributed_behind_250_old_team_folders() {
    let home = claude_home();
    let root = home.path();
    for n in 0..250 {
        let team = format!("aaa-old-{n:04}");
        let dir = root.join("teams").join(&team);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("config.json"),
            serde_json::json!({"name": team, "members": [{"name": "kim"}]}).to_string(),
        )
        .unwrap();
        fs::write(
            dir.join("launch-state.json"),
            serde_json::json!({"teamName": team, "members": {"kim": {"runtimeSessionId": format!("K{n}")}}})
                .to_string(),
        )
        .unwrap();
    }
    fs::write(
        root.join("teams/forge/launch-state.json"),
        r#"{"teamName":"forge","members":{"jack":{"runtimeSessionId":"01a20891-4651-7d40-89dc-27d0de2d7f9a"}}}"#,
    )
    .unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ingestor = ingestor(root, clock).with_codex_sessions(Arc::new(FsCodexSessionLocator::new(
        root.join("teams"),
        root.join("codex/sessions"),
    )));
    let incoming = SpoolPaths::for_teams_base(&root.join("teams")).incoming();
    fs::create_dir_all(&incoming).unwrap();
    // The real payload: its transcript_path lies outside this home's
    // sessions root, so only the launch state can name the member.
    fs::write(
        incoming.join("20261118T110640Z-0-0.codex.json"),
        include_bytes!("fixtures/payloads/real-codex-stop-payload.json"),
    )
    .unwrap();
    let summary = drain_all(&ingestor, &NoChanges);
    eprintln!("250 old team folders + forge, a Codex Stop: {summary:?}");
    assert_eq!(
        (summary.enqueued, summary.unresolved),
        (1, 0),
        "{summary:?}"
    );
}

/// The turn-settled lines of a member's journal in team forge: (event, reason).
fn turn_settled_lines(root: &Path, member: &str) -> Vec<(String, String)> {
    let path = root.join(format!(
        "teams/forge/members/{member}/.member-work-sync/journal.jsonl"
    ));
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .map(|e| {
            (
                e["event"].as_str().unwrap_or_default().to_string(),
                e["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn an_unresolved_turn_of_a_reserved_or_unknown_name_is_journaled_for_that_name() {
    let home = claude_home();
    let root = home.path();
    // `system` is on the roster (a reserved name), `user` and `ghost` are not.
    fs::write(
        root.join("teams/forge/config.json"),
        r#"{"name":"forge","members":[{"name":"team-lead","agentType":"team-lead"},{"name":"system"}]}"#,
    )
    .unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ingestor = ingestor(root, clock);
    let incoming = SpoolPaths::for_teams_base(&root.join("teams")).incoming();
    fs::create_dir_all(&incoming).unwrap();
    for (n, member) in ["user", "ghost", "system"].into_iter().enumerate() {
        let payload = format!(
            r#"{{"provider":"codex","source":"{CODEX_SOURCE}","eventName":"runtime_turn_settled","sessionId":"s-{n}","teamName":"forge","memberName":"{member}","turnId":"t-{n}"}}"#
        );
        fs::write(
            incoming.join(format!("20261118T110640Z-{n}-0.codex.json")),
            payload,
        )
        .unwrap();
    }
    let summary = drain_all(&ingestor, &NoChanges);
    assert_eq!((summary.claimed, summary.unresolved), (3, 3), "{summary:?}");
    // As the app's ingestor: the claim and the outcome go to the journal of
    // the name the payload gives, which is safe on disk.
    let claimed = ("turn_settled_claimed".to_string(), "codex".to_string());
    for (member, reason) in [
        ("user", "member_not_active"),
        ("ghost", "member_not_active"),
        ("system", "reserved_member"),
    ] {
        assert_eq!(
            turn_settled_lines(root, member),
            [
                claimed.clone(),
                ("turn_settled_unresolved".into(), reason.into())
            ],
            "{member}"
        );
    }
}

/// Holds the first event it is handed until `release` is sent.
struct GatedQueue {
    entered: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    release: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl TurnSettledQueue for GatedQueue {
    fn enqueue(
        &self,
        _: &member_work_sync::domain::names::TeamName,
        _: &member_work_sync::domain::names::MemberName,
    ) -> Result<(), String> {
        if let Some(entered) = self.entered.lock().unwrap().take() {
            entered.send(()).unwrap();
            self.release.lock().unwrap().recv().unwrap();
        }
        Ok(())
    }
}

#[test]
fn a_drain_waits_for_the_drain_running_in_its_instance() {
    // The app's explicit drain beside the worker's: the second must not
    // answer while the first still holds events it claimed (their outcomes
    // not yet all acted on), or a caller reading the spool after the answer
    // finds them half done.
    let home = claude_home();
    let paths = SpoolPaths::for_teams_base(&home.path().join("teams"));
    paths.install().unwrap();
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    fs::write(
        paths.incoming().join(format!("{stamp}-0-0.codex.json")),
        codex_payload(0),
    )
    .unwrap();
    let ingestor = Arc::new(ingestor(home.path(), Arc::new(SystemClock)));
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel();
    let queue = Arc::new(GatedQueue {
        entered: Mutex::new(Some(entered_tx)),
        release: Mutex::new(release_rx),
    });
    let first = {
        let (ingestor, queue) = (ingestor.clone(), queue.clone());
        std::thread::spawn(move || ingestor.drain(&*queue, &NoChanges).unwrap())
    };
    entered.recv().unwrap();
    let (second_tx, second) = std::sync::mpsc::channel();
    let second_drain = {
        let ingestor = ingestor.clone();
        std::thread::spawn(move || second_tx.send(ingestor.drain(&NoQueue, &NoChanges).unwrap()))
    };
    assert!(
        second.recv_timeout(Duration::from_millis(300)).is_err(),
        "the second drain answered while the first held its claim"
    );
    release.send(()).unwrap();
    assert_eq!(first.join().unwrap().enqueued, 1);
    assert_eq!(second.recv().unwrap().claimed, 0);
    second_drain.join().unwrap().unwrap();
}

/// Every meta file and outcome record a drain writes is `0600`, whatever
/// the umask the drainer runs under: one that spares those bits (the drain
/// then leaves the mode as the create made it) and ones that take the
/// owner's write or read bit away (the drain gives the mode back on the
/// file's handle).
#[test]
fn metas_and_records_are_0600_under_any_umask() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().unwrap();
    for umask in [0o022, 0o077, 0o277, 0o477] {
        let home = claude_home();
        let paths = SpoolPaths::for_teams_base(&home.path().join("teams"));
        paths.install().unwrap();
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
        // Several events: a batch of more than one files a record too.
        for id in 0..5 {
            let name = format!("{stamp}-1000-{id:04}.codex.json");
            fs::write(paths.incoming().join(name), codex_payload(id)).unwrap();
        }
        let mut command = Command::new(&exe);
        command
            .args(["--exact", "drainer_child", "--ignored", "--test-threads=1"])
            .env(CHILD_ENV, home.path())
            .env(UNTIL_EMPTY_ENV, "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: umask(2) is async-signal-safe and touches no memory.
        unsafe {
            command.pre_exec(move || {
                rustix::process::umask(rustix::fs::Mode::from_raw_mode(umask));
                Ok(())
            });
        }
        assert!(command.status().unwrap().success(), "umask {umask:o}");
        let mut written: Vec<(String, u32)> = fs::read_dir(paths.processed())
            .unwrap()
            .map(|entry| entry.unwrap())
            .map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let mode = entry.metadata().unwrap().permissions().mode() & 0o777;
                (name, mode)
            })
            .filter(|(name, _)| name.ends_with(".meta.json") || name.starts_with(".outcomes-"))
            .collect();
        written.sort();
        assert_eq!(written.len(), 6, "umask {umask:o}: {written:?}");
        for (name, mode) in written {
            assert_eq!(mode, 0o600, "umask {umask:o}: {name}");
        }
    }
}

/// Records the members it is asked to queue.
#[derive(Default)]
struct RecordingQueue(Mutex<Vec<String>>);

impl TurnSettledQueue for RecordingQueue {
    fn enqueue(
        &self,
        _: &member_work_sync::domain::names::TeamName,
        member: &member_work_sync::domain::names::MemberName,
    ) -> Result<(), String> {
        self.0.lock().unwrap().push(member.to_string());
        Ok(())
    }
}

/// A roster name that is no member name once normalized (too long as
/// given, too long once lowercased, or unsafe as a folder) matches its
/// payload, but no reconcile can be queued for it: the drain, its metas
/// and the journal say so instead of claiming `enqueued`.
#[test]
fn a_roster_name_that_cannot_be_queued_is_not_counted_as_enqueued() {
    let home = claude_home();
    let root = home.path();
    let unqueueable = ["x".repeat(129), "İ".repeat(64), "dev/ops".to_string()];
    let mut members = vec![
        serde_json::json!({"name": "team-lead", "agentType": "team-lead"}),
        serde_json::json!({"name": "jack", "model": "gpt-5"}),
    ];
    members.extend(
        unqueueable
            .iter()
            .map(|name| serde_json::json!({"name": name, "model": "gpt-5"})),
    );
    fs::write(
        root.join("teams/forge/config.json"),
        serde_json::json!({"name": "forge", "members": members}).to_string(),
    )
    .unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ingestor = ingestor(root, clock);
    let paths = SpoolPaths::for_teams_base(&root.join("teams"));
    fs::create_dir_all(paths.incoming()).unwrap();
    let named = std::iter::once("jack".to_string()).chain(unqueueable.iter().cloned());
    for (n, member) in named.enumerate() {
        let payload = serde_json::json!({"provider": "codex", "source": CODEX_SOURCE,
            "eventName": "runtime_turn_settled", "sessionId": format!("s-{n}"),
            "teamName": "forge", "memberName": member, "turnId": format!("t-{n}")});
        fs::write(
            paths
                .incoming()
                .join(format!("20261118T110640Z-{n}-0.codex.json")),
            payload.to_string(),
        )
        .unwrap();
    }
    let queue = RecordingQueue::default();
    let summary = ingestor.drain(&queue, &NoChanges).unwrap();
    let queued = queue.0.into_inner().unwrap();
    assert_eq!(queued, ["jack"]);
    assert_eq!(
        (summary.claimed, summary.enqueued, summary.unresolved),
        (4, 1, 3),
        "{summary:?}"
    );
    // One `enqueued` outcome among the spool's records of the four events.
    // The metas a batch files are in its outcome record (`.outcomes-*`)
    // until they are written out one by one.
    let mut outcomes: Vec<String> = vec![];
    for path in fs::read_dir(paths.processed())
        .unwrap()
        .map(|e| e.unwrap().path())
    {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let json: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        let metas = if name.starts_with(".outcomes-") {
            json["metas"].as_array().unwrap().clone()
        } else if name.ends_with(".meta.json") {
            vec![json]
        } else {
            vec![]
        };
        outcomes.extend(
            metas
                .iter()
                .map(|m| m["outcome"].as_str().unwrap().to_string()),
        );
    }
    outcomes.sort();
    assert_eq!(
        outcomes,
        ["enqueued", "unresolved", "unresolved", "unresolved"]
    );
    // Only jack's journal says the turn was resolved.
    let members_dir = root.join("teams/forge/members");
    let mut resolved_for = vec![];
    for entry in fs::read_dir(&members_dir).unwrap() {
        let folder = entry.unwrap().file_name().to_string_lossy().into_owned();
        let lines = turn_settled_lines(root, &folder);
        if lines
            .iter()
            .any(|(event, _)| event == "turn_settled_resolved")
        {
            resolved_for.push(folder);
        }
    }
    assert_eq!(resolved_for, ["jack"]);
}

/// The outcome of each result in `processed/`, by its name, from the
/// batches' outcome records and the metas beside the results.
fn outcomes_by_result(processed: &Path) -> HashMap<String, String> {
    let mut outcomes = HashMap::new();
    for entry in fs::read_dir(processed).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let outcome = |meta: &serde_json::Value| meta["outcome"].as_str().unwrap().to_string();
        if name.starts_with(".outcomes-") {
            let record: serde_json::Value =
                serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
            let results = record["results"].as_array().unwrap();
            for (result, meta) in results.iter().zip(record["metas"].as_array().unwrap()) {
                outcomes.insert(result.as_str().unwrap().to_string(), outcome(meta));
            }
        } else if let Some(result) = name.strip_suffix(".meta.json") {
            let meta: serde_json::Value =
                serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
            outcomes.insert(result.to_string(), outcome(&meta));
        }
    }
    outcomes
}

/// Claims are judged on a thread of their own while the next are claimed,
/// handed over a few at a time, in claim order all the same: within one
/// batch, each later delivery of a payload is the duplicate and the first
/// is the one queued, across the handovers.
#[test]
fn a_second_delivery_in_one_batch_is_the_duplicate_of_the_first() {
    let home = claude_home();
    let root = home.path();
    let ingestor = ingestor(root, Arc::new(SystemClock));
    let paths = SpoolPaths::for_teams_base(&root.join("teams"));
    fs::create_dir_all(paths.incoming()).unwrap();
    // 35 deliveries in name order (the order they are claimed in), three
    // of each payload in a row: payload `(n / 3) % 8`, first delivered at
    // n = 0, 3, …, 21 (in three handovers) and again from n = 24.
    let payload = |n: usize| (n / 3) % 8;
    let name = |n: usize| format!("20261118T110640Z-{n:02}-0.codex.json");
    let mut first_seen = HashMap::new();
    for n in 0..35 {
        fs::write(paths.incoming().join(name(n)), codex_payload(payload(n))).unwrap();
        first_seen.entry(payload(n)).or_insert(n);
    }
    let summary = ingestor.drain(&NoQueue, &NoChanges).unwrap();
    assert_eq!(
        (
            summary.claimed,
            summary.enqueued,
            summary.ignored,
            summary.failed
        ),
        (35, 8, 27, 0),
        "{summary:?}"
    );
    let outcomes = outcomes_by_result(&paths.processed());
    for n in 0..35 {
        let want = if first_seen[&payload(n)] == n {
            "enqueued"
        } else {
            "duplicate"
        };
        assert_eq!(
            outcomes.get(&name(n)).map(String::as_str),
            Some(want),
            "{n}"
        );
    }
}
