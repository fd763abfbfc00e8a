//! How a member's `status.json` is rendered: `{schemaVersion, status}`,
//! the status field for field as its own serialization writes it, with the
//! agenda's items (the bulk of the file: hundreds of them, of which a
//! reconcile after a one-task change changes one) taken from the member's
//! kept [`Fragments`] where they are unchanged.
//!
//! [`StatusView`] mirrors [`MemberStatus`] and [`AgendaView`] mirrors
//! [`Agenda`]: the same fields in the same order under the same rules. Each
//! is built by destructuring its original exhaustively, so a field added
//! there fails to compile here until it is added here too; the tests compare
//! the two renderings byte for byte, every optional field present and absent.

use std::io;
use std::path::Path;

use serde::Serialize;
use serde_json::value::RawValue;

use super::fragments::Fragments;
use super::json_store::render_json;
use crate::domain::agenda::{ActionableWorkItem, Agenda};
use crate::domain::status::{MemberStatus, Report, Shadow, StatusState};
use crate::domain::team::ProviderId;
use crate::domain::time::IsoTime;

/// Levels of nesting above an agenda item: the envelope, `status`,
/// `agenda`, `items`.
pub(crate) const ITEM_DEPTH: usize = 4;

/// The status file's envelope.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusFile<'a> {
    schema_version: u64,
    status: StatusView<'a>,
}

/// [`MemberStatus`], its agenda's items as fragments.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusView<'a> {
    team_name: &'a str,
    member_name: &'a str,
    state: &'a StatusState,
    agenda: AgendaView<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<&'a Report>,
    #[serde(skip_serializing_if = "Option::is_none")]
    report_token: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    report_token_expires_at: Option<&'a IsoTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shadow: Option<&'a Shadow>,
    evaluated_at: &'a IsoTime,
    diagnostics: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    provider_id: Option<&'a ProviderId>,
}

/// [`Agenda`], its items as fragments.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AgendaView<'a> {
    team_name: &'a str,
    member_name: &'a str,
    generated_at: &'a str,
    fingerprint: &'a str,
    items: &'a [&'a RawValue],
    diagnostics: &'a [String],
}

/// `status` rendered as `path`'s envelope (`{schemaVersion: version,
/// status}`, [`render_json`]), its agenda's items from `fragments` where
/// they are unchanged (keyed by task id).
pub(crate) fn render_status(
    path: &Path,
    version: u64,
    status: &MemberStatus,
    fragments: &mut Fragments<ActionableWorkItem>,
) -> io::Result<String> {
    let MemberStatus {
        team_name,
        member_name,
        state,
        agenda,
        report,
        report_token,
        report_token_expires_at,
        shadow,
        evaluated_at,
        diagnostics,
        provider_id,
    } = status;
    let Agenda {
        team_name: agenda_team,
        member_name: agenda_member,
        generated_at,
        fingerprint,
        items,
        diagnostics: agenda_diagnostics,
    } = agenda;
    let entries: Vec<(&str, &ActionableWorkItem)> = items
        .iter()
        .map(|item| (item.task_id.as_str(), item))
        .collect();
    fragments
        .with(&entries, |items: &[&RawValue]| {
            let file = StatusFile {
                schema_version: version,
                status: StatusView {
                    team_name,
                    member_name,
                    state,
                    agenda: AgendaView {
                        team_name: agenda_team,
                        member_name: agenda_member,
                        generated_at,
                        fingerprint,
                        items,
                        diagnostics: agenda_diagnostics,
                    },
                    report: report.as_ref(),
                    report_token: report_token.as_ref(),
                    report_token_expires_at: report_token_expires_at.as_ref(),
                    shadow: shadow.as_ref(),
                    evaluated_at,
                    diagnostics,
                    provider_id: provider_id.as_ref(),
                },
            };
            render_json(path, &file)
        })
        .map_err(io::Error::other)?
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A status with every optional field, two agenda items among them.
    fn full_status() -> MemberStatus {
        serde_json::from_value(json!({
            "teamName": "forge",
            "memberName": "jack",
            "state": "needs_sync",
            "agenda": {
                "teamName": "forge",
                "memberName": "jack",
                "generatedAt": "2026-11-22T10:00:00.000Z",
                "fingerprint": "agenda:v1:x",
                "items": [
                    {
                        "taskId": "1", "displayId": "#1", "subject": "Ship \"it\" é",
                        "kind": "work", "assignee": "jack", "priority": "normal",
                        "reason": "owned_pending_task",
                        "evidence": { "status": "pending", "owner": "jack", "reviewState": "none" }
                    },
                    {
                        "taskId": "2", "subject": "Review",
                        "kind": "review", "assignee": "jack", "priority": "review_requested",
                        "reason": "current_cycle_review_assigned",
                        "evidence": {
                            "status": "completed", "owner": "jill", "reviewer": "jack",
                            "reviewState": "review", "historyEventIds": ["r2", "r1"]
                        }
                    }
                ],
                "diagnostics": ["d"]
            },
            "report": {
                "state": "blocked", "agendaFingerprint": "agenda:v1:x", "memberName": "jack",
                "teamName": "forge", "reportedAt": "2026-11-22T09:00:00.000Z",
                "expiresAt": "2026-11-22T11:00:00.000Z", "taskIds": ["1"], "note": "n",
                "source": "s", "accepted": false, "rejectionCode": "c"
            },
            "reportToken": "t",
            "reportTokenExpiresAt": "2026-11-22T10:15:00.000Z",
            "shadow": {
                "reconciledBy": "queue", "wouldNudge": true, "fingerprintChanged": true,
                "previousFingerprint": "agenda:v1:w", "triggerReasons": ["task_changed"]
            },
            "evaluatedAt": "2026-11-22T10:00:00.000Z",
            "diagnostics": ["x"],
            "providerId": "anthropic"
        }))
        .expect("a status")
    }

    /// The status file as the status's own serialization writes it.
    fn whole(status: &MemberStatus) -> String {
        let file = json!({ "schemaVersion": 2, "status": status });
        serde_json::to_string_pretty(&file).unwrap() + "\n"
    }

    #[test]
    fn the_view_writes_what_the_status_would_with_each_optional_field_present_or_absent() {
        let full = full_status();
        let mut variants = vec![full.clone()];
        for strip in 0..6 {
            let mut status = full.clone();
            match strip {
                0 => status.report = None,
                1 => status.report_token = None,
                2 => status.report_token_expires_at = None,
                3 => status.shadow = None,
                4 => status.provider_id = None,
                _ => status.agenda.items.clear(),
            }
            variants.push(status);
        }
        let mut fragments = Fragments::new(ITEM_DEPTH);
        for (n, status) in variants.iter().enumerate() {
            let path = Path::new("status.json");
            let written = render_status(path, 2, status, &mut fragments).unwrap();
            assert_eq!(written, whole(status), "variant {n}");
        }
    }

    #[test]
    fn a_changed_item_under_the_same_task_is_rendered_anew() {
        let mut status = full_status();
        let mut fragments = Fragments::new(ITEM_DEPTH);
        let path = Path::new("status.json");
        render_status(path, 2, &status, &mut fragments).unwrap();
        status.agenda.items[0].subject = "Ship it, changed".into();
        let written = render_status(path, 2, &status, &mut fragments).unwrap();
        assert_eq!(written, whole(&status));
    }
}
