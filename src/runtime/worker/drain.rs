//! The turn-settled drain schedule: a drain soon after start, then on every
//! interval, and soon after the spool watch sees a file arrive in
//! `incoming/` or a hook program change in `bin/`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use super::Passes;
use crate::runtime::shared_watcher::Registration;

/// How a drain went, which decides when the next one runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DrainPass {
    /// A full batch went through: more may be waiting, drain again at once.
    Full,
    /// Caught up: drain again when a file arrives or the interval ends.
    CaughtUp,
    /// Something failed and was put back for later: wait the whole interval,
    /// so a file that keeps failing is not retried every second.
    Failed,
}

/// Told of a watch that could not be set up: the folder and the error.
type WatchFailed = Box<dyn Fn(&std::path::Path, &str) + Send + Sync>;

/// The periodic turn-settled drain: what to call and where new files land.
pub(crate) struct DrainSchedule {
    /// One drain.
    pub drain: Box<dyn Fn() -> DrainPass + Send + Sync>,
    /// The spool's `incoming/` folder to watch for new payloads, when it is
    /// a real folder (checked without following links: a watch on a linked
    /// folder would sit on a folder an agent chose).
    pub incoming: Box<dyn Fn() -> Option<PathBuf> + Send + Sync>,
    /// The spool's `bin/` folder, watched beside `incoming/` (by the same
    /// watcher) when it is a real folder: a change to a hook program starts
    /// a drain, which puts the addon's program back.
    pub programs: Box<dyn Fn() -> Option<PathBuf> + Send + Sync>,
    /// Told when a watch on `incoming/` cannot be set up (the folder and the
    /// error); once per distinct failure, not every retry.
    pub watch_failed: WatchFailed,
}

/// First drain after start.
const FIRST_DRAIN: Duration = Duration::from_millis(100);
/// Default drain interval without watcher news.
pub(super) const DRAIN_EVERY: Duration = Duration::from_secs(15);
/// Retry interval while the spool's `incoming/` does not exist yet.
const WATCHER_RETRY: Duration = Duration::from_secs(1);
/// Least time from one drain's start to the next one a watcher event starts
///: a file that keeps failing and is released back to
/// `incoming/` must not turn the watcher into a busy loop.
const MIN_DRAIN_GAP: Duration = Duration::from_secs(1);

/// Drains the spool 100 ms after start, then every `drain_every` (default
/// 15 s), and soon after the
/// watcher sees a new file in `incoming/` (at most one drain a second that
/// way); one drain at a time, an immediate follow-up when a batch was full,
/// only the interval after a drain that failed. Without a watcher the
/// interval alone runs. After each drain, a watched folder found replaced
/// (another folder at its path) is watched again.
pub(super) async fn drain_loop(
    schedule: DrainSchedule,
    drain_every: Duration,
    stopping: Arc<AtomicBool>,
    passes: Arc<Passes>,
) {
    let news = Arc::new(Notify::new());
    let mut watcher: Option<Watching> = None;
    let mut last_watch_error: Option<String> = None;
    tokio::time::sleep(FIRST_DRAIN).await;
    let DrainSchedule {
        drain,
        incoming,
        programs,
        watch_failed,
    } = schedule;
    let folders = WatchedFolders { incoming, programs };
    let drain = Arc::new(drain);
    while !stopping.load(Ordering::SeqCst) {
        if watcher.is_none() {
            // The spool may be installed later (first hook settings call): retry each round.
            watcher = folders.attach(&news, &watch_failed, &mut last_watch_error);
        }
        let run = drain.clone();
        let pass = passes.enter();
        let started = tokio::time::Instant::now();
        let outcome = tokio::task::spawn_blocking(move || {
            let _pass = pass;
            run()
        })
        .await
        .unwrap_or(DrainPass::Failed);
        if watcher.as_ref().is_some_and(|w| w.ids != folders.ids()) {
            // A watched folder was replaced (by an agent, or by the drain that
            // repaired the way to `bin/`): the kernel's watch followed the old
            // one. Watch the folders now there (the old registration first
            // ends, so the folder's count starts again).
            drop(watcher.take());
            watcher = folders.attach(&news, &watch_failed, &mut last_watch_error);
        }
        let interval = if watcher.is_some() {
            drain_every
        } else {
            // A short configured interval also shortens the retry.
            WATCHER_RETRY.min(drain_every)
        };
        match outcome {
            DrainPass::Full => continue,
            DrainPass::Failed => {
                tokio::time::sleep(interval).await;
                continue;
            }
            DrainPass::CaughtUp => {}
        }
        tokio::select! {
            _ = news.notified() => {
                tokio::time::sleep_until(started + MIN_DRAIN_GAP).await;
            }
            // Until the spool exists (the first hook settings call creates it)
            // there is no watcher: look again soon so it attaches right away.
            _ = tokio::time::sleep(interval) => {}
        }
    }
    drop(watcher);
}

