//! The last decode of each team's `config.json` and `members.meta.json`,
//! and the roster merged from the two, kept with the bytes they came from:
//! every status request reads the roster, and a read of unchanged bytes is
//! answered with a copy instead of a JSON decode and a merge. Keyed by
//! content ([`Decoded`]), so no write, however quick, is missed; the files
//! are still read every time.
//!
//! Bounded as every kept decode is ([`KeptDecodes`]): at most
//! [`MAX_KEPT_TEAMS`] teams per file (the set starts over when a new team
//! would pass it) and files up to [`KEPT_FILE_BYTES`]; a larger file is
//! decoded on every read.
//!
//! [`Decoded`]: crate::infrastructure::json_store::Decoded
//! [`KEPT_FILE_BYTES`]: crate::infrastructure::json_store::KEPT_FILE_BYTES

use crate::domain::names::TeamName;
use crate::domain::team::{MemberOverlay, TeamMember};
use crate::infrastructure::json_store::{KeptDecodes, KEPT_FILE_BYTES};
use crate::infrastructure::team_config::TeamConfig;

/// Most teams whose decodes are kept.
pub(super) const MAX_KEPT_TEAMS: usize = 16;

/// What a JSON file's bytes decoded to.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum JsonDecode<T> {
    /// JSON, read as `T`.
    Json(T),
    /// Not JSON: the reader reports `<what>_invalid`.
    NotJson,
}

/// `config.json` as the roster reads it: `Json(None)` when it is JSON but no
/// usable team config.
pub(super) type ConfigDecode = JsonDecode<Option<TeamConfig>>;
/// `members.meta.json`'s entries, tidied.
pub(super) type MetaDecode = JsonDecode<Vec<MemberOverlay>>;

/// The kept decodes of the teams read last.
#[derive(Debug)]
pub(super) struct KeptRosters {
    config: KeptDecodes<TeamName, ConfigDecode>,
    meta: KeptDecodes<TeamName, MetaDecode>,
    /// The merged roster, kept with both files' bytes ([`KeptRosters::members`]).
    members: KeptDecodes<TeamName, Vec<TeamMember>>,
}

impl Default for KeptRosters {
    fn default() -> Self {
        Self {
            config: KeptDecodes::new(MAX_KEPT_TEAMS, MAX_KEPT_TEAMS * KEPT_FILE_BYTES),
            meta: KeptDecodes::new(MAX_KEPT_TEAMS, MAX_KEPT_TEAMS * KEPT_FILE_BYTES),
            members: KeptDecodes::new(MAX_KEPT_TEAMS, MAX_KEPT_TEAMS * KEPT_FILE_BYTES),
        }
    }
}

impl KeptRosters {
    /// `decode(bytes)` of the team's `config.json`, or the kept copy.
    pub(super) fn config(
        &self,
        team: &TeamName,
        bytes: &[u8],
        decode: impl FnOnce(&[u8]) -> ConfigDecode,
    ) -> ConfigDecode {
        self.config.reuse_or(team.clone(), bytes, decode)
    }

    /// `decode(bytes)` of the team's `members.meta.json`, or the kept copy.
    pub(super) fn meta(
        &self,
        team: &TeamName,
        bytes: &[u8],
        decode: impl FnOnce(&[u8]) -> MetaDecode,
    ) -> MetaDecode {
        self.meta.reuse_or(team.clone(), bytes, decode)
    }

    /// `merge()`, the roster merged from the team's `config.json` and
    /// `members.meta.json` (`meta` empty when there is none), or a copy of
    /// the one kept for these same bytes: the merge reads nothing but the
    /// two files' decodes, so equal bytes merge to an equal roster.
    pub(super) fn members(
        &self,
        team: &TeamName,
        config: &[u8],
        meta: &[u8],
        merge: impl FnOnce() -> Vec<TeamMember>,
    ) -> Vec<TeamMember> {
        // Both files' bytes, the first one's length first: no two pairs of
        // files give the same key.
        let mut both = Vec::with_capacity(8 + config.len() + meta.len());
        both.extend_from_slice(&(config.len() as u64).to_le_bytes());
        both.extend_from_slice(config);
        both.extend_from_slice(meta);
        self.members.reuse_or(team.clone(), &both, |_| merge())
    }

