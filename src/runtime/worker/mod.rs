//! The instance's own tokio runtime: takes team change events off the JS
//! thread and drives the reconcile queue (sleeping until the next item is due,
//! woken early by new work), and runs the schedules: the turn-settled drain
//! ([`drain`]), the nudge dispatch and the activity file. Nothing here keeps
//! Node alive: these are plain threads, not libuv handles.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::sync::{mpsc, Notify};

use crate::application::engine::Engine;
use crate::application::queue::RECONCILE_TIMEOUT_MS;
use crate::application::router::TeamChangeEvent;

mod drain;

use drain::{drain_loop, DRAIN_EVERY};
pub(crate) use drain::{DrainPass, DrainSchedule};

/// Longest the driver sleeps before looking again (it is woken earlier by new
/// work or a moved test clock).
const MAX_IDLE: Duration = Duration::from_secs(1);

/// Most team change events waiting for the intake; past it, events are
/// dropped and counted (`droppedEvents`). Identical events merge while they
/// wait, so only this many distinct changes can pile up.
const INTAKE_CAPACITY: usize = 16_384;

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
pub(crate) struct ScheduleIntervals {
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
pub(crate) struct Worker {
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

impl Worker {
    /// Starts the runtime and the event intake; with `run_queue`, also the queue
    /// driver, the turn-settled drain scheduler, the nudge dispatch scheduler
    /// (every `intervals`) and `publish` (every second).
    pub(crate) fn start(
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
    pub(crate) fn note(&self, event: TeamChangeEvent) {
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
    pub(crate) fn run_blocking(&self, work: impl FnOnce() + Send + 'static) {
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
    pub(crate) fn wake(&self) {
        self.notify.notify_one();
    }

    /// Stops the driver, waits for running reconciles, shuts the runtime down.
    /// Blocking; idempotent.
    pub(crate) fn shutdown(&self, engine: &Engine) {
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
}