/// The folders a drain scheduler watches.
struct WatchedFolders {
    incoming: Box<dyn Fn() -> Option<PathBuf> + Send + Sync>,
    programs: Box<dyn Fn() -> Option<PathBuf> + Send + Sync>,
}

/// Which folder is at a path: device and inode (`None`: none there, or a
/// platform where this is not known, which then never re-attaches).
type FolderId = Option<(u64, u64)>;

#[cfg(unix)]
fn folder_id(path: &std::path::Path) -> FolderId {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.is_dir().then(|| (meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn folder_id(_path: &std::path::Path) -> FolderId {
    None
}

/// A watch, and which folders were at the watched paths when it was set.
struct Watching {
    _registration: Registration,
    ids: [FolderId; 2],
}

impl WatchedFolders {
    /// Which folders are at `incoming/` and `bin/` now.
    fn ids(&self) -> [FolderId; 2] {
        let id = |path: Option<PathBuf>| path.as_deref().and_then(folder_id);
        [id((self.incoming)()), id((self.programs)())]
    }

    /// A watch on `incoming/` (and `bin/`), when `incoming/` exists; a
    /// failure is told to `watch_failed` once per distinct error.
    fn attach(
        &self,
        news: &Arc<Notify>,
        watch_failed: &WatchFailed,
        last_error: &mut Option<String>,
    ) -> Option<Watching> {
        // Read before watching: a folder replaced in between shows as stale.
        let ids = self.ids();
        let dir = (self.incoming)()?;
        match watch_incoming(&dir, (self.programs)(), news.clone()) {
            Ok(registration) => Some(Watching {
                _registration: registration,
                ids,
            }),
            Err(error) => {
                let error = error.to_string();
                if last_error.as_deref() != Some(error.as_str()) {
                    watch_failed(&dir, &error);
                    *last_error = Some(error);
                }
                None
            }
        }
    }
}

/// Whether a watcher event may bring a file to drain: a file created in or
/// renamed into `incoming/` under a visible name (the hook's `mv`), or an
/// event the backend could not classify. Opens, reads, writes to hidden temp
/// files and the drain's own claims (renames out) are not news: reacting to
/// them made every drain's own listing of `incoming/` start the next drain.
fn brings_a_file(event: &notify::Event) -> bool {
    use notify::event::{ModifyKind, RenameMode};
    use notify::EventKind;
    let arrival = match event.kind {
        EventKind::Create(_) | EventKind::Any | EventKind::Other => true,
        EventKind::Modify(ModifyKind::Name(mode)) => {
            matches!(
                mode,
                RenameMode::To | RenameMode::Both | RenameMode::Any | RenameMode::Other
            )
        }
        _ => false,
    };
    let visible = |path: &std::path::PathBuf| {
        path.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| !n.starts_with('.'))
    };
    arrival && (event.paths.is_empty() || event.paths.iter().any(visible))
}

/// Whether a watcher event in `bin/` may have changed a hook program: any
/// change (a write in place, a chmod, a rename, a removal) to a visible name
/// other than `boot-time` (rewritten by a drain's check that finds it stale) and
/// the copies moved aside (`*.invalid.*`). Reading a program (running it) is
/// not a change.
fn touches_a_program(event: &notify::Event) -> bool {
    use notify::EventKind;
    let program = |path: &std::path::PathBuf| {
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            !n.starts_with('.')
                && n != crate::infrastructure::spool::BOOT_TIME_FILE_NAME
                && !n.contains(".invalid.")
        })
    };
    let change = !matches!(event.kind, EventKind::Access(_));
    change && (event.paths.is_empty() || event.paths.iter().any(program))
}

