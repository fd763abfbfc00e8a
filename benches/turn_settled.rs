//! Turn-settled benchmark (`npm run bench:turn-settled`):
//!
//! 1. hook latency: the Stop hook command `buildRuntimeTurnSettledHookSettings`
//!    returns (the native executable `npm run build` puts beside the addon,
//!    installed into the spool), run through `sh -c '<command>'` as Claude
//!    Code runs it, against the floor `/bin/sh -c :` at payload sizes from
//!    0 B to 1 MiB (target ≤ 2×), with the `sh` script fallback's command
//!    alongside; then whether 50 of 50 captures through a pipe at 256 KiB and
//!    1 MiB are complete, for both. `npm run bench:turn-settled` builds the
//!    executable first (`scripts/build/build-hook.js`);
//! 2. drain throughput of 10,000 pending Claude Stop files, with Claude
//!    transcript resolution, handing members to the queue port as the addon
//!    does, against its floor: the least file system work that keeps the
//!    drain's guarantee (every outcome durable before its claim moves, every
//!    move durable before its event is acted on), i.e. the system calls of
//!    [`FloorRun`], with as many syncs per batch as the guarantee needs and
//!    nothing else. The drain and the floor take the same files in many
//!    short pairs, one right after the other (see [`drain_rounds`]): the
//!    disk's sync latency swings threefold within seconds on the machine
//!    these figures were first taken on, and a pair's ratio compares the two
//!    under the same disk state. Printed per round and over all pairs: the
//!    median and 10th–90th percentile of the per-pair ratio and of the
//!    drain's per-pair events/s; per round, the CPU time per event of the
//!    drain and of the floor (getrusage, all threads), which the machine's
//!    other load does not swing.
//!
//! Prints figures only; no thresholds (timings belong to machines, not tests).

use std::fs;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags};

use member_work_sync::application::turn_settled::{
    TeamChangeEvent, TeamChangeSink, TurnSettledQueue, DRAIN_BATCH,
};
use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::turn_settled::settings::{executable_hook_command, hook_command};
use member_work_sync::domain::turn_settled::{RuntimeProvider, MAX_PAYLOAD_BYTES};
use member_work_sync::infrastructure::spool::{
    shipped_hook_executable, HookProgram, SpoolPaths, HOOK_EXECUTABLE_NAME,
};
use member_work_sync::runtime::composition::{RootPaths, Services};

const MEMBERS: [&str; 4] = ["ann", "ben", "cal", "dee"];

/// One run of `args` with `payload` on stdin, to its exit.
fn time_once(args: &[&str], payload: &[u8]) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let _ = stdin.write_all(payload);
    drop(stdin);
    let _ = child.wait();
    start.elapsed()
}

/// Median run time of each command. Runs are interleaved (floor, executable,
/// script, floor, …) so that drift in the machine's load or clock speed hits every
/// command alike instead of skewing the ratio.
fn time_commands(commands: &[&[&str]], payload: &[u8], runs: usize) -> Vec<Duration> {
    let mut samples = vec![Vec::with_capacity(runs); commands.len()];
    for _ in 0..runs {
        for (command, samples) in commands.iter().zip(&mut samples) {
            samples.push(time_once(command, payload));
        }
    }
    samples
        .into_iter()
        .map(|mut s| {
            s.sort();
            s[runs / 2]
        })
        .collect()
}

/// Payload sizes on stdin: none, the usual Stop payloads (a short answer, a
/// long one), and past the hook's 256 KiB bound up to 1 MiB.
const HOOK_PAYLOAD_SIZES: [usize; 8] = [
    0,
    400,
    2 * 1024,
    8 * 1024,
    64 * 1024,
    256 * 1024,
    512 * 1024,
    1024 * 1024,
];

/// Captures checked for completeness at each of these sizes.
const CAPTURE_RUNS: usize = 50;

/// The hook executable as `npm run build` ships it beside the addon (static
/// musl on Linux), which `npm run bench:turn-settled` builds first.
fn shipped_executable() -> std::path::PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join(HOOK_EXECUTABLE_NAME);
    assert!(
        shipped.is_file(),
        "{}: missing; run `node scripts/build/build-hook.js` (npm run bench:turn-settled does)",
        shipped.display()
    );
    shipped
}

