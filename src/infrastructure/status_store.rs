//! Per-member status files under `teams/<team>/members/<key>/.member-work-sync/`
//!, with the legacy v1 team-level `status.json` as read fallback.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::journal;
use super::json_store::{
    peek_envelope, read_envelope, read_envelope_reusing, read_envelope_taking, stage_kept,
    write_text, Decoded, KeptDecodes, Loaded, Peeked,
};
use super::lock::StoreLock;
use super::metrics_store::FsMetricsStore;
use super::safe_fs::{commit, commit_with_companion, FileKind, TrustedRoot};
use super::status_text::StatusTexts;
use super::team_reader::MAX_ROSTER_MEMBERS;
use crate::application::log::{LogCode, LogEntry, LogLevel, LogSink};
use crate::application::ports::{
    AuditEvent, AuditJournal, Clock, PortError, SettledTurnLines, StatusBuild, StatusStore,
    StoredStatus,
};
use crate::domain::names::{member_key, MemberName, TeamName};
use crate::domain::retention::Retention;
use crate::domain::status::MemberStatus;
use crate::domain::time::format_iso;

/// Current envelope version of member files.
const STATUS_SCHEMA_VERSION: u64 = 2;
/// Member statuses whose last decode is kept ([`KeptDecodes`]): a whole
/// roster's ([`MAX_ROSTER_MEMBERS`]), so a team whose members reconcile in
/// turn finds each one's previous status kept from its last write ...
const KEPT_STATUSES: usize = MAX_ROSTER_MEMBERS;
/// ... within this many bytes of status files in all (a member's holds its
/// whole agenda: about 80 KiB at 200 tasks).
const KEPT_STATUS_BYTES: usize = 8 * 1024 * 1024;

/// Where a team's store files live.
#[derive(Debug, Clone)]
pub struct StorePaths {
    root: TrustedRoot,
}

impl StorePaths {
    /// Paths under `teams_base`.
    pub fn new(teams_base: PathBuf) -> Self {
        Self {
            root: TrustedRoot::new(teams_base),
        }
    }

    /// The teams root every store file lies below.
    pub fn root(&self) -> &TrustedRoot {
        &self.root
    }

    /// `teams/<team>`.
    pub fn team_dir(&self, team: &str) -> PathBuf {
        self.root.join(team)
    }

    /// `teams/<team>/members/<key>`.
    pub fn member_dir(&self, team: &str, member: &str) -> PathBuf {
        self.team_dir(team).join("members").join(member_key(member))
    }

    /// `teams/<team>/members/<key>/.member-work-sync/<file>`.
    pub(crate) fn member_file(&self, team: &str, member: &str, file: &str) -> PathBuf {
        self.member_dir(team, member)
            .join(".member-work-sync")
            .join(file)
    }

    /// The member folders under `teams/<team>/members/` (real folders only: a
    /// link there is skipped, never followed); empty when there are none.
    pub(crate) fn member_dirs(&self, team: &str) -> io::Result<Vec<PathBuf>> {
        let members = self.team_dir(team).join("members");
        let Some(dir) = self.root.open_dir(&members)? else {
            return Ok(Vec::new());
        };
        Ok(dir
            .entries()?
            .into_iter()
            .filter(|entry| entry.kind == Some(FileKind::Dir))
            .map(|entry| members.join(entry.name))
            .collect())
    }

    /// Legacy `teams/<team>/.member-work-sync/status.json`.
    pub(crate) fn legacy_status(&self, team: &str) -> PathBuf {
        self.team_dir(team)
            .join(".member-work-sync")
            .join("status.json")
    }
}

/// [`StatusStore`] on the file system.
pub struct FsStatusStore {
    paths: StorePaths,
    clock: Arc<dyn Clock>,
    /// The team metrics index a member's status write also records into,
    /// in the same group commit.
    metrics: Option<Arc<FsMetricsStore>>,
    /// The last decode of each recently written or read member status: a
    /// reconcile reads its member's previous status under the lock, most
    /// often the bytes this process wrote last, which then cost a
    /// comparison and a copy, not a check and a decode.
    decoded: KeptDecodes<PathBuf, MemberStatus>,
    /// Each recently written status file's agenda items as rendered, for
    /// its next write ([`StatusTexts`]).
    texts: StatusTexts,
}

