//! Use cases over small ports: reconcile a member, read its status.

pub(crate) mod busy;
pub(crate) mod delivery_record;
pub mod engine;
pub(crate) mod explain;
#[cfg(test)]
mod fakes;
pub mod host;
pub(crate) mod index_cache;
pub mod log;
pub mod nudges;
pub mod ports;
pub mod proof_missing;
pub mod queue;
pub(crate) mod queue_diagnostics;
pub mod reconcile;
pub mod report;
pub(crate) mod review_pickup;
pub mod router;
pub(crate) mod runtime_state;
pub(crate) mod team_gate;
#[cfg(test)]
mod tests;
pub mod turn_settled;
