//! The addon's store ports over the app's tables: statuses, metric events,
//! report intents and the outbox of every team, in one database, behind one
//! [`MemberWorkSyncGateway`]. The use cases see the same ports as with the
//! JSON files; what changes is where the rows live and that the outbox
//! state machine is the app's, op for op.
//!
//! Every call of a team runs under that team's mutex, keyed by the team
//! name exactly as given (the app's `KeyedMutex`), so a read-modify-write
//! of a status never interleaves with another call of the same team in this
//! process. Each op is one transaction of its own (the gateway's), as in
//! the app.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::ThreadId;

use super::connector::{Connector, DirectFile};
use super::direct::OpenMode;
use super::error::SqliteStoreError;
use super::gateway::MemberWorkSyncGateway;
use super::mappers::{
    intent_to_record, metric_event_records, planned_to_record, record_to_intent,
    record_to_metric_event, record_to_outbox_item, record_to_status, status_to_record, BadColumn,
};
use super::records::{EnsureRecordResult, OutboxMark, OutboxRecord, ProcessedIntent};
use super::team_files::{Access, TeamFiles};
use crate::application::ports::{
    Claimed, IntentStatus, MetricsStore, OutboxStore, PendingIntents, PortError, ReportIntent,
    ReportIntentStore, StatusBuild, StatusStore, StoredStatus, TeamPurge,
};
use crate::domain::js_semantics::js_trim;
use crate::domain::metrics::{events_for_write, MemberSummary, MetricEvent, MetricsIndex};
use crate::domain::names::{member_key, normalize_member_name, MemberName, TeamName};
use crate::domain::nudge::{AttemptEnd, EnsureOutcome, OutboxItem, PlannedNudge};
use crate::domain::status::MemberStatus;
use crate::domain::time::{format_iso, EpochMs};

/// One lock per team name (never removed: a process sees few teams).
///
/// Reentrant on its thread: a status update holds its team's lock while the
/// use case builds the new status, and that build reads the same team's
/// outbox and metrics through this store.
#[derive(Default)]
pub(crate) struct KeyedMutex {
    locks: Mutex<HashMap<String, Arc<TeamLock>>>,
}

/// The holder of one team's lock and how often it took it.
#[derive(Default)]
struct TeamLock {
    held: Mutex<Option<(ThreadId, usize)>>,
    released: Condvar,
}

impl TeamLock {
    fn acquire(&self) {
        let me = std::thread::current().id();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match held.as_mut() {
                None => {
                    *held = Some((me, 1));
                    return;
                }
                Some((owner, depth)) if *owner == me => {
                    *depth += 1;
                    return;
                }
                Some(_) => {
                    held = self
                        .released
                        .wait(held)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }

    fn release(&self) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, depth)) = held.as_mut() {
            *depth -= 1;
            if *depth == 0 {
                *held = None;
                self.released.notify_one();
            }
        }
    }
}

/// Releases a team lock when dropped (also when the work panics).
struct Held<'a>(&'a TeamLock);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl KeyedMutex {
    fn lock_of(&self, key: &str) -> Arc<TeamLock> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks.entry(key.to_string()).or_default().clone()
    }

    /// Runs `work` holding `key`'s lock.
    pub(crate) fn run<T>(&self, key: &str, work: impl FnOnce() -> T) -> T {
        let lock = self.lock_of(key);
        lock.acquire();
        let _held = Held(&lock);
        work()
    }
}

/// The SQLite store of one addon instance.
pub struct SqliteStore {
    connector: Connector,
    /// The team files kept in step with the rows (read-write stores only).
    team_files: Option<TeamFiles>,
    /// For error messages: the database path or the gateway's name.
    source: std::path::PathBuf,
    teams: KeyedMutex,
}

/// What a recovery lookup found (`findRecentRecoveryByIntent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryHit {
    /// The outbox id.
    pub id: String,
    /// The outbox item's status as stored (`pending`, `delivered`, ...).
    pub status: String,
    /// The inbox message id of its delivery.
    pub delivered_message_id: Option<String>,
    /// Its payload hash.
    pub payload_hash: String,
    /// Its last transition.
    pub updated_at: String,
}

