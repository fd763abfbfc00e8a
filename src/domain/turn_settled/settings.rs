//! The managed Stop hook command, its settings fragment, and the hook-aware
//! settings merge.

use serde_json::{json, Map, Value};

use super::normalize::payload_hash;
use super::{RuntimeProvider, TURN_SETTLED_HOOK_MARKER};

/// The hook key Codex gives the first handler of the first `Stop` group set
/// by `-c` overrides (`codex app-server` `hooks/list`, 0.169): overrides form
/// the `/<session-flags>/config.toml` layer.
const CODEX_SESSION_FLAGS_STOP_HOOK_KEY: &str = "/<session-flags>/config.toml:stop:0:0";

/// Seconds Codex gives the managed hook; set explicitly because the trust
/// hash covers it (Codex's default is 600).
const CODEX_HOOK_TIMEOUT_SECS: u64 = 30;

/// The Codex settings list that is joined rather than replaced.
const CONFIG_OVERRIDES_KEY: &str = "config_overrides";

/// Deepest nesting the generic (non-hook) merge descends into; below it the
/// patch value replaces the base value whole, so hostile input cannot exhaust the stack.
const MAX_MERGE_DEPTH: usize = 64;

/// POSIX single-quote escaping: the result is one shell word whatever `value` holds.
fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

/// `/bin/sh '<script>' '<spoolRoot>' '<provider>' '<maxBytes>' # <marker>`.
///
/// It carries no team or member identity: Claude teammates inherit `--settings`
/// from their parent, so identity is resolved from the payload after the fact.
pub fn hook_command(
    script: &str,
    spool_root: &str,
    provider: RuntimeProvider,
    max_bytes: u64,
) -> String {
    format!(
        "/bin/sh {} {} {} {} # {}",
        shell_quote(script),
        shell_quote(spool_root),
        shell_quote(provider.as_str()),
        shell_quote(&max_bytes.to_string()),
        TURN_SETTLED_HOOK_MARKER
    )
}

/// `'<executable>' '<spoolRoot>' '<provider>' '<maxBytes>' # <marker>`: the
/// native hook (`hooks/native`) run directly, with the script's arguments
/// and the same marker, so the settings merge recognises either form as
/// the managed hook.
pub fn executable_hook_command(
    executable: &str,
    spool_root: &str,
    provider: RuntimeProvider,
    max_bytes: u64,
) -> String {
    format!(
        "{} {} {} {} # {}",
        shell_quote(executable),
        shell_quote(spool_root),
        shell_quote(provider.as_str()),
        shell_quote(&max_bytes.to_string()),
        TURN_SETTLED_HOOK_MARKER
    )
}

/// `{"hooks":{"Stop":[{"matcher":"","hooks":[{"type":"command","command":…}]}]}}`.
pub(crate) fn hook_settings_fragment(command: &str) -> Value {
    json!({
        "hooks": {
            "Stop": [{
                "matcher": "",
                "hooks": [{ "type": "command", "command": command }]
            }]
        }
    })
}

/// The Codex `-c key=value` overrides that install the managed Stop hook for
/// one run and trust exactly that hook (`config_overrides`, in order):
///
/// 1. `hooks.Stop=[{hooks=[{type="command",command=<command>,timeout=30}]}]`:
///    the session-flags layer's Stop hooks; the user's `config.toml` hooks
///    are another layer and stay as they are (untrusted ones stay untrusted).
/// 2. `hooks.state={"/<session-flags>/config.toml:stop:0:0"={trusted_hash="sha256:<hex>"}}`:
///    Codex runs a hook from config only when its stored hash matches the
///    SHA-256 of `{"event_name":"stop","hooks":[{"async":false,"command":…,
///    "timeout":30,"type":"command"}]}` (keys sorted, compact), so this trusts
///    that one handler and no other, without `--dangerously-bypass-hook-trust`.
fn codex_hook_overrides(command: &str) -> Vec<String> {
    // A JSON string is a valid TOML basic string for any command text.
    let quoted = Value::String(command.to_string()).to_string();
    let hooks = format!(
        "hooks.Stop=[{{hooks=[{{type=\"command\",command={quoted},timeout={CODEX_HOOK_TIMEOUT_SECS}}}]}}]"
    );
    let trust = format!(
        "hooks.state={{\"{CODEX_SESSION_FLAGS_STOP_HOOK_KEY}\"={{trusted_hash=\"sha256:{}\"}}}}",
        codex_hook_trust_hash(command)
    );
    vec![hooks, trust]
}

