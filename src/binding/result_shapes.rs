//! Checks the hand-written result types of `api-types.d.ts` (which napi
//! copies into `index.d.ts`) against what the addon really returns: real
//! results of the bundled example team, serialized exactly as the methods
//! serialize them, are walked against the declared TypeScript. A field the
//! Rust side adds, renames or drops, a required field that is absent, or a
//! value of another kind (string, number, boolean, literal, array, object)
//! fails with its path. The declarations are read into one type form
//! ([`Ty`]), which `rust_types.rs` compares with the Rust types themselves
//! (every field, not only those the example fills); this test checks what
//! the types cannot say (a field typed `string` that only ever holds the
//! declared literals).

use std::collections::{BTreeMap, HashMap};
use std::fmt;

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

    /// The type the TypeScript expression `ty` means here.
    pub(super) fn read(&self, ty: &str) -> Ty {
        Reader {
            declarations: self,
            keep_names: false,
        }
        .read(ty)
    }

    /// The names of every declared interface.
    pub(super) fn interface_names(&self) -> impl Iterator<Item = &str> {
        self.interfaces.keys().map(String::as_str)
    }
}

/// A TypeScript type, in the form both sides are compared in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Ty {
    /// `string`, `number`, `boolean`, `null`, `unknown` (or an unresolved name).
    Prim(String),
    /// A string (`'x'`), number or boolean literal.
    Literal(String),
    /// `T[]` / `Array<T>`.
    Array(Box<Ty>),
    /// `Record<K, V>`, `Partial<Record<K, V>>`, `{ [key in K]?: V }`.
    Map(Box<Ty>, Box<Ty>),
    /// An object type: field → (optional, type).
    Object(BTreeMap<String, (bool, Ty)>),
    /// A union, flattened, sorted and without duplicates.
    Union(Vec<Ty>),
    /// A declared name of the hand side (mismatches below it are named after it).
    Named(String, Box<Ty>),
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Prim(name) | Ty::Literal(name) | Ty::Named(name, _) => f.write_str(name),
            Ty::Array(item) if matches!(**item, Ty::Union(_)) => write!(f, "({item})[]"),
            Ty::Array(item) => write!(f, "{item}[]"),
            Ty::Map(key, value) => write!(f, "Record<{key}, {value}>"),
            Ty::Object(fields) => {
                f.write_str("{ ")?;
                for (name, (optional, ty)) in fields {
                    write!(f, "{name}{}: {ty}; ", if *optional { "?" } else { "" })?;
                }
                f.write_str("}")
            }
            Ty::Union(members) => {
                let members: Vec<String> = members.iter().map(Ty::to_string).collect();
                f.write_str(&members.join(" | "))
            }
        }
    }
}

/// Reads TypeScript type expressions against one side's declarations.
pub(super) struct Reader<'a> {
    pub(super) declarations: &'a Declarations,
    /// Hand side: keep declared names (for the mismatch paths).
    pub(super) keep_names: bool,
}

