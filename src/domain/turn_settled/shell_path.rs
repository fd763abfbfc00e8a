//! Paths as the hook's shell spells them. Claude Code on Windows runs hook
//! commands through Git Bash (MSYS2), which takes POSIX-style paths:
//! `C:\Users\x\.claude` is `/c/Users/x/.claude` there.

/// `path` (a Windows path) as Git Bash spells it: `C:\a\b` -> `/c/a/b`,
/// `\\?\C:\a` -> `/c/a`, `\\server\share\a` -> `//server/share/a`. `None` for
/// what has no such spelling (a relative path, a device path such as
/// `\\.\pipe\x`, a verbatim UNC path) or holds a character no Windows path
/// component may hold.
pub(crate) fn git_bash_path(path: &str) -> Option<String> {
    let path = path.strip_prefix(r"\\?\").unwrap_or(path);
    let (head, rest) = if let Some(unc) = path.strip_prefix(r"\\") {
        if unc.starts_with(['.', '?']) {
            return None;
        }
        ("/".to_string(), unc)
    } else {
        let mut chars = path.chars();
        let (drive, colon, slash) = (chars.next()?, chars.next()?, chars.next()?);
        if !drive.is_ascii_alphabetic() || colon != ':' || !matches!(slash, '\\' | '/') {
            return None;
        }
        (format!("/{}", drive.to_ascii_lowercase()), &path[3..])
    };
    let parts: Vec<&str> = rest.split(['\\', '/']).filter(|p| !p.is_empty()).collect();
    if parts
        .iter()
        .any(|p| p.contains(':') || p.chars().any(char::is_control))
    {
        return None;
    }
    Some(format!("{head}/{}", parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_paths_become_git_bash_paths() {
        let cases = [
            (
                r"C:\Users\x\.claude\teams\.member-work-sync\runtime-hooks\bin\turn-settled-hook-v1.sh",
                Some("/c/Users/x/.claude/teams/.member-work-sync/runtime-hooks/bin/turn-settled-hook-v1.sh"),
            ),
            (r"D:/data/spool", Some("/d/data/spool")),
            (r"\\?\C:\Users\x\spool", Some("/c/Users/x/spool")),
            (r"\\server\share\spool", Some("//server/share/spool")),
            (r"C:\Users\O'Brien\s p", Some("/c/Users/O'Brien/s p")),
            (r"C:\", Some("/c/")),
            (r"relative\spool", None),
            (r"\rooted\no-drive", None),
            (r"C:relative", None),
            (r"\\.\pipe\x", None),
            (r"\\?\UNC\server\share", None),
            (r"C:\a\b:stream", None),
            ("C:\\a\nb", None),
            ("", None),
        ];
        for (windows, bash) in cases {
            assert_eq!(git_bash_path(windows).as_deref(), bash, "{windows:?}");
        }
    }
}