/// Hex SHA-256 Codex computes for the managed Stop hook group (see
/// [`codex_hook_overrides`]); the keys are written in sorted order.
fn codex_hook_trust_hash(command: &str) -> String {
    let identity = json!({
        "event_name": "stop",
        "hooks": [{
            "async": false,
            "command": command,
            "timeout": CODEX_HOOK_TIMEOUT_SECS,
            "type": "command",
        }],
    });
    payload_hash(identity.to_string().as_bytes())
}

/// `{"config_overrides":[…]}`: the Codex launch settings fragment.
pub(crate) fn codex_hook_settings_fragment(command: &str) -> Value {
    json!({ CONFIG_OVERRIDES_KEY: codex_hook_overrides(command) })
}

/// Merges a settings `patch` into `base`.
///
/// * `hooks`: per event, the base entries stay in order and patch entries not
///   already present are appended; when the patch carries a managed hook (one
///   whose command has [`TURN_SETTLED_HOOK_MARKER`]), old managed hooks are
///   removed from the base first and exactly one is appended, so relaunches
///   never stack copies. Merging the same patch twice equals merging it once.
/// * A base `hooks` that is not an object, or a base event value that is not
///   a list where the patch brings one, is replaced by the patch's value: the
///   managed Stop hook is always installed, as the app's own merge does.
///   Other malformed user values (entries that are not objects, events the
///   patch does not touch) are kept as they are: Claude's validation reports them.
/// * `config_overrides` lists (at any depth) are joined: the base items in
///   order, then the patch items not already present. When the patch's list
///   carries the managed Codex hook (an item with the marker), it owns the
///   keys its items set (`hooks.Stop`, `hooks.state`): base items setting
///   those keys are dropped first, so a relaunch never stacks an old hook
///   or an old trust hash.
/// * Every other key: objects merge recursively, otherwise the patch wins.
/// * Keys keep their order: the base's first, then new keys of the patch.
pub(crate) fn merge_runtime_hook_settings(
    base: &Map<String, Value>,
    patch: &Map<String, Value>,
) -> Map<String, Value> {
    merge_objects(base, patch, 0)
}

fn merge_objects(
    base: &Map<String, Value>,
    patch: &Map<String, Value>,
    depth: usize,
) -> Map<String, Value> {
    let mut out = base.clone();
    for (key, value) in patch {
        let merged = match (out.get(key), value) {
            (current, _) if depth == 0 && key == "hooks" => {
                let empty = Value::Object(Map::new());
                merge_hooks(current.filter(|c| c.is_object()).unwrap_or(&empty), value)
            }
            (Some(Value::Array(current)), Value::Array(incoming))
                if key == CONFIG_OVERRIDES_KEY =>
            {
                Value::Array(join_overrides(current, incoming))
            }
            (Some(Value::Object(current)), Value::Object(incoming)) if depth < MAX_MERGE_DEPTH => {
                Value::Object(merge_objects(current, incoming, depth + 1))
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), merged);
    }
    out
}

