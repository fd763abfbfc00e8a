//! Report tokens: `wrs:v1.<b64url payload>.<b64url signature>`.
//!
//! This module owns the wire format and the claim checks; signing with the
//! team secret (HMAC-SHA256) is done by the infrastructure that holds it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::names::{MemberName, TeamName};
use super::time::{format_iso, lease_holds, parse_iso, EpochMs};

/// Token prefix (the first dot-separated part).
const TOKEN_PREFIX: &str = "wrs:v1";
/// Validity of a token from its issue time.
pub(crate) const TOKEN_TTL_MS: EpochMs = 15 * 60 * 1000;
/// Longest token accepted for verification; anything longer is invalid unread.
const MAX_TOKEN_BYTES: usize = 4096;

/// What a token vouches for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct TokenClaims {
    /// Always 1; a token of any other version is invalid.
    pub version: u8,
    /// Team the token was issued for.
    pub team_name: String,
    /// Member the token was issued for.
    pub member_name: String,
    /// Agenda fingerprint at issue time.
    pub agenda_fingerprint: String,
    /// When the token stops being accepted (ISO-8601 UTC).
    pub expires_at: String,
}

impl TokenClaims {
    /// Claims for a token expiring at `expires_ms`.
    pub(crate) fn new(
        team_name: &TeamName,
        member_name: &MemberName,
        agenda_fingerprint: &str,
        expires_ms: EpochMs,
    ) -> Self {
        Self {
            version: 1,
            team_name: team_name.to_string(),
            member_name: member_name.to_string(),
            agenda_fingerprint: agenda_fingerprint.to_string(),
            expires_at: format_iso(expires_ms),
        }
    }

    /// The base64url payload part, which is also the signed message.
    pub(crate) fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(self).unwrap_or_default())
    }
}

/// Assembles a token from its encoded payload and raw signature.
pub(crate) fn assemble(encoded_payload: &str, signature: &[u8]) -> String {
    format!(
        "{TOKEN_PREFIX}.{encoded_payload}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    )
}

/// A token split into its parts, signature not yet checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitToken<'a> {
    /// The signed message.
    pub encoded_payload: &'a str,
    /// Decoded signature bytes.
    pub signature: Vec<u8>,
}

/// Splits `wrs:v1.<payload>.<signature>`; `None` for anything else.
pub(crate) fn split(token: &str) -> Option<SplitToken<'_>> {
    if token.len() > MAX_TOKEN_BYTES {
        return None;
    }
    let mut parts = token.split('.');
    let (Some(prefix), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if prefix != TOKEN_PREFIX || payload.is_empty() {
        return None;
    }
    Some(SplitToken {
        encoded_payload: payload,
        signature: URL_SAFE_NO_PAD.decode(signature).ok()?,
    })
}

/// Outcome of verifying a token against a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCheck {
    /// Signed for exactly this team, member and fingerprint, and unexpired.
    Valid,
    /// No token given.
    Missing,
    /// Malformed, bad signature, bad claims, or issued for another team,
    /// member or fingerprint (a member reporting with another member's
    /// correctly signed token lands here).
    Invalid,
    /// Well-formed and correctly signed, but past its expiry.
    Expired,
}

impl TokenCheck {
    /// Wire spelling (`missing` / `invalid` / `expired`; `valid`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Valid => "valid",
            Self::Missing => "missing",
            Self::Invalid => "invalid",
            Self::Expired => "expired",
        }
    }
}

/// Checks already signature-verified claims against the request (exact match).
pub(crate) fn check_claims(
    encoded_payload: &str,
    team_name: &TeamName,
    member_name: &MemberName,
    agenda_fingerprint: &str,
    now_ms: EpochMs,
) -> TokenCheck {
    let Some(claims) = URL_SAFE_NO_PAD
        .decode(encoded_payload)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<TokenClaims>(&bytes).ok())
    else {
        return TokenCheck::Invalid;
    };
    if claims.version != 1 {
        return TokenCheck::Invalid;
    }
    if claims.team_name != team_name.as_str()
        || claims.member_name != member_name.as_str()
        || claims.agenda_fingerprint != agenda_fingerprint
    {
        return TokenCheck::Invalid;
    }
    match parse_iso(&claims.expires_at) {
        Some(expires) if lease_holds(expires, now_ms, TOKEN_TTL_MS) => TokenCheck::Valid,
        Some(_) => TokenCheck::Expired,
        None => TokenCheck::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(name: &str) -> TeamName {
        TeamName::parse(name).unwrap()
    }

    fn member(name: &str) -> MemberName {
        MemberName::parse(name).unwrap()
    }

    #[test]
    fn split_accepts_only_the_documented_shape() {
        let claims = TokenClaims::new(&team("forge"), &member("jack"), "agenda:v1:x", 10);
        let token = assemble(&claims.encode(), b"sig");
        let split = split(&token).unwrap();
        assert_eq!(split.encoded_payload, claims.encode());
        assert_eq!(split.signature, b"sig");
        assert!(!token.contains('='), "no base64 padding");
        for bad in [
            "",
            "wrs:v1",
            "wrs:v1.a",
            "wrs:v1:a.b",
            "wrs:v2.a.b",
            "wrs:v1.a.b.c",
            "wrs:v1..YQ",
            "wrs:v1.a.!!",
        ] {
            assert_eq!(super::split(bad), None, "{bad}");
        }
    }

    #[test]
    fn claims_must_match_exactly_and_be_unexpired() {
        let payload = TokenClaims::new(&team("forge"), &member("jack"), "fp", 1_000).encode();
        assert_eq!(
            check_claims(&payload, &team("forge"), &member("jack"), "fp", 999),
            TokenCheck::Valid
        );
        assert_eq!(
            check_claims(&payload, &team("forge"), &member("jack"), "fp", 1_000),
            TokenCheck::Expired
        );
        assert_eq!(
            check_claims(&payload, &team("forge"), &member("Jack"), "fp", 0),
            TokenCheck::Invalid
        );
        assert_eq!(
            check_claims(&payload, &team("other"), &member("jack"), "fp", 0),
            TokenCheck::Invalid
        );
        assert_eq!(
            check_claims(&payload, &team("forge"), &member("jack"), "fp2", 0),
            TokenCheck::Invalid
        );
        assert_eq!(
            check_claims("bm90IGpzb24", &team("forge"), &member("jack"), "fp", 0),
            TokenCheck::Invalid
        );
    }
}
