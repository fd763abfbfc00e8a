//! The instance's own tokio runtime: takes team change events off the JS
//! thread and drives the reconcile queue (sleeping until the next item is due,
//! woken early by new work). Nothing here keeps Node alive: these are plain
//! threads, not libuv handles.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::{mpsc, Notify};

use super::shared_watcher::Registration;
use crate::application::engine::Engine;
use crate::application::queue::RECONCILE_TIMEOUT_MS;
use crate::application::router::TeamChangeEvent;

/// Longest the driver sleeps before looking again (it is woken earlier by new
/// work or a moved test clock).
const MAX_IDLE: Duration = Duration::from_secs(1);

/// Most team change events waiting for the intake; past it, events are
/// dropped and counted (`droppedEvents`). Identical events merge while they
/// wait, so only this many distinct changes can pile up.
pub const INTAKE_CAPACITY: usize = 16_384;

/// Most events routed in one pass of the intake (one blocking task each).
const INTAKE_BATCH: usize = 1024;

/// Pause of the intake after each pass: a burst of identical events merges
/// while it waits instead of each being routed on its own (at most a few
/// hundred passes a second), and routing is late by this much at most,
/// against queue delays of seconds.
const INTAKE_PAUSE: Duration = Duration::from_millis(2);

/// How often the schedulers run (`tuning.drainIntervalMs`,
/// `tuning.dispatchIntervalMs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScheduleIntervals {
    /// Turn-settled drain interval without watcher news.
    pub drain_every: Duration,
    /// Nudge dispatch interval.
    pub dispatch_every: Duration,
}

impl Default for ScheduleIntervals {
    fn default() -> Self {
        Self {
            drain_every: DRAIN_EVERY,
            dispatch_every: DISPATCH_EVERY,
        }
    }
}

/// Background work of one addon instance.
pub struct Worker {
    runtime: Mutex<Option<Runtime>>,
    /// Scheduled drain / dispatch passes running now (shutdown waits for them).
    passes: Arc<Passes>,
    events: mpsc::Sender<TeamChangeEvent>,
    /// Events sent and not yet taken by the intake.
    waiting: Arc<Mutex<HashSet<TeamChangeEvent>>>,
    engine: Arc<Engine>,
    notify: Arc<Notify>,
    stopping: Arc<AtomicBool>,
}

/// Events whose effect depends on their order among the others: tool calls
/// (a start after a reset must stay after it) and the lead's activity (going
/// offline forgets the team's tool calls). Merging one into an identical
/// waiting event would move it before the events sent in between.
fn order_sensitive(event: &TeamChangeEvent) -> bool {
    matches!(event.kind.as_str(), "tool-activity" | "lead-activity")
}

/// How a drain went, which decides when the next one runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DrainPass {
    /// A full batch went through: more may be waiting, drain again at once.
    Full,
    /// Caught up: drain again when a file arrives or the interval ends.
    CaughtUp,
    /// Something failed and was put back for later: wait the whole interval,
    /// so a file that keeps failing is not retried every second.
    Failed,
}

/// Told of a watch that could not be set up: the folder and the error.
pub type WatchFailed = Box<dyn Fn(&std::path::Path, &str) + Send + Sync>;

/// The periodic turn-settled drain: what to call and where new files land.
pub struct DrainSchedule {
    /// One drain.
    pub drain: Box<dyn Fn() -> DrainPass + Send + Sync>,
    /// The spool's `incoming/` folder to watch for new payloads, when it is
    /// a real folder (checked without following links: a watch on a linked
    /// folder would sit on a folder an agent chose).
    pub incoming: Box<dyn Fn() -> Option<PathBuf> + Send + Sync>,
    /// The spool's `bin/` folder, watched beside `incoming/` (by the same
    /// watcher) when it is a real folder: a change to a hook program starts
    /// a drain, which puts the addon's program back.
    pub programs: Box<dyn Fn() -> Option<PathBuf> + Send + Sync>,
    /// Told when a watch on `incoming/` cannot be set up (the folder and the
    /// error); once per distinct failure, not every retry.
    pub watch_failed: WatchFailed,
}