impl Reader<'_> {
    /// The type `ty` (a TypeScript type expression) means.
    pub(super) fn read(&self, ty: &str) -> Ty {
        let ty = ty.trim().trim_end_matches(';').trim();
        let ty = ty.strip_prefix('|').unwrap_or(ty).trim();
        let members = split_top(ty, '|');
        if members.len() > 1 {
            return union(members.iter().map(|m| self.read(m)));
        }
        if let Some(item) = ty.strip_suffix("[]") {
            return Ty::Array(Box::new(self.read(item)));
        }
        if let Some(item) = generic(ty, "Array") {
            return Ty::Array(Box::new(self.read(item)));
        }
        if let Some(inner) = ty.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
            return self.read(inner);
        }
        if let Some(inner) = generic(ty, "Partial")
            .or(Some(ty))
            .and_then(|t| generic(t, "Record"))
        {
            if let [key, value] = split_top(inner, ',').as_slice() {
                return Ty::Map(Box::new(self.read(key)), Box::new(self.read(value)));
            }
        }
        if let Some(body) = ty.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            return self.object(body.trim());
        }
        if let Some(text) = ty
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .or_else(|| ty.strip_prefix('"').and_then(|t| t.strip_suffix('"')))
        {
            return Ty::Literal(format!("'{text}'"));
        }
        if ty.parse::<f64>().is_ok() {
            return Ty::Literal(ty.to_string());
        }
        match ty {
            "true" | "false" => return Ty::Literal(ty.to_string()),
            "string" | "number" | "boolean" | "null" | "unknown" | "undefined" => {
                return Ty::Prim(ty.to_string())
            }
            // ts-rs's name for serde_json's Value: any JSON.
            "JsonValue" => return Ty::Prim("unknown".to_string()),
            _ => {}
        }
        if let Some((owner, field)) = ty.strip_suffix("']").and_then(|t| t.split_once("['")) {
            if let Ty::Object(fields) = self.unnamed(self.read(owner)) {
                if let Some((_, ty)) = fields.get(field) {
                    return ty.clone();
                }
            }
            return Ty::Prim(format!("unresolved {ty}"));
        }
        match self.declarations.named(ty) {
            Some(body) if self.keep_names => Ty::Named(ty.to_string(), Box::new(self.read(&body))),
            Some(body) => self.read(&body),
            None => Ty::Prim(format!("unresolved {ty}")),
        }
    }

    fn unnamed(&self, ty: Ty) -> Ty {
        match ty {
            Ty::Named(_, inner) => self.unnamed(*inner),
            ty => ty,
        }
    }

    /// An object type's body: `name?: type` fields split at `;`, `,` or a
    /// line end; `| undefined` counts as `?`.
    fn object(&self, body: &str) -> Ty {
        if let Some(rest) = body.strip_prefix("[key in ") {
            if let Some((key, value)) = rest.split_once(']') {
                let value = value.trim_start_matches('?').trim_start_matches(':');
                return Ty::Map(Box::new(self.read(key)), Box::new(self.read(value)));
            }
        }
        let mut fields = BTreeMap::new();
        for field in split_where(body, |c| c == ';' || c == ',' || c == '\n') {
            let Some((name, ty)) = field.split_once(':') else {
                continue;
            };
            let name = name.trim().trim_start_matches("readonly ").trim();
            let (name, mut optional) = match name.strip_suffix('?') {
                Some(name) => (name, true),
                None => (name, false),
            };
            let mut ty = self.read(ty);
            if let Ty::Union(members) = &ty {
                if members.contains(&Ty::Prim("undefined".to_string())) {
                    optional = true;
                    ty = union(
                        members
                            .iter()
                            .filter(|m| **m != Ty::Prim("undefined".to_string()))
                            .cloned(),
                    );
                }
            }
            fields.insert(name.trim_matches('"').to_string(), (optional, ty));
        }
        Ty::Object(fields)
    }
}

/// `Name<inner>` → `inner`.
fn generic<'t>(ty: &'t str, name: &str) -> Option<&'t str> {
    ty.strip_prefix(name)?.strip_prefix('<')?.strip_suffix('>')
}

/// The union of `members`, flattened (a named union too), sorted, deduplicated;
/// a single member stands alone.
fn union(members: impl Iterator<Item = Ty>) -> Ty {
    fn flatten(ty: Ty, into: &mut Vec<Ty>) {
        match ty {
            Ty::Union(members) => members.into_iter().for_each(|m| flatten(m, into)),
            Ty::Named(name, inner) if matches!(*inner, Ty::Union(_)) => {
                let _ = name;
                flatten(*inner, into)
            }
            ty => into.push(ty),
        }
    }
    let mut flat = Vec::new();
    members.for_each(|m| flatten(m, &mut flat));
    flat.sort();
    flat.dedup();
    if flat.len() == 1 {
        flat.pop().unwrap()
    } else {
        Ty::Union(flat)
    }
}

