//! The runtime turn-settled spool (DATA.md §4 "Runtime spool", §5
//! "Schedulers/spool"): `<teamsBase>/.member-work-sync/runtime-hooks/` with
//! `bin/ incoming/ processing/ processed/ invalid/`.
//!
//! Every state change is one `rename(2)` inside the spool, so a file is always
//! in exactly one dir and two drainers (two app windows) cannot both own it:
//!
//! * claim: `incoming/<name>` → `processing/<name>.claimed-<ms>`; the claim time
//!   travels in the name, atomically with the claim, so recovery can tell a
//!   stale claim from a fresh one without trusting file times;
//! * commit: the meta file is written first, then the payload is renamed into
//!   `processed/` or `invalid/`. That rename is the commit point: a drainer
//!   whose claim was recovered by another one (it stalled > 5 min) finds its
//!   source gone and reports the claim lost, so the event is acted on once;
//! * release and recovery: back to `incoming/<name>`.
//!
//! No fsync: the spool is a best-effort signal that must survive a killed
//! process (the page cache does), not a power cut; syncing every event would
//! cost more than the whole drain.

use std::fs;
use std::io::{self, ErrorKind, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::application::ports::{Clock, PortError};
use crate::application::turn_settled::{ClaimContent, SpoolClaim, TurnSettledSpool};
use crate::domain::time::{format_iso, EpochMs};
use crate::domain::turn_settled::{RuntimeProvider, MAX_PAYLOAD_BYTES};
use crate::infrastructure::clock::{epoch_ms, modified_ms};
use crate::infrastructure::process::process_alive;

/// The hook script, embedded at build time from `hooks/`.
pub const HOOK_SCRIPT: &str = include_str!("../../hooks/turn-settled-hook-v1.sh");
/// Its installed file name.
pub const HOOK_SCRIPT_NAME: &str = "turn-settled-hook-v1.sh";
/// `bin/` file with `<boot id> <boot time in centiseconds>\n`: the hook's
/// cheap clock on Linux (see [`SpoolPaths::refresh_boot_time`]).
pub const BOOT_TIME_FILE_NAME: &str = "boot-time";
/// The boot time is rewritten when it moved by more than this (a wall-clock
/// step), not for the centisecond jitter of computing it.
const BOOT_TIME_TOLERANCE_CS: i64 = 50;
/// A claim older than this is taken back to `incoming/` (its drainer died).
pub const STALE_CLAIM_MS: EpochMs = 5 * 60 * 1000;
/// Processed results kept: newest this many...
pub const KEEP_PROCESSED: usize = 1000;
/// ...and none older than this.
pub const PROCESSED_MAX_AGE_MS: EpochMs = 24 * 3600 * 1000;
/// Invalid results kept: newest this many...
pub const KEEP_INVALID: usize = 100;
/// ...and none older than this.
pub const INVALID_MAX_AGE_MS: EpochMs = 72 * 3600 * 1000;

/// A hook temp file untouched this long belongs to a hook that was killed
/// before its rename (a hook takes milliseconds; runtimes stop a hook after a
/// timeout of a minute or so).
pub const ABANDONED_TEMP_MS: EpochMs = 60 * 60 * 1000;

/// A name stamp further than this from the file's modification time is not
/// trusted as the spool time (the hook's clock was off, e.g. after a
/// wall-clock step it had not seen yet); the modification time is used.
pub const STAMP_TOLERANCE_MS: EpochMs = 5_000;

/// How often `incoming/` is swept for abandoned temp files: a full listing
/// per drain would cost more than the drain itself when thousands are pending.
pub const SWEEP_EVERY_MS: EpochMs = 10 * 60 * 1000;

/// Prefix of the hook's hidden temp files in `incoming/`.
const HOOK_TEMP_PREFIX: &str = ".turn-settled.";
const CLAIM_TAG: &str = ".claimed-";
const META_SUFFIX: &str = ".meta.json";

/// Where the spool lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpoolPaths {
    /// `<teamsBase>/.member-work-sync/runtime-hooks`.
    pub root: PathBuf,
}

impl SpoolPaths {
    /// The spool of a teams dir.
    pub fn for_teams_base(teams_base: &Path) -> Self {
        Self {
            root: teams_base.join(".member-work-sync").join("runtime-hooks"),
        }
    }

    /// `incoming/`: complete payloads written by the hook.
    pub fn incoming(&self) -> PathBuf {
        self.root.join("incoming")
    }

    /// `processing/`: claimed by a drainer.
    pub fn processing(&self) -> PathBuf {
        self.root.join("processing")
    }

