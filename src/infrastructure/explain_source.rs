//! [`ExplainSource`] over the member store files: the journal (and its newest
//! rotation), `outbox.json` and `status.json`, all read without side effects.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::journal;
use super::json_store::{peek_envelope, Peeked};
use super::outbox_store;
use super::status_store::{FsStatusStore, StorePaths};
use crate::application::explain::{ExplainSource, JournalLines, MAX_ENTRIES};
use crate::application::ports::{Clock, OutboxStore, PortError, StatusStore, StoredStatus};
use crate::domain::names::{MemberName, TeamName};

/// Reads a member's store files under `paths`.
pub(crate) struct FsExplainSource {
    paths: StorePaths,
    status: Arc<dyn StatusStore>,
    /// The outbox when it is not the member's `outbox.json` (the SQLite store).
    outbox: Option<Arc<dyn OutboxStore>>,
}

impl FsExplainSource {
    /// A source under `paths`.
    pub(crate) fn new(paths: StorePaths, clock: Arc<dyn Clock>) -> Self {
        Self {
            status: Arc::new(FsStatusStore::new(paths.clone(), clock)),
            paths,
            outbox: None,
        }
    }

    /// The journal under `paths`, statuses and outbox items from these
    /// stores (whose reads have no side effects).
    pub(crate) fn with_stores(
        paths: StorePaths,
        status: Arc<dyn StatusStore>,
        outbox: Arc<dyn OutboxStore>,
    ) -> Self {
        Self {
            paths,
            status,
            outbox: Some(outbox),
        }
    }
}

impl ExplainSource for FsExplainSource {
    fn journal(&self, team: &TeamName, member: &MemberName) -> Result<JournalLines, PortError> {
        let path = self.paths.member_file(team, member, "journal.jsonl");
        let root = self.paths.root();
        let current = journal::read_lines(root, &path, 0)?;
        let mut out = JournalLines::default();
        // The newest rotation only when the current file alone does not fill
        // the timeline: a rotation is up to 5 MiB more to read.
        if current.lines.len() < MAX_ENTRIES {
            let older = journal::read_lines(root, &path, 1)?;
            if let Some(why) = older.skipped {
                out.skipped_files.push(format!("journal.jsonl.1:{why}"));
            }
            out.unreadable_lines += older.unreadable;
            out.lines = older.lines;
        }
        if let Some(why) = current.skipped {
            out.skipped_files.push(format!("journal.jsonl:{why}"));
        }
        out.unreadable_lines += current.unreadable;
        out.lines.extend(current.lines);
        Ok(out)
    }

    fn outbox_items(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<Result<Vec<Value>, String>, PortError> {
        if let Some(outbox) = &self.outbox {
            return Ok(Ok(outbox
                .member_items(team, member)?
                .iter()
                .filter_map(|item| serde_json::to_value(item).ok())
                .collect()));
        }
        let path = self.paths.member_file(team, member, "outbox.json");
        Ok(
            match peek_envelope::<BTreeMap<String, Value>>(
                self.paths.root(),
                &path,
                outbox_store::SCHEMA_VERSION,
                "items",
            )? {
                Peeked::Missing => Ok(Vec::new()),
                Peeked::Found(items) => Ok(items.into_values().collect()),
                Peeked::Unusable { reason } => Err(reason),
            },
        )
    }

    fn status(&self, team: &TeamName, member: &MemberName) -> Result<StoredStatus, PortError> {
        self.status.peek(team, member)
    }
}
