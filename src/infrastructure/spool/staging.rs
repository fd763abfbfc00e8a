//! A batch's filing begun while its claims are judged: each claim's meta
//! file is staged in its results folder as soon as the claim is judged, on
//! the drain's judging thread, while the spool claims the next ones.
//!
//! A meta's create and write lock only its results folder, a claim's
//! rename `incoming/` and `processing/`: on two cores the kernel does both
//! at once. Staged at the filing, after the last claim, the metas' creates
//! (on ext4, a pass over the inodes freed lately in their block group) came
//! after the claims' renames instead of beside them.
//!
//! Staging early changes no order the commit relies on (see `results`): a
//! staged meta is unsynced and sits beside no result until its payload's
//! move, which still follows the sync of its outcome record. The filing
//! takes the staged metas over, with the folder handles they were staged
//! through (so a payload moves into the folder its meta is in), and stages
//! those of claims that were not staged itself. A batch that is never
//! filed (its claiming failed, or the drain panicked) leaves its metas as a
//! crash between staging and commit does: metas without a result, replaced
//! by the claim's next filing and removed by retention once older than a
//! claim may live. The next claim drops its handles.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;

use super::name::meta_name;
use super::paths::Folder;
use super::{FsSpool, SpoolPaths};
use crate::application::turn_settled::{Disposition, FilingMeta, SpoolClaim};
use crate::domain::time::EpochMs;
use crate::infrastructure::safe_fs::{CreationMask, Dir, Staged};

/// Permission bits of meta files.
pub(super) const META_MODE: u32 = 0o600;

/// The files of one batch staged so far, and the folders they are in.
#[derive(Debug)]
pub(super) struct Staging {
    /// The spool root the batch files under.
    pub(super) root: Dir,
    /// Each results folder the batch files into, opened (or created) once:
    /// every file staged there shares the handle.
    pub(super) folders: Vec<(Folder, io::Result<Arc<Dir>>)>,
    /// The umask, read once for the batch (see [`stage_meta`]).
    pub(super) mask: CreationMask,
    /// The metas staged ahead of the filing.
    pub(super) metas: StagedMetas,
}

/// The metas of a batch staged ahead of its filing, in judging order.
#[derive(Debug, Default)]
pub(super) struct StagedMetas(VecDeque<StagedMeta>);

/// A claim's meta, staged ahead of its filing.
#[derive(Debug)]
struct StagedMeta {
    /// The claim's file name and claim time: which claim it belongs to.
    id: String,
    claimed_at_ms: EpochMs,
    /// The staged file, or why it could not be staged.
    staged: io::Result<Staged>,
}

impl Staging {
    /// A batch to stage under the spool at `paths`; `None` when there is no
    /// spool.
    pub(super) fn open(paths: &SpoolPaths) -> io::Result<Option<Self>> {
        Ok(paths.open_root()?.map(|root| Self {
            root,
            folders: Vec::new(),
            mask: CreationMask::read(),
            metas: StagedMetas::default(),
        }))
    }

    /// Opens (or creates) the results folder `folder`, once per batch.
    pub(super) fn open_folder(&mut self, folder: Folder) {
        if !self.folders.iter().any(|(f, _)| *f == folder) {
            let opened = folder.create_in(&self.root).map(Arc::new);
            self.folders.push((folder, opened));
        }
    }

    /// The results folder `folder` as the batch opened it, or the error
    /// opening it met (a copy, for each filing it fails). Only for a folder
    /// [`Staging::open_folder`] opened.
    pub(super) fn dir(&self, folder: Folder) -> io::Result<&Arc<Dir>> {
        match self.folders.iter().find(|(f, _)| *f == folder) {
            Some((_, Ok(dir))) => Ok(dir),
            Some((_, Err(error))) => Err(copy_error(error)),
            None => unreachable!("a results folder used before it was opened"),
        }
    }
}

impl StagedMetas {
    /// The staged meta of `claim`, taken; `None` when it was not staged.
    /// A batch is filed in the order it was judged, so the meta sought is
    /// usually the first left.
    pub(super) fn take(&mut self, claim: &SpoolClaim) -> Option<io::Result<Staged>> {
        let at = self
            .0
            .iter()
            .position(|m| m.id == claim.id && m.claimed_at_ms == claim.claimed_at_ms)?;
        self.0.remove(at).map(|meta| meta.staged)
    }
}

