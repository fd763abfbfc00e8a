//! The legacy JSON files of a team as the app's importer reads them
//! (`JsonMemberWorkSyncStore.readSnapshotForImport` and
//! `readArchivedSnapshotForImport`), and their archiving as `*.pre-sqlite`
//! generations (`archiveFileWithGenerations`).
//!
//! Rows stay JSON values: the import must carry every field the files
//! hold, in the files' order, exactly as the app's mappers would.
//!
//! Everything here lies under the Claude root. Reads go through
//! [`TrustedRoot`]: no link is followed and no FIFO opened. A live file that
//! is not a regular file, or does not parse or validate, is quarantined
//! (the entry itself renamed to `<name>.invalid.<ms>`, as the app does with
//! invalid files) and read as empty; an archive that is not a regular file
//! is an error (the app fails on an unreadable archive); an archive
//! renames the entry itself, never through a link.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::identity::team_key;
use crate::domain::names::{member_key, normalize_member_name};
use crate::infrastructure::json_store::quarantine;
use crate::infrastructure::safe_fs::{FileKind, FileRead, TrustedRoot};

/// A legacy file larger than this is not read.
pub const MAX_LEGACY_FILE_BYTES: u64 = 32 * 1024 * 1024;
/// The archive suffix.
pub const PRE_SQLITE: &str = ".pre-sqlite";
/// Generations tried before an archive gives up (`MAX_ARCHIVE_ATTEMPTS`).
pub const MAX_ARCHIVE_ATTEMPTS: u64 = 100;

/// A legacy file that could not be read or archived.
#[derive(Debug, thiserror::Error)]
pub enum LegacyFileError {
    /// The file system failed.
    #[error("member-work-sync legacy JSON {path}: {source}")]
    Io {
        /// The legacy file or archive being read, written or deleted.
        path: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// An archive generation that is a link, FIFO, folder or device.
    #[error("member-work-sync legacy JSON archive {path} is not a regular file; not opened")]
    NotAFile {
        /// The archive generation found in its place.
        path: PathBuf,
    },
    /// Bigger than [`MAX_LEGACY_FILE_BYTES`].
    #[error("member-work-sync legacy JSON {path} is larger than {MAX_LEGACY_FILE_BYTES} bytes")]
    TooLarge {
        /// The file that was not read.
        path: PathBuf,
    },
    /// Every generation up to [`MAX_ARCHIVE_ATTEMPTS`] is taken.
    #[error("No free archive slot for {path}{PRE_SQLITE} after {MAX_ARCHIVE_ATTEMPTS} attempts")]
    NoFreeArchiveSlot {
        /// The file to archive.
        path: PathBuf,
    },
}

/// A team's rows read from legacy files, in the domain (camelCase) form.
#[derive(Debug, Clone, Default)]
pub struct LegacySnapshot {
    /// Member statuses, archived generations first, then the live file's.
    pub statuses: Vec<Value>,
    /// Report intents, in the same order.
    pub report_intents: Vec<Value>,
    /// Outbox items, in the same order.
    pub outbox_items: Vec<Value>,
    /// Metric events, in the same order.
    pub metric_events: Vec<Value>,
    /// The live files read, to archive once imported.
    pub files_to_archive: Vec<PathBuf>,
}

impl LegacySnapshot {
    /// `archived` rows followed by `active` ones (later rows win in the
    /// merge), the active files to archive.
    pub fn combine(archived: Option<Self>, active: Option<Self>) -> Option<Self> {
        if archived.is_none() && active.is_none() {
            return None;
        }
        let (archived, active) = (archived.unwrap_or_default(), active.unwrap_or_default());
        let join = |a: Vec<Value>, b: Vec<Value>| a.into_iter().chain(b).collect();
        Some(Self {
            statuses: join(archived.statuses, active.statuses),
            report_intents: join(archived.report_intents, active.report_intents),
            outbox_items: join(archived.outbox_items, active.outbox_items),
            metric_events: join(archived.metric_events, active.metric_events),
            files_to_archive: active.files_to_archive,
        })
    }

