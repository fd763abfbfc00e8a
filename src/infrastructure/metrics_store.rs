//! The team metrics index `teams/<team>/.member-work-sync/indexes/metrics.json`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::fragments::{FragmentCache, FragmentList, FragmentMap};
use super::json_store::{
    peek_flat_envelope, read_flat_envelope_reusing, read_flat_envelope_taking, render_json,
    stage_kept, write_text, Decoded, KeptDecodes, Loaded, Peeked, KEPT_FILE_BYTES,
};
use super::lock::StoreLock;
use super::safe_fs::{Staged, TrustedRoot};
use crate::application::ports::{Clock, MetricsStore, PortError};
use crate::domain::metrics::{events_for_write, MemberSummary, MetricEvent, MetricsIndex};
use crate::domain::names::TeamName;
use crate::domain::status::MemberStatus;

/// Envelope version of the index.
const SCHEMA_VERSION: u64 = 2;
/// Teams whose last decoded index is kept; past this many the kept ones
/// are dropped, so the memory held stays bounded however many teams come.
const KEPT_INDEXES: usize = 16;

/// [`MetricsStore`] on the file system.
///
/// One reconcile reads its team's index up to twice (the status commit
/// records into it, the nudge planner reads readiness from it; the
/// reconciler's own record of that write knows it done without reading,
/// [`FsMetricsStore::committed`]), and the index is the largest
/// file a reconcile reads. Each team's last decoded index is kept with the
/// bytes it came from ([`Decoded`]), so a read that finds the same bytes
/// (the file this process just wrote or read) is a byte comparison, not a
/// decode, and answers with the kept index itself, shared: a recording
/// takes it back out whole when no reader holds it any more (the planner
/// lets go of its read before the next reconcile records), and copies it
/// only while one does.
///
/// A write renders only the summaries and events that changed: the others'
/// text is kept from the team's last write ([`Fragments`]).
pub(crate) struct FsMetricsStore {
    root: TrustedRoot,
    clock: Arc<dyn Clock>,
    decoded: KeptDecodes<PathBuf, Arc<MetricsIndex>>,
    member_fragments: FragmentCache<PathBuf, MemberSummary>,
    event_fragments: FragmentCache<PathBuf, Arc<MetricEvent>>,
    /// The status write last made durable with its status
    /// ([`FsMetricsStore::committed`]), until the next
    /// [`MetricsStore::record`] takes it.
    committed: Mutex<Option<CommittedWrite>>,
}

/// A status write recorded into an index in the status's own group commit
/// ([`FsMetricsStore::committed`]): the reconciler's [`MetricsStore::record`]
/// of that same write, which comes next, has nothing left to add and
/// returns without taking the lock or reading the index (before, it read
/// and compared the whole file to find that out). Any other record goes
/// the whole way.
pub(crate) struct CommittedWrite {
    path: PathBuf,
    summary: MemberSummary,
    event_ids: Vec<String>,
}

impl CommittedWrite {
    /// Whether recording `events` of `status` at `path` adds nothing to
    /// what this write recorded.
    fn covers(&self, path: &Path, status: &MemberStatus, events: &[MetricEvent]) -> bool {
        self.path == path
            && events.iter().all(|e| self.event_ids.contains(&e.id))
            && self.summary == MemberSummary::of(status)
    }
}

/// The index file as [`FsMetricsStore::render`] writes it: the envelope of
/// the index's fields, each entry a fragment.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct IndexFile<'a> {
    schema_version: u64,
    members: FragmentMap<'a>,
    recent_events: FragmentList<'a>,
}

/// Summaries and events sit two levels deep: envelope, then `members` or
/// `recentEvents`.
const ENTRY_DEPTH: usize = 2;

impl FsMetricsStore {
    /// Indexes under `teams_base`.
    pub(crate) fn new(teams_base: PathBuf, clock: Arc<dyn Clock>) -> Self {
        Self {
            root: TrustedRoot::new(teams_base),
            clock,
            decoded: KeptDecodes::new(KEPT_INDEXES, KEPT_INDEXES * KEPT_FILE_BYTES),
            member_fragments: FragmentCache::new(
                ENTRY_DEPTH,
                KEPT_INDEXES,
                KEPT_INDEXES * KEPT_FILE_BYTES,
            ),
            event_fragments: FragmentCache::new(
                ENTRY_DEPTH,
                KEPT_INDEXES,
                KEPT_INDEXES * KEPT_FILE_BYTES,
            ),
            committed: Mutex::new(None),
        }
    }

