//! Checks the hand-written result types of `api-types.d.ts` (which napi
//! copies into `index.d.ts`) against what the addon really returns: real
//! results of the bundled example team, serialized exactly as the methods
//! serialize them, are walked against the declared TypeScript. A field the
//! Rust side adds, renames or drops, a required field that is absent, or a
//! value of another kind (string, number, boolean, literal, array, object)
//! fails with its path. `rust_types.rs` checks the same declarations against
//! the Rust types themselves (every field, not only those the example
//! fills); this test checks what the types cannot say (a field typed
//! `string` that only ever holds the declared literals).

use std::collections::HashMap;

use serde_json::Value;

/// The interfaces and type aliases of a d.ts file, as their source text.
pub(crate) struct Declarations {
    /// Interface name → its body (between the braces).
    interfaces: HashMap<String, String>,
    /// Type alias name → its right-hand side.
    aliases: HashMap<String, String>,
}

impl Declarations {
    /// Reads `export interface` and `export type` declarations from `source`.
    pub(crate) fn parse(source: &str) -> Self {
        let source = without_comments(source);
        let mut interfaces = HashMap::new();
        let mut aliases = HashMap::new();
        let mut rest = source.as_str();
        while let Some(at) = rest.find("export ") {
            rest = &rest[at + "export ".len()..];
            if let Some(after) = rest.strip_prefix("interface ") {
                let name = identifier(after);
                let Some(open) = after.find('{') else { break };
                let body_len = closing(&after[open..]);
                interfaces.insert(name, after[open + 1..open + body_len].to_string());
                rest = &after[open + body_len..];
            } else if let Some(after) = rest.strip_prefix("type ") {
                let name = identifier(after);
                let Some(eq) = after.find('=') else { break };
                let end = after.find("\nexport ").unwrap_or(after.len());
                aliases.insert(name, after[eq + 1..end].trim().to_string());
                rest = &after[end..];
            }
        }
        Self {
            interfaces,
            aliases,
        }
    }

    /// The type `name` declares: an interface as its `{ body }`, an alias as
    /// its right-hand side.
    pub(super) fn named(&self, name: &str) -> Option<String> {
        match self.interfaces.get(name) {
            Some(body) => Some(format!("{{{body}}}")),
            None => self.aliases.get(name).cloned(),
        }
    }

    /// The names of every declared interface.
    pub(super) fn interface_names(&self) -> impl Iterator<Item = &str> {
        self.interfaces.keys().map(String::as_str)
    }

