//! The app's worker ops on the addon's own SQLite connection (rusqlite,
//! bundled SQLite): for the CLI, tests and processes where no other SQLite
//! copy has the file open. Never inside the Electron process: POSIX locks
//! are per process, so this copy and the app's worker would not lock
//! against each other there.
//!
//! The connection is set up as the app's worker sets up its own (WAL,
//! `busy_timeout=5000`, `synchronous=NORMAL`). Every read-modify-write runs
//! in `BEGIN IMMEDIATE`, so against another process it waits for the write
//! lock (up to the busy timeout) instead of failing when its read turns into
//! a write. Nothing here renames or deletes a database file; the schema
//! version changes only through [`super::schema::migrate`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{
    params, Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
};

use super::error::SqliteStoreError;
use super::gateway::{DbResult, MemberWorkSyncGateway};
use super::identity::normalize_team_records;
use super::records::TeamRecords;
use super::records::{
    EnsureRecordResult, MetricEventRecord, OutboxMark, OutboxRecord, ProcessedIntent,
    ReportIntentRecord, StatusRecord, EVENT_COLUMNS, INTENT_COLUMNS, OUTBOX_COLUMNS,
    STATUS_COLUMNS,
};
use super::schema::{self, MEMBER_WORK_SYNC_TABLES};
use crate::domain::js_semantics::{js_trim, locale_compare};

mod metric_events;
mod outbox_rows;
mod team_rows;

use metric_events::{prune_events, upsert_events};
use outbox_rows::{
    can_claim, can_revive, insert_outbox_row, is_outbox_finished, parse_ms, read_outbox_row,
    replace_outbox_row,
};
use team_rows::{insert_team_records, list_team_snapshot};

/// How long a statement waits for another connection's lock: the app's.
const BUSY_TIMEOUT: Duration = Duration::from_millis(5000);
/// Metric events kept per team (`METRIC_EVENTS_CAP`).
pub(crate) const METRIC_EVENTS_CAP: usize = 200;

/// How the database is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Reads and writes; a new or older database gets the app's migrations.
    ReadWrite,
    /// `SQLITE_OPEN_READONLY`: writes nothing, not even the schema.
    ReadOnly,
}

/// One connection to the app's database, shared by the store's calls.
pub struct DirectDatabase {
    path: PathBuf,
    connection: Mutex<Connection>,
}

