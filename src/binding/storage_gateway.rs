//! The `storage: { gateway, selector?, callTimeoutMs? }` option: the app's
//! own storage gateway (its `MemberWorkSyncStorageGateway`, what it passes
//! `createMemberWorkSyncFeature` as `internalStorageBackend.gateway`) and,
//! optionally, its session selector. Inside Electron the addon never opens
//! `app.db`: every store op is a call of one of these methods.
//!
//! Each method becomes a threadsafe function bound to its object (so `this`
//! is the gateway, as the app's own callers have it), called from the
//! addon's worker threads with the app's arguments; the promise it returns
//! is awaited there, at most `callTimeoutMs`. A call is never made on the
//! JS thread (it could not settle the promise while it waits), and dispose
//! ends every wait.

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{Thread, ThreadId};
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{
    FnArgs, FromNapiValue, Function, JsObjectValue, JsValue, Object, Promise, Unknown, ValueType,
};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use serde_json::{json, Value};

use super::convert::integer_in;
use super::job::JsFailure;
use crate::infrastructure::sqlite::app_gateway::{AppGateway, GatewayCaller, GatewayMethod};
use crate::infrastructure::sqlite::session::{AppStorage, SessionAnswer, SessionQuestion};

/// Longest wait for one gateway call unless `callTimeoutMs` says otherwise:
/// above the app's own 20 s worker timeout, so its error arrives first.
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 30_000;
/// Bounds of `storage.callTimeoutMs`.
pub const CALL_TIMEOUT_MS_BOUNDS: (u64, u64) = (10, 120_000);
/// How often a wait looks whether the instance was disposed.
const CLOSED_CHECK: Duration = Duration::from_millis(100);

/// A method bound to its object; `R` is what its call returns.
type BoundMethod<R> = ThreadsafeFunction<Vec<Value>, R, Vec<Value>, Status, false, true>;
/// A method returning a promise of JSON data (or `undefined`).
type AsyncMethod = BoundMethod<Promise<Option<Value>>>;