    /// Every mismatch between `value` and the TypeScript type `ty`, each
    /// naming its path under `path`.
    pub(crate) fn check(&self, value: &Value, ty: &str, path: &str) -> Vec<String> {
        let ty = ty.trim();
        let alternatives = split_top(ty.trim_start_matches('|'), '|');
        if alternatives.len() > 1 {
            let failures: Vec<_> = alternatives
                .iter()
                .map(|alternative| self.check(value, alternative, path))
                .collect();
            return if failures.iter().any(Vec::is_empty) {
                Vec::new()
            } else {
                vec![format!("{path}: {value} is none of `{ty}`")]
            };
        }
        if let Some(item) = ty.strip_suffix("[]") {
            let item = item.trim_start_matches('(').trim_end_matches(')');
            return match value {
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .flat_map(|(i, v)| self.check(v, item, &format!("{path}[{i}]")))
                    .collect(),
                _ => vec![format!("{path}: {value} is not an array (`{ty}`)")],
            };
        }
        if ty.starts_with('{') {
            return self.check_fields(value, &ty[1..ty.len() - 1], path);
        }
        let fits = match ty {
            "string" => value.is_string(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "true" | "false" => value.as_bool() == Some(ty == "true"),
            "null" => value.is_null(),
            "unknown" => true,
            literal if literal.starts_with('\'') => {
                value.as_str() == Some(literal.trim_matches('\''))
            }
            number if number.parse::<f64>().is_ok() => value.as_f64() == number.parse::<f64>().ok(),
            record if record.starts_with("Record<") || record.starts_with("Partial<Record<") => {
                return self.check_record(value, record, path);
            }
            indexed if indexed.ends_with("']") => {
                let (owner, field) = indexed[..indexed.len() - 2]
                    .split_once("['")
                    .unwrap_or_default();
                let field_type = self.interfaces.get(owner).and_then(|body| {
                    split_fields(body).into_iter().find_map(|entry| {
                        let (name, ty) = entry.split_once(':')?;
                        (name.trim().trim_end_matches('?') == field).then_some(ty)
                    })
                });
                return match field_type {
                    Some(ty) => self.check(value, ty, path),
                    None => vec![format!("{path}: unknown type `{indexed}`")],
                };
            }
            name => {
                if let Some(body) = self.interfaces.get(name) {
                    return self.check_fields(value, body, path);
                }
                if let Some(alias) = self.aliases.get(name) {
                    return self.check(value, alias, path);
                }
                return vec![format!("{path}: unknown type `{name}`")];
            }
        };
        if fits {
            Vec::new()
        } else {
            vec![format!("{path}: {value} is not `{ty}`")]
        }
    }

    /// `value` against `Record<K, V>` (or `Partial<>` of one): every key
    /// a `K`, every value a `V`.
    fn check_record(&self, value: &Value, record: &str, path: &str) -> Vec<String> {
        let inner = record.trim_start_matches("Partial<").trim_end_matches('>');
        let inner = &inner["Record<".len()..];
        let parts = split_top(inner, ',');
        let (Value::Object(object), [key, item]) = (value, parts.as_slice()) else {
            return vec![format!("{path}: {value} is not `{record}`")];
        };
        object
            .iter()
            .flat_map(|(k, v)| {
                let at = format!("{path}.{k}");
                let mut failures = self.check(&Value::String(k.clone()), key, &at);
                failures.extend(self.check(v, item, &at));
                failures
            })
            .collect()
    }

    /// `value` against an object type's fields (`name?: type` entries).
    fn check_fields(&self, value: &Value, body: &str, path: &str) -> Vec<String> {
        let Value::Object(object) = value else {
            return vec![format!("{path}: {value} is not an object")];
        };
        let mut failures = Vec::new();
        let mut declared = Vec::new();
        for field in split_fields(body) {
            let Some((name, ty)) = field.split_once(':') else {
                failures.push(format!("{path}: cannot read the field `{field}`"));
                continue;
            };
            let name = name.trim().trim_start_matches("readonly ");
            let (name, optional) = match name.strip_suffix('?') {
                Some(name) => (name, true),
                None => (name, false),
            };
            declared.push(name.to_string());
            match object.get(name) {
                Some(field) => failures.extend(self.check(field, ty, &format!("{path}.{name}"))),
                None if !optional => failures.push(format!("{path}.{name}: required, absent")),
                None => {}
            }
        }
        for key in object.keys() {
            if !declared.contains(key) {
                failures.push(format!("{path}.{key}: returned, not declared"));
            }
        }
        failures
    }
}

/// `source` without `/* */` and `//` comments.
fn without_comments(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    loop {
        let block = rest.find("/*");
        let line = rest.find("//");
        match (block, line) {
            (Some(b), l) if l.is_none_or(|l| b < l) => {
                out.push_str(&rest[..b]);
                rest = rest[b..].find("*/").map_or("", |end| &rest[b + end + 2..]);
            }
            (_, Some(l)) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |end| &rest[l + end..]);
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// The leading identifier of `text`.
fn identifier(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Length up to and including the brace closing the one `text` starts with.
fn closing(text: &str) -> usize {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    text.len()
}

/// `text` split at `separator` outside brackets and quotes.
pub(super) fn split_top(text: &str, separator: char) -> Vec<&str> {
    split_where(text, |c| c == separator)
}

/// An object type's body split into its fields (at `;` or line ends).
fn split_fields(body: &str) -> Vec<&str> {
    split_where(body, |c| c == ';' || c == '\n')
        .into_iter()
        .map(str::trim)
        .filter(|field| !field.is_empty())
        .collect()
}

pub(super) fn split_where(text: &str, at: impl Fn(char) -> bool) -> Vec<&str> {
    let (mut parts, mut depth, mut quoted, mut start) = (Vec::new(), 0i32, false, 0);
    for (i, c) in text.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '{' | '[' | '(' | '<' if !quoted => depth += 1,
            '}' | ']' | ')' | '>' if !quoted => depth -= 1,
            c if depth == 0 && !quoted && at(c) => {
                parts.push(text[start..i].trim());
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(text[start..].trim());
    parts
}

/// The TypeScript a napi method of `source` declares it returns
/// (`ts_return_type`, without `Promise<>`).
pub(super) fn declared_return(source: &str, method: &str) -> String {
    let at = source
        .find(&format!("pub fn {method}("))
        .unwrap_or_else(|| panic!("no method {method}"));
    let attribute = &source[..at];
    let start = attribute
        .rfind("ts_return_type = \"")
        .expect("ts_return_type")
        + 18;
    let ty = &attribute[start..start + attribute[start..].find('"').unwrap()];
    let ty = ty
        .strip_prefix("Promise<")
        .map_or(ty, |t| &t[..t.len() - 1]);
    ty.to_string()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::binding::{to_json, ReportOutcome};
    use crate::domain::names::{MemberName, TeamName};
    use crate::infrastructure::composition::{Instance, RootPaths, Tuning};

    /// 2026-11-18T11:06:40Z.
    const NOW: i64 = 1_795_000_000_000;

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }

    /// Each method's real result on the example team, serialized as the
    /// method serializes it, against the type the method declares.
    #[test]
    fn every_result_matches_its_declared_typescript() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
        copy_dir(&manifest.join("examples/claude-root"), &root);
        let paths = RootPaths::resolve(Some(root), None, None);
        let instance = Instance::start(paths, Some(NOW), false, None, Tuning::default()).unwrap();
        let engine = &instance.services.engine;
        let team = TeamName::parse("forge").unwrap();
        let jack = MemberName::parse("jack").unwrap();

        let status = to_json(engine.refresh_status(&team, &jack).unwrap()).unwrap();
        let reported = to_json(ReportOutcome::from(
            engine
                .report(&json!({
                    "teamName": "forge",
                    "memberName": "jack",
                    "state": "still_working",
                    "agendaFingerprint": status["agenda"]["fingerprint"],
                    "reportToken": status["reportToken"],
                    "taskIds": ["1"],
                    "note": "on it",
                }))
                .unwrap(),
        ))
        .unwrap();
        assert_eq!(reported["accepted"], json!(true), "{reported}");
        let rejected = to_json(ReportOutcome::from(
            engine
                .report(&json!({
                    "teamName": "forge", "memberName": "jack", "state": "caught_up",
                    "agendaFingerprint": "agenda:v1:stale",
                }))
                .unwrap(),
        ))
        .unwrap();
        let teams = [team.clone()];
        // (method, its result)
        let results = [
            ("refresh_status", status),
            ("report", reported),
            ("report", rejected),
            (
                "get_status",
                to_json(engine.get_status(&team, &jack, false).unwrap()).unwrap(),
            ),
            (
                "preview_status",
                to_json(engine.preview_status(&team, &jack).unwrap()).unwrap(),
            ),
            (
                "preview_team",
                to_json(engine.preview_team(&team).unwrap()).unwrap(),
            ),
            (
                "refresh_team",
                to_json(engine.refresh_team(&team).unwrap()).unwrap(),
            ),
            (
                "get_metrics",
                to_json(engine.get_metrics(&team).unwrap()).unwrap(),
            ),
            (
                "preview_metrics",
                to_json(engine.preview_metrics(&team).unwrap()).unwrap(),
            ),
            (
                "explain",
                to_json(
                    instance
                        .services
                        .explainer
                        .explain(&team, &jack, None)
                        .unwrap(),
                )
                .unwrap(),
            ),
            ("get_agent_brief", engine.agent_brief(&team, &jack).unwrap()),
            (
                "replay_pending_reports",
                to_json(engine.replay_pending_reports(&teams).unwrap()).unwrap(),
            ),
            (
                "dispatch_due_nudges",
                to_json(engine.dispatch_due_nudges(&teams, "test").unwrap()).unwrap(),
            ),
            (
                "schedule_proof_missing_recovery",
                to_json(
                    engine
                        .schedule_proof_missing_recovery(
                            crate::application::proof_missing::ProofMissingRequest {
                                team_name: "forge".into(),
                                member_name: "jack".into(),
                                original_message_id: "m-1".into(),
                                task_refs: vec![crate::domain::recovery::RecoveryTaskRef {
                                    task_id: "1".into(),
                                    display_id: None,
                                    team_name: None,
                                }],
                                reason: None,
                            },
                        )
                        .unwrap(),
                )
                .unwrap(),
            ),
            (
                "get_queue_diagnostics",
                to_json(engine.diagnostics()).unwrap(),
            ),
            (
                "drain_runtime_turn_settled_events",
                to_json(instance.drain_turn_settled().unwrap()).unwrap(),
            ),
        ];
        let declarations = Declarations::parse(include_str!("api-types.d.ts"));
        let sources = [include_str!("mod.rs"), include_str!("turn_settled.rs")].concat();
        let mut failures = Vec::new();
        for (method, result) in &results {
            let declared = declared_return(&sources, method);
            failures.extend(declarations.check(result, &declared, method));
        }
        instance.dispose();
        assert!(failures.is_empty(), "{failures:#?}");
    }

    /// The checker itself: each kind of drift is found and named.
    #[test]
    fn the_checker_names_each_kind_of_drift() {
        let declarations = Declarations::parse(
            "/** doc { */\nexport type Kind = 'a' | 'b'\nexport interface Thing {\n  /** x */\n  id: string\n  kind?: Kind\n  tags: { name: string; n?: number }[]\n}\n",
        );
        // (value, failures)
        for (value, expected) in [
            (json!({"id": "x", "tags": []}), vec![]),
            (
                json!({"id": "x", "kind": "b", "tags": [{"name": "t", "n": 1}]}),
                vec![],
            ),
            (json!({"tags": []}), vec!["T.id: required, absent"]),
            (
                json!({"id": "x", "tags": [], "extra": 1}),
                vec!["T.extra: returned, not declared"],
            ),
            (
                json!({"id": 1, "kind": "c", "tags": [{"name": "t", "n": "1"}]}),
                vec![
                    "T.id: 1 is not `string`",
                    "T.kind: \"c\" is none of `'a' | 'b'`",
                    "T.tags[0].n: \"1\" is not `number`",
                ],
            ),
            (json!([]), vec!["T: [] is not an object"]),
        ] {
            assert_eq!(
                declarations.check(&value, "Thing", "T"),
                expected,
                "{value}"
            );
        }
        assert_eq!(
            declarations.check(&json!(1), "Missing", "T"),
            ["T: unknown type `Missing`"]
        );
    }
}
