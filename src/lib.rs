//! member-work-sync: keeps every agent-team member's work in sync with the board.
//!
//! Layers, innermost first: [`domain`] (pure rules), [`application`] (use cases
//! over ports), [`infrastructure`] (files, locks, clocks), [`runtime`] (wiring,
//! instance lifecycle, schedules) and [`binding`] (napi).
//!
//! Public surface: only the modules the binding, the benches and the
//! integration tests (`tests/`) reach are `pub`; every other module is
//! `pub(crate)`, so an item nothing in the crate uses is reported as dead
//! code instead of passing as API. [`binding`] stays public: a test build
//! registers no napi export, so its exported functions would read as dead
//! code there.
#![deny(missing_docs)]
#![deny(unreachable_pub)]

pub mod application;
pub mod binding;
pub mod domain;
pub mod infrastructure;
pub mod runtime;
