//! HMAC-SHA256 report tokens with a per-team secret in
//! `teams/<team>/.member-work-sync/report-token-secret.json` (0600).
//!
//! The secret is created on first use, regenerated when corrupt, cached after
//! a successful load only (a failed load is retried next time), and never
//! logged or returned.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::json_store::{read_capped, Capped};
use super::lock::StoreLock;
use crate::application::ports::{PortError, ReportTokens};
use crate::domain::names::normalize_member_name;
use crate::domain::time::EpochMs;
use crate::domain::token::{assemble, check_claims, split, TokenCheck, TokenClaims};

type HmacSha256 = Hmac<Sha256>;

/// Shortest secret string accepted from disk.
const MIN_SECRET_CHARS: usize = 32;

/// Issues and verifies tokens with team secrets under `teams_base`.
pub struct HmacReportTokens {
    teams_base: PathBuf,
    secrets: Mutex<HashMap<String, String>>,
}

impl HmacReportTokens {
    /// Tokens for the teams under `teams_base`.
    pub fn new(teams_base: PathBuf) -> Self {
        Self {
            teams_base,
            secrets: Mutex::new(HashMap::new()),
        }
    }

    fn secret_path(&self, team: &str) -> PathBuf {
        self.teams_base
            .join(team)
            .join(".member-work-sync")
            .join("report-token-secret.json")
    }

    /// The team secret, loading or creating it on first use.
    fn secret(&self, team: &str) -> Result<String, PortError> {
        let key = normalize_member_name(team);
        if let Some(secret) = self
            .secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(secret.clone());
        }
        let secret = self.load_or_create(team)?;
        self.secrets
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, secret.clone());
        Ok(secret)
    }

    fn load_or_create(&self, team: &str) -> Result<String, PortError> {
        let path = self.secret_path(team);
        let _lock = StoreLock::acquire(&path)?;
        if let Some(Capped::Bytes(bytes)) = read_capped(&path, 4096)? {
            let stored = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| {
                let secret = v.get("secret")?.as_str()?.to_string();
                (v.get("schemaVersion") == Some(&Value::from(1))
                    && secret.len() >= MIN_SECRET_CHARS)
                    .then_some(secret)
            });
            if let Some(secret) = stored {
                return Ok(secret);
            }
        }
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| PortError::Io(std::io::Error::other(e.to_string())))?;
        let secret = URL_SAFE_NO_PAD.encode(bytes);
        let mut text = serde_json::to_string_pretty(
            &serde_json::json!({ "schemaVersion": 1, "secret": secret }),
        )
        .map_err(std::io::Error::other)?;
        text.push('\n');
        let staged = super::atomic_file::stage(&path, text.as_bytes())?;
        restrict_permissions(&staged)?;
        staged.commit(&path)?;
        Ok(secret)
    }

    /// HMAC over `message` keyed by the secret string's bytes (any key length is valid for HMAC).
    fn mac(secret: &str, message: &str) -> Option<HmacSha256> {
        let mut mac = <HmacSha256 as Mac>::new_from_slice(secret.as_bytes()).ok()?;
        mac.update(message.as_bytes());
        Some(mac)
    }
}

#[cfg(unix)]
fn restrict_permissions(staged: &super::atomic_file::StagedFile) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    staged.set_permissions(std::fs::Permissions::from_mode(0o600))
}

#[cfg(not(unix))]
fn restrict_permissions(_staged: &super::atomic_file::StagedFile) -> std::io::Result<()> {
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
    ) -> TokenCheck {
        let Some(token) = token.filter(|t| !t.is_empty()) else {
            return TokenCheck::Missing;
        };
        let Some(split) = split(token) else {
            return TokenCheck::Invalid;
        };
        let Ok(secret) = self.secret(team) else {
            return TokenCheck::Invalid;
        };
        let Some(mac) = Self::mac(&secret, split.encoded_payload) else {
            return TokenCheck::Invalid;
        };
        // Constant-time comparison of the signature.
        if mac.verify_slice(&split.signature).is_err() {
            return TokenCheck::Invalid;
        }
        check_claims(split.encoded_payload, team, member, fingerprint, now_ms)
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
            tokens.verify(Some(&token), "forge", "jack", "fp", 999),
            TokenCheck::Valid
        );
        assert_eq!(
            tokens.verify(Some(&token), "forge", "jack", "fp", 1_000),
            TokenCheck::Expired
        );
        assert_eq!(
            tokens.verify(Some(&token), "forge", "jill", "fp", 0),
            TokenCheck::ForeignIdentity
        );
        assert_eq!(
            tokens.verify(Some(&token), "forge", "jack", "fp2", 0),
            TokenCheck::Invalid
        );
        assert_eq!(
            tokens.verify(Some(&token), "other", "jack", "fp", 0),
            TokenCheck::Invalid
        );
        assert_eq!(
            tokens.verify(None, "forge", "jack", "fp", 0),
            TokenCheck::Missing
        );
        assert_eq!(
            tokens.verify(Some(""), "forge", "jack", "fp", 0),
            TokenCheck::Missing
        );
        assert_eq!(
            tokens.verify(Some(&token[..token.len() - 2]), "forge", "jack", "fp", 0),
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
            tokens.verify(Some(&forged), "forge", "jack", "fp", 0),
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
            again.verify(Some(&token), "forge", "jack", "fp", 0),
            TokenCheck::Valid
        );
        // A corrupt secret is replaced; old tokens stop verifying.
        std::fs::write(&path, r#"{"schemaVersion":1,"secret":"short"}"#).unwrap();
        let fresh = HmacReportTokens::new(dir.path().to_path_buf());
        assert_eq!(
            fresh.verify(Some(&token), "forge", "jack", "fp", 0),
            TokenCheck::Invalid
        );
        assert_ne!(
            std::fs::read_to_string(&path).unwrap(),
            r#"{"schemaVersion":1,"secret":"short"}"#
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn random_tokens_are_never_valid(token in ".{0,200}", member in "[a-z]{1,8}") {
            let (_dir, tokens) = tokens();
            prop_assert_ne!(tokens.verify(Some(&token), "forge", &member, "fp", 0), TokenCheck::Valid);
        }

        #[test]
        fn tokens_verify_only_for_exactly_their_binding(
            member in "[a-z]{1,6}", other in "[a-z]{1,6}", fp in "[a-f0-9]{1,8}", flip in 0usize..400, now in 0i64..2_000,
        ) {
            let (_dir, tokens) = tokens();
            let token = tokens.issue("forge", &member, &fp, 1_000).unwrap();
            let expected = if now < 1_000 { TokenCheck::Valid } else { TokenCheck::Expired };
            prop_assert_eq!(tokens.verify(Some(&token), "forge", &member, &fp, now), expected);
            if other != member {
                prop_assert_eq!(tokens.verify(Some(&token), "forge", &other, &fp, now), TokenCheck::ForeignIdentity);
            }
            // Flip one bit anywhere: never valid.
            let mut bytes = token.clone().into_bytes();
            let i = flip % bytes.len();
            bytes[i] ^= 1;
            if let Ok(mutated) = String::from_utf8(bytes) {
                if mutated != token {
                    prop_assert_ne!(tokens.verify(Some(&mutated), "forge", &member, &fp, now), TokenCheck::Valid);
                }
            }
        }
    }
}