    /// The domain snapshot value [`super::snapshot::domain_to_records`] takes.
    pub fn to_domain(&self) -> Value {
        serde_json::json!({
            "statuses": self.statuses,
            "reportIntents": self.report_intents,
            "outboxItems": self.outbox_items,
            "metricEvents": self.metric_events,
            "filesToArchive": [],
        })
    }
}

/// Rows kept by identity in first-insertion order (a JavaScript `Map`).
struct Keyed {
    order: Vec<String>,
    rows: HashMap<String, Value>,
}

impl Keyed {
    fn new() -> Self {
        Self {
            order: Vec::new(),
            rows: HashMap::new(),
        }
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.rows.get(key)
    }

    fn set(&mut self, key: String, row: Value) {
        if !self.rows.contains_key(&key) {
            self.order.push(key.clone());
        }
        self.rows.insert(key, row);
    }

    /// Sets `row`, or what `pick(current, row)` chooses when the key is taken.
    fn pick(&mut self, key: String, row: Value, pick: fn(Value, Value) -> Value) {
        let next = match self.rows.get(&key) {
            Some(current) => pick(current.clone(), row),
            None => row,
        };
        self.set(key, next);
    }

    fn into_values(mut self) -> Vec<Value> {
        self.order
            .iter()
            .filter_map(|k| self.rows.remove(k))
            .collect()
    }
}

/// A row's string field (`None` when absent or not a string).
pub(super) fn str_of<'a>(row: &'a Value, field: &str) -> Option<&'a str> {
    row.get(field).and_then(Value::as_str)
}

/// `normalizeTeamKey`: a non-string is the empty key.
fn team_of(row: &Value) -> String {
    str_of(row, "teamName").map(team_key).unwrap_or_default()
}

/// `normalizeMemberKey` of a row's `memberName` (a non-string gives the
/// empty key).
pub(super) fn member_of(row: &Value) -> String {
    str_of(row, "memberName")
        .map(normalize_member_name)
        .unwrap_or_default()
}

pub(super) fn compare_iso(left: Option<&str>, right: Option<&str>) -> std::cmp::Ordering {
    use crate::domain::time::parse_iso;
    let ms = |v: Option<&str>| v.filter(|v| !v.is_empty()).and_then(parse_iso);
    match (ms(left), ms(right)) {
        (Some(l), Some(r)) => l.cmp(&r),
        (Some(_), None) => std::cmp::Ordering::Greater,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (None, None) => std::cmp::Ordering::Equal,
    }
}

/// `pickDomainReportIntent`: processed (any non-pending status) beats
/// pending; otherwise the later or equal time wins (ties to incoming).
pub(super) fn pick_domain_intent(canonical: Value, incoming: Value) -> Value {
    let processed = |v: &Value| str_of(v, "status") != Some("pending");
    let (c, i) = (processed(&canonical), processed(&incoming));
    if c != i {
        return if i { incoming } else { canonical };
    }
    let time = |v: &Value, p: bool| {
        str_of(v, if p { "processedAt" } else { "recordedAt" }).map(str::to_string)
    };
    let (left, right) = (time(&canonical, c), time(&incoming, i));
    if compare_iso(right.as_deref(), left.as_deref()).is_ge() {
        incoming
    } else {
        canonical
    }
}

/// `pickDomainOutboxItem`: delivery proof, then generation, then the later
/// or equal update.
pub(super) fn pick_domain_outbox(canonical: Value, incoming: Value) -> Value {
    let rank = |v: &Value| match str_of(v, "status") {
        Some("delivered") => 2,
        Some("failed_terminal") => 1,
        _ => 0,
    };
    let (c, i) = (rank(&canonical), rank(&incoming));
    if c != i && (c > 0 || i > 0) {
        return if i > c { incoming } else { canonical };
    }
    let generation = |v: &Value| v.get("attemptGeneration").and_then(Value::as_f64);
    let (cg, ig) = (generation(&canonical), generation(&incoming));
    if cg != ig {
        return if ig > cg { incoming } else { canonical };
    }
    if compare_iso(
        str_of(&incoming, "updatedAt"),
        str_of(&canonical, "updatedAt"),
    )
    .is_ge()
    {
        incoming
    } else {
        canonical
    }
}

