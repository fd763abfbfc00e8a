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
/// when it was opened: room for them is made at once, so a whole payload
/// takes one read (and one to see its end) instead of a read per doubling.
fn read_bounded(file: File, size: u64) -> ClaimContent {
    let room = size.min(MAX_PAYLOAD_BYTES + 1) as usize + 1;
    let mut bytes = Vec::with_capacity(room);
    match file.take(MAX_PAYLOAD_BYTES + 1).read_to_end(&mut bytes) {
        Err(e) => ClaimContent::Transient(e.to_string()),
        // The hook keeps at least the first 256 KiB + 1 byte of a longer
        // payload (up to whole 512-byte blocks of its file size limit).
        Ok(_) if bytes.len() as u64 > MAX_PAYLOAD_BYTES => ClaimContent::Truncated(bytes),
        Ok(0) => ClaimContent::Invalid("payload_missing"),
        Ok(_) => ClaimContent::Payload(bytes),
    }
}
