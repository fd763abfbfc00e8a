//! `explain`: one member's timeline from what the stores already hold
//! (journal, outbox, stored status). Reads only: nothing is written, moved,
//! locked or created, so an operator may run it against a live team.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::ports::{Clock, PortError, StoredStatus};
use super::reconcile::WorkSyncError;
use crate::domain::explain::{journal_entry, outbox_entry, status_entry, timeline, ExplainEntry};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::time::{format_iso, EpochMs};

/// Most entries one `explain` returns (the newest are kept).
pub(crate) const MAX_ENTRIES: usize = 2000;

/// What the journal files held.
#[derive(Debug, Default)]
pub struct JournalLines {
    /// Parsed lines, oldest file first, in file order.
    pub lines: Vec<Value>,
    /// Lines that were not JSON (torn or foreign).
    pub unreadable_lines: usize,
    /// Journal files left unread, each with why (`journal.jsonl.1: too_large`).
    pub skipped_files: Vec<String>,
}

/// Side-effect-free reads of one member's stores.
pub trait ExplainSource: Send + Sync {
    /// The member's journal (and its newest rotation), capped.
    fn journal(&self, team: &TeamName, member: &MemberName) -> Result<JournalLines, PortError>;
    /// The member's outbox items as stored; `Err(reason)` inside when the
    /// file is unusable (it is left in place).
    fn outbox_items(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<Result<Vec<Value>, String>, PortError>;
    /// The stored status, never quarantining a bad file.
    fn status(&self, team: &TeamName, member: &MemberName) -> Result<StoredStatus, PortError>;
}

/// What `explain` answers: one member's timeline from the journal and its
/// stored files, with what could not be read.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub(crate) struct Explanation {
    /// The team asked about.
    pub team_name: String,
    /// The member asked about.
    pub member_name: String,
    /// When the explanation was made (ISO-8601 UTC).
    pub generated_at: String,
    /// The lower bound applied, if any (ISO-8601 UTC).
    pub since: Option<String>,
    /// The timeline, oldest first.
    pub entries: Vec<ExplainEntry>,
    /// What could not be read (unparseable journal lines, skipped files,
    /// an unusable status file, entries cut by the cap).
    pub diagnostics: Vec<String>,
}

/// Builds explanations from an [`ExplainSource`].
pub struct Explainer {
    source: Arc<dyn ExplainSource>,
    clock: Arc<dyn Clock>,
}

impl Explainer {
    /// Wires the reads.
    pub fn new(source: Arc<dyn ExplainSource>, clock: Arc<dyn Clock>) -> Self {
        Self { source, clock }
    }

    /// The timeline of `member` in `team`, entries at or after `since_ms`.
    pub(crate) fn explain(
        &self,
        team: &TeamName,
        member: &MemberName,
        since_ms: Option<EpochMs>,
    ) -> Result<Explanation, WorkSyncError> {
        let mut diagnostics = Vec::new();
        let journal = self.source.journal(team, member)?;
        if journal.unreadable_lines > 0 {
            diagnostics.push(format!(
                "journal_unreadable_lines:{}",
                journal.unreadable_lines
            ));
        }
        diagnostics.extend(
            journal
                .skipped_files
                .iter()
                .map(|s| format!("journal_skipped:{s}")),
        );
        let mut entries: Vec<ExplainEntry> = journal
            .lines
            .into_iter()
            .filter_map(journal_entry)
            .collect();
        match self.source.outbox_items(team, member)? {
            Ok(items) => entries.extend(items.into_iter().map(outbox_entry)),
            Err(reason) => diagnostics.push(format!("outbox_unusable:{reason}")),
        }
        match self.source.status(team, member)? {
            StoredStatus::Missing => {}
            StoredStatus::Current(status) | StoredStatus::Legacy(status) => {
                entries.push(status_entry(
                    serde_json::to_value(status).unwrap_or(Value::Null),
                ));
            }
            StoredStatus::Quarantined { reason } => {
                diagnostics.push(format!("status_unusable:{reason}"));
            }
        }
        let before = entries
            .iter()
            .filter(|e| since_ms.is_none_or(|since| e.at_ms >= since))
            .count();
        let entries = timeline(entries, since_ms, MAX_ENTRIES);
        if entries.len() < before {
            diagnostics.push(format!("entries_cut:{}", before - entries.len()));
        }
        Ok(Explanation {
            team_name: team.to_string(),
            member_name: member.to_string(),
            generated_at: format_iso(self.clock.now_ms()),
            since: since_ms.map(format_iso),
            entries,
            diagnostics,
        })
    }
}
