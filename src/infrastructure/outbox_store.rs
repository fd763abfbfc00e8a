//! Per-member `outbox.json` (`{schemaVersion: 2, items}`) and the team index
//! `indexes/outbox-index.json`. Lock order: index, then member file.

use crate::domain::retention::Retention;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use super::fragments::{FragmentCache, FragmentMap};
use super::json_store::{
    peek_flat_envelope_taking, read_envelope_reusing, render_json, replace_flat_view,
    write_flat_envelope, write_text, Decoded, KeptDecodes, Loaded, Peeked, KEPT_FILE_BYTES,
};
use super::lock::StoreLock;
use super::safe_fs::{not_a_file, FileKind, FileRead, Stamp, TrustedRoot};
use super::status_store::StorePaths;
use super::team_reader::MAX_ROSTER_MEMBERS;
use crate::application::ports::{
    Claimed, Clock, MemberFailure, OutboxStore, PortError, WatchdogJournal,
};
use crate::domain::names::{member_key, member_name_of_key, MemberName, TeamName};
use crate::domain::nudge::{
    claim, ensure_pending, finish_attempt, is_claimable, prune_finished, AttemptEnd, EnsureOutcome,
    OutboxItem, OutboxStatus, PlannedNudge, WatchdogAlert,
};
use crate::domain::time::{EpochMs, IsoTime};

/// `schemaVersion` of a member's `outbox.json`.
pub(crate) const SCHEMA_VERSION: u64 = 2;
/// Member outboxes whose last decode is kept ([`KeptDecodes`]): a whole
/// roster's ([`MAX_ROSTER_MEMBERS`]), so a team whose members reconcile in
/// turn finds each one's outbox kept from its last write or read ...
const KEPT_OUTBOXES: usize = MAX_ROSTER_MEMBERS;
/// ... within this many bytes of outbox files in all (a member's holds a
/// few tens of KiB).
const KEPT_OUTBOX_BYTES: usize = 8 * 1024 * 1024;
/// Teams whose outbox index's last decode is kept; past this many the kept
/// ones are dropped, so the memory held stays bounded however many teams
/// come.
const KEPT_INDEXES: usize = 16;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexEntry {
    member_key: String,
    member_name: String,
    status: OutboxStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    next_attempt_at: Option<String>,
    updated_at: String,
    created_at: String,
}

/// An item as `outbox.json` keeps it: the domain item and its place in the
/// team's planning order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredItem {
    #[serde(flatten)]
    item: OutboxItem,
    /// 1 + the highest sequence in the team's outboxes when the item was
    /// first planned; kept by every later update. The app claims items due at
    /// the same time in the order its outbox index first saw them, and this
    /// is that order kept where it survives an index rebuild. Items written
    /// before it (or by the app) have none and go first, by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    plan_sequence: Option<u64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct OutboxIndex {
    #[serde(default)]
    items: BTreeMap<String, IndexEntry>,
}

/// [`OutboxStore`] on the file system.
pub struct FsOutboxStore {
    paths: StorePaths,
    clock: Arc<dyn Clock>,
    retention: Retention,
    /// Per team, the highest planning sequence of its outboxes as this
    /// process last knew it, and the stamp its outbox index had then (see
    /// [`FsOutboxStore::next_plan_sequence`]).
    plan_sequences: Mutex<HashMap<String, KnownSequence>>,
    /// The last decode of each recently read member outbox: a reconcile
    /// reads its member's outbox before the status lock (suppression) and
    /// again under the outbox lock (the planner's ensure), most often the
    /// same bytes, which then cost a comparison and a copy, not a decode.
    decoded: KeptDecodes<PathBuf, BTreeMap<String, StoredItem>>,
    /// The last decode of each recently written or read team outbox index:
    /// every ensure merges its member's entries into the index under the
    /// index lock, most often into the bytes this process wrote last, which
    /// then cost a comparison, not a decode.
    index_decoded: KeptDecodes<PathBuf, OutboxIndex>,
    /// Each recently written outbox's items as text: a write renders only
    /// the items that changed (a plan adds one beside items whose payloads
    /// name every agenda task).
    item_fragments: FragmentCache<PathBuf, StoredItem>,
}

/// A member's `outbox.json` as [`FsOutboxStore::render`] writes it: the
/// envelope of its items, each a fragment.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OutboxFile<'a> {
    schema_version: u64,
    items: FragmentMap<'a>,
}

/// What a member's outbox holds after an update, under its lock.
struct Updated {
    /// The member's `outbox.json`.
    path: PathBuf,
    /// Its items.
    stored: BTreeMap<String, StoredItem>,
    /// The bytes the update wrote there, if it wrote.
    written: Option<Vec<u8>>,
    /// The member's outbox lock, held until this is dropped.
    _lock: StoreLock,
}

/// The highest planning sequence of a team's outboxes, known while the
/// team's outbox index keeps `index`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct KnownSequence {
    index: Stamp,
    highest: u64,
}