fn hook_latency() {
    // The spool lives below the user's home in real use; a folder in the
    // target dir stands in for it. (/tmp can be a poor stand-in: on the
    // machine these figures were first taken on, creating a file anywhere
    // below /tmp cost about 1 ms, against 10 µs elsewhere on the same disk.)
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir");
    let paths = SpoolPaths::for_teams_base(&dir.path().join("teams"));
    let installed = paths
        .install_hook(Some(&shipped_executable()))
        .expect("install");
    let HookProgram::Executable(executable) = installed.program else {
        panic!(
            "executable not installed: {:?}",
            installed.executable_failure
        )
    };
    let root = paths.root.to_string_lossy().into_owned();
    let script_s = paths.script().to_string_lossy().into_owned();
    // The commands exactly as the settings install them (the executable's,
    // and the script's where no executable ships), run the way Claude Code
    // runs hook commands: `sh -c '<command>'`.
    let executable_command = executable_hook_command(
        &executable.to_string_lossy(),
        &root,
        RuntimeProvider::Claude,
        MAX_PAYLOAD_BYTES,
    );
    let script_command = hook_command(&script_s, &root, RuntimeProvider::Claude, MAX_PAYLOAD_BYTES);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "hook latency through `sh -c` (median of interleaved runs; spool in {}):",
        dir.path().display()
    );
    println!(
        "  {:>9}  {:>6}  {:>10}  {:>10}  {:>6}  {:>10}  {:>6}",
        "payload", "runs", "sh -c :", "executable", "ratio", "sh script", "ratio"
    );
    for size in HOOK_PAYLOAD_SIZES {
        let payload = sized_stop_payload(size);
        let runs = if size <= 8 * 1024 { 300 } else { 60 };
        let floor: &[&str] = &["/bin/sh", "-c", ":"];
        let executable: &[&str] = &["/bin/sh", "-c", &executable_command];
        let script: &[&str] = &["/bin/sh", "-c", &script_command];
        let [floor, executable, script] =
            time_commands(&[floor, executable, script], &payload, runs)[..]
        else {
            unreachable!("three commands, three medians")
        };
        println!(
            "  {:>7} B  {runs:>6}  {:>7.0} µs  {:>7.0} µs  {:>5.2}×  {:>7.0} µs  {:>5.2}×",
            payload.len(),
            us(floor),
            us(executable),
            us(executable) / us(floor),
            us(script),
            us(script) / us(floor),
        );
        // Keep the spool small: the next size starts from an empty incoming/.
        empty_incoming(&paths);
    }
    println!(
        "complete captures through a pipe (the stored file is the payload, or for an \
         oversized one its first 256 KiB + 1 bytes or more):"
    );
    for (what, command) in [
        ("executable", &executable_command),
        ("sh script", &script_command),
    ] {
        for size in [256 * 1024, 1024 * 1024] {
            let payload = sized_stop_payload(size);
            let least = payload.len().min(MAX_PAYLOAD_BYTES as usize + 1);
            let mut complete = 0;
            for _ in 0..CAPTURE_RUNS {
                empty_incoming(&paths);
                time_once(&["/bin/sh", "-c", command], &payload);
                let files: Vec<_> = fs::read_dir(paths.incoming())
                    .expect("incoming")
                    .flatten()
                    .collect();
                if let [file] = &files[..] {
                    let stored = fs::read(file.path()).unwrap_or_default();
                    if stored.len() >= least && payload.starts_with(&stored) {
                        complete += 1;
                    }
                }
            }
            println!(
                "  {what:>10} {:>7} B: {complete} of {CAPTURE_RUNS} complete",
                payload.len()
            );
        }
    }
}

fn empty_incoming(paths: &SpoolPaths) {
    for entry in fs::read_dir(paths.incoming()).expect("incoming").flatten() {
        let _ = fs::remove_file(entry.path());
    }
}

