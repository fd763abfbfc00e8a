//! Builds the use cases from paths: the composition root the binding and the
//! benches share.

use std::path::PathBuf;
use std::sync::Arc;

use crate::application::ports::Clock;
use crate::application::reconcile::{Ports, Reconciler};
use crate::application::runtime_state::RuntimeStates;

use super::clock::{ManualClock, SystemClock};
use super::intent_store::FsReportIntentStore;
use super::metrics_store::FsMetricsStore;
use super::report_token::HmacReportTokens;
use super::status_store::{FsAuditJournal, FsStatusStore, StorePaths};
use super::team_reader::FsTeamSource;

/// Where the Claude home and its team and task dirs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootPaths {
    /// `teams/` dir.
    pub teams_base: PathBuf,
    /// `tasks/` dir.
    pub tasks_base: PathBuf,
}

impl RootPaths {
    /// Resolves the documented defaults: `claudeRoot` ← `$CLAUDE_CONFIG_DIR` ← `~/.claude`;
    /// teams and tasks under it unless given.
    pub fn resolve(
        claude_root: Option<PathBuf>,
        teams_base: Option<PathBuf>,
        tasks_base: Option<PathBuf>,
    ) -> Self {
        let root = claude_root
            .or_else(|| {
                std::env::var_os("CLAUDE_CONFIG_DIR")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| {
                std::env::var_os("HOME")
                    .or_else(|| std::env::var_os("USERPROFILE"))
                    .map(PathBuf::from)
                    .unwrap_or_default()
                    .join(".claude")
            });
        Self {
            teams_base: teams_base.unwrap_or_else(|| root.join("teams")),
            tasks_base: tasks_base.unwrap_or_else(|| root.join("tasks")),
        }
    }
}

/// The wired use cases of one addon instance.
pub struct Services {
    /// Reconcile and status queries.
    pub reconciler: Reconciler,
    /// Supervisor-reported runtime state.
    pub runtime: Arc<RuntimeStates>,
    /// The test clock, when the instance was built with one.
    pub manual_clock: Option<Arc<ManualClock>>,
}

impl Services {
    /// Wires file-backed ports under `paths`; `fixed_now_ms` selects a manual clock.
    pub fn new(paths: RootPaths, fixed_now_ms: Option<i64>) -> Self {
        let manual_clock = fixed_now_ms.map(|now| Arc::new(ManualClock::new(now)));
        let clock: Arc<dyn Clock> = match &manual_clock {
            Some(manual) => manual.clone(),
            None => Arc::new(SystemClock),
        };
        let store_paths = StorePaths::new(paths.teams_base.clone());
        let runtime = Arc::new(RuntimeStates::default());
        let reconciler = Reconciler::new(Ports {
            clock: clock.clone(),
            teams: Arc::new(FsTeamSource::new(
                paths.teams_base.clone(),
                paths.tasks_base,
            )),
            store: Arc::new(FsStatusStore::new(store_paths.clone(), clock.clone())),
            journal: Arc::new(FsAuditJournal::new(store_paths.clone())),
            tokens: Arc::new(HmacReportTokens::new(paths.teams_base.clone())),
            metrics: Arc::new(FsMetricsStore::new(paths.teams_base, clock.clone())),
            intents: Arc::new(FsReportIntentStore::new(store_paths, clock)),
            runtime: runtime.clone(),
        });
        Self {
            reconciler,
            runtime,
            manual_clock,
        }
    }
}
