//! The store's one seam to the database: the app's `mws.*` worker ops, row
//! for row. [`super::direct::DirectDatabase`] runs them with
//! the addon's own SQLite; [`super::app_gateway::AppGateway`] runs them as
//! calls to the app's storage gateway (gateway mode, inside Electron), so the
//! store above never knows which process holds the file.

use super::error::SqliteStoreError;
use super::records::TeamRecords;
use super::records::{
    EnsureRecordResult, MetricEventRecord, OutboxMark, OutboxRecord, ProcessedIntent,
    ReportIntentRecord, StatusRecord,
};

/// The `store_imports` id of member-work-sync's rows.
pub(crate) const MEMBER_WORK_SYNC_STORE_ID: &str = "member-work-sync";

/// A result of the store's database.
pub(crate) type DbResult<T> = Result<T, SqliteStoreError>;

/// The member-work-sync operations on the app's tables, with the app's
/// semantics: each mutation one transaction, terminal outbox states never
/// change, the claim generation an optimistic lock.
pub trait MemberWorkSyncGateway: Send + Sync {
    /// `mws.status.read`: the row of `(team, member_key)`, exact team match.
    fn status_read(&self, team: &str, member_key: &str) -> DbResult<Option<StatusRecord>>;
    /// `mws.status.write`: upserts the status and its metric events, then
    /// keeps the team's 200 newest events.
    fn status_write(&self, record: &StatusRecord, events: &[MetricEventRecord]) -> DbResult<()>;
    /// `mws.status.list`: the team's statuses by member key.
    fn status_list(&self, team: &str) -> DbResult<Vec<StatusRecord>>;
    /// `mws.metricEvents.list`: the team's events, oldest first.
    fn metric_events_list(&self, team: &str) -> DbResult<Vec<MetricEventRecord>>;
    /// Upserts events (by id) and keeps the team's 200 newest: the event
    /// half of `mws.status.write`, for a metrics write of its own.
    fn metric_events_record(&self, team: &str, events: &[MetricEventRecord]) -> DbResult<()>;
    /// `mws.reports.append`: a processed intent stays as it is; a pending
    /// one keeps its reason and first record time.
    fn reports_append(&self, record: &ReportIntentRecord) -> DbResult<()>;
    /// `mws.reports.listPending`: oldest first.
    fn reports_list_pending(&self, team: &str) -> DbResult<Vec<ReportIntentRecord>>;
    /// `mws.reports.markProcessed`: only a pending intent changes.
    fn reports_mark_processed(
        &self,
        team: &str,
        id: &str,
        result: &ProcessedIntent,
    ) -> DbResult<()>;
    /// `mws.outbox.ensurePending`.
    fn outbox_ensure_pending(
        &self,
        record: &OutboxRecord,
        now_iso: &str,
        next_attempt_at: Option<&str>,
    ) -> DbResult<EnsureRecordResult>;
    /// `mws.outbox.claimDue`: the claimed rows, as written.
    fn outbox_claim_due(
        &self,
        team: &str,
        claimed_by: &str,
        now_iso: &str,
        limit: usize,
    ) -> DbResult<Vec<OutboxRecord>>;
    /// `mws.outbox.markDelivered`, `.markSuperseded` or `.markFailed`;
    /// `true` when the row changed.
    fn outbox_mark(&self, team: &str, id: &str, mark: &OutboxMark, now_iso: &str)
        -> DbResult<bool>;
    /// `mws.outbox.countRecentDelivered`: `updated_at >= since`; with a
    /// prefix, only intent keys starting with it.
    fn outbox_count_recent_delivered(
        &self,
        team: &str,
        member_key: &str,
        since_iso: &str,
        intent_key_prefix: Option<&str>,
    ) -> DbResult<usize>;
    /// `mws.outbox.countDeliveredForAgenda`: `updated_at > since` when given.
    fn outbox_count_delivered_for_agenda(
        &self,
        team: &str,
        member_key: &str,
        agenda_fingerprint: &str,
        since_iso: Option<&str>,
    ) -> DbResult<usize>;
    /// `mws.outbox.findDeliveredReviewPickupEventIds`: the requested ids
    /// (trimmed) a delivered review pickup carried, sorted.
    fn outbox_find_delivered_review_pickup_event_ids(
        &self,
        team: &str,
        member_key: &str,
        requested: &[String],
    ) -> DbResult<Vec<String>>;
    /// `mws.outbox.findRecentRecoveryByIntent`: the newest live row of the
    /// intent key updated at or after `since`.
    fn outbox_find_recent_recovery_by_intent(
        &self,
        team: &str,
        member_key: &str,
        intent_key: &str,
        since_iso: &str,
    ) -> DbResult<Option<OutboxRecord>>;
    /// Every row of one member's outbox (the addon's planner reads them; the
    /// app has no such op, a gateway answers it from `mws.snapshot.list`).
    fn outbox_member_items(&self, team: &str, member_key: &str) -> DbResult<Vec<OutboxRecord>>;
    /// Teams with an open outbox row (the dispatch scheduler's list).
    fn outbox_open_teams(&self) -> DbResult<Vec<String>>;
    /// `mws.snapshot.list`: every row of the team and of its case and
    /// whitespace aliases, sorted as the app sorts them.
    fn team_snapshot(&self, team: &str) -> DbResult<TeamRecords>;
    /// `mws.importTeam`: in one transaction, deletes every row of the team
    /// and of each alias the listing finds, then inserts `records` under
    /// `team`.
    fn import_team(&self, team: &str, records: &TeamRecords) -> DbResult<()>;
    /// `storeImports.record`: upserts `(store_id, team)` with `imported_at`
    /// and `entry_count`.
    fn record_store_import(
        &self,
        store_id: &str,
        team: &str,
        entry_count: usize,
        imported_at: &str,
    ) -> DbResult<()>;
    /// `storeImports.has`.
    fn has_store_import(&self, store_id: &str, team: &str) -> DbResult<bool>;
}