/// A Stop payload of exactly `size` bytes (a shorter message fills it),
/// or nothing for 0.
fn sized_stop_payload(size: usize) -> Vec<u8> {
    if size == 0 {
        return Vec::new();
    }
    let frame = stop_payload("S", 0, 0).len();
    let payload = stop_payload("S", 0, size.saturating_sub(frame));
    assert!(payload.len() >= size.min(frame));
    payload
}

/// A Stop payload; `turn` makes it unique (identical payloads are duplicates).
fn stop_payload(session: &str, turn: usize, message_len: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "turn_id": format!("turn-{turn}"),
        "hook_event_name": "Stop",
        "session_id": session,
        "cwd": "/bench/project",
        "stop_hook_active": false,
        "last_assistant_message": "x".repeat(message_len),
    }))
    .expect("payload")
}

/// A Claude home: team `bench` with four Claude members, each with an attributed transcript.
fn claude_home(root: &Path) {
    let team = root.join("teams/bench");
    fs::create_dir_all(&team).expect("team dir");
    let mut members = vec![serde_json::json!({"name": "team-lead", "agentType": "team-lead"})];
    members.extend(
        MEMBERS
            .iter()
            .map(|m| serde_json::json!({"name": m, "model": "claude-sonnet-4-5"})),
    );
    let config = serde_json::json!({"name": "bench", "projectPath": "/bench/project", "leadSessionId": "LEAD", "members": members});
    fs::write(team.join("config.json"), config.to_string()).expect("config");
    let project = root.join("projects/-bench-project");
    fs::create_dir_all(&project).expect("project dir");
    for member in MEMBERS {
        let line = serde_json::json!({"type": "user", "sessionId": member, "teamName": "bench", "agentName": member,
                                      "message": {"role": "user", "content": "Start"}});
        fs::write(
            project.join(format!("S-{member}.jsonl")),
            format!("{line}\n"),
        )
        .expect("transcript");
    }
}

fn fill_spool(paths: &SpoolPaths, count: usize) {
    paths.install().expect("install");
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    for i in 0..count {
        let member = MEMBERS[i % MEMBERS.len()];
        let name = format!("{stamp}-{}-{i:06}.claude.json", 10_000 + i);
        fs::write(
            paths.incoming().join(name),
            stop_payload(&format!("S-{member}"), i, 1500),
        )
        .expect("payload");
    }
}

struct Counting(std::cell::Cell<usize>);

impl TurnSettledQueue for Counting {
    fn enqueue(&self, _: &TeamName, _: &MemberName) -> Result<(), String> {
        self.0.set(self.0.get() + 1);
        Ok(())
    }
}

struct Discard;

impl TeamChangeSink for Discard {
    fn emit(&self, _: TeamChangeEvent) {}
}

/// A temp folder for one timed run, in the target dir like the hook's (see
/// [`hook_latency`]). Removed by [`tear_down`], outside the timed part.
fn run_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir")
}

/// Writes out what was written so far, so the timed part that follows pays
/// for no one else's writeback.
fn settle_disk() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// Removes a run's folder and waits for the disk: on a file system mounted
/// with `discard`, the removal of 10,000 files is paid at the next journal
/// commits, which would otherwise fall into the next timed run (the drain or
/// floor measured right after another one's teardown ran slower by it).
fn tear_down(dir: tempfile::TempDir) {
    drop(dir);
    settle_disk();
}

/// What a timed run cost: its wall time, and the CPU time (user and system,
/// every thread of the process) spent meanwhile. On a machine shared with
/// other work the wall time swings with the load; the CPU time is the
/// run's own.
#[derive(Clone, Copy, Default)]
struct Cost {
    wall: Duration,
    cpu: Duration,
}

impl std::ops::Add for Cost {
    type Output = Cost;

    fn add(self, other: Cost) -> Cost {
        Cost {
            wall: self.wall + other.wall,
            cpu: self.cpu + other.cpu,
        }
    }
}

/// CPU time of this process so far, all its threads (finished ones too).
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let of = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    of(usage.ru_utime) + of(usage.ru_stime)
}

