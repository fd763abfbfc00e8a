//! The spool's layout, the installed hook script, the hook executable
//! installed beside it when one ships, and the `bin/boot-time` file the
//! script takes its clock from.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use super::paths::{Folder, SpoolPaths, FOLDER_MODE};
use crate::infrastructure::clock::epoch_ms;
use crate::infrastructure::json_store::quarantine_in;
use crate::infrastructure::safe_fs::{is_hard_linked, Dir, FileKind, FileRead};

/// The hook script, embedded at build time from `hooks/`.
pub const HOOK_SCRIPT: &str = include_str!("../../../hooks/turn-settled-hook-v1.sh");
/// Its installed file name.
pub const HOOK_SCRIPT_NAME: &str = "turn-settled-hook-v1.sh";
/// The hook executable's file name (`hooks/native`), as it ships beside
/// the addon's `.node` file and as it is installed beside the script.
pub const HOOK_EXECUTABLE_NAME: &str = if cfg!(windows) {
    "turn-settled-hook-v1.exe"
} else {
    "turn-settled-hook-v1"
};
/// Most bytes of a hook executable copied (on x86-64 Linux about 0.3 MiB
/// linked dynamically, 1.1 MiB with glibc linked statically): a larger file
/// is refused, never read whole.
pub const MAX_HOOK_EXECUTABLE_BYTES: u64 = 8 << 20;
/// `bin/` file with `<boot id> <boot time in centiseconds>\n`: the hook's
/// cheap clock on Linux (see [`SpoolPaths::refresh_boot_time`]).
pub const BOOT_TIME_FILE_NAME: &str = "boot-time";
/// The boot time is rewritten when it moved by more than this (a wall-clock
/// step), not for the centisecond jitter of computing it.
const BOOT_TIME_TOLERANCE_CS: i64 = 50;
/// Most bytes of `bin/boot-time` read: a boot id and a number.
const MAX_BOOT_TIME_BYTES: u64 = 256;
/// The script is run by `/bin/sh <script>`, and executable for direct use;
/// the executable is run directly.
pub(super) const PROGRAM_MODE: u32 = 0o755;

/// What the installed hook command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookProgram {
    /// The native executable, installed in `bin/`: run directly.
    Executable(PathBuf),
    /// The script in `bin/`: run by `/bin/sh`.
    Script(PathBuf),
}

/// The installed hook: what runs it, and why the script runs it when an
/// executable was offered but could not be installed.
#[derive(Debug)]
pub struct InstalledHook {
    /// The program the hook command names.
    pub program: HookProgram,
    /// Why the executable offered is not used (`None` when it is, or when
    /// none was offered).
    pub executable_failure: Option<io::Error>,
}

impl SpoolPaths {
    /// `bin/turn-settled-hook-v1.sh`.
    pub fn script(&self) -> PathBuf {
        self.path(Folder::Bin).join(HOOK_SCRIPT_NAME)
    }

    /// `bin/turn-settled-hook-v1` (`.exe` on Windows).
    pub fn executable(&self) -> PathBuf {
        self.path(Folder::Bin).join(HOOK_EXECUTABLE_NAME)
    }

    /// [`SpoolPaths::install_layout`], the hook script, and the hook
    /// executable copied from `executable_source` (the one shipped beside
    /// the addon) when there is one: the hook runs the executable when it
    /// could be installed, else the script. An error only when the spool
    /// itself cannot be installed, or neither program can: a script that
    /// cannot be installed never withholds the executable.
    pub fn install_hook(&self, executable_source: Option<&Path>) -> io::Result<InstalledHook> {
        let bin = self.install_layout()?;
        let script = put_program(&bin, HOOK_SCRIPT_NAME, HOOK_SCRIPT.as_bytes());
        let executable = executable_source.map(|source| {
            let bytes = read_executable(source)?;
            put_program(&bin, HOOK_EXECUTABLE_NAME, &bytes)
        });
        match (executable, script) {
            (Some(Ok(())), _) => Ok(InstalledHook {
                program: HookProgram::Executable(self.executable()),
                executable_failure: None,
            }),
            (executable, Ok(())) => Ok(InstalledHook {
                program: HookProgram::Script(self.script()),
                executable_failure: executable.and_then(Result::err),
            }),
            (_, Err(error)) => Err(error),
        }
    }

