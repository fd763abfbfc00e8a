//! Metric event writes: the upsert and the per-team prune to
//! [`super::METRIC_EVENTS_CAP`].

use std::collections::BTreeSet;

use rusqlite::{params, Connection};

use super::super::records::{MetricEventRecord, EVENT_COLUMNS};
use super::{query_all, METRIC_EVENTS_CAP};

/// Rows per chunked statement (`INSERT_CHUNK_SIZE`).
const CHUNK: usize = 200;

pub(super) fn upsert_events(
    connection: &Connection,
    events: &[MetricEventRecord],
) -> rusqlite::Result<()> {
    let mut statement = connection.prepare_cached(&format!(
        "INSERT INTO member_work_sync_metric_events ({EVENT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (team_name, id) DO UPDATE SET member_key = excluded.member_key, \
         member_name = excluded.member_name, kind = excluded.kind, \
         recorded_at = excluded.recorded_at, event_json = excluded.event_json"
    ))?;
    for event in events {
        statement.execute(params![
            event.team_name,
            event.id,
            event.member_key,
            event.member_name,
            event.kind,
            event.recorded_at,
            event.event_json,
        ])?;
    }
    Ok(())
}

/// Keeps the team's [`METRIC_EVENTS_CAP`] newest events (by `recorded_at`,
/// then id, both descending) and deletes the others in chunks.
pub(super) fn prune_events(connection: &Connection, team: &str) -> rusqlite::Result<()> {
    let keep: BTreeSet<String> = query_all(
        connection,
        "SELECT id FROM member_work_sync_metric_events WHERE team_name = ?1 \
         ORDER BY recorded_at DESC, id DESC LIMIT ?2",
        params![team, METRIC_EVENTS_CAP as i64],
        |row| row.get(0),
    )?
    .into_iter()
    .collect();
    let doomed: Vec<String> = query_all(
        connection,
        "SELECT id FROM member_work_sync_metric_events WHERE team_name = ?1",
        [team],
        |row| row.get::<_, String>(0),
    )?
    .into_iter()
    .filter(|id| !keep.contains(id))
    .collect();
    for ids in doomed.chunks(CHUNK) {
        let marks = vec!["?"; ids.len()].join(", ");
        let sql = format!(
            "DELETE FROM member_work_sync_metric_events WHERE team_name = ? AND id IN ({marks})"
        );
        let values: Vec<&dyn rusqlite::ToSql> = std::iter::once(&team as &dyn rusqlite::ToSql)
            .chain(ids.iter().map(|id| id as &dyn rusqlite::ToSql))
            .collect();
        connection.execute(&sql, values.as_slice())?;
    }
    Ok(())
}
