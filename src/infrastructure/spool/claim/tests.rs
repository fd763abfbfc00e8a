use super::*;
use crate::application::ports::Clock;
use crate::application::turn_settled::Disposition;
use crate::application::turn_settled::TurnSettledSpool;
use crate::infrastructure::clock::SystemClock;
use crate::infrastructure::spool::testing::{file_one, names, set_mtime, spool, T0};
use std::fs;

#[test]
fn claims_in_name_order_skip_hidden_files_and_classify_bad_ones() {
    let (_dir, spool, _) = spool(T0);
    let incoming = spool.paths().incoming();
    fs::write(incoming.join("20261122T100002Z-1-0.codex.json"), b"{}").unwrap();
    fs::write(incoming.join("20261122T100001Z-1-0.claude.json"), b"{}").unwrap();
    set_mtime(
        &incoming.join("20261122T100001Z-1-0.claude.json"),
        T0 + 3000,
    );
    fs::write(incoming.join(".turn-settled.9.0"), b"half").unwrap();
    fs::write(incoming.join("20261122T100003Z-1-0.gemini.json"), b"{}").unwrap();
    fs::write(incoming.join("notes.txt"), b"x").unwrap();
    fs::write(incoming.join("20261122T100004Z-1-0.claude.json"), b"").unwrap();
    fs::write(
        incoming.join("20261122T100005Z-1-0.claude.json"),
        vec![b'a'; 262_145],
    )
    .unwrap();
    let claims = spool.claim_all(50).unwrap();
    let got: Vec<(&str, Option<&str>)> = claims
        .iter()
        .map(|c| {
            let what = match &c.content {
                ClaimContent::Payload(_) => None,
                ClaimContent::Truncated(prefix) => {
                    assert_eq!(prefix.len(), 262_145);
                    Some("truncated")
                }
                ClaimContent::Invalid(reason) => Some(*reason),
                ClaimContent::Transient(_) => Some("transient"),
            };
            (c.id.as_str(), what)
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("20261122T100001Z-1-0.claude.json", None),
            ("20261122T100002Z-1-0.codex.json", None),
            (
                "20261122T100003Z-1-0.gemini.json",
                Some("unsupported_provider")
            ),
            ("20261122T100004Z-1-0.claude.json", Some("payload_missing")),
            ("20261122T100005Z-1-0.claude.json", Some("truncated")),
            ("notes.txt", Some("invalid_file_name")),
        ]
    );
    assert_eq!(names(&incoming), vec![".turn-settled.9.0"]);
    // The name's stamp is the spool time when the file's modification
    // time agrees with it; when it does not (the hook's clock was off),
    // the modification time is.
    assert_eq!(claims[0].spooled_at_ms, T0 + 1000);
    let written_now = SystemClock.now_ms();
    assert!((claims[1].spooled_at_ms - written_now).abs() < 60_000);
    // Release puts it back; complete files it with its meta.
    spool.release(&claims[0]).unwrap();
    assert!(incoming.join(&claims[0].id).exists());
    assert!(file_one(
        &spool,
        &claims[1],
        Disposition::Processed,
        serde_json::json!({"outcome": "enqueued"})
    )
    .unwrap());
    assert_eq!(
        names(&spool.paths().processed()),
        vec![
            "20261122T100002Z-1-0.codex.json",
            "20261122T100002Z-1-0.codex.json.meta.json"
        ]
    );
    // A claim already taken back (by another drainer's recovery) is reported lost.
    assert!(!file_one(
        &spool,
        &claims[1],
        Disposition::Processed,
        serde_json::json!({})
    )
    .unwrap());
}