/// The shape a file must have, else it reads as its empty form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `{schemaVersion: 1, members: {}}` (team `status.json`).
    LegacyStatus,
    /// `{schemaVersion: 2, status: {}}` (member `status.json`).
    MemberStatus,
    /// `{schemaVersion: 2, members, recentEvents: []}` (`indexes/metrics.json`).
    MetricsIndex,
    /// `{schemaVersion: 1, intents: {}}` (team `pending-reports.json`).
    LegacyReports,
    /// `{schemaVersion: 2, intents: {}}` (member `reports.json`).
    MemberReports,
    /// `{schemaVersion: 1, items: {}}` (team `outbox.json`).
    LegacyOutbox,
    /// `{schemaVersion: 2, items: {}}` (member `outbox.json`).
    MemberOutbox,
}

impl Shape {
    fn accepts(self, value: &Value) -> bool {
        let version = value.get("schemaVersion").and_then(Value::as_f64);
        let record = |f: &str| value.get(f).is_some_and(Value::is_object);
        match self {
            Self::LegacyStatus => version == Some(1.0) && record("members"),
            Self::MemberStatus => version == Some(2.0) && record("status"),
            Self::MetricsIndex => {
                version == Some(2.0)
                    && value
                        .get("members")
                        .is_some_and(|m| m.is_object() || m.is_array())
                    && value.get("recentEvents").is_some_and(Value::is_array)
            }
            Self::LegacyReports => version == Some(1.0) && record("intents"),
            Self::MemberReports => version == Some(2.0) && record("intents"),
            Self::LegacyOutbox => version == Some(1.0) && record("items"),
            Self::MemberOutbox => version == Some(2.0) && record("items"),
        }
    }
}

/// Whether a read may quarantine what it cannot use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// A live file: an invalid one is moved aside.
    Live,
    /// An archive generation: never changed.
    Archive,
}

/// The values of an object field, in order (`Object.values`).
fn values_of(value: &Option<Value>, field: &str) -> Vec<Value> {
    value
        .as_ref()
        .and_then(|v| v.get(field))
        .and_then(Value::as_object)
        .map(|o| o.values().cloned().collect())
        .unwrap_or_default()
}