/// The app's storage as the addon calls it.
pub(crate) struct JsAppStorage {
    methods: HashMap<GatewayMethod, AsyncMethod>,
    /// `selector.select(sqlite, json)` and `selector.getBackendInfo()`.
    selector: Option<(AsyncMethod, BoundMethod<Option<Value>>)>,
    timeout: Duration,
    js_thread: ThreadId,
    closed: Arc<AtomicBool>,
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

/// Reads `options.storage` when it holds a `gateway`: the app's storage and
/// the dispose switch of its waits. `None` when there is no gateway (JSON
/// files or `sqlitePath`, checked with the other options).
pub(crate) fn parse(
    env: &Env,
    options: &Object<'_>,
) -> Result<Option<(AppStorage, StorageClose)>, JsFailure> {
    let storage = match options.get::<Unknown>("storage") {
        Ok(Some(storage)) if matches!(storage.get_type(), Ok(ValueType::Object)) => {
            // SAFETY: napi just reported an object.
            unsafe { storage.cast::<Object>() }.map_err(|e| JsFailure::invalid(e.reason.clone()))?
        }
        _ => return Ok(None),
    };
    let gateway = match storage.get::<Unknown>("gateway") {
        Ok(Some(gateway)) => gateway,
        Ok(None) => return Ok(None),
        Err(e) => {
            return Err(invalid(
                env,
                format!("options.storage.gateway: {}", e.reason),
            ))
        }
    };
    for key in Object::keys(&storage).map_err(|e| invalid(env, e.reason.clone()))? {
        if !matches!(
            key.as_str(),
            "gateway" | "selector" | "callTimeoutMs" | "fallbackRequiresReplica"
        ) {
            return Err(invalid(
                env,
                format!(
                    "options.storage.{key} is not an option with a gateway (gateway, selector, callTimeoutMs, fallbackRequiresReplica)"
                ),
            ));
        }
    }
    let timeout = call_timeout(env, &storage)?;
    let fallback_requires_replica = match storage.get::<Unknown>("fallbackRequiresReplica") {
        Ok(None) => false,
        Ok(Some(value)) if matches!(value.get_type(), Ok(ValueType::Undefined)) => false,
        Ok(Some(value)) if matches!(value.get_type(), Ok(ValueType::Boolean)) => {
            // SAFETY: napi just reported a boolean.
            unsafe { value.cast::<bool>() }.map_err(|e| invalid(env, e.reason.clone()))?
        }
        _ => {
            return Err(invalid(
                env,
                "options.storage.fallbackRequiresReplica must be a boolean",
            ))
        }
    };
    if !matches!(gateway.get_type(), Ok(ValueType::Object)) {
        return Err(invalid(
            env,
            "options.storage.gateway must be the app's storage gateway object",
        ));
    }
    // SAFETY: napi just reported an object.
    let gateway =
        unsafe { gateway.cast::<Object>() }.map_err(|e| invalid(env, e.reason.clone()))?;
    let mut methods = HashMap::new();
    let mut missing = Vec::new();
    for method in GatewayMethod::ALL {
        match bound(env, &gateway, method.name(), "options.storage.gateway")? {
            Some(function) => {
                methods.insert(method, function);
            }
            None => missing.push(method.name()),
        }
    }
    if !missing.is_empty() {
        return Err(invalid(
            env,
            format!(
                "options.storage.gateway is not the app's storage gateway: no method {}",
                missing.join(", ")
            ),
        ));
    }
    let selector =
        match storage.get::<Unknown>("selector") {
            Ok(None) => None,
            Ok(Some(selector)) if matches!(selector.get_type(), Ok(ValueType::Object)) => {
                // SAFETY: napi just reported an object.
                let selector = unsafe { selector.cast::<Object>() }
                    .map_err(|e| invalid(env, e.reason.clone()))?;
                let select = bound(env, &selector, "select", "options.storage.selector")?;
                let info = bound(env, &selector, "getBackendInfo", "options.storage.selector")?;
                match (select, info) {
                    (Some(select), Some(info)) => Some((select, info)),
                    _ => return Err(invalid(
                        env,
                        "options.storage.selector must have the methods select and getBackendInfo",
                    )),
                }
            }
            _ => {
                return Err(invalid(
                    env,
                    "options.storage.selector must be the app's backend selector object",
                ))
            }
        };
    let closed = StorageClose::default();
    let js = Arc::new(JsAppStorage {
        methods,
        selector,
        timeout,
        js_thread: std::thread::current().id(),
        closed: closed.0.clone(),
    });
    Ok(Some((
        AppStorage {
            gateway: Arc::new(AppGateway::new(SharedCaller(js.clone()))),
            question: js,
            fallback_requires_replica,
        },
        closed,
    )))
}

/// `storage.callTimeoutMs`: an integer within its bounds, or absent.
fn call_timeout(env: &Env, storage: &Object<'_>) -> Result<Duration, JsFailure> {
    let (min, max) = CALL_TIMEOUT_MS_BOUNDS;
    let refused = || {
        invalid(
            env,
            format!("options.storage.callTimeoutMs must be an integer from {min} to {max}"),
        )
    };
    match storage.get::<Unknown>("callTimeoutMs") {
        Ok(None) => Ok(Duration::from_millis(DEFAULT_CALL_TIMEOUT_MS)),
        Ok(Some(value)) if matches!(value.get_type(), Ok(ValueType::Number)) => {
            // SAFETY: napi just reported a number.
            let ms = unsafe { value.cast::<f64>() }.map_err(|_| refused())?;
            let ms = integer_in(CALL_TIMEOUT_MS_BOUNDS)(ms).ok_or_else(refused)?;
            Ok(Duration::from_millis(ms))
        }
        _ => Err(refused()),
    }
}

/// `object[name]` bound to `object` as a threadsafe function taking its
/// arguments as one array (`Function.prototype.apply.bind(method, object)`);
/// `None` when it is not a function.
fn bound<R: FromNapiValue + 'static>(
    env: &Env,
    object: &Object<'_>,
    name: &str,
    what: &str,
) -> Result<Option<BoundMethod<R>>, JsFailure> {
    let failed = |e: napi::Error| invalid(env, format!("{what}.{name}: {}", e.reason));
    let method = match object.get::<Unknown>(name).map_err(failed)? {
        Some(method) if matches!(method.get_type(), Ok(ValueType::Function)) => method,
        _ => return Ok(None),
    };
    // SAFETY: napi just reported a function.
    let function = unsafe { method.cast::<Function<Unknown, Unknown>>() }.map_err(failed)?;
    let apply: Function<Unknown, Unknown> = function.get_named_property("apply").map_err(failed)?;
    let bind: Function<FnArgs<(Unknown, Unknown)>, Unknown> =
        apply.get_named_property("bind").map_err(failed)?;
    let applied = bind
        .apply(apply, FnArgs::from((method, object.to_unknown())))
        .map_err(failed)?;
    // SAFETY: `bind` returns a function.
    let applied = unsafe { applied.cast::<Function<Vec<Value>, R>>() }.map_err(failed)?;
    applied
        .build_threadsafe_function::<Vec<Value>>()
        .weak::<true>()
        .build()
        .map(Some)
        .map_err(failed)
}

