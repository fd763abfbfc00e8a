//! Operator log: background failures (drains, dispatches, watchers, queue
//! runs, journal and metrics writes) that no caller is waiting for. They go
//! to the app's `onLog` callback when one is connected and nowhere otherwise:
//! the addon never prints.

use std::sync::RwLock;

use serde_json::{Map, Value};

/// How serious an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detail for debugging.
    Debug,
    /// Normal operation worth noting.
    Info,
    /// Degraded, retried or skipped; the addon carries on.
    Warn,
    /// Work was lost or could not be done.
    Error,
}

/// Stable codes of log entries (`MWS_LOG_*` at the JS edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogCode {
    /// A turn-settled spool drain failed as a whole.
    DrainFailed,
    /// A drain ran but some spool files or members failed.
    DrainIncomplete,
    /// A scheduled nudge dispatch failed.
    DispatchFailed,
    /// A dispatch ran but some outboxes or outcomes failed.
    DispatchIncomplete,
    /// The watcher on the spool's `incoming/` folder could not be set up;
    /// drains fall back to the interval.
    WatcherUnavailable,
    /// A queued reconcile failed.
    QueueRunFailed,
    /// A failed queued reconcile was scheduled again.
    QueueRetryScheduled,
    /// A queued reconcile failed too often and was dropped.
    QueueDropped,
    /// An audit journal line could not be written.
    JournalWriteFailed,
    /// Metric events could not be recorded.
    MetricsWriteFailed,
    /// One member's status could not be written during a team refresh (the
    /// other members' were).
    StatusWriteFailed,
    /// The queue's `activity.json` (for `watch`) could not be written; logged
    /// once per distinct error.
    ActivityWriteFailed,
    /// The Stop-hook programs in the spool's `bin/` could not be put back as
    /// the addon wrote them before a drain (the drain went on); logged once
    /// per distinct error.
    HookProgramsNotKept,
    /// The turn-settled hook could not be installed; runtimes launch without it.
    HookUnavailable,
    /// The hook executable is not used; the shell script runs instead.
    HookScriptFallback,
    /// A host callback (the Electron entry's options) threw, rejected or
    /// answered the wrong shape; its fallback was used.
    HostCallbackFailed,
    /// A host callback did not settle within its bound; its fallback was used.
    HostCallbackTimedOut,
    /// Gateway mode: the app's storage answered its first ping, the session
    /// keeps its state in the app's SQLite database.
    StorageSqliteSession,
    /// Gateway mode: the app's storage did not answer its first ping, the
    /// session keeps its state in the JSON files.
    StorageJsonFallback,
}

impl LogCode {
    /// The code as JS sees it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DrainFailed => "MWS_LOG_DRAIN_FAILED",
            Self::DrainIncomplete => "MWS_LOG_DRAIN_INCOMPLETE",
            Self::DispatchFailed => "MWS_LOG_DISPATCH_FAILED",
            Self::DispatchIncomplete => "MWS_LOG_DISPATCH_INCOMPLETE",
            Self::WatcherUnavailable => "MWS_LOG_WATCHER_UNAVAILABLE",
            Self::QueueRunFailed => "MWS_LOG_QUEUE_RUN_FAILED",
            Self::QueueRetryScheduled => "MWS_LOG_QUEUE_RETRY_SCHEDULED",
            Self::QueueDropped => "MWS_LOG_QUEUE_DROPPED",
            Self::JournalWriteFailed => "MWS_LOG_JOURNAL_WRITE_FAILED",
            Self::MetricsWriteFailed => "MWS_LOG_METRICS_WRITE_FAILED",
            Self::StatusWriteFailed => "MWS_LOG_STATUS_WRITE_FAILED",
            Self::ActivityWriteFailed => "MWS_LOG_ACTIVITY_WRITE_FAILED",
            Self::HookProgramsNotKept => "MWS_LOG_HOOK_PROGRAMS_NOT_KEPT",
            Self::HookUnavailable => "MWS_LOG_HOOK_UNAVAILABLE",
            Self::HookScriptFallback => "MWS_LOG_HOOK_SCRIPT_FALLBACK",
            Self::HostCallbackFailed => "MWS_LOG_HOST_CALLBACK_FAILED",
            Self::HostCallbackTimedOut => "MWS_LOG_HOST_CALLBACK_TIMED_OUT",
            Self::StorageSqliteSession => "MWS_LOG_STORAGE_SQLITE_SESSION",
            Self::StorageJsonFallback => "MWS_LOG_STORAGE_JSON_FALLBACK",
        }
    }
}