impl FsStatusStore {
    /// A store under `paths`, naming quarantined files with `clock`.
    pub fn new(paths: StorePaths, clock: Arc<dyn Clock>) -> Self {
        Self {
            paths,
            clock,
            metrics: None,
            decoded: KeptDecodes::new(KEPT_STATUSES, KEPT_STATUS_BYTES),
            texts: StatusTexts::new(KEPT_STATUSES, KEPT_STATUS_BYTES),
        }
    }

    /// Records each member's status write ([`StatusStore::update`]) into
    /// `metrics` in the same group commit as the status: the two files'
    /// data are synced side by side, then both renamed, then their folders
    /// synced, instead of one file after the other. The caller's metrics
    /// write of that status then finds it recorded and writes nothing.
    /// After a crash each file is old or new; the status is renamed first,
    /// so a kill leaves the index behind the status, never ahead, and a
    /// power cut that keeps the index's rename but not the status's leaves
    /// the events of an evaluation that happened (the next reconcile
    /// records its own).
    pub(crate) fn with_metrics(mut self, metrics: Arc<FsMetricsStore>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Writes `status` to `path` (the caller holds its lock), with its
    /// metrics in one group commit when the store keeps them. Metrics that
    /// cannot be staged, synced or renamed (their folder unusable) leave
    /// the status write alone: the caller's own metrics write then finds
    /// them unrecorded, writes them and reports a failure.
    fn write_status(&self, path: &std::path::Path, status: &MemberStatus) -> Result<(), PortError> {
        let Some(metrics) = &self.metrics else {
            let text = self.texts.render(path, STATUS_SCHEMA_VERSION, status)?;
            write_text(self.paths.root(), path, &text)?;
            let written = Decoded::new(text.into_bytes(), status.clone());
            self.decoded.keep(path.to_path_buf(), Some(written));
            return Ok(());
        };
        let mut written = None;
        let staged = self.stage_status(path, status, &mut written)?;
        match metrics.stage_record(status) {
            Ok(record) => {
                // A companion that did not land leaves its recording to
                // the caller's own metrics write.
                if commit_with_companion(vec![staged], record.staged)? {
                    metrics.committed(record.write);
                }
                drop(record.lock);
            }
            Err(_) => commit(vec![staged])?,
        }
        self.decoded.keep(path.to_path_buf(), written);
        Ok(())
    }

    /// `status` staged for a group commit to `path`, its decode kept in
    /// `written` for [`KeptDecodes::keep`] once committed.
    fn stage_status(
        &self,
        path: &std::path::Path,
        status: &MemberStatus,
        written: &mut Option<Decoded<MemberStatus>>,
    ) -> Result<super::safe_fs::Staged, PortError> {
        let text = self.texts.render(path, STATUS_SCHEMA_VERSION, status)?;
        Ok(stage_kept(
            self.paths.root(),
            path,
            text,
            status.clone(),
            written,
        )?)
    }

    /// The stored status an update of `path` replaces: the kept decode
    /// itself, not a copy, when the file holds its bytes (the update then
    /// keeps what it writes instead).
    fn read_to_replace(
        &self,
        team: &TeamName,
        member: &MemberName,
        path: &std::path::Path,
    ) -> Result<StoredStatus, PortError> {
        let loaded = read_envelope_taking::<MemberStatus>(
            self.paths.root(),
            path,
            STATUS_SCHEMA_VERSION,
            "status",
            self.clock.now_ms(),
            self.decoded.take(path),
        )?;
        self.stored(team, member, loaded)
    }

    /// What a read of a member's file found, the legacy team file read
    /// when it has none.
    fn stored(
        &self,
        team: &TeamName,
        member: &MemberName,
        loaded: Loaded<MemberStatus>,
    ) -> Result<StoredStatus, PortError> {
        Ok(match loaded {
            Loaded::Found(status) => StoredStatus::Current(status),
            Loaded::Quarantined { reason, .. } => StoredStatus::Quarantined { reason },
            Loaded::Missing => match self.read_legacy(team, member)? {
                Some(status) => StoredStatus::Legacy(status),
                None => StoredStatus::Missing,
            },
        })
    }

    fn read_legacy(&self, team: &str, member: &str) -> Result<Option<MemberStatus>, PortError> {
        let path = self.paths.legacy_status(team);
        let members: Loaded<BTreeMap<String, Value>> =
            read_envelope(self.paths.root(), &path, 1, "members", self.clock.now_ms())?;
        let Loaded::Found(members) = members else {
            return Ok(None);
        };
        // Old shapes that no longer parse are ignored, not quarantined: the file
        // holds other members' statuses too.
        Ok(members
            .get(&member_key(member))
            .and_then(|v| serde_json::from_value(v.clone()).ok()))
    }

    fn write_member_meta(&self, status: &MemberStatus) -> Result<(), PortError> {
        let path = self
            .paths
            .member_dir(&status.team_name, &status.member_name)
            .join("member.meta.json");
        match self.paths.root().meta(&path)? {
            Some(meta) if meta.kind == FileKind::File => return Ok(()),
            // A link, FIFO or folder planted there is moved aside, then written.
            Some(_) => {
                super::json_store::quarantine(self.paths.root(), &path, self.clock.now_ms())?;
            }
            None => {}
        }
        let meta = serde_json::json!({
            "schemaVersion": 1,
            "memberName": status.member_name,
            "memberKey": member_key(&status.member_name),
            "updatedAt": format_iso(self.clock.now_ms()),
        });
        super::json_store::write_json(self.paths.root(), &path, &meta)?;
        Ok(())
    }
}

impl StatusStore for FsStatusStore {
    fn read(&self, team: &TeamName, member: &MemberName) -> Result<StoredStatus, PortError> {
        let path = self.paths.member_file(team, member, "status.json");
        let mut last = self.decoded.take(&path);
        let loaded = read_envelope_reusing::<MemberStatus>(
            self.paths.root(),
            &path,
            STATUS_SCHEMA_VERSION,
            "status",
            self.clock.now_ms(),
            &mut last,
        );
        self.decoded.keep(path, last);
        self.stored(team, member, loaded?)
    }

