//! The process's file mode creation mask (umask), read without changing it.
//!
//! A file is created with the permission bits it is meant to have, then
//! given them again on its handle (`fchmod`), so that the umask cannot
//! narrow them. Where the umask, read once for a batch of files, spares
//! every bit of a file's mode, the file is created with exactly that mode
//! and the second call changes nothing: [`CreationMask`] lets the batch
//! skip it (one system call per file; a drain creates a meta per event).
//!
//! Only the umask is accounted for, as before: a default ACL on the folder
//! can narrow a new file's bits too, but setting one takes the folder's
//! owner, who can as well change the file's bits after it is written, so
//! the `fchmod` never kept that out.

/// The umask as read at one moment (Linux: the `Umask:` line of
/// `/proc/self/status`, since 4.7), or unknown (no `/proc`, another
/// system): then every file is given its bits on its handle.
///
/// Read once per batch, not once per process: the umask can change while
/// the process runs (Node's `process.umask(mask)`). A change during the
/// batch is the one case it misses: a file created after it with bits the
/// new mask takes away keeps them taken away.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CreationMask(Option<u32>);

impl CreationMask {
    /// The process's umask now, or unknown where it cannot be read.
    pub(crate) fn read() -> Self {
        #[cfg(target_os = "linux")]
        {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            Self(parse_status_umask(&status))
        }
        #[cfg(not(target_os = "linux"))]
        {
            Self(None)
        }
    }

    /// No umask known: every file is given its bits on its handle.
    #[cfg(test)]
    pub(crate) fn unknown() -> Self {
        Self(None)
    }

    /// Whether a file created now with permission bits `mode` gets exactly
    /// them: the umask is known and clears none of them.
    pub(crate) fn spares(self, mode: u32) -> bool {
        self.0.is_some_and(|mask| mode & mask == 0)
    }
}

/// The umask of a `/proc/<pid>/status` text (`Umask:\t0022`, octal).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_status_umask(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"))?;
    u32::from_str_radix(line.trim(), 8)
        .ok()
        .filter(|mask| *mask <= 0o777)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_umask_line_is_read_as_octal_and_anything_else_is_unknown() {
        for (status, want) in [
            ("Name:\tx\nUmask:\t0022\nState:\tR\n", Some(0o022)),
            ("Umask:\t0077\n", Some(0o077)),
            ("Umask:\t0000", Some(0)),
            ("Name:\tx\nState:\tR\n", None),
            ("Umask:\t0029\n", None),
            ("Umask:\t17777\n", None),
            ("", None),
        ] {
            assert_eq!(parse_status_umask(status), want, "{status:?}");
        }
    }

    #[test]
    fn a_mask_spares_a_mode_only_when_it_clears_none_of_its_bits() {
        for (mask, mode, spared) in [
            (Some(0o022), 0o600, true),
            (Some(0o077), 0o600, true),
            (Some(0o022), 0o644, true),
            (Some(0o022), 0o666, false),
            (Some(0o277), 0o600, false),
            (Some(0o400), 0o600, false),
            (None, 0o600, false),
        ] {
            assert_eq!(CreationMask(mask).spares(mode), spared, "{mask:?} {mode:o}");
        }
    }

    /// On Linux the umask is read from `/proc`, and matches what the
    /// kernel applies to a file created now.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_mask_read_is_the_one_new_files_get() {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("probe");
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o777)
            .open(&path)
            .unwrap();
        let created = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let CreationMask(Some(mask)) = CreationMask::read() else {
            panic!("no Umask line in /proc/self/status");
        };
        assert_eq!(created, 0o777 & !mask);
    }
}
