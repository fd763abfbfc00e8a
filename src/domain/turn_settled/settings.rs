//! The managed Stop hook command, its settings fragment, and the hook-aware
//! settings merge.

use serde_json::{json, Map, Value};

use super::normalize::payload_hash;
use super::{RuntimeProvider, TURN_SETTLED_HOOK_MARKER};

/// The hook key Codex gives the first handler of the first `Stop` group set
/// by `-c` overrides (`codex app-server` `hooks/list`, 0.169): overrides form
/// the `/<session-flags>/config.toml` layer.
pub const CODEX_SESSION_FLAGS_STOP_HOOK_KEY: &str = "/<session-flags>/config.toml:stop:0:0";

/// Seconds Codex gives the managed hook; set explicitly because the trust
/// hash covers it (Codex's default is 600).
pub const CODEX_HOOK_TIMEOUT_SECS: u64 = 30;

/// The Codex settings list that is joined rather than replaced.
const CONFIG_OVERRIDES_KEY: &str = "config_overrides";

/// Deepest nesting the generic (non-hook) merge descends into; below it the
/// patch value replaces the base value whole, so hostile input cannot exhaust the stack.
const MAX_MERGE_DEPTH: usize = 64;

/// POSIX single-quote escaping: the result is one shell word whatever `value` holds.
pub fn shell_quote(value: &str) -> String {
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
pub fn hook_settings_fragment(command: &str) -> Value {
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
pub fn codex_hook_overrides(command: &str) -> Vec<String> {
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
pub fn codex_hook_trust_hash(command: &str) -> String {
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
pub fn codex_hook_settings_fragment(command: &str) -> Value {
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
pub fn merge_runtime_hook_settings(
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn obj(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    fn ours(script: &str) -> Value {
        hook_settings_fragment(&hook_command(
            script,
            "/spool",
            RuntimeProvider::Claude,
            262_144,
        ))
    }

    fn user_hook(command: &str) -> Value {
        json!({"matcher": "", "hooks": [{"type": "command", "command": command}]})
    }

    fn managed_count(settings: &Map<String, Value>) -> usize {
        settings["hooks"]["Stop"]
            .as_array()
            .map(|entries| {
                entries
                    .iter()
                    .flat_map(|e| e["hooks"].as_array().cloned().unwrap_or_default())
                    .filter(is_managed_hook)
                    .count()
            })
            .unwrap_or(0)
    }

    #[test]
    fn command_matches_the_documented_shape() {
        assert_eq!(
            hook_command("/a/turn-settled-hook-v1.sh", "/a b/it's", RuntimeProvider::Claude, 262_144),
            "/bin/sh '/a/turn-settled-hook-v1.sh' '/a b/it'\\''s' 'claude' '262144' # agent-teams:member-work-sync-turn-settled:v1"
        );
    }

    #[test]
    fn executable_command_matches_the_documented_shape() {
        assert_eq!(
            executable_hook_command("/a b/turn-settled-hook-v1", "/it's", RuntimeProvider::Codex, 7),
            "'/a b/turn-settled-hook-v1' '/it'\\''s' 'codex' '7' # agent-teams:member-work-sync-turn-settled:v1"
        );
    }

    /// A relaunch replaces the managed hook whichever form either launch
    /// used (script before, executable now, and back).
    #[test]
    fn either_command_form_replaces_the_other() {
        let script = ours("/old.sh");
        let executable = hook_settings_fragment(&executable_hook_command(
            "/bin/hook",
            "/spool",
            RuntimeProvider::Claude,
            262_144,
        ));
        let base = obj(json!({"hooks": {"Stop": [user_hook("echo user")]}}));
        for (first, second) in [(&script, &executable), (&executable, &script)] {
            let once = merge_runtime_hook_settings(&base, &obj(first.clone()));
            let relaunched = merge_runtime_hook_settings(&once, &obj(second.clone()));
            assert_eq!(managed_count(&relaunched), 1);
            let stop = relaunched["hooks"]["Stop"].as_array().unwrap();
            assert_eq!(stop[0], user_hook("echo user"));
            assert_eq!(stop[1], second["hooks"]["Stop"][0]);
        }
        let codex_executable = codex_hook_settings_fragment(&executable_hook_command(
            "/bin/hook",
            "/spool",
            RuntimeProvider::Codex,
            262_144,
        ));
        let once = merge_runtime_hook_settings(&Map::new(), &obj(codex("/old.sh")));
        let relaunched = merge_runtime_hook_settings(&once, &obj(codex_executable.clone()));
        assert_eq!(
            relaunched["config_overrides"],
            codex_executable["config_overrides"]
        );
    }

    #[test]
    fn keeps_user_hooks_and_fast_mode_and_one_managed_hook() {
        let base = obj(json!({
            "fastMode": true,
            "env": {"A": "1"},
            "hooks": {"Stop": [user_hook("echo user")], "PreToolUse": [user_hook("lint")]}
        }));
        let once = merge_runtime_hook_settings(&base, &obj(ours("/old.sh")));
        let relaunched = merge_runtime_hook_settings(&once, &obj(ours("/new.sh")));
        assert_eq!(relaunched["fastMode"], json!(true));
        assert_eq!(
            relaunched["hooks"]["PreToolUse"],
            base["hooks"]["PreToolUse"]
        );
        let stop = relaunched["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop[0], user_hook("echo user"));
        assert_eq!(managed_count(&relaunched), 1);
        assert!(stop[1]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .contains("/new.sh"));
    }

    #[test]
    fn a_mixed_entry_keeps_the_users_hook() {
        let mixed = json!({"matcher": "", "hooks": [
            {"type": "command", "command": "echo mine"},
            {"type": "command", "command": format!("/bin/sh '/old.sh' # {TURN_SETTLED_HOOK_MARKER}")}
        ]});
        let base = obj(json!({"hooks": {"Stop": [mixed]}}));
        let merged = merge_runtime_hook_settings(&base, &obj(ours("/new.sh")));
        assert_eq!(merged["hooks"]["Stop"][0], user_hook("echo mine"));
        assert_eq!(managed_count(&merged), 1);
    }

    #[test]
    fn the_managed_hook_is_installed_whatever_the_user_hooks_hold() {
        // (base `hooks`, the user's Stop values kept in front of the managed entry,
        // events other than Stop that must come out unchanged)
        let cases = [
            (json!("oops"), vec![], vec![]),
            (json!(7), vec![], vec![]),
            (json!(null), vec![], vec![]),
            (json!(["a"]), vec![], vec![]),
            (json!({"Stop": {"not": "an array"}}), vec![], vec![]),
            (
                json!({"Stop": "x", "PreToolUse": "kept"}),
                vec![],
                vec!["PreToolUse"],
            ),
            (
                json!({"Stop": [1, "x"]}),
                vec![json!(1), json!("x")],
                vec![],
            ),
        ];
        for (hooks, kept, untouched) in cases {
            let base = obj(json!({ "hooks": hooks.clone() }));
            let merged = merge_runtime_hook_settings(&base, &obj(ours("/s.sh")));
            let stop = merged["hooks"]["Stop"].as_array().unwrap();
            assert_eq!(&stop[..stop.len() - 1], &kept[..], "{hooks}");
            assert_eq!(managed_count(&merged), 1, "{hooks}");
            for event in untouched {
                assert_eq!(merged["hooks"][event], hooks[event], "{hooks}");
            }
            assert_eq!(
                merge_runtime_hook_settings(&merged, &obj(ours("/s.sh"))),
                merged
            );
        }
    }

    #[test]
    fn config_overrides_are_joined_without_duplicates() {
        // (base, patch, merged)
        let cases = [
            (
                json!({"config_overrides": ["a", "b", "a"]}),
                json!({"config_overrides": ["b", "c", "c", {"k": 1}]}),
                json!({"config_overrides": ["a", "b", "a", "c", {"k": 1}]}),
            ),
            (
                json!({"codex": {"config_overrides": ["x"]}}),
                json!({"codex": {"config_overrides": ["x", "y"]}}),
                json!({"codex": {"config_overrides": ["x", "y"]}}),
            ),
            // Not both lists: the patch wins, like any other key.
            (
                json!({"config_overrides": "a"}),
                json!({"config_overrides": ["b"]}),
                json!({"config_overrides": ["b"]}),
            ),
            (
                json!({"other": ["a"]}),
                json!({"other": ["b"]}),
                json!({"other": ["b"]}),
            ),
        ];
        for (base, patch, merged) in cases {
            assert_eq!(
                Value::Object(merge_runtime_hook_settings(&obj(base.clone()), &obj(patch))),
                merged,
                "{base}"
            );
        }
    }

    fn codex(script: &str) -> Value {
        codex_hook_settings_fragment(&hook_command(
            script,
            "/spool",
            RuntimeProvider::Codex,
            262_144,
        ))
    }

    #[test]
    fn codex_overrides_install_and_trust_one_hook() {
        let command =
            "/bin/sh '/tmp/cx/hook.sh' 'x' # agent-teams:member-work-sync-turn-settled:v1";
        let overrides = codex_hook_overrides(command);
        assert_eq!(
            overrides,
            [
                r#"hooks.Stop=[{hooks=[{type="command",command="/bin/sh '/tmp/cx/hook.sh' 'x' # agent-teams:member-work-sync-turn-settled:v1",timeout=30}]}]"#,
                // The hash Codex 0.169 accepted for this very hook.
                r#"hooks.state={"/<session-flags>/config.toml:stop:0:0"={trusted_hash="sha256:ef966a7810461d60e5230c5dd344424f5fbbe520d6989a4e2a2831b2f29da176"}}"#,
            ]
        );
        // The hash Codex reported (`hooks/list` currentHash) for the
        // default timeout of the same shape.
        let identity = r#"{"event_name":"stop","hooks":[{"async":false,"command":"/bin/sh /tmp/cx/hook.sh","timeout":600,"type":"command"}]}"#;
        assert_eq!(
            payload_hash(identity.as_bytes()),
            "3ad250480105e55a93215f02e7566e64ba7aa71a99f4d13d54d037385cbc8617"
        );
    }

    #[test]
    fn codex_commands_with_quotes_stay_one_toml_string() {
        let command = hook_command("/a \"b\"/s'h.sh", "/sp\\ool", RuntimeProvider::Codex, 1);
        let stop = &codex_hook_overrides(&command)[0];
        let value = stop
            .strip_prefix("hooks.Stop=[{hooks=[{type=\"command\",command=")
            .unwrap();
        let quoted = value.strip_suffix(",timeout=30}]}]").unwrap();
        let parsed: String = serde_json::from_str(quoted).unwrap();
        assert_eq!(parsed, command);
    }

    #[test]
    fn codex_relaunches_replace_the_managed_overrides() {
        let base = obj(json!({"config_overrides": [
            "model=\"gpt-5\"", "hooks.state={}", "hooks.Stop=[]", 7
        ]}));
        let once = merge_runtime_hook_settings(&base, &obj(codex("/old.sh")));
        let relaunched = merge_runtime_hook_settings(&once, &obj(codex("/new.sh")));
        let items = relaunched["config_overrides"].as_array().unwrap();
        assert_eq!(items[..2], [json!("model=\"gpt-5\""), json!(7)]);
        assert_eq!(
            &items[2..],
            codex("/new.sh")["config_overrides"].as_array().unwrap()
        );
        assert_eq!(
            merge_runtime_hook_settings(&relaunched, &obj(codex("/new.sh"))),
            relaunched
        );
    }

    #[test]
    fn the_users_key_order_is_kept() {
        let base: Map<String, Value> = serde_json::from_str(
            r#"{"zeta":1,"hooks":{"Stop":[],"PreToolUse":[]},"alpha":{"y":1,"b":2},"model":"x"}"#,
        )
        .unwrap();
        let patch: Map<String, Value> = serde_json::from_str(
            r#"{"new":true,"alpha":{"a":0,"y":3},"hooks":{"SessionStart":[]}}"#,
        )
        .unwrap();
        let mut patch_with_hook = patch.clone();
        patch_with_hook.extend(obj(ours("/s.sh")));
        let merged = merge_runtime_hook_settings(&base, &patch_with_hook);
        let text = serde_json::to_string(&merged).unwrap();
        let keys: Vec<&str> = merged.keys().map(String::as_str).collect();
        assert_eq!(keys, ["zeta", "hooks", "alpha", "model", "new"], "{text}");
        let alpha: Vec<&str> = merged["alpha"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(alpha, ["y", "b", "a"], "{text}");
        let events: Vec<&str> = merged["hooks"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(events, ["Stop", "PreToolUse"], "{text}");
        assert_eq!(managed_count(&merged), 1);
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let command = prop_oneof![
            ".{0,8}".prop_map(Value::String),
            Just(Value::String(format!("x # {TURN_SETTLED_HOOK_MARKER}"))),
        ];
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            command,
        ];
        let keys = prop::sample::select(vec![
            "hooks", "Stop", "command", "matcher", "type", "fastMode", "env",
        ]);
        leaf.prop_recursive(5, 48, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(keys.clone(), inner, 0..5).prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    fn arb_object() -> impl Strategy<Value = Map<String, Value>> {
        arb_json().prop_map(|v| match v {
            Value::Object(m) => m,
            other => obj(json!({ "hooks": { "Stop": [other] } })),
        })
    }

    proptest! {
        #[test]
        fn merge_is_idempotent_and_keeps_user_hooks(base in arb_object(), extra in arb_object(), script in ".{0,10}") {
            let patch = obj(ours(&script));
            let once = merge_runtime_hook_settings(&base, &patch);
            prop_assert_eq!(&merge_runtime_hook_settings(&once, &patch), &once);
            // Arbitrary patches never panic and are idempotent too.
            let any_once = merge_runtime_hook_settings(&base, &extra);
            prop_assert_eq!(&merge_runtime_hook_settings(&any_once, &extra), &any_once);
            // Non-hook keys of the patch win.
            for (key, value) in &extra {
                if key != "hooks" && !matches!(value, Value::Object(_)) {
                    prop_assert_eq!(&any_once[key], value);
                }
            }
            if let Some(Value::Object(events)) = base.get("hooks") {
                match events.get("Stop") {
                    None => prop_assert_eq!(managed_count(&once), 1),
                    Some(Value::Array(entries)) => {
                        prop_assert_eq!(managed_count(&once), 1);
                        // Every user hook command survives, in order.
                        let user = |entries: &[Value]| -> Vec<Value> {
                            entries.iter().flat_map(|e| match e.get("hooks").and_then(Value::as_array) {
                                Some(h) => h.iter().filter(|h| !is_managed_hook(h)).cloned().collect(),
                                None => vec![e.clone()],
                            }).collect()
                        };
                        let merged = once["hooks"]["Stop"].as_array().cloned().unwrap_or_default();
                        prop_assert_eq!(user(entries), user(&merged));
                    }
                    // A user Stop that is no list gives way to the managed entry.
                    Some(_) => {
                        prop_assert_eq!(managed_count(&once), 1);
                        prop_assert_eq!(once["hooks"]["Stop"].as_array().map(Vec::len), Some(1));
                    }
                }
            } else {
                // No hooks, or hooks that are no object: the managed hook is installed.
                prop_assert_eq!(managed_count(&once), 1);
            }
        }
    }
}
