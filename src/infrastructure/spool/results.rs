//! Results: the commit of a claim into `processed/` or `invalid/` with its
//! meta file, and their retention.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::Value;

use super::claim::STALE_CLAIM_MS;
use super::name::{claimed_name, meta_name, parse_spool_name, parse_stamp, SpoolName, META_SUFFIX};
use super::outcomes;
use super::paths::Folder;
use super::staging::{copy_error, folder_of, stage_meta, Staging, META_MODE};
use super::{FsSpool, SWEEP_EVERY_MS};
use crate::application::ports::PortError;
use crate::application::turn_settled::Filing;
use crate::domain::time::EpochMs;
use crate::infrastructure::safe_fs::{is_temp_name, sync_staged, sync_with_folders, Dir, Staged};
use crate::infrastructure::side_by_side::map_side_by_side;

impl FsSpool {
    /// Files a batch of claims (see [`TurnSettledSpool::file`]), each with
    /// its meta file, in four steps, two sync rounds per batch:
    ///
    /// 1. each meta file is written beside its target (in place when it is
    ///    new, see [`stage_meta`]), unless it was staged already while the
    ///    batch was judged (see [`staging`](super::staging)); where a
    ///    results folder gets two or more of the batch's outcomes, they are
    ///    written into one outcome record ([`outcomes`](super::outcomes)),
    ///    the metas' durable copy, and the metas left unsynced; a folder's
    ///    single outcome is its meta, synced itself (one fsync either way,
    ///    and no record at rest);
    /// 2. the records' and single metas' data and the results folders are
    ///    synced, side by side in one round when every meta was written in
    ///    place (else data first, then the renames of the replacing metas,
    ///    then the folders): every outcome is durable (in its record) before
    ///    its claim moves. A record the previous batch made ready in
    ///    `processed/` has its name durable already: that folder is not
    ///    synced in this round;
    /// 3. each payload is renamed from `processing/` into its results folder,
    ///    the commit point (`Ok(false)`: the claim was lost to another
    ///    drainer's recovery);
    /// 4. `processing/` and the results folders are synced side by side, so
    ///    no event is acted on before its move is on disk; while more claims
    ///    wait, the next batch's record is created empty in `processed/`
    ///    just before, so this sync makes its name durable too.
    ///
    /// The first batch a spool files starts by repairing, from the records,
    /// the meta files a power cut may have torn (see
    /// [`outcomes::repair_metas`](super::outcomes::repair_metas)).
    ///
    /// A filing whose meta or record cannot be written or synced, or whose
    /// results folder cannot be opened (a link planted where `invalid/`
    /// should be) or synced, is an error and its claim stays in
    /// `processing/` (the caller releases it); the other filings of the
    /// batch go on. A failure to sync the folders after the moves cannot take
    /// them back: they stand.
    /// [`TurnSettledSpool::file`]: crate::application::turn_settled::TurnSettledSpool::file
    pub(super) fn file_batch(&self, filings: &[Filing<'_>]) -> Vec<Result<bool, PortError>> {
        let mut results: Vec<Option<Result<bool, PortError>>> = Vec::new();
        results.resize_with(filings.len(), || None);
        if let Err(error) = self.file_into(filings, &mut results) {
            // `processing/` could not be opened: every filing fails with it.
            for result in results.iter_mut().filter(|r| r.is_none()) {
                *result = Some(Err(copy_error(&error).into()));
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
        // The batch as staged while it was judged (see `staging`), or, where
        // nothing was, from here.
        let mut staging = match self.take_staging() {
            Some(staging) => staging,
            None => match Staging::open(&self.paths)? {
                Some(staging) => staging,
                None => return Ok(()),
            },
        };
        let Some(processing) = Folder::Processing.open_in(&staging.root)? else {
            return Ok(());
        };
        // Each results folder opened once; one that cannot be (a link where
        // `invalid/` should be) fails only the filings bound for it.
        for filing in filings {
            staging.open_folder(folder_of(filing.disposition));
        }
        self.repair_metas_once(&staging.folders);
        let mut metas = std::mem::take(&mut staging.metas);
        let (folders, mask) = (&staging.folders, staging.mask);
        let mut unrecorded: Vec<(Folder, io::Error)> = Vec::new();
        // 1. Meta files beside their targets, unsynced (most staged while
        //    the batch was judged); the batch's outcomes in one record per
        //    results folder.
        let mut staged = Vec::new();
        let mut owners = Vec::new();
        for (i, filing) in filings.iter().enumerate() {
            let written = metas.take(filing.claim).unwrap_or_else(|| {
                staging.dir(folder_of(filing.disposition)).and_then(|dir| {
                    stage_meta(dir, &filing.claim.id, filing.meta.pretty_line(), mask)
                })
            });
            match written {
                Ok(file) => {
                    staged.push(file);
                    owners.push(i);
                }
                Err(error) => results[i] = Some(Err(error.into())),
            }
        }
        // A folder with one outcome: its meta synced itself costs what a
        // record would. With more: one record for all of them.
        let now = self.clock.now_ms();
        let mut records: Vec<(Folder, Staged)> = Vec::new();
        let mut singles: Vec<(Folder, usize)> = Vec::new();
        // The record the last batch made ready in `processed/`, its name
        // synced then: that folder needs no sync before this batch's moves.
        let mut foreseen = self.foresight().record.take();
        let mut named_already: Vec<Folder> = Vec::new();
        for (folder, dir) in folders {
            let mine: Vec<usize> = (0..owners.len())
                .filter(|&k| folder_of(filings[owners[k]].disposition) == *folder)
                .collect();
            let Ok(dir) = dir else {
                continue;
            };
            match mine[..] {
                [] => {}
                [k] => singles.push((*folder, k)),
                _ => {
                    let outcomes: Vec<(&str, &str)> = mine
                        .iter()
                        .map(|&k| &filings[owners[k]])
                        .map(|filing| (filing.claim.id.as_str(), filing.meta.compact()))
                        .collect();
                    let filled = foreseen
                        .take_if(|_| *folder == Folder::Processed)
                        .map_or(Ok(None), |record| record.fill(dir, &outcomes, now));
                    let staged = match filled {
                        Ok(Some(record)) => {
                            named_already.push(*folder);
                            Ok(record)
                        }
                        Ok(None) => outcomes::stage_record(dir, &outcomes, now, mask),
                        Err(error) => Err(error),
                    };
                    match staged {
                        Ok(record) => records.push((*folder, record)),
                        Err(error) => unrecorded.push((*folder, error)),
                    }
                }
            }
        }
        let durable: Vec<(Folder, &Staged)> = records
            .iter()
            .map(|(folder, record)| (*folder, record))
            .chain(singles.iter().map(|&(folder, k)| (folder, &staged[k])))
            .collect();
        let files: Vec<&Staged> = durable.iter().map(|(_, file)| *file).collect();
        let opened: Vec<(Folder, &Dir)> = folders
            .iter()
            .filter_map(|(folder, dir)| Some((*folder, &**dir.as_ref().ok()?)))
            .collect();
        let dirs: Vec<&Dir> = opened.iter().map(|(_, dir)| *dir).collect();
        // 2. The outcomes' data and the results folders' names synced. When
        //    every file of the batch was written in place (new results: the
        //    drain's usual batch), all its names are in place already, and
        //    the data syncs and the folder syncs wait side by side in one
        //    round. A meta replacing an older one is renamed into place only
        //    once the outcomes' data is durable (a power cut between could
        //    otherwise leave an older committed result beside a torn meta
        //    with no durable record to repair it from), so such a batch
        //    syncs the data, renames, then syncs the folders.
        //    A folder whose record was foreseen has every name this needs
        //    (its record's) durable already: its data alone is synced.
        let one_round = staged.iter().all(Staged::is_in_place);
        let named_now: Vec<(Folder, &Dir)> = if one_round {
            opened
                .iter()
                .filter(|(folder, _)| !named_already.contains(folder))
                .copied()
                .collect()
        } else {
            opened.clone()
        };
        let (synced, folders_synced) = if one_round {
            let round: Vec<&Dir> = named_now.iter().map(|(_, dir)| *dir).collect();
            sync_with_folders(&files, &round)
        } else {
            (sync_staged(&files), Vec::new())
        };
        for ((folder, _), synced) in durable.iter().zip(synced) {
            if let Err(error) = synced {
                unrecorded.push((*folder, error));
            }
        }
        for (_, record) in records {
            // Written in place: publishing only marks it kept.
            let _ = record.publish();
        }
        let mut placed = Vec::new();
        for (i, file) in owners.into_iter().zip(staged) {
            let folder = folder_of(filings[i].disposition);
            if let Some((_, error)) = unrecorded.iter().find(|(f, _)| *f == folder) {
                results[i] = Some(Err(copy_error(error).into()));
                continue;
            }
            match file.publish() {
                Ok(()) => placed.push(i),
                Err(error) => results[i] = Some(Err(error.into())),
            }
        }
        let folders_synced = if one_round {
            folders_synced
        } else {
            sync_dirs(&dirs)
        };
        let unsynced: Vec<(Folder, io::Error)> = named_now
            .iter()
            .zip(folders_synced)
            .filter_map(|((folder, _), synced)| Some((*folder, synced.err()?)))
            .collect();
        // 3. The commit point: each payload moves into its results folder.
        for i in placed {
            let filing = &filings[i];
            let folder = folder_of(filing.disposition);
            if let Some((_, error)) = unsynced.iter().find(|(f, _)| *f == folder) {
                results[i] = Some(Err(copy_error(error).into()));
                continue;
            }
            let claimed = claimed_name(&filing.claim.id, filing.claim.claimed_at_ms);
            // Replacing: an older result of the same name is superseded.
            let moved = staging
                .dir(folder)
                .and_then(|dir| processing.rename(&claimed, dir, &filing.claim.id, true));
            if matches!(moved, Ok(true)) {
                self.prunes.note_filed(folder, 1);
            }
            results[i] = Some(moved.map_err(Into::into));
        }
        // The next batch's record, created now so that the sync below makes
        // its name durable along with the moves (see `outcomes`).
        let next_bound = self.foresight().next_bound.take();
        let next = next_bound.and_then(|bound| {
            let (_, dir) = folders.iter().find(|(f, _)| *f == Folder::Processed)?;
            outcomes::foresee_record(dir.as_ref().ok()?, &bound, now, mask).ok()
        });
        // 4. The moves, durable before any of them is acted on.
        let mut moved_into = vec![&processing];
        moved_into.extend(&dirs);
        let moves_synced = sync_dirs(&moved_into);
        let processed_synced = opened
            .iter()
            .zip(&moves_synced[1..])
            .any(|((folder, _), synced)| *folder == Folder::Processed && synced.is_ok());
        if processed_synced {
            self.foresight().record = next;
        }
        Ok(())
    }

    /// The spool's foresight of its next batch (see `outcomes`).
    fn foresight(&self) -> std::sync::MutexGuard<'_, outcomes::Foresight> {
        self.foresight.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Repairs the meta files of the results folders from their outcome
    /// records, once per spool (a power cut restarts the process, so its
    /// first drain comes after any cut), at its first filing or at the end of
    /// its first drain, whichever comes first; `folders` are those the
    /// filing opened (the others are opened here). A folder that fails is
    /// tried again at the next filing or drain.
    pub(super) fn repair_metas_once(&self, folders: &[(Folder, io::Result<Arc<Dir>>)]) {
        if self.metas_repaired.load(Ordering::Acquire) {
            return;
        }
        let _serial = self.repairing.lock().unwrap_or_else(|p| p.into_inner());
        if self.metas_repaired.load(Ordering::Acquire) {
            return;
        }
        let mut repaired = true;
        for folder in [Folder::Processed, Folder::Invalid] {
            let opened = folders.iter().find(|(f, _)| *f == folder);
            let result = match opened {
                Some((_, Ok(dir))) => outcomes::repair_metas(dir, meta_bytes),
                Some((_, Err(_))) => Err(io::Error::other("results folder not opened")),
                None => match self.paths.open(folder) {
                    Ok(Some(dir)) => outcomes::repair_metas(&dir, meta_bytes),
                    Ok(None) => Ok(()),
                    Err(error) => Err(error),
                },
            };
            repaired &= result.is_ok();
        }
        self.metas_repaired.store(repaired, Ordering::Release);
    }

    /// Applies retention to `folder` (see [`past_retention`]) when it is due (see
    /// [`PruneSchedule`]); nothing when it is missing.
    pub(super) fn prune_folder(
        &self,
        root: &Dir,
        folder: Folder,
        keep: usize,
        max_age_ms: EpochMs,
        now: EpochMs,
    ) -> io::Result<()> {
        // Opened even when not due: a link planted where the folder should
        // be fails every drain, as it always did.
        let Some(dir) = folder.open_in(root)? else {
            return Ok(());
        };
        let Some(filed) = self.prunes.due(folder, keep, now) else {
            return Ok(());
        };
        // While a backlog drains, the removals overlap the next drain's
        // claims and syncs instead of holding up this drain's return.
        let in_background = self.prunes.backlog();
        self.removals.prune(dir, in_background, |dir| {
            past_retention(dir, keep, max_age_ms, now)
        })?;
        // Only a prune that listed the folder and removed (or started
        // removing) restarts the schedule; a failed one is tried again at
        // the next drain.
        self.prunes.mark_pruned(folder, filed, now);
        Ok(())
    }
}

/// Syncs each folder, side by side: each fsync waits on the disk on its
/// own, so two or three of them take about as long as one.
/// (It runs after the commit point too: a folder whose thread cannot be
/// started is synced on the calling thread, never left unsynced.)
fn sync_dirs(dirs: &[&Dir]) -> Vec<io::Result<()>> {
    map_side_by_side(dirs, dirs.len(), |dir| dir.sync())
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

/// The results of `dir` to remove, oldest last: all but the newest `keep`,
/// and those older than `max_age_ms` (see [`remove_results`]). What a crash
/// can leave is removed here and now, once older than a claim may live:
/// temp files of meta writes, and meta files whose payload never arrived (a
/// meta is written just before its payload is moved in, and a crash in
/// between leaves it alone). Entries are removed without following links (a
/// `payload_not_a_file` result may be a link or a folder: the entry itself
/// goes). An entry that cannot be removed (a planted tree too deep to
/// descend) is skipped and tried again next time: one bad entry must not
/// stop the pruning of the rest or fail the drain. Only a folder that cannot
/// be listed is an error.
fn past_retention(
    dir: &Dir,
    keep: usize,
    max_age_ms: EpochMs,
    now: EpochMs,
) -> io::Result<Vec<String>> {
    let listing = dir.names()?;
    let names: Vec<&str> = listing.iter().collect();
    let age_of = |name: &str| dir.meta(name).ok().flatten().map(|meta| meta.modified_ms);
    let present = outcomes::LeftResults::new(
        names
            .iter()
            .copied()
            .filter(|n| !n.starts_with('.') && !n.ends_with(META_SUFFIX))
            .collect(),
    );
    for &name in &names {
        let leftover = is_temp_name(name)
            || name
                .strip_suffix(META_SUFFIX)
                .is_some_and(|payload| !present.contains(payload));
        if leftover && age_of(name).is_some_and(|at| now - at > STALE_CLAIM_MS) {
            let _ = dir.remove_tree(name);
        }
    }
    for record in outcomes::spent_records(dir, &names, &present, age_of, now) {
        let _ = dir.remove_tree(record);
    }
    // Names start with the hook's UTC stamp, so name order is time order.
    let mut doomed = Vec::new();
    let mut last_stamp = None;
    for (rank, name) in present.newest_first().enumerate() {
        // Its age is looked at only within the cap: past it, it goes anyway.
        let mut too_old = || {
            let at = name_time(name, &mut last_stamp).or_else(|| age_of(name));
            at.is_some_and(|at| now - at > max_age_ms)
        };
        if rank >= keep || too_old() {
            doomed.push(name.to_string());
        }
    }
    Ok(doomed)
}

/// The time a result's name says: an event name's stamp, else a hook
/// stamp it starts with (`None`: its name says none). Where [`parse_stamp`]
/// reads a stamp, it is the one [`parse_spool_name`] reads from the same
/// bytes, so the name is parsed whole only when it has none. `last` is the
/// last stamp read, with its 17 bytes: the results of a backlog share
/// their stamps (a second's worth of turns), and reading each stamp once,
/// not once per result, spared about a tenth of retention's CPU.
fn name_time<'a>(name: &'a str, last: &mut Option<(&'a str, Option<EpochMs>)>) -> Option<EpochMs> {
    // `parse_stamp` reads these bytes only (none: it reads no stamp).
    let stamp = name.get(..17).and_then(|head| match *last {
        Some((read, at)) if read == head => at,
        _ => {
            let at = parse_stamp(name);
            *last = Some((head, at));
            at
        }
    });
    stamp.or_else(|| match parse_spool_name(name) {
        SpoolName::Event { stamp_ms, .. } => stamp_ms,
        _ => None,
    })
}

/// Threads [`remove_results`] unlinks with.
const REMOVE_THREADS: usize = 8;

/// Removes each result in `names` and then its meta file (a crash in between
/// leaves a meta without its payload, which [`past_retention`] removes later),
/// unlinking on up to [`REMOVE_THREADS`] threads: an unlink that frees a
/// file's blocks can wait on the disk (on a file system mounted with
/// `discard` and no journal, for the discard itself: 0.2–2.6 ms each, one
/// after another, against about 60 µs each side by side on the machine the
/// drain benchmark ran on), and two of them per event made retention the
/// drain's largest cost.
fn remove_results(dir: &Dir, names: &[String]) {
    let remove = |name: &String| {
        let _ = dir.remove_tree(name);
        let _ = dir.remove_tree(meta_name(name));
    };
    map_side_by_side(names, REMOVE_THREADS, remove);
}

/// Prunes of the results folders, one at a time: a listing never overlaps
/// a removal, so each prune sees the folder as the last one left it. While a
/// backlog drains, a prune's removals run on a thread of their own (see
/// [`FsSpool::prune_folder`]); the next prune, [`Removals::wait`]
/// (`dispose`) and dropping the spool wait for it.
#[derive(Debug, Default)]
pub(super) struct Removals {
    /// The background removal under way, if any. Held for a whole prune, so
    /// two drains running at once (the scheduler's and a caller's) prune
    /// one after the other.
    running: Mutex<Option<JoinHandle<()>>>,
}

impl Removals {
    /// Waits for the removal under way, if any.
    pub(super) fn wait(&self) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(running) = running {
            // (A panic there was a bug in a removal, not in this drain.)
            let _ = running.join();
        }
    }

    /// Once the removal under way is done, lists what `doomed` names in
    /// `dir` and removes it: on a thread of its own when `in_background`
    /// (here if none can be started), else before returning.
    fn prune(
        &self,
        dir: Dir,
        in_background: bool,
        doomed: impl FnOnce(&Dir) -> io::Result<Vec<String>>,
    ) -> io::Result<()> {
        let mut running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(removal) = running.take() {
            // (A panic there was a bug in a removal, not in this drain.)
            let _ = removal.join();
        }
        let names = doomed(&dir)?;
        if names.is_empty() {
            return Ok(());
        }
        if !in_background {
            remove_results(&dir, &names);
            return Ok(());
        }
        let job = Arc::new((dir, names));
        let on_thread = Arc::clone(&job);
        match std::thread::Builder::new()
            .name("mws-spool-retention".into())
            .spawn(move || remove_results(&on_thread.0, &on_thread.1))
        {
            Ok(removal) => *running = Some(removal),
            Err(_) => remove_results(&job.0, &job.1),
        }
        Ok(())
    }
}

impl Drop for Removals {
    fn drop(&mut self) {
        self.wait();
    }
}

/// When the results folders are pruned. Pruning lists the folder (O(kept)
/// names) and removes the results past the cap; once per drain, while a
/// backlog of thousands drains, that listing and the few removals each made
/// per drain cost more than filing. So a folder is pruned:
///
/// * on its first drain in this process, and at least every
///   [`SWEEP_EVERY_MS`] (results past their age);
/// * once more results were filed into it since its last prune than a tenth
///   of the cap: checked once per drain, so a folder holds at most the cap,
///   a tenth and one batch when a prune starts, and one batch more while
///   its removals overlap the next drain (1,300 at the default 1,000 and
///   batches of 100), plus what other drainers filed;
/// * after a drain that claimed less than a full batch (the backlog is
///   gone): at rest, the folder is back at its cap after every drain.
///
/// Each prune still keeps exactly the newest results up to the cap.
#[derive(Debug, Default)]
pub(super) struct PruneSchedule {
    /// Per results folder (processed, invalid): results filed since its
    /// last prune.
    filed: [AtomicUsize; 2],
    /// Per results folder: when it was last pruned (0: never by this process).
    pruned_at: [AtomicI64; 2],
    /// The last claim took as many files as it asked for: a backlog drains.
    backlog: AtomicBool,
}

impl PruneSchedule {
    fn slot(folder: Folder) -> usize {
        match folder {
            Folder::Invalid => 1,
            _ => 0,
        }
    }

    /// Records whether the last claim took as many files as it asked for.
    pub(super) fn note_claimed(&self, full: bool) {
        self.backlog.store(full, Ordering::Relaxed);
    }

    /// Whether a backlog drains: the last claim took as many files as it
    /// asked for.
    pub(super) fn backlog(&self) -> bool {
        self.backlog.load(Ordering::Relaxed)
    }

    /// Records `count` results filed into `folder`.
    pub(super) fn note_filed(&self, folder: Folder, count: usize) {
        self.filed[Self::slot(folder)].fetch_add(count, Ordering::Relaxed);
    }

    /// Whether `folder`, capped at `keep` results, is to be pruned now:
    /// `Some` with the count of results filed since its last prune, to hand
    /// to [`PruneSchedule::mark_pruned`] once the prune is done.
    pub(super) fn due(&self, folder: Folder, keep: usize, now: EpochMs) -> Option<usize> {
        let slot = Self::slot(folder);
        let filed = self.filed[slot].load(Ordering::Relaxed);
        let last = self.pruned_at[slot].load(Ordering::Relaxed);
        // (A clock stepped back past the last prune does not stop pruning.)
        let due = last == 0
            || !(0..SWEEP_EVERY_MS).contains(&(now - last))
            || filed > keep / 10
            || (filed > 0 && !self.backlog());
        due.then_some(filed)
    }

    /// Records a prune of `folder` at `now` that saw `filed` results filed
    /// since the one before (those filed meanwhile count towards the next).
    pub(super) fn mark_pruned(&self, folder: Folder, filed: usize, now: EpochMs) {
        let slot = Self::slot(folder);
        self.filed[slot].fetch_sub(filed, Ordering::Relaxed);
        self.pruned_at[slot].store(now, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::application::ports::Clock;
    use crate::application::turn_settled::TurnSettledSpool;
    use crate::application::turn_settled::{Disposition, FilingMeta, SpoolClaim};
    use crate::domain::retention::Retention;
    use crate::infrastructure::clock::SystemClock;
    use crate::infrastructure::spool::testing::{file_one, names, set_mtime, spool, T0};
    use std::fs;
    use std::os::unix::fs::symlink;

    /// Retention of `dir`, applied at once.
    fn prune(dir: &Dir, keep: usize, max_age_ms: EpochMs, now: EpochMs) -> io::Result<()> {
        remove_results(dir, &past_retention(dir, keep, max_age_ms, now)?);
        Ok(())
    }

    fn open(spool: &FsSpool, folder: Folder) -> Dir {
        spool.paths.open(folder).unwrap().unwrap()
    }

    /// A claim in `incoming/` named `<stamp of now>-1-<i>.codex.json`, claimed.
    fn claimed(spool: &FsSpool, ids: std::ops::Range<usize>) -> Vec<SpoolClaim> {
        let stamp = chrono::DateTime::from_timestamp_millis(spool.clock.now_ms())
            .unwrap()
            .format("%Y%m%dT%H%M%SZ");
        let count = ids.len();
        for i in ids {
            let name = format!("{stamp}-1-{i:04}.codex.json");
            fs::write(spool.paths().incoming().join(name), b"{}").unwrap();
        }
        let claims = spool.claim_all(count).unwrap();
        assert_eq!(claims.len(), count);
        claims
    }

    /// The time a name says is, name for name, what it was when every name
    /// was parsed whole: the event's stamp, else a hook stamp it starts
    /// with; read with the stamp before it kept or afresh alike.
    #[test]
    fn a_name_says_the_time_it_said_when_parsed_whole() {
        let names = [
            "20261128T150000Z-1-a.claude.json",
            "20261128T150000Z-2-b.codex.json",
            "20261128T150000Z-2-b.codex.json.meta.json",
            "20261128T150001Z-1-a.unknown.json",
            "20261128T150001Z-x",
            "20261128T150001Z",
            "20261128T150002123Z-.turn-settled.7-u.opencode.json",
            "20261128T150002123Z-7-u.opencode.json",
            "unknown-time-12-a.claude.json",
            "20261131T150000Z-1-a.claude.json",
            "20261128T235960Z-1-a.claude.json",
            "2026112éT150000Z-1-a.claude.json",
            "20261128T15000é-1",
            "short",
            "",
        ];
        let whole = |name: &str| match parse_spool_name(name) {
            SpoolName::Event {
                stamp_ms: Some(at), ..
            } => Some(at),
            _ => parse_stamp(name),
        };
        let mut last = None;
        for name in names.iter().chain(names.iter().rev()) {
            assert_eq!(name_time(name, &mut None), whole(name), "{name}");
            assert_eq!(name_time(name, &mut last), whole(name), "{name}");
        }
    }

    /// A new result's meta is written in place; where a meta of its name is
    /// there already (a torn one a crash left, an older result's), the new
    /// meta replaces it whole, through a temp file. An older result whose
    /// meta was removed gets the new meta in place. Either way the new
    /// payload and its meta are all that is left.
    #[test]
    fn a_meta_is_written_whole_whatever_was_there_before() {
        let torn: &[u8] = b"{\"event\": {\"provi";
        for (case, old_payload, old_meta) in [
            ("nothing there", None, None),
            ("a torn meta left by a crash", None, Some(torn)),
            ("an older result", Some(&b"old"[..]), Some(&b"{}"[..])),
            ("an older result without its meta", Some(&b"old"[..]), None),
        ] {
            let (_dir, spool, _) = spool(SystemClock.now_ms());
            let claim = claimed(&spool, 0..1).remove(0);
            let processed = spool.paths().processed();
            let meta = processed.join(meta_name(&claim.id));
            if let Some(bytes) = old_payload {
                fs::write(processed.join(&claim.id), bytes).unwrap();
            }
            if let Some(bytes) = old_meta {
                fs::write(&meta, bytes).unwrap();
            }
            let outcome = serde_json::json!({"outcome": "enqueued"});
            let filed = file_one(&spool, &claim, Disposition::Processed, outcome.clone());
            assert!(filed.unwrap(), "{case}");
            let written: Value = serde_json::from_slice(&fs::read(&meta).unwrap()).unwrap();
            assert_eq!(written, outcome, "{case}");
            assert_eq!(
                fs::read(processed.join(&claim.id)).unwrap(),
                b"{}",
                "{case}"
            );
            assert_eq!(
                names(&processed),
                vec![claim.id.clone(), meta_name(&claim.id)],
                "{case}"
            );
        }
    }

    /// A link planted where `invalid/` should be fails the filings bound for
    /// it, and only those: the valid events of the same batch are filed
    /// (they used to fail with it), and nothing is written behind the link.
    #[test]
    fn a_linked_invalid_folder_fails_only_the_filings_bound_for_it() {
        let (dir, spool, _) = spool(SystemClock.now_ms());
        let claims = claimed(&spool, 0..2);
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::remove_dir(spool.paths().invalid()).unwrap();
        symlink(&outside, spool.paths().invalid()).unwrap();
        let filings = [
            (&claims[0], Disposition::Processed),
            (&claims[1], Disposition::Invalid),
        ]
        .map(|(claim, disposition)| Filing {
            claim,
            disposition,
            meta: FilingMeta::of(&serde_json::json!({"reason": "x"})).unwrap(),
        });
        let filed = spool.file(&filings);
        assert!(matches!(filed[0], Ok(true)), "{:?}", filed[0]);
        let error = filed[1].as_ref().unwrap_err().to_string();
        let names_it = format!("{}:", spool.paths().invalid().display());
        assert!(error.contains(&names_it), "{error}");
        assert_eq!(
            names(&spool.paths().processed()),
            vec![claims[0].id.clone(), meta_name(&claims[0].id)]
        );
        assert!(names(&outside).is_empty());
        assert_eq!(names(&spool.paths().processing()).len(), 1);
    }

    /// While a backlog drains (every claim fills its batch), a results
    /// folder is pruned once more than a tenth of its cap was filed since
    /// its last prune, not after every drain: it holds at most the cap, a
    /// tenth and one batch. Once a claim comes up short, it is back at its
    /// cap.
    #[test]
    fn retention_waits_for_a_tenth_of_the_cap_while_a_backlog_drains() {
        let (_dir, spool, _) = spool(SystemClock.now_ms());
        let cap = 50;
        let spool = spool.with_retention(Retention {
            spool_processed_max_files: cap,
            ..Retention::default()
        });
        let batch = 2;
        let mut counts = Vec::new();
        for drain in 0..40 {
            let claims = claimed(&spool, drain * batch..(drain + 1) * batch);
            let filings: Vec<Filing> = claims
                .iter()
                .map(|claim| Filing {
                    claim,
                    disposition: Disposition::Processed,
                    meta: FilingMeta::of(&serde_json::json!({})).unwrap(),
                })
                .collect();
            assert!(spool.file(&filings).iter().all(|r| matches!(r, Ok(true))));
            // The peak: filed, not pruned yet.
            counts.push(names(&spool.paths().processed()).len() / 2);
            spool.after_drain().unwrap();
            spool.removals.wait();
        }
        let most = *counts.iter().max().unwrap();
        assert!(most > cap && most <= cap + cap / 10 + batch, "{counts:?}");
        // A drain that claims nothing: the backlog is gone.
        assert!(spool.claim_all(batch).unwrap().is_empty());
        spool.after_drain().unwrap();
        assert_eq!(names(&spool.paths().processed()).len(), 2 * cap);
    }

    /// A prune that was due but failed (the listing, say) leaves the
    /// schedule as it was: the next drain tries again instead of waiting
    /// for another tenth of the cap or ten minutes.
    #[test]
    fn a_due_prune_stays_due_until_it_is_marked_done() {
        let schedule = PruneSchedule::default();
        let now = 1_000_000;
        schedule.note_claimed(true);
        let first = schedule.due(Folder::Processed, 1_000, now);
        assert_eq!(first, Some(0), "never pruned by this process");
        // Not marked: still due.
        assert_eq!(schedule.due(Folder::Processed, 1_000, now + 1), Some(0));
        schedule.mark_pruned(Folder::Processed, 0, now);
        assert_eq!(schedule.due(Folder::Processed, 1_000, now + 1), None);
        schedule.note_filed(Folder::Processed, 101);
        assert_eq!(schedule.due(Folder::Processed, 1_000, now + 2), Some(101));
        // Filed meanwhile counts towards the next prune.
        schedule.note_filed(Folder::Processed, 7);
        schedule.mark_pruned(Folder::Processed, 101, now + 2);
        assert_eq!(schedule.filed[0].load(Ordering::Relaxed), 7);
        assert_eq!(schedule.due(Folder::Processed, 1_000, now + 3), None);
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
    /// fails naming it, at every drain, and deletes nothing there (it used
    /// to delete that folder's files and an old subfolder).
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
            // Every drain fails, also one when retention is not due.
            for _ in 0..2 {
                let error = spool.after_drain().unwrap_err().to_string();
                assert!(
                    error.contains(&format!("{}:", at.display())),
                    "{folder:?}: {error}"
                );
            }
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
        let claims = spool.claim_all(1).unwrap();
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
