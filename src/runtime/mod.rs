//! Wiring and lifetime: what builds the use cases from paths and keeps a
//! running instance going, as opposed to the file adapters it plugs in.
//!
//! - [`composition`]: the composition root ([`composition::Services`] from a
//!   root's paths) and an instance's lifecycle ([`composition::Instance`]:
//!   start, schedules, dispose).
//! - `options`: the constructor options' checks and their [`composition::Tuning`].
//! - `worker`: the instance's own threads: the team change intake, the
//!   reconcile queue driver, the nudge dispatch and activity schedules;
//!   `worker::drain`, the turn-settled drain schedule and its spool watch.
//! - `shared_watcher`: the one file watcher a process shares between its
//!   instances' spool watches.
//! - `activity_file`: the queue view a driving instance publishes for other
//!   processes.
//!
//! Dependency rule: `runtime` may use all of `domain`, `application` and
//! `infrastructure`; `infrastructure` and `application` never use `runtime`;
//! `binding` (and the benches and tests) reach the use cases through it.

mod activity_file;
pub mod composition;
pub(crate) mod options;
mod shared_watcher;
pub(crate) mod worker;