impl Worker {
    /// Starts the runtime and the event intake; with `run_queue`, also the queue
    /// driver, the turn-settled drain scheduler, the nudge dispatch scheduler
    /// (every `intervals`) and `publish` (every second).
    pub fn start(
        engine: Arc<Engine>,
        run_queue: bool,
        drains: Option<DrainSchedule>,
        dispatch: Option<Box<dyn Fn() + Send + Sync>>,
        publish: Option<Box<dyn Fn() + Send + Sync>>,
        intervals: ScheduleIntervals,
    ) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(8)
            .thread_name("member-work-sync")
            .enable_time()
            .build()?;
        let notify = Arc::new(Notify::new());
        let stopping = Arc::new(AtomicBool::new(false));
        let wake = notify.clone();
        engine.set_wake(Box::new(move || wake.notify_one()));
        // Weak: the engine keeps this hook, the hook must not keep the engine.
        let (handle, weak_engine) = (runtime.handle().clone(), Arc::downgrade(&engine));
        let background_stopping = stopping.clone();
        engine.set_background(Box::new(move |work| {
            if background_stopping.load(Ordering::SeqCst) {
                return;
            }
            let engine = weak_engine.clone();
            handle.spawn_blocking(move || {
                if let Some(engine) = engine.upgrade() {
                    work(&engine);
                }
            });
        }));

