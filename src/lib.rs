//! member-work-sync: keeps every agent-team member's work in sync with the board.
//!
//! Layers, innermost first: [`domain`] (pure rules), [`application`] (use cases
//! over ports), [`infrastructure`] (files, locks, clocks) and [`binding`] (napi).
#![deny(missing_docs)]

pub mod application;
pub mod binding;
pub mod domain;
pub mod infrastructure;
