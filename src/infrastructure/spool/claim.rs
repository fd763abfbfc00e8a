//! Claiming: recovery of stale claims, the claim itself, and giving a claim
//! back. Each is one rename between `incoming/` and `processing/` that never
//! replaces what is at the target.

use std::io;

use super::name::{claim_id, claimed_name, parse_claimed, parse_spool_name, SpoolName};
use super::paths::Folder;
use super::payload::read_payload;
use super::FsSpool;
use crate::application::ports::PortError;
use crate::application::turn_settled::{ClaimContent, SpoolClaim};
use crate::domain::time::EpochMs;
use crate::infrastructure::safe_fs::Dir;

/// A claim older than this is taken back to `incoming/` (its drainer died).
pub const STALE_CLAIM_MS: EpochMs = 5 * 60 * 1000;

/// A name stamp further than this from the file's modification time is not
/// trusted as the spool time (the hook's clock was off, e.g. after a
/// wall-clock step it had not seen yet); the modification time is used.
pub const STAMP_TOLERANCE_MS: EpochMs = 5_000;

/// Most pending names one listing of `incoming/` keeps for the claims that
/// follow. Listing is O(pending): listing for every batch of 50 made a
/// backlog of 10,000 cost O(n²) names read and sorted; one listing now
/// serves 50 batches of 100 (a listing of 10,000 names took about 3 ms, a
/// thirtieth of the 10 batches it served when it kept 1,000). Files spooled
/// meanwhile wait until the kept names are used up (they are newer, so name
/// order holds), and a name another drainer took is skipped like any lost
/// race. Bounded: 5,000 names of at most 255 bytes (the hook's own are about
/// 45), under 1.5 MiB, about 0.35 MiB for the hook's.
pub(super) const LISTED_NAMES_KEPT: usize = 5000;

impl FsSpool {
    /// Recovers stale claims, then claims up to `limit` files of `incoming/`
    /// in name order (the order of the names one listing kept, see
    /// [`LISTED_NAMES_KEPT`]; `incoming/` is listed again once they are used
    /// up, or when recovery put older names back), handing each to `each`
    /// once it is claimed and read; says how many. A rename that fails for
    /// another reason than losing the file to another drainer (a read-only
    /// spool, say), or a listing that fails, fails the claim: the claims
    /// already made (and handed on) are given back and the error names the
    /// path.
    pub(super) fn claim_batch(
        &self,
        limit: usize,
        each: &mut dyn FnMut(SpoolClaim),
    ) -> Result<usize, PortError> {
        // Before every drain (every 15 s with the scheduler): the hook
        // programs are put back as the addon wrote them (the executable's
        // hash once a second while a backlog drains), and a wall-clock step
        // moves the boot time, which the hook must not keep. A failure there
        // is logged, and the payloads are claimed all the same.
        let now = self.clock.now_ms();
        // What a batch that was never filed staged is left as a crash
        // leaves it (see `staging`); its handles go.
        drop(self.take_staging());
        self.keep_programs_before_drain(now);
        let Some(root) = self.paths.open_root()? else {
            return Ok(0);
        };
        let Some(incoming) = Folder::Incoming.open_in(&root)? else {
            return Ok(0);
        };
        let processing = Folder::Processing.create_in(&root)?;
        let mut backlog = self.backlog.lock().unwrap_or_else(|p| p.into_inner());
        if recover_stale(&processing, &incoming, now)? > 0 {
            // Their names are older than the listed ones: list again.
            backlog.clear();
        }
        // The names claimed (and handed on), to give back if a later claim
        // fails: moved here once renamed, so the happy path copies nothing.
        let mut claimed_names: Vec<String> = Vec::new();
        let give_all_back = |claimed_names: &[String], error: io::Error| {
            for name in claimed_names {
                let _ = give_back(&processing, &incoming, &claim_id(name), now);
            }
            PortError::from(error)
        };
        let mut listed = false;
        while claimed_names.len() < limit {
            let name = match backlog.pop() {
                Some(name) => name,
                // Listed once per claim at most: what is left was taken.
                None if listed => break,
                None => {
                    *backlog = list_pending(&incoming)
                        .map_err(|error| give_all_back(&claimed_names, error))?;
                    listed = true;
                    continue;
                }
            };
            let id = claim_id(&name);
            let claimed = claimed_name(&id, now);
            match incoming.rename(&name, &processing, &claimed, false) {
                Ok(true) => {}
                // Another drainer was first.
                Ok(false) => continue,
                Err(error) => return Err(give_all_back(&claimed_names, error)),
            }
            claimed_names.push(name);
            let (provider, content, spooled_at_ms) = match parse_spool_name(&id) {
                SpoolName::Event { provider, stamp_ms } => {
                    let (content, modified_ms) = read_payload(&processing, &claimed);
                    let spooled_at_ms = match (modified_ms, stamp_ms) {
                        (Some(at), Some(stamp)) if (at - stamp).abs() > STAMP_TOLERANCE_MS => at,
                        (_, Some(stamp)) => stamp,
                        // `unknown-time`: when the file was written, else now.
                        (modified, None) => modified.unwrap_or(now),
                    };
                    (Some(provider), content, spooled_at_ms)
                }
                SpoolName::UnsupportedProvider => {
                    (None, ClaimContent::Invalid("unsupported_provider"), now)
                }
                SpoolName::Malformed => (None, ClaimContent::Invalid("invalid_file_name"), now),
            };
            each(SpoolClaim {
                id,
                claimed_at_ms: now,
                spooled_at_ms,
                provider,
                content,
            });
        }
        // The newest name the next batch of as many claims can take: its
        // record is made ready at this batch's filing (see `outcomes`).
        let next_bound = backlog
            .get(backlog.len().saturating_sub(limit))
            .map(|name| claim_id(name));
        drop(backlog);
        self.foresight
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .next_bound = next_bound;
        // A full batch: more may wait, and retention goes easy (see
        // `PruneSchedule`).
        self.prunes.note_claimed(claimed_names.len() >= limit);
        Ok(claimed_names.len())
    }

