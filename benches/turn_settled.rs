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
//!    does, in rounds interleaved with floors of a drain's file system work
//!    over the same count (its system calls alone, see [`drain_floor`]): the
//!    floor of the group commit (one outcome record synced per batch), the
//!    floor syncing every meta, the calls with no sync at all, and those
//!    without retention's unlinks either. One figure: the drain's events/s
//!    and its ratio to the group-commit floor of the same round, as
//!    medians; beside them the CPU time per event of the drain and of that
//!    floor, which the machine's other load does not swing. (This bench used to print a second
//!    drain figure, reconciling each event's member inside the drain: that
//!    is one full durable reconcile per event on top of the drain, which the
//!    addon never does, and it ran at less than half the drain's rate.)
//!
//! Prints figures only; no thresholds (timings belong to machines, not tests).

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use member_work_sync::application::turn_settled::{
    TeamChangeEvent, TeamChangeSink, TurnSettledQueue, DRAIN_BATCH,
};
use member_work_sync::domain::names::{MemberName, TeamName};
use member_work_sync::domain::turn_settled::settings::{executable_hook_command, hook_command};
use member_work_sync::domain::turn_settled::{RuntimeProvider, MAX_PAYLOAD_BYTES};
use member_work_sync::infrastructure::spool::{HookProgram, SpoolPaths, HOOK_EXECUTABLE_NAME};
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
#[derive(Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Duration,
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
/// (its reconciles run later, coalesced per member).
fn drain_throughput(count: usize) -> Cost {
    let dir = run_dir();
    claude_home(dir.path());
    let services = Services::new(
        RootPaths::resolve(Some(dir.path().to_path_buf()), None, None),
        None,
    );
    fill_spool(&services.spool_paths, count);
    // The hooks wrote these files long before the drain: their writeback is
    // not the drain's cost (the drain's first sync would otherwise flush the
    // whole set up along with its own outcomes).
    settle_disk();
    let counting = Counting(std::cell::Cell::new(0));
    let timer = Timer::start();
    let mut enqueued = 0;
    loop {
        let summary = services
            .turn_settled
            .drain(&counting, &Discard)
            .expect("drain");
        if summary.claimed == 0 {
            break;
        }
        enqueued += summary.enqueued;
    }
    // Retention's removals still under way belong to this drain.
    services.turn_settled.settle();
    let elapsed = timer.stop();
    assert_eq!(enqueued as usize, count, "every event resolves");
    drop(services);
    tear_down(dir);
    elapsed
}

/// How a floor makes a batch's outcomes durable before its moves.
#[derive(Clone, Copy, PartialEq, Debug)]
enum FloorSyncs {
    /// The batch's outcomes written into one file beside the metas and that
    /// file's data synced side by side with the results folder, the metas
    /// themselves not (the group commit: the least the guarantee needs, two
    /// sync rounds per batch). Per batch: one fdatasync (the record), and
    /// one folder fsync per folder per round: `processed/` before the moves
    /// (the record's name: on a file system without a journal, as the one
    /// these figures were taken on, nothing else orders it before a move's
    /// name), `processing/` and `processed/` after them (the moves, before
    /// any event is acted on). Four syncs per batch, 0.08 per event.
    OneRecord,
    /// Each meta synced (writeback of all started first, fsyncs on 8
    /// threads).
    EveryMeta,
    /// Nothing synced at all: the renames, reads and writes alone, for scale
    /// (no guarantee).
    None,
    /// Nothing synced and no retention either (results pile up): what the
    /// renames, reads and writes cost without the two unlinks per event
    /// that keep the results folder at its cap, for scale.
    NoneNoRetention,
}

impl FloorSyncs {
    /// Whether anything is synced.
    fn syncs(self) -> bool {
        !matches!(self, FloorSyncs::None | FloorSyncs::NoneNoRetention)
    }
}

/// Files per drain: the drain's own batch.
const BATCH: usize = DRAIN_BATCH;