    fn member_count(&self, team: &TeamName) -> Result<usize, PortError> {
        Ok(self.paths.member_dirs(team)?.len())
    }

    fn peek(&self, team: &TeamName, member: &MemberName) -> Result<StoredStatus, PortError> {
        let path = self.paths.member_file(team, member, "status.json");
        match peek_envelope::<MemberStatus>(
            self.paths.root(),
            &path,
            STATUS_SCHEMA_VERSION,
            "status",
        )? {
            Peeked::Found(status) => return Ok(StoredStatus::Current(status)),
            Peeked::Unusable { reason } => return Ok(StoredStatus::Quarantined { reason }),
            Peeked::Missing => {}
        }
        let legacy = peek_envelope::<BTreeMap<String, Value>>(
            self.paths.root(),
            &self.paths.legacy_status(team),
            1,
            "members",
        )?;
        // Same leniency as `read_legacy`: an unusable or old-shaped legacy
        // file is no status.
        Ok(match legacy {
            Peeked::Found(members) => members
                .get(&member_key(member))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
                .map_or(StoredStatus::Missing, StoredStatus::Legacy),
            Peeked::Missing | Peeked::Unusable { .. } => StoredStatus::Missing,
        })
    }

    fn update(
        &self,
        team: &TeamName,
        member: &MemberName,
        build: StatusBuild<'_>,
    ) -> Result<MemberStatus, PortError> {
        let path = self.paths.member_file(team, member, "status.json");
        let _lock = StoreLock::acquire(self.paths.root(), &path)?;
        let previous = self.read_to_replace(team, member, &path)?;
        let status = build(previous);
        self.write_status(&path, &status)?;
        self.write_member_meta(&status)?;
        Ok(status)
    }