    #[cfg(test)]
    /// Copies the hook executable `source` into `bin/` (0755), rewriting it
    /// only when its content differs (see [`put_program`]). The source is
    /// the addon's own shipped file (not below the Claude root): a regular
    /// file of at most [`MAX_HOOK_EXECUTABLE_BYTES`], else an error naming
    /// it. `bin/` must be installed already ([`SpoolPaths::install`]).
    pub(crate) fn install_executable(&self, source: &Path) -> io::Result<PathBuf> {
        let bytes = read_executable(source)?;
        let bin = self.open(Folder::Bin)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{}: not installed", self.path(Folder::Bin).display()),
            )
        })?;
        put_program(&bin, HOOK_EXECUTABLE_NAME, &bytes)?;
        Ok(self.executable())
    }

    /// `bin/boot-time`, read by the hook (see [`SpoolPaths::refresh_boot_time`]).
    pub fn boot_time_file(&self) -> PathBuf {
        self.path(Folder::Bin).join(BOOT_TIME_FILE_NAME)
    }

    /// [`SpoolPaths::install_layout`] and the hook script. Returns the
    /// script path.
    pub fn install(&self) -> io::Result<PathBuf> {
        let bin = self.install_layout()?;
        put_program(&bin, HOOK_SCRIPT_NAME, HOOK_SCRIPT.as_bytes())?;
        Ok(self.script())
    }

    /// Creates the layout (folders 0700) and writes the boot-time file;
    /// returns `bin/`. The way to `bin/` (`.member-work-sync`,
    /// `runtime-hooks`, `bin`) is repaired: a link or file there is removed,
    /// never followed, and a real folder made, so the programs the hook
    /// settings name always sit in a folder the addon made. A link or file
    /// where another spool folder should be is an error naming it: nothing
    /// is created, written or chmod'ed through it.
    pub(crate) fn install_layout(&self) -> io::Result<Dir> {
        self.create_bin_repairing()?;
        let root = self.create_root()?;
        root.set_own_mode(FOLDER_MODE)?;
        let mut bin = None;
        for folder in Folder::ALL {
            let dir = root.create_dir(folder.name())?;
            dir.set_own_mode(FOLDER_MODE)?;
            if folder == Folder::Bin {
                bin = Some(dir);
            }
        }
        let bin = bin.expect("Folder::ALL holds Bin");
        // Without it the hook reads /proc/stat instead: slower, still right.
        if let Some(now) = boot_time_now() {
            let _ = refresh_boot_time_in(&bin, &now);
        }
        Ok(bin)
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
    /// (the hook runs `date` there) and before install (no `bin/`). Only a
    /// regular file is read: anything else there (a FIFO would block) is
    /// replaced. A link or file in place of `bin/` is an error.
    pub fn refresh_boot_time(&self) -> io::Result<()> {
        let Some(now) = boot_time_now() else {
            return Ok(());
        };
        match self.open(Folder::Bin)? {
            Some(bin) => refresh_boot_time_in(&bin, &now),
            None => Ok(()),
        }
    }
}

/// This boot's id and the wall-clock time, in centiseconds, at which
/// `/proc/uptime` read 0.
struct BootTime {
    id: String,
    cs: i64,
}

/// [`refresh_boot_time_in`] with this boot's time; no-op off Linux.
pub(super) fn refresh_boot_time_now(bin: &Dir) -> io::Result<()> {
    match boot_time_now() {
        Some(now) => refresh_boot_time_in(bin, &now),
        None => Ok(()),
    }
}

