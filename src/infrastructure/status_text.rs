//! A member's status file rendered with its agenda items as kept fragments
//! ([`super::fragments`], whose module doc is the contract).
//!
//! A status holds its member's whole agenda (about 80 KiB at 200 tasks), and
//! a reconcile after a one-task change changes one item: rendering the whole
//! status again at every write spent most of its time escaping the text of
//! items that had not changed. [`StatusFile`] serializes as the envelope
//! `{"schemaVersion", "status"}` of a [`MemberStatus`] does, field for field
//! in the same order, with each agenda item's kept text where the item's
//! own serialization would have gone; the items are shared (`Arc`), so an
//! unchanged item is told equal by its address, and the text kept with it
//! is the only memory this costs. Its fields are taken by destructuring
//! with no `..`: a field added to the status or its agenda does not compile
//! until it is written here too. The tests compare the text with rendering
//! the status itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;

use super::fragments::{FragmentCache, FragmentList};
use super::json_store::{render_envelope, render_json};
use crate::domain::agenda::{ActionableWorkItem, Agenda};
use crate::domain::status::{MemberStatus, Report, Shadow, StatusState};
use crate::domain::team::ProviderId;
use crate::domain::time::IsoTime;

/// An agenda item's value sits four levels deep: envelope, `status`,
/// `agenda`, `items`.
const ITEM_DEPTH: usize = 4;

/// Renders status files, keeping each file's item fragments for its next
/// write (at most `files` files and `bytes` of text, see [`FragmentCache`]).
#[derive(Debug)]
pub(crate) struct StatusTexts {
    items: FragmentCache<PathBuf, Arc<ActionableWorkItem>>,
}

impl StatusTexts {
    /// Nothing kept yet.
    pub(crate) fn new(files: usize, bytes: usize) -> Self {
        Self {
            items: FragmentCache::new(ITEM_DEPTH, files, bytes),
        }
    }

    /// `status` as the file at `path` holds it in envelope `version`:
    /// [`render_json`] of the envelope, byte for byte.
    pub(crate) fn render(
        &self,
        path: &Path,
        version: u64,
        status: &MemberStatus,
    ) -> std::io::Result<String> {
        // Keyed by task id; equal keys (tasks sharing an id) are told apart
        // by value, as every key is.
        let items: Vec<(&str, &Arc<ActionableWorkItem>)> = status
            .agenda
            .items
            .iter()
            .map(|item| (item.task_id.as_str(), item))
            .collect();
        let text = self.items.with(path.to_path_buf(), &items, |items| {
            render_json(path, &StatusFile::of(version, status, items))
        })?;
        // Every status a debug build writes (every test's) is checked
        // against rendering the status itself.
        debug_assert_eq!(
            Ok(&text),
            render_envelope(path, version, "status", status)
                .as_ref()
                .map_err(|_| ())
        );
        Ok(text)
    }
}

/// The envelope of a status file.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusFile<'a> {
    schema_version: u64,
    status: StatusFields<'a>,
}

/// A [`MemberStatus`]'s fields in its serialization's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StatusFields<'a> {
    team_name: &'a str,
    member_name: &'a str,
    state: StatusState,
    agenda: AgendaFields<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    report: Option<&'a Report>,
    #[serde(skip_serializing_if = "Option::is_none")]
    report_token: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    report_token_expires_at: Option<&'a IsoTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    shadow: Option<&'a Shadow>,
    evaluated_at: &'a IsoTime,
    diagnostics: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    provider_id: Option<ProviderId>,
}

/// An [`Agenda`]'s fields in its serialization's order, the items as
/// fragments.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AgendaFields<'a> {
    team_name: &'a str,
    member_name: &'a str,
    generated_at: &'a str,
    fingerprint: &'a str,
    items: FragmentList<'a>,
    diagnostics: &'a [String],
}