impl SqliteStore {
    /// The store over `gateway`.
    pub fn new(gateway: Arc<dyn MemberWorkSyncGateway>) -> Self {
        Self::over(Connector::Ready(gateway))
    }

    /// The store over the database file at `path`, opened as `mode` says at
    /// the first call (and again when the file at the path changes).
    pub fn open_lazily(path: std::path::PathBuf, mode: OpenMode) -> Self {
        Self::over(Connector::Direct(DirectFile::new(path, mode)))
    }

    fn over(connector: Connector) -> Self {
        Self {
            source: connector.source(),
            connector,
            team_files: None,
            teams: KeyedMutex::default(),
        }
    }

    /// The store that also keeps the team files below `teams_base` in step
    /// with the rows, as the app's SQLite session does: the JSON replica
    ///. Without it (the read-only CLI) the store touches
    /// no file of a team.
    pub fn with_team_files(mut self, teams_base: std::path::PathBuf) -> Self {
        self.team_files = Some(TeamFiles::new(teams_base));
        self
    }

    /// The database was recovered at open (the app's ping answered
    /// `integrity: 'recovered'`): a dirty replica then fails a team's first
    /// call instead of being published over.
    pub(crate) fn database_recovered(&self) {
        if let Some(files) = &self.team_files {
            files.database_recovered();
        }
    }

    /// Deletes `team`'s member-work-sync state with a durable purge marker
    ///: its live JSON files and its rows (and those of its
    /// case aliases); `deletion_id` is the team's
    /// `config.json._backupIdentityId`, which fences the generation. A
    /// read-only store deletes nothing and says so.
    pub fn purge_team(&self, team: &TeamName, deletion_id: Option<&str>) -> Result<(), PortError> {
        self.teams.run(team, || match &self.team_files {
            None => Err(SqliteStoreError::ReadOnlyPurge {
                path: self.source.clone(),
                team: team.to_string(),
            }
            .into()),
            Some(files) => Ok(files.purge_team(self.db()?.as_ref(), team, deletion_id)?),
        })
    }

    /// Runs one call of `team` under its lock, inside the team-file
    /// protocol when the store has one.
    fn run<T, E: From<SqliteStoreError>>(
        &self,
        team: &str,
        access: Access,
        work: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        self.teams.run(team, || match &self.team_files {
            None => work(),
            Some(files) => files.around(self.db()?.as_ref(), team, access, work),
        })
    }

    fn db(&self) -> Result<Arc<dyn MemberWorkSyncGateway>, SqliteStoreError> {
        self.connector.gateway()
    }

