//! The one-time import of a team's legacy JSON files into the database
//!, run
//! before every op of a read-write store, real work once per team per
//! process:
//!
//! 1. read the live files; when `store_imports` has no row for the team,
//!    also every archived generation (a lost marker must not lose rows);
//! 2. merge archived then live rows over the database's ([`super::merge`]): the JSON
//!    wins by identity, database rows the files lack stay;
//! 3. replace the team's rows in one transaction (also when only case
//!    aliases needed folding), read them back and compare;
//! 4. record `store_imports`, and only then rename each live file to its
//!    next `*.pre-sqlite[-N]` generation. A crash before the renames leaves
//!    the files for the next import, which overlays them again.
//!
//! A failed import is rethrown for a minute without retrying, so a poll
//! loop does not rerun the replace transaction every few seconds.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::error::SqliteStoreError;
use super::gateway::{MemberWorkSyncGateway, MEMBER_WORK_SYNC_STORE_ID};
use super::legacy_json::{LegacyFiles, LegacySnapshot};
use super::merge::merge_team_records;
use super::records::TeamRecords;
use super::snapshot::{domain_to_records, equivalent};

/// How long a failed import is rethrown (`IMPORT_FAILURE_RETRY_COOLDOWN_MS`).
const IMPORT_FAILURE_COOLDOWN: Duration = Duration::from_millis(60_000);

/// The importer of one store.
pub(crate) struct Importer {
    files: LegacyFiles,
    imported: Mutex<HashSet<String>>,
    failures: Mutex<HashMap<String, (Instant, Arc<SqliteStoreError>)>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Importer {
    /// The importer of the teams below `teams_base`.
    pub(crate) fn new(files: LegacyFiles) -> Self {
        Self {
            files,
            imported: Mutex::default(),
            failures: Mutex::default(),
        }
    }

    /// The legacy files it reads.
    pub(crate) fn files(&self) -> &LegacyFiles {
        &self.files
    }

    /// Imports `team` unless done in this process. The caller holds the
    /// team's lock.
    pub(crate) fn ensure_imported(
        &self,
        db: &dyn MemberWorkSyncGateway,
        team: &str,
        now_ms: i64,
        now_iso: &str,
    ) -> Result<(), SqliteStoreError> {
        if lock(&self.imported).contains(team) {
            return Ok(());
        }
        if let Some((at, error)) = lock(&self.failures).get(team) {
            if at.elapsed() < IMPORT_FAILURE_COOLDOWN {
                return Err(SqliteStoreError::ImportCoolingDown {
                    team: team.to_string(),
                    cause: error.to_string(),
                });
            }
        }
        match self.import_once(db, team, now_ms, now_iso) {
            Ok(()) => {
                lock(&self.failures).remove(team);
                lock(&self.imported).insert(team.to_string());
                Ok(())
            }
            Err(error) => {
                let error = Arc::new(error);
                lock(&self.failures).insert(team.to_string(), (Instant::now(), error.clone()));
                Err(SqliteStoreError::Import {
                    team: team.to_string(),
                    cause: error.to_string(),
                })
            }
        }
    }

    fn import_once(
        &self,
        db: &dyn MemberWorkSyncGateway,
        team: &str,
        now_ms: i64,
        now_iso: &str,
    ) -> Result<(), SqliteStoreError> {
        let legacy = |e| SqliteStoreError::Legacy(Box::new(e));
        let active = self.files.read_active(team, now_ms).map_err(legacy)?;
        let archived = if db.has_store_import(MEMBER_WORK_SYNC_STORE_ID, team)? {
            None
        } else {
            self.files.read_archived(team).map_err(legacy)?
        };
        let had_active = active.is_some();
        let snapshot = LegacySnapshot::combine(archived, active);
        let incoming = match &snapshot {
            Some(s) => domain_to_records(team, &s.to_domain()).map_err(team_rows(team))?,
            None => TeamRecords::default(),
        };
        let canonical = db.team_snapshot(team)?;
        let merged = merge_team_records(team, &canonical, &incoming).map_err(team_rows(team))?;
        let repair = !equivalent(&canonical, &merged);
        if snapshot.is_none() && !repair {
            return Ok(());
        }
        db.import_team(team, &merged)?;
        if !equivalent(&db.team_snapshot(team)?, &merged) {
            return Err(SqliteStoreError::Verification {
                what: "import",
                team: team.to_string(),
            });
        }
        db.record_store_import(
            MEMBER_WORK_SYNC_STORE_ID,
            team,
            merged.entry_count(),
            now_iso,
        )?;
        if had_active {
            for path in snapshot.iter().flat_map(|s| &s.files_to_archive) {
                self.files.archive(path).map_err(legacy)?;
            }
        }
        Ok(())
    }
}

fn team_rows(team: &str) -> impl Fn(super::mappers::BadColumn) -> SqliteStoreError + '_ {
    move |e| SqliteStoreError::TeamRows {
        team: team.to_string(),
        column: e.column,
        detail: e.detail,
    }
}