impl FsOutboxStore {
    /// Outboxes under `paths`, keeping finished items by the default retention.
    pub fn new(paths: StorePaths, clock: Arc<dyn Clock>) -> Self {
        Self {
            paths,
            clock,
            retention: Retention::default(),
            plan_sequences: Mutex::new(HashMap::new()),
            decoded: KeptDecodes::new(KEPT_OUTBOXES, KEPT_OUTBOX_BYTES),
            index_decoded: KeptDecodes::new(KEPT_INDEXES, KEPT_INDEXES * KEPT_FILE_BYTES),
            // Items sit two levels deep: envelope, then `items`.
            item_fragments: FragmentCache::new(2, KEPT_OUTBOXES, KEPT_OUTBOX_BYTES),
        }
    }

    /// `items` rendered as `path`'s envelope (`{schemaVersion, items}`,
    /// [`render_json`]), unchanged items from their kept fragments.
    fn render(&self, path: &Path, items: &BTreeMap<String, StoredItem>) -> std::io::Result<String> {
        let entries: Vec<(&str, &StoredItem)> =
            items.iter().map(|(id, item)| (id.as_str(), item)).collect();
        self.item_fragments
            .with(path.to_path_buf(), &entries, |items| {
                let file = OutboxFile {
                    schema_version: SCHEMA_VERSION,
                    items: FragmentMap(items),
                };
                render_json(path, &file)
            })
    }

    /// Prunes finished items as `retention` says instead of by the defaults.
    pub(crate) fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    fn index_path(&self, team: &str) -> PathBuf {
        self.paths
            .team_dir(team)
            .join(".member-work-sync")
            .join("indexes")
            .join("outbox-index.json")
    }

    fn member_path(&self, team: &str, member: &str) -> PathBuf {
        self.paths.member_file(team, member, "outbox.json")
    }

    fn read_items(&self, path: &Path) -> Result<BTreeMap<String, OutboxItem>, PortError> {
        Ok(self
            .read_stored(path)?
            .into_iter()
            .map(|(id, stored)| (id, stored.item))
            .collect())
    }

    fn read_stored(&self, path: &Path) -> Result<BTreeMap<String, StoredItem>, PortError> {
        let mut last = self.decoded.take(path);
        let loaded = read_envelope_reusing::<BTreeMap<String, StoredItem>>(
            self.paths.root(),
            path,
            SCHEMA_VERSION,
            "items",
            self.clock.now_ms(),
            &mut last,
        );
        self.decoded.keep(path.to_path_buf(), last);
        Ok(match loaded? {
            Loaded::Found(items) => items
                .into_iter()
                .map(|(id, stored)| {
                    let item = stored.item.with_payload_fingerprint();
                    (id, StoredItem { item, ..stored })
                })
                .collect(),
            Loaded::Missing | Loaded::Quarantined { .. } => BTreeMap::new(),
        })
    }

    /// The planning sequence a newly planned item of `team` gets: one past the
    /// highest in its outboxes (read without locks, as claims do: two
    /// processes planning at once may share one, and their items then go by id).
    ///
    /// Every item that gets a sequence is new to its outbox, and every
    /// ensure then adds it to the team's outbox index (a crash before that
    /// leaves the index to the next dispatch pass's rebuild), so while the
    /// index keeps the stamp it had when this process last learnt the
    /// highest sequence, no other writer has planned an item since: the
    /// highest it knew holds, and the team's outboxes are not read again.
    /// Any other stamp (or none) reads them all.
    fn next_plan_sequence(&self, team: &str) -> Result<u64, PortError> {
        let index = self.index_stamp(team);
        if let (Some(index), Some(known)) = (index, self.known_sequence(team)) {
            if known.index == index {
                return Ok(known.highest + 1);
            }
        }
        let (items, _unreadable) = self.team_items(team)?;
        let highest = items
            .iter()
            .filter_map(|(_, sequence)| *sequence)
            .max()
            .unwrap_or(0);
        // Noted with the stamp from before the read: an index changed
        // during it does not match next time.
        if let Some(index) = index {
            self.note_sequence(team, Some(KnownSequence { index, highest }));
        }
        Ok(highest + 1)
    }

    /// The stamp of the team's outbox index; `None` when there is none or
    /// it cannot be read.
    fn index_stamp(&self, team: &str) -> Option<Stamp> {
        let path = self.index_path(team);
        let folder = self.paths.root().open_dir(path.parent()?).ok()??;
        match folder.stamp(path.file_name()?).ok()?? {
            (FileKind::File, stamp) => Some(stamp),
            _ => None,
        }
    }

    fn known_sequence(&self, team: &str) -> Option<KnownSequence> {
        let known = self
            .plan_sequences
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        known.get(team).copied()
    }

    fn note_sequence(&self, team: &str, known: Option<KnownSequence>) {
        let mut sequences = self
            .plan_sequences
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match known {
            Some(known) => sequences.insert(team.to_string(), known),
            None => sequences.remove(team),
        };
    }

    /// Read-modify-write of one member's outbox under its lock. `change`
    /// returns the result and whether anything changed.
    fn update<R>(
        &self,
        team: &str,
        member: &str,
        change: impl FnOnce(&mut BTreeMap<String, OutboxItem>) -> (R, bool),
    ) -> Result<R, PortError> {
        let (result, updated) = self.update_items(team, member, change)?;
        self.keep_written(updated);
        Ok(result)
    }

