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
    let command = "/bin/sh '/tmp/cx/hook.sh' 'x' # agent-teams:member-work-sync-turn-settled:v1";
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
    let patch: Map<String, Value> =
        serde_json::from_str(r#"{"new":true,"alpha":{"a":0,"y":3},"hooks":{"SessionStart":[]}}"#)
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