    /// `index` rendered for `path` as a flat envelope would be
    /// ([`render_json`]), its member summaries and events from their kept
    /// fragments where they are unchanged.
    fn render(&self, path: &Path, index: &MetricsIndex) -> std::io::Result<String> {
        let members: Vec<(&str, &MemberSummary)> =
            index.members.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let events: Vec<(&str, &Arc<MetricEvent>)> = index
            .recent_events
            .iter()
            .map(|event| (event.id.as_str(), event))
            .collect();
        self.member_fragments
            .with(path.to_path_buf(), &members, |members| {
                self.event_fragments
                    .with(path.to_path_buf(), &events, |events| {
                        let file = IndexFile {
                            schema_version: SCHEMA_VERSION,
                            members: FragmentMap(members),
                            recent_events: FragmentList(events),
                        };
                        render_json(path, &file)
                    })
            })
    }

    fn path(&self, team: &str) -> PathBuf {
        self.root
            .join(team)
            .join(".member-work-sync")
            .join("indexes")
            .join("metrics.json")
    }

    fn load(&self, path: &Path) -> Result<Arc<MetricsIndex>, PortError> {
        let mut last = self.decoded.take(path);
        let loaded = read_flat_envelope_reusing(
            &self.root,
            path,
            SCHEMA_VERSION,
            self.clock.now_ms(),
            &mut last,
        );
        self.decoded.keep(path.to_path_buf(), last);
        Ok(match loaded? {
            Loaded::Found(index) => index,
            Loaded::Missing | Loaded::Quarantined { .. } => Arc::default(),
        })
    }

    /// [`FsMetricsStore::load`] for a caller that records into the index:
    /// the kept decode itself (a copy only while a reader still shares it),
    /// with the bytes it came from (`None`: no usable file), so that an
    /// index the recording left unchanged is kept again as it was.
    fn load_to_record(&self, path: &Path) -> Result<(MetricsIndex, Option<Vec<u8>>), PortError> {
        let last = self.decoded.take(path);
        let loaded =
            read_flat_envelope_taking(&self.root, path, SCHEMA_VERSION, self.clock.now_ms(), last)?;
        Ok(match loaded {
            Loaded::Found(decoded) => {
                let (bytes, index) = decoded.into_parts();
                (Arc::unwrap_or_clone(index), Some(bytes))
            }
            Loaded::Missing | Loaded::Quarantined { .. } => (MetricsIndex::default(), None),
        })
    }
}

impl FsMetricsStore {
    /// The index with the write of `status` recorded (its own events,
    /// [`events_for_write`]), staged beside the index for the status
    /// store's group commit, with the index lock, which the caller holds
    /// until the staged file is committed or dropped. Once it is committed,
    /// [`FsMetricsStore::committed`] spares the reconciler's own
    /// [`MetricsStore::record`] of that write a read of the index.
    pub(crate) fn stage_record(&self, status: &MemberStatus) -> Result<StagedRecord, PortError> {
        let path = self.path(&status.team_name);
        let lock = StoreLock::acquire(&self.root, &path)?;
        let (mut index, _) = self.load_to_record(&path)?;
        let events = events_for_write(status);
        let event_ids = events.iter().map(|e| e.id.clone()).collect();
        index.record(status, events);
        let mut last = None;
        let text = self.render(&path, &index)?;
        let staged = stage_kept(&self.root, &path, text, Arc::new(index), &mut last)?;
        self.decoded.keep(path.clone(), last);
        Ok(StagedRecord {
            lock,
            staged,
            write: CommittedWrite {
                path,
                summary: MemberSummary::of(status),
                event_ids,
            },
        })
    }

    /// Notes that a write [`FsMetricsStore::stage_record`] staged is
    /// committed; called under the index lock still held. The next
    /// [`MetricsStore::record`] of that write then finds nothing to do
    /// without reading the index: whoever writes the index takes its lock
    /// and reads it first, so the write stays in the file for that record.
    pub(crate) fn committed(&self, write: CommittedWrite) {
        *self.committed.lock().unwrap_or_else(|p| p.into_inner()) = Some(write);
    }
}

