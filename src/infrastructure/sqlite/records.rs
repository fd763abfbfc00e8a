//! The rows of the four member-work-sync tables, one field per column in
//! the app's column order, with the app's encodings: TEXT timestamps as
//! `toISOString()` prints them, absent optional fields as NULL, JSON columns
//! as `JSON.stringify` prints them. These are what the app's worker ops take
//! and return (`MemberWorkSync*Record`, camelCase fields, `null` for an
//! absent column), so a gateway can pass them through.

use rusqlite::Row;

/// A `member_work_sync_status` row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusRecord {
    /// The routing team, exactly as passed.
    pub team_name: String,
    /// `memberName.trim().toLowerCase()`.
    pub member_key: String,
    /// The member name as given.
    pub member_name: String,
    /// `caught_up`, `needs_sync`, ...
    pub state: String,
    /// `status.evaluatedAt`.
    pub evaluated_at: String,
    /// `status.providerId`.
    pub provider_id: Option<String>,
    /// The whole status, its team fields set to `team_name`.
    pub status_json: String,
}

/// A `member_work_sync_report_intents` row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportIntentRecord {
    /// The routing team.
    pub team_name: String,
    /// `member-work-sync-intent:<sha256 hex>`.
    pub id: String,
    /// `memberName.trim().toLowerCase()`.
    pub member_key: String,
    /// The member name as given.
    pub member_name: String,
    /// `pending`, `accepted`, `rejected` or `superseded`.
    pub status: String,
    /// Why the intent was recorded.
    pub reason: String,
    /// First record time (kept when the intent is appended again).
    pub recorded_at: String,
    /// When it was processed.
    pub processed_at: Option<String>,
    /// `accepted` or the rejection code.
    pub result_code: Option<String>,
    /// The report request, its `teamName` set to `team_name`.
    pub request_json: String,
}

/// A `member_work_sync_outbox` row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxRecord {
    /// The routing team.
    pub team_name: String,
    /// `member-work-sync:<team>:<member>:<intent key or fingerprint>`.
    pub id: String,
    /// `memberName.trim().toLowerCase()`.
    pub member_key: String,
    /// The member name as given.
    pub member_name: String,
    /// The agenda the nudge is about.
    pub agenda_fingerprint: String,
    /// sha256 of the payload; `payload_json` never changes without it.
    pub payload_hash: String,
    /// `pending`, `claimed`, `delivered`, `superseded`, `failed_retryable`
    /// or `failed_terminal`.
    pub status: String,
    /// The optimistic lock: +1 on every claim.
    pub attempt_generation: i64,
    /// Who holds the claim.
    pub claimed_by: Option<String>,
    /// When it was claimed.
    pub claimed_at: Option<String>,
    /// The inbox message id of the delivery.
    pub delivered_message_id: Option<String>,
    /// The app's delivery state, kept as it is.
    pub delivery_state: Option<String>,
    /// Why the last attempt failed or the item was superseded.
    pub last_error: Option<String>,
    /// When a retry is due.
    pub next_attempt_at: Option<String>,
    /// First ensure time.
    pub created_at: String,
    /// Last transition time.
    pub updated_at: String,
    /// `payload.workSyncIntent`.
    pub work_sync_intent: String,
    /// `payload.workSyncIntentKey`.
    pub work_sync_intent_key: Option<String>,
    /// `payload.workSyncReviewRequestEventIds` as a JSON array.
    pub review_request_event_ids_json: Option<String>,
    /// The delivery's diagnostics as a JSON string array.
    pub delivery_diagnostics_json: Option<String>,
    /// The payload, never rewritten.
    pub payload_json: String,
}

/// A `member_work_sync_metric_events` row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricEventRecord {
    /// The routing team.
    pub team_name: String,
    /// `member-work-sync-metric:<sha256 hex>`.
    pub id: String,
    /// `memberName.trim().toLowerCase()`.
    pub member_key: String,
    /// The member name as given.
    pub member_name: String,
    /// `status_evaluated`, `would_nudge`, ...
    pub kind: String,
    /// The status's `evaluatedAt`.
    pub recorded_at: String,
    /// The event, its `teamName` set to `team_name`.
    pub event_json: String,
}

/// The columns of a table in the app's order, for `SELECT` and `INSERT`.
pub(crate) const STATUS_COLUMNS: &str =
    "team_name, member_key, member_name, state, evaluated_at, provider_id, status_json";
pub(crate) const INTENT_COLUMNS: &str = "team_name, id, member_key, member_name, status, reason, recorded_at, processed_at, result_code, request_json";
pub(crate) const OUTBOX_COLUMNS: &str = "team_name, id, member_key, member_name, agenda_fingerprint, payload_hash, status, attempt_generation, claimed_by, claimed_at, delivered_message_id, delivery_state, last_error, next_attempt_at, created_at, updated_at, work_sync_intent, work_sync_intent_key, review_request_event_ids_json, delivery_diagnostics_json, payload_json";
pub(crate) const EVENT_COLUMNS: &str =
    "team_name, id, member_key, member_name, kind, recorded_at, event_json";

