//! Outcome records: one durable file per filed batch and results folder,
//! holding the meta of every result the batch files there.
//!
//! A drain makes a batch's outcomes durable with one fsync per results
//! folder (the record's) instead of one per meta file: the record is
//! written and synced, and its folder synced (or the record was created
//! before the previous batch's last folder sync), before any claim of the
//! batch moves; each `<result>.meta.json` is then a copy written without a sync.
//! A kill (the process dies, the page cache survives) leaves every meta
//! file as it was written, whole before its payload moved. A power cut can
//! leave a meta file of a committed result torn or missing; the first drain
//! of the next process ([`repair_metas`]) rewrites, durably, every meta
//! file of a committed result that differs from its record, so after that
//! drain's start a committed payload sits beside a whole meta again.
//!
//! A record is named `.outcomes-<n>-<newest result>` (hidden: never taken
//! for a result; `<n>` from 0 up, past a name taken), and holds its filing
//! time: the latest filing of a result wins. A record made ready for the
//! next batch ([`ForeseenRecord`]) is named after the newest name that batch
//! can claim, and holds only results that sort at or before it: the name is
//! then an upper bound, which is all retention's rule below needs. Result names start with the
//! hook's stamp and retention removes results oldest name first, so a
//! record whose newest result sorts before every result left names none
//! that is left: retention removes it then, without reading it, once it is
//! older than a claim may live ([`STALE_CLAIM_MS`]: a younger one may belong
//! to a batch whose moves are under way).

use std::collections::HashMap;
use std::io;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::claim::STALE_CLAIM_MS;
use super::name::meta_name;
use crate::application::turn_settled::DRAIN_BATCH;
use crate::domain::json_text::write_str;
use crate::domain::time::EpochMs;
use crate::infrastructure::safe_fs::{CreationMask, Dir, FileRead, Staged};
use std::sync::Arc;

/// Name prefix of outcome records.
const RECORD_PREFIX: &str = ".outcomes-";

/// Largest record read back: a batch of metas, a few KiB each as a rule;
/// each is at most its payload's fields (the hook's cap) and the drain's
/// own few, so a whole batch of them fits.
const MAX_RECORD_BYTES: u64 =
    DRAIN_BATCH as u64 * (crate::domain::turn_settled::MAX_PAYLOAD_BYTES + (64 << 10));

/// Largest meta file compared with its record.
const MAX_META_BYTES: u64 = 1 << 20;

/// Names tried for a new record past a taken one.
const NAME_ATTEMPTS: u32 = 64;

/// Permission bits of records, as of meta files.
const RECORD_MODE: u32 = 0o600;

/// Whether `name` is an outcome record's.
pub(super) fn is_record_name(name: &str) -> bool {
    name.starts_with(RECORD_PREFIX)
}

/// Names tried per record: `<n>` of its name from 0 below this.
const NAME_ATTEMPTS_PER_RECORD: u32 = NAME_ATTEMPTS;

/// One batch's outcomes in one results folder.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    /// When the batch was filed (the later filing of a result wins).
    filed_at: EpochMs,
    /// Result names, in filing order.
    results: Vec<String>,
    /// Each result's meta, in the same order.
    metas: Vec<Value>,
}

/// The newest result a record names, from its name.
fn newest_result(record_name: &str) -> Option<&str> {
    let rest = record_name.strip_prefix(RECORD_PREFIX)?;
    let (n, newest) = rest.split_once('-')?;
    n.bytes().all(|b| b.is_ascii_digit()).then_some(newest)
}

