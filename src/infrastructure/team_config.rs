//! A team's `config.json`, typed: the one parse of it that the roster reader
//! ([`team_reader`](super::team_reader)) and the transcripts and Codex
//! session resolvers share, so they agree on which teams exist and who is on
//! them.

use serde_json::Value;

use super::team_reader::parse_config_member;
use crate::domain::team::TeamMember;
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
    pub fn parse(config: &Value) -> Option<Self> {
        let named = config
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.trim().is_empty());
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
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            session_history: array_items(config, "sessionHistory")
                .filter_map(Value::as_str)
                .map(str::trim)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fields_both_readers_use() {
        let config = json!({
            "name": "forge",
            "leadSessionId": " L1 ",
            "sessionHistory": ["L0", " ", 5, "L1"],
            "projectPath": "/home/u/proj/",
            "members": [{"name": " Jack "}, {"name": ""}, {"name": "jill", "removedAt": 5}],
        });
        let parsed = TeamConfig::parse(&config).unwrap();
        assert!(!parsed.deleted);
        assert_eq!(parsed.lead_session_id.as_deref(), Some("L1"));
        assert_eq!(parsed.session_history, ["L0", "L1"]);
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