impl<'a> StatusFile<'a> {
    fn of(version: u64, status: &'a MemberStatus, items: &'a [(&'a str, &'a RawValue)]) -> Self {
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
            team_name: agenda_team_name,
            member_name: agenda_member_name,
            generated_at,
            fingerprint,
            items: _,
            diagnostics: agenda_diagnostics,
        } = agenda;
        Self {
            schema_version: version,
            status: StatusFields {
                team_name,
                member_name,
                state: *state,
                agenda: AgendaFields {
                    team_name: agenda_team_name,
                    member_name: agenda_member_name,
                    generated_at,
                    fingerprint,
                    items: FragmentList(items),
                    diagnostics: agenda_diagnostics,
                },
                report: report.as_ref(),
                report_token: report_token.as_deref(),
                report_token_expires_at: report_token_expires_at.as_ref(),
                shadow: shadow.as_ref(),
                evaluated_at,
                diagnostics,
                provider_id: *provider_id,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::agenda::{Evidence, ItemKind, ItemReason, Priority};

    fn item(id: &str, subject: &str) -> Arc<ActionableWorkItem> {
        Arc::new(ActionableWorkItem {
            task_id: id.into(),
            display_id: Some(format!("#{id}")),
            subject: subject.into(),
            kind: ItemKind::Work,
            assignee: "jack".into(),
            priority: Priority::Normal,
            reason: ItemReason::OwnedPendingTask,
            evidence: Evidence {
                status: "pending".into(),
                owner: Some("jack".into()),
                history_event_ids: Some(vec!["e1".into(), "e\"2\n".into()]),
                ..Evidence::default()
            },
        })
    }

    /// A status with every optional field set.
    fn full_status(items: Vec<Arc<ActionableWorkItem>>) -> MemberStatus {
        let mut status: MemberStatus = serde_json::from_value(serde_json::json!({
            "teamName": "forge", "memberName": "jack", "state": "still_working",
            "agenda": {"teamName": "forge", "memberName": "jack",
                "generatedAt": "2026-11-22T10:00:00.000Z", "fingerprint": "agenda:v1:x",
                "items": [], "diagnostics": ["d1"]},
            "report": {"state": "still_working", "agendaFingerprint": "agenda:v1:x",
                "memberName": "jack", "teamName": "forge",
                "reportedAt": "2026-11-22T10:00:00.000Z", "expiresAt": "2026-11-22T10:15:00.000Z",
                "taskIds": ["1"], "note": "n\\u00e9 é", "source": "mcp", "accepted": true,
                "rejectionCode": "none"},
            "reportToken": "t", "reportTokenExpiresAt": "2026-11-22T10:15:00.000Z",
            "shadow": {"reconciledBy": "queue", "wouldNudge": true, "fingerprintChanged": true,
                "previousFingerprint": "agenda:v1:w", "triggerReasons": ["task_changed"],
                "nudgeSuppressionResetAt": "2026-11-22T09:00:00.000Z",
                "nudgeSuppression": {"reason": "no_accepted_report",
                    "agendaFingerprint": "agenda:v1:x", "deliveredCount": 3,
                    "suppressedAt": "2026-11-22T10:00:00.000Z"}},
            "evaluatedAt": "2026-11-22T10:00:00.000Z", "diagnostics": ["a", "b"],
            "providerId": "codex"
        }))
        .unwrap();
        status.agenda.items = items;
        status
    }

    fn bare_status(items: Vec<Arc<ActionableWorkItem>>) -> MemberStatus {
        let mut status = full_status(items);
        status.report = None;
        status.report_token = None;
        status.report_token_expires_at = None;
        status.shadow = None;
        status.provider_id = None;
        status
    }

    #[test]
    fn a_status_renders_as_it_serializes_through_every_change_of_its_items() {
        let path = Path::new("/teams/forge/members/jack/.member-work-sync/status.json");
        let texts = StatusTexts::new(4, 1 << 20);
        let (a, b, c) = (item("1", "one"), item("2", "two"), item("3", "three"));
        let steps: Vec<Vec<Arc<ActionableWorkItem>>> = vec![
            vec![],
            vec![a.clone(), b.clone()],
            // One item changed, one kept: the kept text is reused.
            vec![a.clone(), item("2", "two, reworded")],
            vec![c.clone(), a.clone(), b.clone()],
            // Two tasks sharing an id, equal and not.
            vec![a.clone(), a.clone(), item("1", "another one")],
            vec![b.clone()],
            vec![],
        ];
        for (i, items) in steps.into_iter().enumerate() {
            for status in [full_status(items.clone()), bare_status(items)] {
                assert_eq!(
                    texts.render(path, 2, &status).unwrap(),
                    render_envelope(path, 2, "status", &status).unwrap(),
                    "step {i}"
                );
            }
        }
    }

    #[test]
    fn the_plain_rendering_is_the_store_envelope() {
        let path = Path::new("/teams/forge/status.json");
        let status = full_status(vec![item("1", "one")]);
        let text = render_envelope(path, 2, "status", &status).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["schemaVersion"], 2);
        assert_eq!(
            serde_json::from_value::<MemberStatus>(value["status"].clone()).unwrap(),
            status
        );
        assert!(text.starts_with("{\n  \"schemaVersion\": 2,\n  \"status\": {\n"));
        assert!(text.ends_with("}\n"));
    }
}