#[test]
fn stale_claims_go_back_to_incoming_before_a_drain_and_fresh_ones_stay() {
    let (_dir, spool, clock) = spool(T0);
    let incoming = spool.paths().incoming();
    fs::write(incoming.join("20261122T100000Z-1-0.claude.json"), b"{}").unwrap();
    fs::write(incoming.join("20261122T100000Z-2-0.claude.json"), b"{}").unwrap();
    let first = spool.claim_all(1).unwrap();
    assert_eq!(first.len(), 1);
    clock.set(T0 + STALE_CLAIM_MS - 1);
    let second = spool.claim_all(1).unwrap();
    assert_eq!(second[0].id, "20261122T100000Z-2-0.claude.json");
    assert!(
        spool.claim_all(1).unwrap().is_empty(),
        "a fresh claim is not recovered"
    );
    clock.set(T0 + STALE_CLAIM_MS + 1);
    let recovered = spool.claim_all(5).unwrap();
    assert_eq!(recovered.len(), 1);
    assert_eq!(recovered[0].id, first[0].id);
}

/// One listing of `incoming/` serves the claims that follow (it used to
/// be listed for every batch: O(pending²) over a backlog): a file spooled
/// after it, even under an older name, waits until the listed names are
/// used up and is claimed then; a stale claim put back by recovery makes
/// the next claim list again, so the oldest name still goes first.
#[test]
fn one_listing_serves_the_claims_that_follow() {
    let (_dir, spool, clock) = spool(T0);
    let incoming = spool.paths().incoming();
    let name = |second: u32| format!("20261122T1000{second:02}Z-1-0.claude.json");
    for second in [1, 2, 3] {
        fs::write(incoming.join(name(second)), b"{}").unwrap();
    }
    let claim_one = || {
        let claims = spool.claim_all(1).unwrap();
        claims.first().map(|claim| claim.id.clone())
    };
    assert_eq!(claim_one(), Some(name(1)));
    fs::write(incoming.join(name(0)), b"{}").unwrap();
    for expected in [Some(name(2)), Some(name(3)), Some(name(0)), None] {
        assert_eq!(claim_one(), expected);
    }
    // A backlog of listed names, then a stale claim goes back.
    for second in [4, 5, 6] {
        fs::write(incoming.join(name(second)), b"{}").unwrap();
    }
    assert_eq!(claim_one(), Some(name(4)));
    clock.set(T0 + STALE_CLAIM_MS + 1);
    let recovered = spool.claim_all(1).unwrap();
    // (Name 0 and up were claimed at T0: all of them went back.)
    assert_eq!(recovered[0].id, name(0));
}

#[test]
fn a_claim_going_back_never_replaces_a_new_file_of_the_same_name() {
    let (_dir, spool, clock) = spool(T0);
    let incoming = spool.paths().incoming();
    let name = "20261122T100000Z-7-0.claude.json";
    fs::write(incoming.join(name), b"{\"first\":1}").unwrap();
    let claims = spool.claim_all(1).unwrap();
    // A new hook run (same second, pid and counter) takes the name.
    fs::write(incoming.join(name), b"{\"second\":2}").unwrap();
    spool.release(&claims[0]).unwrap();
    let later = T0 + STALE_CLAIM_MS + 1;
    clock.set(later);
    let (processing, incoming_dir) = (
        spool.paths.open(Folder::Processing).unwrap().unwrap(),
        spool.paths.open(Folder::Incoming).unwrap().unwrap(),
    );
    recover_stale(&processing, &incoming_dir, later).unwrap();
    assert_eq!(fs::read(incoming.join(name)).unwrap(), b"{\"second\":2}");
    assert_eq!(
        names(&spool.paths().processing()).len(),
        1,
        "the first waits"
    );
    // Once the new one is claimed, the first comes back.
    let second = spool.claim_all(1).unwrap();
    assert!(matches!(&second[0].content, ClaimContent::Payload(p) if p == b"{\"second\":2}"));
    recover_stale(&processing, &incoming_dir, later).unwrap();
    assert_eq!(fs::read(incoming.join(name)).unwrap(), b"{\"first\":1}");
}

