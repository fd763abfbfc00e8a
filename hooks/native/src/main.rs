//! `turn-settled-hook-v1`: the runtime Stop hook as a native executable.
//!
//! Usage: `turn-settled-hook-v1 <spoolRoot> <claude|codex|opencode> [maxBytes]`.
//!
//! The same job and the same observable results as
//! `hooks/turn-settled-hook-v1.sh`, without starting any other program (the
//! script's `cat` and `mv` each cost about one `sh -c :`): stdin (the
//! provider's hook payload, at most `maxBytes + 1` bytes of it kept) goes to
//! a hidden temp file `<spoolRoot>/incoming/.turn-settled.<pid>.<n>`, created
//! exclusively, which is then renamed, never over an existing file, to
//! `<YYYYMMDDTHHMMSSZ>-<pid>-<n>.<provider>.json` for the app to drain.
//!
//! It never prints, never waits on a lock, never touches the network and
//! always exits 0: a broken spool must never break the agent. Any other
//! arguments, an empty payload, a missing spool or a failed write publish
//! nothing; stdin is always read to its end so the writer never gets a
//! broken pipe.

mod capture;
mod request;
mod stamp;

use std::io::Read;

fn main() {
    // A panic (there is none to expect) must neither print nor change the
    // exit status: the message hook is silenced and the unwind caught.
    std::panic::set_hook(Box::new(|_| {}));
    let _ = std::panic::catch_unwind(run);
    std::process::exit(0);
}

fn run() {
    capture::prepare_process();
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match request::Request::parse(&args) {
        Some(request) => capture::capture(&request),
        None => drain_stdin(),
    }
}

/// Reads stdin to its end and discards it: the writer may still be sending,
/// and reading it away spares it a broken pipe.
pub(crate) fn drain_stdin() {
    drain(&mut std::io::stdin().lock());
}

/// Reads `input` to its end and discards it.
pub(crate) fn drain(input: &mut impl Read) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match input.read(&mut buffer) {
            Ok(0) => return,
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}
