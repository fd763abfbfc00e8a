//! Helpers shared by the spool's unit tests.

use std::fs;
use std::path::Path;
use std::sync::Arc;

use super::{FsSpool, SpoolPaths};
use crate::application::ports::PortError;
use crate::application::turn_settled::{
    Disposition, Filing, FilingMeta, SpoolClaim, TurnSettledSpool,
};
use crate::domain::time::EpochMs;
use crate::infrastructure::clock::ManualClock;

/// 2026-11-22T10:00:00Z.
pub(super) const T0: EpochMs = 1_795_341_600_000;

/// An installed spool in a fresh temp dir, timed by a manual clock at `now`.
pub(super) fn spool(now: EpochMs) -> (tempfile::TempDir, FsSpool, Arc<ManualClock>) {
    let dir = tempfile::tempdir().unwrap();
    let paths = SpoolPaths::for_teams_base(&dir.path().join("teams"));
    paths.install().unwrap();
    let clock = Arc::new(ManualClock::new(now));
    (dir, FsSpool::new(paths, clock.clone()), clock)
}

/// The names in `dir`, sorted, outcome records left out (their own tests
/// are in `outcomes`).
pub(super) fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !super::outcomes::is_record_name(name))
        .collect();
    names.sort();
    names
}

/// Sets the modification time of the file at `path`.
pub(super) fn set_mtime(path: &Path, at: EpochMs) {
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(at as u64))
        .unwrap();
}

/// Files one claim (see [`TurnSettledSpool::file`]).
pub(super) fn file_one(
    spool: &FsSpool,
    claim: &SpoolClaim,
    disposition: Disposition,
    meta: serde_json::Value,
) -> Result<bool, PortError> {
    let filing = Filing {
        claim,
        disposition,
        meta: FilingMeta::of(&meta).expect("meta"),
    };
    spool.file(&[filing]).pop().expect("one result per filing")
}