#[test]
fn only_regular_files_are_read_and_links_are_moved_not_followed() {
    let (dir, spool, _) = spool(T0);
    let incoming = spool.paths().incoming();
    let fifo = incoming.join("20261122T100001Z-1-0.claude.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    fs::create_dir(incoming.join("20261122T100002Z-1-0.claude.json")).unwrap();
    let outside = dir.path().join("outside.json");
    fs::write(&outside, b"{}").unwrap();
    std::os::unix::fs::symlink(&outside, incoming.join("20261122T100003Z-1-0.claude.json"))
        .unwrap();
    let _socket =
        std::os::unix::net::UnixListener::bind(incoming.join("20261122T100004Z-1-0.claude.json"))
            .unwrap();
    let claims = spool.claim_all(50).unwrap();
    let reasons: Vec<Option<&str>> = claims
        .iter()
        .map(|c| match &c.content {
            ClaimContent::Invalid(reason) => Some(*reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons, vec![Some("payload_not_a_file"); 4]);
    for claim in &claims {
        assert!(file_one(&spool, claim, Disposition::Invalid, serde_json::json!({})).unwrap());
    }
    let link = spool
        .paths()
        .invalid()
        .join("20261122T100003Z-1-0.claude.json");
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read(&outside).unwrap(), b"{}");
}

/// `incoming/` or `processing/` is a link to a folder outside the spool:
/// the drain fails naming it, and nothing there is moved into the spool.
#[test]
fn a_linked_incoming_or_processing_folder_fails_the_claim_and_is_never_followed() {
    for folder in [Folder::Incoming, Folder::Processing] {
        let (dir, spool, _) = spool(T0);
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let event = "20261122T100000Z-1-0.claude.json";
        fs::write(outside.join(event), b"{}").unwrap();
        fs::write(
            spool
                .paths()
                .incoming()
                .join("20261122T100000Z-2-0.claude.json"),
            b"{}",
        )
        .unwrap();
        let at = spool.paths.path(folder);
        fs::remove_dir_all(&at).unwrap();
        std::os::unix::fs::symlink(&outside, &at).unwrap();
        let error = spool.claim_all(50).unwrap_err().to_string();
        assert!(
            error.contains(&format!("{}:", at.display())),
            "{folder:?}: {error}"
        );
        assert_eq!(names(&outside), vec![event], "{folder:?}");
    }
}

/// `processing/` replaced by a file: an error, not an empty drain.
#[test]
fn a_file_in_place_of_processing_fails_the_claim() {
    let (_dir, spool, _) = spool(T0);
    fs::write(
        spool
            .paths()
            .incoming()
            .join("20261122T100000Z-1-0.claude.json"),
        b"{}",
    )
    .unwrap();
    fs::remove_dir(spool.paths().processing()).unwrap();
    fs::write(spool.paths().processing(), b"").unwrap();
    let error = spool.claim_all(50).unwrap_err().to_string();
    assert!(error.contains("processing"), "{error}");
    assert_eq!(names(&spool.paths().incoming()).len(), 1);
}

/// A name too long to carry the claim tag is claimed under a short id
/// and filed as invalid, instead of failing every drain.
#[test]
fn an_overlong_name_is_claimed_under_a_short_id() {
    let (_dir, spool, _) = spool(T0);
    let long = format!("20261122T100000Z-1-{}.claude.json", "x".repeat(220));
    fs::write(spool.paths().incoming().join(&long), b"{}").unwrap();
    let claims = spool.claim_all(50).unwrap();
    assert_eq!(claims.len(), 1);
    assert_eq!(
        claims[0].content,
        ClaimContent::Invalid("invalid_file_name")
    );
    assert!(file_one(
        &spool,
        &claims[0],
        Disposition::Invalid,
        serde_json::json!({})
    )
    .unwrap());
    assert_eq!(names(&spool.paths().invalid()).len(), 2);
}
