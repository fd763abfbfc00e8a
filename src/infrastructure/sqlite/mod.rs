//! The app's SQLite store for member-work-sync (`<userData>/storage/app.db`):
//! the same four tables and `store_imports`, the same row
//! encodings and the same op semantics as the app's internal-storage worker,
//! so statuses, report intents, the outbox and metric events carry over when
//! the addon and the app's TypeScript feature take turns on one database.
//!
//! - `schema`: the app's migrations, run as the app runs them.
//! - [`records`], `mappers`, `js_json`: rows and their exact encodings.
//! - [`gateway`]: the app's `mws.*` ops, the seam to the database.
//! - `direct`: those ops on the addon's own connection (rusqlite).
//! - `connector`: opens the file at first use, again when it was replaced.
//! - `store`: the use cases' ports over a gateway.
//! - `team_files`: what a read-write store does around each call with the
//!   team's files, as the app's SQLite session does: `purge` markers
//!   finished first, the JSON `replica` merged at a team's first access
//!   ([`merge`], `identity`) and fenced dirty/clean around mutations, the
//!   legacy JSON `importer` (`legacy_json`) run once per team; whole
//!   teams as rows or domain snapshots in [`snapshot`].
//! - `app_gateway`: gateway mode, the ops as calls to the app's own
//!   storage gateway (inside Electron, where the app's worker owns the file).
//! - `session`: gateway mode's once-per-session choice of SQLite or JSON.
//! - [`json_session`]: what a gateway JSON session does around the JSON
//!   stores, as the app's does: a pending purge marker's JSON half finished
//!   first, else the team's JSON files hydrated once from a clean replica
//!   (`restore`, the domain merge) and every call refused while the
//!   replica is unsafe; `purgeTeam` deleting the live JSON behind a marker
//!   the next SQLite session finishes.

pub(crate) mod app_calls;
pub(crate) mod app_gateway;
pub(crate) mod connector;
pub(crate) mod direct;
pub(crate) mod error;
pub mod gateway;
pub(crate) mod identity;
pub(crate) mod importer;
pub(crate) mod js_json;
pub mod json_session;
pub(crate) mod legacy_json;
pub(crate) mod mappers;
pub mod merge;
pub(crate) mod purge;
pub mod records;
pub(crate) mod replica;
pub(crate) mod restore;
pub(crate) mod schema;
pub(crate) mod session;
pub mod snapshot;
pub(crate) mod store;
pub(crate) mod team_files;

pub use direct::{DirectDatabase, OpenMode};
pub use error::SqliteStoreError;
pub use store::SqliteStore;