    /// Keeps what an update wrote as the decode of its member's outbox, so
    /// the next read of those bytes answers from it.
    fn keep_written(&self, updated: Updated) {
        if let Some(bytes) = updated.written {
            let written = Decoded::new(bytes, updated.stored);
            self.decoded.keep(updated.path, Some(written));
        }
    }

    /// [`FsOutboxStore::update`], also returning what the member's outbox
    /// now holds, under its lock.
    fn update_items<R>(
        &self,
        team: &str,
        member: &str,
        change: impl FnOnce(&mut BTreeMap<String, OutboxItem>) -> (R, bool),
    ) -> Result<(R, Updated), PortError> {
        let member_path = self.member_path(team, member);
        let member_lock = StoreLock::acquire(self.paths.root(), &member_path)?;
        let (mut items, sequences): (BTreeMap<_, _>, BTreeMap<_, _>) = self
            .read_stored(&member_path)?
            .into_iter()
            .map(|(id, stored)| ((id.clone(), stored.item), (id, stored.plan_sequence)))
            .unzip();
        let (result, changed) = change(&mut items);
        if !changed {
            let stored = items
                .into_iter()
                .map(|(id, item)| {
                    let plan_sequence = sequences.get(&id).copied().flatten();
                    (
                        id,
                        StoredItem {
                            item,
                            plan_sequence,
                        },
                    )
                })
                .collect();
            let updated = Updated {
                path: member_path,
                stored,
                written: None,
                _lock: member_lock,
            };
            return Ok((result, updated));
        }
        // Every write also drops finished items no rule looks at any more.
        prune_finished(&mut items, self.clock.now_ms(), &self.retention);
        let mut next_sequence = None;
        let mut stored = BTreeMap::new();
        for (id, item) in items {
            let plan_sequence = match sequences.get(&id) {
                Some(kept) => *kept,
                None => {
                    let next = match next_sequence {
                        Some(next) => next,
                        None => self.next_plan_sequence(team)?,
                    };
                    next_sequence = Some(next + 1);
                    Some(next)
                }
            };
            stored.insert(
                id,
                StoredItem {
                    item,
                    plan_sequence,
                },
            );
        }
        let text = self.render(&member_path, &stored)?;
        write_text(self.paths.root(), &member_path, &text)?;
        let bytes = text.into_bytes();
        let updated = Updated {
            path: member_path,
            stored,
            written: Some(bytes),
            _lock: member_lock,
        };
        Ok((result, updated))
    }

    /// Rewrites the team index from the member files (index lock first).
    fn write_index(&self, team: &str) -> Result<(), PortError> {
        let index_path = self.index_path(team);
        let _index_lock = StoreLock::acquire(self.paths.root(), &index_path)?;
        self.rebuild_index(team, &index_path)
    }

    /// Brings the team index up to date after one member's outbox changed
    /// (the caller holds the index lock and then the member's, and passes
    /// `stored_items`, what the member's outbox holds under them): the
    /// index as it is, with that member's entries replaced by those items.
    /// No member file is read, and nothing is written when the index
    /// already says so. A missing or unusable index is rebuilt in full as
    /// [`FsOutboxStore::write_index`] does. The other members' entries are
    /// as current as the index was: every dispatch pass rebuilds it in full
    /// ([`OutboxStore::refresh_index`]), the app's store likewise upserts
    /// one item per ensure.
    fn write_member_index(
        &self,
        team: &str,
        member: &str,
        index_path: &Path,
        stored_items: &BTreeMap<String, StoredItem>,
    ) -> Result<(), PortError> {
        // The highest planning sequence stays known across this write only
        // if nobody changed the index since it was learnt (under the index
        // lock, so no other ensure writes it meanwhile).
        let known = self
            .known_sequence(team)
            .filter(|known| self.index_stamp(team) == Some(known.index));
        let last = self.index_decoded.take(index_path);
        let Peeked::Found(stored) =
            peek_flat_envelope_taking(self.paths.root(), index_path, SCHEMA_VERSION, last)?
        else {
            self.note_sequence(team, None);
            return self.rebuild_index(team, index_path);
        };
        let member_highest = stored_items
            .values()
            .filter_map(|stored| stored.plan_sequence)
            .max()
            .unwrap_or(0);
        let written = self.write_member_entries(index_path, stored, member, stored_items);
        let after = self.index_stamp(team);
        self.note_sequence(
            team,
            known.zip(after).map(|(known, index)| KnownSequence {
                index,
                highest: known.highest.max(member_highest),
            }),
        );
        written
    }

    /// The index `stored` with `member`'s entries replaced by `items`,
    /// written unless unchanged ([`FsOutboxStore::write_member_index`]);
    /// what the file then holds is kept with its bytes.
    fn write_member_entries(
        &self,
        index_path: &Path,
        stored: Decoded<OutboxIndex>,
        member: &str,
        items: &BTreeMap<String, StoredItem>,
    ) -> Result<(), PortError> {
        let (bytes, mut index) = stored.into_parts();
        let key = member_key(member);
        // The entries replaced, against the ones put in their place: the
        // same pairs leave the index as it was.
        let mut replaced = BTreeMap::new();
        index.items.retain(|id, entry| {
            let stays = entry.member_key != key && !items.contains_key(id);
            if !stays {
                replaced.insert(id.clone(), entry.clone());
            }
            stays
        });
        let put: BTreeMap<String, IndexEntry> = items
            .values()
            .map(|s| (s.item.id.clone(), entry(&s.item)))
            .collect();
        let unchanged = put == replaced;
        index.items.extend(put);
        if unchanged {
            self.index_decoded
                .keep(index_path.to_path_buf(), Some(Decoded::new(bytes, index)));
            return Ok(());
        }
        // A view of the member outboxes, which are durable: rebuilt in full
        // when missing or unusable (here and by every dispatch pass), read
        // by the addon only for its existence, which a replacement keeps.
        let written = replace_flat_view(self.paths.root(), index_path, SCHEMA_VERSION, &index)?;
        self.index_decoded
            .keep(index_path.to_path_buf(), Some(Decoded::new(written, index)));
        Ok(())
    }