    fn bad(&self, table: &'static str, key: &str) -> impl Fn(BadColumn) -> PortError + '_ {
        let key = key.to_string();
        move |e| {
            SqliteStoreError::BadColumn {
                path: self.source.clone(),
                table,
                key: key.clone(),
                column: e.column,
                detail: e.detail,
            }
            .into()
        }
    }

    fn read_status(&self, team: &str, member: &str) -> Result<StoredStatus, PortError> {
        let key = normalize_member_name(member);
        Ok(match self.db()?.status_read(team, &key)? {
            None => StoredStatus::Missing,
            Some(record) => StoredStatus::Current(
                record_to_status(&record)
                    .map_err(self.bad("member_work_sync_status", &format!("{team}/{key}")))?,
            ),
        })
    }

    fn write_status(&self, status: &MemberStatus) -> Result<(), PortError> {
        let key = format!("{}/{}", status.team_name, status.member_name);
        let record = status_to_record(status).map_err(self.bad("member_work_sync_status", &key))?;
        let events = self.event_records(status, &events_for_write(status))?;
        Ok(self.db()?.status_write(&record, &events)?)
    }

    fn event_records(
        &self,
        status: &MemberStatus,
        events: &[MetricEvent],
    ) -> Result<Vec<super::records::MetricEventRecord>, PortError> {
        metric_event_records(status, events).map_err(self.bad(
            "member_work_sync_metric_events",
            &format!("{}/{}", status.team_name, status.member_name),
        ))
    }

    fn item(&self, record: &OutboxRecord) -> Result<OutboxItem, PortError> {
        record_to_outbox_item(record).map_err(self.bad("member_work_sync_outbox", &record.id))
    }

    fn metrics_index(&self, team: &str) -> Result<MetricsIndex, PortError> {
        self.run(team, Access::Read, || {
            let mut index = MetricsIndex::default();
            for record in self.db()?.status_list(team)? {
                let status = record_to_status(&record).map_err(self.bad(
                    "member_work_sync_status",
                    &format!("{team}/{}", record.member_key),
                ))?;
                index
                    .members
                    .insert(member_key(&status.member_name), MemberSummary::of(&status));
            }
            index.recent_events = self
                .db()?
                .metric_events_list(team)?
                .iter()
                .map(|r| {
                    record_to_metric_event(r)
                        .map(Arc::new)
                        .map_err(self.bad("member_work_sync_metric_events", &r.id))
                })
                .collect::<Result<_, _>>()?;
            Ok(index)
        })
    }

    /// `countRecentDelivered`: the member's deliveries updated at or after
    /// `since` (inclusive), only those whose intent key starts with the
    /// trimmed `prefix` when one is given.
    pub fn count_recent_delivered(
        &self,
        team: &str,
        member: &str,
        since_iso: &str,
        prefix: Option<&str>,
    ) -> Result<usize, PortError> {
        let prefix = prefix.map(js_trim).filter(|p| !p.is_empty());
        self.run(team, Access::Read, || {
            Ok(self.db()?.outbox_count_recent_delivered(
                team,
                &normalize_member_name(member),
                since_iso,
                prefix,
            )?)
        })
    }

    /// `countDeliveredForAgenda`: deliveries of the (trimmed) fingerprint
    /// updated after `since` (exclusive); a blank fingerprint counts none.
    pub fn count_delivered_for_agenda(
        &self,
        team: &str,
        member: &str,
        fingerprint: &str,
        since_iso: Option<&str>,
    ) -> Result<usize, PortError> {
        let fingerprint = js_trim(fingerprint);
        if fingerprint.is_empty() {
            return Ok(0);
        }
        let since = since_iso.map(js_trim).filter(|s| !s.is_empty());
        self.run(team, Access::Read, || {
            Ok(self.db()?.outbox_count_delivered_for_agenda(
                team,
                &normalize_member_name(member),
                fingerprint,
                since,
            )?)
        })
    }

    /// `findDeliveredReviewPickupRequestEventIds`: which ids of `requested`
    /// (trimmed, sorted) a review pickup delivered to `member` carried.
    pub fn find_delivered_review_pickup_event_ids(
        &self,
        team: &str,
        member: &str,
        requested: &[String],
    ) -> Result<Vec<String>, PortError> {
        self.run(team, Access::Read, || {
            Ok(self.db()?.outbox_find_delivered_review_pickup_event_ids(
                team,
                &normalize_member_name(member),
                requested,
            )?)
        })
    }

    /// `findRecentRecoveryByIntent`: a blank key finds nothing.
    pub fn find_recent_recovery_by_intent(
        &self,
        team: &str,
        member: &str,
        intent_key: &str,
        since_iso: &str,
    ) -> Result<Option<RecoveryHit>, PortError> {
        let intent_key = js_trim(intent_key);
        if intent_key.is_empty() {
            return Ok(None);
        }
        let found = self.run(team, Access::Read, || {
            self.db()?.outbox_find_recent_recovery_by_intent(
                team,
                &normalize_member_name(member),
                intent_key,
                since_iso,
            )
        })?;
        Ok(found.map(|r| RecoveryHit {
            delivered_message_id: r.delivered_message_id.filter(|m| !m.is_empty()),
            id: r.id,
            status: r.status,
            payload_hash: r.payload_hash,
            updated_at: r.updated_at,
        }))
    }
}

impl StatusStore for SqliteStore {
    fn read(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
    ) -> Result<StoredStatus, PortError> {
        self.run(team_name, Access::Read, || {
            self.read_status(team_name, member_name)
        })
    }

    fn peek(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
    ) -> Result<StoredStatus, PortError> {
        // A read moves nothing here: a bad row is an error, not a file to set aside.
        StatusStore::read(self, team_name, member_name)
    }

