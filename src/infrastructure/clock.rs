//! Clocks: the system clock, a settable one for tests, and conversion of
//! file times to the same epoch milliseconds.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

use crate::application::ports::Clock;
use crate::domain::time::EpochMs;

/// Wall-clock time.
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
pub fn epoch_ms(time: SystemTime) -> Option<EpochMs> {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).ok()?;
    EpochMs::try_from(since.as_millis()).ok()
}

/// A clock that only moves when told to.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// Starts at `now_ms`.
    pub fn new(now_ms: EpochMs) -> Self {
        Self(AtomicI64::new(now_ms))
    }

    /// Moves to `now_ms`.
    pub fn set(&self, now_ms: EpochMs) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> EpochMs {
        self.0.load(Ordering::SeqCst)
    }

    /// Real monotonic time: only the epoch clock is fixed for tests; a
    /// dispatch's time budget and board reuse still run on real time.
    fn monotonic(&self) -> Duration {
        process_monotonic()
    }
}
