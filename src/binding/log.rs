//! The `onLog` constructor option: background failures delivered to the
//! app's logger as `{ level, code, message, context? }` on the JS thread.

use napi::threadsafe_function::{
    ThreadsafeFunction, ThreadsafeFunctionCallMode, UnknownReturnValue,
};
use napi::Status;
use serde_json::{json, Value};

use crate::application::log::{LogEntry, LogSink};

/// The `onLog` callback: called with one entry object, its result and any
/// exception it throws are ignored; weak, so it never keeps Node alive.
pub type LogCallback = ThreadsafeFunction<Value, UnknownReturnValue, Value, Status, false, true>;

/// Delivers log entries to the JS callback.
pub(crate) struct JsLogSink(pub(crate) LogCallback);

impl LogSink for JsLogSink {
    fn log(&self, entry: LogEntry) {
        let mut value = json!({
            "level": entry.level,
            "code": entry.code.as_str(),
            "message": entry.message,
        });
        if !entry.context.is_empty() {
            value["context"] = Value::Object(entry.context);
        }
        // Non-blocking: a slow or throwing logger never holds up background work.
        let _ = self.0.call_with_return_value(
            value,
            ThreadsafeFunctionCallMode::NonBlocking,
            |_, _| Ok(()),
        );
    }
}
