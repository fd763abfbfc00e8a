//! A team's rows across the four tables: the whole-team snapshot read and
//! the bulk insert of a team's records.

use rusqlite::{params, Connection};

use super::super::identity::is_same_team;
use super::super::records::{
    MetricEventRecord, OutboxRecord, ReportIntentRecord, StatusRecord, TeamRecords, EVENT_COLUMNS,
    INTENT_COLUMNS, OUTBOX_COLUMNS, STATUS_COLUMNS,
};
use super::super::snapshot::sort_like_listing;
use super::outbox_rows::insert_outbox_row;
use super::query_all;

/// Every row of the four tables whose team is `team` or an alias of it
/// (each table read whole, as the app does, then filtered and sorted).
pub(super) fn list_team_snapshot(
    connection: &Connection,
    team: &str,
) -> rusqlite::Result<TeamRecords> {
    fn rows_of<T>(
        connection: &Connection,
        columns: &str,
        table: &str,
        map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
        team_of: impl Fn(&T) -> &str,
        team: &str,
    ) -> rusqlite::Result<Vec<T>> {
        let mut rows = query_all(
            connection,
            &format!("SELECT {columns} FROM {table}"),
            [],
            map,
        )?;
        rows.retain(|row| is_same_team(team_of(row), team));
        Ok(rows)
    }
    let mut records = TeamRecords {
        statuses: rows_of(
            connection,
            STATUS_COLUMNS,
            "member_work_sync_status",
            StatusRecord::from_row,
            |r| &r.team_name,
            team,
        )?,
        report_intents: rows_of(
            connection,
            INTENT_COLUMNS,
            "member_work_sync_report_intents",
            ReportIntentRecord::from_row,
            |r| &r.team_name,
            team,
        )?,
        outbox_items: rows_of(
            connection,
            OUTBOX_COLUMNS,
            "member_work_sync_outbox",
            OutboxRecord::from_row,
            |r| &r.team_name,
            team,
        )?,
        metric_events: rows_of(
            connection,
            EVENT_COLUMNS,
            "member_work_sync_metric_events",
            MetricEventRecord::from_row,
            |r| &r.team_name,
            team,
        )?,
    };
    sort_like_listing(&mut records);
    Ok(records)
}

/// Inserts every row of `records` (already under their team).
pub(super) fn insert_team_records(
    connection: &Connection,
    records: &TeamRecords,
) -> rusqlite::Result<()> {
    for row in &records.statuses {
        connection
            .prepare_cached(&format!(
                "INSERT INTO member_work_sync_status ({STATUS_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ))?
            .execute(params![row.team_name, row.member_key, row.member_name, row.state, row.evaluated_at, row.provider_id, row.status_json])?;
    }
    for row in &records.report_intents {
        connection
            .prepare_cached(&format!(
                "INSERT INTO member_work_sync_report_intents ({INTENT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
            ))?
            .execute(params![row.team_name, row.id, row.member_key, row.member_name, row.status, row.reason, row.recorded_at, row.processed_at, row.result_code, row.request_json])?;
    }
    for row in &records.outbox_items {
        insert_outbox_row(connection, row)?;
    }
    for row in &records.metric_events {
        connection
            .prepare_cached(&format!(
                "INSERT INTO member_work_sync_metric_events ({EVENT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
            ))?
            .execute(params![row.team_name, row.id, row.member_key, row.member_name, row.kind, row.recorded_at, row.event_json])?;
    }
    Ok(())
}
