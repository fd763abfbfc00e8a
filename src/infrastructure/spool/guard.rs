//! Keeps the hook programs in `bin/` as the addon wrote them.
//!
//! The hook settings name a program in the agent-writable teams folder, run
//! at every member's Stop (the lead's too, outside any tool sandbox). An
//! agent can overwrite it, chmod it, put a folder or a link in its place or
//! swap a folder above it for a link. Before every drain (every 15 s, and
//! soon after the watcher sees a new payload or a change in `bin/`), when a
//! spool was installed, the way to `bin/` is repaired (links and files
//! removed, never followed), the script is compared byte for byte with the
//! embedded one, and the executable's SHA-256 with the shipped file's
//! (read once, again only when they differ); anything else is replaced and
//! the mode set back to 0755. When the shipped file cannot be read, a
//! program there that is not known to be the addon's is removed rather
//! than left.
//!
//! The executable is read and hashed whole, with no cache by file times: a
//! write through a shared mapping into a page already dirty, or within the
//! file system's clock tick of a check, leaves `mtime`/`ctime` unchanged,
//! so a stat-identity cache would trust a changed file. An empty drain,
//! this check included, takes about 0.35 ms with a 0.3 MiB executable and
//! about 0.9 ms with the 1.1 MiB static glibc one `npm run build` makes
//! where the musl target is missing (release build of the addon).
//!
//! A backlog drains in back-to-back drains of a batch each, one every 5 to
//! 12 ms: that read and hash before each took a sixth of a drain on tmpfs
//! and about a tenth on this machine's disk (1.1 MiB). So while a backlog
//! drains, it runs at most once per [`CHECK_EXECUTABLE_IN_BACKLOG_MS`]; the
//! drains between look at the executable's metadata only (a regular file of
//! the shipped length, mode 0755) and read and hash it at once when that
//! differs. Only a change that keeps its size and mode (or a hard link
//! made to it) waits, for at most a second: the check is a repair, not a
//! lock (the agent that changed the program can change it again right
//! after any check), and at rest a changed program already runs until the
//! next drain. Every other step runs before every drain: they cost
//! microseconds, and a link on the way to `bin/` left for a second would
//! fail the drain's claim.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::install::{
    put_program, read_executable, refresh_boot_time_now, set_mode_or_replace, PROGRAM_MODE,
};
use super::{FsSpool, SpoolPaths, HOOK_EXECUTABLE_NAME, HOOK_SCRIPT, HOOK_SCRIPT_NAME};
use crate::application::log::{LogCode, LogEntry, LogLevel, LogSink};
use crate::domain::time::EpochMs;
use crate::infrastructure::safe_fs::{Dir, FileKind, FileRead};

/// The hook executable the addon installs, and what it hashes to.
#[derive(Debug, Default)]
pub(super) struct ExecutableGuard {
    /// The shipped executable (`None`: none ships, the script runs).
    source: Option<PathBuf>,
    /// SHA-256 and length of `source` as last read.
    expected: Mutex<Option<([u8; 32], u64)>>,
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
        let ours = |bytes: &Vec<u8>| expected.is_some_and(|(hash, _)| hash == sha256(bytes));
        if let Some(bytes) = installed.filter(ours) {
            // A hard link an agent made elsewhere: a fresh copy, never a
            // chmod through the other name (refused, which would fail every drain).
            return set_mode_or_replace(bin, HOOK_EXECUTABLE_NAME, &bytes);
        }
        match read_executable(source) {
            Ok(bytes) => {
                *expected = Some((sha256(&bytes), bytes.len() as u64));
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

    /// Whether `bin/`'s executable still looks like the one last kept by
    /// its metadata alone: a regular file of the shipped length with mode
    /// 0755 (Windows has no such mode bits); always when none ships, never
    /// when the shipped file's hash is not known. Between two reads and
    /// hashes, a backlog's drains ask this, so that a removed program, one
    /// of another size or one chmod'ed is put back at once; only a change
    /// that keeps its size and mode (or a hard link made to it) waits for
    /// the next hash.
    fn looks_kept(&self, bin: &Dir) -> bool {
        if self.source.is_none() {
            return true;
        }
        let expected = *self.expected.lock().unwrap_or_else(|p| p.into_inner());
        let Some((_, len)) = expected else {
            return false;
        };
        matches!(
            bin.meta(HOOK_EXECUTABLE_NAME),
            Ok(Some(meta)) if meta.kind == FileKind::File
                && meta.len == len
                && (cfg!(windows) || meta.mode & 0o7777 == PROGRAM_MODE)
        )
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

/// While a backlog drains (the last claim took a full batch), the
/// executable is read and hashed at most this often, unless its metadata
/// differs ([`ExecutableGuard::looks_kept`]); at rest, before every drain.
/// The rest of the check runs before every drain.
pub(super) const CHECK_EXECUTABLE_IN_BACKLOG_MS: EpochMs = 1_000;

impl FsSpool {
    /// Keeps the programs before a drain at `now` (see
    /// [`FsSpool::keep_programs`]); the executable's read and hash at rest,
    /// and while a backlog drains once [`CHECK_EXECUTABLE_IN_BACKLOG_MS`]
    /// passed since it last ran (or the clock stepped back past it) or when
    /// its metadata differs. A
    /// failure is logged (see [`KeepFailures`]), never a reason to stop
    /// claiming: the payloads still need their drain, and the next drain
    /// tries again.
    pub(super) fn keep_programs_before_drain(&self, now: EpochMs) {
        let last = self.executable_checked_ms.load(Ordering::Relaxed);
        let recent = last != 0 && (0..CHECK_EXECUTABLE_IN_BACKLOG_MS).contains(&(now - last));
        let hash_due = !(recent && self.prunes.backlog());
        let (hashed, kept) = self.keep_programs(hash_due);
        if hashed {
            self.executable_checked_ms.store(now, Ordering::Relaxed);
        }
        self.keep_failures.note(kept);
    }

    /// When a spool was installed: repairs the way to `bin/`, puts back the
    /// script and the executable as the addon writes them, refreshes
    /// `bin/boot-time` and makes missing spool folders again. The
    /// executable is read and hashed when `hash_due`, or when it does not
    /// look kept ([`ExecutableGuard::looks_kept`]). Says whether it was,
    /// and kept (whatever the other steps met), and the first error.
    fn keep_programs(&self, hash_due: bool) -> (bool, io::Result<()>) {
        let way = self.paths.installed().and_then(|installed| {
            installed
                .then(|| self.paths.create_bin_repairing())
                .transpose()
        });
        let (root, bin) = match way {
            Ok(Some(way)) => way,
            Ok(None) => return (false, Ok(())),
            Err(error) => return (false, Err(error)),
        };
        let hash = hash_due || !self.executable.looks_kept(&bin);
        let executable = if hash {
            self.executable.keep(&bin)
        } else {
            Ok(())
        };
        let hashed = hash && executable.is_ok();
        // Each step runs whatever another one met: the first error is returned.
        let kept = [
            put_program(&bin, HOOK_SCRIPT_NAME, HOOK_SCRIPT.as_bytes()),
            executable,
            refresh_boot_time_now(&bin),
            SpoolPaths::create_missing_folders(&root),
        ]
        .into_iter()
        .collect();
        (hashed, kept)
    }
}

#[cfg(all(test, unix))]
mod tests;