impl Ty {
    /// Every mismatch between `value` and this type, each naming its path
    /// under `path`.
    pub(super) fn check(&self, value: &Value, path: &str) -> Vec<String> {
        let fits = match self {
            Ty::Named(_, ty) => return ty.check(value, path),
            Ty::Union(members) => {
                return if members.iter().any(|m| m.check(value, path).is_empty()) {
                    Vec::new()
                } else {
                    vec![format!("{path}: {value} is none of `{self}`")]
                };
            }
            Ty::Array(item) => {
                return match value {
                    Value::Array(items) => items
                        .iter()
                        .enumerate()
                        .flat_map(|(i, v)| item.check(v, &format!("{path}[{i}]")))
                        .collect(),
                    _ => vec![format!("{path}: {value} is not an array (`{self}`)")],
                };
            }
            Ty::Map(key, item) => {
                let Value::Object(object) = value else {
                    return vec![format!("{path}: {value} is not `{self}`")];
                };
                return object
                    .iter()
                    .flat_map(|(k, v)| {
                        let at = format!("{path}.{k}");
                        let mut failures = key.check(&Value::String(k.clone()), &at);
                        failures.extend(item.check(v, &at));
                        failures
                    })
                    .collect();
            }
            Ty::Object(fields) => return check_fields(fields, value, path),
            Ty::Prim(name) => match name.as_str() {
                "string" => value.is_string(),
                "number" => value.is_number(),
                "boolean" => value.is_boolean(),
                "null" => value.is_null(),
                "unknown" => true,
                unresolved => {
                    let name = unresolved.trim_start_matches("unresolved ");
                    return vec![format!("{path}: unknown type `{name}`")];
                }
            },
            Ty::Literal(text) => match text.strip_prefix('\'') {
                Some(text) => value.as_str() == text.strip_suffix('\''),
                None if text == "true" || text == "false" => {
                    value.as_bool() == Some(text == "true")
                }
                None => value.as_f64() == text.parse::<f64>().ok(),
            },
        };
        if fits {
            Vec::new()
        } else {
            vec![format!("{path}: {value} is not `{self}`")]
        }
    }
}

/// `value` against an object type's fields: each declared one present
/// (unless optional) and of its type, and none other.
fn check_fields(fields: &BTreeMap<String, (bool, Ty)>, value: &Value, path: &str) -> Vec<String> {
    let Value::Object(object) = value else {
        return vec![format!("{path}: {value} is not an object")];
    };
    let mut failures = Vec::new();
    for (name, (optional, ty)) in fields {
        match object.get(name) {
            Some(field) => failures.extend(ty.check(field, &format!("{path}.{name}"))),
            None if !optional => failures.push(format!("{path}.{name}: required, absent")),
            None => {}
        }
    }
    for key in object.keys() {
        if !fields.contains_key(key) {
            failures.push(format!("{path}.{key}: returned, not declared"));
        }
    }
    failures
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
fn split_top(text: &str, separator: char) -> Vec<&str> {
    split_where(text, |c| c == separator)
}

fn split_where(text: &str, at: impl Fn(char) -> bool) -> Vec<&str> {
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

    /// A result as the JSON JS receives from it (`JSON.parse` of its text).
    fn to_json(value: impl serde::Serialize) -> serde_json::Result<Value> {
        serde_json::from_str(&serde_json::to_string(&value)?)
    }
    use crate::domain::names::{MemberName, TeamName};
    use crate::runtime::composition::{Instance, RootPaths, Tuning};

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
        let reported = to_json(
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
        )
        .unwrap();
        assert_eq!(reported["accepted"], json!(true), "{reported}");
        let rejected = to_json(
            engine
                .report(&json!({
                    "teamName": "forge", "memberName": "jack", "state": "caught_up",
                    "agendaFingerprint": "agenda:v1:stale",
                }))
                .unwrap(),
        )
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
            failures.extend(declarations.read(&declared).check(result, method));
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
                declarations.read("Thing").check(&value, "T"),
                expected,
                "{value}"
            );
        }
        assert_eq!(
            declarations.read("Missing").check(&json!(1), "T"),
            ["T: unknown type `Missing`"]
        );
    }
}