    /// `processed/`: done, with `<file>.meta.json`.
    pub fn processed(&self) -> PathBuf {
        self.root.join("processed")
    }

    /// `invalid/`: unusable payloads, with `<file>.meta.json`.
    pub fn invalid(&self) -> PathBuf {
        self.root.join("invalid")
    }

    /// `bin/turn-settled-hook-v1.sh`.
    pub fn script(&self) -> PathBuf {
        self.root.join("bin").join(HOOK_SCRIPT_NAME)
    }

    /// `bin/boot-time`, read by the hook (see [`SpoolPaths::refresh_boot_time`]).
    pub fn boot_time_file(&self) -> PathBuf {
        self.root.join("bin").join(BOOT_TIME_FILE_NAME)
    }

    /// Creates the layout (dirs 0700) and installs the hook script (0755),
    /// rewriting it only when its content differs, and writes the boot-time
    /// file. Returns the script path.
    pub fn install(&self) -> io::Result<PathBuf> {
        for dir in [
            self.root.clone(),
            self.root.join("bin"),
            self.incoming(),
            self.processing(),
            self.processed(),
            self.invalid(),
        ] {
            fs::create_dir_all(&dir)?;
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
        }
        let script = self.script();
        let current = fs::read(&script).ok();
        if current.as_deref() != Some(HOOK_SCRIPT.as_bytes()) {
            let dir = self.root.join("bin");
            let mut temp = tempfile::Builder::new()
                .prefix(&format!(".{HOOK_SCRIPT_NAME}.tmp."))
                .permissions(fs::Permissions::from_mode(0o755))
                .tempfile_in(&dir)?;
            io::Write::write_all(&mut temp, HOOK_SCRIPT.as_bytes())?;
            temp.as_file().sync_all()?;
            temp.persist(&script).map_err(|e| e.error)?;
        }
        // (Also after a fresh write: the mode asked at creation is masked by the umask.)
        if fs::metadata(&script)?.permissions().mode() & 0o777 != 0o755 {
            fs::set_permissions(&script, fs::Permissions::from_mode(0o755))?;
        }
        // Without it the hook reads /proc/stat instead: slower, still right.
        let _ = self.refresh_boot_time();
        Ok(script)
    }

    /// Writes `bin/boot-time` as `<boot id> <centiseconds>\n` when it is
    /// missing, from another boot, or off by more than half a second (a
    /// wall-clock step). The number is the wall-clock time at which
    /// `/proc/uptime` read 0, as this process sees that file: the hook adds
    /// its own `/proc/uptime` to it, which costs it a few dozen bytes of
    /// reading instead of `/proc/stat` (kilobytes, which `sh`'s `read` takes
    /// a byte at a time). Using `/proc/uptime` on both sides keeps the sum
    /// right where that file is per-container (lxcfs) and `btime` is not.
    /// The hook ignores the file unless the boot id matches. No-op off Linux
    /// (the hook runs `date` there).
    pub fn refresh_boot_time(&self) -> io::Result<()> {
        let Some((boot_id, boot_cs)) = boot_time_now() else {
            return Ok(());
        };
        let path = self.boot_time_file();
        let current = fs::read_to_string(&path).unwrap_or_default();
        let fresh = current
            .trim_end()
            .split_once(' ')
            .filter(|(id, _)| *id == boot_id)
            .and_then(|(_, cs)| cs.parse::<i64>().ok())
            .is_some_and(|cs| (cs - boot_cs).abs() <= BOOT_TIME_TOLERANCE_CS);
        if fresh {
            return Ok(());
        }
        let mut temp = tempfile::Builder::new()
            .prefix(&format!(".{BOOT_TIME_FILE_NAME}.tmp."))
            .tempfile_in(self.root.join("bin"))?;
        io::Write::write_all(&mut temp, format!("{boot_id} {boot_cs}\n").as_bytes())?;
        temp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }
}

/// This boot's id and the wall-clock time, in centiseconds, at which
/// `/proc/uptime` read 0; `None` where `/proc` lacks them.
fn boot_time_now() -> Option<(String, i64)> {
    let boot_id = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let boot_id = boot_id.trim().to_string();
    let id_ok = !boot_id.is_empty() && boot_id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    let uptime = fs::read_to_string("/proc/uptime").ok()?;
    let now_ms = epoch_ms(std::time::SystemTime::now())?;
    let (secs, cs) = uptime.split_whitespace().next()?.split_once('.')?;
    let uptime_cs = secs.parse::<i64>().ok()? * 100 + cs.get(..2)?.parse::<i64>().ok()?;
    let boot_cs = now_ms / 10 - uptime_cs;
    (id_ok && boot_cs > 0).then_some((boot_id, boot_cs))
}

