//! What one store call does around its op in a SQLite session (the app's
//! `BackendSelectingMemberWorkSyncStore.run`), for a store that owns
//! the team's files (read-write; the read-only CLI never touches them):
//!
//! 0. a pending purge marker of the team is finished first ([`super::purge`]);
//! 1. at the first access to a team in this process, a clean replica is
//!    merged into the database (the app's JSON session may have run on it);
//! 2. before a mutation, and at that first access, the replica is marked
//!    dirty;
//! 3. the team's legacy JSON files are imported, once per process
//!    ([`super::importer`]), and the op runs;
//! 4. then the replica is rewritten clean with the team's whole snapshot,
//!    and the team counts as prepared. A failure here leaves the replica
//!    dirty and the team unprepared, so the next call publishes again.
//!
//! The caller holds the team's lock. A call made from inside another call
//! of the same team (the lock is reentrant) runs its op alone: the outer
//! call publishes once for both.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use super::error::SqliteStoreError;
use super::gateway::{MemberWorkSyncGateway, MEMBER_WORK_SYNC_STORE_ID};
use super::importer::Importer;
use super::legacy_json::LegacyFiles;
use super::mappers::BadColumn;
use super::merge::merge_team_records;
use super::purge::PurgeMarkers;
use super::replica::Replica;
use super::snapshot::{domain_to_records, equivalent, records_to_domain};
use crate::domain::time::format_iso;

/// Whether a store call changes the team's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// A read: publishes only at the team's first access.
    Read,
    /// A mutation: fenced by a dirty replica, published after.
    Mutation,
}

/// The team files one store keeps in step with the database.
pub(crate) struct TeamFiles {
    replica: Replica,
    importer: Importer,
    markers: PurgeMarkers,
    /// Teams whose replica was merged and published in this process.
    prepared: Mutex<HashSet<String>>,
    /// Teams with a call inside the protocol now (on the lock's thread).
    active: Mutex<HashSet<String>>,
    /// The database was rebuilt at open (the app's ping answered
    /// `integrity: 'recovered'`): a dirty replica may hold state the
    /// database lost, so it fails the call instead of being republished over.
    database_recovered: AtomicBool,
}

/// The wall clock as `toISOString()` prints it (the replica's `updatedAt`
/// is the app's `new Date()` too).
fn wall_clock_iso() -> String {
    format_iso(wall_clock_ms())
}

fn wall_clock_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn team_rows(team: &str) -> impl Fn(BadColumn) -> SqliteStoreError + '_ {
    move |e| SqliteStoreError::TeamRows {
        team: team.to_string(),
        column: e.column,
        detail: e.detail,
    }
}

/// Takes a team out of [`TeamFiles::active`] when its call ends.
struct Active<'a>(&'a TeamFiles, String);