impl FsSpool {
    /// Stages the meta of `claim`, to be filed into `disposition`'s folder
    /// with `meta` (see the module doc). Nothing when the spool or its
    /// folder cannot be opened: the filing meets that error itself.
    pub(super) fn stage_ahead(
        &self,
        claim: &SpoolClaim,
        disposition: Disposition,
        meta: &FilingMeta,
    ) {
        let mut staging = self.staging.lock().unwrap_or_else(|p| p.into_inner());
        if staging.is_none() {
            *staging = Staging::open(&self.paths).ok().flatten();
        }
        let Some(staging) = staging.as_mut() else {
            return;
        };
        let folder = folder_of(disposition);
        staging.open_folder(folder);
        // Before the batch's first meta: a meta repaired after it could
        // take its place.
        self.repair_metas_once(&staging.folders);
        let Ok(dir) = staging.dir(folder) else {
            return;
        };
        let staged = stage_meta(dir, &claim.id, meta.pretty_line(), staging.mask);
        staging.metas.0.push_back(StagedMeta {
            id: claim.id.clone(),
            claimed_at_ms: claim.claimed_at_ms,
            staged,
        });
    }

    /// The batch staged so far, taken for its filing (see the module doc).
    pub(super) fn take_staging(&self) -> Option<Staging> {
        self.staging
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

/// A second error like `error`, for each filing it fails.
pub(super) fn copy_error(error: &io::Error) -> io::Error {
    io::Error::new(error.kind(), error.to_string())
}

/// The results folder of a disposition.
pub(super) fn folder_of(disposition: Disposition) -> Folder {
    match disposition {
        Disposition::Processed => Folder::Processed,
        Disposition::Invalid => Folder::Invalid,
    }
}

/// Stages the meta file of the result `id` in `dir`. Written in place when
/// no meta of that name is there yet (the common case: a result is filed
/// once), saving a rename per event: the exclusive create is the check, so
/// it costs no lookup of its own. Until the payload's move commits the
/// filing, no result sits beside it, and the move follows the meta's data
/// sync and its folder's sync, so a torn meta (a crash mid-write) never
/// sits beside a committed payload; the retry after a crash finds the torn
/// meta and replaces it. Where a meta exists (an older result of the same
/// name, a meta left by a crash, another drainer's filing of a recovered
/// claim), the new meta replaces the old atomically (temp file + rename): a
/// committed payload only ever sits beside a whole meta.
///
/// The meta's absence stands for the result's: the spool never leaves a
/// result without its meta (a filing writes the meta before it moves the
/// payload in; retention removes the payload before its meta), so where no
/// meta is, no result is either. (A result whose meta was removed by hand
/// gets the new meta in place; a crash before its commit can leave that
/// meta torn beside it, where there was none, until the claim's retry
/// replaces it whole. Checking for the result first cost a lookup per event,
/// about 3% of the drain's CPU.)
///
/// `dir` is the batch's one handle of the results folder, shared by every
/// meta staged there: a second handle per file (a `dup` and a `close`)
/// reached the same folder, so sharing it changes no name, no order and no
/// sync. `mask` is the umask read for the batch: where it spares
/// [`META_MODE`], a meta created in place has that mode already and is not
/// given it again (an `fchmod` per event).
pub(super) fn stage_meta(
    dir: &Arc<Dir>,
    id: &str,
    bytes: &[u8],
    mask: CreationMask,
) -> io::Result<Staged> {
    let name = meta_name(id);
    if let Some(staged) = Staged::new_in(dir, &name, bytes, META_MODE, mask)? {
        return Ok(staged);
    }
    Staged::replacing_in(dir, &name, bytes, META_MODE)
}

#[cfg(all(test, unix))]
mod tests {
    use std::fs;
    use std::os::unix::fs::MetadataExt;

    use super::*;
    use crate::application::turn_settled::{Filing, TurnSettledSpool};
    use crate::infrastructure::spool::testing::{names, spool, T0};

    /// `count` claims of `incoming/` files named after `T0`, claimed.
    fn claimed(spool: &FsSpool, count: usize) -> Vec<SpoolClaim> {
        for i in 0..count {
            let name = format!("20261122T100000Z-1-{i:04}.codex.json");
            fs::write(spool.paths().incoming().join(name), b"{}").unwrap();
        }
        claimed_again(spool, count)
    }

    fn outcome(text: &str) -> FilingMeta {
        FilingMeta::of(&serde_json::json!({ "outcome": text })).unwrap()
    }

    fn filing<'a>(claim: &'a SpoolClaim, meta: &FilingMeta) -> Filing<'a> {
        Filing {
            claim,
            disposition: Disposition::Processed,
            meta: meta.clone(),
        }
    }