/// What a spool file name says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpoolName {
    /// `<YYYYMMDDTHHMMSSZ>-<pid>-<suffix>.<provider>.json` with a known provider.
    Event {
        /// The provider of the suffix.
        provider: RuntimeProvider,
        /// The stamp, epoch ms.
        stamp_ms: EpochMs,
    },
    /// The documented shape, but a provider we do not know.
    UnsupportedProvider,
    /// Anything else.
    Malformed,
}

/// Parses a spool file name (DATA.md §4).
pub fn parse_spool_name(name: &str) -> SpoolName {
    let Some(rest) = name.strip_suffix(".json") else {
        return SpoolName::Malformed;
    };
    let Some((head, provider)) = rest.rsplit_once('.') else {
        return SpoolName::Malformed;
    };
    let Some(stamp_ms) = parse_stamp(head) else {
        return SpoolName::Malformed;
    };
    let Some((pid, suffix)) = head[17..].split_once('-') else {
        return SpoolName::Malformed;
    };
    let suffix_ok = !suffix.is_empty()
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) || !suffix_ok {
        return SpoolName::Malformed;
    }
    match RuntimeProvider::parse(provider) {
        Some(provider) => SpoolName::Event { provider, stamp_ms },
        None if !provider.is_empty() && provider.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            SpoolName::UnsupportedProvider
        }
        None => SpoolName::Malformed,
    }
}

/// `YYYYMMDDTHHMMSSZ-` at the start of `head`, as epoch ms.
fn parse_stamp(head: &str) -> Option<EpochMs> {
    let stamp = head.get(..16)?;
    if head.as_bytes().get(16) != Some(&b'-') {
        return None;
    }
    chrono::NaiveDateTime::parse_from_str(stamp, "%Y%m%dT%H%M%SZ")
        .ok()
        .map(|t| t.and_utc().timestamp_millis())
}

/// The file-backed spool.
pub struct FsSpool {
    paths: SpoolPaths,
    clock: Arc<dyn Clock>,
    /// When `incoming/` was last swept for abandoned temp files (0: never).
    last_sweep_ms: std::sync::atomic::AtomicI64,
}

impl FsSpool {
    /// A spool at `paths`, timed by `clock`.
    pub fn new(paths: SpoolPaths, clock: Arc<dyn Clock>) -> Self {
        Self {
            paths,
            clock,
            last_sweep_ms: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// The paths.
    pub fn paths(&self) -> &SpoolPaths {
        &self.paths
    }

    /// Takes claims older than [`STALE_CLAIM_MS`] back to `incoming/`.
    fn recover_stale(&self, now: EpochMs) {
        let Ok(entries) = fs::read_dir(self.paths.processing()) else {
            return;
        };
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let (original, claimed_at) = match name.rsplit_once(CLAIM_TAG) {
                Some((original, ms)) => (original.to_string(), ms.parse::<EpochMs>().ok()),
                // Left by another implementation: its file time is all we have.
                None => (name.clone(), None),
            };
            let claimed_at =
                claimed_at.or_else(|| epoch_ms(entry.metadata().ok()?.modified().ok()?));
            if claimed_at.is_some_and(|at| now - at > STALE_CLAIM_MS) {
                // Losing this race to another drainer's recovery is fine.
                let _ = rename_no_replace(&entry.path(), &self.paths.incoming().join(original));
            }
        }
    }

    fn finish(&self, claim: &SpoolClaim, dir: &Path, meta: &Value) -> Result<bool, PortError> {
        fs::create_dir_all(dir)?;
        let target = dir.join(&claim.id);
        write_meta(&dir.join(format!("{}{META_SUFFIX}", claim.id)), meta)?;
        match fs::rename(self.claimed_path(claim), &target) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn claimed_path(&self, claim: &SpoolClaim) -> PathBuf {
        self.paths
            .processing()
            .join(format!("{}{CLAIM_TAG}{}", claim.id, claim.claimed_at_ms))
    }

    /// Moves hook temp files abandoned for [`ABANDONED_TEMP_MS`] to `invalid/`
    /// as `<mtime stamp>-abandoned-turn-settled.<pid>.<n>` with reason
    /// `abandoned_temp_file`. They are never claimed (the hook may have died
    /// mid-write), so without this they would stay in `incoming/` for good;
    /// in `invalid/` they are kept for inspection, then pruned like any result.
    /// A file whose hook (the pid in its name) still runs is left alone: a
    /// hook stopped for an hour (a suspended runtime) may yet finish it.
    fn sweep_abandoned_temps(&self, now: EpochMs) {
        use std::sync::atomic::Ordering;
        let last = self.last_sweep_ms.load(Ordering::Relaxed);
        // (A clock stepped back past the last sweep does not stop sweeping.)
        if last != 0 && (0..SWEEP_EVERY_MS).contains(&(now - last)) {
            return;
        }
        self.last_sweep_ms.store(now, Ordering::Relaxed);
        let Ok(entries) = fs::read_dir(self.paths.incoming()) else {
            return;
        };
        let invalid = self.paths.invalid();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(HOOK_TEMP_PREFIX)) else {
                continue;
            };
            let path = entry.path();
            let Some(modified) = modified_ms(&path) else {
                continue;
            };
            let hook_pid = rest.split('.').next().and_then(|p| p.parse::<u32>().ok());
            if now - modified <= ABANDONED_TEMP_MS || hook_pid.is_some_and(process_alive) {
                continue;
            }
            let Some(stamp) = chrono::DateTime::from_timestamp_millis(modified) else {
                continue;
            };
            let target = format!(
                "{}-abandoned-turn-settled.{rest}",
                stamp.format("%Y%m%dT%H%M%SZ")
            );
            // Moved first, so a file another drainer (or its hook) took
            // meanwhile leaves no meta behind; a crash before the meta leaves
            // a result without one, which retention prunes all the same.
            if fs::rename(&path, invalid.join(&target)).is_err() {
                continue;
            }
            let meta = serde_json::json!({
                "reason": "abandoned_temp_file",
                "processedAt": format_iso(now),
            });
            let _ = write_meta(&invalid.join(format!("{target}{META_SUFFIX}")), &meta);
        }
    }

