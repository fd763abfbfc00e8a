//! The `storage: { gateway, selector?, callTimeoutMs? }` option: the app's
//! own storage gateway (its `MemberWorkSyncStorageGateway`, what it passes
//! `createMemberWorkSyncFeature` as `internalStorageBackend.gateway`) and,
//! optionally, its session selector. Inside Electron the addon never opens
//! `app.db`: every store op is a call of one of these methods.
//!
//! Each method becomes a threadsafe function bound to its object (so `this`
//! is the gateway, as the app's own callers have it): the [`AppChannel`] of
//! [`crate::infrastructure::sqlite::app_calls`], which makes and bounds the
//! calls.

use std::collections::HashMap;
use std::time::Duration;

use napi::bindgen_prelude::{
    FnArgs, FromNapiValue, Function, JsObjectValue, JsValue, Object, Promise, Unknown, ValueType,
};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use serde_json::Value;

use super::job::JsFailure;
use crate::infrastructure::sqlite::app_calls::{
    app_storage, AppChannel, AppTarget, OnReturn, StorageClose, CALL_TIMEOUT_MS_BOUNDS,
    DEFAULT_CALL_TIMEOUT_MS,
};
use crate::infrastructure::sqlite::app_gateway::GatewayMethod;
use crate::infrastructure::sqlite::session::AppStorage;
use crate::runtime::options::integer_in;

/// A method bound to its object; `R` is what its call returns.
type BoundMethod<R> = ThreadsafeFunction<Vec<Value>, R, Vec<Value>, Status, false, true>;
/// A method returning a promise of JSON data (or `undefined`).
type AsyncMethod = BoundMethod<Promise<Option<Value>>>;

/// The app's gateway and selector methods as threadsafe functions.
struct JsAppStorage {
    methods: HashMap<GatewayMethod, AsyncMethod>,
    /// `selector.select(sqlite, json)` and `selector.getBackendInfo()`.
    selector: Option<(AsyncMethod, BoundMethod<Option<Value>>)>,
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
    let channel = Box::new(JsAppStorage { methods, selector });
    Ok(Some(app_storage(
        channel,
        timeout,
        fallback_requires_replica,
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

impl AppChannel for JsAppStorage {
    fn has_selector(&self) -> bool {
        self.selector.is_some()
    }

    fn queue(
        &self,
        target: AppTarget,
        args: Vec<Value>,
        on_return: OnReturn,
    ) -> Result<(), String> {
        let promised = match (target, &self.selector) {
            (AppTarget::Gateway(method), _) => self
                .methods
                .get(&method)
                .ok_or_else(|| format!("the gateway has no method {}", method.name()))?,
            (AppTarget::Select, Some((select, _))) => select,
            (AppTarget::BackendInfo, Some((_, info))) => {
                return queued(call(info, args, on_return, |answer| async move {
                    Ok(answer.unwrap_or(Value::Null))
                }));
            }
            _ => return Err("the app gave no selector".into()),
        };
        queued(call(promised, args, on_return, |promise| async move {
            let settled = promise.await.map_err(|e| e.reason.clone())?;
            Ok(settled.unwrap_or(Value::Null))
        }))
    }
}

/// `Err` naming a status that is not `Ok`.
fn queued(status: Status) -> Result<(), String> {
    match status {
        Status::Ok => Ok(()),
        status => Err(format!("the call could not be queued ({status})")),
    }
}

/// Queues `function(args)`; `on_return` gets, on the JS thread, what it
/// returned as the future `settle` makes of it, or why it threw.
fn call<R, F>(
    function: &BoundMethod<R>,
    args: Vec<Value>,
    on_return: OnReturn,
    settle: impl FnOnce(R) -> F + Send + 'static,
) -> Status
where
    R: FromNapiValue + Send + 'static,
    F: std::future::Future<Output = Result<Value, String>> + Send + 'static,
{
    function.call_with_return_value(
        args,
        ThreadsafeFunctionCallMode::NonBlocking,
        move |returned: napi::Result<R>, _| {
            on_return(
                returned
                    .map(|returned| Box::pin(settle(returned)) as _)
                    .map_err(|e| e.reason.clone()),
            );
            Ok(())
        },
    )
}