fn entries_of(value: &Option<Value>, field: &str) -> Vec<(String, Value)> {
    value
        .as_ref()
        .and_then(|v| v.get(field))
        .and_then(Value::as_object)
        .map(|o: &Map<String, Value>| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

fn events_of(value: &Option<Value>, path: &[&str]) -> Vec<Value> {
    let mut current = value.as_ref();
    for field in path {
        current = current.and_then(|v| v.get(*field));
    }
    current
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// `decodeURIComponent`; `None` where it throws.
fn decode_uri_component(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The legacy files of the teams under one teams folder.
#[derive(Debug, Clone)]
pub struct LegacyFiles {
    root: TrustedRoot,
}

impl LegacyFiles {
    /// The files below `teams_base`.
    pub fn new(teams_base: PathBuf) -> Self {
        Self {
            root: TrustedRoot::new(teams_base),
        }
    }

    fn team_dir(&self, team: &str) -> PathBuf {
        self.root.join(team).join(".member-work-sync")
    }

    fn legacy_status(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("status.json")
    }
    fn legacy_reports(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("pending-reports.json")
    }
    fn legacy_outbox(&self, team: &str) -> PathBuf {
        self.team_dir(team).join("outbox.json")
    }
    fn index(&self, team: &str, name: &str) -> PathBuf {
        self.team_dir(team).join("indexes").join(name)
    }
    fn member_file(&self, team: &str, member: &str, name: &str) -> PathBuf {
        self.root
            .join(team)
            .join("members")
            .join(member_key(member))
            .join(".member-work-sync")
            .join(name)
    }

    /// The live files that make a snapshot, team files first.
    pub(crate) fn candidates(&self, team: &str, members: &[String]) -> Vec<PathBuf> {
        let mut files = vec![
            self.legacy_status(team),
            self.legacy_reports(team),
            self.legacy_outbox(team),
            self.index(team, "metrics.json"),
            self.index(team, "outbox-index.json"),
            self.index(team, "pending-reports-index.json"),
        ];
        for member in members {
            for name in ["status.json", "reports.json", "outbox.json"] {
                files.push(self.member_file(team, member, name));
            }
        }
        files
    }

    fn io(path: &Path) -> impl Fn(io::Error) -> LegacyFileError + '_ {
        move |source| LegacyFileError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn exists(&self, path: &Path) -> Result<bool, LegacyFileError> {
        match self.root.meta(path) {
            Ok(meta) => Ok(meta.is_some()),
            // A link or file where a folder should be: nothing below it.
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => Ok(false),
            Err(e) => Err(Self::io(path)(e)),
        }
    }

    /// A file of `shape`, `None` when absent or unusable (a live one then
    /// quarantined).
    fn read(
        &self,
        path: &Path,
        shape: Shape,
        source: Source,
        now_ms: i64,
    ) -> Result<Option<Value>, LegacyFileError> {
        let bytes = match self.root.read(path, MAX_LEGACY_FILE_BYTES) {
            Ok(FileRead::Missing) => return Ok(None),
            Ok(FileRead::Bytes(bytes)) => Some(bytes),
            Ok(FileRead::TooLarge) => {
                return Err(LegacyFileError::TooLarge {
                    path: path.to_path_buf(),
                })
            }
            Ok(FileRead::NotAFile) if source == Source::Archive => {
                return Err(LegacyFileError::NotAFile {
                    path: path.to_path_buf(),
                })
            }
            Ok(FileRead::NotAFile) => None,
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(None),
            Err(e) => return Err(Self::io(path)(e)),
        };
        let parsed = bytes
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .filter(|v| shape.accepts(v));
        if parsed.is_none() && source == Source::Live {
            quarantine(&self.root, path, now_ms).map_err(Self::io(path))?;
        }
        Ok(parsed)
    }

    /// The `*.pre-sqlite[-N]` generations of `path`, oldest first.
    fn generations(&self, path: &Path) -> Result<Vec<(u64, PathBuf)>, LegacyFileError> {
        let (Some(dir_path), Some(name)) =
            (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return Ok(Vec::new());
        };
        let dir = match self.root.open_dir(dir_path) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Ok(Vec::new()),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(Vec::new()),
            Err(e) => return Err(Self::io(dir_path)(e)),
        };
        let archive = format!("{name}{PRE_SQLITE}");
        let prefix = format!("{archive}-");
        let mut found: Vec<(u64, PathBuf)> = dir
            .entries()
            .map_err(Self::io(dir_path))?
            .into_iter()
            .filter_map(|entry| {
                let generation = if entry.name == archive {
                    1
                } else {
                    let digits = entry.name.strip_prefix(&prefix)?;
                    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                        return None;
                    }
                    digits
                        .parse::<u64>()
                        .ok()
                        .filter(|g| *g >= 2 && *g < (1 << 53))?
                };
                Some((generation, dir_path.join(&entry.name)))
            })
            .collect();
        found.sort_by_key(|(g, _)| *g);
        Ok(found)
    }

    /// The member names the import reads (`scanMemberNamesForImport`):
    /// those of `members/*/member.meta.json`, then metadata-free folders
    /// whose name is a canonical key holding a live or archived file.
    pub(crate) fn members(&self, team: &str) -> Result<Vec<String>, LegacyFileError> {
        let members_dir = self.root.join(team).join("members");
        let dirs: Vec<String> = match self.root.open_dir(&members_dir) {
            Ok(Some(dir)) => dir
                .entries()
                .map_err(Self::io(&members_dir))?
                .into_iter()
                .filter(|e| e.kind == Some(FileKind::Dir))
                .map(|e| e.name)
                .collect(),
            Ok(None) => Vec::new(),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => Vec::new(),
            Err(e) => return Err(Self::io(&members_dir)(e)),
        };
        let mut names = Keyed::new();
        let add = |names: &mut Keyed, name: &str| {
            let name = crate::domain::js_semantics::js_trim(name);
            if !name.is_empty() && names.get(&member_key(name)).is_none() {
                names.set(member_key(name), Value::from(name));
            }
        };
        for dir in &dirs {
            let meta = members_dir.join(dir).join("member.meta.json");
            if let Ok(FileRead::Bytes(bytes)) = self.root.read(&meta, MAX_LEGACY_FILE_BYTES) {
                if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
                    if let Some(name) = str_of(&value, "memberName") {
                        add(&mut names, name);
                    }
                }
            }
        }
        for dir in &dirs {
            if names.get(dir).is_some() {
                continue;
            }
            let Some(name) = decode_uri_component(dir) else {
                continue;
            };
            if normalize_member_name(&name).is_empty() || member_key(&name) != *dir {
                continue;
            }
            let mut has_file = false;
            for file in ["status.json", "reports.json", "outbox.json"] {
                let path = self.member_file(team, &name, file);
                if self.exists(&path)? || !self.generations(&path)?.is_empty() {
                    has_file = true;
                    break;
                }
            }
            if has_file {
                add(&mut names, &name);
            }
        }
        Ok(names
            .into_values()
            .into_iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect())
    }

    /// The live files' snapshot; `None` when no candidate file exists.
    pub fn read_active(
        &self,
        team: &str,
        now_ms: i64,
    ) -> Result<Option<LegacySnapshot>, LegacyFileError> {
        let members = self.members(team)?;
        let mut files_to_archive = Vec::new();
        for path in self.candidates(team, &members) {
            if self.exists(&path)? {
                files_to_archive.push(path);
            }
        }
        if files_to_archive.is_empty() {
            return Ok(None);
        }
        let key = team_key(team);
        let live = |path: PathBuf, shape| self.read(&path, shape, Source::Live, now_ms);

        let mut statuses = Keyed::new();
        for member in &members {
            let file = live(
                self.member_file(team, member, "status.json"),
                Shape::MemberStatus,
            )?;
            if let Some(status) = file.and_then(|f| f.get("status").cloned()) {
                if team_of(&status) == key {
                    statuses.set(member_of(&status), status);
                }
            }
        }
        let legacy_status = live(self.legacy_status(team), Shape::LegacyStatus)?;
        for (member, status) in entries_of(&legacy_status, "members") {
            if team_of(&status) != key {
                continue;
            }
            let mut member_key_of = member_of(&status);
            if member_key_of.is_empty() {
                member_key_of = normalize_member_name(&member);
            }
            if statuses.get(&member_key_of).is_none() {
                statuses.set(member_key_of, status);
            }
        }

        let owned = |row: &Value, member: &str| {
            team_of(row) == key && member_of(row) == normalize_member_name(member)
        };
        let mut intents = Keyed::new();
        for member in &members {
            let file = live(
                self.member_file(team, member, "reports.json"),
                Shape::MemberReports,
            )?;
            for intent in values_of(&file, "intents") {
                if let (true, Some(id)) = (owned(&intent, member), str_of(&intent, "id")) {
                    intents.set(id.to_string(), intent.clone());
                }
            }
        }
        let legacy_reports = live(self.legacy_reports(team), Shape::LegacyReports)?;
        for intent in values_of(&legacy_reports, "intents") {
            if let (true, Some(id)) = (team_of(&intent) == key, str_of(&intent, "id")) {
                intents.pick(id.to_string(), intent.clone(), pick_domain_intent);
            }
        }

        let mut outbox = Keyed::new();
        for member in &members {
            let file = live(
                self.member_file(team, member, "outbox.json"),
                Shape::MemberOutbox,
            )?;
            for item in values_of(&file, "items") {
                if let (true, Some(id)) = (owned(&item, member), str_of(&item, "id")) {
                    outbox.set(id.to_string(), item.clone());
                }
            }
        }
        let legacy_outbox = live(self.legacy_outbox(team), Shape::LegacyOutbox)?;
        for item in values_of(&legacy_outbox, "items") {
            if let (true, Some(id)) = (team_of(&item) == key, str_of(&item, "id")) {
                outbox.pick(id.to_string(), item.clone(), pick_domain_outbox);
            }
        }

        let mut events = Keyed::new();
        let metrics = live(self.index(team, "metrics.json"), Shape::MetricsIndex)?;
        for event in events_of(&legacy_status, &["metrics", "recentEvents"])
            .into_iter()
            .chain(events_of(&metrics, &["recentEvents"]))
        {
            if let (true, Some(id)) = (team_of(&event) == key, str_of(&event, "id")) {
                events.set(id.to_string(), event.clone());
            }
        }
        Ok(Some(LegacySnapshot {
            statuses: statuses.into_values(),
            report_intents: intents.into_values(),
            outbox_items: outbox.into_values(),
            metric_events: events.into_values(),
            files_to_archive,
        }))
    }

    /// Every archive generation overlaid oldest to newest; `None` when no
    /// generation of any file exists.
    pub fn read_archived(&self, team: &str) -> Result<Option<LegacySnapshot>, LegacyFileError> {
        let members = self.members(team)?;
        let key = team_key(team);
        let mut count = 0usize;
        let mut archives =
            |path: PathBuf, shape: Shape| -> Result<Vec<Option<Value>>, LegacyFileError> {
                let generations = self.generations(&path)?;
                count += generations.len();
                generations
                    .into_iter()
                    .map(|(_, p)| self.read(&p, shape, Source::Archive, 0))
                    .collect()
            };

        let mut statuses = Keyed::new();
        let legacy_statuses = archives(self.legacy_status(team), Shape::LegacyStatus)?;
        for legacy in &legacy_statuses {
            for (member, status) in entries_of(legacy, "members") {
                if team_of(&status) != key {
                    continue;
                }
                let mut k = member_of(&status);
                if k.is_empty() {
                    k = normalize_member_name(&member);
                }
                statuses.set(k, status);
            }
        }
        for member in &members {
            for file in archives(
                self.member_file(team, member, "status.json"),
                Shape::MemberStatus,
            )? {
                if let Some(status) = file.and_then(|f| f.get("status").cloned()) {
                    if team_of(&status) == key {
                        statuses.set(member_of(&status), status);
                    }
                }
            }
        }

        let owned = |row: &Value, member: &str| {
            team_of(row) == key && member_of(row) == normalize_member_name(member)
        };
        let mut intents = Keyed::new();
        for file in archives(self.legacy_reports(team), Shape::LegacyReports)? {
            for intent in values_of(&file, "intents") {
                if let (true, Some(id)) = (team_of(&intent) == key, str_of(&intent, "id")) {
                    intents.pick(id.to_string(), intent.clone(), pick_domain_intent);
                }
            }
        }
        for member in &members {
            for file in archives(
                self.member_file(team, member, "reports.json"),
                Shape::MemberReports,
            )? {
                for intent in values_of(&file, "intents") {
                    if let (true, Some(id)) = (owned(&intent, member), str_of(&intent, "id")) {
                        intents.pick(id.to_string(), intent.clone(), pick_domain_intent);
                    }
                }
            }
        }

        let mut outbox = Keyed::new();
        for file in archives(self.legacy_outbox(team), Shape::LegacyOutbox)? {
            for item in values_of(&file, "items") {
                if let (true, Some(id)) = (team_of(&item) == key, str_of(&item, "id")) {
                    outbox.pick(id.to_string(), item.clone(), pick_domain_outbox);
                }
            }
        }
        for member in &members {
            for file in archives(
                self.member_file(team, member, "outbox.json"),
                Shape::MemberOutbox,
            )? {
                for item in values_of(&file, "items") {
                    if let (true, Some(id)) = (owned(&item, member), str_of(&item, "id")) {
                        outbox.pick(id.to_string(), item.clone(), pick_domain_outbox);
                    }
                }
            }
        }

        let mut events = Keyed::new();
        let metrics = archives(self.index(team, "metrics.json"), Shape::MetricsIndex)?;
        let legacy_events = legacy_statuses
            .iter()
            .flat_map(|f| events_of(f, &["metrics", "recentEvents"]));
        let index_events = metrics.iter().flat_map(|f| events_of(f, &["recentEvents"]));
        for event in legacy_events.chain(index_events) {
            if let (true, Some(id)) = (team_of(&event) == key, str_of(&event, "id")) {
                events.set(id.to_string(), event.clone());
            }
        }
        // The routing indexes hold no rows, but an archived one is a snapshot.
        archives(self.index(team, "outbox-index.json"), Shape::MemberOutbox)?;
        archives(
            self.index(team, "pending-reports-index.json"),
            Shape::MemberOutbox,
        )?;
        if count == 0 {
            return Ok(None);
        }
        Ok(Some(LegacySnapshot {
            statuses: statuses.into_values(),
            report_intents: intents.into_values(),
            outbox_items: outbox.into_values(),
            metric_events: events.into_values(),
            files_to_archive: Vec::new(),
        }))
    }

    /// Deletes the live file at `path` (the entry itself, never through a
    /// link); absent is fine. Returns its folder, to sync.
    pub(crate) fn remove(
        &self,
        path: &Path,
    ) -> Result<Option<crate::infrastructure::safe_fs::Dir>, LegacyFileError> {
        let (Some(dir_path), Some(name)) = (path.parent(), path.file_name()) else {
            return Ok(None);
        };
        let dir = match self.root.open_dir(dir_path) {
            Ok(Some(dir)) => dir,
            Ok(None) => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(None),
            Err(e) => return Err(Self::io(dir_path)(e)),
        };
        dir.remove_file(name).map_err(Self::io(path))?;
        Ok(Some(dir))
    }

    /// Renames `path` to its next free `*.pre-sqlite[-N]` generation (the
    /// entry itself, never through a link, never over an existing name); a
    /// missing file is a no-op.
    pub fn archive(&self, path: &Path) -> Result<(), LegacyFileError> {
        let (Some(dir_path), Some(name)) =
            (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return Ok(());
        };
        let Some(dir) = self.root.open_dir(dir_path).map_err(Self::io(dir_path))? else {
            return Ok(());
        };
        let first = self.generations(path)?.last().map_or(0, |(g, _)| *g) + 1;
        for generation in first..=MAX_ARCHIVE_ATTEMPTS {
            let target = match generation {
                1 => format!("{name}{PRE_SQLITE}"),
                n => format!("{name}{PRE_SQLITE}-{n}"),
            };
            if dir.meta(&target).map_err(Self::io(path))?.is_some() {
                continue;
            }
            if dir
                .rename(name, &dir, &target, false)
                .map_err(Self::io(path))?
            {
                return dir.sync().map_err(Self::io(dir_path));
            }
            if dir.meta(name).map_err(Self::io(path))?.is_none() {
                return Ok(());
            }
        }
        Err(LegacyFileError::NoFreeArchiveSlot {
            path: path.to_path_buf(),
        })
    }
}
