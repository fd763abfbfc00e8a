use super::*;
use crate::domain::turn_settled::MAX_PAYLOAD_BYTES;
use proptest::prelude::*;
use serde_json::{json, Map};

const AT: &str = "2026-11-22T10:00:00.000Z";

fn bytes(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

/// The hash is SHA-256 in lower-case hex, as the app writes it (the
/// standard test vectors).
#[test]
fn payload_hash_is_lower_case_sha256_hex() {
    for (raw, hex) in [
        (
            &b""[..],
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
        (
            &b"abc"[..],
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
    ] {
        assert_eq!(payload_hash(raw), hex, "{raw:?}");
    }
}

#[test]
fn claude_stop_keeps_identity_and_drops_the_message() {
    let raw = bytes(&json!({
        "hook_event_name": "Stop", "session_id": " J7 ",
        "transcript_path": "/h/.claude/projects/-p/J7.jsonl", "cwd": "/p",
        "last_assistant_message": "SECRET TEXT", "stop_hook_active": false
    }));
    let event = normalize(RuntimeProvider::Claude, &raw, AT).unwrap();
    assert_eq!(event.session_id.as_deref(), Some("J7"));
    assert_eq!(event.recorded_at, AT);
    assert_eq!(event.payload_hash, payload_hash(&raw));
    assert_eq!(
        event.source_id,
        format!(
            "runtime-turn-settled:claude:J7:no-turn:/h/.claude/projects/-p/J7.jsonl:{}",
            payload_hash(&raw)
        )
    );
    let stored = serde_json::to_string(&event).unwrap();
    assert!(!stored.contains("SECRET"));
}

/// A real Claude Code 2.1 Stop payload (tests/fixtures/payloads).
const REAL_CLAUDE_STOP: &[u8] =
    include_bytes!("../../../../tests/fixtures/payloads/real-claude-stop-payload.json");

/// The real payload with its final answer grown to `answer_bytes`, cut
/// where the hook cuts it (256 KiB + 1 byte).
fn real_payload_cut(answer_bytes: usize) -> Vec<u8> {
    let mut payload: Map<String, Value> = serde_json::from_slice(REAL_CLAUDE_STOP).unwrap();
    payload.insert(
        "last_assistant_message".into(),
        json!(format!("SECRET ANSWER {}", "x".repeat(answer_bytes))),
    );
    let mut raw = serde_json::to_vec(&payload).unwrap();
    raw.truncate(MAX_PAYLOAD_BYTES as usize + 1);
    raw
}

#[test]
fn a_cut_real_payload_keeps_its_identity_and_no_message_text() {
    let raw = real_payload_cut(300 * 1024);
    assert_eq!(raw.len() as u64, MAX_PAYLOAD_BYTES + 1);
    assert_eq!(
        normalize(RuntimeProvider::Claude, &raw, AT),
        Err(NormalizeFailure::InvalidJson)
    );
    let event = normalize_truncated(RuntimeProvider::Claude, &raw, AT).unwrap();
    assert!(event.truncated);
    assert_eq!(
        event.session_id.as_deref(),
        Some("9571b4f2-9aaf-4697-90a1-31c2a00a9b82")
    );
    assert_eq!(
        event.transcript_path.as_deref(),
        Some("/home/dev/work/t1/claude/projects/-home-dev-work-t1-proj/9571b4f2-9aaf-4697-90a1-31c2a00a9b82.jsonl")
    );
    assert_eq!(event.cwd.as_deref(), Some("/home/dev/work/t1/proj"));
    assert_eq!(event.payload_hash, payload_hash(&raw));
    let stored = serde_json::to_value(&event).unwrap();
    assert_eq!(stored["truncated"], json!(true));
    assert!(!stored.to_string().contains("SECRET"));
    // An uncut payload says nothing of truncation.
    let whole = normalize(RuntimeProvider::Claude, REAL_CLAUDE_STOP, AT).unwrap();
    assert!(serde_json::to_value(&whole)
        .unwrap()
        .get("truncated")
        .is_none());
}

#[test]
fn a_cut_payload_without_a_usable_start_is_too_large() {
    // (provider, prefix)
    let cases: [(RuntimeProvider, Vec<u8>); 4] = [
        (RuntimeProvider::Claude, vec![b'a'; 262_145]),
        (RuntimeProvider::Claude, b"[{\"session_id\":\"s\"".to_vec()),
        // The identity itself is cut.
        (
            RuntimeProvider::Claude,
            b"{\"hook_event_name\":\"Stop\",\"session_id\":\"95".to_vec(),
        ),
        (
            RuntimeProvider::Codex,
            b"{\"provider\":\"codex\",\"msg\":\"...".to_vec(),
        ),
    ];
    for (provider, prefix) in cases {
        assert_eq!(
            normalize_truncated(provider, &prefix, AT),
            Err(NormalizeFailure::PayloadTooLarge),
            "{}",
            String::from_utf8_lossy(&prefix[..prefix.len().min(60)])
        );
    }
}

/// The scan reads every key the normalizers read: on a whole payload it
/// gives the parser's event (every alias the tests below use).
#[test]
fn the_scan_sees_every_identity_key() {
    let codex = json!({"provider": "codex", "source": CODEX_SOURCE});
    let opencode = json!({"provider": "opencode", "source": OPENCODE_SOURCE});
    let with = |base: &Value, extra: Value| {
        let mut map = base.as_object().unwrap().clone();
        map.extend(extra.as_object().unwrap().clone());
        Value::Object(map)
    };
    let cases = [
        (
            RuntimeProvider::Claude,
            json!({"hook_event_name": "Stop", "session_id": "s", "turn_id": "t", "transcript_path": "/t", "cwd": "/p"}),
        ),
        (
            RuntimeProvider::Claude,
            json!({"hookEventName": "Stop", "sessionId": "s", "turnId": "t", "transcriptPath": "/t"}),
        ),
        (
            RuntimeProvider::Codex,
            with(
                &codex,
                json!({"eventName": "runtime_turn_settled", "sessionId": "s", "teamName": "f", "memberName": "m", "turnId": "t", "threadId": "h", "recordedAt": "r", "cwd": "/p", "agentId": "a", "outcome": "o"}),
            ),
        ),
        (
            RuntimeProvider::Codex,
            with(
                &codex,
                json!({"event_name": "runtime_turn_settled", "session_id": "s", "team_name": "f", "member_name": "m", "turn_id": "t", "thread_id": "h", "recorded_at": "r", "agent_id": "a"}),
            ),
        ),
        (
            RuntimeProvider::Codex,
            with(
                &codex,
                json!({"hook_event_name": "Stop", "sessionId": "s", "teamName": "f", "agentName": "m"}),
            ),
        ),
        (
            RuntimeProvider::Codex,
            with(
                &codex,
                json!({"hookEventName": "Stop", "sessionId": "s", "teamName": "f", "agent_name": "m"}),
            ),
        ),
        (
            RuntimeProvider::Opencode,
            with(
                &opencode,
                json!({"eventName": "runtime_turn_settled", "opencodeSessionId": "s", "teamId": "f", "memberName": "m", "runtimePromptMessageId": "p", "observedAt": "r", "projectPath": "/p", "laneId": "l"}),
            ),
        ),
        (
            RuntimeProvider::Opencode,
            with(
                &opencode,
                json!({"eventName": "runtime_turn_settled", "sessionId": "s", "team_id": "f", "memberName": "m", "runtime_prompt_message_id": "p", "observed_at": "r", "project_path": "/p", "lane_id": "l"}),
            ),
        ),
        (
            RuntimeProvider::Opencode,
            with(
                &opencode,
                json!({"eventName": "runtime_turn_settled", "sessionId": "s", "teamName": "f", "memberName": "m", "promptMessageId": "p"}),
            ),
        ),
        (
            RuntimeProvider::Opencode,
            with(
                &opencode,
                json!({"eventName": "runtime_turn_settled", "sessionId": "s", "teamName": "f", "memberName": "m", "prompt_message_id": "p"}),
            ),
        ),
    ];
    for (provider, payload) in cases {
        let raw = bytes(&payload);
        let parsed = normalize(provider, &raw, AT).unwrap();
        let scanned = normalize_truncated(provider, &raw, AT).unwrap();
        assert_eq!(
            TurnSettledEvent {
                truncated: false,
                ..scanned
            },
            parsed,
            "{payload}"
        );
    }
}

#[test]
fn claude_failures_have_documented_reasons() {
    let fail = |raw: &[u8]| {
        normalize(RuntimeProvider::Claude, raw, AT)
            .unwrap_err()
            .as_str()
    };
    assert_eq!(fail(b"{not json"), "invalid_json");
    assert_eq!(fail(b"[1,2]"), "payload_not_object");
    assert_eq!(
        fail(&bytes(
            &json!({"hook_event_name": "SubagentStop", "session_id": "s"})
        )),
        "not_stop_hook"
    );
    assert_eq!(
        fail(&bytes(&json!({"hookEventName": "Stop", "cwd": "/p"}))),
        "missing_session_identity"
    );
    // camelCase aliases are accepted.
    let ok = normalize(
        RuntimeProvider::Claude,
        &bytes(&json!({"hookEventName": "Stop", "transcriptPath": "/t.jsonl", "turnId": "t1"})),
        AT,
    )
    .unwrap();
    assert_eq!(ok.turn_id.as_deref(), Some("t1"));
    assert_eq!(ok.session_id, None);
}

#[test]
fn codex_payload_maps_aliases_and_falls_back_to_the_thread_id() {
    let raw = bytes(&json!({
        "provider": "codex", "source": CODEX_SOURCE, "event_name": "runtime_turn_settled",
        "session_id": "s1", "team_name": "forge", "agent_name": "jack",
        "thread_id": "th1", "recorded_at": "2026-11-22T09:59:00.000Z", "agentId": "a1"
    }));
    let event = normalize(RuntimeProvider::Codex, &raw, AT).unwrap();
    assert_eq!(event.team_name.as_deref(), Some("forge"));
    assert_eq!(event.member_name.as_deref(), Some("jack"));
    assert_eq!(event.turn_id.as_deref(), Some("th1"));
    assert_eq!(event.recorded_at, "2026-11-22T09:59:00.000Z");
    assert_eq!(event.agent_id.as_deref(), Some("a1"));
    assert!(event
        .source_id
        .starts_with("runtime-turn-settled:codex:s1:th1:no-transcript:"));
    assert_eq!(event.ignore_reason(), None);
}

const REAL_CODEX_STOP: &[u8] =
    include_bytes!("../../../../tests/fixtures/payloads/real-codex-stop-payload.json");

#[test]
fn a_native_codex_stop_keeps_its_identity_and_no_message_text() {
    let event = normalize(RuntimeProvider::Codex, REAL_CODEX_STOP, AT).unwrap();
    assert_eq!(
        event.session_id.as_deref(),
        Some("01a20891-4651-7d40-89dc-27d0de2d7f9a")
    );
    assert_eq!(
        event.turn_id.as_deref(),
        Some("01a20891-46a1-7233-9216-37f723b4f504")
    );
    assert_eq!(
        event.transcript_path.as_deref(),
        Some("/home/dev/work/cx/codex/sessions/2026/11/23/rollout-2026-11-23T13-21-08-01a20891-4651-7d40-89dc-27d0de2d7f9a.jsonl")
    );
    assert_eq!(event.cwd.as_deref(), Some("/home/dev/work/cx/proj"));
    assert_eq!(
        (event.team_name.as_deref(), event.member_name.as_deref()),
        (None, None)
    );
    assert_eq!(event.recorded_at, AT);
    assert!(event.source_id.starts_with(
        "runtime-turn-settled:codex:01a20891-4651-7d40-89dc-27d0de2d7f9a:01a20891-46a1-7233-9216-37f723b4f504:/home/dev/"
    ));
    let stored = serde_json::to_string(&event).unwrap();
    assert!(!stored.contains("hi from fake openai"), "{stored}");
    // A cut native payload keeps the same identity.
    let mut cut = REAL_CODEX_STOP.to_vec();
    cut.truncate(cut.len() - 10);
    let truncated = normalize_truncated(RuntimeProvider::Codex, &cut, AT).unwrap();
    assert_eq!(truncated.session_id, event.session_id);
    assert_eq!(truncated.transcript_path, event.transcript_path);
}

#[test]
fn native_codex_failures() {
    let fail = |v: Value| {
        normalize(RuntimeProvider::Codex, &bytes(&v), AT)
            .unwrap_err()
            .as_str()
    };
    // (payload, reason): no session; not a Stop; an orchestrator
    // payload is never read as a native one.
    let cases = [
        (
            json!({"hook_event_name": "Stop", "turn_id": "t"}),
            "missing_session_identity",
        ),
        (
            json!({"hook_event_name": "SubagentStop", "session_id": "s"}),
            "provider_mismatch",
        ),
        (
            json!({"hook_event_name": "Stop", "session_id": "s", "source": "x"}),
            "provider_mismatch",
        ),
        (
            json!({"hook_event_name": "Stop", "session_id": "s", "provider": "codex"}),
            "source_mismatch",
        ),
    ];
    for (payload, reason) in cases {
        assert_eq!(fail(payload.clone()), reason, "{payload}");
    }
}

#[test]
fn codex_failures_in_documented_order() {
    let fail = |v: Value| {
        normalize(RuntimeProvider::Codex, &bytes(&v), AT)
            .unwrap_err()
            .as_str()
    };
    assert_eq!(fail(json!({"provider": "opencode"})), "provider_mismatch");
    assert_eq!(
        fail(json!({"provider": "codex", "source": "x"})),
        "source_mismatch"
    );
    assert_eq!(
        fail(json!({"provider": "codex", "source": CODEX_SOURCE, "eventName": "other"})),
        "not_turn_settled_event"
    );
    assert_eq!(
        fail(
            json!({"provider": "codex", "source": CODEX_SOURCE, "hookEventName": "Stop",
                    "teamName": "t", "memberName": "m"})
        ),
        "missing_session_identity"
    );
    assert_eq!(
        fail(
            json!({"provider": "codex", "source": CODEX_SOURCE, "hookEventName": "Stop",
                    "sessionId": "s", "teamName": "t"})
        ),
        "missing_team_member_identity"
    );
}

#[test]
fn opencode_aliases_and_ignore_reasons() {
    let base = json!({
        "provider": "opencode", "source": OPENCODE_SOURCE, "eventName": "runtime_turn_settled",
        "opencodeSessionId": "oc1", "team_id": "forge", "member_name": "jill",
        "project_path": "/p", "lane_id": "l1", "observed_at": "2026-11-22T09:00:00.000Z"
    });
    let event = normalize(RuntimeProvider::Opencode, &bytes(&base), AT).unwrap();
    assert_eq!(event.session_id.as_deref(), Some("oc1"));
    assert_eq!(event.team_name.as_deref(), Some("forge"));
    assert_eq!(event.cwd.as_deref(), Some("/p"));
    assert_eq!(event.agent_id.as_deref(), Some("l1"));
    assert_eq!(event.recorded_at, "2026-11-22T09:00:00.000Z");
    assert_eq!(
        event.ignore_reason().as_deref(),
        Some("opencode_missing_prompt_identity")
    );
    let mut timed_out = base.clone();
    timed_out["outcome"] = json!("timeout");
    let event = normalize(RuntimeProvider::Opencode, &bytes(&timed_out), AT).unwrap();
    assert_eq!(
        event.ignore_reason().as_deref(),
        Some("opencode_non_terminal_outcome:timeout")
    );
    let mut prompted = base;
    prompted["promptMessageId"] = json!("msg-9");
    let event = normalize(RuntimeProvider::Opencode, &bytes(&prompted), AT).unwrap();
    assert_eq!(event.thread_id.as_deref(), Some("msg-9"));
    assert_eq!(event.turn_id.as_deref(), Some("msg-9"));
    assert_eq!(event.ignore_reason(), None);
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        prop::sample::select(vec![
            "Stop",
            "claude",
            "codex",
            "opencode",
            CODEX_SOURCE,
            OPENCODE_SOURCE,
            "runtime_turn_settled",
            "timeout",
            "",
            " "
        ])
        .prop_map(|s| Value::String(s.to_string())),
        ".{0,12}".prop_map(Value::String),
    ];
    let keys = prop::sample::select(vec![
        "hook_event_name",
        "hookEventName",
        "session_id",
        "sessionId",
        "transcript_path",
        "provider",
        "source",
        "eventName",
        "teamName",
        "team_id",
        "memberName",
        "agentName",
        "threadId",
        "promptMessageId",
        "outcome",
        "last_assistant_message",
        "cwd",
        "x",
    ]);
    leaf.prop_recursive(3, 24, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(keys.clone(), inner, 0..10).prop_map(|m| Value::Object(
                m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

const PRIVATE: &str = "PRIVATE-ASSISTANT-TEXT-7f3a";

proptest! {
    #[test]
    fn never_panics_and_keeps_invariants(value in arb_json(), noise in prop::collection::vec(any::<u8>(), 0..40)) {
        for provider in [RuntimeProvider::Claude, RuntimeProvider::Codex, RuntimeProvider::Opencode] {
            // The same payload with the assistant's text in every field
            // a runtime may put it in.
            let mut with_message = value.clone();
            if let Some(object) = with_message.as_object_mut() {
                for key in ["last_assistant_message", "lastAssistantMessage", "message", "text"] {
                    object.insert(key.into(), Value::String(PRIVATE.into()));
                }
            }
            for raw in [bytes(&value), bytes(&with_message), noise.clone()] {
                if let Ok(event) = normalize(provider, &raw, AT) {
                    prop_assert_eq!(event.provider, provider);
                    prop_assert_eq!(&event.payload_hash, &payload_hash(&raw));
                    prop_assert!(event.source_id.ends_with(&event.payload_hash));
                    let prefix = format!("runtime-turn-settled:{}:", provider.as_str());
                    prop_assert!(event.source_id.starts_with(&prefix));
                    prop_assert!(event.session_id.is_some() || event.transcript_path.is_some());
                    if provider != RuntimeProvider::Claude {
                        let named = event.team_name.is_some() && event.member_name.is_some();
                        // Only a native Codex Stop names no member: its session does.
                        let native = provider == RuntimeProvider::Codex
                            && event.team_name.is_none()
                            && event.member_name.is_none()
                            && event.session_id.is_some();
                        prop_assert!(named || native);
                    }
                    // The message text never survives normalization.
                    let stored = serde_json::to_string(&event).unwrap();
                    prop_assert!(!stored.contains(PRIVATE), "{}", stored);
                }
            }
        }
    }
}

/// A payload the identity pass leaves to a `Value` parse (see `fields`) is
/// normalized as that parse reads it: serde_json's raw-value key makes it
/// read the string under that key as the payload, and the same key nested
/// with a string that is no JSON makes the payload invalid.
#[test]
fn a_payload_left_to_the_value_parse_is_normalized_as_it_reads_it() {
    let inner = r#"{"hook_event_name":"Stop","session_id":"s","cwd":"/p"}"#;
    let raw = serde_json::to_vec(&json!({"$serde_json::private::RawValue": inner})).unwrap();
    let event = normalize(RuntimeProvider::Claude, &raw, AT).unwrap();
    assert_eq!(event.session_id.as_deref(), Some("s"));
    assert_eq!(event.cwd.as_deref(), Some("/p"));
    assert_eq!(event.payload_hash, payload_hash(&raw));
    let nested = br#"{"hook_event_name":"Stop","session_id":"s","a":{"$serde_json::private::RawValue":"no"}}"#;
    assert_eq!(
        normalize(RuntimeProvider::Claude, nested, AT),
        Err(NormalizeFailure::InvalidJson)
    );
}
