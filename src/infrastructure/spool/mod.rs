//! The runtime turn-settled spool: `<teamsBase>/.member-work-sync/runtime-hooks/` with
//! `bin/ incoming/ processing/ processed/ invalid/`.
//!
//! Every state change is one `rename(2)` inside the spool, so a file is always
//! in exactly one dir and two drainers (two app windows) cannot both own it:
//!
//! * claim: `incoming/<name>` → `processing/<name>.claimed-<ms>`; the claim time
//!   travels in the name, atomically with the claim, so recovery can tell a
//!   stale claim from a fresh one without trusting file times;
//! * commit: the meta file is written and synced first (in place when no
//!   meta of its name is there, the exclusive create being the check: the
//!   spool never leaves a result without its meta, so until the commit no
//!   result sits beside it, a torn one is never read as an outcome and the
//!   retry replaces it), then the payload is
//!   renamed into `processed/` or `invalid/`. That rename is the commit
//!   point: a drainer whose claim was recovered by another one (it stalled
//!   for over 5 min) finds its source gone and reports the claim lost, so
//!   the event is acted on once;
//! * release and recovery: back to `incoming/<name>`, never over a new file
//!   that took the name meanwhile (`RENAME_NOREPLACE`).
//!
//! Agents write freely below the teams folder, so the spool is reached
//! through the file boundary ([`crate::infrastructure::safe_fs`]): the teams
//! folder is trusted as configured, and every component below it is opened
//! without following a link. A link or file where a spool folder should be
//! fails the drain (or install) with an error naming it; nothing reached
//! through a link is read, written, renamed, chmod'ed or deleted. A link,
//! FIFO or folder in `incoming/` is moved as the entry it is and filed as
//! `payload_not_a_file`. Any other failure to rename, list or remove (a
//! read-only spool) is an error too, never an empty drain.
//!
//! Outcomes are durable: a drain files its whole batch at once (group
//! commit, `results`), in two sync rounds per batch and none per event:
//!
//! 1. each result's `<result>.meta.json` is written beside it, unsynced (as
//!    soon as its claim is judged, beside the next claims: `staging`), and
//!    the batch's outcomes bound for one results folder are written into one
//!    outcome record there (`outcomes`; a folder's lone outcome, a drain at
//!    rest, is its meta itself);
//! 2. round one: the records' data and the results folders synced side by
//!    side. **The commit point** follows: each payload's rename from
//!    `processing/` into its results folder. Before it, the event is
//!    unfiled (a crash leaves the claim for recovery; a meta or record it
//!    left is superseded by the retry's newer filing); after it, the outcome is on disk in
//!    its synced record, whatever happens to the unsynced meta copy;
//! 3. round two: `processing/` and the results folders synced side by side,
//!    before any event of the batch is acted on.
//!
//! While a backlog drains, the next batch's record in `processed/` is
//! created empty just before round two (named after the newest name the
//! next batch can claim, from the listing the claims come from), so round
//! two makes its name durable along with the moves; the next batch writes
//! its outcomes into it and its round one is that record's data alone:
//! three syncs per batch instead of four. A crash before the record is
//! filled leaves it empty or torn, read by nothing (no claim moved on it);
//! after its data sync it is a whole record under a durable name, as one
//! made in the batch would be. The batch writes a record of its own when
//! the ready one cannot serve: a result that sorts after its name, gone or
//! its folder moved (checked after writing it, which makes it young again
//! for retention), or older than half a claim's life (see `outcomes`).
//!
//! A kill leaves each meta whole as written (the page cache survives); a
//! power cut may leave the meta of a committed result torn or empty, and
//! the next process's first filing or drain rewrites, durably, every meta
//! that differs from its record. The hook's payloads, the
//! claims and the boot-time file are not synced: a payload the hook spooled
//! just before a power cut is lost like any unsynced write, and a claim lost
//! with it goes back to `incoming/` by recovery.
//!
//! A backlog of thousands costs O(1) per event: `incoming/` is listed once
//! per 5,000 claims (`LISTED_NAMES_KEPT`), and retention (the newest 1,000
//! results by default) is applied once a tenth of the cap was filed since,
//! its removals side by side and overlapping the next batch (each unlink
//! can wait on the disk); at rest, after every drain.
//!
//! One job per file: [`paths`](SpoolPaths) (where the folders are),
//! `install` (layout, script, boot time), `name` (spool file names), `claim`
//! (claim, recovery, release), `payload` (reading a claim), `staging` (a
//! batch's metas written while it is judged), `results` (commit and
//! retention), `outcomes` (the batches' durable outcome
//! records), `sweep` (abandoned hook temp files), `launch` (what a runtime
//! launch takes: the hook's settings or the spool's environment).

mod claim;
mod guard;
mod install;
mod launch;
mod name;
mod outcomes;
mod paths;
mod payload;
mod results;
mod shipped;
mod staging;
mod sweep;
#[cfg(test)]
mod testing;

use crate::domain::retention::Retention;
use crate::domain::time::EpochMs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64};
use std::sync::{Arc, Mutex};

use crate::application::log::LogSink;
use crate::application::ports::{Clock, PortError};
use crate::application::turn_settled::{
    Disposition, Filing, FilingMeta, SpoolClaim, TurnSettledSpool,
};

pub use claim::{STALE_CLAIM_MS, STAMP_TOLERANCE_MS};
pub use install::{
    HookProgram, InstalledHook, BOOT_TIME_FILE_NAME, HOOK_EXECUTABLE_NAME, HOOK_SCRIPT,
    HOOK_SCRIPT_NAME, MAX_HOOK_EXECUTABLE_BYTES,
};
pub use launch::{runtime_hook_environment, runtime_hook_settings};
pub use name::{parse_spool_name, SpoolName};
pub use paths::SpoolPaths;
pub use shipped::shipped_hook_executable;
pub use sweep::ABANDONED_TEMP_MS;

