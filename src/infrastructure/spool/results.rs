//! Results: the commit of a claim into `processed/` or `invalid/` with its
//! meta file, and their retention.

use std::collections::HashSet;
use std::io;

use serde_json::Value;

use super::claim::STALE_CLAIM_MS;
use super::name::{claimed_name, meta_name, parse_spool_name, parse_stamp, SpoolName, META_SUFFIX};
use super::paths::Folder;
use super::FsSpool;
use crate::application::ports::PortError;
use crate::application::turn_settled::SpoolClaim;
use crate::domain::time::EpochMs;
use crate::infrastructure::safe_fs::{is_temp_name, Dir};

impl FsSpool {
    /// Files `claim` under `folder` (`processed/` or `invalid/`): the meta
    /// file first, then the payload is renamed in. That rename is the commit
    /// point; `false` when the claim was lost (another drainer recovered it).
    pub(super) fn commit(
        &self,
        claim: &SpoolClaim,
        folder: Folder,
        meta: &Value,
    ) -> Result<bool, PortError> {
        let Some(processing) = self.paths.open(Folder::Processing)? else {
            return Ok(false);
        };
        let results = self.paths.create(folder)?;
        write_meta(&results, &meta_name(&claim.id), meta)?;
        let claimed = claimed_name(&claim.id, claim.claimed_at_ms);
        // Replacing: an older result of the same name is superseded.
        Ok(processing.rename(&claimed, &results, &claim.id, true)?)
    }

    /// Applies retention to `folder` (see [`prune`]); nothing when it is missing.
    pub(super) fn prune_folder(
        &self,
        folder: Folder,
        keep: usize,
        max_age_ms: EpochMs,
        now: EpochMs,
    ) -> io::Result<()> {
        match self.paths.open(folder)? {
            Some(dir) => prune(&dir, keep, max_age_ms, now),
            None => Ok(()),
        }
    }
}

/// Meta files are diagnostics: written whole (temp + rename) but not synced,
/// like everything in the spool.
pub(super) fn write_meta(dir: &Dir, name: &str, meta: &Value) -> io::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
    bytes.push(b'\n');
    dir.write_replacing(name, &bytes, 0o600, false)
}

