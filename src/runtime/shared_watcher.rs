//! One `notify` watcher per process, shared by every instance's spool
//! watch: each inotify instance counts against a per-user budget (128 by
//! default), and every app window or CLI process may run several instances.
//!
//! A [`Registration`] asks for a folder to be watched and names a callback
//! that decides, per event in that folder (or on the folder itself), whether
//! to call it. A folder is
//! watched once however many registrations ask for it (a second `watch` of
//! the same folder would share the kernel's watch, and its `unwatch` would
//! end the other's); it is unwatched with its last registration, and the
//! watcher itself (its inotify instance and thread) ends with the last
//! registration of the process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use notify::Watcher;

/// Decides, for one event in the registered folder, whether to notify.
type Filter = Box<dyn Fn(&notify::Event) -> bool + Send + Sync>;

/// One folder a registration listens to.
struct Listener {
    id: u64,
    folder: PathBuf,
    filter: Filter,
    wake: Box<dyn Fn() + Send + Sync>,
}

#[derive(Default)]
struct Listeners {
    all: Vec<Listener>,
    next_id: u64,
}

/// The live watcher and how many listeners each folder has.
struct Shared {
    watcher: notify::RecommendedWatcher,
    listeners: Arc<Mutex<Listeners>>,
    watched: HashMap<PathBuf, usize>,
}

static SHARED: Mutex<Option<Shared>> = Mutex::new(None);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Folders watched for one caller; dropping it ends their watches (the
/// last registration of the process ends the watcher).
pub(crate) struct Registration {
    ids: Vec<(u64, PathBuf)>,
}

impl Registration {
    /// Starts listening to nothing yet.
    pub(super) fn new() -> Self {
        Self { ids: Vec::new() }
    }

    /// Watches `folder` (not recursively): `wake` is called for each event
    /// whose path lies directly in it or is the folder itself (or that names
    /// no path: an error, an overflow) and that `filter` accepts.
    pub(super) fn watch(
        &mut self,
        folder: &Path,
        filter: Filter,
        wake: Box<dyn Fn() + Send + Sync>,
    ) -> notify::Result<()> {
        let mut shared = lock(&SHARED);
        if shared.is_none() {
            let listeners: Arc<Mutex<Listeners>> = Arc::default();
            let heard = listeners.clone();
            let watcher =
                notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                    dispatch(&lock(&heard), event)
                })?;
            *shared = Some(Shared {
                watcher,
                listeners,
                watched: HashMap::new(),
            });
        }
        let state = shared.as_mut().expect("created above");
        let count = state.watched.get(folder).copied().unwrap_or(0);
        // Also when others watch it: the folder now at that path may be a
        // new one (the kernel's watch follows the old one), and watching the
        // same folder again only adds to its watch.
        if let Err(error) = state
            .watcher
            .watch(folder, notify::RecursiveMode::NonRecursive)
        {
            if state.watched.is_empty() {
                *shared = None;
            }
            return Err(error);
        }
        state.watched.insert(folder.to_path_buf(), count + 1);
        let mut listeners = lock(&state.listeners);
        let id = listeners.next_id;
        listeners.next_id += 1;
        listeners.all.push(Listener {
            id,
            folder: folder.to_path_buf(),
            filter,
            wake,
        });
        self.ids.push((id, folder.to_path_buf()));
        Ok(())
    }
}

impl Default for Registration {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut shared = lock(&SHARED);
        let Some(state) = shared.as_mut() else {
            return;
        };
        for (id, folder) in self.ids.drain(..) {
            lock(&state.listeners).all.retain(|l| l.id != id);
            match state.watched.get_mut(&folder) {
                Some(count) if *count > 1 => *count -= 1,
                Some(_) => {
                    state.watched.remove(&folder);
                    let _ = state.watcher.unwatch(&folder);
                }
                None => {}
            }
        }
        if state.watched.is_empty() {
            // The last one: the watcher's inotify instance and thread end.
            *shared = None;
        }
    }
}

/// Calls every listener an event concerns.
fn dispatch(listeners: &Listeners, event: notify::Result<notify::Event>) {
    for listener in &listeners.all {
        let concerned = match &event {
            // An error (a queue overflow) may hide anything: everyone looks.
            Err(_) => true,
            Ok(event) => {
                // The folder itself too: moved or removed (the watch then
                // ends, and the folder at its path is a new one to watch).
                (event.paths.is_empty()
                    || event.paths.iter().any(|p| {
                        p.parent() == Some(listener.folder.as_path()) || *p == listener.folder
                    }))
                    && (listener.filter)(event)
            }
        };
        if concerned {
            (listener.wake)();
        }
    }
}