fn invalid(env: &Env, message: impl Into<String>) -> JsFailure {
    super::convert::clear_pending_exception(env);
    JsFailure::invalid(message)
}

impl JsAppStorage {
    /// Calls `function(args)` on the JS thread and hands what it returned
    /// to `settle` there; `Err` when the call could not be made.
    fn call_raw<R: FromNapiValue + Send + 'static>(
        &self,
        function: &BoundMethod<R>,
        args: Vec<Value>,
    ) -> Result<R, String> {
        if std::thread::current().id() == self.js_thread {
            return Err("called on the JS thread, which cannot wait for its own promise".into());
        }
        if self.closed.load(Ordering::SeqCst) {
            return Err("the instance was disposed".into());
        }
        let (sender, receiver) = sync_channel(1);
        let queued = function.call_with_return_value(
            args,
            ThreadsafeFunctionCallMode::NonBlocking,
            move |returned: napi::Result<R>, _| {
                let _ = sender.try_send(returned.map_err(|e| e.reason.clone()));
                Ok(())
            },
        );
        if queued != Status::Ok {
            return Err(format!("the call could not be queued ({queued})"));
        }
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
        if self.closed.load(Ordering::SeqCst) {
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
    fn call_async(&self, function: &AsyncMethod, args: Vec<Value>) -> Result<Value, String> {
        let deadline = Instant::now() + self.timeout;
        let promise = self
            .call_raw(function, args)
            .map_err(|e| format!("threw or returned no promise: {e}"))?;
        let settled = wait(promise, deadline, || self.still_waiting(deadline))?;
        settled
            .map(|value| value.unwrap_or(Value::Null))
            .map_err(|e| format!("rejected: {}", e.reason))
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
struct SharedCaller(Arc<JsAppStorage>);

impl GatewayCaller for SharedCaller {
    fn call(&self, method: GatewayMethod, args: Vec<Value>) -> Result<Value, String> {
        let function = self
            .0
            .methods
            .get(&method)
            .ok_or_else(|| format!("the gateway has no method {}", method.name()))?;
        self.0.call_async(function, args)
    }
}

impl SessionQuestion for JsAppStorage {
    fn ask(&self) -> SessionAnswer {
        if std::thread::current().id() == self.js_thread || self.closed.load(Ordering::SeqCst) {
            return SessionAnswer::NotAsked("asked on the JS thread or after dispose".into());
        }
        match &self.selector {
            // The app's own decision, shared with its other stores.
            Some((select, info)) => {
                match self.call_async(select, vec![json!("sqlite"), json!("json-fallback")]) {
                    Ok(Value::String(kind)) if kind == "sqlite" => SessionAnswer::Sqlite(
                        self.call_raw(info, vec![])
                            .ok()
                            .flatten()
                            .unwrap_or(Value::Null),
                    ),
                    Ok(other) => SessionAnswer::Unavailable(format!(
                        "the app's selector chose {other} for this session"
                    )),
                    Err(e) => SessionAnswer::Unavailable(format!("selector.select {e}")),
                }
            }
            // As the app's selector: any answer to the first ping is SQLite.
            None => match self.call_async(&self.methods[&GatewayMethod::Ping], vec![]) {
                Ok(info) => SessionAnswer::Sqlite(info),
                Err(e) => SessionAnswer::Unavailable(format!("ping {e}")),
            },
        }
    }
}