/// Keeps the newest `keep` results of `dir` and none older than `max_age_ms`,
/// and removes what a crash can leave: temp files of meta writes, and meta
/// files whose payload never arrived (a meta is written just before its
/// payload is renamed in), once they are older than a claim may live.
/// Entries are removed without following links (a `payload_not_a_file`
/// result may be a link or a folder: the entry itself goes). An entry that
/// cannot be removed (a planted tree too deep to descend) is skipped and
/// tried again next time: one bad entry must not stop the pruning of the rest
/// or fail the drain. Only a folder that cannot be listed is an error.
pub(super) fn prune(dir: &Dir, keep: usize, max_age_ms: EpochMs, now: EpochMs) -> io::Result<()> {
    let names: Vec<String> = dir.entries()?.into_iter().map(|e| e.name).collect();
    let age_of = |name: &str| dir.meta(name).ok().flatten().map(|meta| meta.modified_ms);
    let mut payloads: Vec<&String> = names
        .iter()
        .filter(|n| !n.starts_with('.') && !n.ends_with(META_SUFFIX))
        .collect();
    let present: HashSet<&str> = payloads.iter().map(|n| n.as_str()).collect();
    for name in &names {
        let leftover = is_temp_name(name)
            || name
                .strip_suffix(META_SUFFIX)
                .is_some_and(|payload| !present.contains(payload));
        if leftover && age_of(name).is_some_and(|at| now - at > STALE_CLAIM_MS) {
            let _ = dir.remove_tree(name);
        }
    }
    // Names start with the hook's UTC stamp, so name order is time order.
    payloads.sort_unstable_by(|a, b| b.cmp(a));
    for (rank, name) in payloads.iter().enumerate() {
        let at = match parse_spool_name(name) {
            SpoolName::Event { stamp_ms, .. } => Some(stamp_ms),
            _ => match parse_stamp(name) {
                Some(at) => Some(at),
                None => age_of(name),
            },
        };
        let too_old = at.is_some_and(|at| now - at > max_age_ms);
        if rank >= keep || too_old {
            let _ = dir.remove_tree(name.as_str());
            let _ = dir.remove_tree(meta_name(name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::application::ports::Clock;
    use crate::application::turn_settled::TurnSettledSpool;
    use crate::domain::retention::Retention;
    use crate::infrastructure::clock::SystemClock;
    use crate::infrastructure::spool::testing::{names, set_mtime, spool, T0};
    use std::fs;
    use std::os::unix::fs::symlink;

    fn open(spool: &FsSpool, folder: Folder) -> Dir {
        spool.paths.open(folder).unwrap().unwrap()
    }

    #[test]
    fn crash_leftovers_in_results_are_removed_once_older_than_a_claim() {
        let now = SystemClock.now_ms();
        let (_dir, spool, _) = spool(now);
        let processed = spool.paths().processed();
        let old = now - STALE_CLAIM_MS - 60_000;
        let mine = format!(".x.meta.json.mws-tmp.{}.0", std::process::id());
        for (name, at) in [
            (".meta.tmp.Ab3dEf", old),
            (".meta.tmp.Zz9yXw", now),
            (mine.as_str(), old),
            ("20261122T100000Z-1-0.claude.json.meta.json", old),
            ("20261122T100001Z-1-0.claude.json.meta.json", now),
        ] {
            fs::write(processed.join(name), b"{}").unwrap();
            set_mtime(&processed.join(name), at);
        }
        // (Earlier versions named meta temp files `.meta.tmp.<6 random>`.)
        // A result with its meta stays.
        let kept = "20261122T100002Z-1-0.claude.json";
        fs::write(processed.join(kept), b"{}").unwrap();
        fs::write(processed.join(format!("{kept}.meta.json")), b"{}").unwrap();
        set_mtime(&processed.join(format!("{kept}.meta.json")), old);
        prune(
            &open(&spool, Folder::Processed),
            Retention::default().spool_processed_max_files,
            i64::MAX / 2,
            now,
        )
        .unwrap();
        assert_eq!(
            names(&processed),
            vec![
                ".meta.tmp.Zz9yXw",
                "20261122T100001Z-1-0.claude.json.meta.json",
                "20261122T100002Z-1-0.claude.json",
                "20261122T100002Z-1-0.claude.json.meta.json",
            ]
        );
    }

    #[test]
    fn retention_keeps_the_newest_and_drops_the_old() {
        let now = T0 + 80 * 3600 * 1000;
        let (_dir, spool, _) = spool(now);
        let invalid = spool.paths().invalid();
        let processed = spool.paths().processed();
        for i in 0..105 {
            let name = format!("20261125T{:02}{:02}00Z-1-0.claude.json", i / 60, i % 60);
            fs::write(invalid.join(&name), b"x").unwrap();
            fs::write(invalid.join(format!("{name}.meta.json")), b"{}").unwrap();
        }
        // 73 h old: past the 72 h of invalid results.
        fs::write(invalid.join("20261122T090000Z-1-0.claude.json"), b"x").unwrap();
        fs::write(processed.join("20261122T100000Z-1-0.claude.json"), b"x").unwrap();
        fs::write(processed.join("20261125T170000Z-1-0.claude.json"), b"x").unwrap();
        spool.after_drain().unwrap();
        let kept = names(&invalid);
        assert_eq!(kept.len(), 200);
        assert_eq!(kept[0], "20261125T000500Z-1-0.claude.json");
        assert_eq!(names(&processed), vec!["20261125T170000Z-1-0.claude.json"]);
    }

    /// Results that are links or folders (`payload_not_a_file`) are pruned
    /// as entries: a link's target and what a folder link points to stay.
    #[test]
    fn pruning_removes_links_and_folders_themselves() {
        let (dir, spool, _) = spool(T0);
        let invalid = spool.paths().invalid();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("precious"), b"x").unwrap();
        symlink(&outside, invalid.join("20261122T090000Z-1-0.claude.json")).unwrap();
        symlink(
            outside.join("precious"),
            invalid.join("20261122T090001Z-1-0.claude.json"),
        )
        .unwrap();
        fs::create_dir_all(invalid.join("20261122T090002Z-1-0.claude.json/sub")).unwrap();
        prune(
            &open(&spool, Folder::Invalid),
            0,
            Retention::default().spool_invalid_max_age_ms,
            T0,
        )
        .unwrap();
        assert!(names(&invalid).is_empty());
        assert_eq!(names(&outside), vec!["precious"]);
    }

    /// `invalid/` (or `processed/`) is a link to a folder outside: retention
    /// fails naming it and deletes nothing there (it used to delete that
    /// folder's files and an old subfolder).
    #[test]
    fn a_linked_results_folder_is_never_pruned_through() {
        for folder in [Folder::Invalid, Folder::Processed] {
            let now = T0 + 100 * 3600 * 1000;
            let (dir, spool, _) = spool(now);
            let outside = dir.path().join("outside");
            fs::create_dir_all(outside.join("old-sub")).unwrap();
            fs::write(outside.join("20261122T090000Z-1-0.claude.json"), b"x").unwrap();
            fs::write(outside.join("notes.txt"), b"x").unwrap();
            set_mtime(&outside.join("notes.txt"), T0);
            let at = spool.paths.path(folder);
            fs::remove_dir(&at).unwrap();
            symlink(&outside, &at).unwrap();
            let error = spool.after_drain().unwrap_err().to_string();
            assert!(
                error.contains(&format!("{}:", at.display())),
                "{folder:?}: {error}"
            );
            assert_eq!(
                names(&outside),
                vec!["20261122T090000Z-1-0.claude.json", "notes.txt", "old-sub"],
                "{folder:?}"
            );
        }
    }

    #[test]
    fn a_commit_into_a_linked_results_folder_fails_and_writes_nothing_there() {
        let (dir, spool, _) = spool(T0);
        fs::write(
            spool
                .paths()
                .incoming()
                .join("20261122T100000Z-1-0.claude.json"),
            b"{}",
        )
        .unwrap();
        let claims = spool.claim(1).unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::remove_dir(spool.paths().processed()).unwrap();
        symlink(&outside, spool.paths().processed()).unwrap();
        assert!(spool.complete(&claims[0], &serde_json::json!({})).is_err());
        assert!(names(&outside).is_empty());
        assert_eq!(names(&spool.paths().processing()).len(), 1);
    }

    #[test]
    fn an_entry_too_deep_to_remove_is_skipped_and_the_rest_pruned() {
        let (_dir, spool, _) = spool(T0);
        let processed = spool.paths().processed();
        let mut deep = processed.join("zzzz");
        for _ in 0..12 {
            deep = deep.join("x");
        }
        fs::create_dir_all(&deep).unwrap();
        fs::write(processed.join("20201122T100000Z-1-0.claude.json"), b"{}").unwrap();
        // Keep nothing: both entries are due; the deep tree cannot go.
        prune(
            &open(&spool, Folder::Processed),
            0,
            Retention::default().spool_processed_max_age_ms,
            T0,
        )
        .unwrap();
        assert_eq!(
            names(&processed),
            vec!["zzzz"],
            "the other result went anyway"
        );
    }
}