/// Codex overrides: `base` (without the items whose keys a managed patch
/// owns), then the `patch` items not already present.
fn join_overrides(base: &[Value], patch: &[Value]) -> Vec<Value> {
    let key = |item: &Value| -> Option<String> {
        let (key, _) = item.as_str()?.split_once('=')?;
        Some(key.trim().to_string())
    };
    let managed = patch.iter().any(|item| {
        item.as_str()
            .is_some_and(|s| s.contains(TURN_SETTLED_HOOK_MARKER))
    });
    let owned: Vec<String> = if managed {
        patch.iter().filter_map(key).collect()
    } else {
        vec![]
    };
    let kept: Vec<Value> = base
        .iter()
        .filter(|item| key(item).is_none_or(|k| !owned.contains(&k)))
        .cloned()
        .collect();
    join_without_duplicates(&kept, patch)
}

/// `items` followed by the `extra` items not already present (in either).
fn join_without_duplicates(items: &[Value], extra: &[Value]) -> Vec<Value> {
    let mut out = items.to_vec();
    for item in extra {
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    out
}

/// `base` is an object here (the caller puts an empty one for anything else).
fn merge_hooks(base: &Value, patch: &Value) -> Value {
    let (Value::Object(base_events), Value::Object(patch_events)) = (base, patch) else {
        // A malformed patch cannot override the user's hooks, and only lands
        // where there was nothing.
        return match base {
            Value::Object(events) if events.is_empty() => patch.clone(),
            _ => base.clone(),
        };
    };
    let mut out = base_events.clone();
    for (event, patch_entries) in patch_events {
        let merged = match (base_events.get(event), patch_entries) {
            (None, _) => merge_entries(&[], patch_entries),
            (Some(Value::Array(current)), Value::Array(_)) => merge_entries(current, patch_entries),
            // A user value that is no list gives way to the patch's list.
            (Some(_), Value::Array(_)) => merge_entries(&[], patch_entries),
            // A malformed patch value: keep the user's list untouched.
            (Some(current), _) => current.clone(),
        };
        out.insert(event.clone(), merged);
    }
    Value::Object(out)
}

/// One event's entry list: `base` with managed hooks stripped (only when the
/// patch brings one), then the patch's new entries, then the single managed entry.
fn merge_entries(base: &[Value], patch: &Value) -> Value {
    let Value::Array(patch) = patch else {
        return patch.clone();
    };
    let managed = patch.iter().find_map(managed_entry);
    let mut out: Vec<Value> = if managed.is_some() {
        base.iter().filter_map(strip_managed).collect()
    } else {
        base.to_vec()
    };
    for entry in patch.iter().filter_map(strip_managed) {
        if !out.contains(&entry) {
            out.push(entry);
        }
    }
    out.extend(managed);
    Value::Array(out)
}

fn is_managed_hook(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|command| command.contains(TURN_SETTLED_HOOK_MARKER))
}

/// The entry reduced to its first managed hook, if it has one.
fn managed_entry(entry: &Value) -> Option<Value> {
    let hooks = entry.get("hooks")?.as_array()?;
    let hook = hooks.iter().find(|h| is_managed_hook(h))?;
    let mut reduced = entry.as_object()?.clone();
    reduced.insert("hooks".into(), Value::Array(vec![hook.clone()]));
    Some(Value::Object(reduced))
}

/// The entry without its managed hooks; `None` when nothing of the user's is left.
/// Entries of an unexpected shape are returned unchanged.
fn strip_managed(entry: &Value) -> Option<Value> {
    let Some(hooks) = entry.get("hooks").and_then(Value::as_array) else {
        return Some(entry.clone());
    };
    if !hooks.iter().any(is_managed_hook) {
        return Some(entry.clone());
    }
    let kept: Vec<Value> = hooks
        .iter()
        .filter(|h| !is_managed_hook(h))
        .cloned()
        .collect();
    if kept.is_empty() {
        return None;
    }
    let mut reduced = entry.as_object()?.clone();
    reduced.insert("hooks".into(), Value::Array(kept));
    Some(Value::Object(reduced))
}

#[cfg(test)]
mod tests;
