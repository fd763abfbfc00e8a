//! The app's schema, run exactly as its worker runs it: the append-only list of versions, each version's statements and
//! `PRAGMA user_version = <v>` in one transaction. The statements are the
//! app's text byte for byte (whitespace included), because SQLite keeps that
//! text in `sqlite_master` and the app compares nothing else; every one is
//! `IF NOT EXISTS`, so running a version again changes nothing.
//!
//! The addon never writes `user_version` otherwise: a database at a newer
//! version (a newer app migrated it) is used as it is.

use rusqlite::{Connection, TransactionBehavior};

/// One schema version of the app's list.
struct Migration {
    version: u32,
    statements: &'static [&'static str],
}

#[cfg(test)]
/// The `user_version` the app's HEAD migrates to.
pub(crate) const SCHEMA_VERSION: u32 = 4;

/// The tables member-work-sync reads and writes (v3), then the shared
/// `store_imports` (v1).
pub(crate) const MEMBER_WORK_SYNC_TABLES: [&str; 5] = [
    "member_work_sync_status",
    "member_work_sync_report_intents",
    "member_work_sync_outbox",
    "member_work_sync_metric_events",
    "store_imports",
];

/// The app's list (`internalStorageMigrations.ts`): v1 stall journal and
/// `store_imports`, v2 comment journal, v3 the member-work-sync tables and
/// their indexes, v4 the command ledger.
const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        statements: &[
            "CREATE TABLE IF NOT EXISTS stall_journal_entries (
        team_name TEXT NOT NULL,
        epoch_key TEXT NOT NULL,
        task_id TEXT NOT NULL,
        member_name TEXT,
        branch TEXT NOT NULL,
        signal TEXT NOT NULL,
        state TEXT NOT NULL,
        consecutive_scans INTEGER NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        alerted_at TEXT,
        PRIMARY KEY (team_name, epoch_key)
      )",
            "CREATE TABLE IF NOT EXISTS store_imports (
        store_id TEXT NOT NULL,
        team_name TEXT NOT NULL,
        imported_at TEXT NOT NULL,
        entry_count INTEGER NOT NULL,
        PRIMARY KEY (store_id, team_name)
      )",
        ],
    },
    Migration {
        version: 2,
        statements: &[
            "CREATE TABLE IF NOT EXISTS comment_journal_entries (
        team_name TEXT NOT NULL,
        key TEXT NOT NULL,
        task_id TEXT NOT NULL,
        comment_id TEXT NOT NULL,
        author TEXT NOT NULL,
        comment_created_at TEXT,
        message_id TEXT,
        state TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        sent_at TEXT,
        PRIMARY KEY (team_name, key)
      )",
            "CREATE TABLE IF NOT EXISTS comment_journal_teams (
        team_name TEXT PRIMARY KEY,
        initialized_at TEXT NOT NULL
      )",
        ],
    },
    Migration {
        version: 3,
        statements: &[
            "CREATE TABLE IF NOT EXISTS member_work_sync_status (
        team_name TEXT NOT NULL,
        member_key TEXT NOT NULL,
        member_name TEXT NOT NULL,
        state TEXT NOT NULL,
        evaluated_at TEXT NOT NULL,
        provider_id TEXT,
        status_json TEXT NOT NULL,
        PRIMARY KEY (team_name, member_key)
      )",
            "CREATE TABLE IF NOT EXISTS member_work_sync_report_intents (
        team_name TEXT NOT NULL,
        id TEXT NOT NULL,
        member_key TEXT NOT NULL,
        member_name TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        processed_at TEXT,
        result_code TEXT,
        request_json TEXT NOT NULL,
        PRIMARY KEY (team_name, id)
      )",
            "CREATE INDEX IF NOT EXISTS idx_mws_report_intents_pending
        ON member_work_sync_report_intents (team_name, status, recorded_at)",
            "CREATE TABLE IF NOT EXISTS member_work_sync_outbox (
        team_name TEXT NOT NULL,
        id TEXT NOT NULL,
        member_key TEXT NOT NULL,
        member_name TEXT NOT NULL,
        agenda_fingerprint TEXT NOT NULL,
        payload_hash TEXT NOT NULL,
        status TEXT NOT NULL,
        attempt_generation INTEGER NOT NULL,
        claimed_by TEXT,
        claimed_at TEXT,
        delivered_message_id TEXT,
        delivery_state TEXT,
        last_error TEXT,
        next_attempt_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        work_sync_intent TEXT NOT NULL,
        work_sync_intent_key TEXT,
        review_request_event_ids_json TEXT,
        delivery_diagnostics_json TEXT,
        payload_json TEXT NOT NULL,
        PRIMARY KEY (team_name, id)
      )",
            "CREATE INDEX IF NOT EXISTS idx_mws_outbox_due
        ON member_work_sync_outbox (team_name, status, next_attempt_at)",
            "CREATE INDEX IF NOT EXISTS idx_mws_outbox_member
        ON member_work_sync_outbox (team_name, member_key, status)",
            "CREATE TABLE IF NOT EXISTS member_work_sync_metric_events (
        team_name TEXT NOT NULL,
        id TEXT NOT NULL,
        member_key TEXT NOT NULL,
        member_name TEXT NOT NULL,
        kind TEXT NOT NULL,
        recorded_at TEXT NOT NULL,
        event_json TEXT NOT NULL,
        PRIMARY KEY (team_name, id)
      )",
            "CREATE INDEX IF NOT EXISTS idx_mws_metric_events_recent
        ON member_work_sync_metric_events (team_name, recorded_at)",
        ],
    },
    Migration {
        version: 4,
        statements: &[
            "CREATE TABLE IF NOT EXISTS application_command_ledger (
        namespace TEXT NOT NULL,
        scope_key TEXT NOT NULL,
        command_id TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        operation TEXT NOT NULL,
        payload_hash TEXT NOT NULL,
        status TEXT NOT NULL,
        failure_kind TEXT,
        retryable INTEGER NOT NULL,
        attempt_count INTEGER NOT NULL,
        result_hash TEXT,
        result_json TEXT,
        metadata_json TEXT,
        started_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        completed_at TEXT,
        last_error TEXT,
        PRIMARY KEY (namespace, scope_key, command_id)
      )",
            "CREATE UNIQUE INDEX IF NOT EXISTS idx_app_cmd_ledger_idempotency
        ON application_command_ledger (namespace, scope_key, idempotency_key)",
            "CREATE INDEX IF NOT EXISTS idx_app_cmd_ledger_status
        ON application_command_ledger (namespace, scope_key, status)",
            "CREATE INDEX IF NOT EXISTS idx_app_cmd_ledger_operation
        ON application_command_ledger (namespace, scope_key, operation)",
        ],
    },
];