        let passes = Arc::new(Passes::default());
        let (events, mut intake) = mpsc::channel::<TeamChangeEvent>(INTAKE_CAPACITY);
        let waiting: Arc<Mutex<HashSet<TeamChangeEvent>>> = Arc::default();
        let intake_engine = engine.clone();
        let taken = waiting.clone();
        runtime.spawn(async move {
            let mut batch = Vec::with_capacity(INTAKE_BATCH);
            while intake.recv_many(&mut batch, INTAKE_BATCH).await > 0 {
                // Taken: an identical event noted from now on is routed
                // again (the board may have changed since this one).
                {
                    let mut waiting = taken.lock().unwrap_or_else(|p| p.into_inner());
                    for event in &batch {
                        waiting.remove(event);
                    }
                }
                let events = std::mem::replace(&mut batch, Vec::with_capacity(INTAKE_BATCH));
                let engine = intake_engine.clone();
                // Routing may read the board: keep it off the async worker.
                let _ = tokio::task::spawn_blocking(move || {
                    for event in &events {
                        engine.note_team_change(event);
                    }
                })
                .await;
                tokio::time::sleep(INTAKE_PAUSE).await;
            }
        });
        if run_queue {
            runtime.spawn(drive(engine.clone(), notify.clone(), stopping.clone()));
            if let Some(schedule) = drains {
                runtime.spawn(drain_loop(
                    schedule,
                    intervals.drain_every,
                    stopping.clone(),
                    passes.clone(),
                ));
            }
            if let Some(dispatch) = dispatch {
                runtime.spawn(every(
                    dispatch,
                    intervals.dispatch_every,
                    stopping.clone(),
                    passes.clone(),
                ));
            }
            if let Some(publish) = publish {
                runtime.spawn(every(
                    publish,
                    PUBLISH_EVERY,
                    stopping.clone(),
                    passes.clone(),
                ));
            }
        }
        Ok(Self {
            passes,
            runtime: Mutex::new(Some(runtime)),
            events,
            waiting,
            engine,
            notify,
            stopping,
        })
    }

    /// Hands an event to the intake; never blocks, never fails. An event
    /// identical to one still waiting for the intake (and not
    /// [order-sensitive](order_sensitive)) is merged into it here,
    /// on the caller's thread, at the cost of a hash lookup: routing it would
    /// only coalesce into what the waiting one queues. When the channel is
    /// full the event is dropped. Both are counted (`mergedEvents`,
    /// `droppedEvents`).
    pub fn note(&self, event: TeamChangeEvent) {
        if self.stopping.load(Ordering::SeqCst) {
            return;
        }
        let counters = self.engine.intake_counters();
        // Held across the send, so the intake's removal of a taken event
        // cannot come before its insertion here.
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let mergeable = !order_sensitive(&event);
        if mergeable && waiting.contains(&event) {
            counters.merged.fetch_add(1, Ordering::Relaxed);
            return;
        }
        match self.events.try_send(event.clone()) {
            Ok(()) => {
                if mergeable {
                    waiting.insert(event);
                }
            }
            Err(mpsc::error::TrySendError::Full(_)) => {
                counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    /// Runs blocking work on the runtime's blocking pool (no-op once shut down).
    pub fn run_blocking(&self, work: impl FnOnce() + Send + 'static) {
        if let Some(runtime) = self
            .runtime
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            runtime.spawn_blocking(work);
        }
    }

    /// Wakes the driver (new work, or the test clock moved).
    pub fn wake(&self) {
        self.notify.notify_one();
    }

    /// Stops the driver, waits for running reconciles, shuts the runtime down.
    /// Blocking; idempotent.
    pub fn shutdown(&self, engine: &Engine) {
        self.stopping.store(true, Ordering::SeqCst);
        engine.stop();
        self.notify.notify_one();
        engine.wait_idle();
        self.passes.wait_idle();
        let runtime = self
            .runtime
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(runtime) = runtime {
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Garbage-collected without dispose(): never block the JS thread.
        let runtime = self
            .runtime
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(runtime) = runtime {
            runtime.shutdown_background();
        }
    }
}

/// Waits for a reconcile: its result when it ends within `timeout`, else
/// `false` (too slow counts as failed) - but only once it has really ended,
/// so its queue slot stays taken and the member is never reconciled twice at
/// once. A reconcile that panicked counts as failed.
async fn finish_within(mut reconcile: tokio::task::JoinHandle<bool>, timeout: Duration) -> bool {
    match tokio::time::timeout(timeout, &mut reconcile).await {
        Ok(result) => result.unwrap_or(false),
        Err(_) => {
            let _ = reconcile.await;
            false
        }
    }
}

async fn drive(engine: Arc<Engine>, notify: Arc<Notify>, stopping: Arc<AtomicBool>) {
    while !stopping.load(Ordering::SeqCst) {
        // take_due and finish may write journal lines (file locks): never on
        // the async thread, which also carries intake and the schedulers.
        let taker = engine.clone();
        let due = tokio::task::spawn_blocking(move || taker.take_due())
            .await
            .unwrap_or_default();
        for (key, item) in due {
            let engine = engine.clone();
            tokio::spawn(async move {
                let runner = engine.clone();
                let job = item.clone();
                let handle = tokio::task::spawn_blocking(move || runner.run(&job).is_ok());
                let timeout = Duration::from_millis(RECONCILE_TIMEOUT_MS as u64);
                let succeeded = finish_within(handle, timeout).await;
                let _ = tokio::task::spawn_blocking(move || engine.finish(&key, &item, succeeded))
                    .await;
            });
        }
        let now = engine.now_ms();
        let idle = engine
            .next_run_at()
            .map(|at| Duration::from_millis(at.saturating_sub(now).max(0) as u64))
            .map_or(MAX_IDLE, |d| d.min(MAX_IDLE));
        tokio::select! {
            _ = notify.notified() => {}
            _ = tokio::time::sleep(idle) => {}
        }
    }
}

/// First drain after start.
const FIRST_DRAIN: Duration = Duration::from_millis(100);
/// Default drain interval without watcher news.
const DRAIN_EVERY: Duration = Duration::from_secs(15);
/// Retry interval while the spool's `incoming/` does not exist yet.
const WATCHER_RETRY: Duration = Duration::from_secs(1);
/// Least time from one drain's start to the next one a watcher event starts
///: a file that keeps failing and is released back to
/// `incoming/` must not turn the watcher into a busy loop.
const MIN_DRAIN_GAP: Duration = Duration::from_secs(1);

/// Drains the spool 100 ms after start, then every `drain_every` (default
/// 15 s), and soon after the
/// watcher sees a new file in `incoming/` (at most one drain a second that
/// way); one drain at a time, an immediate follow-up when a batch was full,
/// only the interval after a drain that failed. Without a watcher the
/// interval alone runs. After each drain, a watched folder found replaced
/// (another folder at its path) is watched again.
async fn drain_loop(
    schedule: DrainSchedule,
    drain_every: Duration,
    stopping: Arc<AtomicBool>,
    passes: Arc<Passes>,
) {
    let news = Arc::new(Notify::new());
    let mut watcher: Option<Watching> = None;
    let mut last_watch_error: Option<String> = None;
    tokio::time::sleep(FIRST_DRAIN).await;
    let DrainSchedule {
        drain,
        incoming,
        programs,
        watch_failed,
    } = schedule;
    let folders = WatchedFolders { incoming, programs };
    let drain = Arc::new(drain);
    while !stopping.load(Ordering::SeqCst) {
        if watcher.is_none() {
            // The spool may be installed later (first hook settings call): retry each round.
            watcher = folders.attach(&news, &watch_failed, &mut last_watch_error);
        }
        let run = drain.clone();
        let pass = passes.enter();
        let started = tokio::time::Instant::now();
        let outcome = tokio::task::spawn_blocking(move || {
            let _pass = pass;
            run()
        })
        .await
        .unwrap_or(DrainPass::Failed);
        if watcher.as_ref().is_some_and(|w| w.ids != folders.ids()) {
            // A watched folder was replaced (by an agent, or by the drain that
            // repaired the way to `bin/`): the kernel's watch followed the old
            // one. Watch the folders now there (the old registration first
            // ends, so the folder's count starts again).
            drop(watcher.take());
            watcher = folders.attach(&news, &watch_failed, &mut last_watch_error);
        }
        let interval = if watcher.is_some() {
            drain_every
        } else {
            // A short configured interval also shortens the retry.
            WATCHER_RETRY.min(drain_every)
        };
        match outcome {
            DrainPass::Full => continue,
            DrainPass::Failed => {
                tokio::time::sleep(interval).await;
                continue;
            }
            DrainPass::CaughtUp => {}
        }
        tokio::select! {
            _ = news.notified() => {
                tokio::time::sleep_until(started + MIN_DRAIN_GAP).await;
            }
            // Until the spool exists (the first hook settings call creates it)
            // there is no watcher: look again soon so it attaches right away.
            _ = tokio::time::sleep(interval) => {}
        }
    }
    drop(watcher);
}

/// The folders a drain scheduler watches.
struct WatchedFolders {
    incoming: Box<dyn Fn() -> Option<PathBuf> + Send + Sync>,
    programs: Box<dyn Fn() -> Option<PathBuf> + Send + Sync>,
}

/// Which folder is at a path: device and inode (`None`: none there, or a
/// platform where this is not known, which then never re-attaches).
type FolderId = Option<(u64, u64)>;

#[cfg(unix)]
fn folder_id(path: &std::path::Path) -> FolderId {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.is_dir().then(|| (meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn folder_id(_path: &std::path::Path) -> FolderId {
    None
}

/// A watch, and which folders were at the watched paths when it was set.
struct Watching {
    _registration: Registration,
    ids: [FolderId; 2],
}

impl WatchedFolders {
    /// Which folders are at `incoming/` and `bin/` now.
    fn ids(&self) -> [FolderId; 2] {
        let id = |path: Option<PathBuf>| path.as_deref().and_then(folder_id);
        [id((self.incoming)()), id((self.programs)())]
    }

    /// A watch on `incoming/` (and `bin/`), when `incoming/` exists; a
    /// failure is told to `watch_failed` once per distinct error.
    fn attach(
        &self,
        news: &Arc<Notify>,
        watch_failed: &WatchFailed,
        last_error: &mut Option<String>,
    ) -> Option<Watching> {
        // Read before watching: a folder replaced in between shows as stale.
        let ids = self.ids();
        let dir = (self.incoming)()?;
        match watch_incoming(&dir, (self.programs)(), news.clone()) {
            Ok(registration) => Some(Watching {
                _registration: registration,
                ids,
            }),
            Err(error) => {
                let error = error.to_string();
                if last_error.as_deref() != Some(error.as_str()) {
                    watch_failed(&dir, &error);
                    *last_error = Some(error);
                }
                None
            }
        }
    }
}

/// Whether a watcher event may bring a file to drain: a file created in or
/// renamed into `incoming/` under a visible name (the hook's `mv`), or an
/// event the backend could not classify. Opens, reads, writes to hidden temp
/// files and the drain's own claims (renames out) are not news: reacting to
/// them made every drain's own listing of `incoming/` start the next drain.
fn brings_a_file(event: &notify::Event) -> bool {
    use notify::event::{ModifyKind, RenameMode};
    use notify::EventKind;
    let arrival = match event.kind {
        EventKind::Create(_) | EventKind::Any | EventKind::Other => true,
        EventKind::Modify(ModifyKind::Name(mode)) => {
            matches!(
                mode,
                RenameMode::To | RenameMode::Both | RenameMode::Any | RenameMode::Other
            )
        }
        _ => false,
    };
    let visible = |path: &std::path::PathBuf| {
        path.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| !n.starts_with('.'))
    };
    arrival && (event.paths.is_empty() || event.paths.iter().any(visible))
}

/// Whether a watcher event in `bin/` may have changed a hook program: any
/// change (a write in place, a chmod, a rename, a removal) to a visible name
/// other than `boot-time` (rewritten by every drain that finds it stale) and
/// the copies moved aside (`*.invalid.*`). Reading a program (running it) is
/// not a change.
fn touches_a_program(event: &notify::Event) -> bool {
    use notify::EventKind;
    let program = |path: &std::path::PathBuf| {
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            !n.starts_with('.')
                && n != crate::infrastructure::spool::BOOT_TIME_FILE_NAME
                && !n.contains(".invalid.")
        })
    };
    let change = !matches!(event.kind, EventKind::Access(_));
    change && (event.paths.is_empty() || event.paths.iter().any(program))
}

/// A watch on `incoming/` (and `programs`, the spool's `bin/`, when given)
/// that pokes `news` when a file may have arrived or a hook program may have
/// changed: registrations on the process's one shared watcher (one inotify
/// instance however many instances watch), ended when dropped.
fn watch_incoming(
    incoming: &std::path::Path,
    programs: Option<PathBuf>,
    news: Arc<Notify>,
) -> notify::Result<Registration> {
    let mut registration = Registration::new();
    let wake = |news: &Arc<Notify>| {
        let news = news.clone();
        Box::new(move || news.notify_one()) as Box<dyn Fn() + Send + Sync>
    };
    registration.watch(incoming, Box::new(brings_a_file), wake(&news))?;
    if let Some(programs) = programs {
        // Without it, the interval's drains still put programs back.
        let _ = registration.watch(&programs, Box::new(touches_a_program), wake(&news));
    }
    Ok(registration)
}

/// Default nudge dispatch interval.
const DISPATCH_EVERY: Duration = Duration::from_secs(60);

/// How often a driving instance publishes its queue (`activity.json`).
const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// Runs `work` on the blocking pool every `interval` until stopped, the first
/// pass after one interval: the nudge dispatch (default every 60 s) and the
/// queue's activity file (every second).
async fn every(
    work: Box<dyn Fn() + Send + Sync>,
    interval: Duration,
    stopping: Arc<AtomicBool>,
    passes: Arc<Passes>,
) {
    let work = Arc::new(work);
    loop {
        tokio::time::sleep(interval).await;
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let run = work.clone();
        let pass = passes.enter();
        let _ = tokio::task::spawn_blocking(move || {
            let _pass = pass;
            run()
        })
        .await;
    }
}

/// Counts running scheduled passes so shutdown can wait for them.
#[derive(Default)]
struct Passes {
    running: Mutex<usize>,
    done: std::sync::Condvar,
}

/// One running pass; dropping it (also on panic) ends it.
struct Pass(Arc<Passes>);

impl Passes {
    fn enter(self: &Arc<Self>) -> Pass {
        *self.running.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        Pass(self.clone())
    }

    fn wait_idle(&self) {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        while *running > 0 {
            running = self.done.wait(running).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        *self.0.running.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
        self.0.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, CreateKind, EventKind, ModifyKind, RemoveKind, RenameMode};
    use std::path::PathBuf;
    use std::sync::atomic::AtomicUsize;

    /// How a fake reconcile ends: after how long (virtual time), with what result.
    enum Ends {
        After(Duration, bool),
        Panics,
    }

    #[tokio::test(start_paused = true)]
    async fn a_reconcile_past_its_timeout_fails_but_keeps_its_slot_until_it_ends() {
        let timeout = Duration::from_millis(RECONCILE_TIMEOUT_MS as u64);
        let second = Duration::from_secs(1);
        // (how the reconcile ends, what the queue is told)
        for (ends, succeeded) in [
            (Ends::After(timeout - second, true), true),
            (Ends::After(timeout - second, false), false),
            (Ends::After(timeout + second, true), false),
            (Ends::Panics, false),
        ] {
            // Virtual time: the reconcile ends exactly `after` into the test.
            let ran_for = match ends {
                Ends::After(after, _) => after,
                Ends::Panics => Duration::ZERO,
            };
            let started = tokio::time::Instant::now();
            let reconcile = tokio::spawn(async move {
                match ends {
                    Ends::After(after, result) => {
                        tokio::time::sleep(after).await;
                        result
                    }
                    Ends::Panics => panic!("reconcile bug"),
                }
            });
            assert_eq!(finish_within(reconcile, timeout).await, succeeded);
            // Never reported before the reconcile itself ended, timed out or not.
            assert!(started.elapsed() >= ran_for, "{ran_for:?}");
        }
    }

    fn event(kind: EventKind, paths: &[&str]) -> notify::Event {
        let mut event = notify::Event::new(kind);
        event.paths = paths
            .iter()
            .map(|p| PathBuf::from(format!("/spool/incoming/{p}")))
            .collect();
        event
    }

    #[test]
    fn only_files_arriving_under_visible_names_wake_the_drain() {
        let name = "20261122T100000Z-1-0.claude.json";
        let hidden = ".turn-settled.1.0";
        let wakes = [
            event(
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
                &[hidden, name],
            ),
            event(EventKind::Modify(ModifyKind::Name(RenameMode::To)), &[name]),
            event(
                EventKind::Modify(ModifyKind::Name(RenameMode::Any)),
                &[name],
            ),
            event(EventKind::Create(CreateKind::File), &[name]),
            event(EventKind::Any, &[]),
        ];
        for e in &wakes {
            assert!(brings_a_file(e), "{e:?}");
        }
        let quiet = [
            // The drain's own listing and reads.
            event(
                EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)),
                &[],
            ),
            event(
                EventKind::Access(AccessKind::Close(notify::event::AccessMode::Read)),
                &[name],
            ),
            // Its claims move files out.
            event(
                EventKind::Modify(ModifyKind::Name(RenameMode::From)),
                &[name],
            ),
            event(EventKind::Remove(RemoveKind::File), &[name]),
            // The hook writing its hidden temp file.
            event(EventKind::Create(CreateKind::File), &[hidden]),
            event(
                EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any)),
                &[hidden],
            ),
        ];
        for e in &quiet {
            assert!(!brings_a_file(e), "{e:?}");
        }
    }

    /// In `bin/`, any change to a program is news (a drain puts it back);
    /// running it, `boot-time` and the drain's own hidden temp files are not.
    #[test]
    fn a_changed_program_is_news_and_reading_one_is_not() {
        let named = |kind: EventKind, name: &str| {
            let mut event = notify::Event::new(kind);
            event.paths = vec![PathBuf::from(format!("/spool/bin/{name}"))];
            event
        };
        let cases = [
            (
                EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any)),
                "turn-settled-hook-v1",
                true,
            ),
            (
                EventKind::Access(AccessKind::Close(notify::event::AccessMode::Write)),
                "turn-settled-hook-v1.sh",
                false,
            ),
            (
                EventKind::Modify(ModifyKind::Metadata(notify::event::MetadataKind::Any)),
                "turn-settled-hook-v1",
                true,
            ),
            (
                EventKind::Modify(ModifyKind::Name(RenameMode::To)),
                "turn-settled-hook-v1",
                true,
            ),
            (
                EventKind::Modify(ModifyKind::Name(RenameMode::From)),
                "turn-settled-hook-v1.sh",
                true,
            ),
            (
                EventKind::Remove(RemoveKind::File),
                "turn-settled-hook-v1",
                true,
            ),
            (
                EventKind::Create(CreateKind::Folder),
                "turn-settled-hook-v1.sh",
                true,
            ),
            (
                EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)),
                "turn-settled-hook-v1",
                false,
            ),
            (
                EventKind::Modify(ModifyKind::Name(RenameMode::To)),
                "boot-time",
                false,
            ),
            (
                EventKind::Create(CreateKind::File),
                ".turn-settled-hook-v1.mws-tmp.1.0",
                false,
            ),
            (
                EventKind::Create(CreateKind::Folder),
                "turn-settled-hook-v1.sh.invalid.1",
                false,
            ),
        ];
        for (kind, name, news) in cases {
            assert_eq!(
                touches_a_program(&named(kind, name)),
                news,
                "{kind:?} {name}"
            );
        }
    }

    /// Waits (at most a minute, to fail rather than hang) until `drains`
    /// reaches `count`, calling `poke` every 100 ms meanwhile.
    fn wait_for_drains(drains: &AtomicUsize, count: usize, poke: impl Fn()) -> bool {
        for _ in 0..600 {
            if drains.load(Ordering::SeqCst) >= count {
                return true;
            }
            poke();
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// `bin/` moved away and made again (by an agent, or by the drain that
    /// repairs the way to it) is news, and the new `bin/` is watched after
    /// the drain that follows: a program written there starts a drain. The
    /// interval is an hour, so every drain after the first is the watcher's.
    #[test]
    fn a_replaced_bin_is_news_and_the_new_one_is_watched() {
        let dir = tempfile::tempdir().unwrap();
        let incoming = dir.path().join("incoming");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&incoming).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        let drains = Arc::new(AtomicUsize::new(0));
        let counter = drains.clone();
        let watched_bin = bin.clone();
        let schedule = DrainSchedule {
            drain: Box::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                DrainPass::CaughtUp
            }),
            incoming: Box::new(move || Some(incoming.clone())),
            programs: Box::new(move || Some(watched_bin.clone())),
            watch_failed: Box::new(|_, _| {}),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let stopping = Arc::new(AtomicBool::new(false));
        runtime.spawn(drain_loop(
            schedule,
            Duration::from_secs(3600),
            stopping.clone(),
            Arc::default(),
        ));
        assert!(wait_for_drains(&drains, 1, || {}), "no first drain");
        std::fs::rename(&bin, dir.path().join("bin.old")).unwrap();
        std::fs::create_dir(&bin).unwrap();
        let replaced = wait_for_drains(&drains, 2, || {});
        // A program written into the new `bin/`, again until it is seen (the
        // new watch is set just after the drain the move started).
        let program = bin.join("turn-settled-hook-v1");
        let watched = replaced
            && wait_for_drains(&drains, 3, || {
                std::fs::write(&program, b"planted").unwrap();
            });
        stopping.store(true, Ordering::SeqCst);
        assert!(replaced, "moving bin/ away started no drain");
        assert!(
            watched,
            "a program written into the new bin/ started no drain"
        );
    }

    /// Drains in 2.5 s of a scheduler whose every drain lists `incoming/`,
    /// which the watcher sees (inotify reports the open), claims the file
    /// there and puts it back, and reports `pass`.
    fn drains_in_two_and_a_half_seconds(pass: DrainPass) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let incoming = dir.path().join("incoming");
        let processing = dir.path().join("processing");
        std::fs::create_dir_all(&incoming).unwrap();
        std::fs::create_dir_all(&processing).unwrap();
        std::fs::write(incoming.join("20261122T100000Z-1-0.claude.json"), b"{}").unwrap();
        let drains = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = drains.clone();
        let (from, to) = (incoming.clone(), processing.clone());
        let schedule = DrainSchedule {
            drain: Box::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                // Like a drain whose read keeps failing: claim, then release.
                for entry in std::fs::read_dir(&from).unwrap().flatten() {
                    let claimed = to.join(entry.file_name());
                    std::fs::rename(entry.path(), &claimed).unwrap();
                    std::fs::rename(&claimed, entry.path()).unwrap();
                }
                pass
            }),
            incoming: Box::new(move || Some(incoming.clone())),
            programs: Box::new(|| None),
            watch_failed: Box::new(|_, _| {}),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let stopping = Arc::new(AtomicBool::new(false));
        runtime.spawn(drain_loop(
            schedule,
            DRAIN_EVERY,
            stopping.clone(),
            Arc::default(),
        ));
        std::thread::sleep(Duration::from_millis(2500));
        stopping.store(true, Ordering::SeqCst);
        drains.load(Ordering::SeqCst)
    }

    /// The drain's own listing must not start the next drain, nor a file
    /// put back in a loop. (Before the fix: about a thousand drains a second.)
    #[test]
    fn the_drains_own_work_does_not_wake_the_drain() {
        // 100 ms, then at most one a second: 3 in 2.5 s (one spare for a slow start).
        let count = drains_in_two_and_a_half_seconds(DrainPass::CaughtUp);
        assert!((1..=4).contains(&count), "{count} drains in 2.5 s");
        // After a failed drain only the 15 s interval starts the next one.
        let count = drains_in_two_and_a_half_seconds(DrainPass::Failed);
        assert_eq!(count, 1, "{count} drains in 2.5 s");
    }
}
