//! File-system adapters over one file boundary (`safe_fs`): locks, versioned stores, the audit
//! journal, the team-data reader, report tokens and clocks. The wiring that
//! plugs them into the use cases lives in `crate::runtime`.

pub mod clock;
pub mod codex_sessions;
pub(crate) mod explain_source;
pub(crate) mod fragments;
pub(crate) mod host_questions;
pub mod inbox;
pub(crate) mod intent_store;
pub(crate) mod journal;
pub(crate) mod json_store;
pub(crate) mod launch_index;
pub(crate) mod lock;
pub(crate) mod metrics_store;
pub mod outbox_store;
pub(crate) mod process;
pub mod report_token;
pub mod safe_fs;
mod side_by_side;
pub mod spool;
pub mod sqlite;
pub mod status_store;
pub(crate) mod status_text;
pub(crate) mod task_cache;
mod task_file;
mod team_config;
pub mod team_reader;
pub mod transcripts;
