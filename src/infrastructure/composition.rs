//! Builds the use cases from paths: the composition root the binding and the
//! benches share.

use std::path::PathBuf;
use std::sync::Arc;

use crate::application::ports::Clock;
use crate::application::reconcile::Reconciler;
use crate::application::runtime_state::RuntimeStates;
use crate::application::turn_settled::{TeamChangeRelay, TurnSettledIngestor};

use super::clock::{ManualClock, SystemClock};
use super::spool::{FsSpool, SpoolPaths};
use super::status_store::{FsAuditJournal, FsStatusStore, StorePaths};
use super::team_reader::FsTeamSource;
use super::transcripts::FsClaudeSessionLocator;

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
    /// The runtime turn-settled spool layout.
    pub spool_paths: SpoolPaths,
    /// Drains the turn-settled spool.
    pub turn_settled: TurnSettledIngestor,
    /// Where the addon's team change events go (the `onTeamChange` callback).
    pub team_changes: Arc<TeamChangeRelay>,
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
        let teams = Arc::new(FsTeamSource::new(
            paths.teams_base.clone(),
            paths.tasks_base,
        ));
        let journal = Arc::new(FsAuditJournal::new(store_paths.clone()));
        let reconciler = Reconciler::new(
            clock.clone(),
            teams.clone(),
            Arc::new(FsStatusStore::new(store_paths, clock.clone())),
            journal.clone(),
            runtime.clone(),
        );
        let spool_paths = SpoolPaths::for_teams_base(&paths.teams_base);
        // The teams dir is `<claudeRoot>/teams`; transcripts live in `<claudeRoot>/projects`.
        let projects_dir = paths
            .teams_base
            .parent()
            .map(|root| root.join("projects"))
            .unwrap_or_else(|| paths.teams_base.join("..").join("projects"));
        let turn_settled = TurnSettledIngestor::new(
            clock.clone(),
            Arc::new(FsSpool::new(spool_paths.clone(), clock)),
            teams,
            Arc::new(FsClaudeSessionLocator::new(paths.teams_base, projects_dir)),
            runtime.clone(),
            journal,
        );
        Self {
            reconciler,
            runtime,
            manual_clock,
            spool_paths,
            turn_settled,
            team_changes: Arc::new(TeamChangeRelay::default()),
        }
    }
}
