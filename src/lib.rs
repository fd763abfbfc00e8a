//! member-work-sync: keeps every agent-team member's work in sync with the board.
//!
//! Layers, innermost first: [`domain`] (pure rules), [`application`] (use cases
//! over ports), [`infrastructure`] (files, locks, clocks), [`runtime`] (wiring,
//! instance lifecycle, schedules) and [`binding`] (napi).
//!
//! Public surface: only the modules the binding, the benches and the
//! integration tests (`tests/`) reach are `pub`; every other module is
//! `pub(crate)`, so an item nothing in the crate uses is reported as dead
//! code instead of passing as API. (`safe_fs` and `json_store` stay public
//! for now: the Windows port and the status persistence work change them.)
#![deny(missing_docs)]

pub mod application;
pub mod binding;
pub mod domain;
pub mod infrastructure;
pub mod runtime;
