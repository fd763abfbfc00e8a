//! Whether a process still runs, for files that carry their writer's pid (an
//! inbox lock, a Stop hook's temp file).

#[cfg(unix)]
use std::io;

/// Whether `pid` names a running process, by `kill(pid, 0)` as Node's
/// `process.kill(pid, 0)` does: only "no such process" counts as dead.
#[cfg(unix)]
pub(crate) fn process_alive(pid: u32) -> bool {
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

/// Whether `pid` names a running process: one that can be opened and has
/// not exited. Only "no such process" (`ERROR_INVALID_PARAMETER` from
/// `OpenProcess`) or an exit code counts as dead; a process we may not open
/// (another user's) counts as running.
#[cfg(windows)]
pub(crate) fn process_alive(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, ERROR_INVALID_PARAMETER, STILL_ACTIVE};
    use windows_sys::Win32::System::Threading::{
        GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    // Pid 0 is the idle process, never a writer: not ours to judge (as on Unix).
    if pid == 0 {
        return true;
    }
    // SAFETY: OpenProcess takes plain values; a null handle means failure.
    let handle = unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid) };
    if handle.is_null() {
        return std::io::Error::last_os_error().raw_os_error()
            != Some(ERROR_INVALID_PARAMETER as i32);
    }
    let mut code = 0u32;
    // SAFETY: `handle` is the valid process handle opened above and `code`
    // a live u32; the handle is closed exactly once.
    unsafe {
        let queried = GetExitCodeProcess(handle, &mut code) != 0;
        CloseHandle(handle);
        !queried || code == STILL_ACTIVE as u32
    }
}

/// Without a liveness check every process counts as running: callers fall
/// back on their age rules.
#[cfg(not(any(unix, windows)))]
pub(crate) fn process_alive(_pid: u32) -> bool {
    true
}
