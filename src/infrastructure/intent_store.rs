//! Report intents: per-member `reports.json` (`{schemaVersion: 2, intents}`),
//! the team index `indexes/pending-reports-index.json`, and migration of the
//! controller's legacy team-level `pending-reports.json` (v1).
//!
//! Lock order is index first, then member file, everywhere.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::json_store::{
    read_envelope, read_flat_envelope, write_envelope, write_flat_envelope, Loaded,
    MAX_STORE_FILE_BYTES,
};
use super::lock::StoreLock;
use super::safe_fs::FileRead;
use super::status_store::StorePaths;
use crate::application::ports::{
    Clock, IntentStatus, PendingIntents, PortError, ReportIntent, ReportIntentStore,
};
use crate::domain::names::{member_key, TeamName};
use crate::domain::time::{format_iso, parse_iso};

const SCHEMA_VERSION: u64 = 2;

/// One row of the team index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexEntry {
    member_key: String,
    member_name: String,
    status: IntentStatus,
    recorded_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    processed_at: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct PendingIndex {
    #[serde(default)]
    items: BTreeMap<String, IndexEntry>,
}

/// [`ReportIntentStore`] on the file system.
pub(crate) struct FsReportIntentStore {
    paths: StorePaths,
    clock: Arc<dyn Clock>,
}

impl FsReportIntentStore {
    /// Intents under `paths`.
    pub(crate) fn new(paths: StorePaths, clock: Arc<dyn Clock>) -> Self {
        Self { paths, clock }
    }

    fn team_store_dir(&self, team: &str) -> PathBuf {
        self.paths.team_dir(team).join(".member-work-sync")
    }

    fn index_path(&self, team: &str) -> PathBuf {
        self.team_store_dir(team)
            .join("indexes")
            .join("pending-reports-index.json")
    }

    fn member_path(&self, team: &str, member: &str) -> PathBuf {
        self.paths.member_file(team, member, "reports.json")
    }

    fn read_member(
        &self,
        path: &std::path::Path,
    ) -> Result<BTreeMap<String, ReportIntent>, PortError> {
        Ok(
            match read_envelope(
                self.paths.root(),
                path,
                SCHEMA_VERSION,
                "intents",
                self.clock.now_ms(),
            )? {
                Loaded::Found(intents) => intents,
                Loaded::Missing | Loaded::Quarantined { .. } => BTreeMap::new(),
            },
        )
    }

    fn read_index(&self, team: &str) -> Result<PendingIndex, PortError> {
        Ok(
            match read_flat_envelope(
                self.paths.root(),
                &self.index_path(team),
                SCHEMA_VERSION,
                self.clock.now_ms(),
            )? {
                Loaded::Found(index) => index,
                Loaded::Missing | Loaded::Quarantined { .. } => PendingIndex::default(),
            },
        )
    }

    /// Writes `intent` into its member file (`insert_only`: keep an existing id) and the index.
    /// False when `insert_only` found the id already there (nothing written).
    fn write(&self, intent: &ReportIntent, insert_only: bool) -> Result<bool, PortError> {
        let index_path = self.index_path(&intent.team_name);
        let member_path = self.member_path(&intent.team_name, &intent.member_name);
        let root = self.paths.root();
        let _index_lock = StoreLock::acquire(root, &index_path)?;
        let _member_lock = StoreLock::acquire(root, &member_path)?;
        let mut intents = self.read_member(&member_path)?;
        if insert_only && intents.contains_key(&intent.id) {
            return Ok(false);
        }
        intents.insert(intent.id.clone(), intent.clone());
        write_envelope(root, &member_path, SCHEMA_VERSION, "intents", &intents)?;
        let mut index = self.read_index(&intent.team_name)?;
        index.items.insert(intent.id.clone(), entry(intent));
        write_flat_envelope(root, &index_path, SCHEMA_VERSION, &index)?;
        Ok(true)
    }