    fn member_count(&self, team_name: &TeamName) -> Result<usize, PortError> {
        // The rows stand in for the JSON store's member folders: the cap on
        // names off the roster bounds them the same way.
        self.run(team_name, Access::Read, || {
            Ok(self.db()?.status_list(team_name)?.len())
        })
    }

    fn update(
        &self,
        team_name: &TeamName,
        member_name: &MemberName,
        build: StatusBuild<'_>,
    ) -> Result<MemberStatus, PortError> {
        self.run(team_name, Access::Mutation, || {
            let status = build(self.read_status(team_name, member_name)?);
            self.write_status(&status)?;
            Ok(status)
        })
    }

    fn update_all(
        &self,
        team_name: &TeamName,
        members: &[&MemberName],
        build: &mut dyn FnMut(&MemberName, StoredStatus) -> MemberStatus,
    ) -> Result<Vec<MemberStatus>, PortError> {
        // Each status is its own transaction (as the app writes them): after
        // a crash every member holds its old or its new status.
        self.run(team_name, Access::Mutation, || {
            let statuses = members
                .iter()
                .map(|member| Ok(build(member, self.read_status(team_name, member)?)))
                .collect::<Result<Vec<_>, PortError>>()?;
            statuses.iter().try_for_each(|s| self.write_status(s))?;
            Ok(statuses)
        })
    }
}

impl TeamPurge for SqliteStore {
    fn purge_team(&self, team: &TeamName, deletion_id: Option<&str>) -> Result<(), PortError> {
        SqliteStore::purge_team(self, team, deletion_id)
    }
}

impl MetricsStore for SqliteStore {
    fn record(&self, status: &MemberStatus, events: Vec<MetricEvent>) -> Result<(), PortError> {
        // The status write already stored the events of the status (one
        // transaction, as the app's `mws.status.write`): the same rows by id
        // are not written again (the app's gateway has no op for it); only
        // other events are.
        if events == events_for_write(status) {
            return Ok(());
        }
        let records = self.event_records(status, &events)?;
        self.run(&status.team_name, Access::Mutation, || {
            Ok(self
                .db()?
                .metric_events_record(&status.team_name, &records)?)
        })
    }

    fn read(&self, team_name: &TeamName) -> Result<Arc<MetricsIndex>, PortError> {
        self.metrics_index(team_name).map(Arc::new)
    }

    fn peek(&self, team_name: &TeamName) -> Result<Arc<MetricsIndex>, PortError> {
        self.metrics_index(team_name).map(Arc::new)
    }
}

impl ReportIntentStore for SqliteStore {
    fn record(&self, intent: &ReportIntent) -> Result<(), PortError> {
        let record = intent_to_record(intent)
            .map_err(self.bad("member_work_sync_report_intents", &intent.id))?;
        self.run(&intent.team_name, Access::Mutation, || {
            Ok(self.db()?.reports_append(&record)?)
        })
    }

    fn pending(&self, team_name: &TeamName) -> Result<PendingIntents, PortError> {
        let records = self.run(team_name, Access::Read, || {
            self.db()?.reports_list_pending(team_name)
        })?;
        let intents = records
            .iter()
            .map(|r| {
                record_to_intent(r).map_err(self.bad("member_work_sync_report_intents", &r.id))
            })
            .collect::<Result<_, _>>()?;
        // No legacy `pending-reports.json` is read in a SQLite session (the
        // importer's job), so none is moved.
        Ok(PendingIntents {
            intents,
            migrated_members: vec![],
        })
    }