/// A clock for [`Cost`]: started at `start`, read by [`Timer::stop`].
struct Timer {
    wall: Instant,
    cpu: Duration,
}

impl Timer {
    fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: cpu_time(),
        }
    }

    fn stop(&self) -> Cost {
        Cost {
            wall: self.wall.elapsed(),
            cpu: cpu_time().saturating_sub(self.cpu),
        }
    }
}

/// How long draining `count` pending files takes, drain after drain until
/// one claims nothing, handing members to the queue port as the addon does
/// (its reconciles run later, coalesced per member). For `drain-once`, to
/// run under strace or perf.
fn drain_throughput(count: usize) -> Cost {
    let dir = run_dir();
    let mut drain = DrainRun::filled(dir.path(), count);
    settle_disk();
    let cost = drain.next(count);
    assert_eq!(drain.next(1).wall, Duration::ZERO, "every file drained");
    drop(drain);
    tear_down(dir);
    cost
}

/// A spool of pending Claude Stop files and the addon's drain over it,
/// drained a part at a time.
struct DrainRun {
    services: Services,
    queue: Counting,
}

impl DrainRun {
    /// `count` pending files below `dir`, with the Claude transcripts they
    /// resolve through.
    fn filled(dir: &Path, count: usize) -> Self {
        claude_home(dir);
        let services = Services::new(
            RootPaths::resolve(Some(dir.to_path_buf()), None, None),
            None,
        );
        fill_spool(&services.spool_paths, count);
        Self {
            services,
            queue: Counting(std::cell::Cell::new(0)),
        }
    }

    /// Drains until `events` more were claimed (whole drains: `events` is a
    /// multiple of [`BATCH`]) or none is left, with retention's removals
    /// under way waited for (they belong to these drains). Zero cost when
    /// nothing was left.
    fn next(&mut self, events: usize) -> Cost {
        let timer = Timer::start();
        let mut claimed = 0;
        while claimed < events {
            let summary = self
                .services
                .turn_settled
                .drain(&self.queue, &Discard)
                .expect("drain");
            if summary.claimed == 0 {
                if claimed == 0 {
                    return Cost::default();
                }
                break;
            }
            assert_eq!(summary.enqueued, summary.claimed, "every event resolves");
            claimed += summary.claimed as usize;
        }
        self.services.turn_settled.settle();
        timer.stop()
    }
}

/// Files per drain: the drain's own batch.
const BATCH: usize = DRAIN_BATCH;

/// The floor of a drain's file system work: the system calls a drain needs
/// per batch of [`BATCH`] to keep its guarantee, and nothing else (no JSON,
/// no attribution, no journal, one listing, folders opened once, every
/// name resolved relative to its open folder as the drain's are, so that
/// no call walks the spool's path from `/`):
///
/// * per event: the claim rename, the payload opened and read (one read:
///   a regular file's read that returns less than asked has seen its end),
///   its meta created in place and written (unsynced), the payload's move
///   into `processed/`. The metas are created on a second thread, each as
///   soon as its payload was read, while the next are claimed, as the
///   drain's judging thread creates them (a meta's create locks
///   `processed/`, a claim's rename `incoming/` and `processing/`: the
///   kernel does both at once, and a floor that did them one after the
///   other would be no floor for a drain that does not);
/// * per batch: the batch's outcomes written into one record, then the
///   syncs the guarantee needs, which make its outcomes durable before any
///   payload moves and the moves durable before any event is acted on.
///   Three per batch: the record's data (`fdatasync`) before the moves, and
///   `processing/` and `processed/` side by side after them. The record's
///   name needs no sync of its own: the record is created (empty) before
///   the previous batch's final sync of `processed/`, which makes its name
///   durable along with that batch's moves; only the first batch of a run,
///   having no previous one, syncs `processed/` beside its record's data
///   (four syncs, as the drain does for a batch it could not foresee);
/// * retention's two unlinks per event past 1,000 results, on 8 threads,
///   overlapping the next batches, as the drain does, after a listing of
///   `processed/` (it holds what other drainers and agents put there, which
///   no in-memory list knows) on the drain's schedule: once more than 100
///   results were filed since the last (before, the floor counted its
///   records with its results and listed after every batch, twice as often
///   as the drain);
/// * per payload, its `fstat`: only a regular file is read (a FIFO would
///   block the read for ever);
/// * one listing of `incoming/`, in the first timed part: a drain learns
///   the names it claims by listing them, and so does its floor.
struct FloorRun {
    incoming: OwnedFd,
    processing: OwnedFd,
    processed: Arc<OwnedFd>,
    /// Pending names, oldest last (the next batch pops from the end), once
    /// listed.
    pending: Vec<String>,
    /// Whether `incoming/` was listed.
    listed: bool,
    /// The next batch's record, created before the last batch's final sync.
    next_record: Option<fs::File>,
    records: usize,
    /// Results filed and not removed yet, oldest first.
    kept: std::collections::VecDeque<String>,
    /// Results filed since retention last listed `processed/`.
    filed_since_prune: usize,
    removal: Option<std::thread::JoinHandle<()>>,
    /// Where each payload is read into: room for the hook's bound and a byte.
    buffer: Vec<u8>,
}