/// The bytes of the record of `outcomes` (result name and meta's compact
/// JSON text), filed at `now`: a [`Record`] as `serde_json` writes it,
/// written straight from the batch, each meta's text copied as it is (a
/// `RawValue` of each, to serialize it through, parsed it again first).
fn record_bytes(outcomes: &[(&str, &str)], now: EpochMs) -> io::Result<Vec<u8>> {
    let size: usize = outcomes.iter().map(|(n, m)| n.len() + m.len() + 4).sum();
    let mut bytes = Vec::with_capacity(size + 64);
    bytes.extend_from_slice(b"{\"filedAt\":");
    bytes.extend_from_slice(now.to_string().as_bytes());
    bytes.extend_from_slice(b",\"results\":[");
    for (i, (name, _)) in outcomes.iter().enumerate() {
        if i > 0 {
            bytes.push(b',');
        }
        write_str(&mut bytes, name).map_err(io::Error::other)?;
    }
    bytes.extend_from_slice(b"],\"metas\":[");
    for (i, (_, meta)) in outcomes.iter().enumerate() {
        if i > 0 {
            bytes.push(b',');
        }
        bytes.extend_from_slice(meta.as_bytes());
    }
    bytes.extend_from_slice(b"]}\n");
    Ok(bytes)
}

/// Creates, in place and unsynced, a record holding `bytes` in `dir`, named
/// after `newest`: no result it names sorts after `newest`.
/// `mask` is the batch's umask (see [`CreationMask`]).
fn create_record(
    dir: &Arc<Dir>,
    newest: &str,
    bytes: &[u8],
    mask: CreationMask,
) -> io::Result<Staged> {
    for n in 0..NAME_ATTEMPTS_PER_RECORD {
        let name = format!("{RECORD_PREFIX}{n}-{newest}");
        if let Some(staged) = Staged::new_in(dir, &name, bytes, RECORD_MODE, mask)? {
            return Ok(staged);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("{}: no free outcome record name", dir.path().display()),
    ))
}

/// Stages (unsynced, in place) the record of `outcomes` (result name and
/// meta, at least one) in `dir` (the batch's shared handle), filed at `now`,
/// under the batch's umask `mask`.
pub(super) fn stage_record(
    dir: &Arc<Dir>,
    outcomes: &[(&str, &str)],
    now: EpochMs,
    mask: CreationMask,
) -> io::Result<Staged> {
    let newest = outcomes
        .iter()
        .map(|(name, _)| *name)
        .max()
        .unwrap_or_default();
    create_record(dir, newest, &record_bytes(outcomes, now)?, mask)
}

/// How long a foreseen record may wait for its batch: well below
/// [`STALE_CLAIM_MS`], the age a record naming no result left (an empty
/// one included) must reach before retention, this process's or another
/// drainer's, removes it. Filling it makes it young again.
const FORESEEN_FOR_MS: EpochMs = STALE_CLAIM_MS / 2;

/// The next batch's record in `processed/`, created empty before this
/// batch's final sync of the folder, so that its name is durable by the time
/// it is filled: the next batch then syncs only the record's data before its
/// moves (three syncs per batch instead of four, see the spool's module
/// docs).
#[derive(Debug)]
pub(super) struct ForeseenRecord {
    file: Staged,
    /// No result it may hold sorts after this one (its name says so).
    bound: String,
    /// When it was created, by the spool's clock.
    created_ms: EpochMs,
}

/// What the spool knows of its next batch: the newest name its claims can
/// take, and the record made ready for it.
#[derive(Debug, Default)]
pub(super) struct Foresight {
    /// The newest name the next batch's claims can take (from the listing
    /// they are taken from); `None` when that listing is used up.
    pub(super) next_bound: Option<String>,
    /// The record created for the next batch, its name synced.
    pub(super) record: Option<ForeseenRecord>,
}

/// Creates, empty and in place, the record of a batch whose results all
/// sort at or before `bound`, in `dir` (`processed/`), at `now`. Its name
/// is durable once the folder is synced. `mask`: the batch's umask.
pub(super) fn foresee_record(
    dir: &Arc<Dir>,
    bound: &str,
    now: EpochMs,
    mask: CreationMask,
) -> io::Result<ForeseenRecord> {
    Ok(ForeseenRecord {
        file: create_record(dir, bound, &[], mask)?,
        bound: bound.to_string(),
        created_ms: now,
    })
}