    /// [`FsSpool::claim_batch`] into a list.
    #[cfg(test)]
    pub(super) fn claim_all(&self, limit: usize) -> Result<Vec<SpoolClaim>, PortError> {
        let mut claims = Vec::new();
        self.claim_batch(limit, &mut |claim| claims.push(claim))?;
        Ok(claims)
    }

    /// Gives `claim` back to `incoming/`. Lost to another drainer's recovery,
    /// or a new file took the name meanwhile: then the claim waits in
    /// `processing/` for recovery.
    pub(super) fn give_back(&self, claim: &SpoolClaim) -> Result<(), PortError> {
        let Some(processing) = self.paths.open(Folder::Processing)? else {
            return Ok(());
        };
        let incoming = self.paths.create(Folder::Incoming)?;
        give_back(&processing, &incoming, &claim.id, claim.claimed_at_ms)?;
        Ok(())
    }
}

/// Gives the claim of `id` made at `claimed_at_ms` back to `incoming/`.
fn give_back(
    processing: &Dir,
    incoming: &Dir,
    id: &str,
    claimed_at_ms: EpochMs,
) -> io::Result<bool> {
    let claimed = claimed_name(id, claimed_at_ms);
    // Never over a new file of the same name (same second, pid and counter).
    processing.rename(&claimed, incoming, id, false)
}

/// The oldest [`LISTED_NAMES_KEPT`] pending names of `incoming/` (hidden
/// names are the hook's temp files, still being written), newest first so
/// that the next claim pops the oldest.
fn list_pending(incoming: &Dir) -> io::Result<Vec<String>> {
    // Chosen from the listing's one buffer: only the names kept are
    // copied out (a backlog of ten thousand kept a thousand of them).
    let listing = incoming.names()?;
    let mut names: Vec<&str> = listing
        .iter()
        .filter(|name| !name.starts_with('.'))
        .collect();
    if names.len() > LISTED_NAMES_KEPT {
        names.select_nth_unstable(LISTED_NAMES_KEPT);
        names.truncate(LISTED_NAMES_KEPT);
    }
    names.sort_unstable_by(|a, b| b.cmp(a));
    Ok(names.into_iter().map(str::to_string).collect())
}

/// Takes claims older than [`STALE_CLAIM_MS`] back to `incoming/` and says
/// how many went; losing one to another drainer's recovery is fine.
fn recover_stale(processing: &Dir, incoming: &Dir, now: EpochMs) -> io::Result<usize> {
    let mut recovered = 0;
    for entry in processing.entries()? {
        let (original, claimed_at) = parse_claimed(&entry.name);
        let claimed_at = match claimed_at {
            Some(at) => at,
            // Left by another implementation: its file time is all we have.
            None => match processing.meta(&entry.name)? {
                Some(meta) => meta.modified_ms,
                None => continue,
            },
        };
        if now - claimed_at > STALE_CLAIM_MS
            && processing.rename(&entry.name, incoming, original, false)?
        {
            recovered += 1;
        }
    }
    Ok(recovered)
}

#[cfg(test)]
mod tests;