/// The names in `incoming/` but hidden ones (the hook's temp files),
/// oldest last.
fn list_pending(incoming: &OwnedFd) -> Vec<String> {
    let mut listing = rfs::Dir::read_from(incoming).expect("incoming listing");
    let mut names: Vec<String> = std::iter::from_fn(|| listing.read())
        .map(|entry| entry.expect("incoming entry"))
        .filter_map(|entry| entry.file_name().to_str().ok().map(str::to_string))
        .filter(|name| !name.starts_with('.'))
        .collect();
    names.sort_unstable_by(|a, b| b.cmp(a));
    names
}

/// Results the floor's retention keeps, as the drain's does by default.
const RETAINED: usize = 1_000;

/// Opens the folder `path`.
fn open_folder(path: &Path) -> OwnedFd {
    rfs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .expect("folder")
}

/// Creates `name` in `dir` for writing, exclusively, as the drain creates
/// its metas and records.
fn create_in(dir: &OwnedFd, name: &str) -> fs::File {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    fs::File::from(rfs::openat(dir, name, flags, Mode::from_raw_mode(0o600)).expect("create"))
}

impl FloorRun {
    /// `count` pending files in a spool below `dir`, the same as
    /// [`DrainRun::filled`]'s.
    fn filled(dir: &Path, count: usize) -> Self {
        let paths = SpoolPaths::for_teams_base(&dir.join("teams"));
        fill_spool(&paths, count);
        Self {
            incoming: open_folder(&paths.incoming()),
            processing: open_folder(&paths.processing()),
            processed: Arc::new(open_folder(&paths.processed())),
            pending: Vec::new(),
            listed: false,
            next_record: None,
            records: 0,
            kept: std::collections::VecDeque::new(),
            filed_since_prune: 0,
            removal: None,
            buffer: vec![0; MAX_PAYLOAD_BYTES as usize + 1],
        }
    }

    /// A new, empty record in `processed/`.
    fn new_record(&mut self) -> fs::File {
        self.records += 1;
        let name = format!(".outcomes-{}", self.records);
        let record = create_in(&self.processed, &name);
        self.kept.push_back(name);
        record
    }

    /// Files the next `events` pending files (a multiple of [`BATCH`]), the
    /// removals it started waited for.
    fn next(&mut self, events: usize) -> Cost {
        let timer = Timer::start();
        if !self.listed {
            self.pending = list_pending(&self.incoming);
            self.listed = true;
        }
        for _ in 0..events / BATCH {
            if self.pending.is_empty() {
                break;
            }
            self.batch();
        }
        if let Some(running) = self.removal.take() {
            running.join().expect("removal");
        }
        timer.stop()
    }

