//! Shared fixtures of the integration tests.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use member_work_sync::runtime::composition::{RootPaths, Services};

/// 2026-11-18T11:06:40Z, the manual clock's start.
pub const NOW: i64 = 1_795_000_000_000;
/// One minute in ms.
pub const MINUTE: i64 = 60_000;

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A temp copy of the bundled example Claude root.
pub fn example_root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/claude-root"),
        &root,
    );
    (dir, root)
}

/// Services over `root` with a manual clock at [`NOW`].
pub fn services(root: &Path) -> Services {
    Services::new(
        RootPaths::resolve(Some(root.to_path_buf()), None, None),
        Some(NOW),
    )
}