    /// Keeps the newest `keep` results of `dir` and none older than `max_age_ms`,
    /// and removes what a crash can leave: meta temp files, and meta files
    /// whose payload never arrived (a meta is written just before its payload
    /// is renamed in), once they are older than a claim may live.
    fn prune(&self, dir: &Path, keep: usize, max_age_ms: EpochMs, now: EpochMs) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        let names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .collect();
        let mut payloads: Vec<&String> = names
            .iter()
            .filter(|n| !n.starts_with('.') && !n.ends_with(META_SUFFIX))
            .collect();
        let present: std::collections::HashSet<&str> =
            payloads.iter().map(|n| n.as_str()).collect();
        for name in &names {
            let leftover = name.starts_with(".meta.tmp.")
                || name
                    .strip_suffix(META_SUFFIX)
                    .is_some_and(|payload| !present.contains(payload));
            let path = dir.join(name);
            if leftover && modified_ms(&path).is_some_and(|at| now - at > STALE_CLAIM_MS) {
                let _ = fs::remove_file(&path);
            }
        }
        // Names start with the hook's UTC stamp, so name order is time order.
        payloads.sort_unstable_by(|a, b| b.cmp(a));
        for (rank, name) in payloads.iter().enumerate() {
            let path = dir.join(name);
            let at = match parse_spool_name(name) {
                SpoolName::Event { stamp_ms, .. } => Some(stamp_ms),
                _ => parse_stamp(name).or_else(|| modified_ms(&path)),
            };
            let too_old = at.is_some_and(|at| now - at > max_age_ms);
            if rank >= keep || too_old {
                // (`payload_not_a_file` results may be directories.)
                if fs::remove_file(&path).is_err() && path.is_dir() {
                    let _ = fs::remove_dir_all(&path);
                }
                let _ = fs::remove_file(dir.join(format!("{name}{META_SUFFIX}")));
            }
        }
    }
}

/// `rename` that never replaces an existing target: a file going back to
/// `incoming/` must not overwrite a new event that took the same name (same
/// second, pid and counter). `renameat2(RENAME_NOREPLACE)` on Linux; where
/// the file system or the OS lacks it, a check before a plain rename (a
/// narrow window, no worse than before).
fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let c_path = |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
        let (from_c, to_c) = (c_path(from)?, c_path(to)?);
        // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them
        // like rename(2) does.
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                from_c.as_ptr(),
                libc::AT_FDCWD,
                to_c.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if !matches!(error.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
            return Err(error);
        }
    }
    if fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::from(ErrorKind::AlreadyExists));
    }
    fs::rename(from, to)
}

/// Meta files are diagnostics: written whole (temp + rename) but not synced.
fn write_meta(path: &Path, meta: &Value) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(ErrorKind::InvalidInput, "meta path has no dir"))?;
    let mut bytes = serde_json::to_vec_pretty(meta).map_err(io::Error::other)?;
    bytes.push(b'\n');
    let mut temp = tempfile::Builder::new()
        .prefix(".meta.tmp.")
        .tempfile_in(dir)?;
    io::Write::write_all(&mut temp, &bytes)?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