    fn batch(&mut self) {
        let batch = self
            .pending
            .split_off(self.pending.len().saturating_sub(BATCH));
        let (incoming, processing, buffer) = (&self.incoming, &self.processing, &mut self.buffer);
        let processed = &*self.processed;
        let record = std::thread::scope(|scope| {
            let (read, to_meta) = std::sync::mpsc::channel::<(&String, Vec<u8>)>();
            let metas = scope.spawn(move || {
                let mut record = Vec::new();
                for (name, meta_bytes) in to_meta {
                    let mut meta = create_in(processed, &format!("{name}.meta.json"));
                    meta.write_all(&meta_bytes).expect("meta write");
                    record.extend_from_slice(&meta_bytes);
                }
                record
            });
            for name in &batch {
                let claimed = format!("{name}.claimed-1");
                rfs::renameat(incoming, name.as_str(), processing, claimed.as_str())
                    .expect("claim");
                // Never a link, never a FIFO (which would block the read):
                // the handle must be a regular file, which takes its `fstat`.
                let file = rfs::openat(
                    processing,
                    claimed.as_str(),
                    OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
                    Mode::empty(),
                )
                .expect("payload");
                let stat = rfs::fstat(&file).expect("payload stat");
                assert_eq!(
                    rfs::FileType::from_raw_mode(stat.st_mode),
                    rfs::FileType::RegularFile
                );
                let got = rustix::io::read(&file, &mut buffer[..]).expect("payload read");
                drop(file);
                read.send((name, buffer[..got.min(700)].to_vec()))
                    .expect("meta thread");
            }
            drop(read);
            metas.join().expect("meta thread")
        });
        let processed = Arc::clone(&self.processed);
        let sync = |dir: &OwnedFd| rfs::fsync(dir).expect("folder sync");
        match self.next_record.take() {
            Some(mut file) => {
                // Its name is durable already: its data alone.
                file.write_all(&record).expect("record write");
                file.sync_data().expect("record sync");
            }
            None => {
                let mut file = self.new_record();
                file.write_all(&record).expect("record write");
                std::thread::scope(|scope| {
                    scope.spawn(|| file.sync_data().expect("record sync"));
                    sync(&processed);
                });
            }
        }
        for name in &batch {
            let claimed = format!("{name}.claimed-1");
            rfs::renameat(
                &self.processing,
                claimed.as_str(),
                &*processed,
                name.as_str(),
            )
            .expect("move");
        }
        if !self.pending.is_empty() {
            self.next_record = Some(self.new_record());
        }
        std::thread::scope(|scope| {
            scope.spawn(|| sync(&self.processing));
            sync(&processed);
        });
        self.filed_since_prune += batch.len();
        self.kept.extend(batch.into_iter().rev());
        // The drain's schedule (`PruneSchedule`): once more results were
        // filed since the last prune than a tenth of the cap.
        if self.filed_since_prune > RETAINED / 10 && self.kept.len() > RETAINED {
            self.filed_since_prune = 0;
            if let Some(running) = self.removal.take() {
                running.join().expect("removal");
            }
            // Retention counts what `processed/` holds, not what this run
            // put there: other drainers and agents write there too.
            let mut listing = rfs::Dir::read_from(&*processed).expect("listing");
            let listed = std::iter::from_fn(|| listing.read()).count();
            assert!(listed >= self.kept.len());
            let doomed: Vec<String> = self.kept.drain(..self.kept.len() - RETAINED).collect();
            self.removal = Some(std::thread::spawn(move || {
                std::thread::scope(|scope| {
                    for part in doomed.chunks(doomed.len().div_ceil(8)) {
                        let processed = &processed;
                        scope.spawn(move || {
                            for name in part {
                                let remove = |name: &str| {
                                    let _ = rfs::unlinkat(&**processed, name, AtFlags::empty());
                                };
                                remove(name);
                                remove(&format!("{name}.meta.json"));
                            }
                        });
                    }
                });
            }));
        }
    }
}

/// Events per second of `count` events in `elapsed`.
fn rate(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

/// CPU microseconds per event of `count` events costing `cpu`.
fn cpu_per_event(count: usize, cpu: Duration) -> f64 {
    cpu.as_secs_f64() * 1e6 / count as f64
}

/// The median, the 10th and the 90th percentile of `values`.
fn spread(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.1), at(0.9))
}

