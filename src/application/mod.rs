//! Use cases over small ports: reconcile a member, read its status.

pub mod ports;
pub mod reconcile;
pub mod runtime_state;
pub mod turn_settled;
