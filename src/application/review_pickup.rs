//! Whether a clean review-pickup nudge can be delivered, the reasons the
//! planner and the dispatcher journal when it cannot, and the escalation of
//! an undeliverable pickup to the app.
//!
//! The app hands a review pickup to a delivery port of its own (one that can
//! wake the reviewer, `reviewPickupDelivery`) and reports an undeliverable one
//! to an escalation port (`reviewPickupEscalation`). Its planner asks
//! `canDeliver` before planning a pickup: without the port, or when the port
//! refuses, it journals `review_pickup_delivery_unavailable`, then
//! `review_pickup_escalated`, asks the escalation port, and journals
//! `nudge_skipped`; nothing enters the outbox. Its dispatcher asks again
//! before delivering a stored pickup and supersedes a refused one with the
//! same lines. A `canDeliver` that fails or does not answer in time counts as
//! a refusal (`review_pickup_delivery_check_failed`, logged by the binding):
//! the pickup is escalated rather than left waiting.

use super::host::{Host, ReviewPickupEscalation};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::team::ProviderId;

/// Why a review-pickup nudge cannot be delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PickupUndeliverable {
    /// No review-pickup delivery port is configured.
    NoDeliveryPort,
    /// The app's `canDeliver` refused (its reason), failed or timed out.
    Refused(String),
}

impl PickupUndeliverable {
    /// The planner's journal `reason` (and its one diagnostic).
    pub(crate) fn planner_reason(&self) -> String {
        match self {
            Self::NoDeliveryPort => PORT_UNAVAILABLE.into(),
            Self::Refused(reason) => reason.clone(),
        }
    }

    /// The dispatcher's reason: the item's `lastError` and its journal `reason`.
    pub(crate) fn dispatcher_reason(&self) -> String {
        let why = match self {
            Self::NoDeliveryPort => "delivery_port_unavailable",
            Self::Refused(reason) => reason,
        };
        format!("review_pickup_delivery_unavailable:{why}")
    }
}

/// The dispatcher's reason when the delivery port went away between its
/// `canDeliver` and its `deliver` (the app's dispatcher without a port).
pub(crate) const PORT_UNAVAILABLE: &str = "review_pickup_delivery_port_unavailable";

/// Whether review pickups to `member` can be delivered now, asked of the
/// app's `reviewPickupDelivery.canDeliver` (never, without the option).
pub(crate) fn delivery(
    host: &dyn Host,
    team_name: &TeamName,
    member_name: &MemberName,
    provider_id: Option<ProviderId>,
) -> Result<(), PickupUndeliverable> {
    match host.review_pickup_can_deliver(team_name, member_name, provider_id) {
        None => Err(PickupUndeliverable::NoDeliveryPort),
        Some(Ok(())) => Ok(()),
        Some(Err(reason)) => Err(PickupUndeliverable::Refused(reason)),
    }
}

/// Hands an escalated pickup to the app's `reviewPickupEscalation` (nothing
/// without the option). A failed or late escalation changes nothing here:
/// the journal already holds `review_pickup_escalated` and the binding logs
/// the failure, as the app's planner only warns.
pub(crate) fn escalate(host: &dyn Host, escalation: &ReviewPickupEscalation<'_>) {
    let _logged_by_the_binding = host.review_pickup_escalate(escalation);
}
