//! Gateway mode's calls into the app, as the addon waits for them.
//!
//! How a call reaches the JS thread is the [`AppChannel`]'s business (the
//! binding's threadsafe functions, each bound to its object so `this` is
//! the gateway, as the app's own callers have it); here is the protocol
//! around it: a call is made from a worker thread, never on the JS thread
//! (that thread could not settle the promise while it waits); what it
//! returned and the promise it settles are waited for at most the call
//! timeout; dispose ([`StorageClose`]) ends every wait and refuses new calls.

use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{Thread, ThreadId};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::app_gateway::{AppGateway, GatewayCaller, GatewayMethod};
use super::session::{AppStorage, SessionAnswer, SessionQuestion};

/// Longest wait for one gateway call unless `callTimeoutMs` says otherwise:
/// above the app's own 20 s worker timeout, so its error arrives first.
pub(crate) const DEFAULT_CALL_TIMEOUT_MS: u64 = 30_000;
/// Bounds of `storage.callTimeoutMs`.
pub(crate) const CALL_TIMEOUT_MS_BOUNDS: (u64, u64) = (10, 120_000);
/// How often a wait looks whether the instance was disposed.
const CLOSED_CHECK: Duration = Duration::from_millis(100);

/// What the addon calls in the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AppTarget {
    /// A method of the app's storage gateway.
    Gateway(GatewayMethod),
    /// `selector.select(sqlite, json)`.
    Select,
    /// `selector.getBackendInfo()`: returns its answer, no promise.
    BackendInfo,
}

/// What a call returned, as a future of the value its promise settles to
/// (`null` for `undefined`) or the reason it rejected.
pub(crate) type Returned = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

/// Hands what a call returned (or why it threw) back to the waiting thread.
pub(crate) type OnReturn = Box<dyn FnOnce(Result<Returned, String>) + Send>;

/// The way to the app's objects on the JS thread.
pub(crate) trait AppChannel: Send + Sync {
    /// Whether the app gave a backend selector.
    fn has_selector(&self) -> bool;
    /// Queues the call of `target` with `args` on the JS thread, where
    /// `on_return` gets what it returned; `Err` when it cannot be queued.
    fn queue(&self, target: AppTarget, args: Vec<Value>, on_return: OnReturn)
        -> Result<(), String>;
}

/// Ends every gateway wait of an instance (dispose).
#[derive(Clone, Default)]
pub(crate) struct StorageClose(Arc<AtomicBool>);

impl StorageClose {
    /// From now on no call waits and none is made.
    pub(crate) fn close(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// The app's storage as the addon calls it.
struct AppCalls {
    channel: Box<dyn AppChannel>,
    timeout: Duration,
    js_thread: ThreadId,
    closed: StorageClose,
}

/// The app's storage over `channel` (built on the JS thread), each call
/// waited for at most `timeout`, and the dispose switch of its waits.
pub(crate) fn app_storage(
    channel: Box<dyn AppChannel>,
    timeout: Duration,
    fallback_requires_replica: bool,
) -> (AppStorage, StorageClose) {
    let closed = StorageClose::default();
    let calls = Arc::new(AppCalls {
        channel,
        timeout,
        js_thread: std::thread::current().id(),
        closed: closed.clone(),
    });
    let storage = AppStorage {
        gateway: Arc::new(AppGateway::new(SharedCalls(calls.clone()))),
        question: calls,
        fallback_requires_replica,
    };
    (storage, closed)
}

impl AppCalls {
    /// Makes the call on the JS thread and waits for what it returned.
    fn call(&self, target: AppTarget, args: Vec<Value>) -> Result<Returned, String> {
        if std::thread::current().id() == self.js_thread {
            return Err("called on the JS thread, which cannot wait for its own promise".into());
        }
        if self.closed.0.load(Ordering::SeqCst) {
            return Err("the instance was disposed".into());
        }
        let (sender, receiver) = sync_channel(1);
        let on_return: OnReturn = Box::new(move |returned| {
            let _ = sender.try_send(returned);
        });
        self.channel.queue(target, args, on_return)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            match receiver.recv_timeout(CLOSED_CHECK.min(self.timeout)) {
                Ok(returned) => return returned,
                Err(RecvTimeoutError::Disconnected) => return Err("the call was dropped".into()),
                Err(RecvTimeoutError::Timeout) => self.still_waiting(deadline)?,
            }
        }
    }

    /// `Err` once the deadline passed or the instance was disposed.
    fn still_waiting(&self, deadline: Instant) -> Result<(), String> {
        if self.closed.0.load(Ordering::SeqCst) {
            return Err("the instance was disposed".into());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "did not settle within {} ms",
                self.timeout.as_millis()
            ));
        }
        Ok(())
    }

    /// Calls a promise-returning method and waits for it to settle.
    fn call_async(&self, target: AppTarget, args: Vec<Value>) -> Result<Value, String> {
        let deadline = Instant::now() + self.timeout;
        let promise = self
            .call(target, args)
            .map_err(|e| format!("threw or returned no promise: {e}"))?;
        let settled = wait(promise, deadline, || self.still_waiting(deadline))?;
        settled.map_err(|e| format!("rejected: {e}"))
    }
}

/// Polls `future` on this thread until it is ready or `check` says stop.
fn wait<F: Future>(
    future: F,
    deadline: Instant,
    check: impl Fn() -> Result<(), String>,
) -> Result<F::Output, String> {
    /// Wakes the waiting thread.
    struct Unpark(Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut context) {
            return Ok(output);
        }
        check()?;
        let left = deadline.saturating_duration_since(Instant::now());
        std::thread::park_timeout(left.min(CLOSED_CHECK));
    }
}

/// The [`GatewayCaller`] of one instance's storage.
struct SharedCalls(Arc<AppCalls>);

impl GatewayCaller for SharedCalls {
    fn call(&self, method: GatewayMethod, args: Vec<Value>) -> Result<Value, String> {
        self.0.call_async(AppTarget::Gateway(method), args)
    }
}

impl SessionQuestion for AppCalls {
    fn ask(&self) -> SessionAnswer {
        if std::thread::current().id() == self.js_thread || self.closed.0.load(Ordering::SeqCst) {
            return SessionAnswer::NotAsked("asked on the JS thread or after dispose".into());
        }
        if !self.channel.has_selector() {
            // As the app's selector: any answer to the first ping is SQLite.
            return match self.call_async(AppTarget::Gateway(GatewayMethod::Ping), vec![]) {
                Ok(info) => SessionAnswer::Sqlite(info),
                Err(e) => SessionAnswer::Unavailable(format!("ping {e}")),
            };
        }
        // The app's own decision, shared with its other stores.
        let select = vec![json!("sqlite"), json!("json-fallback")];
        match self.call_async(AppTarget::Select, select) {
            Ok(Value::String(kind)) if kind == "sqlite" => SessionAnswer::Sqlite(
                self.call(AppTarget::BackendInfo, vec![])
                    .ok()
                    .and_then(|info| wait(info, Instant::now(), || Ok(())).ok())
                    .and_then(Result::ok)
                    .unwrap_or(Value::Null),
            ),
            Ok(other) => SessionAnswer::Unavailable(format!(
                "the app's selector chose {other} for this session"
            )),
            Err(e) => SessionAnswer::Unavailable(format!("selector.select {e}")),
        }
    }
}
