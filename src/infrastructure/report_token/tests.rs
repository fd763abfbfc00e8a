use super::*;
use proptest::prelude::*;

fn t(team: &str) -> TeamName {
    TeamName::parse(team).unwrap()
}

fn m(member: &str) -> MemberName {
    MemberName::parse(member).unwrap()
}

fn tokens() -> (tempfile::TempDir, HmacReportTokens) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = HmacReportTokens::new(dir.path().to_path_buf());
    (dir, tokens)
}

/// The encoded claims of jack of forge on fingerprint `fp` at 1,000 ms.
fn jack_claims_payload() -> String {
    TokenClaims::new(
        &TeamName::parse("forge").unwrap(),
        &MemberName::parse("jack").unwrap(),
        "fp",
        1_000,
    )
    .encode()
}

#[test]
fn issued_tokens_verify_only_for_their_binding() {
    let (_dir, tokens) = tokens();
    let token = tokens.issue(&t("forge"), &m("jack"), "fp", 1_000).unwrap();
    assert!(token.starts_with("wrs:v1."));
    assert_eq!(
        tokens
            .verify(Some(&token), &t("forge"), &m("jack"), "fp", 999)
            .unwrap(),
        TokenCheck::Valid
    );
    assert_eq!(
        tokens
            .verify(Some(&token), &t("forge"), &m("jack"), "fp", 1_000)
            .unwrap(),
        TokenCheck::Expired
    );
    assert_eq!(
        tokens
            .verify(Some(&token), &t("forge"), &m("jill"), "fp", 0)
            .unwrap(),
        TokenCheck::Invalid
    );
    assert_eq!(
        tokens
            .verify(Some(&token), &t("forge"), &m("jack"), "fp2", 0)
            .unwrap(),
        TokenCheck::Invalid
    );
    assert_eq!(
        tokens
            .verify(Some(&token), &t("other"), &m("jack"), "fp", 0)
            .unwrap(),
        TokenCheck::Invalid
    );
    assert_eq!(
        tokens
            .verify(None, &t("forge"), &m("jack"), "fp", 0)
            .unwrap(),
        TokenCheck::Missing
    );
    assert_eq!(
        tokens
            .verify(Some(""), &t("forge"), &m("jack"), "fp", 0)
            .unwrap(),
        TokenCheck::Missing
    );
    assert_eq!(
        tokens
            .verify(
                Some(&token[..token.len() - 2]),
                &t("forge"),
                &m("jack"),
                "fp",
                0
            )
            .unwrap(),
        TokenCheck::Invalid
    );
}

#[test]
fn a_token_signed_for_another_member_with_swapped_claims_is_invalid() {
    let (_dir, tokens) = tokens();
    let token = tokens.issue(&t("forge"), &m("jill"), "fp", 1_000).unwrap();
    let signature = token.rsplit('.').next().unwrap();
    let forged = format!("wrs:v1.{}.{signature}", jack_claims_payload());
    assert_eq!(
        tokens
            .verify(Some(&forged), &t("forge"), &m("jack"), "fp", 0)
            .unwrap(),
        TokenCheck::Invalid
    );
}

#[test]
fn secret_file_is_private_stable_and_regenerated_when_corrupt() {
    let (dir, tokens) = tokens();
    let token = tokens.issue(&t("forge"), &m("jack"), "fp", 1_000).unwrap();
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
            .verify(Some(&token), &t("forge"), &m("jack"), "fp", 0)
            .unwrap(),
        TokenCheck::Valid
    );
    // A corrupt secret is kept aside and replaced; old tokens stop verifying.
    std::fs::write(&path, r#"{"schemaVersion":1,"secret":"short"}"#).unwrap();
    let fresh = HmacReportTokens::new(dir.path().to_path_buf());
    assert_eq!(
        fresh
            .verify(Some(&token), &t("forge"), &m("jack"), "fp", 0)
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
            std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o644)).unwrap();
            std::fs::hard_link(&elsewhere, &path).unwrap();
        }
        "symlink" => {
            let elsewhere = dir.join("elsewhere.json");
            std::fs::write(&elsewhere, &text).unwrap();
            std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
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
        let payload = jack_claims_payload();
        let forged = assemble(
            &payload,
            &HmacReportTokens::mac(&known, &payload)
                .unwrap()
                .finalize()
                .into_bytes(),
        );
        assert_eq!(
            tokens
                .verify(Some(&forged), &t("forge"), &m("jack"), "fp", 0)
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
        let payload = jack_claims_payload();
        let signed = assemble(
            &payload,
            &HmacReportTokens::mac(&secret, &payload)
                .unwrap()
                .finalize()
                .into_bytes(),
        );
        assert_eq!(
            tokens
                .verify(Some(&signed), &t("forge"), &m("jack"), "fp", 0)
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
        let token = tokens.issue(&t("forge"), &m("jack"), "fp", 1_000).unwrap();
        let path = dir.path().join("forge/.member-work-sync").join(SECRET_FILE);
        let mut kept = Vec::new();
        for bytes in corrupt {
            std::fs::write(&path, bytes).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let fresh = HmacReportTokens::new(dir.path().to_path_buf());
            assert_eq!(
                fresh
                    .verify(Some(&token), &t("forge"), &m("jack"), "fp", 0)
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
    let upper = tokens.issue(&t("Forge"), &m("jack"), "fp", 1_000).unwrap();
    let lower = tokens.issue(&t("forge"), &m("jack"), "fp", 1_000).unwrap();
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
        prop_assert_ne!(tokens.verify(Some(&token), &t("forge"), &m(&member), "fp", 0).unwrap(), TokenCheck::Valid);
    }

    #[test]
    fn tokens_verify_only_for_exactly_their_binding(
        member in "[a-z]{1,6}", other in "[a-z]{1,6}", fp in "[a-f0-9]{1,8}", flip in 0usize..400, now in 0i64..2_000,
    ) {
        let (_dir, tokens) = tokens();
        let token = tokens.issue(&t("forge"), &m(&member), &fp, 1_000).unwrap();
        let expected = if now < 1_000 { TokenCheck::Valid } else { TokenCheck::Expired };
        prop_assert_eq!(tokens.verify(Some(&token), &t("forge"), &m(&member), &fp, now).unwrap(), expected);
        if other != member {
            prop_assert_eq!(tokens.verify(Some(&token), &t("forge"), &m(&other), &fp, now).unwrap(), TokenCheck::Invalid);
        }
        // Flip one bit anywhere: never valid.
        let mut bytes = token.clone().into_bytes();
        let i = flip % bytes.len();
        bytes[i] ^= 1;
        if let Ok(mutated) = String::from_utf8(bytes) {
            if mutated != token {
                prop_assert_ne!(tokens.verify(Some(&mutated), &t("forge"), &m(&member), &fp, now).unwrap(), TokenCheck::Valid);
            }
        }
    }
}
