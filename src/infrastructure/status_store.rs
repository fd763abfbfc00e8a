//! Per-member status files under `teams/<team>/members/<key>/.member-work-sync/`
//! (DATA.md §4), with the legacy v1 team-level `status.json` as read fallback.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::journal;
use super::json_store::{read_envelope, write_envelope, Loaded};
use super::lock::StoreLock;
use crate::application::ports::{
    AuditEvent, AuditJournal, Clock, PortError, StatusStore, StoredStatus,
};
use crate::domain::names::member_key;
use crate::domain::status::MemberStatus;
use crate::domain::time::format_iso;

/// Current envelope version of member files.
pub const STATUS_SCHEMA_VERSION: u64 = 2;

/// Where a team's store files live.
#[derive(Debug, Clone)]
pub struct StorePaths {
    teams_base: PathBuf,
}

impl StorePaths {
    /// Paths under `teams_base`.
    pub fn new(teams_base: PathBuf) -> Self {
        Self { teams_base }
    }

    /// `teams/<team>`.
    pub fn team_dir(&self, team: &str) -> PathBuf {
        self.teams_base.join(team)
    }

    /// `teams/<team>/members/<key>`.
    pub fn member_dir(&self, team: &str, member: &str) -> PathBuf {
        self.team_dir(team).join("members").join(member_key(member))
    }

    /// `teams/<team>/members/<key>/.member-work-sync/<file>`.
    pub fn member_file(&self, team: &str, member: &str, file: &str) -> PathBuf {
        self.member_dir(team, member)
            .join(".member-work-sync")
            .join(file)
    }

    /// Legacy `teams/<team>/.member-work-sync/status.json`.
    pub fn legacy_status(&self, team: &str) -> PathBuf {
        self.team_dir(team)
            .join(".member-work-sync")
            .join("status.json")
    }
}

/// [`StatusStore`] on the file system.
pub struct FsStatusStore {
    paths: StorePaths,
    clock: Arc<dyn Clock>,
}

impl FsStatusStore {
    /// A store under `paths`, naming quarantined files with `clock`.
    pub fn new(paths: StorePaths, clock: Arc<dyn Clock>) -> Self {
        Self { paths, clock }
    }

    fn read_legacy(&self, team: &str, member: &str) -> Result<Option<MemberStatus>, PortError> {
        let path = self.paths.legacy_status(team);
        let members: Loaded<BTreeMap<String, Value>> =
            read_envelope(&path, 1, "members", self.clock.now_ms())?;
        let Loaded::Found(members) = members else {
            return Ok(None);
        };
        // Old shapes that no longer parse are ignored, not quarantined: the file
        // holds other members' statuses too.
        Ok(members
            .get(&member_key(member))
            .and_then(|v| serde_json::from_value(v.clone()).ok()))
    }

    fn write_member_meta(&self, status: &MemberStatus) -> Result<(), PortError> {
        let path = self
            .paths
            .member_dir(&status.team_name, &status.member_name)
            .join("member.meta.json");
        if path.exists() {
            return Ok(());
        }
        let meta = serde_json::json!({
            "schemaVersion": 1,
            "memberName": status.member_name,
            "memberKey": member_key(&status.member_name),
            "updatedAt": format_iso(self.clock.now_ms()),
        });
        super::json_store::write_json(&path, &meta)?;
        Ok(())
    }
}

impl StatusStore for FsStatusStore {
    fn read(&self, team: &str, member: &str) -> Result<StoredStatus, PortError> {
        let path = self.paths.member_file(team, member, "status.json");
        match read_envelope::<MemberStatus>(
            &path,
            STATUS_SCHEMA_VERSION,
            "status",
            self.clock.now_ms(),
        )? {
            Loaded::Found(status) => Ok(StoredStatus::Current(status)),
            Loaded::Quarantined { reason, .. } => Ok(StoredStatus::Quarantined { reason }),
            Loaded::Missing => Ok(match self.read_legacy(team, member)? {
                Some(status) => StoredStatus::Legacy(status),
                None => StoredStatus::Missing,
            }),
        }
    }

    fn update(
        &self,
        team: &str,
        member: &str,
        build: &mut dyn FnMut(StoredStatus) -> MemberStatus,
    ) -> Result<MemberStatus, PortError> {
        let path = self.paths.member_file(team, member, "status.json");
        let _lock = StoreLock::acquire(&path)?;
        let previous = self.read(team, member)?;
        let status = build(previous);
        write_envelope(&path, STATUS_SCHEMA_VERSION, "status", &status)?;
        self.write_member_meta(&status)?;
        Ok(status)
    }
}

/// [`AuditJournal`] writing each member's `journal.jsonl`.
pub struct FsAuditJournal {
    paths: StorePaths,
}

impl FsAuditJournal {
    /// A journal under `paths`.
    pub fn new(paths: StorePaths) -> Self {
        Self { paths }
    }

    /// Path of a member's journal.
    pub fn path(&self, team: &str, member: &str) -> PathBuf {
        self.paths.member_file(team, member, "journal.jsonl")
    }
}

impl AuditJournal for FsAuditJournal {
    fn record(&self, event: AuditEvent) {
        let path = self.path(&event.team_name, &event.member_name);
        // The audit trail is best effort: a full disk must not fail a reconcile.
        let _ = journal::append(&path, &event);
    }
}