impl DirectDatabase {
    /// Opens `path` as the app's worker does: creates the folder and file if
    /// missing (read-write only), WAL, `busy_timeout=5000`,
    /// `synchronous=NORMAL`, a full integrity check, then the migrations
    /// when the database is below the app's version.
    pub fn open(path: &Path, mode: OpenMode) -> Result<Self, SqliteStoreError> {
        let open_error = |source| SqliteStoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut connection = match mode {
            OpenMode::ReadWrite => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|source| {
                        SqliteStoreError::CreateFolder {
                            path: path.to_path_buf(),
                            source,
                        }
                    })?;
                }
                let connection = Connection::open(path).map_err(open_error)?;
                connection
                    .pragma_update(None, "journal_mode", "WAL")
                    .map_err(open_error)?;
                connection
            }
            OpenMode::ReadOnly => Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(open_error)?,
        };
        connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        if mode == OpenMode::ReadWrite {
            connection
                .pragma_update(None, "synchronous", "NORMAL")
                .map_err(open_error)?;
        }
        let answer: String = connection
            .pragma_query_value(None, "integrity_check", |row| row.get(0))
            .map_err(open_error)?;
        if answer != "ok" {
            return Err(SqliteStoreError::Integrity {
                path: path.to_path_buf(),
                answer,
            });
        }
        match mode {
            OpenMode::ReadWrite => schema::migrate(&mut connection).map_err(open_error)?,
            OpenMode::ReadOnly => {
                let missing = MEMBER_WORK_SYNC_TABLES.iter().any(|table| {
                    connection
                        .query_row(
                            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
                            [table],
                            |_| Ok(()),
                        )
                        .optional()
                        .ok()
                        .flatten()
                        .is_none()
                });
                if missing {
                    return Err(SqliteStoreError::MissingTables {
                        path: path.to_path_buf(),
                        version: schema::schema_version(&connection).unwrap_or(0),
                    });
                }
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            connection: Mutex::new(connection),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the connection left no transaction open
        // (rusqlite rolls back on drop), so the connection is still usable.
        self.connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn sql_error(&self, op: &'static str) -> impl Fn(rusqlite::Error) -> SqliteStoreError + '_ {
        move |source| SqliteStoreError::Sql {
            path: self.path.clone(),
            op,
            source,
        }
    }

    /// Runs `work` in one `BEGIN IMMEDIATE` transaction, committed when it
    /// returns `Ok`, rolled back otherwise.
    fn write<T>(
        &self,
        op: &'static str,
        work: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> DbResult<T> {
        let mut connection = self.lock();
        let transaction = connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(self.sql_error(op))?;
        let result = work(&transaction).map_err(self.sql_error(op))?;
        transaction.commit().map_err(self.sql_error(op))?;
        Ok(result)
    }

    /// Runs one read outside a transaction (autocommit), as the app reads.
    fn read<T>(
        &self,
        op: &'static str,
        work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> DbResult<T> {
        let connection = self.lock();
        work(&connection).map_err(self.sql_error(op))
    }
}

pub(super) fn query_all<T>(
    connection: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<Vec<T>> {
    let mut statement = connection.prepare_cached(sql)?;
    let rows = statement.query_map(params, map)?;
    rows.collect()
}

impl MemberWorkSyncGateway for DirectDatabase {
    fn status_read(&self, team: &str, member_key: &str) -> DbResult<Option<StatusRecord>> {
        self.read("mws.status.read", |c| {
            c.prepare_cached(&format!(
                "SELECT {STATUS_COLUMNS} FROM member_work_sync_status WHERE team_name = ?1 AND member_key = ?2"
            ))?
            .query_row(params![team, member_key], StatusRecord::from_row)
            .optional()
        })
    }

    fn status_write(&self, record: &StatusRecord, events: &[MetricEventRecord]) -> DbResult<()> {
        self.write("mws.status.write", |t| {
            t.prepare_cached(&format!(
                "INSERT INTO member_work_sync_status ({STATUS_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                 ON CONFLICT (team_name, member_key) DO UPDATE SET member_name = excluded.member_name, \
                 state = excluded.state, evaluated_at = excluded.evaluated_at, \
                 provider_id = excluded.provider_id, status_json = excluded.status_json"
            ))?
            .execute(params![
                record.team_name,
                record.member_key,
                record.member_name,
                record.state,
                record.evaluated_at,
                record.provider_id,
                record.status_json,
            ])?;
            upsert_events(t, events)?;
            prune_events(t, &record.team_name)
        })
    }

    fn status_list(&self, team: &str) -> DbResult<Vec<StatusRecord>> {
        self.read("mws.status.list", |c| {
            query_all(
                c,
                &format!("SELECT {STATUS_COLUMNS} FROM member_work_sync_status WHERE team_name = ?1 ORDER BY member_key ASC"),
                [team],
                StatusRecord::from_row,
            )
        })
    }

    fn metric_events_list(&self, team: &str) -> DbResult<Vec<MetricEventRecord>> {
        self.read("mws.metricEvents.list", |c| {
            query_all(
                c,
                &format!("SELECT {EVENT_COLUMNS} FROM member_work_sync_metric_events WHERE team_name = ?1 ORDER BY recorded_at ASC"),
                [team],
                MetricEventRecord::from_row,
            )
        })
    }

    fn metric_events_record(&self, team: &str, events: &[MetricEventRecord]) -> DbResult<()> {
        self.write("mws.metricEvents.record", |t| {
            upsert_events(t, events)?;
            prune_events(t, team)
        })
    }

    fn reports_append(&self, record: &ReportIntentRecord) -> DbResult<()> {
        self.write("mws.reports.append", |t| {
            let current = t
                .prepare_cached(&format!(
                    "SELECT {INTENT_COLUMNS} FROM member_work_sync_report_intents WHERE team_name = ?1 AND id = ?2"
                ))?
                .query_row(params![record.team_name, record.id], ReportIntentRecord::from_row)
                .optional()?;
            if current.as_ref().is_some_and(|c| c.status != "pending") {
                return Ok(());
            }
            let (reason, recorded_at) = match &current {
                Some(c) => (&c.reason, &c.recorded_at),
                None => (&record.reason, &record.recorded_at),
            };
            t.prepare_cached(&format!(
                "INSERT INTO member_work_sync_report_intents ({INTENT_COLUMNS}) \
                 VALUES (?1, ?2, ?3, ?4, 'pending', ?5, ?6, NULL, NULL, ?7) \
                 ON CONFLICT (team_name, id) DO UPDATE SET member_key = excluded.member_key, \
                 member_name = excluded.member_name, status = excluded.status, \
                 reason = excluded.reason, recorded_at = excluded.recorded_at, \
                 processed_at = excluded.processed_at, result_code = excluded.result_code, \
                 request_json = excluded.request_json"
            ))?
            .execute(params![
                record.team_name,
                record.id,
                record.member_key,
                record.member_name,
                reason,
                recorded_at,
                record.request_json,
            ])
            .map(drop)
        })
    }

    fn reports_list_pending(&self, team: &str) -> DbResult<Vec<ReportIntentRecord>> {
        self.read("mws.reports.listPending", |c| {
            query_all(
                c,
                &format!("SELECT {INTENT_COLUMNS} FROM member_work_sync_report_intents WHERE team_name = ?1 AND status = 'pending' ORDER BY recorded_at ASC"),
                [team],
                ReportIntentRecord::from_row,
            )
        })
    }

    fn reports_mark_processed(
        &self,
        team: &str,
        id: &str,
        result: &ProcessedIntent,
    ) -> DbResult<()> {
        // One statement: atomic on its own (the app runs it in autocommit).
        self.read("mws.reports.markProcessed", |c| {
            c.prepare_cached(
                "UPDATE member_work_sync_report_intents SET status = ?3, result_code = ?4, processed_at = ?5 \
                 WHERE team_name = ?1 AND id = ?2 AND status = 'pending'",
            )?
            .execute(params![team, id, result.status, result.result_code, result.processed_at])
            .map(drop)
        })
    }

    fn outbox_ensure_pending(
        &self,
        record: &OutboxRecord,
        now_iso: &str,
        next_attempt_at: Option<&str>,
    ) -> DbResult<EnsureRecordResult> {
        self.write("mws.outbox.ensurePending", |t| {
            let Some(current) = read_outbox_row(t, &record.team_name, &record.id)? else {
                let created = OutboxRecord {
                    status: "pending".into(),
                    attempt_generation: 0,
                    claimed_by: None,
                    claimed_at: None,
                    delivered_message_id: None,
                    delivery_state: None,
                    last_error: None,
                    delivery_diagnostics_json: None,
                    next_attempt_at: next_attempt_at.map(str::to_string),
                    created_at: now_iso.to_string(),
                    updated_at: now_iso.to_string(),
                    ..record.clone()
                };
                insert_outbox_row(t, &created)?;
                return Ok(EnsureRecordResult::Created(created));
            };
            if current.payload_hash != record.payload_hash {
                if matches!(current.status.as_str(), "delivered" | "failed_terminal") {
                    return Ok(EnsureRecordResult::PayloadConflict {
                        existing_payload_hash: current.payload_hash.clone(),
                        requested_payload_hash: record.payload_hash.clone(),
                        item: current,
                    });
                }
                let generation =
                    current.attempt_generation + i64::from(current.status == "claimed");
                let next = OutboxRecord {
                    agenda_fingerprint: record.agenda_fingerprint.clone(),
                    payload_hash: record.payload_hash.clone(),
                    payload_json: record.payload_json.clone(),
                    work_sync_intent: record.work_sync_intent.clone(),
                    work_sync_intent_key: record.work_sync_intent_key.clone(),
                    review_request_event_ids_json: record.review_request_event_ids_json.clone(),
                    status: "pending".into(),
                    attempt_generation: generation,
                    claimed_by: None,
                    claimed_at: None,
                    last_error: None,
                    next_attempt_at: next_attempt_at.map(str::to_string),
                    updated_at: now_iso.to_string(),
                    ..current
                };
                replace_outbox_row(t, &next)?;
                return Ok(EnsureRecordResult::Existing(next));
            }
            if can_revive(&current.status) {
                let next = OutboxRecord {
                    status: "pending".into(),
                    claimed_by: None,
                    claimed_at: None,
                    last_error: None,
                    next_attempt_at: next_attempt_at.map(str::to_string),
                    updated_at: now_iso.to_string(),
                    ..current
                };
                replace_outbox_row(t, &next)?;
                return Ok(EnsureRecordResult::Existing(next));
            }
            Ok(EnsureRecordResult::Existing(current))
        })
    }

    fn outbox_claim_due(
        &self,
        team: &str,
        claimed_by: &str,
        now_iso: &str,
        limit: usize,
    ) -> DbResult<Vec<OutboxRecord>> {
        let now_ms = parse_ms(Some(now_iso));
        self.write("mws.outbox.claimDue", |t| {
            let mut due: Vec<OutboxRecord> = query_all(
                t,
                &format!(
                    "SELECT {OUTBOX_COLUMNS} FROM member_work_sync_outbox \
                     WHERE (team_name = ?1 AND status IN ('pending', 'failed_retryable', 'claimed'))"
                ),
                [team],
                OutboxRecord::from_row,
            )?
            .into_iter()
            .filter(|row| can_claim(row, now_ms))
            .collect();
            // Stable, as Array.prototype.sort is: ties keep the row order.
            due.sort_by(|left, right| {
                let time = |row: &OutboxRecord| row.next_attempt_at.clone().unwrap_or_else(|| row.updated_at.clone());
                locale_compare(&time(left), &time(right))
            });
            due.truncate(limit);
            due.into_iter()
                .map(|item| {
                    let next = OutboxRecord {
                        status: "claimed".into(),
                        attempt_generation: item.attempt_generation + 1,
                        claimed_by: Some(claimed_by.to_string()),
                        claimed_at: Some(now_iso.to_string()),
                        updated_at: now_iso.to_string(),
                        next_attempt_at: None,
                        last_error: None,
                        ..item
                    };
                    replace_outbox_row(t, &next).map(|()| next)
                })
                .collect()
        })
    }

    fn outbox_mark(
        &self,
        team: &str,
        id: &str,
        mark: &OutboxMark,
        now_iso: &str,
    ) -> DbResult<bool> {
        let op = match mark {
            OutboxMark::Delivered { .. } => "mws.outbox.markDelivered",
            OutboxMark::Superseded { .. } => "mws.outbox.markSuperseded",
            OutboxMark::Failed { .. } => "mws.outbox.markFailed",
        };
        self.write(op, |t| {
            let Some(current) = read_outbox_row(t, team, id)? else {
                return Ok(false);
            };
            let holds_claim = |generation: i64| {
                current.status == "claimed" && current.attempt_generation == generation
            };
            let next = match mark {
                OutboxMark::Delivered {
                    attempt_generation,
                    delivered_message_id,
                    delivery_state,
                    delivery_diagnostics_json,
                } => {
                    if !holds_claim(*attempt_generation) {
                        return Ok(false);
                    }
                    OutboxRecord {
                        status: "delivered".into(),
                        delivered_message_id: Some(delivered_message_id.clone()),
                        delivery_state: delivery_state.clone().or(current.delivery_state.clone()),
                        delivery_diagnostics_json: delivery_diagnostics_json
                            .clone()
                            .or(current.delivery_diagnostics_json.clone()),
                        last_error: None,
                        next_attempt_at: None,
                        updated_at: now_iso.to_string(),
                        ..current.clone()
                    }
                }
                OutboxMark::Superseded { reason } => {
                    if is_outbox_finished(&current.status) {
                        return Ok(false);
                    }
                    OutboxRecord {
                        status: "superseded".into(),
                        last_error: Some(reason.clone()),
                        updated_at: now_iso.to_string(),
                        ..current.clone()
                    }
                }
                OutboxMark::Failed {
                    attempt_generation,
                    error,
                    retry_at,
                    retryable,
                } => {
                    if !holds_claim(*attempt_generation) {
                        return Ok(false);
                    }
                    OutboxRecord {
                        status: if *retryable {
                            "failed_retryable"
                        } else {
                            "failed_terminal"
                        }
                        .into(),
                        last_error: Some(error.clone()),
                        next_attempt_at: if *retryable { retry_at.clone() } else { None },
                        updated_at: now_iso.to_string(),
                        ..current.clone()
                    }
                }
            };
            replace_outbox_row(t, &next)?;
            Ok(true)
        })
    }

    fn outbox_count_recent_delivered(
        &self,
        team: &str,
        member_key: &str,
        since_iso: &str,
        intent_key_prefix: Option<&str>,
    ) -> DbResult<usize> {
        let keys: Vec<Option<String>> = self.read("mws.outbox.countRecentDelivered", |c| {
            query_all(
                c,
                "SELECT work_sync_intent_key FROM member_work_sync_outbox WHERE team_name = ?1 \
                 AND member_key = ?2 AND status = 'delivered' AND updated_at >= ?3",
                params![team, member_key, since_iso],
                |row| row.get(0),
            )
        })?;
        Ok(match intent_key_prefix.filter(|p| !p.is_empty()) {
            None => keys.len(),
            Some(prefix) => keys
                .iter()
                .filter(|key| key.as_deref().is_some_and(|k| k.starts_with(prefix)))
                .count(),
        })
    }

    fn outbox_count_delivered_for_agenda(
        &self,
        team: &str,
        member_key: &str,
        agenda_fingerprint: &str,
        since_iso: Option<&str>,
    ) -> DbResult<usize> {
        self.read("mws.outbox.countDeliveredForAgenda", |c| {
            let base = "SELECT count(*) FROM member_work_sync_outbox WHERE team_name = ?1 \
                        AND member_key = ?2 AND status = 'delivered' AND agenda_fingerprint = ?3";
            let count: i64 = match since_iso.filter(|s| !s.is_empty()) {
                Some(since) => c.query_row(
                    &format!("{base} AND updated_at > ?4"),
                    params![team, member_key, agenda_fingerprint, since],
                    |row| row.get(0),
                )?,
                None => {
                    c.query_row(base, params![team, member_key, agenda_fingerprint], |row| {
                        row.get(0)
                    })?
                }
            };
            Ok(usize::try_from(count).unwrap_or(0))
        })
    }

    fn outbox_find_delivered_review_pickup_event_ids(
        &self,
        team: &str,
        member_key: &str,
        requested: &[String],
    ) -> DbResult<Vec<String>> {
        let requested: BTreeSet<&str> = requested
            .iter()
            .map(|id| js_trim(id))
            .filter(|id| !id.is_empty())
            .collect();
        if requested.is_empty() {
            return Ok(Vec::new());
        }
        let arrays: Vec<Option<String>> = self.read("mws.outbox.findDeliveredReviewPickupEventIds", |c| {
            query_all(
                c,
                "SELECT review_request_event_ids_json FROM member_work_sync_outbox WHERE team_name = ?1 \
                 AND member_key = ?2 AND status = 'delivered' AND work_sync_intent = 'review_pickup'",
                params![team, member_key],
                |row| row.get(0),
            )
        })?;
        let mut found: Vec<String> = arrays
            .iter()
            .flatten()
            .filter(|json| !json.is_empty())
            .filter_map(|json| serde_json::from_str::<Vec<serde_json::Value>>(json).ok())
            .flatten()
            .filter_map(|id| id.as_str().map(|id| js_trim(id).to_string()))
            .filter(|id| requested.contains(id.as_str()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        crate::domain::js_semantics::sort_like_v8(&mut found, |a, b| locale_compare(a, b));
        Ok(found)
    }

    fn outbox_find_recent_recovery_by_intent(
        &self,
        team: &str,
        member_key: &str,
        intent_key: &str,
        since_iso: &str,
    ) -> DbResult<Option<OutboxRecord>> {
        let mut rows: Vec<OutboxRecord> =
            self.read("mws.outbox.findRecentRecoveryByIntent", |c| {
                query_all(
                    c,
                    &format!(
                    "SELECT {OUTBOX_COLUMNS} FROM member_work_sync_outbox WHERE team_name = ?1 \
                     AND member_key = ?2 AND work_sync_intent_key = ?3 AND updated_at >= ?4"
                ),
                    params![team, member_key, intent_key, since_iso],
                    OutboxRecord::from_row,
                )
            })?;
        rows.retain(|row| row.status != "failed_terminal" && row.status != "superseded");
        rows.sort_by(|left, right| locale_compare(&right.updated_at, &left.updated_at));
        Ok(rows.into_iter().next())
    }

    fn outbox_member_items(&self, team: &str, member_key: &str) -> DbResult<Vec<OutboxRecord>> {
        self.read("mws.outbox.memberItems", |c| {
            query_all(
                c,
                &format!(
                    "SELECT {OUTBOX_COLUMNS} FROM member_work_sync_outbox WHERE team_name = ?1 \
                     AND member_key = ?2 ORDER BY id"
                ),
                params![team, member_key],
                OutboxRecord::from_row,
            )
        })
    }

    fn outbox_open_teams(&self) -> DbResult<Vec<String>> {
        self.read("mws.outbox.openTeams", |c| {
            query_all(
                c,
                "SELECT DISTINCT team_name FROM member_work_sync_outbox \
                 WHERE status IN ('pending', 'failed_retryable', 'claimed') ORDER BY team_name",
                [],
                |row| row.get(0),
            )
        })
    }

    fn team_snapshot(&self, team: &str) -> DbResult<TeamRecords> {
        self.read("mws.snapshot.list", |c| list_team_snapshot(c, team))
    }

    fn import_team(&self, team: &str, records: &TeamRecords) -> DbResult<()> {
        let mut records = records.clone();
        normalize_team_records(team, &mut records).map_err(|e| SqliteStoreError::BadColumn {
            path: self.path.clone(),
            table: "member_work_sync_*",
            key: team.to_string(),
            column: e.column,
            detail: e.detail,
        })?;
        self.write("mws.importTeam", |t| {
            let current = list_team_snapshot(t, team)?;
            let mut aliases: BTreeSet<&str> = BTreeSet::from([team]);
            aliases.extend(current.statuses.iter().map(|r| r.team_name.as_str()));
            aliases.extend(current.report_intents.iter().map(|r| r.team_name.as_str()));
            aliases.extend(current.outbox_items.iter().map(|r| r.team_name.as_str()));
            aliases.extend(current.metric_events.iter().map(|r| r.team_name.as_str()));
            for alias in aliases {
                for table in [
                    "member_work_sync_status",
                    "member_work_sync_report_intents",
                    "member_work_sync_outbox",
                    "member_work_sync_metric_events",
                ] {
                    t.execute(
                        &format!("DELETE FROM {table} WHERE team_name = ?1"),
                        [alias],
                    )?;
                }
            }
            insert_team_records(t, &records)
        })
    }

    fn record_store_import(
        &self,
        store_id: &str,
        team: &str,
        entry_count: usize,
        imported_at: &str,
    ) -> DbResult<()> {
        self.read("storeImports.record", |c| {
            c.prepare_cached(
                "INSERT INTO store_imports (store_id, team_name, imported_at, entry_count) \
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (store_id, team_name) DO UPDATE SET \
                 imported_at = excluded.imported_at, entry_count = excluded.entry_count",
            )?
            .execute(params![store_id, team, imported_at, entry_count as i64])
            .map(drop)
        })
    }

    fn has_store_import(&self, store_id: &str, team: &str) -> DbResult<bool> {
        self.read("storeImports.has", |c| {
            c.prepare_cached("SELECT 1 FROM store_imports WHERE store_id = ?1 AND team_name = ?2")?
                .query_row(params![store_id, team], |_| Ok(()))
                .optional()
                .map(|found| found.is_some())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn item(id: &str) -> OutboxRecord {
        OutboxRecord {
            team_name: "team-a".into(),
            id: id.into(),
            member_key: "bob".into(),
            member_name: "bob".into(),
            agenda_fingerprint: "agenda:v1:x".into(),
            payload_hash: "h".into(),
            status: "pending".into(),
            attempt_generation: 0,
            claimed_by: None,
            claimed_at: None,
            delivered_message_id: None,
            delivery_state: None,
            last_error: None,
            next_attempt_at: None,
            created_at: String::new(),
            updated_at: String::new(),
            work_sync_intent: "agenda_sync".into(),
            work_sync_intent_key: None,
            review_request_event_ids_json: None,
            delivery_diagnostics_json: None,
            payload_json: "{}".into(),
        }
    }

    #[test]
    fn a_claim_waits_for_another_connections_write_lock_instead_of_failing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.db");
        let db = DirectDatabase::open(&path, OpenMode::ReadWrite).unwrap();
        let now = "2026-07-07T10:00:00.000Z";
        db.outbox_ensure_pending(&item("out-1"), now, None).unwrap();

        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch(
                "BEGIN IMMEDIATE; UPDATE member_work_sync_outbox SET last_error = 'held'",
            )
            .unwrap();
        let released = Arc::new(AtomicBool::new(false));
        let release = {
            let released = released.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_secs(1));
                released.store(true, Ordering::SeqCst);
                holder.execute_batch("COMMIT").unwrap();
            })
        };
        let claimed = db.outbox_claim_due("team-a", "me", now, 10).unwrap();
        // The claim ran after the other writer committed: it saw its write
        // (and cleared it, as a claim does) instead of failing with SQLITE_BUSY.
        assert!(released.load(Ordering::SeqCst));
        assert_eq!(claimed.len(), 1);
        assert_eq!(
            (
                claimed[0].attempt_generation,
                claimed[0].last_error.as_deref()
            ),
            (1, None)
        );
        release.join().unwrap();
    }
}