impl StatusRecord {
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            team_name: row.get(0)?,
            member_key: row.get(1)?,
            member_name: row.get(2)?,
            state: row.get(3)?,
            evaluated_at: row.get(4)?,
            provider_id: row.get(5)?,
            status_json: row.get(6)?,
        })
    }
}

impl ReportIntentRecord {
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            team_name: row.get(0)?,
            id: row.get(1)?,
            member_key: row.get(2)?,
            member_name: row.get(3)?,
            status: row.get(4)?,
            reason: row.get(5)?,
            recorded_at: row.get(6)?,
            processed_at: row.get(7)?,
            result_code: row.get(8)?,
            request_json: row.get(9)?,
        })
    }
}

impl OutboxRecord {
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            team_name: row.get(0)?,
            id: row.get(1)?,
            member_key: row.get(2)?,
            member_name: row.get(3)?,
            agenda_fingerprint: row.get(4)?,
            payload_hash: row.get(5)?,
            status: row.get(6)?,
            attempt_generation: row.get(7)?,
            claimed_by: row.get(8)?,
            claimed_at: row.get(9)?,
            delivered_message_id: row.get(10)?,
            delivery_state: row.get(11)?,
            last_error: row.get(12)?,
            next_attempt_at: row.get(13)?,
            created_at: row.get(14)?,
            updated_at: row.get(15)?,
            work_sync_intent: row.get(16)?,
            work_sync_intent_key: row.get(17)?,
            review_request_event_ids_json: row.get(18)?,
            delivery_diagnostics_json: row.get(19)?,
            payload_json: row.get(20)?,
        })
    }
}

impl MetricEventRecord {
    pub(crate) fn from_row(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            team_name: row.get(0)?,
            id: row.get(1)?,
            member_key: row.get(2)?,
            member_name: row.get(3)?,
            kind: row.get(4)?,
            recorded_at: row.get(5)?,
            event_json: row.get(6)?,
        })
    }
}

/// What `ensurePending` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnsureRecordResult {
    /// A new pending row.
    Created(OutboxRecord),
    /// The row was there: revived, refreshed with a new payload, or left as it is.
    Existing(OutboxRecord),
    /// The row was delivered or failed for good under another payload; nothing was written.
    PayloadConflict {
        /// The row as it stays.
        item: OutboxRecord,
        /// Its payload hash.
        existing_payload_hash: String,
        /// The hash the caller asked for.
        requested_payload_hash: String,
    },
}

/// The outcome of a report intent (`markProcessed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessedIntent {
    /// `accepted`, `rejected` or `superseded`.
    pub status: String,
    /// `accepted` or the rejection code.
    pub result_code: String,
    /// When the intent was marked processed (ISO time).
    pub processed_at: String,
}

/// How a claimed attempt ended, as the app's mark ops take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutboxMark {
    /// `markDelivered`: only the current claim generation.
    Delivered {
        /// The claim generation.
        attempt_generation: i64,
        /// The inbox message id.
        delivered_message_id: String,
        /// The delivery state, or the stored one when `None`.
        delivery_state: Option<String>,
        /// Diagnostics as a JSON array, or the stored ones when `None`.
        delivery_diagnostics_json: Option<String>,
    },
    /// `markSuperseded`: any row that is not finished, whatever its generation.
    Superseded {
        /// Why it will never go out; stored as the row's `last_error`.
        reason: String,
    },
    /// `markFailed`: only the current claim generation.
    Failed {
        /// The claim generation.
        attempt_generation: i64,
        /// Why the attempt failed; stored as the row's `last_error`.
        error: String,
        /// `failed_retryable` (with its retry time) or `failed_terminal`.
        retry_at: Option<String>,
        /// Whether it may be tried again.
        retryable: bool,
    },
}

/// Every row of one team in the four tables; as JSON, the app's
/// `MemberWorkSyncTeamSnapshotRecords` (what gateway mode sends and reads).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamRecords {
    /// `member_work_sync_status`.
    pub statuses: Vec<StatusRecord>,
    /// `member_work_sync_report_intents`.
    pub report_intents: Vec<ReportIntentRecord>,
    /// `member_work_sync_outbox`.
    pub outbox_items: Vec<OutboxRecord>,
    /// `member_work_sync_metric_events`.
    pub metric_events: Vec<MetricEventRecord>,
}

impl TeamRecords {
    /// Statuses, intents and outbox items: the `entry_count` of `store_imports`.
    pub(crate) fn entry_count(&self) -> usize {
        self.statuses.len() + self.report_intents.len() + self.outbox_items.len()
    }

    /// Whether there is no row at all.
    pub fn is_empty(&self) -> bool {
        self.entry_count() == 0 && self.metric_events.is_empty()
    }
}