impl TurnSettledSpool for FsSpool {
    fn claim(&self, limit: usize) -> Result<Vec<SpoolClaim>, PortError> {
        // Before every drain (every 15 s with the scheduler): a wall-clock
        // step moves the boot time, and the hook must not keep an old one.
        let _ = self.paths.refresh_boot_time();
        let now = self.clock.now_ms();
        self.recover_stale(now);
        let mut names: Vec<String> = match fs::read_dir(self.paths.incoming()) {
            Ok(entries) => entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                // Hidden names are the hook's temp files, still being written.
                .filter(|n| !n.starts_with('.'))
                .collect(),
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        names.sort_unstable();
        fs::create_dir_all(self.paths.processing())?;
        let mut claims = Vec::new();
        for name in names {
            if claims.len() >= limit {
                break;
            }
            let claim = SpoolClaim {
                id: name,
                claimed_at_ms: now,
                spooled_at_ms: now,
                provider: None,
                content: ClaimContent::Invalid("invalid_file_name"),
            };
            let claimed = self.claimed_path(&claim);
            if fs::rename(self.paths.incoming().join(&claim.id), &claimed).is_err() {
                // Another drainer was first.
                continue;
            }
            let (provider, content, spooled_at_ms) = match parse_spool_name(&claim.id) {
                SpoolName::Event { provider, stamp_ms } => {
                    let (content, modified_ms) = read_payload(&claimed);
                    let spooled_at_ms = match modified_ms {
                        Some(at) if (at - stamp_ms).abs() > STAMP_TOLERANCE_MS => at,
                        _ => stamp_ms,
                    };
                    (Some(provider), content, spooled_at_ms)
                }
                SpoolName::UnsupportedProvider => {
                    (None, ClaimContent::Invalid("unsupported_provider"), now)
                }
                SpoolName::Malformed => (None, ClaimContent::Invalid("invalid_file_name"), now),
            };
            claims.push(SpoolClaim {
                provider,
                content,
                spooled_at_ms,
                ..claim
            });
        }
        Ok(claims)
    }

    fn complete(&self, claim: &SpoolClaim, meta: &Value) -> Result<bool, PortError> {
        self.finish(claim, &self.paths.processed(), meta)
    }

    fn reject(&self, claim: &SpoolClaim, meta: &Value) -> Result<bool, PortError> {
        self.finish(claim, &self.paths.invalid(), meta)
    }

    fn release(&self, claim: &SpoolClaim) -> Result<(), PortError> {
        match rename_no_replace(
            &self.claimed_path(claim),
            &self.paths.incoming().join(&claim.id),
        ) {
            // Lost to another drainer's recovery; or a new file took the name
            // meanwhile: then the claim waits in processing/ for recovery.
            Err(e) if !matches!(e.kind(), ErrorKind::NotFound | ErrorKind::AlreadyExists) => {
                Err(e.into())
            }
            _ => Ok(()),
        }
    }

    fn after_drain(&self) {
        let now = self.clock.now_ms();
        self.sweep_abandoned_temps(now);
        self.prune(
            &self.paths.processed(),
            KEEP_PROCESSED,
            PROCESSED_MAX_AGE_MS,
            now,
        );
        self.prune(&self.paths.invalid(), KEEP_INVALID, INVALID_MAX_AGE_MS, now);
    }
}

/// The payload of a claimed file and the file's modification time.
///
/// Only a regular file is read: a FIFO would block the drain and a symlink
/// could point anywhere, so both (and a directory) go to `invalid/` as
/// `payload_not_a_file`; a file this user may not read goes there as
/// `payload_unreadable` instead of failing every drain for good. Other errors
/// are transient: the claim is released for a later drain.
fn read_payload(path: &Path) -> (ClaimContent, Option<EpochMs>) {
    use std::os::unix::fs::OpenOptionsExt;
    // (A socket cannot even be opened; the open flags and the check after it
    // cover a file swapped in between.)
    match fs::symlink_metadata(path) {
        Ok(metadata) if !metadata.is_file() => {
            return (ClaimContent::Invalid("payload_not_a_file"), None)
        }
        Ok(_) => {}
        Err(e) => return (ClaimContent::Transient(e.to_string()), None),
    }
    let opened = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            return (ClaimContent::Invalid("payload_unreadable"), None)
        }
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ELOOP | libc::ENXIO | libc::EOPNOTSUPP)
            ) =>
        {
            return (ClaimContent::Invalid("payload_not_a_file"), None)
        }
        Err(e) => return (ClaimContent::Transient(e.to_string()), None),
    };
    let metadata = match file.metadata() {
        Ok(metadata) => metadata,
        Err(e) => return (ClaimContent::Transient(e.to_string()), None),
    };
    if !metadata.is_file() {
        return (ClaimContent::Invalid("payload_not_a_file"), None);
    }
    (
        read_bounded(file),
        metadata.modified().ok().and_then(epoch_ms),
    )
}

