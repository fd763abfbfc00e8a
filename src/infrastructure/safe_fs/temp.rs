//! Temp files of atomic writes: a name that says whose they are, and the
//! rule saying when one a crash left behind is abandoned (the sweep that
//! removes those: `dir_sweep.rs`).
//!
//! A writer killed between creating its temp file and renaming it leaves
//! `.<name>.mws-tmp.<pid>.<n>`.

use std::ffi::OsStr;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::domain::time::EpochMs;
use crate::infrastructure::process::process_alive;

/// Marks the addon's temp files: `.<name>.mws-tmp.<pid>.<n>`.
pub const TEMP_MARK: &str = ".mws-tmp.";
/// Temp files of the `tempfile` crate written by earlier versions
/// (`.<name>.tmp.<random>`): they carry no pid, so only age decides.
const LEGACY_TEMP_MARK: &str = ".tmp.";
/// A temp file younger than this may still be in use even if its pid looks
/// gone (a writer in another pid namespace): a write takes milliseconds.
pub(crate) const TEMP_IN_USE_MS: EpochMs = 60 * 1000;
/// A temp file older than this is abandoned even if its pid is alive again
/// (pids are reused).
pub const TEMP_ABANDONED_MS: EpochMs = 60 * 60 * 1000;

/// The next temp file name for a target.
pub(super) struct TempName<'a> {
    target: &'a OsStr,
    n: u64,
}

impl<'a> TempName<'a> {
    pub(super) fn next(target: &'a OsStr) -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Self {
            target,
            n: NEXT.fetch_add(1, Ordering::Relaxed),
        }
    }
}

impl fmt::Display for TempName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = self.target.to_string_lossy();
        write!(f, ".{target}{TEMP_MARK}{}.{}", std::process::id(), self.n)
    }
}

/// Whether `name` is a temp file of an atomic write (this version's or an
/// earlier one's).
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && (name.contains(TEMP_MARK) || is_legacy_temp_name(name))
}

/// `.<name>.tmp.` and the `tempfile` crate's six random characters, exactly:
/// a looser match would sweep other programs' files in shared folders.
fn is_legacy_temp_name(name: &str) -> bool {
    name.rsplit_once(LEGACY_TEMP_MARK)
        .is_some_and(|(head, random)| {
            head.len() > 1 && random.len() == 6 && random.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// The pid in a temp name of this version.
fn writer_pid(name: &str) -> Option<u32> {
    let (_, rest) = name.rsplit_once(TEMP_MARK)?;
    rest.split('.').next()?.parse().ok()
}

/// Whether the temp file `name`, last modified `age_ms` ago, is abandoned.
/// A modification time further in the future than a clock step could
/// explain says nothing about age: such a file is judged by its pid alone.
pub(super) fn abandoned(name: &str, age_ms: EpochMs) -> bool {
    if age_ms >= TEMP_ABANDONED_MS {
        return true;
    }
    let old_enough = !(-TEMP_IN_USE_MS..TEMP_IN_USE_MS).contains(&age_ms);
    match writer_pid(name) {
        Some(pid) => old_enough && pid != std::process::id() && !process_alive(pid),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_writer_pid() {
        let name = TempName::next(OsStr::new("status.json")).to_string();
        assert!(name.starts_with(".status.json.mws-tmp."), "{name}");
        assert!(is_temp_name(&name));
        assert_eq!(writer_pid(&name), Some(std::process::id()));
        assert!(!is_temp_name("status.json"));
    }

    #[test]
    fn a_future_modification_time_is_judged_by_the_pid_alone() {
        let hundred_years = 100 * 365 * 24 * 3600 * 1000;
        let dead = ".status.json.mws-tmp.2147483632.0";
        let mine = format!(".status.json.mws-tmp.{}.0", std::process::id());
        assert!(abandoned(dead, -hundred_years));
        assert!(!abandoned(&mine, -hundred_years));
        assert!(!abandoned(dead, -1000), "a small clock step: still young");
    }
}