/// A watch on `incoming/` (and `programs`, the spool's `bin/`, when given)
/// that pokes `news` when a file may have arrived or a hook program may have
/// changed: registrations on the process's one shared watcher (one inotify
/// instance however many instances watch), ended when dropped.
fn watch_incoming(
    incoming: &std::path::Path,
    programs: Option<PathBuf>,
    news: Arc<Notify>,
) -> notify::Result<Registration> {
    let mut registration = Registration::new();
    let wake = |news: &Arc<Notify>| {
        let news = news.clone();
        Box::new(move || news.notify_one()) as Box<dyn Fn() + Send + Sync>
    };
    registration.watch(incoming, Box::new(brings_a_file), wake(&news))?;
    if let Some(programs) = programs {
        // Without it, the interval's drains still put programs back.
        let _ = registration.watch(&programs, Box::new(touches_a_program), wake(&news));
    }
    Ok(registration)
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, CreateKind, EventKind, ModifyKind, RemoveKind, RenameMode};
    use std::sync::atomic::AtomicUsize;

    fn event(kind: EventKind, paths: &[&str]) -> notify::Event {
        let mut event = notify::Event::new(kind);
        event.paths = paths
            .iter()
            .map(|p| PathBuf::from(format!("/spool/incoming/{p}")))
            .collect();
        event
    }

    #[test]
    fn only_files_arriving_under_visible_names_wake_the_drain() {
        let name = "20261122T100000Z-1-0.claude.json";
        let hidden = ".turn-settled.1.0";
        let wakes = [
            event(
                EventKind::Modify(ModifyKind::Name(RenameMode::Both)),
                &[hidden, name],
            ),
            event(EventKind::Modify(ModifyKind::Name(RenameMode::To)), &[name]),
            event(
                EventKind::Modify(ModifyKind::Name(RenameMode::Any)),
                &[name],
            ),
            event(EventKind::Create(CreateKind::File), &[name]),
            event(EventKind::Any, &[]),
        ];
        for e in &wakes {
            assert!(brings_a_file(e), "{e:?}");
        }
        let quiet = [
            // The drain's own listing and reads.
            event(
                EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)),
                &[],
            ),
            event(
                EventKind::Access(AccessKind::Close(notify::event::AccessMode::Read)),
                &[name],
            ),
            // Its claims move files out.
            event(
                EventKind::Modify(ModifyKind::Name(RenameMode::From)),
                &[name],
            ),
            event(EventKind::Remove(RemoveKind::File), &[name]),
            // The hook writing its hidden temp file.
            event(EventKind::Create(CreateKind::File), &[hidden]),
            event(
                EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any)),
                &[hidden],
            ),
        ];
        for e in &quiet {
            assert!(!brings_a_file(e), "{e:?}");
        }
    }

    /// In `bin/`, any change to a program is news (a drain puts it back);
    /// running it, `boot-time` and the drain's own hidden temp files are not.
    #[test]
    fn a_changed_program_is_news_and_reading_one_is_not() {
        let named = |kind: EventKind, name: &str| {
            let mut event = notify::Event::new(kind);
            event.paths = vec![PathBuf::from(format!("/spool/bin/{name}"))];
            event
        };
        let cases = [
            (
                EventKind::Modify(ModifyKind::Data(notify::event::DataChange::Any)),
                "turn-settled-hook-v1",
                true,
            ),
            (
                EventKind::Access(AccessKind::Close(notify::event::AccessMode::Write)),
                "turn-settled-hook-v1.sh",
                false,
            ),
            (
                EventKind::Modify(ModifyKind::Metadata(notify::event::MetadataKind::Any)),
                "turn-settled-hook-v1",
                true,
            ),
            (
                EventKind::Modify(ModifyKind::Name(RenameMode::To)),
                "turn-settled-hook-v1",
                true,
            ),
            (
                EventKind::Modify(ModifyKind::Name(RenameMode::From)),
                "turn-settled-hook-v1.sh",
                true,
            ),
            (
                EventKind::Remove(RemoveKind::File),
                "turn-settled-hook-v1",
                true,
            ),
            (
                EventKind::Create(CreateKind::Folder),
                "turn-settled-hook-v1.sh",
                true,
            ),
            (
                EventKind::Access(AccessKind::Open(notify::event::AccessMode::Any)),
                "turn-settled-hook-v1",
                false,
            ),
            (
                EventKind::Modify(ModifyKind::Name(RenameMode::To)),
                "boot-time",
                false,
            ),
            (
                EventKind::Create(CreateKind::File),
                ".turn-settled-hook-v1.mws-tmp.1.0",
                false,
            ),
            (
                EventKind::Create(CreateKind::Folder),
                "turn-settled-hook-v1.sh.invalid.1",
                false,
            ),
        ];
        for (kind, name, news) in cases {
            assert_eq!(
                touches_a_program(&named(kind, name)),
                news,
                "{kind:?} {name}"
            );
        }
    }

    /// Waits (at most a minute, to fail rather than hang) until `drains`
    /// reaches `count`, calling `poke` every 100 ms meanwhile.
    fn wait_for_drains(drains: &AtomicUsize, count: usize, poke: impl Fn()) -> bool {
        for _ in 0..600 {
            if drains.load(Ordering::SeqCst) >= count {
                return true;
            }
            poke();
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// `bin/` moved away and made again (by an agent, or by the drain that
    /// repairs the way to it) is news, and the new `bin/` is watched after
    /// the drain that follows: a program written there starts a drain. The
    /// interval is an hour, so every drain after the first is the watcher's.
    #[test]
    fn a_replaced_bin_is_news_and_the_new_one_is_watched() {
        let dir = tempfile::tempdir().unwrap();
        let incoming = dir.path().join("incoming");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&incoming).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        let drains = Arc::new(AtomicUsize::new(0));
        let counter = drains.clone();
        let watched_bin = bin.clone();
        let schedule = DrainSchedule {
            drain: Box::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                DrainPass::CaughtUp
            }),
            incoming: Box::new(move || Some(incoming.clone())),
            programs: Box::new(move || Some(watched_bin.clone())),
            watch_failed: Box::new(|_, _| {}),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let stopping = Arc::new(AtomicBool::new(false));
        runtime.spawn(drain_loop(
            schedule,
            Duration::from_secs(3600),
            stopping.clone(),
            Arc::default(),
        ));
        assert!(wait_for_drains(&drains, 1, || {}), "no first drain");
        std::fs::rename(&bin, dir.path().join("bin.old")).unwrap();
        std::fs::create_dir(&bin).unwrap();
        let replaced = wait_for_drains(&drains, 2, || {});
        // A program written into the new `bin/`, again until it is seen (the
        // new watch is set just after the drain the move started).
        let program = bin.join("turn-settled-hook-v1");
        let watched = replaced
            && wait_for_drains(&drains, 3, || {
                std::fs::write(&program, b"planted").unwrap();
            });
        stopping.store(true, Ordering::SeqCst);
        assert!(replaced, "moving bin/ away started no drain");
        assert!(
            watched,
            "a program written into the new bin/ started no drain"
        );
    }

    /// Drains in 2.5 s of a scheduler whose every drain lists `incoming/`,
    /// which the watcher sees (inotify reports the open), claims the file
    /// there and puts it back, and reports `pass`.
    fn drains_in_two_and_a_half_seconds(pass: DrainPass) -> usize {
        let dir = tempfile::tempdir().unwrap();
        let incoming = dir.path().join("incoming");
        let processing = dir.path().join("processing");
        std::fs::create_dir_all(&incoming).unwrap();
        std::fs::create_dir_all(&processing).unwrap();
        std::fs::write(incoming.join("20261122T100000Z-1-0.claude.json"), b"{}").unwrap();
        let drains = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = drains.clone();
        let (from, to) = (incoming.clone(), processing.clone());
        let schedule = DrainSchedule {
            drain: Box::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                // Like a drain whose read keeps failing: claim, then release.
                for entry in std::fs::read_dir(&from).unwrap().flatten() {
                    let claimed = to.join(entry.file_name());
                    std::fs::rename(entry.path(), &claimed).unwrap();
                    std::fs::rename(&claimed, entry.path()).unwrap();
                }
                pass
            }),
            incoming: Box::new(move || Some(incoming.clone())),
            programs: Box::new(|| None),
            watch_failed: Box::new(|_, _| {}),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let stopping = Arc::new(AtomicBool::new(false));
        runtime.spawn(drain_loop(
            schedule,
            DRAIN_EVERY,
            stopping.clone(),
            Arc::default(),
        ));
        std::thread::sleep(Duration::from_millis(2500));
        stopping.store(true, Ordering::SeqCst);
        drains.load(Ordering::SeqCst)
    }

    /// The drain's own listing must not start the next drain, nor a file
    /// put back in a loop. (Before the fix: about a thousand drains a second.)
    #[test]
    fn the_drains_own_work_does_not_wake_the_drain() {
        // 100 ms, then at most one a second: 3 in 2.5 s (one spare for a slow start).
        let count = drains_in_two_and_a_half_seconds(DrainPass::CaughtUp);
        assert!((1..=4).contains(&count), "{count} drains in 2.5 s");
        // After a failed drain only the 15 s interval starts the next one.
        let count = drains_in_two_and_a_half_seconds(DrainPass::Failed);
        assert_eq!(count, 1, "{count} drains in 2.5 s");
    }
}
