//! File-system adapters: atomic writes, locks, versioned stores, the audit
//! journal, the team-data reader and clocks.

pub mod atomic_file;
pub mod clock;
pub mod composition;
pub mod journal;
pub mod json_store;
pub mod lock;
pub mod spool;
pub mod status_store;
pub mod team_reader;
pub mod transcripts;
