//! Whether a process still runs, for files that carry their writer's pid (an
//! inbox lock, a Stop hook's temp file).

#[cfg(unix)]
use std::io;

/// Whether `pid` names a running process, by `kill(pid, 0)` as Node's
/// `process.kill(pid, 0)` does: only "no such process" counts as dead.
#[cfg(unix)]
pub fn process_alive(pid: u32) -> bool {
    // A pid beyond pid_t is not ours to judge; never pass 0 or -1 to kill.
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 delivers nothing; kill only checks existence and permission.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Without a portable liveness check every process counts as running: callers
/// fall back on their age rules.
#[cfg(not(unix))]
pub fn process_alive(_pid: u32) -> bool {
    true
}
