//! What the head of a Codex CLI session log (`<CODEX_HOME>/sessions/YYYY/MM/DD/
//! rollout-<time>-<session>.jsonl`) says about its session: the `session_meta`
//! line's id and cwd, and the team member the app's launch prompt names.
//!
//! Codex writes no team or member field of its own. The app launches a Codex
//! member with a first user message that starts `You are <member>, a <role> on
//! team "<display name>" (<team>).`; only that first authored user message is
//! read, and only that sentence of it. Pure functions over parsed lines.

use serde_json::Value;

/// Lines of a session log head looked at (the `session_meta` line is first,
/// the launch prompt follows within a few lines).
const CODEX_HEAD_LINES: usize = 20;

/// A session log head's identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CodexSessionHead {
    /// `session_meta.payload.id`.
    pub session_id: Option<String>,
    /// `session_meta.payload.cwd`.
    pub cwd: Option<String>,
    /// The (team, member) the launch prompt names, as written (trimmed).
    pub launch: Option<(String, String)>,
}

/// Reads the identity of a session log from its first lines.
pub(crate) fn codex_session_head(lines: &[Value]) -> CodexSessionHead {
    let mut head = CodexSessionHead::default();
    for line in lines.iter().take(CODEX_HEAD_LINES) {
        let payload = line.get("payload");
        let kind = line.get("type").and_then(Value::as_str);
        if kind == Some("session_meta") && head.session_id.is_none() {
            let field = |key: &str| {
                payload
                    .and_then(|p| p.get(key))
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            head.session_id = field("id").or_else(|| field("session_id"));
            head.cwd = field("cwd");
        }
        if kind == Some("response_item") {
            if let Some(text) = payload.and_then(authored_user_text) {
                head.launch = launch_identity(&text);
                break;
            }
        }
    }
    head
}

/// The text of a user message the user (or app) wrote: Codex's own context
/// messages (`<environment_context>`, `<user_instructions>`, ...) are tagged
/// and skipped.
fn authored_user_text(item: &Value) -> Option<String> {
    if item.get("type").and_then(Value::as_str) != Some("message")
        || item.get("role").and_then(Value::as_str) != Some("user")
    {
        return None;
    }
    let text: Vec<&str> = item
        .get("content")?
        .as_array()?
        .iter()
        .filter(|c| c.get("type").and_then(Value::as_str) == Some("input_text"))
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    let text = text.join("\n");
    let start = text.trim_start();
    (!start.is_empty() && !start.starts_with('<')).then(|| start.to_string())
}

/// `You are <member>, a <role> on team "<display>" (<team>).` → (team, member).
fn launch_identity(text: &str) -> Option<(String, String)> {
    let rest = text.strip_prefix("You are ")?;
    let first_line = rest.lines().next()?;
    let (member, role) = first_line.split_once(',')?;
    let after_team = &role[role.find(" on team \"")? + " on team \"".len()..];
    let team = &after_team[after_team.find("\" (")? + "\" (".len()..];
    let team = &team[..team.find(')')?];
    let (team, member) = (team.trim(), member.trim());
    (!team.is_empty() && !member.is_empty()).then(|| (team.to_string(), member.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> Value {
        json!({"type": "response_item", "payload": {"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]}})
    }

    fn meta(id: &str, cwd: &str) -> Value {
        json!({"type": "session_meta", "payload": {"id": id, "session_id": id, "cwd": cwd}})
    }

    #[test]
    fn launch_prompts_name_their_member() {
        // (first authored user text, identity)
        let cases = [
            (
                "You are alice, a developer on team \"Forge Team\" (forge).\nWork on tasks.",
                Some(("forge", "alice")),
            ),
            (
                "You are Bob, a reviewer on team \"x\" (my-team). Provider: codex.",
                Some(("my-team", "Bob")),
            ),
            ("say hi", None),
            ("You are alice on team \"forge\" (forge).", None),
            ("You are alice, a developer on team \"forge\".", None),
            ("You are , a dev on team \"f\" (forge).", None),
            ("You are alice, a dev on team \"f\" ().", None),
            // Only the first line is read.
            ("You are alice, a dev\non team \"f\" (forge).", None),
        ];
        for (text, identity) in cases {
            let head = codex_session_head(&[meta("s1", "/p"), user(text)]);
            let expected = identity.map(|(t, m)| (t.to_string(), m.to_string()));
            assert_eq!(head.launch, expected, "{text}");
            assert_eq!(head.session_id.as_deref(), Some("s1"));
            assert_eq!(head.cwd.as_deref(), Some("/p"));
        }
    }

    #[test]
    fn context_messages_are_skipped_and_only_the_first_prompt_counts() {
        let lines = [
            meta("s1", "/p"),
            user("<environment_context>\n  <cwd>/p</cwd>\n</environment_context>"),
            json!({"type": "response_item", "payload": {"type": "message", "role": "developer",
                "content": [{"type": "input_text", "text": "You are eve, a x on team \"t\" (t)."}]}}),
            user("  You are alice, a developer on team \"forge\" (forge)."),
            user("You are mallory, a developer on team \"forge\" (forge)."),
        ];
        let head = codex_session_head(&lines);
        assert_eq!(head.launch, Some(("forge".into(), "alice".into())));
        // A first prompt without identity: a later one never counts.
        let head = codex_session_head(&[meta("s1", "/p"), user("hello"), lines[3].clone()]);
        assert_eq!(head.launch, None);
    }

    #[test]
    fn a_head_without_meta_or_prompt_names_nothing() {
        assert_eq!(codex_session_head(&[]), CodexSessionHead::default());
        let odd = [
            json!(1),
            json!({"type": "session_meta"}),
            json!({"type": "response_item", "payload": 3}),
        ];
        assert_eq!(codex_session_head(&odd), CodexSessionHead::default());
    }
}

#[cfg(test)]
mod real_log {
    use super::*;

    /// A session log written by the real Codex CLI 0.169 for a run whose
    /// prompt was the app's launch prompt.
    const REAL_LOG: &str = include_str!(
        "../../../tests/fixtures/codex/rollout-2026-11-23T15-50-35-01a2091a-18f5-7b02-aa65-a14af49b3513.jsonl"
    );

    #[test]
    fn the_real_log_names_its_session_cwd_and_member() {
        let lines: Vec<Value> = REAL_LOG
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let head = codex_session_head(&lines);
        assert_eq!(
            head,
            CodexSessionHead {
                session_id: Some("01a2091a-18f5-7b02-aa65-a14af49b3513".into()),
                cwd: Some("/tmp/cx/proj".into()),
                launch: Some(("forge".into(), "alice".into())),
            }
        );
    }
}
