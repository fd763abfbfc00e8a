//! Reading a claimed payload.

use std::fs::File;
use std::io::{ErrorKind, Read};

use crate::application::turn_settled::ClaimContent;
use crate::domain::time::EpochMs;
use crate::domain::turn_settled::MAX_PAYLOAD_BYTES;
use crate::infrastructure::safe_fs::Dir;

/// The payload of the claimed file `name` in `processing` and the file's
/// modification time.
///
/// Only a regular file is read (opened without following a link and without
/// blocking): a FIFO would block the drain and a link could point anywhere,
/// so both (and a folder or socket) go to `invalid/` as `payload_not_a_file`;
/// a file this user may not read goes there as `payload_unreadable` instead
/// of failing every drain for good. Other errors are transient: the claim is
/// released for a later drain.
pub(super) fn read_payload(processing: &Dir, name: &str) -> (ClaimContent, Option<EpochMs>) {
    // Size and time from the `fstat` that found it a regular file: no
    // second call per payload.
    let (file, meta) = match processing.open_file_meta(name) {
        Ok(Some(opened)) => opened,
        Ok(None) => {
            let gone = format!(
                "{}: claimed file vanished",
                processing.path().join(name).display()
            );
            return (ClaimContent::Transient(gone), None);
        }
        // The boundary's error for a link, FIFO, folder or socket.
        Err(e) if e.kind() == ErrorKind::InvalidData => {
            return (ClaimContent::Invalid("payload_not_a_file"), None)
        }
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            return (ClaimContent::Invalid("payload_unreadable"), None)
        }
        Err(e) => return (ClaimContent::Transient(e.to_string()), None),
    };
    // (A time before 1970 is no time, as `epoch_ms` of it always was.)
    let modified = (meta.modified_ms >= 0).then_some(meta.modified_ms);
    (read_bounded(file, meta.len), modified)
}

/// At most [`MAX_PAYLOAD_BYTES`] + 1 bytes of `file`, whose size was `size`
/// when it was opened: room for the size seen and one byte more (at most
/// the bound) is made at once, so a whole payload takes one read. A
/// regular file's read returns less than asked only at its end, so a first
/// read that leaves room unfilled has seen the end (no second read to find
/// it); one that fills the room (the file grew since) reads on to the bound.
fn read_bounded(mut file: File, size: u64) -> ClaimContent {
    let bound = MAX_PAYLOAD_BYTES as usize + 1;
    let room = size.min(MAX_PAYLOAD_BYTES) as usize + 1;
    let mut bytes = vec![0; room];
    let first = loop {
        match file.read(&mut bytes) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            other => break other,
        }
    };
    let read = first.and_then(|n| {
        bytes.truncate(n);
        if n < room {
            return Ok(());
        }
        let left = bound.saturating_sub(n) as u64;
        file.take(left).read_to_end(&mut bytes).map(drop)
    });
    match read {
        Err(e) => ClaimContent::Transient(e.to_string()),
        // The hook keeps at least the first 256 KiB + 1 byte of a longer
        // payload (up to whole 512-byte blocks of its file size limit).
        Ok(()) if bytes.len() as u64 > MAX_PAYLOAD_BYTES => ClaimContent::Truncated(bytes),
        Ok(()) if bytes.is_empty() => ClaimContent::Invalid("payload_missing"),
        Ok(()) => ClaimContent::Payload(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// Whatever the size `fstat` gave against the bytes there (the same, a
    /// file grown or shrunk since), the bytes read are those of the file up
    /// to the bound, and past the bound the payload is truncated.
    #[test]
    fn a_payload_is_read_whole_up_to_the_bound_whatever_size_was_seen() {
        let bound = MAX_PAYLOAD_BYTES as usize;
        let cases: [(usize, u64); 7] = [
            (0, 0),
            (10, 10),
            (10, 4),
            (10, 40),
            (bound, bound as u64),
            (bound + 1, 3),
            (bound + 700, (bound + 700) as u64),
        ];
        for (len, seen) in cases {
            let mut file = tempfile::tempfile().unwrap();
            let written: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            file.write_all(&written).unwrap();
            std::io::Seek::rewind(&mut file).unwrap();
            let want = match len {
                0 => ClaimContent::Invalid("payload_missing"),
                n if n > bound => ClaimContent::Truncated(written[..=bound].to_vec()),
                _ => ClaimContent::Payload(written),
            };
            assert_eq!(read_bounded(file, seen), want, "{len} bytes, {seen} seen");
        }
    }
}