/// A status write staged into its team's index ([`FsMetricsStore::stage_record`]).
pub(crate) struct StagedRecord {
    /// The index lock, held until the staged file is committed or dropped.
    pub(crate) lock: StoreLock,
    /// The index with the write recorded.
    pub(crate) staged: Staged,
    /// What the write recorded, for [`FsMetricsStore::committed`].
    pub(crate) write: CommittedWrite,
}

impl MetricsStore for FsMetricsStore {
    /// Written only when the index changes: a write the status store
    /// already recorded with its status ([`FsMetricsStore::stage_record`])
    /// is not written again (recording is idempotent: events dedupe by id).
    fn record(&self, status: &MemberStatus, events: Vec<MetricEvent>) -> Result<(), PortError> {
        let path = self.path(&status.team_name);
        let committed = self
            .committed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if committed.is_some_and(|write| write.covers(&path, status, &events)) {
            return Ok(());
        }
        let _lock = StoreLock::acquire(&self.root, &path)?;
        let (mut index, read) = self.load_to_record(&path)?;
        if index.record(status, events) {
            write_text(&self.root, &path, &self.render(&path, &index)?)?;
        } else if let Some(bytes) = read {
            // Unchanged: still what those bytes decode to.
            self.decoded
                .keep(path, Some(Decoded::new(bytes, Arc::new(index))));
        }
        Ok(())
    }

    fn record_all(&self, writes: Vec<(&MemberStatus, Vec<MetricEvent>)>) -> Result<(), PortError> {
        let Some((first, _)) = writes.first() else {
            return Ok(());
        };
        let team = first.team_name.clone();
        if writes.iter().any(|(status, _)| status.team_name != team) {
            return writes
                .into_iter()
                .try_for_each(|(status, events)| self.record(status, events));
        }
        let path = self.path(&team);
        let _lock = StoreLock::acquire(&self.root, &path)?;
        let mut index = Arc::unwrap_or_clone(self.load(&path)?);
        for (status, events) in writes {
            index.record(status, events);
        }
        write_text(&self.root, &path, &self.render(&path, &index)?)?;
        Ok(())
    }

    fn read(&self, team: &TeamName) -> Result<Arc<MetricsIndex>, PortError> {
        self.load(&self.path(team))
    }

