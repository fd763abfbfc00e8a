//! JS → JSON conversion that never trusts the input's shape.
//!
//! napi's generic conversion recurses without a bound (a cyclic object
//! overflows the stack and kills the host) and throws synchronously on
//! BigInt. Here depth and size are capped, only plain data is accepted, and a
//! throwing getter or proxy trap becomes an error value, never a pending JS
//! exception.

use napi::bindgen_prelude::{Array, JsValue, Object, Unknown, ValueType};
use napi::Env;
use serde_json::{Map, Number, Value};

use super::job::{guard, JsFailure};

/// Deepest nesting accepted.
const MAX_DEPTH: usize = 32;
/// Most values (nodes) accepted in one argument.
const MAX_NODES: usize = 100_000;

/// Converts an argument to JSON, or says why it cannot.
/// This runs on the JS thread before any work is handed off, so a fault in it
/// is caught here and rejects as `MWS_INTERNAL` like one in the work itself.
pub(super) fn json_argument(env: &Env, value: Unknown<'_>, what: &str) -> Result<Value, JsFailure> {
    guard("argument conversion", || {
        let mut budget = MAX_NODES;
        convert(env, value, 0, &mut budget).map_err(|reason| {
            JsFailure::invalid(format!("{what} is not plain JSON data: {reason}"))
        })
    })
}

fn convert(
    env: &Env,
    value: Unknown<'_>,
    depth: usize,
    budget: &mut usize,
) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH}"));
    }
    *budget = budget.checked_sub(1).ok_or("too many values")?;
    let kind = value.get_type().map_err(|e| guarded(env, e))?;
    // SAFETY (all casts below): each cast matches the type napi just reported.
    match kind {
        ValueType::Undefined | ValueType::Null => Ok(Value::Null),
        ValueType::Boolean => unsafe { value.cast::<bool>() }
            .map(Value::Bool)
            .map_err(|e| guarded(env, e)),
        ValueType::Number => {
            let n = unsafe { value.cast::<f64>() }.map_err(|e| guarded(env, e))?;
            Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
        }
        ValueType::String => unsafe { value.cast::<String>() }
            .map(Value::String)
            .map_err(|e| guarded(env, e)),
        ValueType::Object => {
            let object = unsafe { value.cast::<Object>() }.map_err(|e| guarded(env, e))?;
            if is_array(env, &value)? {
                let array = unsafe { value.cast::<Array>() }.map_err(|e| guarded(env, e))?;
                let mut items = Vec::with_capacity(array.len().min(1024) as usize);
                for i in 0..array.len() {
                    let item = array.get::<Unknown>(i).map_err(|e| guarded(env, e))?;
                    items.push(match item {
                        Some(item) => convert(env, item, depth + 1, budget)?,
                        None => Value::Null,
                    });
                }
                Ok(Value::Array(items))
            } else {
                let mut map = Map::new();
                for key in Object::keys(&object).map_err(|e| guarded(env, e))? {
                    let field = object.get::<Unknown>(&key).map_err(|e| guarded(env, e))?;
                    if let Some(field) = field {
                        if matches!(
                            field.get_type(),
                            Ok(ValueType::Function | ValueType::Undefined)
                        ) {
                            continue;
                        }
                        map.insert(key, convert(env, field, depth + 1, budget)?);
                    }
                }
                Ok(Value::Object(map))
            }
        }
        other => Err(format!("unsupported value type {other:?}")),
    }
}

fn is_array(env: &Env, value: &Unknown<'_>) -> Result<bool, String> {
    let mut result = false;
    // SAFETY: plain N-API call on a live value of the current env.
    let status = unsafe { napi::sys::napi_is_array(env.raw(), value.raw(), &mut result) };
    if status == napi::sys::Status::napi_ok {
        Ok(result)
    } else {
        Err(guarded(
            env,
            napi::Error::from_reason("napi_is_array failed"),
        ))
    }
}

/// Turns an error into a message and clears any exception a getter left pending.
fn guarded(env: &Env, error: napi::Error) -> String {
    clear_pending_exception(env);
    error.reason.clone()
}

/// A throwing getter or proxy trap leaves a JS exception pending; swallow it
/// so the call reports its own error (or, for `noteTeamChange`, nothing).
pub(super) fn clear_pending_exception(env: &Env) {
    let mut exception = std::ptr::null_mut();
    // SAFETY: plain N-API call on the current env; a null result is fine.
    unsafe {
        napi::sys::napi_get_and_clear_last_exception(env.raw(), &mut exception);
    }
}
