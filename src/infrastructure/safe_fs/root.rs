//! A configured root and the paths below it.

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::kept_folders::{keep, kept};
use super::{not_a_folder, with_path};
use super::{Dir, FileRead, Meta};

/// A root the user configured (`teamsBasePath`, `tasksBasePath`, the
/// transcripts folder): trusted as set up, links included. Paths below it are
/// walked one component at a time without following any link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedRoot {
    path: Arc<Path>,
}

impl TrustedRoot {
    /// The root at `path`; nothing is opened yet (it may not exist).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: Arc::from(path.into()),
        }
    }

    /// The root as configured.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `path` joined below the root.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.path.join(rel)
    }

    /// `path` spelled from the root as configured, when it names an entry
    /// strictly below the root with plain components only (no `..`): how a
    /// path an untrusted payload names is taken. Anything else names nothing.
    pub(crate) fn entry_below(&self, path: &Path) -> Option<PathBuf> {
        let parts = self.below(path).ok()?;
        (!parts.is_empty()).then(|| self.path.join(parts.iter().collect::<PathBuf>()))
    }

    /// The folder at `dir` (the root or below it); `None` when it, or a
    /// folder on the way, does not exist. A link or file on the way is an error.
    /// Inside [`with_folders_kept`](super::with_folders_kept) a folder
    /// already opened is not walked to again.
    pub(crate) fn open_dir(&self, dir: &Path) -> io::Result<Option<Dir>> {
        let parts = self.below(dir)?;
        if let Some(found) = kept(dir)? {
            return Ok(Some(found));
        }
        let Some(mut current) = self.open_root(false)? else {
            return Ok(None);
        };
        if let Some(found) = current.open_descendant(&parts) {
            return keep(found).map(Some);
        }
        for part in parts {
            match current.open_dir(part)? {
                Some(next) => current = next,
                None => return Ok(None),
            }
        }
        keep(current).map(Some)
    }

    /// The folder at `dir`, created (0700) with every missing folder on the
    /// way (kept like [`TrustedRoot::open_dir`]'s).
    pub fn create_dir_all(&self, dir: &Path) -> io::Result<Dir> {
        let parts = self.below(dir)?;
        if let Some(found) = kept(dir)? {
            return Ok(found);
        }
        let mut current = self
            .open_root(true)?
            .ok_or_else(|| not_a_folder(&self.path))?;
        // Folders usually exist: one open when they all do.
        if let Some(found) = current.open_descendant(&parts) {
            return keep(found);
        }
        for part in parts {
            current = current.create_dir(part)?;
        }
        keep(current)
    }

    #[cfg(test)]
    /// [`TrustedRoot::create_dir_all`] that repairs the way: a link, file or
    /// other non-folder where a folder of `dir` should be is removed (never
    /// followed) and a real folder made in its place (see
    /// [`Dir::create_dir_replacing`]).
    pub(crate) fn create_dir_all_replacing(&self, dir: &Path) -> io::Result<Dir> {
        let parts = self.below(dir)?;
        let mut current = self
            .open_root(true)?
            .ok_or_else(|| not_a_folder(&self.path))?;
        for part in parts {
            current = current.create_dir_replacing(part)?;
        }
        Ok(current)
    }

    /// Reads the file at `file`, at most `max` bytes (see [`Dir::read`]).
    pub fn read(&self, file: &Path, max: u64) -> io::Result<FileRead> {
        let (dir, name) = split(file)?;
        match self.open_dir(dir)? {
            Some(dir) => dir.read(name, max),
            None => Ok(FileRead::Missing),
        }
    }

    /// [`TrustedRoot::read`] of a file replaced through its spare (see
    /// [`Dir::read_swapped`]).
    pub fn read_swapped(&self, file: &Path, max: u64) -> io::Result<FileRead> {
        let (dir, name) = split(file)?;
        match self.open_dir(dir)? {
            Some(dir) => dir.read_swapped(name, max),
            None => Ok(FileRead::Missing),
        }
    }

    /// Atomically replaces `file` with `bytes` (see [`Dir::write_atomic`]),
    /// creating its folders.
    pub fn write_atomic(&self, file: &Path, bytes: &[u8]) -> io::Result<()> {
        let (dir, name) = split(file)?;
        self.create_dir_all(dir)?.write_atomic(name, bytes, 0o644)
    }

    /// What is at `path`, without following a link; `None` when nothing is.
    pub fn meta(&self, path: &Path) -> io::Result<Option<Meta>> {
        let (dir, name) = split(path)?;
        match self.open_dir(dir)? {
            Some(dir) => dir.meta(name),
            None => Ok(None),
        }
    }

    /// Opens the root itself, following links: the user set it up.
    fn open_root(&self, create: bool) -> io::Result<Option<Dir>> {
        match Dir::open_trusted(&self.path)? {
            None if create => {
                std::fs::create_dir_all(&self.path).map_err(|e| with_path(&self.path, e))?;
                Dir::open_trusted(&self.path)
            }
            opened => Ok(opened),
        }
    }

    /// The plain components of `path` below the root. `..` and `.` are refused:
    /// every path here is built by the addon from checked names.
    fn below<'a>(&self, path: &'a Path) -> io::Result<Vec<&'a OsStr>> {
        let rest = path.strip_prefix(&*self.path).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: outside the configured root {}",
                    path.display(),
                    self.path.display()
                ),
            )
        })?;
        rest.components()
            .map(|component| match component {
                Component::Normal(part) => Ok(part),
                _ => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: not a plain path below its root", path.display()),
                )),
            })
            .collect()
    }
}

