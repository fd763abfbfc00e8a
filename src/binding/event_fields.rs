//! Reads the string fields of a `noteTeamChange` event with as few N-API
//! calls as the event allows: the call runs on the JS thread for every
//! change the app sees, duplicates included.
//!
//! Two costs of the generic path are avoided. A property read by name
//! (`napi_get_named_property`) makes a new JS string of the name and looks
//! it up in V8's string table on every call; here the names are made once
//! per env, as the keys of a small object (V8 keeps property keys
//! internalized), and kept through a reference, so a read is a plain keyed
//! lookup. A string value read through napi-rs asks for its length and then
//! copies it (two calls); here it is copied into a stack buffer in one call,
//! and only a value that fills the buffer is read again at its full length.

use std::cell::RefCell;
use std::ffi::CStr;
use std::ptr;

use napi::sys;
use napi::Env;

use crate::application::router::TeamChangeEvent;

/// The fields read, in [`TeamChangeEvent`] order.
const NAMES: [&CStr; 5] = [c"type", c"teamName", c"runId", c"detail", c"taskId"];

/// Bytes read in one call; a value that may not have fit is read again at
/// its length.
const STACK_BYTES: usize = 512;

thread_local! {
    /// Each env of this thread (one, unless the addon is loaded into
    /// several contexts) and the reference to its array of key strings. An
    /// env's entry is removed (and its reference deleted) by that env's
    /// cleanup hook, registered once with the entry, so an env that ends
    /// never leaves an entry another env could mistake for its own.
    static KEYS: RefCell<Vec<(sys::napi_env, sys::napi_ref)>> = const { RefCell::new(Vec::new()) };
}

/// The event `object` (a JS object) describes: its string fields, a field
/// that is missing, not a string or whose read failed read as absent; `None`
/// without a `type` and a `teamName` or when the key strings cannot be had.
/// A throwing getter or proxy trap makes its field absent (its exception
/// cleared, so the other fields are still read).
pub(super) fn read(env: &Env, object: sys::napi_value) -> Option<TeamChangeEvent> {
    let [kind, team_name, run_id, detail, task_id] =
        keys(env)?.map(|key| key.and_then(|key| string_property(env, object, key)));
    Some(TeamChangeEvent {
        kind: kind?,
        team_name: team_name?,
        run_id,
        detail,
        task_id,
    })
}

/// The key strings of this env, made on first use.
fn keys(env: &Env) -> Option<[Option<sys::napi_value>; NAMES.len()]> {
    let raw_env = env.raw();
    let known = KEYS.with_borrow(|keys| {
        keys.iter()
            .find(|(env, _)| *env == raw_env)
            .map(|(_, reference)| *reference)
    });
    let reference = match known {
        Some(reference) => reference,
        None => make_keys(raw_env)?,
    };
    let mut array = ptr::null_mut();
    // SAFETY: a live reference of this env (the cleanup hook forgets it
    // before the env ends).
    ok(unsafe { sys::napi_get_reference_value(raw_env, reference, &mut array) })?;
    let mut keys = [None; NAMES.len()];
    for (index, key) in keys.iter_mut().enumerate() {
        let mut value = ptr::null_mut();
        // SAFETY: plain N-API call on an array value of this env.
        let status = unsafe { sys::napi_get_element(raw_env, array, index as u32, &mut value) };
        *key = ok(status).map(|()| value);
    }
    Some(keys)
}

/// Makes an object with the field names as keys, keeps a reference to the
/// array of its keys (V8's own internalized strings) and registers the
/// cleanup that deletes it with the env.
fn make_keys(env: sys::napi_env) -> Option<sys::napi_ref> {
    let mut object = ptr::null_mut();
    // SAFETY (all calls here): plain N-API calls on values of this env.
    ok(unsafe { sys::napi_create_object(env, &mut object) })?;
    for name in NAMES {
        let mut value = ptr::null_mut();
        ok(unsafe { sys::napi_get_null(env, &mut value) })?;
        ok(unsafe { sys::napi_set_named_property(env, object, name.as_ptr(), value) })?;
    }
    let mut names = ptr::null_mut();
    ok(unsafe { sys::napi_get_property_names(env, object, &mut names) })?;
    let mut reference = ptr::null_mut();
    ok(unsafe { sys::napi_create_reference(env, names, 1, &mut reference) })?;
    let hooked = unsafe { sys::napi_add_env_cleanup_hook(env, Some(forget_keys), env.cast()) };
    if ok(hooked).is_none() {
        unsafe { sys::napi_delete_reference(env, reference) };
        return None;
    }
    KEYS.with_borrow_mut(|keys| keys.push((env, reference)));
    Some(reference)
}

/// The env's cleanup hook: deletes its key reference and forgets it.
unsafe extern "C" fn forget_keys(env: *mut std::ffi::c_void) {
    let env: sys::napi_env = env.cast();
    let mut forgotten = Vec::new();
    // (A thread ending first has dropped its list: nothing to forget.)
    let _ = KEYS.try_with(|keys| {
        keys.borrow_mut().retain(|&(known, reference)| {
            let mine = known == env;
            if mine {
                forgotten.push(reference);
            }
            !mine
        });
    });
    for reference in forgotten {
        // SAFETY: cleanup hooks run while the env can still take calls.
        unsafe { sys::napi_delete_reference(env, reference) };
    }
}

/// `object[key]` when it is a string.
fn string_property(env: &Env, object: sys::napi_value, key: sys::napi_value) -> Option<String> {
    let raw_env = env.raw();
    let mut value = ptr::null_mut();
    // SAFETY (all calls here): plain N-API calls on values of this env.
    if ok(unsafe { sys::napi_get_property(raw_env, object, key, &mut value) }).is_none() {
        super::convert::clear_pending_exception(env);
        return None;
    }
    let mut kind = 0;
    ok(unsafe { sys::napi_typeof(raw_env, value, &mut kind) })?;
    if kind != sys::ValueType::napi_string {
        return None;
    }
    let mut buffer = [0u8; STACK_BYTES];
    let mut written = 0;
    ok(unsafe {
        sys::napi_get_value_string_utf8(
            raw_env,
            value,
            buffer.as_mut_ptr().cast(),
            buffer.len(),
            &mut written,
        )
    })?;
    // N-API writes whole UTF-8 sequences (at most 4 bytes each) and keeps a
    // byte for the terminating NUL: with 4 bytes still free, nothing was left
    // out.
    if written + 4 < STACK_BYTES {
        return String::from_utf8(buffer[..written].to_vec()).ok();
    }
    let mut length = 0;
    ok(unsafe {
        sys::napi_get_value_string_utf8(raw_env, value, ptr::null_mut(), 0, &mut length)
    })?;
    let mut whole = vec![0u8; length + 1];
    ok(unsafe {
        sys::napi_get_value_string_utf8(
            raw_env,
            value,
            whole.as_mut_ptr().cast(),
            whole.len(),
            &mut written,
        )
    })?;
    whole.truncate(written);
    String::from_utf8(whole).ok()
}

fn ok(status: sys::napi_status) -> Option<()> {
    (status == sys::Status::napi_ok).then_some(())
}