/// Rounds of the drain bench: even, so that the drain's spool and the
/// floor's are made first equally often. On the journal-less ext4 the
/// figures come from, a create passes over every inode of its block group
/// freed in the last seconds (minutes while the inode table block is
/// unwritten), and which spool is made first decides which block groups
/// the two spools' metas are created in: with the drain's made first in
/// every round, its metas' creates once spent several times the floor's in
/// that scan, and over 6 runs the rounds whose drain spool was made first
/// ran at a ratio about a tenth above the others.
const DRAIN_ROUNDS: usize = 4;

/// Events per pair: a few batches, so that a pair's drain and floor run
/// within a second or so of each other, under the same disk state.
const PAIR_EVENTS: usize = 5 * BATCH;

/// Drain rounds of `count` files in pairs. Each round fills two spools with
/// the same `count` files (the drain's and the floor's, one after the
/// other, the drain's first in rounds 1 and 3 as printed), writes them out,
/// then takes them [`PAIR_EVENTS`] at a time: the drain of the next part
/// and the floor over the same part of its own spool, one right after the
/// other (drain first in every other pair, floor first in the rest), each
/// timed alone. The disk of the machine these figures were first taken on
/// swings its sync latency threefold within seconds, so a ratio of a whole
/// drain to a whole floor timed apart compares two disk states; a pair's
/// ratio compares like with like. Prints the round's events/s of the drain
/// and of the floor (count over the sum of their parts), the median and
/// 10th–90th percentile of the per-pair ratio and of the drain's per-pair
/// events/s, and CPU µs per event of each; then the same over every pair of
/// every round.
fn drain_rounds(count: usize, rounds: usize) {
    println!(
        "drain of {count} Claude Stop files to the queue port (transcript resolution included), \
         batches of {BATCH}, {rounds} rounds of {} drain/floor pairs of {PAIR_EVENTS} events:",
        count / PAIR_EVENTS
    );
    println!(
        "  {:>6}  {:>10}  {:>7}  {:>7}  {:>22}  {:>24}  {:>9}  {:>9}",
        "round",
        "made first",
        "drain/s",
        "floor/s",
        "pair ratio med (p10–p90)",
        "pair drain/s med (p10–p90)",
        "cpu drain",
        "cpu floor"
    );
    let (mut all_ratios, mut all_rates) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // Whichever spool is made first takes the inodes ext4 hands out
        // first, and with them the block group that the inodes freed last
        // (the previous round's, retention's) weigh on: each spool goes
        // first in every other round (see [`DRAIN_ROUNDS`]).
        let drain_first = round % 2 == 0;
        let make_drain = || {
            let dir = run_dir();
            let run = DrainRun::filled(dir.path(), count);
            (dir, run)
        };
        let make_floor = || {
            let dir = run_dir();
            let run = FloorRun::filled(dir.path(), count);
            (dir, run)
        };
        let ((drain_dir, mut drain), (floor_dir, mut floor)) = if drain_first {
            let drain = make_drain();
            (drain, make_floor())
        } else {
            let floor = make_floor();
            (make_drain(), floor)
        };
        settle_disk();
        let (mut drain_total, mut floor_total) = (Cost::default(), Cost::default());
        let (mut ratios, mut rates) = (Vec::new(), Vec::new());
        for pair in 0..count / PAIR_EVENTS {
            let (d, f) = if (pair + round) % 2 == 0 {
                let d = drain.next(PAIR_EVENTS);
                (d, floor.next(PAIR_EVENTS))
            } else {
                let f = floor.next(PAIR_EVENTS);
                (drain.next(PAIR_EVENTS), f)
            };
            drain_total = drain_total + d;
            floor_total = floor_total + f;
            let drain_rate = rate(PAIR_EVENTS, d.wall);
            ratios.push(drain_rate / rate(PAIR_EVENTS, f.wall));
            rates.push(drain_rate);
        }
        assert_eq!(drain.next(BATCH).wall, Duration::ZERO, "every file drained");
        drop(drain);
        drop(floor);
        tear_down(drain_dir);
        tear_down(floor_dir);
        let (ratio, ratio_lo, ratio_hi) = spread(ratios.clone());
        let (pair_rate, rate_lo, rate_hi) = spread(rates.clone());
        println!(
            "  {:>6}  {:>10}  {:>7.0}  {:>7.0}  {:>8.2}× ({:.2}–{:.2})  {:>10.0} ({:.0}–{:.0})  {:>9.0}  {:>9.0}",
            round + 1,
            if drain_first { "drain" } else { "floor" },
            rate(count, drain_total.wall),
            rate(count, floor_total.wall),
            ratio,
            ratio_lo,
            ratio_hi,
            pair_rate,
            rate_lo,
            rate_hi,
            cpu_per_event(count, drain_total.cpu),
            cpu_per_event(count, floor_total.cpu)
        );
        all_ratios.extend(ratios);
        all_rates.extend(rates);
    }
    let (ratio, ratio_lo, ratio_hi) = spread(all_ratios);
    let (pair_rate, rate_lo, rate_hi) = spread(all_rates);
    println!(
        "  all pairs: ratio to floor {ratio:.2}× (p10–p90 {ratio_lo:.2}–{ratio_hi:.2}), \
         drain {pair_rate:.0} events/s (p10–p90 {rate_lo:.0}–{rate_hi:.0})"
    );
}

