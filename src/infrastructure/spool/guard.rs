//! Keeps the hook programs in `bin/` as the addon wrote them.
//!
//! The hook settings name a program in the agent-writable teams folder, run
//! at every member's Stop (the lead's too, outside any tool sandbox). An
//! agent can overwrite it, chmod it, put a folder or a link in its place or
//! swap a folder above it for a link. Before every drain (every 15 s, and
//! soon after the watcher sees a new payload or a change in `bin/`; while a
//! backlog drains, at most once per [`KEEP_PROGRAMS_IN_BACKLOG_MS`]), when a
//! spool was installed, the way to `bin/` is repaired (links and files
//! removed, never followed), the script is compared byte for byte with the
//! embedded one, and the executable's SHA-256 with the shipped file's
//! (read once, again only when they differ); anything else is replaced and
//! the mode set back to 0755. When the shipped file cannot be read, a
//! program there that is not known to be the addon's is removed rather
//! than left.
//!
//! The executable is read and hashed whole at every check, with no cache by
//! file times: a write through a shared mapping into a page already dirty,
//! or within the file system's clock tick of a check, leaves
//! `mtime`/`ctime` unchanged, so a stat-identity cache would trust a
//! changed file. An empty drain, this check included, takes about 0.35 ms
//! with a 0.3 MiB executable and about 0.9 ms with the 1.1 MiB static glibc
//! one `npm run build` makes where the musl target is missing (release
//! build of the addon).
//!
//! A backlog drains in back-to-back drains of a batch each, about 10 ms
//! apart: kept before each, the check took a tenth of the drain (1.1 MiB
//! executable). Once a second is as safe: the check is a repair, not a
//! lock (the agent that changed a program can change it again right after
//! any check), and between drains at rest a changed program already runs
//! until the next drain, up to the scheduler's 15 s.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::install::{put_program, read_executable, refresh_boot_time_now, set_mode_or_replace};
use super::{FsSpool, SpoolPaths, HOOK_EXECUTABLE_NAME, HOOK_SCRIPT, HOOK_SCRIPT_NAME};
use crate::application::log::{LogCode, LogEntry, LogLevel, LogSink};
use crate::domain::time::EpochMs;
use crate::infrastructure::safe_fs::{Dir, FileRead};

/// The hook executable the addon installs, and what it hashes to.
#[derive(Debug, Default)]
pub(super) struct ExecutableGuard {
    /// The shipped executable (`None`: none ships, the script runs).
    source: Option<PathBuf>,
    /// SHA-256 of `source` as last read.
    expected: Mutex<Option<[u8; 32]>>,
}

impl ExecutableGuard {
    /// Guards the executable copied from `source`.
    pub(super) fn new(source: Option<PathBuf>) -> Self {
        Self {
            source,
            expected: Mutex::default(),
        }
    }

    /// Leaves `bin/`'s executable exactly the shipped one (0755), or none.
    fn keep(&self, bin: &Dir) -> io::Result<()> {
        let Some(source) = &self.source else {
            return Ok(());
        };
        let installed = match bin.read(HOOK_EXECUTABLE_NAME, super::MAX_HOOK_EXECUTABLE_BYTES)? {
            FileRead::Bytes(bytes) => Some(bytes),
            _ => None,
        };
        let mut expected = self.expected.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(bytes) = installed.filter(|bytes| Some(sha256(bytes)) == *expected) {
            // A hard link an agent made elsewhere: a fresh copy, never a
            // chmod through the other name (refused, which would fail every drain).
            return set_mode_or_replace(bin, HOOK_EXECUTABLE_NAME, &bytes);
        }
        match read_executable(source) {
            Ok(bytes) => {
                *expected = Some(sha256(&bytes));
                put_program(bin, HOOK_EXECUTABLE_NAME, &bytes)
            }
            Err(_) => {
                // Not known to be ours and nothing to restore it from: it goes.
                *expected = None;
                super::install::displace_folder(bin, HOOK_EXECUTABLE_NAME)?;
                bin.remove_file(HOOK_EXECUTABLE_NAME).map(drop)
            }
        }
    }
}

/// Where a failure to keep the programs is told: the operator log, once
/// per distinct error (again after a drain that kept them).
#[derive(Default)]
pub(super) struct KeepFailures {
    log: Option<Arc<dyn LogSink>>,
    /// The last error logged; `None` after programs were kept.
    last: Mutex<Option<String>>,
}

impl std::fmt::Debug for KeepFailures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeepFailures").finish_non_exhaustive()
    }
}

impl KeepFailures {
    /// Logs each new failure to keep the programs to `log`, once per
    /// distinct error.
    pub(super) fn new(log: Arc<dyn LogSink>) -> Self {
        Self {
            log: Some(log),
            last: Mutex::default(),
        }
    }

    fn note(&self, kept: io::Result<()>) {
        let error = kept.err().map(|e| e.to_string());
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(error) = error.as_ref().filter(|e| last.as_ref() != Some(*e)) {
            if let Some(log) = &self.log {
                log.log(LogEntry::new(
                    LogLevel::Error,
                    LogCode::HookProgramsNotKept,
                    format!("hook programs not kept as the addon wrote them: {error}"),
                ));
            }
        }
        *last = error;
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// While a backlog drains (the last claim was a full batch), the hook
/// programs are kept at most this often; at rest, before every drain.
pub(super) const KEEP_PROGRAMS_IN_BACKLOG_MS: EpochMs = 1_000;

impl FsSpool {
    /// [`FsSpool::keep_programs_or_log`] before a drain at `now`: always
    /// at rest, and while a backlog drains once [`KEEP_PROGRAMS_IN_BACKLOG_MS`]
    /// passed since the last time (or the clock stepped back past it).
    pub(super) fn keep_programs_when_due(&self, now: EpochMs) {
        let last = self.programs_kept_ms.load(Ordering::Relaxed);
        let recent = last != 0 && (0..KEEP_PROGRAMS_IN_BACKLOG_MS).contains(&(now - last));
        if recent && self.prunes.backlog() {
            return;
        }
        self.keep_programs_or_log();
        self.programs_kept_ms.store(now, Ordering::Relaxed);
    }

    /// [`FsSpool::keep_programs`]; a failure is logged (see
    /// [`KeepFailures`]), never a reason to stop claiming: the payloads
    /// still need their drain, and the next drain tries again.
    pub(super) fn keep_programs_or_log(&self) {
        self.keep_failures.note(self.keep_programs());
    }

    /// When a spool was installed: repairs the way to `bin/`, puts back the
    /// script and the executable as the addon writes them, and refreshes
    /// `bin/boot-time`. Run before drains (see
    /// [`FsSpool::keep_programs_when_due`]).
    pub(super) fn keep_programs(&self) -> io::Result<()> {
        if !self.paths.installed()? {
            return Ok(());
        }
        let (root, bin) = self.paths.create_bin_repairing()?;
        // Each step runs whatever another one met: the first error is returned.
        [
            put_program(&bin, HOOK_SCRIPT_NAME, HOOK_SCRIPT.as_bytes()),
            self.executable.keep(&bin),
            refresh_boot_time_now(&bin),
            SpoolPaths::create_missing_folders(&root),
        ]
        .into_iter()
        .collect()
    }
}

#[cfg(all(test, unix))]
mod tests;