/// One log entry.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry {
    /// How bad it is, passed to the host's logger as `level`.
    pub level: LogLevel,
    /// The stable code a host can match on (messages may change, codes
    /// stay).
    pub code: LogCode,
    /// Human message (names the path where there is one).
    pub message: String,
    /// Structured detail (team, member, counts); empty when there is none.
    pub context: Map<String, Value>,
}

impl LogEntry {
    /// An entry without context.
    pub fn new(level: LogLevel, code: LogCode, message: impl Into<String>) -> Self {
        Self {
            level,
            code,
            message: message.into(),
            context: Map::new(),
        }
    }

    /// Adds `context` (an object; anything else is ignored).
    pub(crate) fn with_context(mut self, context: Value) -> Self {
        if let Value::Object(context) = context {
            self.context = context;
        }
        self
    }
}

/// Where log entries go. Must not block or fail.
pub trait LogSink: Send + Sync {
    /// Takes one entry.
    fn log(&self, entry: LogEntry);
}

/// The instance's log: forwards to the connected sink, drops entries while
/// none is connected (no `onLog`, or after dispose).
#[derive(Default)]
pub struct LogRelay {
    sink: RwLock<Option<Box<dyn LogSink>>>,
}

impl LogRelay {
    /// Routes entries to `sink` from now on.
    pub fn connect(&self, sink: Box<dyn LogSink>) {
        *self.sink.write().unwrap_or_else(|p| p.into_inner()) = Some(sink);
    }

    /// Drops the sink (dispose releases the JS callback).
    pub(crate) fn disconnect(&self) {
        *self.sink.write().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

impl LogSink for LogRelay {
    fn log(&self, entry: LogEntry) {
        if let Some(sink) = self.sink.read().unwrap_or_else(|p| p.into_inner()).as_ref() {
            sink.log(entry);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A sink that keeps what it gets.
    #[derive(Default, Clone)]
    pub(crate) struct Captured(pub Arc<Mutex<Vec<LogEntry>>>);

    impl LogSink for Captured {
        fn log(&self, entry: LogEntry) {
            self.0.lock().unwrap().push(entry);
        }
    }

    #[test]
    fn the_relay_forwards_only_while_connected() {
        let relay = LogRelay::default();
        let captured = Captured::default();
        let entry = || LogEntry::new(LogLevel::Warn, LogCode::DrainFailed, "x");
        relay.log(entry());
        relay.connect(Box::new(captured.clone()));
        relay.log(entry().with_context(serde_json::json!({ "teamName": "forge" })));
        relay.disconnect();
        relay.log(entry());
        let got = captured.0.lock().unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].context["teamName"], "forge");
    }

    #[test]
    fn codes_are_stable_and_distinct() {
        let codes = [
            LogCode::DrainFailed,
            LogCode::DrainIncomplete,
            LogCode::DispatchFailed,
            LogCode::DispatchIncomplete,
            LogCode::WatcherUnavailable,
            LogCode::QueueRunFailed,
            LogCode::QueueRetryScheduled,
            LogCode::QueueDropped,
            LogCode::JournalWriteFailed,
            LogCode::MetricsWriteFailed,
            LogCode::ActivityWriteFailed,
            LogCode::HookUnavailable,
            LogCode::HookScriptFallback,
            LogCode::HostCallbackFailed,
            LogCode::HostCallbackTimedOut,
        ];
        let names: std::collections::BTreeSet<_> = codes.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), codes.len());
        assert!(names.iter().all(|n| n.starts_with("MWS_LOG_")));
    }
}