    fn update_all(
        &self,
        team: &TeamName,
        members: &[&MemberName],
        build: &mut dyn FnMut(&MemberName, StoredStatus) -> MemberStatus,
    ) -> Result<Vec<MemberStatus>, PortError> {
        let paths: Vec<PathBuf> = members
            .iter()
            .map(|member| self.paths.member_file(team, member, "status.json"))
            .collect();
        // Locks in path order, so two group commits never wait on each other
        // in a cycle (a single update holds one lock only).
        let mut order: Vec<&PathBuf> = paths.iter().collect();
        order.sort();
        order.dedup();
        let _locks = order
            .into_iter()
            .map(|path| StoreLock::acquire(self.paths.root(), path))
            .collect::<Result<Vec<_>, _>>()?;
        let mut statuses = Vec::with_capacity(members.len());
        let mut staged = Vec::with_capacity(members.len());
        let mut written = Vec::with_capacity(members.len());
        for (member, path) in members.iter().zip(&paths) {
            let previous = self.read_to_replace(team, member, path)?;
            let status = build(member, previous);
            let mut kept = None;
            staged.push(self.stage_status(path, &status, &mut kept)?);
            written.push((path.clone(), kept));
            statuses.push(status);
        }
        commit(staged)?;
        for (path, kept) in written {
            self.decoded.keep(path, kept);
        }
        for status in &statuses {
            self.write_member_meta(status)?;
        }
        Ok(statuses)
    }
}

/// [`AuditJournal`] writing each member's `journal.jsonl`.
pub struct FsAuditJournal {
    paths: StorePaths,
    log: Option<Arc<dyn LogSink>>,
    retention: Retention,
}

impl FsAuditJournal {
    /// A journal under `paths`; write failures are dropped.
    pub fn new(paths: StorePaths) -> Self {
        Self {
            paths,
            log: None,
            retention: Retention::default(),
        }
    }

    /// Rotates journals as `retention` says instead of by the defaults.
    pub(crate) fn with_retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// Reports write failures to `log` (they still never fail the caller).
    pub(crate) fn with_log(mut self, log: Arc<dyn LogSink>) -> Self {
        self.log = Some(log);
        self
    }

    fn report(&self, written: io::Result<()>, event: &AuditEvent, lines: usize) {
        let (Err(error), Some(log)) = (written, &self.log) else {
            return;
        };
        log.log(
            LogEntry::new(
                LogLevel::Warn,
                LogCode::JournalWriteFailed,
                format!("audit journal write failed: {error}"),
            )
            .with_context(serde_json::json!({
                "teamName": event.team_name,
                "memberName": event.member_name,
                "kind": event.kind,
                "lines": lines,
            })),
        );
    }

    /// Path of a member's journal.
    pub fn path(&self, team: &str, member: &str) -> PathBuf {
        self.paths.member_file(team, member, "journal.jsonl")
    }
}

impl AuditJournal for FsAuditJournal {
    fn record(&self, event: AuditEvent) {
        let path = self.path(&event.team_name, &event.member_name);
        // The audit trail is best effort: a full disk must not fail a reconcile.
        let written = journal::append(self.paths.root(), &path, &event, &self.retention);
        self.report(written, &event, 1);
    }

    fn record_all(&self, events: Vec<AuditEvent>) {
        let Some(first) = events.first() else {
            return;
        };
        let path = self.path(&first.team_name, &first.member_name);
        // The same names are the same file without building its path (a
        // drain's batch is mostly one member's events).
        let same_file = |e: &AuditEvent| {
            (e.team_name == first.team_name && e.member_name == first.member_name)
                || self.path(&e.team_name, &e.member_name) == path
        };
        if events.iter().all(same_file) {
            let written = journal::append_all(self.paths.root(), &path, &events, &self.retention);
            self.report(written, first, events.len());
        } else {
            events.into_iter().for_each(|event| self.record(event));
        }
    }