impl ForeseenRecord {
    /// Fills this record with `outcomes`, filed at `now`, if it can hold
    /// them: none sorts after its bound, it waited less than
    /// [`FORESEEN_FOR_MS`], and, once written (which makes it young again
    /// for retention), it is still in `dir` (the batch's handle of
    /// `processed/`: not removed, the folder not moved away). `None`: it
    /// cannot, and is left as it is (empty, or naming results that are not
    /// there) for retention; the batch stages a record of its own.
    pub(super) fn fill(
        mut self,
        dir: &Dir,
        outcomes: &[(&str, &str)],
        now: EpochMs,
    ) -> io::Result<Option<Staged>> {
        let fits = outcomes
            .iter()
            .all(|(name, _)| *name <= self.bound.as_str());
        if !fits || now - self.created_ms >= FORESEEN_FOR_MS || now < self.created_ms {
            return Ok(None);
        }
        self.file.write_more(&record_bytes(outcomes, now)?)?;
        Ok(self.file.is_still_in(dir)?.then_some(self.file))
    }
}

/// Rewrites, durably, each meta file of a result present in `dir` that
/// differs from the newest record naming it (see the module docs), with
/// `meta_bytes` making a meta file's content. A record that cannot be read
/// or parsed is skipped: it was torn before its sync, so none of its claims
/// moved. Only a folder that cannot be listed, or a meta that cannot be
/// written, is an error.
pub(super) fn repair_metas(
    dir: &Dir,
    meta_bytes: impl Fn(&Value) -> io::Result<Vec<u8>>,
) -> io::Result<()> {
    let mut records: Vec<Record> = Vec::new();
    for entry in dir.entries()? {
        if !is_record_name(&entry.name) {
            continue;
        }
        let Ok(FileRead::Bytes(bytes)) = dir.read(&entry.name, MAX_RECORD_BYTES) else {
            continue;
        };
        if let Ok(record) = serde_json::from_slice::<Record>(&bytes) {
            records.push(record);
        }
    }
    records.sort_by_key(|record| record.filed_at);
    let mut newest: HashMap<String, Value> = HashMap::new();
    for record in records {
        newest.extend(record.results.into_iter().zip(record.metas));
    }
    for (result, meta) in newest {
        if dir.meta(&result)?.is_none() {
            continue;
        }
        let want = meta_bytes(&meta)?;
        let name = meta_name(&result);
        if !matches!(dir.read(&name, MAX_META_BYTES), Ok(FileRead::Bytes(have)) if have == want) {
            dir.write_atomic(&name, &want, RECORD_MODE)?;
        }
    }
    Ok(())
}

/// The results left in a results folder (a listing's payload names),
/// sorted: a prune looks each meta's and record's result up among them,
/// about 2,000 lookups per prune while a backlog drains, and ranks them
/// newest first. Hashing every name into a set, for the lookups, cost more
/// than the sort the ranking needs anyway; a sorted list serves both.
pub(super) struct LeftResults<'a>(Vec<&'a str>);

impl<'a> LeftResults<'a> {
    /// The results `names` (in any order).
    pub(super) fn new(mut names: Vec<&'a str>) -> Self {
        names.sort_unstable();
        Self(names)
    }

    /// Whether `name` is left.
    pub(super) fn contains(&self, name: &str) -> bool {
        self.0.binary_search(&name).is_ok()
    }

    /// The oldest (least) name left.
    fn oldest(&self) -> Option<&'a str> {
        self.0.first().copied()
    }

    /// The names left, newest (greatest) first.
    pub(super) fn newest_first(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.0.iter().rev().copied()
    }
}

