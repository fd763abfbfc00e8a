//! Clocks: the system clock, a settable one for tests, and conversion of
//! file times to the same epoch milliseconds.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use crate::application::ports::Clock;
use crate::domain::time::EpochMs;

/// The production clock: wall-clock time for stamps and deadlines (0 before
/// the epoch), the OS's monotonic clock for durations.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> EpochMs {
        epoch_ms(SystemTime::now()).unwrap_or(0)
    }

    fn monotonic(&self) -> Duration {
        process_monotonic()
    }
}

/// Time since this process first asked, from the OS's monotonic clock.
fn process_monotonic() -> Duration {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

/// `time` as epoch milliseconds; `None` before 1970.
pub(crate) fn epoch_ms(time: SystemTime) -> Option<EpochMs> {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    EpochMs::try_from(since.as_millis()).ok()
}

/// A clock that only moves when told to (`options.clock`). Moving it forward
/// with [`ManualClock::set`] is time passing: its monotonic time advances by
/// as much (on top of real time, so time budgets still run out). Moving it
/// back, or [`ManualClock::step`], is a step of the wall clock only, as when
/// the operating system's clock is changed: monotonic time never goes back.
#[derive(Debug)]
pub struct ManualClock {
    now_ms: AtomicI64,
    /// Milliseconds the clock was moved forward in all.
    passed_ms: AtomicU64,
}

impl ManualClock {
    /// Starts at `now_ms`.
    pub fn new(now_ms: EpochMs) -> Self {
        Self {
            now_ms: AtomicI64::new(now_ms),
            passed_ms: AtomicU64::new(0),
        }
    }

    /// Moves to `now_ms`: forward, that much time passes; back, the clock
    /// steps back.
    pub fn set(&self, now_ms: EpochMs) {
        let before = self.now_ms.swap(now_ms, Ordering::SeqCst);
        let passed = u64::try_from(now_ms.saturating_sub(before)).unwrap_or(0);
        // Infallible: the closure always returns `Some`.
        let _ = self
            .passed_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |total| {
                Some(total.saturating_add(passed))
            });
    }

    /// Steps the wall clock to `now_ms` while no time passes, as when the
    /// operating system's clock is changed.
    pub fn step(&self, now_ms: EpochMs) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> EpochMs {
        self.now_ms.load(Ordering::SeqCst)
    }

    /// Real monotonic time plus the time the test let pass: a dispatch's
    /// time budget and board reuse still run on real time, and the hourly
    /// nudge limit sees the hours a test moves the clock forward.
    fn monotonic(&self) -> Duration {
        process_monotonic() + Duration::from_millis(self.passed_ms.load(Ordering::SeqCst))
    }
}
