//! The sweep of temp files a crash left behind in a folder (the names and
//! the rule saying which are abandoned: `temp.rs`).
//!
//! The first write into a folder in this process sweeps it (so a restart
//! cleans up after the crash), and later writes again at most every
//! [`SWEEP_EVERY`]; while a sweep leaves temp files that are too young to
//! judge, the next write sweeps again. Leftovers never pile up, and a folder
//! that is never written to again keeps only what it had.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use super::super::temp::{abandoned, is_temp_name};
use super::super::FileKind;
use super::Dir;
use crate::domain::time::EpochMs;
use crate::infrastructure::clock::epoch_ms;

/// How often one folder is swept.
const SWEEP_EVERY: Duration = Duration::from_secs(10 * 60);
/// How soon a folder is swept again when its last sweep kept temp files that
/// may still be in use.
const RESWEEP_KEPT_EVERY: Duration = Duration::from_secs(1);
/// Folders remembered as swept; past this the memory starts over.
const MAX_REMEMBERED_DIRS: usize = 10_000;

/// What one sweep of a folder did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Abandoned temp files removed.
    pub removed: usize,
    /// Temp files left because they may still be in use.
    pub kept: usize,
}

impl Dir {
    /// Removes abandoned temp files in this folder.
    pub fn sweep_temp_files(&self, now_ms: EpochMs) -> io::Result<Swept> {
        let mut swept = Swept::default();
        for entry in self.entries()? {
            if !is_temp_name(&entry.name) {
                continue;
            }
            let Some(meta) = self.meta(&entry.name)? else {
                continue;
            };
            if meta.kind != FileKind::File {
                continue;
            }
            if !abandoned(&entry.name, now_ms.saturating_sub(meta.modified_ms)) {
                swept.kept += 1;
            } else if self.remove_file(&entry.name)? {
                swept.removed += 1;
            }
        }
        Ok(swept)
    }
}

/// Folders swept by this process, and when.
fn swept_dirs() -> std::sync::MutexGuard<'static, HashMap<PathBuf, Instant>> {
    static SWEPT: OnceLock<Mutex<HashMap<PathBuf, Instant>>> = OnceLock::new();
    SWEPT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// After a write into `dir`: sweeps it unless this process did so recently
/// and left nothing behind. A failed sweep is not the write's failure; the
/// next write tries again.
pub(in crate::infrastructure::safe_fs) fn note_write(dir: &Dir) {
    let now = Instant::now();
    let recently = swept_dirs()
        .get(dir.path())
        .is_some_and(|at| now.duration_since(*at) < SWEEP_EVERY);
    if recently {
        return;
    }
    let Some(now_ms) = epoch_ms(SystemTime::now()) else {
        return;
    };
    let Ok(result) = dir.sweep_temp_files(now_ms) else {
        return;
    };
    // Files kept as possibly in use are looked at again after
    // [`RESWEEP_KEPT_EVERY`], not on every write: a folder full of entries
    // stays cheap to write to.
    let at = match result.kept {
        0 => now,
        _ => now
            .checked_sub(SWEEP_EVERY - RESWEEP_KEPT_EVERY)
            .unwrap_or(now),
    };
    let mut swept = swept_dirs();
    if swept.len() >= MAX_REMEMBERED_DIRS {
        swept.clear();
    }
    swept.insert(dir.path().to_path_buf(), at);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::safe_fs::temp::{TEMP_ABANDONED_MS, TEMP_IN_USE_MS};
    use crate::infrastructure::safe_fs::TrustedRoot;

    #[test]
    fn only_old_files_of_gone_writers_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path());
        let team = root.create_dir_all(dir.path()).unwrap();
        // pid 0x7fff_fff0 does not run; our own pid does.
        let dead = ".status.json.mws-tmp.2147483632.0";
        let mine = format!(".status.json.mws-tmp.{}.0", std::process::id());
        let legacy = ".status.json.tmp.AbC123";
        // Not the `tempfile` shape: another program's file, never swept.
        std::fs::write(dir.path().join(".notes.tmp.old-copy"), b"x").unwrap();
        for name in [dead, mine.as_str(), legacy, "status.json"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        let written = team.meta("status.json").unwrap().unwrap().modified_ms;
        let swept = |removed, kept| Swept { removed, kept };
        assert_eq!(
            team.sweep_temp_files(written + 1000).unwrap(),
            swept(0, 3),
            "all fresh"
        );
        assert_eq!(
            team.sweep_temp_files(written + TEMP_IN_USE_MS).unwrap(),
            swept(1, 2),
            "the dead writer's file once it is not in use"
        );
        assert_eq!(
            team.sweep_temp_files(written + TEMP_ABANDONED_MS).unwrap(),
            swept(2, 0),
            "everything once abandoned"
        );
        let mut left: Vec<_> = team
            .entries()
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        left.sort();
        assert_eq!(left, [".notes.tmp.old-copy", "status.json"]);
    }

    #[test]
    fn the_first_write_after_a_crash_sweeps_and_young_leftovers_are_swept_later() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path());
        let team = root.create_dir_all(&dir.path().join("forge")).unwrap();
        let old = ".status.json.mws-tmp.2147483632.1";
        let young = ".status.json.mws-tmp.2147483632.2";
        let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
        let age = |name: &str| {
            std::fs::File::options()
                .write(true)
                .open(team.path().join(name))
                .unwrap()
                .set_modified(an_hour_ago)
                .unwrap()
        };
        std::fs::write(team.path().join(old), b"x").unwrap();
        std::fs::write(team.path().join(young), b"x").unwrap();
        age(old);
        let names = |d: &Dir| -> Vec<String> {
            let mut n: Vec<_> = d.entries().unwrap().into_iter().map(|e| e.name).collect();
            n.sort();
            n
        };
        team.write_atomic("status.json", b"{}", 0o644).unwrap();
        assert_eq!(names(&team), [young, "status.json"]);
        // The young one was kept: a write a moment later looks again.
        age(young);
        std::thread::sleep(RESWEEP_KEPT_EVERY + Duration::from_millis(100));
        team.write_atomic("status.json", b"{}", 0o644).unwrap();
        assert_eq!(names(&team), ["status.json"]);
    }
}