/// The database's `user_version` (0 for a new file).
pub(crate) fn schema_version(connection: &Connection) -> rusqlite::Result<u32> {
    connection.pragma_query_value(None, "user_version", |row| row.get(0))
}

/// Runs every version above the database's, each in its own transaction
/// with its `user_version`, as the app's worker does; a database at
/// [`SCHEMA_VERSION`] or above is left untouched.
pub(crate) fn migrate(connection: &mut Connection) -> rusqlite::Result<()> {
    let current = schema_version(connection)?;
    for migration in MIGRATIONS.iter().filter(|m| m.version > current) {
        apply(connection, migration)?;
    }
    Ok(())
}

/// Runs one migration unless the database already has it. The version is
/// read again under the write lock: another process opening the same new
/// file may have migrated between our first read and our `BEGIN IMMEDIATE`.
/// `true` when this call ran it.
fn apply(connection: &mut Connection, migration: &Migration) -> rusqlite::Result<bool> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if schema_version(&transaction)? >= migration.version {
        return Ok(false);
    }
    for statement in migration.statements {
        transaction.execute_batch(statement)?;
    }
    transaction.pragma_update(None, "user_version", migration.version)?;
    transaction.commit()?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migration_another_connection_ran_after_our_first_read_is_not_run_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.db");
        let mut late = Connection::open(&path).unwrap();
        assert_eq!(schema_version(&late).unwrap(), 0);
        let mut first = Connection::open(&path).unwrap();
        migrate(&mut first).unwrap();
        assert!(!apply(&mut late, &MIGRATIONS[0]).unwrap());
        assert_eq!(schema_version(&late).unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn the_list_ends_at_the_schema_version_and_grows_by_one() {
        let versions: Vec<u32> = MIGRATIONS.iter().map(|m| m.version).collect();
        assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
    }

    #[test]
    fn migrating_twice_changes_nothing_and_a_newer_version_is_kept() {
        let mut connection = Connection::open_in_memory().unwrap();
        migrate(&mut connection).unwrap();
        let dump = |c: &Connection| -> Vec<String> {
            let mut statement = c
                .prepare("SELECT sql FROM sqlite_master ORDER BY name")
                .unwrap();
            statement
                .query_map([], |row| row.get::<_, Option<String>>(0))
                .unwrap()
                .map(|sql| sql.unwrap().unwrap_or_default())
                .collect()
        };
        let first = dump(&connection);
        assert_eq!(schema_version(&connection).unwrap(), SCHEMA_VERSION);
        migrate(&mut connection).unwrap();
        assert_eq!(dump(&connection), first);
        connection.pragma_update(None, "user_version", 7).unwrap();
        migrate(&mut connection).unwrap();
        assert_eq!(schema_version(&connection).unwrap(), 7);
        for table in MEMBER_WORK_SYNC_TABLES {
            assert!(
                first
                    .iter()
                    .any(|sql| sql.contains(&format!("TABLE {table} ("))),
                "{table}"
            );
        }
    }
}