    fn finish(&self, intent: &ReportIntent) -> Result<(), PortError> {
        if intent.status == IntentStatus::Pending {
            return Ok(());
        }
        let record = intent_to_record(intent)
            .map_err(self.bad("member_work_sync_report_intents", &intent.id))?;
        let result = ProcessedIntent {
            status: record.status,
            result_code: intent
                .result_code
                .clone()
                .or_else(|| intent.rejection_code.clone())
                .unwrap_or_default(),
            processed_at: intent.processed_at.clone().unwrap_or_default(),
        };
        self.run(&intent.team_name, Access::Mutation, || {
            Ok(self
                .db()?
                .reports_mark_processed(&intent.team_name, &intent.id, &result)?)
        })
    }
}

impl OutboxStore for SqliteStore {
    fn ensure(
        &self,
        team: &TeamName,
        member: &MemberName,
        planned: &PlannedNudge,
        now: EpochMs,
    ) -> Result<(OutboxItem, EnsureOutcome), PortError> {
        let now_iso = format_iso(now);
        let record = planned_to_record(team, member, planned, &now_iso)
            .map_err(self.bad("member_work_sync_outbox", &planned.id))?;
        let result = self.run(team, Access::Mutation, || {
            self.db()?.outbox_ensure_pending(&record, &now_iso, None)
        })?;
        Ok(match result {
            EnsureRecordResult::Created(row) => (self.item(&row)?, EnsureOutcome::Created),
            EnsureRecordResult::Existing(row) => (self.item(&row)?, EnsureOutcome::Existing),
            EnsureRecordResult::PayloadConflict { item, .. } => {
                (self.item(&item)?, EnsureOutcome::PayloadConflict)
            }
        })
    }

    fn member_items(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<Vec<OutboxItem>, PortError> {
        let rows = self.run(team, Access::Read, || {
            self.db()?
                .outbox_member_items(team, &normalize_member_name(member))
        })?;
        rows.iter().map(|r| self.item(r)).collect()
    }

    fn claim_due(
        &self,
        team: &TeamName,
        claimed_by: &str,
        limit: usize,
        now: EpochMs,
    ) -> Result<Claimed, PortError> {
        let rows = self.run(team, Access::Mutation, || {
            self.db()?
                .outbox_claim_due(team, claimed_by, &format_iso(now), limit)
        })?;
        Ok(Claimed {
            items: rows
                .iter()
                .map(|r| self.item(r))
                .collect::<Result<_, _>>()?,
            failures: Vec::new(),
        })
    }

    fn finish(
        &self,
        team: &TeamName,
        item: &OutboxItem,
        end: &AttemptEnd,
        now: EpochMs,
    ) -> Result<bool, PortError> {
        let generation = i64::from(item.attempt_generation);
        let mark = match end {
            AttemptEnd::Delivered => OutboxMark::Delivered {
                attempt_generation: generation,
                delivered_message_id: item.id.clone(),
                delivery_state: None,
                delivery_diagnostics_json: None,
            },
            AttemptEnd::Retryable {
                reason, retry_at, ..
            } => OutboxMark::Failed {
                attempt_generation: generation,
                error: reason.to_string(),
                retry_at: Some(format_iso(*retry_at)),
                retryable: true,
            },
            AttemptEnd::Superseded { reason } | AttemptEnd::PickupUndeliverable { reason } => {
                OutboxMark::Superseded {
                    reason: reason.clone(),
                }
            }
            AttemptEnd::Terminal { reason } => OutboxMark::Failed {
                attempt_generation: generation,
                error: reason.clone(),
                retry_at: None,
                retryable: false,
            },
        };
        self.run(team, Access::Mutation, || {
            Ok(self
                .db()?
                .outbox_mark(team, &item.id, &mark, &format_iso(now))?)
        })
    }

    fn refresh_index(&self, _team: &TeamName) -> Result<(), PortError> {
        // The table is its own index.
        Ok(())
    }

    fn teams_with_outbox(&self) -> Vec<TeamName> {
        // No list when the database cannot be read: the dispatch pass then
        // has nothing to do, and the next one asks again.
        self.db()
            .ok()
            .and_then(|db| db.outbox_open_teams().ok())
            .unwrap_or_default()
            .iter()
            .filter_map(|team| TeamName::parse(team).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_team_lock_is_reentrant_on_its_thread_and_exclusive_across_threads() {
        let teams = Arc::new(KeyedMutex::default());
        assert_eq!(teams.run("t", || teams.run("t", || 1)), 1);
        let inside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (teams, inside) = (teams.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        teams.run("t", || {
                            let before = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            std::thread::yield_now();
                            inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                            assert_eq!(before, 0, "two threads inside one team's lock");
                        })
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
    }
}
