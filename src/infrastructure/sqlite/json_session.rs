//! What one store call does before the JSON stores serve it in a gateway
//! JSON session (the JSON branch of the app's
//! `BackendSelectingMemberWorkSyncStore.run`), and a JSON session's purge.
//! The caller holds the team's lock.
//!
//! 1. A purge marker of the team is finished first: its live JSON deleted
//!    while the marker's generation is on disk. The marker stays for the
//!    next SQLite session, which clears the rows; while it is there the
//!    replica is not read (it holds the deleted team).
//! 2. Otherwise, once per team per session, the replica is read clean-only:
//!    missing, the live JSON is used as it is (unless the session requires a
//!    replica); dirty, malformed, invalid or another team's, the call fails
//!    (and so does every later one: the app fails closed rather than serve
//!    state older than the database's); clean, the live JSON is hydrated
//!    from it (`super::restore`).
//!
//! A JSON session never writes the replica.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use super::legacy_json::LegacyFiles;
use super::mappers::BadColumn;
use super::purge::{PurgeError, PurgeMarkers};
use super::replica::{Replica, ReplicaError};
use super::restore::{Restore, RestoreError};
use super::snapshot::{domain_to_records, records_to_domain};
use crate::infrastructure::safe_fs::TrustedRoot;

/// A JSON session's team-file step that failed.
#[derive(Debug, thiserror::Error)]
pub enum JsonSessionError {
    /// The replica cannot be used: the team's calls fail until it can.
    #[error("member-work-sync team \"{team}\": {source}")]
    Replica {
        /// The team whose replica was read.
        team: String,
        /// Why (the message names the replica file).
        source: ReplicaError,
    },
    /// The clean replica's rows could not be put under the team.
    #[error("member-work-sync team \"{team}\": replica {column} is invalid: {detail}")]
    ReplicaRows {
        /// The team whose replica was read.
        team: String,
        /// The snapshot field whose rows do not fit.
        column: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// Hydrating the JSON files from the replica failed.
    #[error("member-work-sync team \"{team}\": {source}")]
    Restore {
        /// The team whose files were being restored.
        team: String,
        /// The restore step that failed.
        source: RestoreError,
    },
    /// A purge step failed.
    #[error("member-work-sync team \"{team}\": {source}")]
    Purge {
        /// The team being purged.
        team: String,
        /// The purge step that failed.
        source: PurgeError,
    },
}

impl From<JsonSessionError> for crate::application::ports::PortError {
    fn from(error: JsonSessionError) -> Self {
        Self::Io(std::io::Error::other(error))
    }
}

/// The team files of a JSON session.
pub struct JsonSessionFiles {
    root: TrustedRoot,
    replica: Replica,
    markers: PurgeMarkers,
    files: LegacyFiles,
    /// `fallbackRequiresReplica`: a missing replica fails the call too.
    replica_required: bool,
    /// Teams hydrated (or found without a replica) in this session.
    hydrated: Mutex<HashSet<String>>,
}

fn wall_clock_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl JsonSessionFiles {
    /// The files of the teams below `teams_base`; `replica_required` as the
    /// app's `fallbackRequiresReplica`.
    pub fn new(teams_base: PathBuf, replica_required: bool) -> Self {
        Self {
            root: TrustedRoot::new(teams_base.clone()),
            replica: Replica::new(teams_base.clone()),
            markers: PurgeMarkers::new(teams_base.clone()),
            files: LegacyFiles::new(teams_base),
            replica_required,
            hydrated: Mutex::default(),
        }
    }

    /// Whether a missing replica fails a team's calls.
    pub(crate) fn replica_required(&self) -> bool {
        self.replica_required
    }

    fn purge_error(team: &str) -> impl Fn(PurgeError) -> JsonSessionError + '_ {
        move |source| JsonSessionError::Purge {
            team: team.to_string(),
            source,
        }
    }

    /// Runs before a JSON-store call of `team`.
    pub fn before_call(&self, team: &str) -> Result<(), JsonSessionError> {
        let purging = self.finish_json_purge(team)?;
        if self.is_hydrated(team) {
            return Ok(());
        }
        if !purging {
            self.hydrate(team)?;
        }
        self.hydrated_set().insert(team.to_string());
        Ok(())
    }

    fn hydrated_set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.hydrated.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn is_hydrated(&self, team: &str) -> bool {
        self.hydrated_set().contains(team)
    }

    /// Restores the live JSON from a clean replica, when there is one.
    fn hydrate(&self, team: &str) -> Result<(), JsonSessionError> {
        let snapshot = self
            .replica
            .read_clean(team, self.replica_required)
            .map_err(|source| JsonSessionError::Replica {
                team: team.to_string(),
                source,
            })?;
        let Some(snapshot) = snapshot else {
            return Ok(());
        };
        let bad = |e: BadColumn| JsonSessionError::ReplicaRows {
            team: team.to_string(),
            column: e.column,
            detail: e.detail,
        };
        // Under the routing team, as the app normalizes it (rows and back).
        let records = domain_to_records(team, &snapshot).map_err(bad)?;
        let snapshot = records_to_domain(team, &records).map_err(bad)?;
        Restore {
            root: &self.root,
            files: &self.files,
            now_ms: wall_clock_ms(),
        }
        .run(team, &snapshot)
        .map_err(|source| JsonSessionError::Restore {
            team: team.to_string(),
            source,
        })
    }

    /// Finishes the JSON half of a pending purge of `team`; `false` when
    /// there is no marker. A marker whose generation is gone (a same-name
    /// team made since) deletes nothing and stays: the app removes it here,
    /// but its next SQLite session would then merge the deleted team's
    /// clean replica back into the rows; kept, that session replaces the
    /// rows with the new team's live JSON and publishes the replica first.
    fn finish_json_purge(&self, team: &str) -> Result<bool, JsonSessionError> {
        let Some(marker) = self.markers.read(team).map_err(Self::purge_error(team))? else {
            return Ok(false);
        };
        if !marker.active_json_state_cleared && self.markers.is_current(&marker) {
            self.markers
                .purge_active_json(&self.files, &marker)
                .map_err(Self::purge_error(team))?;
        }
        Ok(true)
    }

    /// `purgeTeam` in a JSON session: the marker written uncleared, the live
    /// JSON deleted while its generation is on disk (folders synced), the
    /// marker written cleared. The marker stays; the next SQLite session
    /// clears the rows and removes it.
    pub fn purge_team(
        &self,
        team: &str,
        deletion_id: Option<&str>,
    ) -> Result<(), JsonSessionError> {
        let marker = self
            .markers
            .get_or_create(team, deletion_id)
            .map_err(Self::purge_error(team))?;
        self.markers
            .write(&marker, false)
            .map_err(Self::purge_error(team))?;
        self.markers
            .purge_active_json(&self.files, &marker)
            .map_err(Self::purge_error(team))?;
        self.hydrated_set().remove(team);
        Ok(())
    }
}
