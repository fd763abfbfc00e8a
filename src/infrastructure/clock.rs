//! Clocks: the system clock, and a settable one for tests.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::application::ports::Clock;
use crate::domain::time::EpochMs;

/// Wall-clock time.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> EpochMs {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as EpochMs)
    }
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
}