    /// Forgets every kept decode (the reader is released).
    pub(super) fn clear(&self) {
        self.config.clear();
        self.meta.clear();
        self.members.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::infrastructure::json_store::KEPT_FILE_BYTES;

    fn team(name: &str) -> TeamName {
        TeamName::parse(name).unwrap()
    }

    /// A decode that counts its calls and gives `NotJson` for `bad`.
    fn counting<'a>(calls: &'a Cell<usize>) -> impl Fn(&[u8]) -> MetaDecode + 'a {
        move |bytes: &[u8]| {
            calls.set(calls.get() + 1);
            if bytes == b"bad" {
                JsonDecode::NotJson
            } else {
                JsonDecode::Json(vec![MemberOverlay {
                    name: String::from_utf8_lossy(bytes).into_owned(),
                    ..MemberOverlay::default()
                }])
            }
        }
    }

    #[test]
    fn same_bytes_are_answered_from_the_kept_decode_and_new_bytes_decoded() {
        let kept = KeptRosters::default();
        let calls = Cell::new(0);
        let decode = counting(&calls);
        // (team, bytes, decodes so far after the read)
        let reads: [(&str, &[u8], usize); 7] = [
            ("forge", b"a", 1),
            ("forge", b"a", 1),
            ("forge", b"b", 2),
            ("forge", b"a", 3),
            ("other", b"a", 4),
            ("forge", b"bad", 5),
            ("forge", b"bad", 5),
        ];
        for (name, bytes, decodes) in reads {
            let got = kept.meta(&team(name), bytes, &decode);
            assert_eq!(got, decode(bytes), "{name} {bytes:?}");
            calls.set(calls.get() - 1);
            assert_eq!(calls.get(), decodes, "{name} {bytes:?}");
        }
    }

    #[test]
    fn the_config_and_meta_slots_are_separate() {
        let kept = KeptRosters::default();
        let forge = team("forge");
        let config = kept.config(&forge, b"x", |_| JsonDecode::Json(None));
        assert_eq!(config, JsonDecode::Json(None));
        let calls = Cell::new(0);
        let meta = kept.meta(&forge, b"x", counting(&calls));
        assert_eq!(calls.get(), 1);
        assert!(matches!(meta, JsonDecode::Json(members) if members.len() == 1));
    }

    #[test]
    fn memory_stays_bounded() {
        let kept = KeptRosters::default();
        let calls = Cell::new(0);
        for i in 0..=MAX_KEPT_TEAMS {
            kept.meta(&team(&format!("team-{i}")), b"a", counting(&calls));
        }
        assert_eq!(kept.meta.len(), 1, "started over past the cap");
        let big = vec![b' '; KEPT_FILE_BYTES + 1];
        kept.meta(&team("big"), &big, counting(&calls));
        kept.meta(&team("big"), &big, counting(&calls));
        assert_eq!(
            calls.get(),
            MAX_KEPT_TEAMS + 3,
            "a large file is decoded every time"
        );
        assert!(kept.meta.take(&team("big")).is_none());
        kept.members(&team("big"), b"a", b"", Vec::new);
        kept.clear();
        assert_eq!(kept.config.len() + kept.meta.len() + kept.members.len(), 0);
    }

    #[test]
    fn a_roster_is_merged_again_when_either_file_changes() {
        let kept = KeptRosters::default();
        let merges = Cell::new(0);
        let merge = |name: &str| {
            merges.set(merges.get() + 1);
            vec![TeamMember {
                name: name.into(),
                ..TeamMember::default()
            }]
        };
        let forge = team("forge");
        // (config, meta, merges so far after the read): the key holds the
        // config's length, so moving a byte from one file to the other is
        // a change too.
        let reads: [(&[u8], &[u8], usize); 6] = [
            (b"ab", b"c", 1),
            (b"ab", b"c", 1),
            (b"a", b"bc", 2),
            (b"a", b"bc", 2),
            (b"a", b"", 3),
            (b"ab", b"c", 4),
        ];
        for (config, meta, merged) in reads {
            let name = format!("{}+{}", config.len(), meta.len());
            let members = kept.members(&forge, config, meta, || merge(&name));
            assert_eq!(merges.get(), merged, "{name}");
            assert_eq!(members[0].name, name, "the roster of these bytes");
        }
    }
}