    fn record_settled_turns(&self, team: &TeamName, member: &str, turns: &[SettledTurnLines<'_>]) {
        let Some(first) = turns.first() else {
            return;
        };
        let path = self.path(team, member);
        let root = self.paths.root();
        let written =
            journal::append_settled_turns(root, &path, team, member, turns, &self.retention);
        if written.is_err() {
            // Only a failure is reported, naming the first line.
            let [claimed, _] = first.events(team, member);
            self.report(written, &claimed, turns.len() * 2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::agenda::Agenda;
    use crate::domain::status::StatusState;
    use crate::infrastructure::clock::ManualClock;
    use std::process::Command;

    fn team(name: &str) -> TeamName {
        TeamName::parse(name).unwrap()
    }

    fn name(member: &str) -> MemberName {
        MemberName::parse(member).unwrap()
    }

    fn status(team: &str, member: &str, diagnostics: Vec<String>) -> MemberStatus {
        MemberStatus {
            team_name: team.into(),
            member_name: member.into(),
            state: StatusState::Unknown,
            agenda: Agenda {
                team_name: team.into(),
                member_name: member.into(),
                generated_at: "2026-11-22T10:00:00.000Z".into(),
                fingerprint: "agenda:v1:x".into(),
                items: vec![],
                diagnostics: vec![],
            },
            report: None,
            report_token: None,
            report_token_expires_at: None,
            shadow: None,
            evaluated_at: "2026-11-22T10:00:00.000Z".into(),
            diagnostics,
            provider_id: None,
        }
    }

    fn store(teams: &std::path::Path) -> FsStatusStore {
        FsStatusStore::new(
            StorePaths::new(teams.to_path_buf()),
            Arc::new(ManualClock::new(7)),
        )
    }

    /// A status this process wrote is read back from its kept decode while
    /// the file holds the bytes written; other bytes are decoded.
    #[test]
    fn a_reread_of_the_written_bytes_answers_from_the_kept_decode() {
        let dir = tempfile::tempdir().unwrap();
        let teams = dir.path().join("teams");
        let (forge, jack) = (team("forge"), name("jack"));
        let diagnostics = |store: &FsStatusStore| {
            store
                .read(&forge, &jack)
                .unwrap()
                .into_status()
                .map(|s| s.diagnostics)
                .unwrap_or_default()
        };
        // A write alone, and one in a group commit with the metrics index.
        for with_metrics in [false, true] {
            let mut written = store(&teams);
            if with_metrics {
                let clock = Arc::new(ManualClock::new(7));
                written = written.with_metrics(Arc::new(FsMetricsStore::new(teams.clone(), clock)));
            }
            let store = written;
            store
                .update(
                    &forge,
                    &jack,
                    Box::new(|_| status("forge", "jack", vec!["a".into()])),
                )
                .unwrap();
            // The kept decode, marked: the written bytes on disk answer with it.
            let path = store.paths.member_file(&forge, &jack, "status.json");
            let mut kept = store.decoded.take(&path);
            kept.as_mut()
                .expect("kept from the write")
                .value
                .diagnostics = vec!["kept".into()];
            store.decoded.keep(path.clone(), kept);
            assert_eq!(diagnostics(&store), ["kept"], "metrics: {with_metrics}");
            // An update replaces the kept decode itself (taken, not copied).
            let mut seen = Vec::new();
            store
                .update(
                    &forge,
                    &jack,
                    Box::new(|previous| {
                        seen = previous
                            .into_status()
                            .map(|s| s.diagnostics)
                            .unwrap_or_default();
                        status("forge", "jack", vec!["a".into()])
                    }),
                )
                .unwrap();
            assert_eq!(seen, ["kept"], "metrics: {with_metrics}");
            assert_eq!(diagnostics(&store), ["a"], "metrics: {with_metrics}");
            // Other bytes of the same length, written in place: decoded.
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, text.replace("\"a\"", "\"b\"")).unwrap();
            assert_eq!(diagnostics(&store), ["b"], "metrics: {with_metrics}");
        }
    }

    /// Appends one diagnostic per round to the member's stored status.
    fn bump(store: &FsStatusStore, member: &str, rounds: usize) {
        for round in 0..rounds {
            store
                .update(
                    &team("forge"),
                    &name(member),
                    Box::new(|previous| {
                        let mut diagnostics = previous
                            .into_status()
                            .map(|s| s.diagnostics)
                            .unwrap_or_default();
                        diagnostics.push(format!("{}:{round}", std::process::id()));
                        status("forge", member, diagnostics)
                    }),
                )
                .unwrap();
        }
    }

    /// Child-process half of `two_processes_lose_no_update`; a no-op in a normal run.
    #[test]
    fn child_process_writer() {
        let (Ok(dir), Ok(member)) = (
            std::env::var("MWS_TEST_TEAMS_DIR"),
            std::env::var("MWS_TEST_MEMBER"),
        ) else {
            return;
        };
        bump(&store(std::path::Path::new(&dir)), &member, 40);
    }

    #[test]
    fn two_processes_lose_no_update() {
        let dir = tempfile::tempdir().unwrap();
        let spawn = |member: &str| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "infrastructure::status_store::tests::child_process_writer",
                    "--quiet",
                ])
                .env("MWS_TEST_TEAMS_DIR", dir.path())
                .env("MWS_TEST_MEMBER", member)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        };
        // Two processes on different members and two on the same member, at once.
        let children = [spawn("jack"), spawn("jill"), spawn("bob"), spawn("bob")];
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        let store = store(dir.path());
        for (member, writes) in [("jack", 40), ("jill", 40), ("bob", 80)] {
            let stored = store
                .read(&team("forge"), &name(member))
                .unwrap()
                .into_status()
                .unwrap();
            assert_eq!(stored.diagnostics.len(), writes, "{member}");
        }
    }