/// The records of `names` (a listing of a results folder of `dir`) that
/// retention removes: none of their results is in `present`, and they are
/// older than [`STALE_CLAIM_MS`] (`age_of` gives an entry's modification
/// time). Mostly decided from the name alone: a record whose newest result
/// is left is kept, one whose newest result sorts before every result left
/// is spent; only the rest (a result name that is no hook stamp, say) are
/// read. A record that cannot be read whole or parsed is spent: torn before
/// its sync (none of its claims moved) or not ours.
pub(super) fn spent_records(
    dir: &Dir,
    names: &[&str],
    present: &LeftResults<'_>,
    age_of: impl Fn(&str) -> Option<EpochMs>,
    now: EpochMs,
) -> Vec<String> {
    let oldest_left = present.oldest();
    let none_left = |name: &str| -> bool {
        if let Some(newest) = newest_result(name) {
            if present.contains(newest) {
                return false;
            }
            if oldest_left.is_none_or(|oldest| newest < oldest) {
                return true;
            }
        }
        let Ok(FileRead::Bytes(bytes)) = dir.read(name, MAX_RECORD_BYTES) else {
            return true;
        };
        serde_json::from_slice::<Record>(&bytes).map_or(true, |record| {
            !record.results.iter().any(|r| present.contains(r.as_str()))
        })
    };
    // A record whose newest result is still there is not spent, as its
    // name says: no stat of its age (while a backlog drains, most records
    // are such).
    let newest_left =
        |name: &str| newest_result(name).is_some_and(|newest| present.contains(newest));
    names
        .iter()
        .filter(|name| is_record_name(name) && !newest_left(name))
        .filter(|name| age_of(name).is_some_and(|at| now - at > STALE_CLAIM_MS))
        .filter(|name| none_left(name))
        .map(|name| name.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record written straight from its batch is byte for byte the one
    /// `serde_json` serializes from the same fields with each meta as a
    /// `RawValue`: names escaped (quotes, backslashes, control characters),
    /// metas copied as they are, any filing time.
    #[test]
    fn a_record_is_written_as_serde_json_serializes_it() {
        use serde_json::value::RawValue;
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct RecordOut<'a> {
            filed_at: EpochMs,
            results: Vec<&'a str>,
            metas: Vec<Box<RawValue>>,
        }
        let outcomes = [
            (
                "20261128T150000Z-1-a.claude.json",
                r#"{"reason":"x \"q\" \\ \n","n":1}"#,
            ),
            ("b\"\\\n\u{1}é.json", "{}"),
            (
                "c.codex.json",
                r#"{"event":{"schemaVersion":1,"truncated":true},"outcome":"ignored"}"#,
            ),
        ];
        for now in [0, -5, 1_779_000_000_123] {
            for count in 1..=outcomes.len() {
                let batch = &outcomes[..count];
                let record = RecordOut {
                    filed_at: now,
                    results: batch.iter().map(|(name, _)| *name).collect(),
                    metas: batch
                        .iter()
                        .map(|(_, meta)| RawValue::from_string(meta.to_string()).unwrap())
                        .collect(),
                };
                let mut want = serde_json::to_vec(&record).unwrap();
                want.push(b'\n');
                let got = record_bytes(batch, now).unwrap();
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    String::from_utf8(want).unwrap()
                );
            }
        }
    }
    use crate::application::ports::Clock;
    use crate::application::turn_settled::{
        Disposition, Filing, FilingMeta, SpoolClaim, TurnSettledSpool,
    };
    use crate::infrastructure::clock::SystemClock;
    use crate::infrastructure::spool::paths::Folder;
    use crate::infrastructure::spool::testing::{names, set_mtime, spool};
    use crate::infrastructure::spool::FsSpool;
    use std::fs;
    use std::path::Path;

    /// `count` claims named `<stamp of now>-<pid>-<i>.codex.json`.
    fn claimed(spool: &FsSpool, pid: u32, count: usize) -> Vec<SpoolClaim> {
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
        for i in 0..count {
            let name = format!("{stamp}-{pid}-{i:04}.codex.json");
            fs::write(spool.paths().incoming().join(name), b"{}").unwrap();
        }
        spool.claim_all(count).unwrap()
    }

    fn records(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| is_record_name(name))
            .collect();
        names.sort();
        names
    }

    fn file_all(spool: &FsSpool, claims: &[SpoolClaim]) -> Vec<Value> {
        let metas: Vec<Value> = (0..claims.len())
            .map(|i| serde_json::json!({"outcome": "enqueued", "n": i}))
            .collect();
        let filings: Vec<Filing<'_>> = claims
            .iter()
            .zip(&metas)
            .map(|(claim, meta)| Filing {
                claim,
                disposition: Disposition::Processed,
                meta: FilingMeta::of(meta).unwrap(),
            })
            .collect();
        assert!(spool.file(&filings).iter().all(|r| matches!(r, Ok(true))));
        metas
    }

    /// A filed batch leaves one record in its results folder holding every
    /// meta of the batch, in filing order.
    #[test]
    fn a_batch_is_recorded_whole_in_one_record() {
        let (_dir, spool, _) = spool(SystemClock.now_ms());
        let claims = claimed(&spool, 1, 3);
        let metas = file_all(&spool, &claims);
        let processed = spool.paths().processed();
        let [record] = &records(&processed)[..] else {
            panic!("one record: {:?}", records(&processed));
        };
        let record: Record = serde_json::from_slice(&fs::read(processed.join(record)).unwrap())
            .expect("a whole record");
        let ids: Vec<String> = claims.iter().map(|c| c.id.clone()).collect();
        assert_eq!(record.results, ids);
        assert_eq!(record.metas, metas);
    }

    /// The first filing of a new spool (a process after a power cut)
    /// rewrites from the records each meta of a committed result that is
    /// torn, emptied or missing, and leaves a meta whole as it is and one
    /// whose payload never moved in alone.
    #[test]
    fn the_first_filing_repairs_the_metas_a_power_cut_tore() {
        let (dir, spool, clock) = spool(SystemClock.now_ms());
        let claims = claimed(&spool, 1, 4);
        let metas = file_all(&spool, &claims);
        let processed = spool.paths().processed();
        let meta_of = |i: usize| processed.join(meta_name(&claims[i].id));
        let whole = fs::read(meta_of(0)).unwrap();
        // (meta, what the cut left)
        fs::write(meta_of(1), b"{\"outc").unwrap();
        fs::write(meta_of(2), b"").unwrap();
        fs::remove_file(meta_of(3)).unwrap();
        // A result whose payload never moved in: its meta is not touched.
        fs::remove_file(processed.join(&claims[0].id)).unwrap();
        fs::write(meta_of(0), b"torn, uncommitted").unwrap();
        drop(spool);
        let restarted = FsSpool::new(
            crate::infrastructure::spool::SpoolPaths::for_teams_base(&dir.path().join("teams")),
            clock,
        );
        let next = claimed(&restarted, 2, 1);
        file_all(&restarted, &next);
        for (i, meta) in metas.iter().enumerate().skip(1) {
            let repaired: Value = serde_json::from_slice(&fs::read(meta_of(i)).unwrap())
                .unwrap_or_else(|e| panic!("meta {i}: {e}"));
            assert_eq!(&repaired, meta, "meta {i}");
        }
        assert_eq!(fs::read(meta_of(0)).unwrap(), b"torn, uncommitted");
        assert_ne!(whole, b"torn, uncommitted");
        assert!(names(&processed).iter().all(|n| !n.starts_with('.')));
    }

    /// A batch filed while more files wait makes the next batch's record
    /// ready (empty, named after the newest name the next batch can
    /// claim), and the next batch fills it; when that record is gone (another
    /// drainer's retention) or waited too long, the next batch writes a
    /// record of its own. Either way the batch's outcomes are in one whole
    /// record, and the last batch of a listing makes none ready.
    #[cfg(unix)]
    #[test]
    fn the_next_batch_fills_the_record_made_ready_for_it() {
        #[derive(Debug)]
        enum Meanwhile {
            Nothing,
            Removed,
            Waited,
        }
        for (meanwhile, filled) in [
            (Meanwhile::Nothing, true),
            (Meanwhile::Removed, false),
            (Meanwhile::Waited, false),
        ] {
            let (_dir, spool, clock) = spool(SystemClock.now_ms());
            let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
            for i in 0..6 {
                let name = format!("{stamp}-1-{i:04}.codex.json");
                fs::write(spool.paths().incoming().join(name), b"{}").unwrap();
            }
            let first = spool.claim_all(3).unwrap();
            file_all(&spool, &first);
            let processed = spool.paths().processed();
            let empty = |dir: &Path| -> Vec<String> {
                records(dir)
                    .into_iter()
                    .filter(|r| fs::metadata(dir.join(r)).unwrap().len() == 0)
                    .collect()
            };
            let ready = format!("{RECORD_PREFIX}0-{stamp}-1-0005.codex.json");
            assert_eq!(
                empty(&processed),
                std::slice::from_ref(&ready),
                "{meanwhile:?}"
            );
            // Held open: its inode cannot be reused by a record of the
            // same name made after it is removed.
            let ready_file = fs::File::open(processed.join(&ready)).unwrap();
            let ino = |meta: fs::Metadata| std::os::unix::fs::MetadataExt::ino(&meta);
            match meanwhile {
                Meanwhile::Nothing => {}
                Meanwhile::Removed => fs::remove_file(processed.join(&ready)).unwrap(),
                Meanwhile::Waited => clock.set(clock.now_ms() + FORESEEN_FOR_MS),
            }
            let second = spool.claim_all(3).unwrap();
            file_all(&spool, &second);
            let ids: Vec<String> = second.iter().map(|c| c.id.clone()).collect();
            let holding: Vec<String> = records(&processed)
                .into_iter()
                .filter(|r| {
                    serde_json::from_slice::<Record>(&fs::read(processed.join(r)).unwrap())
                        .is_ok_and(|record| record.results == ids)
                })
                .collect();
            assert_eq!(holding.len(), 1, "{meanwhile:?}: {holding:?}");
            let same = ino(fs::metadata(processed.join(&holding[0])).unwrap())
                == ino(ready_file.metadata().unwrap());
            assert_eq!(same, filled, "{meanwhile:?}: {holding:?}");
            let left_empty = if matches!(meanwhile, Meanwhile::Waited) {
                vec![ready]
            } else {
                vec![]
            };
            assert_eq!(empty(&processed), left_empty, "{meanwhile:?}");
        }
    }

    /// Retention removes a record once none of its results is left (told
    /// from its name, or read when its name cannot tell) and it is older
    /// than a claim may live, and only then.
    #[test]
    fn a_record_goes_with_its_last_result_once_no_claim_can_be_under_way() {
        let (_dir, spool, _) = spool(SystemClock.now_ms());
        let claims = claimed(&spool, 1, 2);
        file_all(&spool, &claims);
        let processed = spool.paths().processed();
        let dir = spool.paths.open(Folder::Processed).unwrap().unwrap();
        let [record] = &records(&processed)[..] else {
            panic!("one record");
        };
        assert_eq!(newest_result(record), Some(claims[1].id.as_str()));
        let now = SystemClock.now_ms();
        let old = now - STALE_CLAIM_MS - 1;
        set_mtime(&processed.join(record), old);
        let listing = |dir: &Path| -> Vec<String> {
            fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        };
        let age_of = |name: &str| dir.meta(name).ok().flatten().map(|m| m.modified_ms);
        let listed = listing(&processed);
        let names: Vec<&str> = listed.iter().map(String::as_str).collect();
        let later = format!("{}~", claims[1].id);
        // (results left, spent once old)
        let cases: [(&[&str], bool); 5] = [
            (&[claims[1].id.as_str()], false),
            (&[claims[0].id.as_str()], false),
            (&[claims[0].id.as_str(), later.as_str()], false),
            (&[later.as_str()], true),
            (&[], true),
        ];
        for (left, spent) in cases {
            let present = LeftResults::new(left.to_vec());
            let want = if spent { vec![record.clone()] } else { vec![] };
            assert_eq!(
                spent_records(&dir, &names, &present, age_of, now),
                want,
                "{left:?}"
            );
        }
        set_mtime(&processed.join(record), now);
        let present = LeftResults::new(Vec::new());
        assert!(spent_records(&dir, &names, &present, age_of, now).is_empty());
    }
}