    /// Rewrites the team index from every member file; the caller holds the
    /// index lock.
    fn rebuild_index(&self, team: &str, index_path: &Path) -> Result<(), PortError> {
        let index = OutboxIndex {
            items: self
                .team_items(team)?
                .0
                .iter()
                .map(|(item, _)| (item.id.clone(), entry(item)))
                .collect(),
        };
        write_flat_envelope(self.paths.root(), index_path, SCHEMA_VERSION, &index)?;
        Ok(())
    }

    /// Every item of a team's member outboxes with its planning sequence,
    /// read without locks (claims re-check under lock), and the member
    /// outboxes that could not be read.
    #[allow(clippy::type_complexity)]
    fn team_items(
        &self,
        team: &str,
    ) -> Result<(Vec<(OutboxItem, Option<u64>)>, Vec<MemberFailure>), PortError> {
        let (mut all, mut failures) = (Vec::new(), Vec::new());
        for member_dir in self.paths.member_dirs(team)? {
            let path = member_dir.join(".member-work-sync").join("outbox.json");
            // One unreadable member outbox must not block the whole team.
            match self.read_stored(&path) {
                Ok(items) => all.extend(
                    items
                        .into_values()
                        .map(|stored| (stored.item, stored.plan_sequence)),
                ),
                Err(error) => {
                    let key = member_dir
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned();
                    failures.push(MemberFailure {
                        member_name: member_name_of_key(&key),
                        member_key: key,
                        error,
                    })
                }
            }
        }
        Ok((all, failures))
    }
}

fn entry(item: &OutboxItem) -> IndexEntry {
    IndexEntry {
        member_key: member_key(&item.member_name),
        member_name: item.member_name.clone(),
        status: item.status,
        next_attempt_at: item
            .next_attempt_at
            .as_ref()
            .map(|t| t.as_str().to_string()),
        updated_at: item.updated_at.as_str().to_string(),
        created_at: item.created_at.as_str().to_string(),
    }
}

impl OutboxStore for FsOutboxStore {
    fn ensure(
        &self,
        team: &TeamName,
        member: &MemberName,
        planned: &PlannedNudge,
        now: EpochMs,
    ) -> Result<(OutboxItem, EnsureOutcome), PortError> {
        // Lock order: the index, then the member's outbox; both are held
        // until the index has the member's entries as its outbox holds them
        // (a claim or a finish changes an outbox under its lock alone).
        let index_path = self.index_path(team);
        let _index_lock = StoreLock::acquire(self.paths.root(), &index_path)?;
        let (result, updated) = self.update_items(team, member, |items| {
            let (item, outcome) =
                ensure_pending(items.get(&planned.id).cloned(), planned, team, member, now);
            let changed = items.get(&item.id) != Some(&item);
            items.insert(item.id.clone(), item.clone());
            ((item, outcome), changed)
        })?;
        self.write_member_index(team, member, &index_path, &updated.stored)?;
        self.keep_written(updated);
        Ok(result)
    }

    fn member_items(
        &self,
        team: &TeamName,
        member: &MemberName,
    ) -> Result<Vec<OutboxItem>, PortError> {
        Ok(self
            .read_items(&self.member_path(team, member))?
            .into_values()
            .collect())
    }

    fn claim_due(
        &self,
        team: &TeamName,
        claimed_by: &str,
        limit: usize,
        now: EpochMs,
    ) -> Result<Claimed, PortError> {
        let (items, mut failures) = self.team_items(team)?;
        let mut candidates: Vec<(OutboxItem, Option<u64>)> = items
            .into_iter()
            .filter(|(i, _)| is_claimable(i, now))
            .collect();
        let due = |i: &OutboxItem| {
            i.next_attempt_at
                .as_ref()
                .or(Some(&i.updated_at))
                .and_then(IsoTime::ms)
                .unwrap_or(i64::MIN)
        };
        // As the app: by due time, then in planning order.
        candidates.sort_by_key(|(i, sequence)| (due(i), *sequence, i.id.clone()));
        let mut claimed = Vec::new();
        for (candidate, _) in candidates {
            if claimed.len() >= limit {
                break;
            }
            let key = member_key(&candidate.member_name);
            if failures.iter().any(|failure| failure.member_key == key) {
                continue;
            }
            let taken = self.update(team, &candidate.member_name, |items| {
                match items.get_mut(&candidate.id) {
                    // Re-checked under the lock: another dispatcher may have won.
                    Some(item) if is_claimable(item, now) => {
                        claim(item, claimed_by, now);
                        (Some(item.clone()), true)
                    }
                    _ => (None, false),
                }
            });
            match taken {
                Ok(taken) => claimed.extend(taken),
                // Keep what was claimed (an error would strand it) and go on
                // with the other members.
                Err(error) => failures.push(MemberFailure {
                    member_key: key,
                    member_name: Some(candidate.member_name.clone()),
                    error,
                }),
            }
        }
        Ok(Claimed {
            items: claimed,
            failures,
        })
    }