    const GROUP: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

    /// Child-process half of `a_group_commit_killed_at_any_moment_leaves_old_or_new`:
    /// group-commits round after round until killed; a no-op in a normal run.
    #[test]
    fn child_process_group_committer() {
        let Ok(dir) = std::env::var("MWS_TEST_GROUP_DIR") else {
            return;
        };
        let store = store(std::path::Path::new(&dir));
        loop {
            store
                .update_all(
                    &team("forge"),
                    &GROUP.map(name).iter().collect::<Vec<_>>(),
                    &mut |member, previous| {
                        let round = previous.into_status().map_or(0, |s| round_of(&s) + 1);
                        // Large enough that a write is several pages.
                        let padding = format!("{member}{round}").repeat(2_000);
                        status("forge", member, vec![format!("round:{round}"), padding])
                    },
                )
                .unwrap();
        }
    }

    /// The round a status of the group committer carries, after checking it
    /// is whole.
    fn round_of(status: &MemberStatus) -> u64 {
        let round: u64 = status.diagnostics[0]
            .strip_prefix("round:")
            .unwrap()
            .parse()
            .unwrap();
        let member = &status.member_name;
        assert_eq!(
            status.diagnostics[1],
            format!("{member}{round}").repeat(2_000)
        );
        round
    }