fn refresh_boot_time_in(bin: &Dir, now: &BootTime) -> io::Result<()> {
    if let FileRead::Bytes(bytes) = bin.read(BOOT_TIME_FILE_NAME, MAX_BOOT_TIME_BYTES)? {
        let current = String::from_utf8_lossy(&bytes);
        let fresh = current
            .trim_end()
            .split_once(' ')
            .filter(|(id, _)| *id == now.id)
            .and_then(|(_, cs)| cs.parse::<i64>().ok())
            .is_some_and(|cs| (cs - now.cs).abs() <= BOOT_TIME_TOLERANCE_CS);
        if fresh {
            return Ok(());
        }
    }
    let line = format!("{} {}\n", now.id, now.cs);
    // A folder there would fail the rename below on every drain.
    displace_folder(bin, BOOT_TIME_FILE_NAME)?;
    // A hint, rewritten when a drain's check finds it stale: whole, but not
    // worth an fsync.
    bin.write_replacing(BOOT_TIME_FILE_NAME, line.as_bytes(), 0o600, false)
}

/// Makes `name` in `bin/` exactly `bytes` with mode 0755: rewritten (a
/// temp file renamed over it, so a link there is replaced, never followed)
/// only when its content differs; a folder there is moved aside first (see
/// [`displace_folder`]).
pub(super) fn put_program(bin: &Dir, name: &str, bytes: &[u8]) -> io::Result<()> {
    let installed = bin.read(name, bytes.len() as u64)?;
    if !matches!(&installed, FileRead::Bytes(current) if current == bytes) {
        displace_folder(bin, name)?;
        bin.write_atomic(name, bytes, PROGRAM_MODE)?;
    }
    set_mode_or_replace(bin, name, bytes)
}

/// Makes the installed program `name` (content `bytes`) executable. When the
/// file has another hard link (maybe outside the root), it is replaced by a
/// fresh copy instead, never chmod'ed through the other name.
pub(super) fn set_mode_or_replace(bin: &Dir, name: &str, bytes: &[u8]) -> io::Result<()> {
    match bin.set_mode(name, PROGRAM_MODE) {
        Err(e) if is_hard_linked(&e) => {
            bin.write_atomic(name, bytes, PROGRAM_MODE)?;
            bin.set_mode(name, PROGRAM_MODE)
        }
        set => set,
    }
}

/// Moves a folder at `name` aside as `<name>.invalid.<ms>` (one rename,
/// whatever it holds; the newest 3 such copies are kept, as for store files)
/// so a file can take its place; anything else there is left for the
/// rename over it.
pub(super) fn displace_folder(bin: &Dir, name: &str) -> io::Result<()> {
    if bin
        .meta(name)?
        .is_some_and(|meta| meta.kind == FileKind::Dir)
    {
        let now = epoch_ms(std::time::SystemTime::now()).unwrap_or(0);
        quarantine_in(bin, name, now)?;
    }
    Ok(())
}

/// The shipped executable at `source`: a regular file (links followed: a
/// package manager may link the package folder), at most
/// [`MAX_HOOK_EXECUTABLE_BYTES`]; errors name the path.
pub(super) fn read_executable(source: &Path) -> io::Result<Vec<u8>> {
    let named =
        |error: io::Error| io::Error::new(error.kind(), format!("{}: {error}", source.display()));
    let refused = || {
        named(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("not a regular file of at most {MAX_HOOK_EXECUTABLE_BYTES} bytes"),
        ))
    };
    let mut options = fs::OpenOptions::new();
    options.read(true);
    // A FIFO put there would block an open for reading: never wait.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(source).map_err(named)?;
    let meta = file.metadata().map_err(named)?;
    if !meta.is_file() || meta.len() > MAX_HOOK_EXECUTABLE_BYTES {
        return Err(refused());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_HOOK_EXECUTABLE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(named)?;
    if bytes.len() as u64 > MAX_HOOK_EXECUTABLE_BYTES {
        return Err(refused());
    }
    Ok(bytes)
}