    /// Moves pending intents of the legacy controller file into member files
    /// (ids kept, so running this again changes nothing) and names the
    /// members that got one now, each once, in the order first moved. The
    /// legacy file is left as it is: the controller owns it.
    fn migrate_legacy(&self, team: &str) -> Result<Vec<String>, PortError> {
        let path = self.team_store_dir(team).join("pending-reports.json");
        // The controller owns this file: read it, never quarantine or rewrite it.
        let legacy: BTreeMap<String, Value> =
            match self.paths.root().read(&path, MAX_STORE_FILE_BYTES)? {
                FileRead::Bytes(bytes) => serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .filter(|v| v.get("schemaVersion") == Some(&Value::from(1)))
                    .and_then(|v| serde_json::from_value(v.get("intents")?.clone()).ok())
                    .unwrap_or_default(),
                _ => return Ok(Vec::new()),
            };
        let mut migrated: Vec<String> = Vec::new();
        for (id, raw) in legacy {
            if raw.get("status").and_then(Value::as_str) != Some("pending") {
                continue;
            }
            let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_string);
            let request = raw.get("request").cloned().unwrap_or(Value::Null);
            let Some(member) = text("memberName")
                .or_else(|| request.get("memberName")?.as_str().map(str::to_string))
            else {
                continue;
            };
            if super::super::domain::names::validate_name(&member).is_err() {
                continue;
            }
            let written = self.write(
                &ReportIntent {
                    id,
                    team_name: team.to_string(),
                    member_name: member.clone(),
                    request,
                    reason: text("reason"),
                    status: IntentStatus::Pending,
                    recorded_at: text("recordedAt")
                        .unwrap_or_else(|| format_iso(self.clock.now_ms())),
                    processed_at: None,
                    rejection_code: None,
                    result_code: None,
                    retried_with_fresh_token: false,
                },
                true,
            )?;
            if written
                && !migrated
                    .iter()
                    .any(|m| member_key(m) == member_key(&member))
            {
                migrated.push(member);
            }
        }
        Ok(migrated)
    }
}

fn entry(intent: &ReportIntent) -> IndexEntry {
    IndexEntry {
        member_key: member_key(&intent.member_name),
        member_name: intent.member_name.clone(),
        status: intent.status,
        recorded_at: intent.recorded_at.clone(),
        processed_at: intent.processed_at.clone(),
    }
}

impl ReportIntentStore for FsReportIntentStore {
    fn record(&self, intent: &ReportIntent) -> Result<(), PortError> {
        self.write(intent, true).map(|_| ())
    }

    fn pending(&self, team: &TeamName) -> Result<PendingIntents, PortError> {
        let root = self.paths.root();
        if root.open_dir(&self.paths.team_dir(team))?.is_none() {
            return Ok(PendingIntents::default());
        }
        let migrated_members = self.migrate_legacy(team)?;
        // Member files are the truth; the index is rebuilt from them here.
        let mut all = Vec::new();
        for member_dir in self.paths.member_dirs(team)? {
            let path = member_dir.join(".member-work-sync").join("reports.json");
            all.extend(self.read_member(&path)?.into_values());
        }
        let index_path = self.index_path(team);
        {
            let _lock = StoreLock::acquire(root, &index_path)?;
            let index = PendingIndex {
                items: all.iter().map(|i| (i.id.clone(), entry(i))).collect(),
            };
            write_flat_envelope(root, &index_path, SCHEMA_VERSION, &index)?;
        }
        let mut pending: Vec<ReportIntent> = all
            .into_iter()
            .filter(|i| i.status == IntentStatus::Pending)
            .collect();
        pending.sort_by_key(|i| (parse_iso(&i.recorded_at).unwrap_or(i64::MIN), i.id.clone()));
        Ok(PendingIntents {
            intents: pending,
            migrated_members,
        })
    }

    fn finish(&self, intent: &ReportIntent) -> Result<(), PortError> {
        self.write(intent, false).map(|_| ())
    }
}
