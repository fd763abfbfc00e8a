//! Pure domain: team model, agenda, review cycle, fingerprint and decision policy.
//!
//! Nothing in here does IO, reads a clock or knows about napi; every function is
//! deterministic in its inputs, which is what lets `cargo test` pin the rules.

pub mod agenda;
pub(crate) mod audit;
pub(crate) mod decision;
pub(crate) mod diagnostic;
pub(crate) mod explain;
pub(crate) mod fingerprint;
pub(crate) mod js_semantics;
pub(crate) mod json_text;
pub mod metrics;
pub mod names;
pub mod nudge;
pub(crate) mod nudge_suppression;
pub(crate) mod nudge_text;
pub mod recovery;
pub(crate) mod report;
pub mod retention;
pub(crate) mod review_cycle;
pub(crate) mod runtime_stall;
pub mod status;
pub(crate) mod status_assembly;
pub mod team;
pub mod time;
pub(crate) mod token;
pub mod turn_settled;