/// This boot's [`BootTime`]; `None` where `/proc` lacks it. (`/proc` is the
/// kernel's, not below the Claude root.)
fn boot_time_now() -> Option<BootTime> {
    let boot_id = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let boot_id = boot_id.trim().to_string();
    let id_ok = !boot_id.is_empty() && boot_id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    let uptime = fs::read_to_string("/proc/uptime").ok()?;
    let now_ms = epoch_ms(std::time::SystemTime::now())?;
    let (secs, cs) = uptime.split_whitespace().next()?.split_once('.')?;
    let uptime_cs = secs.parse::<i64>().ok()? * 100 + cs.get(..2)?.parse::<i64>().ok()?;
    let boot_cs = now_ms / 10 - uptime_cs;
    (id_ok && boot_cs > 0).then_some(BootTime {
        id: boot_id,
        cs: boot_cs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn spool() -> (tempfile::TempDir, SpoolPaths) {
        let dir = tempfile::tempdir().unwrap();
        let paths = SpoolPaths::for_teams_base(&dir.path().join("teams"));
        (dir, paths)
    }

    fn mode(path: &std::path::Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn install_creates_private_folders_and_an_executable_script() {
        let (_dir, paths) = spool();
        let script = paths.install().unwrap();
        assert_eq!(fs::read(&script).unwrap(), HOOK_SCRIPT.as_bytes());
        assert_eq!(mode(&script), 0o755);
        for folder in Folder::ALL {
            assert_eq!(mode(&paths.path(folder)), 0o700, "{folder:?}");
        }
        // A changed script is put back, and its mode too.
        fs::write(&script, b"#!/bin/sh\necho hacked\n").unwrap();
        fs::set_permissions(&script, fs::Permissions::from_mode(0o777)).unwrap();
        paths.install().unwrap();
        assert_eq!(fs::read(&script).unwrap(), HOOK_SCRIPT.as_bytes());
        assert_eq!(mode(&script), 0o755);
    }

    /// Each spool folder (and the spool root) in turn is a link to a folder
    /// outside. On the way to `bin/` (the spool root, `bin`) the link is
    /// replaced by a real folder; elsewhere install fails naming it. Either
    /// way nothing is created, written or chmod'ed there.
    #[test]
    fn install_never_creates_writes_or_chmods_through_a_linked_folder() {
        let linked = [
            ("runtime-hooks", true),
            ("bin", true),
            ("incoming", false),
            ("processing", false),
            ("processed", false),
            ("invalid", false),
        ];
        for (name, repaired) in linked {
            let (dir, paths) = spool();
            let outside = dir.path().join("outside");
            fs::create_dir(&outside).unwrap();
            fs::set_permissions(&outside, fs::Permissions::from_mode(0o755)).unwrap();
            let at = if name == "runtime-hooks" {
                fs::create_dir_all(paths.root.parent().unwrap()).unwrap();
                paths.root.clone()
            } else {
                fs::create_dir_all(&paths.root).unwrap();
                paths.root.join(name)
            };
            symlink(&outside, &at).unwrap();
            match paths.install() {
                Ok(script) => {
                    assert!(repaired, "{name}: installed through a link");
                    assert!(fs::symlink_metadata(&at).unwrap().is_dir(), "{name}");
                    assert_eq!(fs::read(script).unwrap(), HOOK_SCRIPT.as_bytes());
                }
                Err(error) => {
                    assert!(!repaired, "{name}: {error}");
                    assert_eq!(error.kind(), io::ErrorKind::NotADirectory, "{name}");
                    let names_it = format!("{}:", at.display());
                    assert!(error.to_string().contains(&names_it), "{name}: {error}");
                }
            }
            assert_eq!(mode(&outside), 0o755, "{name}: chmod'ed through the link");
            assert_eq!(fs::read_dir(&outside).unwrap().count(), 0, "{name}");
        }
    }

    /// A folder at a program's name (or at `boot-time`) is moved aside, not
    /// a reason to fail: the script's folder never withholds the executable.
    #[test]
    fn a_folder_at_a_file_name_of_bin_is_moved_aside() {
        for name in [HOOK_SCRIPT_NAME, HOOK_EXECUTABLE_NAME, BOOT_TIME_FILE_NAME] {
            let (dir, paths) = spool();
            let planted = paths.path(Folder::Bin).join(name).join("inside");
            fs::create_dir_all(&planted).unwrap();
            fs::write(planted.join("note"), b"kept").unwrap();
            let source = shipped(dir.path(), b"\x7fELF ours");
            let installed = paths.install_hook(Some(&source)).unwrap();
            assert_eq!(
                installed.program,
                HookProgram::Executable(paths.executable())
            );
            assert!(installed.executable_failure.is_none(), "{name}");
            assert_eq!(fs::read(paths.script()).unwrap(), HOOK_SCRIPT.as_bytes());
            assert_eq!(fs::read(paths.executable()).unwrap(), b"\x7fELF ours");
            let aside: Vec<_> = fs::read_dir(paths.path(Folder::Bin))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("{name}.invalid.")))
                .collect();
            assert_eq!(aside.len(), 1, "{name}: {aside:?}");
            let kept = paths.path(Folder::Bin).join(&aside[0]).join("inside/note");
            assert_eq!(fs::read(kept).unwrap(), b"kept");
            if boot_time_now().is_some() {
                paths.refresh_boot_time().unwrap();
                assert!(fs::symlink_metadata(paths.boot_time_file())
                    .unwrap()
                    .is_file());
            }
        }
    }

    #[test]
    fn a_script_link_is_replaced_and_its_target_untouched() {
        let (dir, paths) = spool();
        paths.install().unwrap();
        let outside = dir.path().join("outside.sh");
        fs::write(&outside, HOOK_SCRIPT).unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o600)).unwrap();
        fs::remove_file(paths.script()).unwrap();
        symlink(&outside, paths.script()).unwrap();
        paths.install().unwrap();
        assert!(fs::symlink_metadata(paths.script()).unwrap().is_file());
        assert_eq!(mode(&outside), 0o600);
    }

    /// A program with another name (a hard link an agent made, maybe
    /// outside the root) is replaced by a fresh copy, never chmod'ed through
    /// that name: the other name keeps its content and mode.
    #[test]
    fn a_hard_linked_program_is_replaced_and_its_other_name_untouched() {
        let (dir, paths) = spool();
        let source = shipped(dir.path(), b"\x7fELF ours");
        paths.install_hook(Some(&source)).unwrap();
        for program in [paths.script(), paths.executable()] {
            let other = dir.path().join("other");
            let _ = fs::remove_file(&other);
            fs::hard_link(&program, &other).unwrap();
            fs::set_permissions(&other, fs::Permissions::from_mode(0o600)).unwrap();
            let before = fs::read(&other).unwrap();
            paths.install_hook(Some(&source)).unwrap();
            assert_eq!(mode(&program), 0o755, "{program:?}");
            assert_ne!(inode(&program), inode(&other), "{program:?}");
            assert_eq!(mode(&other), 0o600, "{program:?}");
            assert_eq!(fs::read(&other).unwrap(), before, "{program:?}");
        }
    }

    /// A shipped executable: `bytes` in a file of its own.
    fn shipped(dir: &Path, bytes: &[u8]) -> PathBuf {
        let source = dir.join("shipped-hook");
        fs::write(&source, bytes).unwrap();
        source
    }

    fn inode(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        fs::symlink_metadata(path).unwrap().ino()
    }

    #[test]
    fn the_executable_is_copied_0755_and_rewritten_only_when_it_changed() {
        let (dir, paths) = spool();
        paths.install().unwrap();
        let source = shipped(dir.path(), b"\x7fELF one");
        let installed = paths.install_executable(&source).unwrap();
        assert_eq!(installed, paths.executable());
        assert_eq!(fs::read(&installed).unwrap(), b"\x7fELF one");
        assert_eq!(mode(&installed), 0o755);
        // The same content: the file is left as it is (same inode), its mode put back.
        let before = inode(&installed);
        fs::set_permissions(&installed, fs::Permissions::from_mode(0o700)).unwrap();
        paths.install_executable(&source).unwrap();
        assert_eq!(inode(&installed), before);
        assert_eq!(mode(&installed), 0o755);
        // A new build (or a tampered copy): replaced whole.
        for changed in [&b"\x7fELF two"[..], b"\x7fELF one and more", b""] {
            let source = shipped(dir.path(), changed);
            paths.install_executable(&source).unwrap();
            assert_eq!(fs::read(&installed).unwrap(), changed);
            assert_eq!(mode(&installed), 0o755);
        }
    }

    #[test]
    fn a_link_at_the_executables_name_is_replaced_and_its_target_untouched() {
        let (dir, paths) = spool();
        paths.install().unwrap();
        let outside = dir.path().join("outside");
        fs::write(&outside, b"theirs").unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o600)).unwrap();
        symlink(&outside, paths.executable()).unwrap();
        paths
            .install_executable(&shipped(dir.path(), b"ours"))
            .unwrap();
        assert!(fs::symlink_metadata(paths.executable()).unwrap().is_file());
        assert_eq!(fs::read(paths.executable()).unwrap(), b"ours");
        assert_eq!(fs::read(&outside).unwrap(), b"theirs");
        assert_eq!(mode(&outside), 0o600);
    }

    /// A source that is no regular file or is too large is an error naming
    /// it, read no further than the cap; `install_hook` then falls back to
    /// the script and keeps the error.
    #[test]
    fn an_unfit_source_is_refused_and_the_script_runs_instead() {
        let (dir, paths) = spool();
        let large = dir.path().join("large");
        fs::File::create(&large)
            .unwrap()
            .set_len(MAX_HOOK_EXECUTABLE_BYTES + 1)
            .unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        for source in [
            large,
            fifo,
            dir.path().to_path_buf(),
            dir.path().join("missing"),
        ] {
            let installed = paths.install_hook(Some(&source)).unwrap();
            assert_eq!(installed.program, HookProgram::Script(paths.script()));
            let error = installed.executable_failure.expect("a reason");
            let names_it = format!("{}:", source.display());
            assert!(error.to_string().contains(&names_it), "{error}");
            assert!(!paths.executable().exists(), "{source:?}");
        }
    }

    /// A FIFO at `bin/boot-time` is never opened (reading it would block the
    /// drain forever): it is replaced by the file the hook expects.
    #[test]
    fn a_boot_time_fifo_never_blocks_and_is_replaced() {
        if boot_time_now().is_none() {
            eprintln!("no /proc boot id here: nothing to refresh");
            return;
        }
        let (_dir, paths) = spool();
        paths.install().unwrap();
        let file = paths.boot_time_file();
        fs::remove_file(&file).unwrap();
        let made = std::process::Command::new("mkfifo").arg(&file).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        paths.refresh_boot_time().unwrap();
        let meta = fs::symlink_metadata(&file).unwrap();
        assert!(meta.is_file());
        let text = fs::read_to_string(&file).unwrap();
        let (id, cs) = text.trim_end().split_once(' ').unwrap();
        assert_eq!(id, boot_time_now().unwrap().id);
        assert!(cs.parse::<i64>().is_ok(), "{text}");
    }

    #[test]
    fn refresh_boot_time_refuses_a_linked_bin_folder() {
        if boot_time_now().is_none() {
            return;
        }
        let (dir, paths) = spool();
        paths.install().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::remove_dir_all(paths.path(Folder::Bin)).unwrap();
        symlink(&outside, paths.path(Folder::Bin)).unwrap();
        let error = paths.refresh_boot_time().unwrap_err();
        let names_it = format!("{}:", paths.path(Folder::Bin).display());
        assert!(error.to_string().contains(&names_it), "{error}");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    }
}
