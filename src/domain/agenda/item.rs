//! What an agenda is: the member's actionable items, each with its kind,
//! the reason it is on the agenda (one wire spelling per reason), its
//! priority and the evidence behind it.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// What a member has to do about a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum ItemKind {
    /// Owned work: pending, in progress or changes requested.
    Work,
    /// A review the member owes in the current cycle.
    Review,
    /// A question only the lead can answer.
    Clarification,
    /// A dependency that cannot resolve (lead oversight).
    BlockedDependency,
}

impl ItemKind {
    /// The item's `kind` in an agenda and its status, and the first part of
    /// its fingerprint sort key.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Work => "work",
            Self::Review => "review",
            Self::Clarification => "clarification",
            Self::BlockedDependency => "blocked_dependency",
        }
    }
}

/// Why an item is on the agenda (the reference's seven reasons).
///
/// A stored agenda (a status the app or another version wrote) may carry a
/// reason outside this set: it is kept as [`ItemReason::Unrecognized`] and
/// written back as read, and no rule treats it as one of the seven.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemReason {
    /// The lead must answer a clarification.
    TaskNeedsLeadClarification,
    /// A dependency of the task cannot resolve (lead).
    TaskHasBrokenDependency,
    /// The task's reviewer is its owner (lead).
    SelfReviewInvalid,
    /// The member reviews the task in the current review cycle.
    CurrentCycleReviewAssigned,
    /// Review asked the owner for changes.
    ReviewChangesRequested,
    /// Owned work not started yet.
    OwnedPendingTask,
    /// Owned work in progress.
    OwnedInProgressTask,
    /// A spelling outside the set, as read.
    Unrecognized(String),
}

impl ItemReason {
    /// The known reasons.
    pub(crate) const KNOWN: [ItemReason; 7] = [
        Self::TaskNeedsLeadClarification,
        Self::TaskHasBrokenDependency,
        Self::SelfReviewInvalid,
        Self::CurrentCycleReviewAssigned,
        Self::ReviewChangesRequested,
        Self::OwnedPendingTask,
        Self::OwnedInProgressTask,
    ];

    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Self::TaskNeedsLeadClarification => "task_needs_lead_clarification",
            Self::TaskHasBrokenDependency => "task_has_broken_dependency",
            Self::SelfReviewInvalid => "self_review_invalid",
            Self::CurrentCycleReviewAssigned => "current_cycle_review_assigned",
            Self::ReviewChangesRequested => "review_changes_requested",
            Self::OwnedPendingTask => "owned_pending_task",
            Self::OwnedInProgressTask => "owned_in_progress_task",
            Self::Unrecognized(spelling) => spelling,
        }
    }
}

/// Reads a wire spelling; one outside the set is kept as read.
impl From<&str> for ItemReason {
    fn from(spelling: &str) -> Self {
        Self::KNOWN
            .into_iter()
            .find(|r| r.as_str() == spelling)
            .unwrap_or_else(|| Self::Unrecognized(spelling.to_string()))
    }
}

impl Serialize for ItemReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ItemReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spelling = Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Self::from(spelling.as_ref()))
    }
}

impl std::fmt::Display for ItemReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How urgent an item is; fixed per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Priority {
    /// Ordinary owned work.
    Normal,
    /// A review is waiting.
    ReviewRequested,
    /// Work is blocked.
    Blocked,
    /// A clarification is waiting.
    NeedsClarification,
}

impl Priority {
    /// The wire spelling (`serde`'s).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::ReviewRequested => "review_requested",
            Self::Blocked => "blocked",
            Self::NeedsClarification => "needs_clarification",
        }
    }
}

/// Board facts that justify an item; part of the fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct Evidence {
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_clarification: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker_task_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by_task_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_event_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_cycle_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_obligation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub can_bypass_phase2: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_request_event_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_requested_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_started_event_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_started_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_diagnostics: Option<Vec<String>>,
}

/// One thing a member should act on. `Eq`, so that two `Arc`s of one
/// item compare equal by address before their fields are read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS), ts(optional_fields))]
pub struct ActionableWorkItem {
    /// Canonical task id.
    pub task_id: String,
    /// Human task id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_id: Option<String>,
    /// Task subject (`Untitled task` when empty).
    pub subject: String,
    /// What to do.
    pub kind: ItemKind,
    /// The member the item is for.
    pub assignee: String,
    /// How urgent the item is; set by its kind (review, blocker,
    /// clarification, or ordinary work).
    pub priority: Priority,
    /// Why (not part of the fingerprint).
    pub reason: ItemReason,
    /// The board facts the item was derived from (status, owner, review,
    /// blockers, history ids).
    pub evidence: Evidence,
}

impl ActionableWorkItem {
    /// [`ActionableWorkItem::write_sort_key`] as a string of its own.
    #[cfg(test)]
    pub(crate) fn sort_key(&self) -> String {
        let mut key = String::new();
        self.write_sort_key(&mut key);
        key
    }

    /// Appends the sort key of the fingerprint to `out`:
    /// `kind:taskId:displayId`, compared with `js_semantics::locale_compare`
    /// (the reference's `localeCompare`), not as bytes.
    pub(crate) fn write_sort_key(&self, out: &mut String) {
        out.push_str(self.kind.as_str());
        out.push(':');
        out.push_str(&self.task_id);
        out.push(':');
        out.push_str(self.display_id.as_deref().unwrap_or_default());
    }
}

/// A member's agenda with its fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Agenda {
    /// The team the agenda was computed in.
    pub team_name: String,
    /// Member, normalized (trimmed, lowercased), as the reference reports it.
    pub member_name: String,
    /// When it was built.
    pub generated_at: String,
    /// `agenda:v1:<sha256 hex>`.
    pub fingerprint: String,
    /// Items in fingerprint order, shared: an unchanged task's item is the
    /// one its facts keep (see `TaskFacts`), not a copy.
    pub items: Vec<Arc<ActionableWorkItem>>,
    /// Why the agenda looks the way it does (not part of the fingerprint).
    pub diagnostics: Vec<String>,
}
