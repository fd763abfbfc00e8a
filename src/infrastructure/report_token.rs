//! HMAC-SHA256 report tokens with a per-team secret in
//! `teams/<team>/.member-work-sync/report-token-secret.json` (0600).
//!
//! The secret is created on first use, cached after a successful load only
//! (a failed load is retried next time), and never logged or returned. The
//! file is `{"schemaVersion": 1, "secret": "<at least 32 UTF-16 units>"}`,
//! as the app's own feature writes it (with the user's default mode, often
//! 0644). A secret file is kept and used when it is a regular file with one
//! name, owned by this user, that no other user can write (no group or other
//! write bit), and well formed: its mode is then tightened to 0600 through
//! the handle it was read from, so tokens issued before keep verifying. A
//! link, a FIFO, a file owned by someone else, one others can write, one with
//! another name elsewhere (a hard link: tightening it would chmod a file
//! outside) or a corrupt one is quarantined (kept as `.invalid.<ms>`, the
//! newest few copies, see [`quarantine`]) and replaced. The cache is keyed by
//! the exact team folder name.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::SystemTime;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::clock::epoch_ms;
use super::json_store::quarantine;
use super::lock::StoreLock;
use super::safe_fs::{with_path, Dir, TrustedRoot};
use crate::application::ports::{PortError, ReportTokens};
use crate::domain::names::{MemberName, TeamName};
use crate::domain::time::EpochMs;
use crate::domain::token::{assemble, check_claims, split, TokenCheck, TokenClaims};

type HmacSha256 = Hmac<Sha256>;

/// Shortest secret string accepted from disk.
const MIN_SECRET_CHARS: usize = 32;
/// Largest secret file read.
const MAX_SECRET_FILE_BYTES: u64 = 4096;
/// The secret file's name.
const SECRET_FILE: &str = "report-token-secret.json";
/// The permission bits a secret file is written with, and tightened to.
const SECRET_MODE: u32 = 0o600;
/// Permission bits that make a secret file untrusted: others could write it
/// (and so choose the secret).
#[cfg(unix)]
const OTHERS_WRITE: u32 = 0o022;

/// Issues and verifies tokens with team secrets under `teams_base`.
pub struct HmacReportTokens {
    root: TrustedRoot,
    /// Secrets by exact team folder name.
    secrets: Mutex<HashMap<String, String>>,
}

impl HmacReportTokens {
    /// Tokens for the teams under `teams_base`.
    pub fn new(teams_base: PathBuf) -> Self {
        Self {
            root: TrustedRoot::new(teams_base),
            secrets: Mutex::new(HashMap::new()),
        }
    }

    fn secret_path(&self, team: &TeamName) -> PathBuf {
        self.root
            .join(team.as_str())
            .join(".member-work-sync")
            .join(SECRET_FILE)
    }

    /// The team secret, loading or creating it on first use.
    fn secret(&self, team: &TeamName) -> Result<String, PortError> {
        if let Some(secret) = self
            .secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(team.as_str())
        {
            return Ok(secret.clone());
        }
        let secret = self.load_or_create(team)?;
        self.secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(team.to_string(), secret.clone());
        Ok(secret)
    }

    fn load_or_create(&self, team: &TeamName) -> Result<String, PortError> {
        let path = self.secret_path(team);
        let _lock = StoreLock::acquire(&self.root, &path)?;
        let dir = self.root.create_dir_all(path.parent().unwrap_or(&path))?;
        match read_trusted_secret(&dir) {
            Ok(Some(secret)) => return Ok(secret),
            Ok(None) => {}
            Err(SecretProblem::Untrusted) => {
                let now = epoch_ms(SystemTime::now()).unwrap_or(0);
                quarantine(&self.root, &path, now)?;
            }
            // Out of descriptors, an IO error: the secret may be fine, and
            // replacing it would void every token in use.
            Err(SecretProblem::Io(error)) => return Err(error.into()),
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| PortError::Io(io::Error::other(e.to_string())))?;
        let secret = URL_SAFE_NO_PAD.encode(bytes);
        let mut text = serde_json::to_string_pretty(
            &serde_json::json!({ "schemaVersion": 1, "secret": secret }),
        )
        .map_err(io::Error::other)?;
        text.push('\n');
        dir.write_atomic(SECRET_FILE, text.as_bytes(), SECRET_MODE)?;
        Ok(secret)
    }

    /// HMAC over `message` keyed by the secret string's bytes (any key length is valid for HMAC).
    fn mac(secret: &str, message: &str) -> Option<HmacSha256> {
        let mut mac = <HmacSha256 as Mac>::new_from_slice(secret.as_bytes()).ok()?;
        mac.update(message.as_bytes());
        Some(mac)
    }
}