use guard::{ExecutableGuard, KeepFailures};

/// How often a full listing of a spool folder is paid for: `incoming/` is
/// swept for abandoned temp files at most this often, and a results folder
/// is pruned at least this often. Once per drain would cost more than the
/// drain itself when thousands are pending.
pub(crate) const SWEEP_EVERY_MS: EpochMs = 10 * 60 * 1000;
use paths::Folder;
use results::{PruneSchedule, Removals};

/// The file-backed spool.
pub struct FsSpool {
    paths: SpoolPaths,
    clock: Arc<dyn Clock>,
    /// When `incoming/` was last swept for abandoned temp files (0: never).
    last_sweep_ms: AtomicI64,
    /// How many processed and invalid results are kept, and how long.
    retention: Retention,
    /// Pending names of the last listing of `incoming/` not claimed yet,
    /// newest first (see `claim::LISTED_NAMES_KEPT`).
    backlog: Mutex<Vec<String>>,
    /// When each results folder is pruned next.
    prunes: PruneSchedule,
    /// Retention's removals under way.
    removals: Removals,
    /// The hook executable kept in `bin/`.
    executable: ExecutableGuard,
    /// When the hook executable was last read and hashed (0: never; see
    /// `guard::CHECK_EXECUTABLE_IN_BACKLOG_MS`).
    executable_checked_ms: AtomicI64,
    /// Where a failure to keep the hook programs is logged.
    keep_failures: KeepFailures,
    /// Whether the meta files were repaired from their outcome records
    /// (see `outcomes`); `repairing` runs one repair at a time.
    metas_repaired: AtomicBool,
    repairing: Mutex<()>,
    /// The next batch's bound and record (see `outcomes`).
    foresight: Mutex<outcomes::Foresight>,
    /// The batch's metas staged while it is judged (see `staging`).
    staging: Mutex<Option<staging::Staging>>,
}

impl FsSpool {
    /// A spool at `paths`, timed by `clock`, keeping the hook executable
    /// shipped beside the addon (if one ships) in `bin/`.
    pub fn new(paths: SpoolPaths, clock: Arc<dyn Clock>) -> Self {
        let shipped = shipped_hook_executable().ok().map(Path::to_path_buf);
        Self::keeping_executable(paths, clock, shipped)
    }

    /// A spool at `paths`, timed by `clock`, keeping the executable copied
    /// from `executable_source` in `bin/` (none: only the script).
    pub(crate) fn keeping_executable(
        paths: SpoolPaths,
        clock: Arc<dyn Clock>,
        executable_source: Option<PathBuf>,
    ) -> Self {
        Self {
            paths,
            clock,
            last_sweep_ms: AtomicI64::new(0),
            retention: Retention::default(),
            backlog: Mutex::default(),
            prunes: PruneSchedule::default(),
            removals: Removals::default(),
            executable: ExecutableGuard::new(executable_source),
            executable_checked_ms: AtomicI64::new(0),
            keep_failures: KeepFailures::default(),
            metas_repaired: AtomicBool::new(false),
            repairing: Mutex::new(()),
            foresight: Mutex::default(),
            staging: Mutex::default(),
        }
    }

    /// Keeps processed and invalid results as `retention` says instead of
    /// by the defaults.
    pub(crate) fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Logs to `log` when the hook programs cannot be kept (once per
    /// distinct error): the drain goes on claiming.
    pub(crate) fn with_log(mut self, log: Arc<dyn LogSink>) -> Self {
        self.keep_failures = KeepFailures::new(log);
        self
    }

    /// Where this spool's folders are, under
    /// `<teamsBase>/.member-work-sync/runtime-hooks`.
    pub fn paths(&self) -> &SpoolPaths {
        &self.paths
    }
}

impl TurnSettledSpool for FsSpool {
    fn claim(&self, limit: usize, each: &mut dyn FnMut(SpoolClaim)) -> Result<usize, PortError> {
        self.claim_batch(limit, each)
    }

    fn stage(&self, claim: &SpoolClaim, disposition: Disposition, meta: &FilingMeta) {
        self.stage_ahead(claim, disposition, meta);
    }

    fn file(&self, filings: &[Filing<'_>]) -> Vec<Result<bool, PortError>> {
        self.file_batch(filings)
    }

    fn release(&self, claim: &SpoolClaim) -> Result<(), PortError> {
        self.give_back(claim)
    }

    /// Sweeps abandoned hook temp files and applies retention to both result
    /// folders; every step runs, and the first failure is returned.
    fn after_drain(&self) -> Result<(), PortError> {
        // A drain that filed nothing repairs here (see `outcomes`).
        self.repair_metas_once(&[]);
        let now = self.clock.now_ms();
        let swept = self.sweep_abandoned_temps(now);
        // Both result folders from one handle of the spool root.
        let pruned = self.paths.open_root().and_then(|root| {
            let Some(root) = root else {
                return Ok(());
            };
            let steps = [
                self.prune_folder(
                    &root,
                    Folder::Processed,
                    self.retention.spool_processed_max_files,
                    self.retention.spool_processed_max_age_ms,
                    now,
                ),
                self.prune_folder(
                    &root,
                    Folder::Invalid,
                    self.retention.spool_invalid_max_files,
                    self.retention.spool_invalid_max_age_ms,
                    now,
                ),
            ];
            steps.into_iter().find_map(Result::err).map_or(Ok(()), Err)
        });
        swept.and(pruned).map_err(Into::into)
    }

    fn settle(&self) {
        self.removals.wait();
    }
}