    #[test]
    fn a_group_commit_killed_at_any_moment_leaves_old_or_new() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let mut seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos() as u64;
        let mut rounds = [0u64; GROUP.len()];
        let kills = 12;
        for kill in 0..kills {
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "infrastructure::status_store::tests::child_process_group_committer",
                    "--quiet",
                ])
                .env("MWS_TEST_GROUP_DIR", dir.path())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            std::thread::sleep(std::time::Duration::from_millis(20 + (seed >> 33) % 200));
            child.kill().unwrap(); // SIGKILL
            child.wait().unwrap();
            for (i, member) in GROUP.iter().enumerate() {
                match store.peek(&team("forge"), &name(member)).unwrap() {
                    StoredStatus::Current(status) => {
                        let round = round_of(&status);
                        assert!(round >= rounds[i], "{member} went back after kill {kill}");
                        rounds[i] = round;
                    }
                    StoredStatus::Missing => assert_eq!(rounds[i], 0, "{member} lost"),
                    other => panic!("{member} after kill {kill}: {other:?}"),
                }
            }
        }
        // At most one temp file per member and kill is left behind, and the
        // sweep removes them all once their writers are known to be gone.
        let root = TrustedRoot::new(dir.path());
        let mut left = 0;
        for member in GROUP {
            let path = StorePaths::new(dir.path().to_path_buf()).member_file("forge", member, "x");
            let folder = root.open_dir(path.parent().unwrap()).unwrap().unwrap();
            let temps = |f: &super::super::safe_fs::Dir| {
                f.entries()
                    .unwrap()
                    .iter()
                    .filter(|e| super::super::safe_fs::is_temp_name(&e.name))
                    .count()
            };
            left += temps(&folder);
            assert!(temps(&folder) <= kills, "{member}");
            let later = crate::infrastructure::clock::epoch_ms(std::time::SystemTime::now())
                .unwrap()
                + super::super::safe_fs::TEMP_ABANDONED_MS;
            folder.sweep_temp_files(later).unwrap();
            assert_eq!(temps(&folder), 0, "{member}");
        }
        assert!(left <= kills * GROUP.len());
        assert!(rounds.iter().any(|r| *r > 0), "the child never committed");
    }

    #[test]
    fn a_status_write_records_its_metrics_and_unusable_metrics_leave_it_alone() {
        use crate::application::ports::MetricsStore;
        use crate::domain::metrics::events_for_write;
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let clock: Arc<dyn Clock> = Arc::new(ManualClock::new(7));
        let metrics = Arc::new(FsMetricsStore::new(dir.path().to_path_buf(), clock.clone()));
        let store = FsStatusStore::new(StorePaths::new(dir.path().to_path_buf()), clock)
            .with_metrics(metrics.clone());
        bump(&store, "jack", 1);
        let index = metrics.read(&team("forge")).unwrap();
        assert_eq!(index.members["jack"].member_name, "jack");
        assert_eq!(index.recent_events.len(), 1, "{index:?}");
        // The reconciler's own record of that write finds it and writes nothing.
        let index_file = dir
            .path()
            .join("forge/.member-work-sync/indexes/metrics.json");
        let inode = std::fs::metadata(&index_file).unwrap().ino();
        let status = store
            .read(&team("forge"), &name("jack"))
            .unwrap()
            .into_status()
            .unwrap();
        metrics.record(&status, events_for_write(&status)).unwrap();
        assert_eq!(std::fs::metadata(&index_file).unwrap().ino(), inode);
        // A file where the index folder belongs: the status is written all the same.
        std::fs::remove_dir_all(index_file.parent().unwrap()).unwrap();
        std::fs::write(index_file.parent().unwrap(), "not a folder").unwrap();
        bump(&store, "jack", 1);
        let status = store
            .read(&team("forge"), &name("jack"))
            .unwrap()
            .into_status()
            .unwrap();
        assert_eq!(status.diagnostics.len(), 2);
    }

    #[test]
    fn member_keys_keep_hostile_looking_names_inside_the_team() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        // `..` never reaches the store as a member (the port takes checked
        // names only); its key still stays inside the team.
        assert_eq!(
            MemberName::parse(".."),
            Err(crate::domain::names::NameError::Unsafe)
        );
        assert_eq!(
            store.paths.member_file("forge", "..", "status.json"),
            dir.path()
                .join("forge/members/%2E%2E/.member-work-sync/status.json")
        );
        bump(&store, "A b", 1);
        assert!(dir
            .path()
            .join("forge/members/a%20b/member.meta.json")
            .exists());
    }

    #[test]
    fn legacy_v1_team_file_is_a_read_fallback() {
        let dir = tempfile::tempdir().unwrap();
        let legacy = serde_json::json!({
            "schemaVersion": 1,
            "members": { "jack": status("forge", "jack", vec!["old".into()]) },
        });
        crate::infrastructure::json_store::write_json(
            &TrustedRoot::new(dir.path()),
            &dir.path().join("forge/.member-work-sync/status.json"),
            &legacy,
        )
        .unwrap();
        let store = store(dir.path());
        match store.read(&team("forge"), &name("Jack")).unwrap() {
            StoredStatus::Legacy(s) => assert_eq!(s.diagnostics, ["old"]),
            other => panic!("expected legacy fallback, got {other:?}"),
        }
        assert_eq!(
            store.read(&team("forge"), &name("jill")).unwrap(),
            StoredStatus::Missing
        );
        // Once the member file exists it wins.
        bump(&store, "jack", 1);
        assert!(matches!(
            store.read(&team("forge"), &name("jack")).unwrap(),
            StoredStatus::Current(_)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_status_file_is_moved_aside_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.json");
        std::fs::write(&outside, "{}").unwrap();
        let path =
            StorePaths::new(dir.path().to_path_buf()).member_file("forge", "jack", "status.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &path).unwrap();
        let store = store(dir.path());
        let mut seen = None;
        store
            .update(
                &team("forge"),
                &name("jack"),
                Box::new(|previous| {
                    seen = Some(previous);
                    status("forge", "jack", vec![])
                }),
            )
            .unwrap();
        assert_eq!(
            seen,
            Some(StoredStatus::Quarantined {
                reason: "not_a_file".into()
            })
        );
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "{}");
        assert!(std::fs::symlink_metadata(&path)
            .unwrap()
            .file_type()
            .is_file());
    }

    #[test]
    fn a_link_at_member_meta_is_moved_aside_and_the_file_written() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.json");
        std::fs::write(&outside, "precious").unwrap();
        let meta = dir.path().join("forge/members/jack/member.meta.json");
        std::fs::create_dir_all(meta.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside, &meta).unwrap();
        bump(&store(dir.path()), "jack", 1);
        assert!(std::fs::symlink_metadata(&meta).unwrap().is_file());
        assert!(std::fs::read_to_string(&meta)
            .unwrap()
            .contains("\"memberKey\": \"jack\""));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert!(meta
            .with_file_name("member.meta.json.invalid.7")
            .is_symlink());
    }
}
