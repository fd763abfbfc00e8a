//! File-system adapters over one file boundary (`safe_fs`): locks, versioned stores, the audit
//! journal, the team-data reader, report tokens and clocks.

pub mod activity_file;
pub mod clock;
pub mod codex_sessions;
pub mod composition;
pub mod explain_source;
pub mod inbox;
pub mod intent_store;
pub mod journal;
pub mod json_store;
pub mod lock;
pub mod metrics_store;
pub mod outbox_store;
pub mod process;
pub mod report_token;
pub mod safe_fs;
pub mod spool;
pub mod status_store;
mod team_config;
pub mod team_reader;
pub mod transcripts;
pub mod worker;
