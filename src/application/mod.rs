//! Use cases over small ports: reconcile a member, read its status.

pub mod ports;
pub mod reconcile;
pub mod report;
pub mod runtime_state;