    /// A meta staged while its claim was judged is written at once, beside
    /// no result, and is the very file its filing commits (the same inode,
    /// not written again); a claim of the batch that was not staged gets
    /// its meta at the filing. Every claim is filed with its meta.
    #[test]
    fn a_meta_staged_ahead_is_the_one_its_filing_commits() {
        let (_dir, spool, _) = spool(T0);
        let claims = claimed(&spool, 3);
        let meta = outcome("enqueued");
        let processed = spool.paths().processed();
        for claim in [&claims[0], &claims[2]] {
            spool.stage(claim, Disposition::Processed, &meta);
        }
        assert_eq!(
            names(&processed),
            vec![meta_name(&claims[0].id), meta_name(&claims[2].id)],
            "staged metas, and nothing committed"
        );
        let inode = |id: &str| fs::metadata(processed.join(meta_name(id))).unwrap().ino();
        let staged_inodes = [inode(&claims[0].id), inode(&claims[2].id)];
        let filings: Vec<Filing> = claims.iter().map(|c| filing(c, &meta)).collect();
        let filed = spool.file(&filings);
        assert!(filed.iter().all(|r| matches!(r, Ok(true))), "{filed:?}");
        assert_eq!(
            staged_inodes,
            [inode(&claims[0].id), inode(&claims[2].id)],
            "the staged files were committed, not written again"
        );
        let mut expected: Vec<String> = claims
            .iter()
            .flat_map(|c| [c.id.clone(), meta_name(&c.id)])
            .collect();
        expected.sort();
        assert_eq!(names(&processed), expected);
        for claim in &claims {
            let written = fs::read(processed.join(meta_name(&claim.id))).unwrap();
            assert_eq!(written, meta.pretty_line(), "{}", claim.id);
        }
        assert!(names(&spool.paths().processing()).is_empty());
    }

    /// A batch staged and never filed (its claims given back, as a failed
    /// claim does) leaves its metas as a crash before the commit would;
    /// the next claim drops its handles, and the claims' next filing
    /// replaces those metas whole with the outcomes it files.
    #[test]
    fn a_batch_never_filed_leaves_its_metas_to_the_next_filing() {
        let (_dir, spool, _) = spool(T0);
        let claims = claimed(&spool, 2);
        let first = outcome("first");
        for claim in &claims {
            spool.stage(claim, Disposition::Processed, &first);
        }
        for claim in &claims {
            spool.release(claim).unwrap();
        }
        let again = claimed_again(&spool, 2);
        assert!(spool.staging.lock().unwrap().is_none(), "handles dropped");
        let second = outcome("second");
        let filings: Vec<Filing> = again.iter().map(|c| filing(c, &second)).collect();
        let filed = spool.file(&filings);
        assert!(filed.iter().all(|r| matches!(r, Ok(true))), "{filed:?}");
        let processed = spool.paths().processed();
        for claim in &again {
            let written = fs::read(processed.join(meta_name(&claim.id))).unwrap();
            assert_eq!(written, second.pretty_line(), "{}", claim.id);
        }
        assert_eq!(names(&processed).len(), 4, "two results and their metas");
    }

    /// `count` pending files, claimed (again).
    fn claimed_again(spool: &FsSpool, count: usize) -> Vec<SpoolClaim> {
        let claims = spool.claim_all(count).unwrap();
        assert_eq!(claims.len(), count);
        claims
    }

    /// A claim staged into a folder that cannot be opened (a link planted
    /// where `invalid/` should be) stages nothing; its filing fails with
    /// the error naming the folder, as it did unstaged.
    #[test]
    fn a_claim_staged_into_a_linked_folder_fails_at_its_filing() {
        let (dir, spool, _) = spool(T0);
        let claims = claimed(&spool, 1);
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::remove_dir(spool.paths().invalid()).unwrap();
        std::os::unix::fs::symlink(&outside, spool.paths().invalid()).unwrap();
        let meta = outcome("invalid");
        spool.stage(&claims[0], Disposition::Invalid, &meta);
        let filing = Filing {
            claim: &claims[0],
            disposition: Disposition::Invalid,
            meta,
        };
        let filed = spool.file(&[filing]);
        let error = filed[0].as_ref().unwrap_err().to_string();
        let names_it = format!("{}:", spool.paths().invalid().display());
        assert!(error.contains(&names_it), "{error}");
        assert!(names(&outside).is_empty());
        assert_eq!(names(&spool.paths().processing()).len(), 1);
    }
}