    fn finish(
        &self,
        team: &TeamName,
        item: &OutboxItem,
        end: &AttemptEnd,
        now: EpochMs,
    ) -> Result<bool, PortError> {
        self.update(team, &item.member_name, |items| {
            let finished = items
                .get_mut(&item.id)
                .is_some_and(|stored| finish_attempt(stored, item.attempt_generation, end, now));
            (finished, finished)
        })
    }

    fn refresh_index(&self, team: &TeamName) -> Result<(), PortError> {
        self.write_index(team)
    }

    fn teams_with_outbox(&self) -> Vec<TeamName> {
        let root = self.paths.root();
        let Ok(Some(teams_dir)) = root.open_dir(root.path()) else {
            return Vec::new();
        };
        let Ok(entries) = teams_dir.entries() else {
            return Vec::new();
        };
        let mut teams: Vec<TeamName> = entries
            .into_iter()
            .filter(|e| e.kind == Some(FileKind::Dir))
            // A folder name unsafe as a team name is no team of ours.
            .filter_map(|e| TeamName::parse(&e.name).ok())
            .filter(|team| {
                let index = root
                    .join(team.as_str())
                    .join(".member-work-sync/indexes/outbox-index.json");
                matches!(root.meta(&index), Ok(Some(meta)) if meta.kind == FileKind::File)
            })
            .collect();
        teams.sort();
        teams
    }
}

/// The app watchdog's journal in a team folder.
const WATCHDOG_JOURNAL: &str = "stall-monitor-journal.json";
/// Largest watchdog journal read.
const MAX_WATCHDOG_JOURNAL_BYTES: u64 = 2 * 1024 * 1024;

/// [`WatchdogJournal`] reading `teams/<team>/stall-monitor-journal.json`
/// through the file boundary (a FIFO there must not block a dispatch).
pub(crate) struct FsWatchdogJournal {
    teams: TrustedRoot,
}

impl FsWatchdogJournal {
    /// Journals under `teams_base`.
    pub(crate) fn new(teams_base: PathBuf) -> Self {
        Self {
            teams: TrustedRoot::new(teams_base),
        }
    }
}

