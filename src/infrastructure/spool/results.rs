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
use crate::application::turn_settled::{Disposition, Filing};
use crate::domain::time::EpochMs;
use crate::infrastructure::safe_fs::{is_temp_name, sync_staged, Dir};

impl FsSpool {
    /// Files a batch of claims (see [`TurnSettledSpool::file`]), each with
    /// its meta file, in four steps with one sync pass between each:
    ///
    /// 1. every meta file is written to a temp file and the batch's data
    ///    synced ([`sync_staged`]: writeback of all of them starts before the
    ///    first fsync waits, so they share journal commits);
    /// 2. the meta files are renamed into place and each results folder
    ///    synced once: every outcome is durable before its claim moves;
    /// 3. each payload is renamed from `processing/` into its results folder,
    ///    the commit point (`Ok(false)`: the claim was lost to another
    ///    drainer's recovery);
    /// 4. `processing/` and the results folders are synced once each, so no
    ///    event is acted on before its move is on disk.
    ///
    /// A filing whose meta cannot be written or synced is an error and its
    /// claim stays in `processing/` (the caller releases it). A failure to
    /// sync the folders after the moves cannot take them back: they stand.
    /// [`TurnSettledSpool::file`]: crate::application::turn_settled::TurnSettledSpool::file
    pub(super) fn file_batch(&self, filings: &[Filing<'_>]) -> Vec<Result<bool, PortError>> {
        let mut results: Vec<Option<Result<bool, PortError>>> = Vec::new();
        results.resize_with(filings.len(), || None);
        if let Err(error) = self.file_into(filings, &mut results) {
            // A folder that could not be opened or synced: every filing not
            // decided yet fails with it.
            for result in results.iter_mut().filter(|r| r.is_none()) {
                let copy = io::Error::new(error.kind(), error.to_string());
                *result = Some(Err(copy.into()));
            }
        }
        results
            .into_iter()
            .map(|result| result.unwrap_or(Ok(false)))
            .collect()
    }

    fn file_into(
        &self,
        filings: &[Filing<'_>],
        results: &mut [Option<Result<bool, PortError>>],
    ) -> io::Result<()> {
        if filings.is_empty() {
            return Ok(());
        }
        let Some(processing) = self.paths.open(Folder::Processing)? else {
            return Ok(());
        };
        let mut folders: Vec<(Folder, Dir)> = Vec::new();
        for filing in filings {
            let folder = folder_of(filing.disposition);
            if !folders.iter().any(|(f, _)| *f == folder) {
                folders.push((folder, self.paths.create(folder)?));
            }
        }
        let dir_of = |disposition| {
            let folder = folder_of(disposition);
            &folders
                .iter()
                .find(|(f, _)| *f == folder)
                .expect("every filing's folder was opened")
                .1
        };
        // 1. Meta files beside their targets, their data synced as one pass.
        let mut staged = Vec::new();
        let mut owners = Vec::new();
        for (i, filing) in filings.iter().enumerate() {
            let dir = dir_of(filing.disposition);
            match meta_bytes(&filing.meta).and_then(|bytes| {
                dir.try_clone()?
                    .stage(meta_name(&filing.claim.id), &bytes, META_MODE)
            }) {
                Ok(file) => {
                    staged.push(file);
                    owners.push(i);
                }
                Err(error) => results[i] = Some(Err(error.into())),
            }
        }
        let synced = sync_staged(&staged);
        // 2. In place, then each results folder synced once.
        let mut placed = Vec::new();
        for ((i, file), sync) in owners.into_iter().zip(staged).zip(synced) {
            match sync.and_then(|()| file.publish()) {
                Ok(()) => placed.push(i),
                Err(error) => results[i] = Some(Err(error.into())),
            }
        }
        for (_, dir) in &folders {
            dir.sync()?;
        }
        // 3. The commit point: each payload moves into its results folder.
        for i in placed {
            let filing = &filings[i];
            let claimed = claimed_name(&filing.claim.id, filing.claim.claimed_at_ms);
            // Replacing: an older result of the same name is superseded.
            let moved =
                processing.rename(&claimed, dir_of(filing.disposition), &filing.claim.id, true);
            results[i] = Some(moved.map_err(Into::into));
        }
        // 4. The moves, durable before any of them is acted on.
        let _ = processing.sync();
        for (_, dir) in &folders {
            let _ = dir.sync();
        }
        Ok(())
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

/// Permission bits of meta files.
const META_MODE: u32 = 0o600;

/// The results folder of a disposition.
fn folder_of(disposition: Disposition) -> Folder {
    match disposition {
        Disposition::Processed => Folder::Processed,
        Disposition::Invalid => Folder::Invalid,
    }
}

/// A meta file's content: pretty JSON and a final newline.
fn meta_bytes(meta: &Value) -> io::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// The meta of an abandoned hook temp file the sweep moved to `invalid/`:
/// written whole (temp + rename) but not synced, like the move it describes
/// (no claim waits on it).
pub(super) fn write_meta(dir: &Dir, name: &str, meta: &Value) -> io::Result<()> {
    dir.write_replacing(name, &meta_bytes(meta)?, META_MODE, false)
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
    use crate::application::turn_settled::Disposition;
    use crate::application::turn_settled::TurnSettledSpool;
    use crate::domain::retention::Retention;
    use crate::infrastructure::clock::SystemClock;
    use crate::infrastructure::spool::testing::{file_one, names, set_mtime, spool, T0};
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
        assert!(file_one(
            &spool,
            &claims[0],
            Disposition::Processed,
            serde_json::json!({})
        )
        .is_err());
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