impl Drop for Active<'_> {
    fn drop(&mut self) {
        lock(&self.0.active).remove(&self.1);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl TeamFiles {
    /// The files of the teams below `teams_base`.
    pub(crate) fn new(teams_base: PathBuf) -> Self {
        Self {
            replica: Replica::new(teams_base.clone()),
            importer: Importer::new(LegacyFiles::new(teams_base.clone())),
            markers: PurgeMarkers::new(teams_base),
            prepared: Mutex::default(),
            active: Mutex::default(),
            database_recovered: AtomicBool::new(false),
        }
    }

    /// The session's database was recovered at open (`integrity:
    /// 'recovered'`): from now on a dirty replica met at a team's first
    /// access fails the call.
    pub(crate) fn database_recovered(&self) {
        self.database_recovered.store(true, Ordering::SeqCst);
    }

    /// Runs `work` (the op) inside the protocol for `team`.
    pub(crate) fn around<T, E: From<SqliteStoreError>>(
        &self,
        db: &dyn MemberWorkSyncGateway,
        team: &str,
        access: Access,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        if !lock(&self.active).insert(team.to_string()) {
            return work();
        }
        let _active = Active(self, team.to_string());
        self.apply_pending_purge(db, team)?;
        let prepared = lock(&self.prepared).contains(team);
        if !prepared {
            self.merge_replica(db, team)?;
        }
        let publish = access == Access::Mutation || !prepared;
        if publish {
            self.replica
                .mark_dirty(team, &wall_clock_iso())
                .map_err(SqliteStoreError::from)?;
        }
        self.importer
            .ensure_imported(db, team, wall_clock_ms(), &wall_clock_iso())?;
        let result = work()?;
        if publish && self.publish(db, team).is_ok() {
            lock(&self.prepared).insert(team.to_string());
        }
        Ok(result)
    }

    /// Merges a clean replica into the team's rows (a dirty one is ignored
    /// when the database passed its integrity check, so it is the state to
    /// republish; after a recovered open it fails the call).
    fn merge_replica(
        &self,
        db: &dyn MemberWorkSyncGateway,
        team: &str,
    ) -> Result<(), SqliteStoreError> {
        let Some(snapshot) = self
            .replica
            .read_for_primary(team, !self.database_recovered.load(Ordering::SeqCst))?
        else {
            return Ok(());
        };
        let incoming = domain_to_records(team, &snapshot).map_err(team_rows(team))?;
        let canonical = db.team_snapshot(team)?;
        let merged = merge_team_records(team, &canonical, &incoming).map_err(team_rows(team))?;
        db.import_team(team, &merged)
    }

    /// Writes the replica clean with the team's rows as they are now.
    pub(crate) fn publish(
        &self,
        db: &dyn MemberWorkSyncGateway,
        team: &str,
    ) -> Result<(), SqliteStoreError> {
        let rows = db.team_snapshot(team)?;
        let snapshot = records_to_domain(team, &rows).map_err(team_rows(team))?;
        Ok(self
            .replica
            .write_clean(team, &snapshot, &wall_clock_iso())?)
    }

    /// Forgets that `team` was prepared (after a purge).
    pub(crate) fn forget(&self, team: &str) {
        lock(&self.prepared).remove(team);
    }

    /// Deletes `team`'s member-work-sync state (`purgeTeam` in a SQLite
    /// session): a durable marker first, then the live JSON files and the
    /// rows, the replica published empty, the marker removed. A crash
    /// anywhere leaves the marker, and the next access finishes the purge.
    /// The caller holds the team's lock.
    pub(crate) fn purge_team(
        &self,
        db: &dyn MemberWorkSyncGateway,
        team: &str,
        deletion_id: Option<&str>,
    ) -> Result<(), SqliteStoreError> {
        let marker = self.markers.get_or_create(team, deletion_id)?;
        self.markers.write(&marker, false)?;
        self.apply_pending_purge(db, team)?;
        self.forget(team);
        Ok(())
    }

    /// Finishes the JSON half of a marker's purge: deletes the live files
    /// when the marker's generation is still on disk; a same-name team made
    /// since keeps its files. `false` when there is no marker. The marker
    /// of a gone generation stays until the rows and the replica are
    /// published (the end of [`Self::apply_pending_purge`]): removed here, a
    /// crash before that publication left the old generation's clean
    /// replica, which the next process merged back into the rows.
    fn complete_json_purge(&self, team: &str) -> Result<bool, SqliteStoreError> {
        let Some(marker) = self.markers.read(team)? else {
            return Ok(false);
        };
        if !marker.active_json_state_cleared && self.markers.is_current(&marker) {
            self.markers
                .purge_active_json(self.importer.files(), &marker)?;
        }
        Ok(true)
    }

    /// Finishes a pending purge of `team`, when a marker says there is one:
    /// the rows become exactly what live JSON is left (normally none), the
    /// replica is published with them, and the marker goes.
    fn apply_pending_purge(
        &self,
        db: &dyn MemberWorkSyncGateway,
        team: &str,
    ) -> Result<(), SqliteStoreError> {
        if !self.complete_json_purge(team)? {
            return Ok(());
        }
        let active = self
            .importer
            .files()
            .read_active(team, wall_clock_ms())
            .map_err(|e| SqliteStoreError::Legacy(Box::new(e)))?;
        let domain = active.map(|a| a.to_domain()).unwrap_or_else(|| {
            serde_json::json!({"statuses": [], "reportIntents": [], "outboxItems": [], "metricEvents": [], "filesToArchive": []})
        });
        let expected = domain_to_records(team, &domain).map_err(team_rows(team))?;
        db.import_team(team, &expected)?;
        let round_trip = db.team_snapshot(team)?;
        if !equivalent(&round_trip, &expected) {
            return Err(SqliteStoreError::Verification {
                what: "pending primary purge",
                team: team.to_string(),
            });
        }
        db.record_store_import(
            MEMBER_WORK_SYNC_STORE_ID,
            team,
            expected.entry_count(),
            &wall_clock_iso(),
        )?;
        let snapshot = records_to_domain(team, &round_trip).map_err(team_rows(team))?;
        self.replica
            .write_clean(team, &snapshot, &wall_clock_iso())?;
        self.markers.remove(team)?;
        self.forget(team);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::sqlite::purge::{PurgeMarker, RootIdentity};

    /// A marker whose generation is gone (the team recreated) is removed
    /// only with the rest of the purge (rows, replica): a crash after its
    /// JSON half must leave it, or the next process merges the old
    /// generation's clean replica back into the rows.
    #[test]
    fn a_marker_of_a_gone_generation_stays_until_the_purge_is_published() {
        let dir = tempfile::tempdir().unwrap();
        let teams = dir.path().join("teams");
        std::fs::create_dir_all(teams.join("team-a")).unwrap();
        let files = TeamFiles::new(teams);
        let gone = PurgeMarker {
            team_name: "team-a".into(),
            deletion_identity_id: None,
            team_root_identity: Some(RootIdentity {
                dev: 1.0,
                ino: 2.0,
                birthtime_ms: 3.0,
            }),
            active_json_state_cleared: false,
            recovery_safe: true,
        };
        files.markers.write(&gone, false).unwrap();
        assert!(!files.markers.is_current(&gone));
        assert!(files.complete_json_purge("team-a").unwrap());
        assert!(files.markers.read("team-a").unwrap().is_some());
    }
}