fn read_bounded(file: fs::File) -> ClaimContent {
    let mut bytes = Vec::new();
    match file.take(MAX_PAYLOAD_BYTES + 1).read_to_end(&mut bytes) {
        Err(e) => ClaimContent::Transient(e.to_string()),
        Ok(_) if bytes.len() as u64 > MAX_PAYLOAD_BYTES => {
            ClaimContent::Invalid("payload_too_large")
        }
        Ok(0) => ClaimContent::Invalid("payload_missing"),
        Ok(_) => ClaimContent::Payload(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infrastructure::clock::{ManualClock, SystemClock};

    const T0: EpochMs = 1_795_341_600_000; // 2026-11-22T10:00:00Z

    fn spool(now: EpochMs) -> (tempfile::TempDir, FsSpool, Arc<ManualClock>) {
        let dir = tempfile::tempdir().unwrap();
        let paths = SpoolPaths::for_teams_base(dir.path());
        paths.install().unwrap();
        let clock = Arc::new(ManualClock::new(now));
        (dir, FsSpool::new(paths, clock.clone()), clock)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn claims_in_name_order_skip_hidden_files_and_classify_bad_ones() {
        let (_dir, spool, _) = spool(T0);
        let incoming = spool.paths().incoming();
        fs::write(incoming.join("20261122T100002Z-1-0.codex.json"), b"{}").unwrap();
        fs::write(incoming.join("20261122T100001Z-1-0.claude.json"), b"{}").unwrap();
        set_mtime(
            &incoming.join("20261122T100001Z-1-0.claude.json"),
            T0 + 3000,
        );
        fs::write(incoming.join(".turn-settled.9.0"), b"half").unwrap();
        fs::write(incoming.join("20261122T100003Z-1-0.gemini.json"), b"{}").unwrap();
        fs::write(incoming.join("notes.txt"), b"x").unwrap();
        fs::write(incoming.join("20261122T100004Z-1-0.claude.json"), b"").unwrap();
        fs::write(
            incoming.join("20261122T100005Z-1-0.claude.json"),
            vec![b'a'; 262_145],
        )
        .unwrap();
        let claims = spool.claim(50).unwrap();
        let got: Vec<(&str, Option<&str>)> = claims
            .iter()
            .map(|c| {
                let what = match &c.content {
                    ClaimContent::Payload(_) => None,
                    ClaimContent::Invalid(reason) => Some(*reason),
                    ClaimContent::Transient(_) => Some("transient"),
                };
                (c.id.as_str(), what)
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("20261122T100001Z-1-0.claude.json", None),
                ("20261122T100002Z-1-0.codex.json", None),
                (
                    "20261122T100003Z-1-0.gemini.json",
                    Some("unsupported_provider")
                ),
                ("20261122T100004Z-1-0.claude.json", Some("payload_missing")),
                (
                    "20261122T100005Z-1-0.claude.json",
                    Some("payload_too_large")
                ),
                ("notes.txt", Some("invalid_file_name")),
            ]
        );
        assert_eq!(names(&incoming), vec![".turn-settled.9.0"]);
        // The name's stamp is the spool time when the file's modification
        // time agrees with it; when it does not (the hook's clock was off),
        // the modification time is.
        assert_eq!(claims[0].spooled_at_ms, T0 + 1000);
        let written_now = SystemClock.now_ms();
        assert!((claims[1].spooled_at_ms - written_now).abs() < 60_000);
        // Release puts it back; complete files it with its meta.
        spool.release(&claims[0]).unwrap();
        assert!(incoming.join(&claims[0].id).exists());
        assert!(spool
            .complete(&claims[1], &serde_json::json!({"outcome": "enqueued"}))
            .unwrap());
        assert_eq!(
            names(&spool.paths().processed()),
            vec![
                "20261122T100002Z-1-0.codex.json",
                "20261122T100002Z-1-0.codex.json.meta.json"
            ]
        );
        // A claim already taken back (by another drainer's recovery) is reported lost.
        assert!(!spool.complete(&claims[1], &serde_json::json!({})).unwrap());
    }

    #[test]
    fn stale_claims_go_back_to_incoming_before_a_drain_and_fresh_ones_stay() {
        let (_dir, spool, clock) = spool(T0);
        let incoming = spool.paths().incoming();
        fs::write(incoming.join("20261122T100000Z-1-0.claude.json"), b"{}").unwrap();
        fs::write(incoming.join("20261122T100000Z-2-0.claude.json"), b"{}").unwrap();
        let first = spool.claim(1).unwrap();
        assert_eq!(first.len(), 1);
        clock.set(T0 + STALE_CLAIM_MS - 1);
        let second = spool.claim(1).unwrap();
        assert_eq!(second[0].id, "20261122T100000Z-2-0.claude.json");
        assert!(
            spool.claim(1).unwrap().is_empty(),
            "a fresh claim is not recovered"
        );
        clock.set(T0 + STALE_CLAIM_MS + 1);
        let recovered = spool.claim(5).unwrap();
        assert_eq!(recovered.len(), 1);
        assert_eq!(recovered[0].id, first[0].id);
    }

    #[test]
    fn hook_temp_files_abandoned_for_an_hour_move_to_invalid_and_fresh_ones_stay() {
        let real_now = SystemClock.now_ms();
        let (_dir, spool, clock) = spool(real_now);
        let incoming = spool.paths().incoming();
        // A hook that has exited, and one that still runs (this process).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let dead_temp = format!(".turn-settled.{dead}.0");
        let live_temp = format!(".turn-settled.{}.0", std::process::id());
        fs::write(incoming.join(&dead_temp), b"{\"half").unwrap();
        fs::write(incoming.join(&live_temp), b"{\"still writing").unwrap();
        fs::write(incoming.join(".direct.1"), b"not the hook's").unwrap();
        let first_sweep = real_now + ABANDONED_TEMP_MS - SWEEP_EVERY_MS / 2;
        clock.set(first_sweep);
        spool.after_drain();
        assert_eq!(names(&incoming).len(), 3);
        assert!(names(&spool.paths().invalid()).is_empty());

        // Swept at most every SWEEP_EVERY_MS: not yet, then once it is due.
        clock.set(real_now + ABANDONED_TEMP_MS + 1);
        spool.after_drain();
        assert_eq!(names(&incoming).len(), 3);
        clock.set(first_sweep + SWEEP_EVERY_MS);
        spool.after_drain();
        let mut left = vec![".direct.1".to_string(), live_temp];
        left.sort();
        assert_eq!(names(&incoming), left);
        let invalid = names(&spool.paths().invalid());
        assert_eq!(invalid.len(), 2, "{invalid:?}");
        let moved = format!("-abandoned-turn-settled.{dead}.0");
        assert!(invalid[0].ends_with(&moved), "{invalid:?}");
        assert!(matches!(parse_stamp(&invalid[0]), Some(at) if (at - real_now).abs() < 5_000));
        let invalid_dir = spool.paths().invalid();
        assert_eq!(fs::read(invalid_dir.join(&invalid[0])).unwrap(), b"{\"half");
        let meta: Value =
            serde_json::from_slice(&fs::read(invalid_dir.join(&invalid[1])).unwrap()).unwrap();
        assert_eq!(meta["reason"], "abandoned_temp_file");

        // A clock stepped back before the last sweep does not stop sweeping.
        clock.set(real_now - SWEEP_EVERY_MS);
        let before = spool
            .last_sweep_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        spool.after_drain();
        let after = spool
            .last_sweep_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        assert!(after < before, "swept again after the step back");
    }

    fn set_mtime(path: &Path, at: EpochMs) {
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_millis(at as u64))
            .unwrap();
    }

    #[test]
    fn only_regular_files_are_read_and_the_rest_goes_to_invalid_without_blocking() {
        let (_dir, spool, _) = spool(T0);
        let incoming = spool.paths().incoming();
        let fifo = incoming.join("20261122T100001Z-1-0.claude.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        fs::create_dir(incoming.join("20261122T100002Z-1-0.claude.json")).unwrap();
        fs::write(incoming.parent().unwrap().join("outside"), b"{}").unwrap();
        std::os::unix::fs::symlink(
            incoming.parent().unwrap().join("outside"),
            incoming.join("20261122T100003Z-1-0.claude.json"),
        )
        .unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(
            incoming.join("20261122T100004Z-1-0.claude.json"),
        )
        .unwrap();
        let claims = spool.claim(50).unwrap();
        let reasons: Vec<Option<&str>> = claims
            .iter()
            .map(|c| match &c.content {
                ClaimContent::Invalid(reason) => Some(*reason),
                _ => None,
            })
            .collect();
        assert_eq!(reasons, vec![Some("payload_not_a_file"); 4]);
        // Filed under invalid/ and pruned from there like any result, directory too.
        for claim in &claims {
            assert!(spool.reject(claim, &serde_json::json!({})).unwrap());
        }
        spool.prune(&spool.paths().invalid(), 0, INVALID_MAX_AGE_MS, T0);
        assert!(names(&spool.paths().invalid()).is_empty());
    }

    #[test]
    fn crash_leftovers_in_results_are_removed_once_older_than_a_claim() {
        let now = SystemClock.now_ms();
        let (_dir, spool, _) = spool(now);
        let processed = spool.paths().processed();
        let old = now - STALE_CLAIM_MS - 60_000;
        for (name, at) in [
            (".meta.tmp.old", old),
            (".meta.tmp.new", now),
            ("20261122T100000Z-1-0.claude.json.meta.json", old),
            ("20261122T100001Z-1-0.claude.json.meta.json", now),
        ] {
            fs::write(processed.join(name), b"{}").unwrap();
            set_mtime(&processed.join(name), at);
        }
        // A result with its meta stays.
        let kept = "20261122T100002Z-1-0.claude.json";
        fs::write(processed.join(kept), b"{}").unwrap();
        fs::write(processed.join(format!("{kept}.meta.json")), b"{}").unwrap();
        set_mtime(&processed.join(format!("{kept}.meta.json")), old);
        spool.prune(&processed, KEEP_PROCESSED, i64::MAX / 2, now);
        assert_eq!(
            names(&processed),
            vec![
                ".meta.tmp.new",
                "20261122T100001Z-1-0.claude.json.meta.json",
                "20261122T100002Z-1-0.claude.json",
                "20261122T100002Z-1-0.claude.json.meta.json",
            ]
        );
    }

    #[test]
    fn a_claim_going_back_never_replaces_a_new_file_of_the_same_name() {
        let (_dir, spool, clock) = spool(T0);
        let incoming = spool.paths().incoming();
        let name = "20261122T100000Z-7-0.claude.json";
        fs::write(incoming.join(name), b"{\"first\":1}").unwrap();
        let claims = spool.claim(1).unwrap();
        // A new hook run (same second, pid and counter) takes the name.
        fs::write(incoming.join(name), b"{\"second\":2}").unwrap();
        spool.release(&claims[0]).unwrap();
        clock.set(T0 + STALE_CLAIM_MS + 1);
        spool.recover_stale(T0 + STALE_CLAIM_MS + 1);
        assert_eq!(fs::read(incoming.join(name)).unwrap(), b"{\"second\":2}");
        assert_eq!(
            names(&spool.paths().processing()).len(),
            1,
            "the first waits"
        );
        // Once the new one is claimed, the first comes back.
        let second = spool.claim(1).unwrap();
        assert!(matches!(&second[0].content, ClaimContent::Payload(p) if p == b"{\"second\":2}"));
        spool.recover_stale(T0 + STALE_CLAIM_MS + 1);
        assert_eq!(fs::read(incoming.join(name)).unwrap(), b"{\"first\":1}");
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
        spool.after_drain();
        let kept = names(&invalid);
        assert_eq!(kept.len(), 200);
        assert_eq!(kept[0], "20261125T000500Z-1-0.claude.json");
        assert_eq!(names(&processed), vec!["20261125T170000Z-1-0.claude.json"]);
    }

    #[test]
    fn names_follow_the_documented_pattern() {
        assert_eq!(
            parse_spool_name("20261122T100000Z-123-ab.C_1.claude.json"),
            SpoolName::Event {
                provider: RuntimeProvider::Claude,
                stamp_ms: crate::domain::time::parse_iso("2026-11-22T10:00:00Z").unwrap()
            }
        );
        assert!(matches!(
            parse_spool_name("20261122T100000Z-1-0.opencode.json"),
            SpoolName::Event {
                provider: RuntimeProvider::Opencode,
                ..
            }
        ));
        assert_eq!(
            parse_spool_name("20261122T100000Z-1-0.gemini.json"),
            SpoolName::UnsupportedProvider
        );
        for bad in [
            "x.claude.json",
            "20261122T100000Z-1-0.claude.txt",
            "20261122T100000Z--0.claude.json",
            "20261122T100000Z-1-.claude.json",
            "20261322T100000Z-1-0.claude.json",
            "20261122T100000Z-1-a b.claude.json",
            "20261122T100000Z-1-0.json",
            "é",
        ] {
            assert_eq!(parse_spool_name(bad), SpoolName::Malformed, "{bad}");
        }
    }
}
