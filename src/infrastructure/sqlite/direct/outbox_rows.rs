//! Outbox row statements (read, insert, replace) and the claim/revive rules
//! that decide which outbox rows a call may take or bring back.

use rusqlite::{params, Connection, OptionalExtension};

use super::super::records::{OutboxRecord, OUTBOX_COLUMNS};
use crate::domain::time::parse_iso;

/// A claim older than this may be taken over (`CLAIM_STALE_MS`).
const CLAIM_STALE_MS: i64 = 5 * 60 * 1000;

pub(super) fn read_outbox_row(
    connection: &Connection,
    team: &str,
    id: &str,
) -> rusqlite::Result<Option<OutboxRecord>> {
    connection
        .prepare_cached(&format!(
            "SELECT {OUTBOX_COLUMNS} FROM member_work_sync_outbox WHERE team_name = ?1 AND id = ?2"
        ))?
        .query_row(params![team, id], OutboxRecord::from_row)
        .optional()
}

/// Rewrites every column but the key and `created_at` (`replaceOutboxRow`).
/// The parameters are numbered as in [`outbox_params`]; `?15` (`created_at`)
/// is bound but not used.
pub(super) fn replace_outbox_row(
    connection: &Connection,
    row: &OutboxRecord,
) -> rusqlite::Result<()> {
    connection
        .prepare_cached(
            "UPDATE member_work_sync_outbox SET member_key = ?3, member_name = ?4, \
             agenda_fingerprint = ?5, payload_hash = ?6, status = ?7, attempt_generation = ?8, \
             claimed_by = ?9, claimed_at = ?10, delivered_message_id = ?11, delivery_state = ?12, \
             last_error = ?13, next_attempt_at = ?14, updated_at = ?16, work_sync_intent = ?17, \
             work_sync_intent_key = ?18, review_request_event_ids_json = ?19, \
             delivery_diagnostics_json = ?20, payload_json = ?21 \
             WHERE team_name = ?1 AND id = ?2",
        )?
        .execute(outbox_params(row))
        .map(drop)
}

pub(super) fn insert_outbox_row(
    connection: &Connection,
    row: &OutboxRecord,
) -> rusqlite::Result<()> {
    connection
        .prepare_cached(&format!(
            "INSERT INTO member_work_sync_outbox ({OUTBOX_COLUMNS}) VALUES \
             (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)"
        ))?
        .execute(outbox_params(row))
        .map(drop)
}

/// A row's values in [`OUTBOX_COLUMNS`] order, `?1` to `?21`.
fn outbox_params(row: &OutboxRecord) -> [&dyn rusqlite::ToSql; 21] {
    [
        &row.team_name,
        &row.id,
        &row.member_key,
        &row.member_name,
        &row.agenda_fingerprint,
        &row.payload_hash,
        &row.status,
        &row.attempt_generation,
        &row.claimed_by,
        &row.claimed_at,
        &row.delivered_message_id,
        &row.delivery_state,
        &row.last_error,
        &row.next_attempt_at,
        &row.created_at,
        &row.updated_at,
        &row.work_sync_intent,
        &row.work_sync_intent_key,
        &row.review_request_event_ids_json,
        &row.delivery_diagnostics_json,
        &row.payload_json,
    ]
}

pub(super) fn parse_ms(value: Option<&str>) -> Option<i64> {
    value.filter(|v| !v.is_empty()).and_then(parse_iso)
}

/// `claimed_at ?? updated_at` is in the future or [`CLAIM_STALE_MS`] old.
fn is_stale_claim(row: &OutboxRecord, now_ms: Option<i64>) -> bool {
    let claimed = parse_ms(Some(row.claimed_at.as_deref().unwrap_or(&row.updated_at)));
    match (claimed, now_ms) {
        (Some(claimed), Some(now)) => claimed > now || now - claimed >= CLAIM_STALE_MS,
        _ => false,
    }
}

/// No (or an unreadable) retry time, or one that has come.
fn is_next_attempt_due(row: &OutboxRecord, now_ms: Option<i64>) -> bool {
    match row.next_attempt_at.as_deref().filter(|v| !v.is_empty()) {
        None => true,
        Some(text) => match parse_iso(text) {
            None => true,
            Some(at) => now_ms.is_some_and(|now| at <= now),
        },
    }
}

pub(super) fn can_claim(row: &OutboxRecord, now_ms: Option<i64>) -> bool {
    match row.status.as_str() {
        "claimed" => is_stale_claim(row, now_ms),
        "pending" | "failed_retryable" => is_next_attempt_due(row, now_ms),
        _ => false,
    }
}

pub(super) fn is_outbox_finished(status: &str) -> bool {
    matches!(status, "delivered" | "superseded" | "failed_terminal")
}

/// `superseded`, `claimed` or `failed_retryable` come back to pending when
/// the same payload is ensured again.
pub(super) fn can_revive(status: &str) -> bool {
    status == "superseded" || (!is_outbox_finished(status) && status != "pending")
}