/// Puts the hook executable beside this bench's binary, where the drain
/// looks for it as the addon looks beside its `.node` file
/// ([`shipped_hook_executable`]), so that the drains keep it in `bin/` as
/// the app's drains do (reading and hashing it: an empty drain, this check
/// included, takes about 0.9 ms with the 1.1 MiB of a static glibc build,
/// 0.35 ms with 0.3 MiB). Run before any
/// spool is made: the shipped path is looked up once per process. Panics
/// when the drains would keep none (the executable not built, or this
/// bench run by a relative path, which the loader reports as such), rather
/// than measuring a drain the app never runs.
fn ship_hook_executable_beside_bench() {
    let built = shipped_executable();
    let exe = std::env::current_exe().expect("the bench's own path");
    let beside = exe.with_file_name(HOOK_EXECUTABLE_NAME);
    fs::copy(&built, &beside).expect("hook executable beside the bench");
    let kept = shipped_hook_executable().unwrap_or_else(|why| {
        panic!("the drains would keep no hook executable: {why} (run the bench by its absolute path, as cargo does)")
    });
    println!(
        "the drains keep the hook executable {} ({} bytes), as the app's do",
        kept.display(),
        fs::metadata(kept).map_or(0, |m| m.len())
    );
}

fn main() {
    // `cargo bench --bench turn_settled [-- hook|drain|drain-once|floor-once]`:
    // cargo adds `--bench`. `drain-once` times one drain of 10,000 files and
    // nothing else, `floor-once` its floor over as many (to run under strace
    // or perf, and compare the two).
    let only = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wanted = |part: &str| only.as_deref().is_none_or(|o| o == part);
    if matches!(only.as_deref(), None | Some("drain" | "drain-once")) {
        ship_hook_executable_beside_bench();
    }
    if only.as_deref() == Some("drain-once") {
        let cost = drain_throughput(10_000);
        println!(
            "one drain of 10000 files: {:.0} events/s, {:.0} CPU µs/event",
            rate(10_000, cost.wall),
            cpu_per_event(10_000, cost.cpu)
        );
        return;
    }
    if only.as_deref() == Some("floor-once") {
        let dir = run_dir();
        let mut floor = FloorRun::filled(dir.path(), 10_000);
        settle_disk();
        let cost = floor.next(10_000);
        drop(floor);
        tear_down(dir);
        println!(
            "one floor of 10000 files: {:.0} events/s, {:.0} CPU µs/event",
            rate(10_000, cost.wall),
            cpu_per_event(10_000, cost.cpu)
        );
        return;
    }
    if wanted("hook") {
        hook_latency();
    }
    if wanted("drain") {
        drain_rounds(10_000, DRAIN_ROUNDS);
    }
}
