//! The actionable agenda of a member.
//!
//! [`TaskIndex`] derives everything per task once (effective review state,
//! workflow column, dependency resolution, review cycle) and buckets tasks by
//! the members they can concern, so building the agendas of every member is
//! linear in tasks, not members × tasks; kept between reads, it follows a
//! changed board in time proportional to the change. [`TeamIndex`] pairs it
//! with the roster of one snapshot and builds the agendas.
//!
//! One module per concept: `item` (what an agenda holds), `task_facts`
//! (what one task says), `task_index` (the board indexed, its tasks found
//! by reference through `reference_map`), `team_index` (the agendas
//! built); their items are re-exported here.

mod item;
mod reference_map;
mod task_facts;
mod task_index;
mod team_index;

pub use item::{ActionableWorkItem, Agenda, Evidence, ItemKind, ItemReason, Priority};
pub use task_facts::effective_review_state;
pub use task_index::TaskIndex;
pub use team_index::TeamIndex;

#[cfg(test)]
mod tests;
