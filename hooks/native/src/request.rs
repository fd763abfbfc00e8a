//! The hook's arguments: `<spoolRoot> <claude|codex|opencode> [maxBytes]`,
//! read exactly as the script reads them.

use std::ffi::OsString;
use std::path::PathBuf;

/// The bound when `maxBytes` is missing or not a plain number (the addon's
/// `MAX_PAYLOAD_BYTES`, 256 KiB).
pub const DEFAULT_MAX_BYTES: u64 = 262_144;

/// Longest `maxBytes` accepted, in digits: below 10^13, like the script.
const MAX_DIGITS: usize = 13;

/// One capture to make.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    /// The spool root; payloads go to its `incoming/`.
    pub spool_root: PathBuf,
    /// `claude`, `codex` or `opencode`: the name's provider part.
    pub provider: &'static str,
    /// Most payload bytes that count as fitting; one more is kept of a
    /// larger payload so the drainer can tell it is oversized.
    pub max_bytes: u64,
}

impl Request {
    /// The request `args` (without the program name) make, `None` when
    /// there is nothing to capture: an unknown provider or an empty spool
    /// root. A `maxBytes` that is not a plain number falls back to
    /// [`DEFAULT_MAX_BYTES`].
    pub fn parse(args: &[OsString]) -> Option<Request> {
        let provider = match args.get(1)?.to_str()? {
            "claude" => "claude",
            "codex" => "codex",
            "opencode" => "opencode",
            _ => return None,
        };
        let spool_root = args.first().filter(|root| !root.is_empty())?;
        let max_bytes = args
            .get(2)
            .and_then(|value| plain_number(value.to_str()?))
            .unwrap_or(DEFAULT_MAX_BYTES);
        Some(Request {
            spool_root: PathBuf::from(spool_root),
            provider,
            max_bytes,
        })
    }
}

/// Digits only, without a leading zero, fewer than 14 of them: the numbers
/// the script accepts (it would read a leading zero as octal).
fn plain_number(value: &str) -> Option<u64> {
    let digits_only = !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit());
    let leading_zero = value.len() > 1 && value.starts_with('0');
    if !digits_only || leading_zero || value.len() > MAX_DIGITS {
        return None;
    }
    value.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Option<Request> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        Request::parse(&args)
    }

    #[test]
    fn arguments_read_like_the_scripts() {
        let request = |provider, max_bytes| {
            Some(Request {
                spool_root: PathBuf::from("/s"),
                provider,
                max_bytes,
            })
        };
        // (arguments, request)
        let cases: [(&[&str], Option<Request>); 14] = [
            (&["/s", "claude", "100"], request("claude", 100)),
            (&["/s", "codex"], request("codex", DEFAULT_MAX_BYTES)),
            (&["/s", "opencode", "0"], request("opencode", 0)),
            (
                &["/s", "claude", "08"],
                request("claude", DEFAULT_MAX_BYTES),
            ),
            (
                &["/s", "claude", "12x"],
                request("claude", DEFAULT_MAX_BYTES),
            ),
            (
                &["/s", "claude", "-1"],
                request("claude", DEFAULT_MAX_BYTES),
            ),
            (&["/s", "claude", ""], request("claude", DEFAULT_MAX_BYTES)),
            (
                &["/s", "claude", "9999999999999"],
                request("claude", 9_999_999_999_999),
            ),
            (
                &["/s", "claude", "10000000000000"],
                request("claude", DEFAULT_MAX_BYTES),
            ),
            (&["/s", "gemini", "100"], None),
            (&["/s", "Claude"], None),
            (&["/s"], None),
            (&["", "claude"], None),
            (&[], None),
        ];
        for (args, want) in cases {
            assert_eq!(parse(args), want, "{args:?}");
        }
    }
}
