//! One capture: stdin, bounded, into a temp file in `incoming/`, renamed to
//! its final name when complete. Every failure publishes nothing.

use std::fs::File;
use std::io::{self, Read, Write};
use std::time::SystemTime;

#[cfg(unix)]
#[path = "incoming_unix.rs"]
mod incoming;
#[cfg(windows)]
#[path = "incoming_windows.rs"]
mod incoming;

use crate::drain;
use crate::request::Request;
pub use incoming::prepare_process;
use incoming::Incoming;

/// Temp names tried, `.turn-settled.<pid>.0` to `.7` (the script's count):
/// leftovers of a crashed hook with the same pid are skipped.
const TEMP_ATTEMPTS: u32 = 8;
/// Final names tried past the temp file's suffix when one is taken.
const NAME_ATTEMPTS: u32 = 64;
/// Bytes of the first read, the one made before anything on disk is
/// touched: a pipe's usual capacity, so a usual Stop payload is whole in it.
const BLOCK: usize = 64 * 1024;

/// How the copy of stdin ended.
enum Copied {
    /// Input ended; all of it was kept.
    Whole,
    /// `max_bytes + 1` bytes were kept; the rest of stdin is still unread.
    Oversized,
}

/// Captures stdin for `request`; publishes nothing on any failure.
///
/// The first block of stdin is read before anything on disk is touched: an
/// empty payload, which publishes nothing, then costs one read and no file
/// call at all (creating a temp file only to remove it again was the
/// costliest thing this hook did, an inode allocated and freed).
pub fn capture(request: &Request) {
    let mut buffer = vec![0u8; BLOCK];
    let limit = request.max_bytes.saturating_add(1);
    let mut stdin = io::stdin().lock();
    let first = match read_block(&mut stdin, &mut buffer, limit) {
        Ok(0) => return,
        Ok(read) => read,
        Err(_) => return drain(&mut stdin),
    };
    let Ok(dir) = Incoming::open(&request.spool_root) else {
        return drain(&mut stdin);
    };
    let pid = std::process::id();
    let Some((suffix, temp_name, file)) = (0..TEMP_ATTEMPTS)
        .find_map(|n| {
            let name = format!(".turn-settled.{pid}.{n}");
            match dir.create_temp(&name) {
                Ok(file) => Some(Ok((n, name, file))),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => None,
                Err(error) => Some(Err(error)),
            }
        })
        .and_then(Result::ok)
    else {
        return drain(&mut stdin);
    };
    let copied = copy_bounded(&mut stdin, file, &buffer, first, limit);
    let oversized = matches!(copied, Ok(Copied::Oversized));
    let publish = match copied {
        Err(_) => None,
        Ok(_) => crate::stamp::stamp(SystemTime::now()),
    };
    match publish {
        Some(stamp) => publish_as(&dir, &temp_name, &stamp, pid, suffix, request.provider),
        None => {
            let _ = dir.remove(&temp_name);
        }
    }
    // After a failure or an oversized payload, stdin is not at its end yet.
    if oversized || copied.is_err() {
        drain(&mut stdin);
    }
}

/// Reads at most `limit` bytes (and at most one buffer) of `input` into
/// `buffer`; 0 is the input's end.
fn read_block(input: &mut impl Read, buffer: &mut [u8], limit: u64) -> io::Result<usize> {
    let room = usize::try_from(limit)
        .unwrap_or(usize::MAX)
        .min(buffer.len());
    loop {
        match input.read(&mut buffer[..room]) {
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Writes the `first` bytes already in `buffer` to `file`, then copies
/// `input` after them until its end or `limit` bytes in all; an error from
/// either side (a full disk, a file size limit) is an error.
///
/// The rest goes through `io::copy`, which on Linux moves it inside the
/// kernel (`copy_file_range` from a file, `splice` from a pipe): a 1 MiB
/// payload costs a few calls, as a plain `cat > file` does, not 16 reads
/// and 16 writes. Elsewhere it reads straight into the writer's buffer, one
/// [`BLOCK`] a call.
fn copy_bounded(
    input: &mut impl Read,
    file: File,
    buffer: &[u8],
    first: usize,
    limit: u64,
) -> io::Result<Copied> {
    let mut file = io::BufWriter::with_capacity(BLOCK, file);
    file.write_all(&buffer[..first])?;
    let kept = first as u64;
    let rest = if kept == limit {
        0
    } else {
        io::copy(&mut input.take(limit - kept), &mut file)?
    };
    file.flush()?;
    if kept + rest == limit {
        Ok(Copied::Oversized)
    } else {
        Ok(Copied::Whole)
    }
}

/// Renames the temp file to `<stamp>-<pid>-<n>.<provider>.json`, `n` from
/// the temp file's suffix up, never over an existing file; removes it when
/// no name can be had.
fn publish_as(dir: &Incoming, temp_name: &str, stamp: &str, pid: u32, suffix: u32, provider: &str) {
    for n in suffix..suffix + NAME_ATTEMPTS {
        let name = format!("{stamp}-{pid}-{n}.{provider}.json");
        match dir.rename_new(temp_name, &name) {
            Ok(()) => return,
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(_) => break,
        }
    }
    let _ = dir.remove(temp_name);
}
