//! Team identity: which team strings name one team, and
//! the rewrite that puts a team's rows under the routing spelling.
//!
//! The routing argument is authoritative. Rows stored under a case or
//! whitespace alias (`team-a`, ` TEAM-A`) are the same team as `Team-A`;
//! folding them rewrites the row column and the team fields nested in the
//! status, agenda, report, request and event JSON, and leaves the outbox
//! payload alone: its task refs may name other teams on purpose, and its
//! bytes are what `payload_hash` proves.

use serde_json::Value;

use super::js_json;
use super::mappers::{normalize_status_json, set_team, BadColumn};
use super::records::TeamRecords;
use crate::domain::js_semantics::js_trim;

/// The comparison form of a team name: trimmed and lowercased.
pub(crate) fn team_key(team: &str) -> String {
    js_trim(team).to_lowercase()
}

/// Both name one team: equal non-empty keys.
pub(crate) fn is_same_team(left: &str, right: &str) -> bool {
    let key = team_key(left);
    !key.is_empty() && key == team_key(right)
}

/// Rewrites `json` (an object, else an error naming `column`) with `edit`
/// and prints it back as `JSON.stringify` does.
fn rewrite_object(
    json: &str,
    column: &'static str,
    edit: impl FnOnce(&mut Value),
) -> Result<String, BadColumn> {
    let mut value: Value = serde_json::from_str(json).map_err(|e| BadColumn {
        column,
        detail: e.to_string(),
    })?;
    if !value.is_object() {
        return Err(BadColumn {
            column,
            detail: "not a JSON object".into(),
        });
    }
    edit(&mut value);
    js_json::stringify(&value).map_err(|e| BadColumn {
        column,
        detail: e.to_string(),
    })
}

/// Puts every row of `records` under `team`: the row's team column and the
/// nested team fields (the outbox payload stays byte for byte).
pub(crate) fn normalize_team_records(
    team: &str,
    records: &mut TeamRecords,
) -> Result<(), BadColumn> {
    for row in &mut records.statuses {
        row.team_name = team.to_string();
        row.status_json = rewrite_object(&row.status_json, "status_json", |v| {
            normalize_status_json(v, team)
        })?;
    }
    for row in &mut records.report_intents {
        row.team_name = team.to_string();
        row.request_json = rewrite_object(&row.request_json, "request_json", |v| {
            set_team(Some(v), team)
        })?;
    }
    for row in &mut records.outbox_items {
        row.team_name = team.to_string();
    }
    for row in &mut records.metric_events {
        row.team_name = team.to_string();
        row.event_json =
            rewrite_object(&row.event_json, "event_json", |v| set_team(Some(v), team))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_team_means_equal_non_empty_keys() {
        let cases = [
            ("Team-A", " team-a ", true),
            ("TEAM-A", "team-a", true),
            ("team-a", "team-b", false),
            ("", "", false),
            ("  ", "", false),
            ("\u{feff}Team", "team", true),
        ];
        for (left, right, same) in cases {
            assert_eq!(is_same_team(left, right), same, "{left:?} {right:?}");
        }
    }
}