/// The floor of a drain's file system work over `count` pending files: the
/// system calls a drain needs per batch of [`BATCH`] to keep its guarantees
/// (claim rename, payload read; meta created in place and written; the
/// batch's outcomes made durable as `syncs` says, and the results folder
/// synced; payloads moved; `processing/` and the results folder synced side by side)
/// plus retention's two unlinks per event past 1,000 results (on 8 threads,
/// overlapping the next batches, as the drain does), and nothing else: no
/// JSON, no attribution, no journal, one listing, folders opened once.
fn drain_floor(count: usize, syncs: FloorSyncs) -> Cost {
    let dir = run_dir();
    let paths = SpoolPaths::for_teams_base(&dir.path().join("teams"));
    fill_spool(&paths, count);
    let (incoming, processing, processed) =
        (paths.incoming(), paths.processing(), paths.processed());
    settle_disk();
    let timer = Timer::start();
    let mut names: Vec<String> = fs::read_dir(&incoming)
        .expect("incoming")
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort_unstable();
    let processing_dir = fs::File::open(&processing).expect("processing");
    let processed_dir = fs::File::open(&processed).expect("processed");
    let sync_dir = |dir: &fs::File| {
        if syncs.syncs() {
            dir.sync_all().expect("folder sync");
        }
    };
    let mut kept = std::collections::VecDeque::new();
    let mut removal: Option<std::thread::JoinHandle<()>> = None;
    for batch in names.chunks(BATCH) {
        let mut metas = Vec::with_capacity(batch.len());
        let mut record = Vec::new();
        for name in batch {
            let claimed = processing.join(format!("{name}.claimed-1"));
            fs::rename(incoming.join(name), &claimed).expect("claim");
            let payload = fs::read(&claimed).expect("payload");
            let meta_bytes = &payload[..payload.len().min(700)];
            let mut meta = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(processed.join(format!("{name}.meta.json")))
                .expect("meta");
            meta.write_all(meta_bytes).expect("meta write");
            record.extend_from_slice(meta_bytes);
            metas.push(meta);
        }
        match syncs {
            FloorSyncs::OneRecord => {
                let mut file = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(processed.join(format!(".outcomes-{}", batch[0])))
                    .expect("record");
                file.write_all(&record).expect("record write");
                // As the drain: the record's data and the folder's names
                // synced side by side, one round before the moves.
                std::thread::scope(|scope| {
                    scope.spawn(|| file.sync_data().expect("record sync"));
                    sync_dir(&processed_dir);
                });
                kept.push_back(format!(".outcomes-{}", batch[0]));
            }
            FloorSyncs::EveryMeta => {
                // As `sync_staged`: writeback started first where Linux offers it.
                #[cfg(target_os = "linux")]
                for meta in &metas {
                    use std::os::fd::AsRawFd;
                    // SAFETY: a valid open descriptor; the call reads no memory of ours.
                    unsafe {
                        libc::sync_file_range(meta.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
                    }
                }
                std::thread::scope(|scope| {
                    for part in metas.chunks(metas.len().div_ceil(8)) {
                        scope.spawn(move || part.iter().for_each(|m| m.sync_data().expect("sync")));
                    }
                });
            }
            FloorSyncs::None | FloorSyncs::NoneNoRetention => {}
        }
        if syncs != FloorSyncs::OneRecord {
            sync_dir(&processed_dir);
        }
        for name in batch {
            let claimed = processing.join(format!("{name}.claimed-1"));
            fs::rename(claimed, processed.join(name)).expect("move");
        }
        std::thread::scope(|scope| {
            scope.spawn(|| sync_dir(&processing_dir));
            sync_dir(&processed_dir);
        });
        kept.extend(batch.iter().cloned());
        if kept.len() > 1_100 && syncs != FloorSyncs::NoneNoRetention {
            if let Some(running) = removal.take() {
                running.join().expect("removal");
            }
            let doomed: Vec<String> = kept.drain(..kept.len() - 1_000).collect();
            let processed = processed.clone();
            removal = Some(std::thread::spawn(move || {
                std::thread::scope(|scope| {
                    for part in doomed.chunks(doomed.len().div_ceil(8)) {
                        let processed = &processed;
                        scope.spawn(move || {
                            for name in part {
                                let _ = fs::remove_file(processed.join(name));
                                let _ =
                                    fs::remove_file(processed.join(format!("{name}.meta.json")));
                            }
                        });
                    }
                });
            }));
        }
    }
    if let Some(running) = removal.take() {
        running.join().expect("removal");
    }
    let elapsed = timer.stop();
    tear_down(dir);
    elapsed
}

/// Events per second of `count` events in `elapsed`.
fn rate(count: usize, elapsed: Duration) -> f64 {
    count as f64 / elapsed.as_secs_f64()
}

/// CPU microseconds per event of `count` events costing `cpu`.
fn cpu_per_event(count: usize, cpu: Duration) -> f64 {
    cpu.as_secs_f64() * 1e6 / count as f64
}

/// The median of `values`.
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Drain rounds at `count` files. Each round times, one after another, the
/// drain and the floors (in an order rotated round by round, so drift in the
/// machine's load hits each alike), every run on a fresh spool whose payloads
/// and earlier teardown are on disk before its clock starts. Per round: each
/// rate and the drain's ratio to the group-commit floor, then the CPU time
/// per event of the drain and of that floor (their own work, whatever else
/// runs on the machine); then the medians.
fn drain_rounds(count: usize, rounds: usize) {
    println!(
        "drain of {count} Claude Stop files to the queue port (transcript resolution included), \
         batches of {BATCH}, {rounds} rounds; events/s, then CPU µs/event:"
    );
    println!(
        "  {:>6}  {:>7}  {:>13}  {:>6}  {:>16}  {:>8}  {:>12}  {:>9}  {:>10}",
        "round",
        "drain",
        "floor: record",
        "ratio",
        "floor: each meta",
        "no syncs",
        "no retention",
        "cpu drain",
        "cpu record"
    );
    let mut columns = [Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new()];
    let mut cpus = [Vec::new(), Vec::new()];
    let mut ratios = Vec::new();
    for round in 0..rounds {
        let mut rates = [0.0; 5];
        let mut cpu = [0.0; 2];
        for k in 0..5 {
            let which = (k + round) % 5;
            let cost = match which {
                0 => drain_throughput(count),
                1 => drain_floor(count, FloorSyncs::OneRecord),
                2 => drain_floor(count, FloorSyncs::EveryMeta),
                3 => drain_floor(count, FloorSyncs::None),
                _ => drain_floor(count, FloorSyncs::NoneNoRetention),
            };
            rates[which] = rate(count, cost.wall);
            if which < 2 {
                cpu[which] = cpu_per_event(count, cost.cpu);
            }
        }
        let ratio = rates[0] / rates[1];
        ratios.push(ratio);
        println!(
            "  {:>6}  {:>7.0}  {:>13.0}  {:>5.2}×  {:>16.0}  {:>8.0}  {:>12.0}  {:>9.0}  {:>10.0}",
            round + 1,
            rates[0],
            rates[1],
            ratio,
            rates[2],
            rates[3],
            rates[4],
            cpu[0],
            cpu[1]
        );
        for (column, rate) in columns.iter_mut().zip(rates) {
            column.push(rate);
        }
        for (column, cpu) in cpus.iter_mut().zip(cpu) {
            column.push(cpu);
        }
    }
    let [drain, record, each_meta, none, no_retention] = columns.map(median);
    let [cpu_drain, cpu_record] = cpus.map(median);
    println!(
        "  {:>6}  {drain:>7.0}  {record:>13.0}  {:>5.2}×  {each_meta:>16.0}  {none:>8.0}  {no_retention:>12.0}  {cpu_drain:>9.0}  {cpu_record:>10.0}",
        "median",
        median(ratios)
    );
}

fn main() {
    // `cargo bench --bench turn_settled [-- hook|drain|drain-once]`: cargo
    // adds `--bench`. `drain-once` times one drain of 10,000 files and
    // nothing else (to run under strace or perf).
    let only = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let wanted = |part: &str| only.as_deref().is_none_or(|o| o == part);
    if only.as_deref() == Some("drain-once") {
        let cost = drain_throughput(10_000);
        println!(
            "one drain of 10000 files: {:.0} events/s, {:.0} CPU µs/event",
            rate(10_000, cost.wall),
            cpu_per_event(10_000, cost.cpu)
        );
        return;
    }
    if wanted("hook") {
        hook_latency();
    }
    if wanted("drain") {
        drain_rounds(10_000, 3);
    }
}
