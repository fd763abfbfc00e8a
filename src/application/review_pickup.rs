//! Whether a clean review-pickup nudge can be delivered, and the reasons the
//! planner and the dispatcher journal when it cannot.
//!
//! The app hands a review pickup to a delivery port of its own (one that can
//! wake the reviewer) and reports an undeliverable one to an escalation port.
//! With no delivery port the app never plans a pickup into the outbox: its
//! planner journals `review_pickup_delivery_unavailable`, then
//! `review_pickup_escalated`, then `nudge_skipped`, and its dispatcher
//! supersedes a pickup item it finds (one an older store holds) with the same
//! two lines. The addon has no delivery port yet, so [`delivery`] is where
//! one is asked once it exists.

/// Why a review-pickup nudge cannot be delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickupUndeliverable {
    /// No review-pickup delivery port is configured.
    NoDeliveryPort,
}

impl PickupUndeliverable {
    /// The planner's journal `reason` (and its one diagnostic).
    pub fn planner_reason(self) -> &'static str {
        match self {
            Self::NoDeliveryPort => "review_pickup_delivery_port_unavailable",
        }
    }

    /// The dispatcher's reason: the item's `lastError` and its journal `reason`.
    pub fn dispatcher_reason(self) -> &'static str {
        match self {
            Self::NoDeliveryPort => "review_pickup_delivery_unavailable:delivery_port_unavailable",
        }
    }
}

/// The planner code of a pickup that cannot be delivered.
pub const UNDELIVERABLE_CODE: &str = "review_pickup_delivery_unavailable";

/// Whether review pickups can be delivered now: never, while no delivery
/// port exists.
pub fn delivery() -> Result<(), PickupUndeliverable> {
    Err(PickupUndeliverable::NoDeliveryPort)
}
