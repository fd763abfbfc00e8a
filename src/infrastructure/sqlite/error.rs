//! Failures of the SQLite store, each naming the database and what failed.

use std::path::PathBuf;

/// A failed store operation.
#[derive(Debug, thiserror::Error)]
pub enum SqliteStoreError {
    /// The database could not be opened, set up or migrated.
    #[error("cannot open the member-work-sync database {path}: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The database's folder could not be created.
    #[error("cannot create the folder of the member-work-sync database {path}: {source}")]
    CreateFolder {
        /// The database file.
        path: PathBuf,
        /// What the file system said.
        source: std::io::Error,
    },
    /// `PRAGMA integrity_check` did not answer `ok`; the addon renames and
    /// repairs nothing (the app owns recovery).
    #[error("the member-work-sync database {path} failed its integrity check: {answer}")]
    Integrity {
        /// The database file.
        path: PathBuf,
        /// The first line of the check's answer.
        answer: String,
    },
    /// A read-only open found no member-work-sync tables (and creates none).
    #[error("the database {path} has no member-work-sync tables (schema version {version})")]
    MissingTables {
        /// The database file.
        path: PathBuf,
        /// The database's `user_version` (0 when it cannot be read).
        version: u32,
    },
    /// A statement failed.
    #[error("member-work-sync database {path}: {op} failed: {source}")]
    Sql {
        /// The database file.
        path: PathBuf,
        /// The app's op name (`mws.outbox.claimDue`, ...).
        op: &'static str,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// A call to the app's storage gateway (gateway mode) failed: it threw,
    /// rejected, did not settle in time, or answered the wrong shape.
    #[error("member-work-sync storage gateway: {op} ({method}) failed: {detail}")]
    Gateway {
        /// The app's op name (`mws.outbox.claimDue`, ...).
        op: &'static str,
        /// The gateway method called (`outboxClaimDue`, ...).
        method: &'static str,
        /// What the gateway threw or answered, or that it timed out.
        detail: String,
    },
    /// A JSON column does not hold what its table says.
    #[error("member-work-sync database {path}: {table} row {key}: invalid {column}: {detail}")]
    BadColumn {
        /// The database file.
        path: PathBuf,
        /// The table holding the row.
        table: &'static str,
        /// The row's key (`team/member` or the id).
        key: String,
        /// The JSON column that does not parse or has the wrong shape.
        column: &'static str,
        /// What is wrong.
        detail: String,
    },
    /// The team's JSON replica is unusable or could not be written.
    #[error(transparent)]
    Replica(#[from] super::replica::ReplicaError),
    /// A legacy JSON file could not be read or archived.
    #[error(transparent)]
    Legacy(Box<super::legacy_json::LegacyFileError>),
    /// The legacy JSON import of a team failed; the files stay the source of truth.
    #[error("member-work-sync legacy JSON import of team \"{team}\" failed: {cause}")]
    Import {
        /// The team whose files were being imported.
        team: String,
        /// The step's error, as text.
        cause: String,
    },
    /// The import failed less than a minute ago and is not retried yet.
    #[error("member-work-sync legacy JSON import of team \"{team}\" failed recently and is not retried yet: {cause}")]
    ImportCoolingDown {
        /// The team whose import is not retried yet.
        team: String,
        /// The error of the failed import, as text.
        cause: String,
    },
    /// A purge asked of a store opened read-only.
    #[error("member-work-sync database {path} is open read-only: team {team} cannot be purged")]
    ReadOnlyPurge {
        /// The database file.
        path: PathBuf,
        /// The team the purge was asked for.
        team: String,
    },
    /// A team purge step failed.
    #[error(transparent)]
    Purge(#[from] super::purge::PurgeError),
    /// A team's rows did not read back as they were written.
    #[error("member-work-sync {what} verification failed for team \"{team}\"; keeping the JSON files as the source of truth")]
    Verification {
        /// `import` or `pending primary purge`.
        what: &'static str,
        /// The team whose rows were checked.
        team: String,
    },
    /// The team's rows or a snapshot of them hold a bad JSON column.
    #[error("member-work-sync team {team}: invalid {column}: {detail}")]
    TeamRows {
        /// The team whose rows were read.
        team: String,
        /// The column or field.
        column: &'static str,
        /// What is wrong.
        detail: String,
    },
}

impl From<SqliteStoreError> for crate::application::ports::PortError {
    fn from(error: SqliteStoreError) -> Self {
        Self::Io(std::io::Error::other(error))
    }
}