/// `file`'s folder and name.
pub(super) fn split(file: &Path) -> io::Result<(&Path, &OsStr)> {
    match (file.parent(), file.file_name()) {
        (Some(dir), Some(name)) => Ok((dir, name)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: not a file path", file.display()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn paths_outside_the_root_or_with_dot_dot_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        for path in [
            dir.path().join("other/x.json"),
            dir.path().join("teams/../x.json"),
        ] {
            let error = root.read(&path, 10).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput, "{path:?}");
        }
    }

    #[test]
    fn entry_below_takes_only_plain_paths_strictly_below_the_root() {
        let root = TrustedRoot::new("/home/u/.claude/projects");
        let cases = [
            ("/home/u/.claude/projects/-p/s.jsonl", true),
            ("/home/u/.claude/projects/./-p/s.jsonl", true),
            ("/home/u/.claude/projects", false),
            ("/home/u/.claude/projects/../secrets.jsonl", false),
            ("/home/u/.claude/projects/-p/../../x", false),
            ("/home/u/.claude/projectsX/s.jsonl", false),
            ("/elsewhere/s.jsonl", false),
            ("relative/s.jsonl", false),
        ];
        for (path, below) in cases {
            let taken = root.entry_below(Path::new(path));
            assert_eq!(taken.is_some(), below, "{path}");
            if let Some(taken) = taken {
                assert_eq!(taken, Path::new("/home/u/.claude/projects/-p/s.jsonl"));
            }
        }
    }

    #[test]
    fn a_linked_root_is_trusted_but_a_link_below_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real-teams");
        std::fs::create_dir_all(real.join("forge")).unwrap();
        std::fs::write(real.join("forge/config.json"), b"{}").unwrap();
        symlink(&real, dir.path().join("teams")).unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        assert!(matches!(
            root.read(&root.join("forge/config.json"), 10).unwrap(),
            FileRead::Bytes(b) if b == b"{}"
        ));

        symlink(real.join("forge"), real.join("linked")).unwrap();
        let error = root.read(&root.join("linked/config.json"), 10).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotADirectory);
        assert!(error.to_string().contains("linked"), "{error}");
        let error = root
            .write_atomic(&root.join("linked/new.json"), b"x")
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotADirectory);
        assert!(!real.join("forge/new.json").exists());
    }

    /// Links (to a folder, dangling) and a file on the way are removed and
    /// replaced by real folders; what a link pointed to is untouched.
    #[test]
    fn create_dir_all_replacing_repairs_the_way_without_following_links() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(outside.join("b")).unwrap();
        std::fs::write(outside.join("b/keep"), b"x").unwrap();
        std::fs::create_dir_all(root.join("a")).unwrap();
        symlink(&outside, root.join("a/b")).unwrap();
        let made = root.create_dir_all_replacing(&root.join("a/b/c")).unwrap();
        assert_eq!(made.path(), root.join("a/b/c"));
        assert!(std::fs::symlink_metadata(root.join("a/b"))
            .unwrap()
            .is_dir());
        assert!(outside.join("b/keep").exists());
        assert!(!outside.join("c").exists());
        std::fs::remove_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a"), b"a file").unwrap();
        root.create_dir_all_replacing(&root.join("a/b")).unwrap();
        assert!(std::fs::symlink_metadata(root.join("a/b"))
            .unwrap()
            .is_dir());
        std::fs::remove_dir_all(root.join("a/b")).unwrap();
        symlink(dir.path().join("nowhere"), root.join("a/b")).unwrap();
        root.create_dir_all_replacing(&root.join("a/b")).unwrap();
        assert!(!dir.path().join("nowhere").exists());
    }

    /// One `openat2` reaches a folder of plain folders; a link, file or
    /// gap anywhere on the way leaves the walk to answer as it always did.
    #[test]
    fn one_open_reaches_plain_folders_and_the_walk_answers_for_anything_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(outside.join("c")).unwrap();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        symlink(&outside, root.join("a/b/link")).unwrap();
        symlink(root.join("a/b"), root.join("a/link")).unwrap();
        // Relative, staying below the root: still a link, still refused.
        symlink("b", root.join("a/relative")).unwrap();
        symlink(dir.path().join("nowhere"), root.join("a/b/dangling")).unwrap();
        std::fs::write(root.join("a/file"), b"x").unwrap();
        let top = root.open_root(false).unwrap().unwrap();
        let parts = |rel: &'static str| rel.split('/').map(OsStr::new).collect::<Vec<_>>();
        let identity = |dir: &Dir| {
            let stamp = dir.own_stamp().unwrap();
            (stamp.dev, stamp.ino)
        };

        let plain = top.open_descendant(&parts("a/b/c"));
        let walked = root.open_dir(&root.join("a/b/c")).unwrap().unwrap();
        assert_eq!(walked.path(), root.join("a/b/c"));
        if cfg!(target_os = "linux") {
            let plain = plain.expect("plain folders in one open");
            assert_eq!(plain.path(), walked.path());
            assert_eq!(identity(&plain), identity(&walked));
        }
        // (way, what the walk answers: None for missing, else the error kind)
        let refused = [
            ("a/b/link", Some(io::ErrorKind::NotADirectory)),
            ("a/b/link/c", Some(io::ErrorKind::NotADirectory)),
            ("a/link/c", Some(io::ErrorKind::NotADirectory)),
            ("a/relative/c", Some(io::ErrorKind::NotADirectory)),
            ("a/b/dangling", Some(io::ErrorKind::NotADirectory)),
            ("a/file/c", Some(io::ErrorKind::NotADirectory)),
            ("a/b/missing", None),
            ("a/missing/c", None),
        ];
        for (way, walk) in refused {
            assert!(top.open_descendant(&parts(way)).is_none(), "{way}");
            match (root.open_dir(&root.join(way)), walk) {
                (Ok(None), None) => {}
                (Err(error), Some(kind)) => assert_eq!(error.kind(), kind, "{way}"),
                (other, _) => panic!("{way}: {other:?}"),
            }
        }
        // Creating through a link to a folder is refused and makes nothing.
        assert!(root.create_dir_all(&root.join("a/b/link/c/d")).is_err());
        assert!(!outside.join("c/d").exists());
        assert_eq!(
            root.create_dir_all(&root.join("a/b/c/d")).unwrap().path(),
            root.join("a/b/c/d")
        );
    }

    #[test]
    fn create_dir_all_never_creates_through_a_dangling_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = TrustedRoot::new(dir.path().join("teams"));
        std::fs::create_dir_all(root.path()).unwrap();
        symlink(dir.path().join("elsewhere"), root.join("forge")).unwrap();
        assert!(root.create_dir_all(&root.join("forge/members")).is_err());
        assert!(!dir.path().join("elsewhere").exists());
    }
}