/// Why the stored secret was not used.
enum SecretProblem {
    /// Not a file to trust (a link, a FIFO, another owner's, writable by
    /// others, hard-linked, corrupt): moved aside and replaced.
    Untrusted,
    /// Could not be read this time: reported, the file left alone.
    Io(io::Error),
}

/// The stored secret if the file is one to trust; `Ok(None)` when there is none.
fn read_trusted_secret(dir: &Dir) -> Result<Option<String>, SecretProblem> {
    use SecretProblem::{Io, Untrusted};
    let file = match dir.open_file(OsStr::new(SECRET_FILE)) {
        Ok(Some(file)) => file,
        Ok(None) => return Ok(None),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::InvalidData | io::ErrorKind::PermissionDenied
            ) =>
        {
            return Err(Untrusted)
        }
        Err(e) => return Err(Io(e)),
    };
    if !trusted_owner_and_mode(&file) {
        return Err(Untrusted);
    }
    let mut bytes = Vec::new();
    (&file)
        .take(MAX_SECRET_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Io)?;
    let secret = parse_secret(&bytes).ok_or(Untrusted)?;
    tighten_mode(&file).map_err(|e| Io(with_path(&dir.path().join(SECRET_FILE), e)))?;
    Ok(Some(secret))
}

/// The secret of a well-formed secret file: `schemaVersion` 1 and a
/// `secret` string of at least [`MIN_SECRET_CHARS`] UTF-16 units (as the
/// app's feature counts a string's length); any other keys are ignored.
fn parse_secret(bytes: &[u8]) -> Option<String> {
    let value = serde_json::from_slice::<Value>(bytes).ok()?;
    let secret = value.get("secret")?.as_str()?;
    // A number equal to 1 (`1.0` too), as JavaScript's `=== 1` compares.
    let well_formed = value.get("schemaVersion").and_then(Value::as_f64) == Some(1.0)
        && secret.encode_utf16().count() >= MIN_SECRET_CHARS;
    well_formed.then(|| secret.to_string())
}

/// Owned by the current user, with one name, writable by nobody else
/// (checked on the open handle, so the file read is the file checked).
#[cfg(unix)]
fn trusted_owner_and_mode(file: &std::fs::File) -> bool {
    use std::os::unix::fs::MetadataExt;
    file.metadata().is_ok_and(|meta| {
        meta.uid() == rustix::process::getuid().as_raw()
            && meta.nlink() == 1
            && meta.mode() & OTHERS_WRITE == 0
    })
}

/// Sets the secret file's mode to 0600 through its open handle (never by
/// path: the name may have been swapped since it was opened); a no-op when
/// it is 0600 already.
#[cfg(unix)]
fn tighten_mode(file: &std::fs::File) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    if file.metadata()?.mode() & 0o7777 != SECRET_MODE {
        rustix::fs::fchmod(file, rustix::fs::Mode::from_raw_mode(SECRET_MODE as _))?;
    }
    Ok(())
}

/// Windows has no owner uid or mode bits to check: the file was already
/// checked to be a regular file (not a link), and it lives in the user's
/// profile, whose inherited ACL admits only the user, SYSTEM and
/// Administrators.
#[cfg(windows)]
fn trusted_owner_and_mode(_file: &std::fs::File) -> bool {
    true
}

/// Nothing to tighten on Windows (no mode bits).
#[cfg(windows)]
fn tighten_mode(_file: &std::fs::File) -> io::Result<()> {
    Ok(())
}

impl ReportTokens for HmacReportTokens {
    fn issue(
        &self,
        team: &TeamName,
        member: &MemberName,
        fingerprint: &str,
        expires_ms: EpochMs,
    ) -> Result<String, PortError> {
        let secret = self.secret(team)?;
        // The claim names the member as its agenda does: normalized.
        let payload =
            TokenClaims::new(team, &member.normalized(), fingerprint, expires_ms).encode();
        let mac = Self::mac(&secret, &payload)
            .ok_or_else(|| PortError::Io(std::io::Error::other("hmac key rejected")))?;
        Ok(assemble(&payload, &mac.finalize().into_bytes()))
    }

    fn verify(
        &self,
        token: Option<&str>,
        team: &TeamName,
        member: &MemberName,
        fingerprint: &str,
        now_ms: EpochMs,
    ) -> Result<TokenCheck, PortError> {
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            return Ok(TokenCheck::Missing);
        };
        let Some(split) = split(token) else {
            return Ok(TokenCheck::Invalid);
        };
        let secret = self.secret(team)?;
        let Some(mac) = Self::mac(&secret, split.encoded_payload) else {
            return Ok(TokenCheck::Invalid);
        };
        // Constant-time comparison of the signature.
        if mac.verify_slice(&split.signature).is_err() {
            return Ok(TokenCheck::Invalid);
        }
        Ok(check_claims(
            split.encoded_payload,
            team,
            &member.normalized(),
            fingerprint,
            now_ms,
        ))
    }
}

#[cfg(test)]
mod tests;
