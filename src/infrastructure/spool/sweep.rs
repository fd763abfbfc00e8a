//! Hook temp files a killed hook left in `incoming/`.

use std::io;
use std::sync::atomic::Ordering;

use super::name::{meta_name, shorten, HOOK_TEMP_PREFIX};
use super::paths::Folder;
use super::results::write_meta;
use super::{FsSpool, SWEEP_EVERY_MS};
use crate::domain::time::{format_iso, EpochMs};
use crate::infrastructure::process::process_alive;

/// A hook temp file untouched this long belongs to a hook that was killed
/// before its rename (a hook takes milliseconds; runtimes stop a hook after a
/// timeout of a minute or so).
pub const ABANDONED_TEMP_MS: EpochMs = 60 * 60 * 1000;

impl FsSpool {
    /// Moves hook temp files abandoned for [`ABANDONED_TEMP_MS`] to `invalid/`
    /// as `<mtime stamp>-abandoned-turn-settled.<pid>.<n>` with reason
    /// `abandoned_temp_file`. They are never claimed (the hook may have died
    /// mid-write), so without this they would stay in `incoming/` for good;
    /// in `invalid/` they are kept for inspection, then pruned like any result.
    /// A file whose hook (the pid in its name) still runs is left alone: a
    /// hook stopped for an hour (a suspended runtime) may yet finish it.
    /// The entry itself is moved: a link there is never followed.
    pub(super) fn sweep_abandoned_temps(&self, now: EpochMs) -> io::Result<()> {
        let last = self.last_sweep_ms.load(Ordering::Relaxed);
        // (A clock stepped back past the last sweep does not stop sweeping.)
        if last != 0 && (0..SWEEP_EVERY_MS).contains(&(now - last)) {
            return Ok(());
        }
        self.last_sweep_ms.store(now, Ordering::Relaxed);
        let Some(incoming) = self.paths.open(Folder::Incoming)? else {
            return Ok(());
        };
        let mut invalid = None;
        for entry in incoming.entries()? {
            let Some(rest) = entry.name.strip_prefix(HOOK_TEMP_PREFIX) else {
                continue;
            };
            let Some(meta) = incoming.meta(&entry.name)? else {
                continue;
            };
            let hook_pid = rest.split('.').next().and_then(|p| p.parse::<u32>().ok());
            if now - meta.modified_ms <= ABANDONED_TEMP_MS || hook_pid.is_some_and(process_alive) {
                continue;
            }
            let Some(stamp) = chrono::DateTime::from_timestamp_millis(meta.modified_ms) else {
                continue;
            };
            // (`shorten`: the hook's own names are short; anyone else's must
            // still fit the 255-byte name limit with the `.meta.json` suffix.)
            let target = format!(
                "{}-abandoned-turn-settled.{}",
                stamp.format("%Y%m%dT%H%M%SZ"),
                shorten(rest)
            );
            let invalid = match &invalid {
                Some(dir) => dir,
                None => invalid.insert(self.paths.create(Folder::Invalid)?),
            };
            // Moved first, so a file another drainer (or its hook) took
            // meanwhile leaves no meta behind; a crash before the meta leaves
            // a result without one, which retention prunes all the same.
            if !incoming.rename(&entry.name, invalid, &target, false)? {
                continue;
            }
            self.prunes.note_filed(Folder::Invalid, 1);
            let meta = serde_json::json!({
                "reason": "abandoned_temp_file",
                "processedAt": format_iso(now),
            });
            write_meta(invalid, &meta_name(&target), &meta)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::application::ports::Clock;
    use crate::application::turn_settled::TurnSettledSpool;
    use crate::infrastructure::clock::SystemClock;
    use crate::infrastructure::spool::name::parse_stamp;
    use crate::infrastructure::spool::testing::{names, spool};
    use serde_json::Value;
    use std::fs;

    #[test]
    fn hook_temp_files_abandoned_for_an_hour_move_to_invalid_and_fresh_ones_stay() {
        let real_now = SystemClock.now_ms();
        let (dir, spool, clock) = spool(real_now);
        let incoming = spool.paths().incoming();
        // A hook that has exited, and one that still runs (this process).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let dead_temp = format!(".turn-settled.{dead}.0");
        let live_temp = format!(".turn-settled.{}.0", std::process::id());
        fs::write(incoming.join(&dead_temp), b"{\"half").unwrap();
        fs::write(incoming.join(&live_temp), b"{\"still writing").unwrap();
        fs::write(incoming.join(".direct.1"), b"not the hook's").unwrap();
        // A link left under a hook temp name is moved as a link.
        let outside = dir.path().join("outside");
        fs::write(&outside, b"precious").unwrap();
        let link_temp = format!(".turn-settled.{dead}.1");
        std::os::unix::fs::symlink(&outside, incoming.join(&link_temp)).unwrap();
        let first_sweep = real_now + ABANDONED_TEMP_MS - SWEEP_EVERY_MS / 2;
        clock.set(first_sweep);
        spool.after_drain().unwrap();
        assert_eq!(names(&incoming).len(), 4);
        assert!(names(&spool.paths().invalid()).is_empty());

        // Swept at most every SWEEP_EVERY_MS: not yet, then once it is due.
        clock.set(real_now + ABANDONED_TEMP_MS + 1);
        spool.after_drain().unwrap();
        assert_eq!(names(&incoming).len(), 4);
        clock.set(first_sweep + SWEEP_EVERY_MS);
        spool.after_drain().unwrap();
        let mut left = vec![".direct.1".to_string(), live_temp];
        left.sort();
        assert_eq!(names(&incoming), left);
        let invalid = names(&spool.paths().invalid());
        assert_eq!(invalid.len(), 4, "{invalid:?}");
        let moved = format!("-abandoned-turn-settled.{dead}.0");
        assert!(invalid[0].ends_with(&moved), "{invalid:?}");
        assert!(matches!(parse_stamp(&invalid[0]), Some(at) if (at - real_now).abs() < 5_000));
        let invalid_dir = spool.paths().invalid();
        assert_eq!(fs::read(invalid_dir.join(&invalid[0])).unwrap(), b"{\"half");
        let meta: Value =
            serde_json::from_slice(&fs::read(invalid_dir.join(&invalid[1])).unwrap()).unwrap();
        assert_eq!(meta["reason"], "abandoned_temp_file");
        let link = invalid_dir.join(&invalid[2]);
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&outside).unwrap(), b"precious");

        // A clock stepped back before the last sweep does not stop sweeping.
        clock.set(real_now - SWEEP_EVERY_MS);
        let before = spool.last_sweep_ms.load(Ordering::Relaxed);
        spool.after_drain().unwrap();
        let after = spool.last_sweep_ms.load(Ordering::Relaxed);
        assert!(after < before, "swept again after the step back");
    }
}
