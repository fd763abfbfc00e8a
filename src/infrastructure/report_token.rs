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

    fn secret_path(&self, team: &str) -> PathBuf {
        self.root
            .join(team)
            .join(".member-work-sync")
            .join(SECRET_FILE)
    }

    /// The team secret, loading or creating it on first use.
    fn secret(&self, team: &str) -> Result<String, PortError> {
        if let Some(secret) = self
            .secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(team)
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

    fn load_or_create(&self, team: &str) -> Result<String, PortError> {
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
        team: &str,
        member: &str,
        fingerprint: &str,
        expires_ms: EpochMs,
    ) -> Result<String, PortError> {
        let secret = self.secret(team)?;
        let payload = TokenClaims::new(team, member, fingerprint, expires_ms).encode();
        let mac = Self::mac(&secret, &payload)
            .ok_or_else(|| PortError::Io(std::io::Error::other("hmac key rejected")))?;
        Ok(assemble(&payload, &mac.finalize().into_bytes()))
    }

    fn verify(
        &self,
        token: Option<&str>,
        team: &str,
        member: &str,
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
            member,
            fingerprint,
            now_ms,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tokens() -> (tempfile::TempDir, HmacReportTokens) {
        let dir = tempfile::tempdir().unwrap();
        let tokens = HmacReportTokens::new(dir.path().to_path_buf());
        (dir, tokens)
    }

    #[test]
    fn issued_tokens_verify_only_for_their_binding() {
        let (_dir, tokens) = tokens();
        let token = tokens.issue("forge", "jack", "fp", 1_000).unwrap();
        assert!(token.starts_with("wrs:v1."));
        assert_eq!(
            tokens
                .verify(Some(&token), "forge", "jack", "fp", 999)
                .unwrap(),
            TokenCheck::Valid
        );
        assert_eq!(
            tokens
                .verify(Some(&token), "forge", "jack", "fp", 1_000)
                .unwrap(),
            TokenCheck::Expired
        );
        assert_eq!(
            tokens
                .verify(Some(&token), "forge", "jill", "fp", 0)
                .unwrap(),
            TokenCheck::Invalid
        );
        assert_eq!(
            tokens
                .verify(Some(&token), "forge", "jack", "fp2", 0)
                .unwrap(),
            TokenCheck::Invalid
        );
        assert_eq!(
            tokens
                .verify(Some(&token), "other", "jack", "fp", 0)
                .unwrap(),
            TokenCheck::Invalid
        );
        assert_eq!(
            tokens.verify(None, "forge", "jack", "fp", 0).unwrap(),
            TokenCheck::Missing
        );
        assert_eq!(
            tokens.verify(Some(""), "forge", "jack", "fp", 0).unwrap(),
            TokenCheck::Missing
        );
        assert_eq!(
            tokens
                .verify(Some(&token[..token.len() - 2]), "forge", "jack", "fp", 0)
                .unwrap(),
            TokenCheck::Invalid
        );
    }

    #[test]
    fn a_token_signed_for_another_member_with_swapped_claims_is_invalid() {
        let (_dir, tokens) = tokens();
        let token = tokens.issue("forge", "jill", "fp", 1_000).unwrap();
        let signature = token.rsplit('.').next().unwrap();
        let forged = format!(
            "wrs:v1.{}.{signature}",
            TokenClaims::new("forge", "jack", "fp", 1_000).encode()
        );
        assert_eq!(
            tokens
                .verify(Some(&forged), "forge", "jack", "fp", 0)
                .unwrap(),
            TokenCheck::Invalid
        );
    }

    #[test]
    fn secret_file_is_private_stable_and_regenerated_when_corrupt() {
        let (dir, tokens) = tokens();
        let token = tokens.issue("forge", "jack", "fp", 1_000).unwrap();
        let path = dir
            .path()
            .join("forge/.member-work-sync/report-token-secret.json");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let stored: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(stored["schemaVersion"], 1);
        assert!(stored["secret"].as_str().unwrap().len() >= 43);
        // A second instance (another app window) reads the same secret.
        let again = HmacReportTokens::new(dir.path().to_path_buf());
        assert_eq!(
            again
                .verify(Some(&token), "forge", "jack", "fp", 0)
                .unwrap(),
            TokenCheck::Valid
        );
        // A corrupt secret is kept aside and replaced; old tokens stop verifying.
        std::fs::write(&path, r#"{"schemaVersion":1,"secret":"short"}"#).unwrap();
        let fresh = HmacReportTokens::new(dir.path().to_path_buf());
        assert_eq!(
            fresh
                .verify(Some(&token), "forge", "jack", "fp", 0)
                .unwrap(),
            TokenCheck::Invalid
        );
        assert_ne!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"schemaVersion":1,"secret":"short"}"#
        );
        assert_eq!(
            quarantined(&path),
            [r#"{"schemaVersion":1,"secret":"short"}"#]
        );
    }

    /// Contents of the quarantined copies beside `path`.
    fn quarantined(path: &std::path::Path) -> Vec<String> {
        let prefix = format!("{SECRET_FILE}.invalid.");
        std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| match std::fs::symlink_metadata(e.path()) {
                Ok(meta) if meta.is_file() => {
                    String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned()
                }
                _ => "<not a file>".into(),
            })
            .collect()
    }

    /// A forged secret that an agent knows, planted as `how` describes.
    fn plant(dir: &std::path::Path, how: &str) -> String {
        use std::os::unix::fs::PermissionsExt;
        let known = "k".repeat(43);
        let text = format!(r#"{{"schemaVersion":1,"secret":"{known}"}}"#);
        let store = dir.join("forge/.member-work-sync");
        std::fs::create_dir_all(&store).unwrap();
        let path = store.join(SECRET_FILE);
        match how {
            "world_writable" | "group_writable" => {
                std::fs::write(&path, &text).unwrap();
                let mode = if how == "world_writable" {
                    0o646
                } else {
                    0o620
                };
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            }
            "hard_link" => {
                let elsewhere = dir.join("elsewhere.json");
                std::fs::write(&elsewhere, &text).unwrap();
                std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o644))
                    .unwrap();
                std::fs::hard_link(&elsewhere, &path).unwrap();
            }
            "symlink" => {
                let elsewhere = dir.join("elsewhere.json");
                std::fs::write(&elsewhere, &text).unwrap();
                std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600))
                    .unwrap();
                std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
            }
            "fifo" => {
                rustix::fs::mkfifoat(
                    rustix::fs::CWD,
                    &path,
                    rustix::fs::Mode::from_raw_mode(0o600),
                )
                .unwrap();
            }
            other => panic!("{other}"),
        }
        known
    }

    #[test]
    fn a_planted_secret_is_never_trusted() {
        for how in [
            "world_writable",
            "group_writable",
            "hard_link",
            "symlink",
            "fifo",
        ] {
            let (dir, tokens) = tokens();
            let known = plant(dir.path(), how);
            let payload = TokenClaims::new("forge", "jack", "fp", 1_000).encode();
            let forged = assemble(
                &payload,
                &HmacReportTokens::mac(&known, &payload)
                    .unwrap()
                    .finalize()
                    .into_bytes(),
            );
            assert_eq!(
                tokens
                    .verify(Some(&forged), "forge", "jack", "fp", 0)
                    .unwrap(),
                TokenCheck::Invalid,
                "{how}"
            );
            let path = dir.path().join("forge/.member-work-sync").join(SECRET_FILE);
            let meta = std::fs::symlink_metadata(&path).unwrap();
            assert!(
                meta.file_type().is_file(),
                "{how}: replaced by a regular file"
            );
            assert_eq!(
                quarantined(&path).len(),
                1,
                "{how}: the planted file kept aside"
            );
            if how == "symlink" || how == "hard_link" {
                use std::os::unix::fs::PermissionsExt;
                let elsewhere = dir.path().join("elsewhere.json");
                let text = std::fs::read_to_string(&elsewhere).unwrap();
                assert!(text.contains(&known), "{how}: the other file is untouched");
                let mode = std::fs::metadata(&elsewhere).unwrap().permissions().mode();
                let before = if how == "symlink" { 0o600 } else { 0o644 };
                assert_eq!(
                    mode & 0o777,
                    before,
                    "{how}: the other file is never chmod'ed"
                );
            }
        }
    }

    /// The secret file as the app's own feature writes it: pretty-printed,
    /// no final newline, the user's default mode (0644 under umask 022, 0664
    /// under 002 is refused: the group could write it). It is kept, tokens
    /// signed with it before still verify, and its mode becomes 0600.
    #[cfg(unix)]
    #[test]
    fn a_secret_written_by_the_app_is_kept_and_tightened_to_0600() {
        use std::os::unix::fs::PermissionsExt;
        for mode in [0o644, 0o640, 0o604, 0o600, 0o400, 0o444] {
            let (dir, tokens) = tokens();
            let store = dir.path().join("forge/.member-work-sync");
            std::fs::create_dir_all(&store).unwrap();
            let path = store.join(SECRET_FILE);
            let secret = "R0-o_9".repeat(8);
            let text = format!("{{\n  \"schemaVersion\": 1,\n  \"secret\": \"{secret}\"\n}}");
            std::fs::write(&path, &text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let payload = TokenClaims::new("forge", "jack", "fp", 1_000).encode();
            let signed = assemble(
                &payload,
                &HmacReportTokens::mac(&secret, &payload)
                    .unwrap()
                    .finalize()
                    .into_bytes(),
            );
            assert_eq!(
                tokens
                    .verify(Some(&signed), "forge", "jack", "fp", 0)
                    .unwrap(),
                TokenCheck::Valid,
                "{mode:o}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "{mode:o}");
            let now = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(now & 0o7777, 0o600, "{mode:o}");
            assert!(quarantined(&path).is_empty(), "{mode:o}");
        }
    }

    /// What counts as well formed is what the app's feature accepts:
    /// `schemaVersion` 1 and a secret of at least 32 UTF-16 units.
    #[test]
    fn secret_files_are_well_formed_as_the_app_reads_them() {
        let cases = [
            (
                r#"{"schemaVersion":1,"secret":"0123456789abcdef0123456789abcdef"}"#,
                true,
            ),
            (
                r#"{"schemaVersion":1,"secret":"0123456789abcdef0123456789abcde"}"#,
                false,
            ),
            (
                r#"{"secret":"0123456789abcdef0123456789abcdef","schemaVersion":1,"x":2}"#,
                true,
            ),
            (
                r#"{"schemaVersion":1.0,"secret":"0123456789abcdef0123456789abcdef"}"#,
                true,
            ),
            (
                r#"{"schemaVersion":"1","secret":"0123456789abcdef0123456789abcdef"}"#,
                false,
            ),
            (
                r#"{"schemaVersion":2,"secret":"0123456789abcdef0123456789abcdef"}"#,
                false,
            ),
            // 16 emoji: 64 bytes, 32 UTF-16 units; 11 CJK: 33 bytes, 11 units.
            (
                r#"{"schemaVersion":1,"secret":"😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀"}"#,
                true,
            ),
            (
                r#"{"schemaVersion":1,"secret":"秘秘秘秘秘秘秘秘秘秘秘"}"#,
                false,
            ),
            ("", false),
            ("[]", false),
        ];
        for (text, accepted) in cases {
            assert_eq!(parse_secret(text.as_bytes()).is_some(), accepted, "{text}");
        }
    }

    /// Every corrupt secret is renamed aside byte for byte (never
    /// overwritten), its replacement made 0600, and at most the newest
    /// three copies are kept.
    #[cfg(unix)]
    #[test]
    fn a_corrupt_secret_is_kept_aside_not_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let corrupt: [&[u8]; 5] = [
            b"not json",
            b"",
            br#"{"schemaVersion":1,"secret":"short"}"#,
            br#"{"schemaVersion":1,"secret":"0123456789abcdef0123456789abcdef""#,
            b"\xff\xfe{}",
        ];
        for mode in [0o600, 0o644] {
            let (dir, tokens) = tokens();
            let token = tokens.issue("forge", "jack", "fp", 1_000).unwrap();
            let path = dir.path().join("forge/.member-work-sync").join(SECRET_FILE);
            let mut kept = Vec::new();
            for bytes in corrupt {
                std::fs::write(&path, bytes).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
                let fresh = HmacReportTokens::new(dir.path().to_path_buf());
                assert_eq!(
                    fresh
                        .verify(Some(&token), "forge", "jack", "fp", 0)
                        .unwrap(),
                    TokenCheck::Invalid
                );
                kept.push(String::from_utf8_lossy(bytes).into_owned());
                let mut aside = quarantined(&path);
                aside.sort();
                let mut newest: Vec<String> = kept.iter().rev().take(3).cloned().collect();
                newest.sort();
                assert_eq!(aside, newest, "{mode:o}");
                let replaced = std::fs::metadata(&path).unwrap().permissions().mode();
                assert_eq!(replaced & 0o7777, 0o600);
                assert!(parse_secret(&std::fs::read(&path).unwrap()).is_some());
            }
        }
    }

    // Case-sensitive file systems only: elsewhere the two names are one folder.
    #[cfg(target_os = "linux")]
    #[test]
    fn teams_differing_only_in_case_have_their_own_secrets() {
        let (dir, tokens) = tokens();
        let upper = tokens.issue("Forge", "jack", "fp", 1_000).unwrap();
        let lower = tokens.issue("forge", "jack", "fp", 1_000).unwrap();
        assert_ne!(
            upper.rsplit('.').next(),
            lower.rsplit('.').next(),
            "one cached secret signed both"
        );
        assert!(dir
            .path()
            .join("Forge/.member-work-sync")
            .join(SECRET_FILE)
            .exists());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_tokens_are_never_valid(token in ".{0,200}", member in "[a-z]{1,8}") {
            let (_dir, tokens) = tokens();
            prop_assert_ne!(tokens.verify(Some(&token), "forge", &member, "fp", 0).unwrap(), TokenCheck::Valid);
        }

        #[test]
        fn tokens_verify_only_for_exactly_their_binding(
            member in "[a-z]{1,6}", other in "[a-z]{1,6}", fp in "[a-f0-9]{1,8}", flip in 0usize..400, now in 0i64..2_000,
        ) {
            let (_dir, tokens) = tokens();
            let token = tokens.issue("forge", &member, &fp, 1_000).unwrap();
            let expected = if now < 1_000 { TokenCheck::Valid } else { TokenCheck::Expired };
            prop_assert_eq!(tokens.verify(Some(&token), "forge", &member, &fp, now).unwrap(), expected);
            if other != member {
                prop_assert_eq!(tokens.verify(Some(&token), "forge", &other, &fp, now).unwrap(), TokenCheck::Invalid);
            }
            // Flip one bit anywhere: never valid.
            let mut bytes = token.clone().into_bytes();
            let i = flip % bytes.len();
            bytes[i] ^= 1;
            if let Ok(mutated) = String::from_utf8(bytes) {
                if mutated != token {
                    prop_assert_ne!(tokens.verify(Some(&mutated), "forge", &member, &fp, now).unwrap(), TokenCheck::Valid);
                }
            }
        }
    }
}