    fn peek(&self, team: &TeamName) -> Result<Arc<MetricsIndex>, PortError> {
        Ok(
            match peek_flat_envelope(&self.root, &self.path(team), SCHEMA_VERSION)? {
                Peeked::Found(index) => Arc::new(index),
                Peeked::Missing | Peeked::Unusable { .. } => Arc::default(),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::clock::ManualClock;

    fn status(member: &str) -> MemberStatus {
        serde_json::from_value(serde_json::json!({
            "teamName": "forge",
            "memberName": member,
            "state": "caught_up",
            "agenda": {
                "teamName": "forge",
                "memberName": member,
                "generatedAt": "2026-11-22T10:00:00.000Z",
                "fingerprint": "agenda:v1:x",
                "items": [],
                "diagnostics": []
            },
            "evaluatedAt": "2026-11-22T10:00:00.000Z",
            "diagnostics": []
        }))
        .unwrap()
    }

    /// Every write, through the group commit's staging or the store's own
    /// record, is the flat envelope of the index byte for byte, whichever
    /// summaries and events it could take from the last write's fragments
    /// (an unchanged member's, events already recorded) and whichever
    /// changed under the same key.
    #[test]
    fn a_write_from_kept_fragments_is_the_index_rendered_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsMetricsStore::new(
            dir.path().join("teams"),
            Arc::new(ManualClock::new(1_795_000_000_000)),
        );
        let path = store.path("forge");
        // The index as this test records it alongside the store.
        let mut expected = MetricsIndex::default();
        let rendered_whole = |index: &MetricsIndex| {
            let fields = serde_json::to_value(index).unwrap();
            let envelope = serde_json::json!({
                "schemaVersion": SCHEMA_VERSION,
                "members": fields["members"],
                "recentEvents": fields["recentEvents"],
            });
            serde_json::to_string_pretty(&envelope).unwrap() + "\n"
        };
        let names = ["jack", "jill", "ann \"the\" é", "jack", "jill", "jack"];
        for (round, name) in names.into_iter().enumerate() {
            let mut written = status(name);
            written.agenda.fingerprint = format!("agenda:v1:{round}");
            written.evaluated_at =
                crate::domain::time::IsoTime::at(1_795_000_000_000 + round as i64);
            if round % 2 == 0 {
                let record = store.stage_record(&written).unwrap();
                crate::infrastructure::safe_fs::commit(vec![record.staged]).unwrap();
                drop(record.lock);
            } else {
                store.record(&written, events_for_write(&written)).unwrap();
            }
            expected.record(&written, events_for_write(&written));
            assert_eq!(
                std::fs::read_to_string(&path).unwrap(),
                rendered_whole(&expected),
                "round {round}"
            );
        }
    }

    /// The record of the write just committed with its status adds
    /// nothing and reads nothing: a file swapped under it afterwards is
    /// left as it is. The next record of any other write reads the index
    /// again (here: finds the swapped file unreadable, and writes anew).
    #[test]
    fn the_record_of_a_write_committed_with_its_status_reads_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsMetricsStore::new(
            dir.path().join("teams"),
            Arc::new(ManualClock::new(1_795_000_000_000)),
        );
        let path = store.path("forge");
        let jack = status("jack");
        let record = store.stage_record(&jack).unwrap();
        crate::infrastructure::safe_fs::commit(vec![record.staged]).unwrap();
        store.committed(record.write);
        drop(record.lock);
        std::fs::write(&path, b"not the index").unwrap();
        store.record(&jack, events_for_write(&jack)).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"not the index");

        // Taken by that record: the same write recorded again reads.
        store.record(&jack, events_for_write(&jack)).unwrap();
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(index["members"].get("jack").is_some(), "{index}");

        // A write of another member is not covered by jack's.
        let record = store.stage_record(&jack).unwrap();
        crate::infrastructure::safe_fs::commit(vec![record.staged]).unwrap();
        store.committed(record.write);
        drop(record.lock);
        std::fs::write(&path, b"not the index").unwrap();
        let jill = status("jill");
        store.record(&jill, events_for_write(&jill)).unwrap();
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(index["members"].get("jill").is_some(), "{index}");
    }

    /// The reconciler's own record of a write the status store already
    /// recorded changes nothing and keeps the index's decode as it was
    /// (taken out to record into, not copied); a record that changes the
    /// index writes it, and the next read decodes what was written.
    #[test]
    fn a_record_that_changes_nothing_keeps_the_decode_it_took() {
        let dir = tempfile::tempdir().unwrap();
        let store = FsMetricsStore::new(
            dir.path().join("teams"),
            Arc::new(ManualClock::new(1_795_000_000_000)),
        );
        let forge = TeamName::parse("forge").unwrap();
        let jack = status("jack");
        let record = store.stage_record(&jack).unwrap();
        crate::infrastructure::safe_fs::commit(vec![record.staged]).unwrap();
        drop(record.lock);
        // The kept decode, marked with a member no file holds: a read
        // answering with it decoded nothing.
        let path = store.path("forge");
        let mut kept = store.decoded.take(&path);
        let members =
            &mut Arc::make_mut(&mut kept.as_mut().expect("kept from the write").value).members;
        members.insert("marked".into(), members["jack"].clone());
        store.decoded.keep(path.clone(), kept);
        let names = || -> Vec<String> {
            store
                .read(&forge)
                .unwrap()
                .members
                .keys()
                .cloned()
                .collect()
        };
        assert_eq!(names(), ["jack", "marked"]);
        // Reads of the same bytes share the kept index: no copy each.
        let (first, second) = (store.read(&forge).unwrap(), store.read(&forge).unwrap());
        assert!(Arc::ptr_eq(&first, &second), "shared");
        drop((first, second));
        store.record(&jack, events_for_write(&jack)).unwrap();
        assert_eq!(names(), ["jack", "marked"], "kept again as it was taken");
        // A record that changes the index writes it; the file is read back.
        let ann = status("ann");
        store.record(&ann, events_for_write(&ann)).unwrap();
        std::fs::write(
            &path,
            std::fs::read_to_string(&path)
                .unwrap()
                .replace("marked", "marker"),
        )
        .unwrap();
        assert_eq!(names(), ["ann", "jack", "marker"]);
    }
}