impl WatchdogJournal for FsWatchdogJournal {
    fn alerts(&self, team: &TeamName) -> Result<Vec<WatchdogAlert>, PortError> {
        let path = self.teams.join(team.as_str()).join(WATCHDOG_JOURNAL);
        let bytes = match self.teams.read(&path, MAX_WATCHDOG_JOURNAL_BYTES)? {
            FileRead::Missing => return Ok(Vec::new()),
            FileRead::NotAFile => return Err(not_a_file(&path).into()),
            FileRead::TooLarge => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "{}: larger than {MAX_WATCHDOG_JOURNAL_BYTES} bytes",
                        path.display()
                    ),
                )
                .into())
            }
            FileRead::Bytes(bytes) => bytes,
        };
        // The app owns the journal: rows it cannot parse hold no alert to honor.
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&bytes).unwrap_or_default();
        Ok(rows
            .into_iter()
            .filter_map(|row| serde_json::from_value(row).ok())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::nudge::{NudgeIntent, NudgePayload, RetryReason};
    use crate::infrastructure::clock::ManualClock;
    use serde_json::json;

    const NOW: EpochMs = 1_795_000_000_000;

    fn store(root: &Path) -> FsOutboxStore {
        FsOutboxStore::new(
            StorePaths::new(root.join("teams")),
            Arc::new(ManualClock::new(NOW)),
        )
    }

    fn planned(member: &str, fingerprint: &str) -> PlannedNudge {
        let payload = NudgePayload {
            to: member.into(),
            text: format!("sync {fingerprint}"),
            task_refs: vec![],
            work_sync_intent: NudgeIntent::AgendaSync,
            work_sync_intent_key: None,
            work_sync_review_request_event_ids: vec![],
            agenda_fingerprint: fingerprint.into(),
        };
        PlannedNudge {
            id: format!("member-work-sync:forge:{member}:{fingerprint}"),
            payload_hash: payload.hash(),
            payload: Arc::new(payload),
            preview: String::new(),
        }
    }

    /// A nudge for `member` on its own agenda fingerprint.
    fn planned_member(member: &str) -> PlannedNudge {
        planned(member, &format!("agenda:v1:{member}"))
    }

    fn store_at(dir: &Path, now: EpochMs) -> FsOutboxStore {
        FsOutboxStore::new(
            StorePaths::new(dir.join("teams")),
            Arc::new(ManualClock::new(now)),
        )
    }

    fn claimed_members(store: &FsOutboxStore, now: EpochMs) -> Vec<OutboxItem> {
        let claimed = store
            .claim_due(&TeamName::parse("forge").unwrap(), "test", 10, now)
            .unwrap();
        assert!(claimed.failures.is_empty());
        claimed.items
    }

    fn names(items: &[OutboxItem]) -> Vec<&str> {
        items.iter().map(|i| i.member_name.as_str()).collect()
    }

    #[test]
    fn items_due_at_the_same_time_are_claimed_in_planning_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_at(dir.path(), NOW);
        // Planned in this order, all due at NOW; by id it would be amy, bob, zed.
        for member in ["zed", "amy", "bob"] {
            store
                .ensure(
                    &TeamName::parse("forge").unwrap(),
                    &MemberName::parse(member).unwrap(),
                    &planned_member(member),
                    NOW,
                )
                .unwrap();
        }
        let claimed = claimed_members(&store, NOW);
        assert_eq!(names(&claimed), ["zed", "amy", "bob"]);

        // Each retried for the same time: the order survives the rewrites.
        let later = NOW + 60_000;
        let store = store_at(dir.path(), later);
        for item in claimed.iter().rev() {
            let retry = AttemptEnd::Retryable {
                reason: RetryReason::RateLimited,
                retry_at: later,
                busy_tool: None,
            };
            let forge = TeamName::parse("forge").unwrap();
            assert!(store.finish(&forge, item, &retry, later).unwrap());
        }
        assert_eq!(
            names(&claimed_members(&store, later)),
            ["zed", "amy", "bob"]
        );
    }

    /// Two stores on one root stand for two processes: each one's kept
    /// highest sequence gives way to what the other planned meanwhile.
    #[test]
    fn items_planned_by_two_processes_in_turn_are_claimed_in_planning_order() {
        let dir = tempfile::tempdir().unwrap();
        let (first, second) = (store_at(dir.path(), NOW), store_at(dir.path(), NOW));
        for (store, member) in [
            (&first, "zed"),
            (&first, "amy"),
            (&second, "yan"),
            (&second, "bob"),
            (&first, "xia"),
            (&first, "cat"),
        ] {
            store
                .ensure(
                    &TeamName::parse("forge").unwrap(),
                    &MemberName::parse(member).unwrap(),
                    &planned_member(member),
                    NOW,
                )
                .unwrap();
        }
        assert_eq!(
            names(&claimed_members(&first, NOW)),
            ["zed", "amy", "yan", "bob", "xia", "cat"]
        );
    }

    #[test]
    fn items_without_a_planning_sequence_go_first_by_id() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_at(dir.path(), NOW);
        store
            .ensure(
                &TeamName::parse("forge").unwrap(),
                &MemberName::parse("zed").unwrap(),
                &planned_member("zed"),
                NOW,
            )
            .unwrap();
        // Written as the app (or an older addon) writes it: no sequence.
        for member in ["dan", "cat"] {
            let folder = dir
                .path()
                .join(format!("teams/forge/members/{member}/.member-work-sync"));
            std::fs::create_dir_all(&folder).unwrap();
            let (item, _) = ensure_pending(
                None,
                &planned_member(member),
                &TeamName::parse("forge").unwrap(),
                &MemberName::parse(member).unwrap(),
                NOW,
            );
            let file = json!({"schemaVersion": 2, "items": {item.id.clone(): item}});
            std::fs::write(folder.join("outbox.json"), file.to_string()).unwrap();
        }
        store
            .ensure(
                &TeamName::parse("forge").unwrap(),
                &MemberName::parse("amy").unwrap(),
                &planned_member("amy"),
                NOW,
            )
            .unwrap();
        assert_eq!(
            names(&claimed_members(&store, NOW)),
            ["cat", "dan", "zed", "amy"]
        );
    }

    fn index_text(store: &FsOutboxStore) -> String {
        std::fs::read_to_string(store.index_path("forge")).unwrap()
    }

    /// The index as a full rebuild from every member file writes it.
    fn rebuilt(store: &FsOutboxStore) -> String {
        store
            .refresh_index(&TeamName::parse("forge").unwrap())
            .unwrap();
        index_text(store)
    }

    #[test]
    fn an_ensure_leaves_the_index_a_full_rebuild_would_write() {
        // Each case: the ensures (member, fingerprint) in order, then whether
        // another writer changed a member file behind the index before the
        // last ensure (a claim, which does not touch the index).
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[("jack", "a")], false),
            (&[("jack", "a"), ("jill", "b"), ("jack", "c")], false),
            (&[("jack", "a"), ("jack", "a")], false),
            (&[("jack", "a"), ("jill", "b"), ("jill", "b")], true),
        ];
        for (ensures, claimed_between) in cases {
            let tmp = tempfile::tempdir().unwrap();
            let store = store(tmp.path());
            let (last, first) = ensures.split_last().unwrap();
            for (member, fingerprint) in first {
                store
                    .ensure(
                        &TeamName::parse("forge").unwrap(),
                        &MemberName::parse(member).unwrap(),
                        &planned(member, fingerprint),
                        NOW,
                    )
                    .unwrap();
            }
            if *claimed_between {
                store
                    .claim_due(&TeamName::parse("forge").unwrap(), "dispatcher", 10, NOW)
                    .unwrap();
                // A dispatch pass ends with a full rebuild.
                store
                    .refresh_index(&TeamName::parse("forge").unwrap())
                    .unwrap();
            }
            store
                .ensure(
                    &TeamName::parse("forge").unwrap(),
                    &MemberName::parse(last.0).unwrap(),
                    &planned(last.0, last.1),
                    NOW,
                )
                .unwrap();
            let incremental = index_text(&store);
            assert_eq!(incremental, rebuilt(&store), "{ensures:?}");
        }
    }

    #[test]
    fn an_unusable_or_missing_index_is_rebuilt_from_every_member() {
        for damage in [None, Some("{not json"), Some("{\"schemaVersion\": 99}")] {
            let tmp = tempfile::tempdir().unwrap();
            let store = store(tmp.path());
            store
                .ensure(
                    &TeamName::parse("forge").unwrap(),
                    &MemberName::parse("jack").unwrap(),
                    &planned("jack", "a"),
                    NOW,
                )
                .unwrap();
            let index = store.index_path("forge");
            match damage {
                None => std::fs::remove_file(&index).unwrap(),
                Some(text) => std::fs::write(&index, text).unwrap(),
            }
            store
                .ensure(
                    &TeamName::parse("forge").unwrap(),
                    &MemberName::parse("jill").unwrap(),
                    &planned("jill", "b"),
                    NOW,
                )
                .unwrap();
            let written = index_text(&store);
            assert!(
                written.contains("member-work-sync:forge:jack:a"),
                "{damage:?}"
            );
            assert_eq!(written, rebuilt(&store), "{damage:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn an_ensure_that_changes_no_entry_leaves_the_index_file_alone() {
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let store = store(tmp.path());
        store
            .ensure(
                &TeamName::parse("forge").unwrap(),
                &MemberName::parse("jack").unwrap(),
                &planned("jack", "a"),
                NOW,
            )
            .unwrap();
        let inode = || std::fs::metadata(store.index_path("forge")).unwrap().ino();
        let before = inode();
        // The same nudge again: the outbox item and its index entry stay as they are.
        store
            .ensure(
                &TeamName::parse("forge").unwrap(),
                &MemberName::parse("jack").unwrap(),
                &planned("jack", "a"),
                NOW,
            )
            .unwrap();
        assert_eq!(inode(), before, "not replaced");
        // Another nudge: the entry is added, so the file is replaced.
        store
            .ensure(
                &TeamName::parse("forge").unwrap(),
                &MemberName::parse("jack").unwrap(),
                &planned("jack", "b"),
                NOW,
            )
            .unwrap();
        assert_ne!(inode(), before, "replaced");
    }

    #[test]
    fn a_reread_of_unchanged_bytes_answers_from_the_kept_decode() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let (team, jack) = (
            TeamName::parse("forge").unwrap(),
            MemberName::parse("jack").unwrap(),
        );
        store
            .ensure(&team, &jack, &planned("jack", "a"), NOW)
            .unwrap();
        let texts = || -> Vec<String> {
            let items = store.member_items(&team, &jack).unwrap();
            items
                .into_iter()
                .map(|item| item.payload.text.clone())
                .collect()
        };
        assert_eq!(texts(), ["sync a"]);
        // The kept decode, marked: the same bytes on disk answer with it.
        let path = store.member_path("forge", "jack");
        let mut kept = store.decoded.take(&path);
        for stored in kept.as_mut().unwrap().value.values_mut() {
            Arc::make_mut(&mut stored.item.payload).text = "kept".into();
        }
        store.decoded.keep(path.clone(), kept);
        assert_eq!(texts(), ["kept"]);
        // Other bytes of the same length, written in place at once (the
        // same stamp tick): decoded again.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("sync a", "sync b")).unwrap();
        assert_eq!(texts(), ["sync b"]);
        // An ensure's write changes the bytes: read back as written.
        store
            .ensure(&team, &jack, &planned("jack", "c"), NOW)
            .unwrap();
        let mut after = texts();
        after.sort();
        assert_eq!(after, ["sync b", "sync c"]);
        std::fs::write(&path, b"{not json").unwrap();
        assert!(texts().is_empty(), "quarantined, read as empty");
    }

    /// An ensure merges its member's entries into the index's kept decode
    /// when the file still holds the bytes it came from, and decodes the
    /// file when anyone changed it; what it keeps after a write, or after
    /// a merge that changed nothing, is what the file's bytes decode to.
    #[test]
    fn an_index_merge_answers_from_the_kept_decode_of_unchanged_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let team = TeamName::parse("forge").unwrap();
        let ensure = |member: &str, fingerprint: &str| {
            let name = MemberName::parse(member).unwrap();
            store
                .ensure(&team, &name, &planned(member, fingerprint), NOW)
                .unwrap();
        };
        let path = store.index_path("forge");
        let kept_is_the_file = |case: &str| {
            let kept = store.index_decoded.take(&path).expect(case);
            let file: OutboxIndex = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            assert_eq!(kept.value.items, file.items, "{case}");
            store.index_decoded.keep(path.clone(), Some(kept));
        };
        // The first ensure builds the index from every member file; the
        // next one merges into what it reads, changing nothing.
        ensure("jack", "a");
        ensure("jack", "a");
        kept_is_the_file("read, unchanged");
        // The kept decode, marked with an entry no file holds: a merge into
        // it writes the mark.
        let mut kept = store.index_decoded.take(&path);
        let items = &mut kept.as_mut().unwrap().value.items;
        let mut mark = items["member-work-sync:forge:jack:a"].clone();
        mark.member_key = "zed".into();
        items.insert("marked".into(), mark);
        store.index_decoded.keep(path.clone(), kept);
        ensure("jill", "b");
        assert!(
            index_text(&store).contains("\"marked\""),
            "merged into the kept decode"
        );
        kept_is_the_file("written over the kept decode");
        // Other bytes of the same length, written in place: decoded again.
        let text = index_text(&store);
        std::fs::write(&path, text.replace("\"marked\"", "\"marker\"")).unwrap();
        ensure("jill", "c");
        let text = index_text(&store);
        assert!(
            text.contains("\"marker\"") && !text.contains("\"marked\""),
            "{text}"
        );
        kept_is_the_file("decoded anew, then written");
        // A merge that changes no entry keeps what it read.
        ensure("jill", "c");
        kept_is_the_file("unchanged again");
    }

    /// Every write keeps what it wrote for the next read
    /// (`keep_written`); that is sound only if the kept value is
    /// what the written bytes decode to, after each kind of write (a plan,
    /// a claim, each end of an attempt) and over an item the app wrote.
    /// And each write, rendering unchanged items from kept fragments, is
    /// byte for byte the items rendered as a whole.
    #[test]
    fn what_a_write_keeps_is_what_its_bytes_decode_to() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let (team, jack) = (
            TeamName::parse("forge").unwrap(),
            MemberName::parse("jack").unwrap(),
        );
        let path = store.member_path("forge", "jack");
        let check = |step: &str| {
            let kept = store.decoded.take(&path).expect(step).value;
            let decoded = match crate::infrastructure::json_store::peek_envelope::<
                BTreeMap<String, StoredItem>,
            >(store.paths.root(), &path, SCHEMA_VERSION, "items")
            .unwrap()
            {
                Peeked::Found(items) => items,
                _ => panic!("{step}: unreadable"),
            };
            assert_eq!(kept, decoded, "{step}");
            // Written from kept fragments where items were unchanged: the
            // file is still the items rendered as a whole.
            let whole = json!({ "schemaVersion": SCHEMA_VERSION, "items": kept });
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                serde_json::to_string_pretty(&whole).unwrap() + "\n",
                "{step}: rendered as a whole"
            );
        };
        store
            .ensure(&team, &jack, &planned("jack", "a"), NOW)
            .unwrap();
        check("planned");
        // An item as the app writes it: no planning sequence, no payload
        // fingerprint, optional fields absent.
        let app_item = json!({
            "id": "member-work-sync:forge:jack:app",
            "teamName": "forge",
            "memberName": "jack",
            "agendaFingerprint": "app",
            "payloadHash": "h",
            "payload": { "to": "jack", "text": "sync app", "taskRefs": [] },
            "status": "pending",
            "attemptGeneration": 0,
            "createdAt": "2026-11-20T00:00:00.000Z",
            "updatedAt": "2026-11-20T00:00:00.000Z"
        });
        let mut text: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        text["items"]["member-work-sync:forge:jack:app"] = app_item;
        std::fs::write(&path, serde_json::to_string_pretty(&text).unwrap()).unwrap();
        store
            .ensure(&team, &jack, &planned("jack", "b"), NOW)
            .unwrap();
        check("planned beside an app item");
        let ends = [
            AttemptEnd::Retryable {
                reason: RetryReason::MemberBusy("active_tool_activity".into()),
                retry_at: NOW + 1,
                busy_tool: Some("Bash".into()),
            },
            AttemptEnd::Superseded {
                reason: "agenda_changed".into(),
            },
            AttemptEnd::Delivered,
        ];
        for (n, end) in ends.iter().enumerate() {
            let fingerprint = format!("c{n}");
            store
                .ensure(&team, &jack, &planned("jack", &fingerprint), NOW)
                .unwrap();
            check(&format!("planned {n}"));
            let claimed = claimed_members(&store, NOW + 10 * (n as i64 + 1));
            check(&format!("claimed {n}"));
            let item = claimed
                .first()
                .unwrap_or_else(|| panic!("an item to claim at {n}"));
            assert!(store
                .finish(&team, item, end, NOW + 10 * (n as i64 + 1))
                .unwrap());
            check(&format!("finished {end:?}"));
        }
    }

    #[test]
    fn only_teams_with_an_outbox_index_and_a_safe_name_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let index = ".member-work-sync/indexes/outbox-index.json";
        // (folder, has an outbox index)
        let folders = [
            ("forge", true),
            (" padded ", true),
            ("no-index", false),
            ("back\\slash", true),
        ];
        for (folder, indexed) in folders {
            let team = dir.path().join("teams").join(folder);
            std::fs::create_dir_all(&team).unwrap();
            if indexed {
                let path = team.join(index);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, "{}").unwrap();
            }
        }
        let teams = store_at(dir.path(), NOW).teams_with_outbox();
        let names: Vec<&str> = teams.iter().map(|t| t.as_str()).collect();
        // As named on disk (not trimmed); a name unsafe as a folder is no team.
        assert_eq!(names, [" padded ", "forge"]);
    }
}
