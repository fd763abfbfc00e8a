//! A team's `config.json`, typed: the one parse of it that the roster reader
//! ([`team_reader`](super::team_reader)) and the transcripts and Codex
//! session resolvers share, so they agree on which teams exist and who is on
//! them.

use serde_json::Value;

use crate::domain::js_semantics::js_trim;
use crate::domain::team::{ProviderId, TeamMember};
use crate::domain::turn_settled::transcript::project_path_candidates;

/// What the addon reads from a team's `config.json`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TeamConfig {
    /// True when `deletedAt` is set (anything but absent, `null` or `false`).
    pub deleted: bool,
    /// The config's `members`, parsed as the roster reader reads them
    /// (entries without a usable name left out), removed ones included.
    pub members: Vec<TeamMember>,
    /// `leadSessionId`, trimmed, when a non-blank string.
    pub lead_session_id: Option<String>,
    /// `sessionHistory` entries, trimmed, blank and non-string ones left
    /// out, oldest first as in the file.
    pub session_history: Vec<String>,
    /// The project paths whose Claude project folders may hold the team's
    /// transcripts (`projectPath`, then recent `projectPathHistory`).
    pub project_paths: Vec<String>,
}

impl TeamConfig {
    /// The typed config, or `None` when it has no non-blank `name` (the team
    /// then has no usable config).
    pub(crate) fn parse(config: &Value) -> Option<Self> {
        let named = config
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| !js_trim(n).is_empty());
        if !named {
            return None;
        }
        Some(Self {
            deleted: config
                .get("deletedAt")
                .is_some_and(|d| !d.is_null() && d != &Value::Bool(false)),
            members: array_items(config, "members")
                .filter_map(parse_config_member)
                .collect(),
            lead_session_id: config
                .get("leadSessionId")
                .and_then(Value::as_str)
                .map(js_trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            session_history: array_items(config, "sessionHistory")
                .filter_map(Value::as_str)
                .map(js_trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
            project_paths: project_path_candidates(config),
        })
    }
}

/// The items of the array `key` (none when it is missing or not an array).
fn array_items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// `value[key]` when a string.
pub(super) fn string(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_string)
}

/// A member entry's `name`, trimmed as JavaScript trims, when not blank.
pub(super) fn trimmed_name(value: &Value) -> Option<String> {
    let name = js_trim(value.get("name")?.as_str()?);
    (!name.is_empty()).then(|| name.to_string())
}

/// A member entry's `effort`, a string or a number written as one.
pub(super) fn effort(value: &Value) -> Option<String> {
    match value.get("effort")? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One `members` entry of `config.json`, as the roster reader reads it.
fn parse_config_member(value: &Value) -> Option<TeamMember> {
    Some(TeamMember {
        name: trimmed_name(value)?,
        agent_type: string(value, "agentType"),
        provider_id: value
            .get("providerId")
            .and_then(Value::as_str)
            .and_then(ProviderId::parse),
        provider_backend_id: string(value, "providerBackendId"),
        model: string(value, "model"),
        effort: effort(value),
        fast_mode: value.get("fastMode").and_then(Value::as_bool),
        // Any JavaScript-truthy value marks a config member removed.
        removed_at: match value.get("removedAt") {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::Bool(true) | Value::Array(_) | Value::Object(_)) => Some(1.0),
            Some(Value::String(s)) if !s.is_empty() => Some(1.0),
            _ => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fields_both_readers_use() {
        let config = json!({
            "name": "forge",
            "leadSessionId": " L1 ",
            "sessionHistory": ["L0", " ", 5, "L1", "\u{feff}", "\u{feff}L2\u{85}"],
            "projectPath": "/home/u/proj/",
            "members": [{"name": " Jack "}, {"name": ""}, {"name": "jill", "removedAt": 5}],
        });
        let parsed = TeamConfig::parse(&config).unwrap();
        assert!(!parsed.deleted);
        assert_eq!(parsed.lead_session_id.as_deref(), Some("L1"));
        assert_eq!(parsed.session_history, ["L0", "L1", "L2\u{85}"]);
        assert_eq!(parsed.project_paths, ["/home/u/proj"]);
        let names: Vec<&str> = parsed.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["Jack", "jill"]);
        assert!(parsed.members[1].is_removed());
    }

    #[test]
    fn unnamed_and_deleted_configs() {
        // (config, parsed?, deleted)
        for (config, parses, deleted) in [
            (json!({}), false, false),
            (json!({"name": "  "}), false, false),
            // JavaScript's trim (the app's): U+FEFF is blank, U+0085 is not.
            (json!({"name": "\u{feff}"}), false, false),
            (json!({"name": "\u{85}"}), true, false),
            (json!({"name": 5}), false, false),
            (json!({"name": "f"}), true, false),
            (json!({"name": "f", "deletedAt": null}), true, false),
            (json!({"name": "f", "deletedAt": false}), true, false),
            (json!({"name": "f", "deletedAt": "2026-01-01"}), true, true),
            (json!({"name": "f", "deletedAt": 0}), true, true),
        ] {
            let parsed = TeamConfig::parse(&config);
            assert_eq!(parsed.is_some(), parses, "{config}");
            assert_eq!(parsed.is_some_and(|c| c.deleted), deleted, "{config}");
        }
    }
}
