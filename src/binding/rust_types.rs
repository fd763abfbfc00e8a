//! Checks the hand-written result types of `api-types.d.ts` (which napi
//! copies into `index.d.ts`) against the Rust types the methods serialize:
//! `ts-rs` derives each Rust type's TypeScript from its serde attributes
//! (`rename_all`, `skip_serializing_if` + `default` or `optional_fields`),
//! and both sides are parsed into one small type form and compared field by
//! field: names, optionality (`?`), and types (literal unions, arrays,
//! objects, records), the order and formatting aside.
//!
//! The hand side may be narrower where the Rust type cannot say more (a
//! `string` field that holds only the declared literals, a JSON value typed
//! as a record): each such narrowing is named in [`NARROWED`], so a new one
//! fails until it is looked at, and `result_shapes.rs` checks the real
//! values of those fields. Numbers: the results reach JS as JSON, so Rust's
//! 64-bit integers are `number` there (`Config::with_large_int`).

use std::any::TypeId;
use std::collections::{BTreeSet, HashSet};

use ts_rs::{Config, TypeVisitor, TS};

use super::result_shapes::{declared_return, Declarations, Reader, Ty};

/// What a comparison found.
#[derive(Debug, Default)]
struct Findings {
    /// `Interface.field: ...` for every difference.
    mismatches: Vec<String>,
    /// Paths where the hand side is narrower than the Rust type.
    narrowed: BTreeSet<String>,
    /// Hand-side names compared.
    visited: BTreeSet<String>,
}

impl Findings {
    /// Compares the hand-written `hand` with the Rust-derived `rust` at `at`.
    fn compare(&mut self, hand: &Ty, rust: &Ty, at: &str) {
        match (hand, rust) {
            (Ty::Named(name, hand), rust) => {
                self.visited.insert(name.clone());
                // Below an interface, paths start at its name; an alias is
                // named by the field that uses it.
                let at = if matches!(**hand, Ty::Object(_)) {
                    name
                } else {
                    at
                };
                self.compare(hand, rust, at)
            }
            (hand, Ty::Named(_, rust)) => self.compare(hand, rust, at),
            (hand, rust) if hand == rust => {}
            (Ty::Union(_), _) | (_, Ty::Union(_)) => self.compare_union(hand, rust, at),
            (Ty::Object(hand), Ty::Object(rust)) => {
                let names: BTreeSet<&String> = hand.keys().chain(rust.keys()).collect();
                for name in names {
                    let path = format!("{at}.{name}");
                    match (hand.get(name), rust.get(name)) {
                        (Some(_), None) => self
                            .mismatches
                            .push(format!("{path}: declared, not in the Rust type")),
                        (None, Some(_)) => self
                            .mismatches
                            .push(format!("{path}: in the Rust type, not declared")),
                        (Some((hand_optional, hand)), Some((rust_optional, rust))) => {
                            if hand_optional != rust_optional {
                                let says = |optional: &bool| {
                                    if *optional {
                                        "optional"
                                    } else {
                                        "required"
                                    }
                                };
                                self.mismatches.push(format!(
                                    "{path}: declared {}, {} in the Rust type",
                                    says(hand_optional),
                                    says(rust_optional)
                                ));
                            }
                            self.compare(hand, rust, &path);
                        }
                        (None, None) => {}
                    }
                }
            }
            (Ty::Array(hand), Ty::Array(rust)) => self.compare(hand, rust, &format!("{at}[]")),
            (Ty::Map(hand_key, hand_value), Ty::Map(rust_key, rust_value)) => {
                self.compare(hand_key, rust_key, &format!("{at}[key]"));
                self.compare(hand_value, rust_value, &format!("{at}[value]"));
            }
            (hand, Ty::Prim(rust)) if narrows(hand, rust) => {
                self.narrowed.insert(at.to_string());
            }
            (hand, rust) => self.mismatches.push(format!(
                "{at}: declared `{hand}`, the Rust type is `{rust}`"
            )),
        }
    }

    /// Every declared member must fit a Rust member, and every Rust member
    /// must be covered by a declared one.
    fn compare_union(&mut self, hand: &Ty, rust: &Ty, at: &str) {
        let members = |ty: &Ty| match ty {
            Ty::Union(members) => members.clone(),
            ty => vec![ty.clone()],
        };
        let (hand, rust) = (members(hand), members(rust));
        let fits = |h: &Ty, r: &Ty| {
            let mut probe = Findings::default();
            probe.compare(h, r, at);
            probe.mismatches.is_empty().then_some(probe)
        };
        for h in &hand {
            match rust.iter().find_map(|r| fits(h, r)) {
                Some(probe) => {
                    self.narrowed.extend(probe.narrowed);
                    self.visited.extend(probe.visited);
                }
                None => self.mismatches.push(format!(
                    "{at}: declares `{h}`, which the Rust type never is"
                )),
            }
        }
        for r in &rust {
            if !hand.iter().any(|h| fits(h, r).is_some()) {
                self.mismatches
                    .push(format!("{at}: the Rust type may be `{r}`, not declared"));
            }
        }
    }
}

/// Whether the declared `hand` only narrows the Rust primitive `rust`: string
/// literals of a `string`, number literals of a `number`, `true` or
/// `false` of a `boolean`, anything of JSON.
fn narrows(hand: &Ty, rust: &str) -> bool {
    match (hand, rust) {
        (_, "unknown") => true,
        (Ty::Literal(text), "string") => text.starts_with('\''),
        (Ty::Literal(text), "number") => text.parse::<f64>().is_ok(),
        (Ty::Literal(text), "boolean") => text == "true" || text == "false",
        (Ty::Map(key, _), "string") => matches!(**key, Ty::Prim(ref p) if p == "string"),
        _ => false,
    }
}

/// The TypeScript of `T` (its `name`) and the declarations of every type it
/// uses, as d.ts source.
fn rust_declarations<T: TS + 'static + ?Sized>(config: &Config) -> (String, Declarations) {
    struct Collect<'a> {
        config: &'a Config,
        seen: HashSet<TypeId>,
        source: String,
    }
    impl TypeVisitor for Collect<'_> {
        fn visit<T: TS + 'static + ?Sized>(&mut self) {
            if !self.seen.insert(TypeId::of::<T>()) {
                return;
            }
            if T::output_path().is_some() {
                let decl = T::decl(self.config);
                self.source
                    .push_str(&format!("export {}\n", decl.trim().trim_end_matches(';')));
            }
            T::visit_dependencies(self);
            T::visit_generics(self);
        }
    }
    let mut collect = Collect {
        config,
        seen: HashSet::new(),
        source: String::new(),
    };
    collect.visit::<T>();
    (T::name(config), Declarations::parse(&collect.source))
}

/// The comparison of the declared `hand` type expression (read against
/// `declarations`) with the Rust type `T`, findings added to `findings`.
fn check<T: TS + 'static + ?Sized>(
    hand: &str,
    declarations: &Declarations,
    at: &str,
    findings: &mut Findings,
) {
    let config = Config::new().with_large_int("number");
    let (name, rust) = rust_declarations::<T>(&config);
    let hand = Reader {
        declarations,
        keep_names: true,
    }
    .read(hand);
    let rust = Reader {
        declarations: &rust,
        keep_names: false,
    }
    .read(&name);
    findings.compare(&hand, &rust, at);
}

/// Where the declarations are narrower than the Rust types (see the module
/// docs); each is a field the Rust side keeps as text, number or JSON.
const NARROWED: &[&str] = &[
    "MemberWorkSyncActionableWorkItem.evidence.needsClarification",
    "MemberWorkSyncActionableWorkItem.evidence.reviewObligation",
    // The raw record: any JSON object.
    "MemberWorkSyncExplainEntry.fields",
    "MemberWorkSyncQueueDiagnostics.queuedItems[].triggerReasonCounts[key]",
    "MemberWorkSyncQueueDiagnostics.queuedItems[].triggerReasonCounts[value]",
    "MemberWorkSyncQueueDiagnostics.queuedItems[].triggerReasons[]",
    "MemberWorkSyncQueueDiagnostics.runningItems[].triggerReasons[]",
    "MemberWorkSyncReport.rejectionCode",
    "MemberWorkSyncReport.source",
    "MemberWorkSyncReportResult.code",
    "MemberWorkSyncStatus.shadow.nudgeSuppression.reason",
    "MemberWorkSyncStatus.shadow.triggerReasons[]",
    "MemberWorkSyncTeamMetrics.recentEvents[].rejectionCode",
    "MemberWorkSyncTeamMetrics.stateCounts[key]",
];

/// Interfaces of `api-types.d.ts` that are not method results, and why.
const NOT_RESULTS: &[(&str, &str)] = &[
    (
        "MemberWorkSyncError",
        "the errors' shape (job.rs maps every failure)",
    ),
    (
        "MemberWorkSyncNoNativeBinaryError",
        "thrown by index.js, not the addon",
    ),
    (
        "MemberWorkSyncStorageGateway",
        "the app's object the addon calls",
    ),
    (
        "MemberWorkSyncStorageSelector",
        "the app's object the addon calls",
    ),
    (
        "MemberWorkSyncStorageOption",
        "a constructor option (options.rs)",
    ),
    (
        "MemberWorkSyncReportRequest",
        "an argument, read by domain::report",
    ),
    (
        "MemberWorkSyncProofMissingRecoveryScheduleRequest",
        "an argument (args.rs)",
    ),
    ("TeamChangeEvent", "an argument (event_fields.rs)"),
    (
        "MemberWorkSyncLogEntry",
        "an onLog payload, built as JSON in log.rs",
    ),
    (
        "MemberWorkSyncHostQuestion",
        "an onHostQuestion payload, built as JSON in host.rs",
    ),
    (
        "MemberWorkSyncAgentBrief",
        "getAgentBrief's result, untyped (see UNTYPED)",
    ),
];

/// Stored as its ISO-8601 text.
impl TS for crate::domain::time::IsoTime {
    type WithoutGenerics = Self;
    type OptionInnerType = Self;

    fn name(_: &Config) -> String {
        "string".to_string()
    }

    fn inline(config: &Config) -> String {
        Self::name(config)
    }
}

/// The known spellings (a stored unknown one is kept as read, but the addon
/// derives only these).
impl TS for crate::domain::agenda::ItemReason {
    type WithoutGenerics = Self;
    type OptionInnerType = Self;

    fn name(_: &Config) -> String {
        let known: Vec<String> = Self::KNOWN
            .iter()
            .map(|reason| format!("'{}'", reason.as_str()))
            .collect();
        known.join(" | ")
    }

    fn inline(config: &Config) -> String {
        Self::name(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::application::explain::Explanation;
    use crate::application::nudges::DispatchSummary;
    use crate::application::proof_missing::ScheduleResult;
    use crate::application::queue_diagnostics::QueueDiagnostics;
    use crate::application::reconcile::TeamPreview;
    use crate::application::report::ReplaySummary;
    use crate::application::report::ReportResult;
    use crate::application::turn_settled::DrainSummary;
    use crate::domain::metrics::TeamMetrics;
    use crate::domain::status::MemberStatus;

    /// Methods whose result no Rust type describes, and why.
    const UNTYPED: &[(&str, &str)] = &[
        (
            "get_agent_brief",
            "application::report::agent_brief builds a serde_json::Value (result_shapes.rs checks its real value)",
        ),
        (
            "build_runtime_turn_settled_hook_settings",
            "a fragment of the runtime's own settings: JSON by design",
        ),
        (
            "build_runtime_turn_settled_environment",
            "environment variables: JSON by design",
        ),
        (
            "merge_runtime_hook_settings",
            "the runtime's own settings, merged: JSON by design",
        ),
    ];

    #[derive(serde::Serialize, ts_rs::TS)]
    #[serde(rename_all = "camelCase")]
    #[ts(optional_fields)]
    #[allow(dead_code)]
    struct Probe {
        task_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        display_id: Option<String>,
        kind: ProbeKind,
        tags: Vec<String>,
        count: u64,
    }

    #[derive(serde::Serialize, ts_rs::TS)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum ProbeKind {
        Work,
        Review,
    }

    /// The comparison itself: formatting and order aside, each kind of
    /// drift is found and named, and a narrowing is told apart.
    #[test]
    fn the_comparison_names_each_kind_of_drift() {
        // (declared interface body, mismatches, narrowed paths)
        let cases: [(&str, &[&str], &[&str]); 8] = [
            (
                "{ taskId: string; displayId?: string; kind: 'work' | 'review'; tags: string[]; count: number }",
                &[],
                &[],
            ),
            (
                "{\n  count: number,\n  tags: Array<string>\n  kind: 'review' | 'work'\n  displayId: string | undefined\n  /** x */ taskId: string }",
                &[],
                &[],
            ),
            (
                "{ taskId: string; kind: 'work' | 'review'; tags: string[]; count: number }",
                &["T.displayId: in the Rust type, not declared"],
                &[],
            ),
            (
                "{ taskId: string; displayId?: string; kind: 'work' | 'review'; tags: string[]; count: number; extra: string }",
                &["T.extra: declared, not in the Rust type"],
                &[],
            ),
            (
                "{ taskId: string; displayId: string; kind: 'work' | 'review'; tags: string[]; count: number }",
                &["T.displayId: declared required, optional in the Rust type"],
                &[],
            ),
            (
                "{ taskId: number; displayId?: string; kind: 'work' | 'review'; tags: string[]; count: number }",
                &["T.taskId: declared `number`, the Rust type is `string`"],
                &[],
            ),
            (
                "{ taskId: string; displayId?: string; kind: 'work' | 'done'; tags: string[]; count: number }",
                &[
                    "T.kind: declares `'done'`, which the Rust type never is",
                    "T.kind: the Rust type may be `'review'`, not declared",
                ],
                &[],
            ),
            (
                "{ taskId: string; displayId?: string; kind: 'work' | 'review'; tags: ('a' | 'b')[]; count: 1 }",
                &[],
                &["T.count", "T.tags[]"],
            ),
        ];
        for (body, mismatches, narrowed) in cases {
            let declarations = Declarations::parse(&format!("export interface T {body}\n"));
            let mut findings = Findings::default();
            check::<Probe>("T", &declarations, "probe", &mut findings);
            assert_eq!(findings.mismatches, mismatches, "{body}");
            let found: Vec<&str> = findings.narrowed.iter().map(String::as_str).collect();
            assert_eq!(found, narrowed, "{body}");
            assert!(findings.visited.contains("T"), "{body}");
        }
    }

    /// Every method's declared result (its `ts_return_type`, through
    /// `api-types.d.ts`) against the Rust type the method serializes.
    #[test]
    fn every_declared_result_matches_its_rust_type() {
        let declarations = Declarations::parse(include_str!("api-types.d.ts"));
        let sources = [include_str!("mod.rs"), include_str!("turn_settled.rs")].concat();
        let mut findings = Findings::default();
        let mut covered = BTreeSet::new();
        macro_rules! method {
            ($method:literal, $rust:ty) => {
                covered.insert($method);
                let declared = declared_return(&sources, $method);
                check::<$rust>(&declared, &declarations, $method, &mut findings);
            };
        }
        method!("get_status", MemberStatus);
        method!("refresh_status", MemberStatus);
        method!("preview_status", MemberStatus);
        method!("preview_team", TeamPreview);
        method!("refresh_team", Vec<MemberStatus>);
        method!("report", ReportResult);
        method!("schedule_proof_missing_recovery", ScheduleResult);
        method!("explain", Explanation);
        method!("get_metrics", TeamMetrics);
        method!("preview_metrics", TeamMetrics);
        method!("replay_pending_reports", ReplaySummary);
        method!("get_queue_diagnostics", QueueDiagnostics);
        method!("dispatch_due_nudges", DispatchSummary);
        method!("drain_runtime_turn_settled_events", DrainSummary);
        let mismatches: BTreeSet<&String> = findings.mismatches.iter().collect();
        assert!(mismatches.is_empty(), "{mismatches:#?}");
        let narrowed: Vec<&str> = findings.narrowed.iter().map(String::as_str).collect();
        assert_eq!(narrowed, NARROWED, "narrowed fields");

        // Every method that declares a result is compared (or named untyped).
        let mut declaring = BTreeSet::new();
        for (at, _) in sources.match_indices("ts_return_type = \"") {
            let rest = &sources[at..];
            let name_at = rest.find("pub fn ").unwrap() + "pub fn ".len();
            let method = &rest[name_at..name_at + rest[name_at..].find('(').unwrap()];
            if declared_return(&sources, method) != "void" {
                declaring.insert(method.to_string());
            }
        }
        let compared: BTreeSet<String> = covered
            .iter()
            .chain(UNTYPED.iter().map(|(method, _)| method))
            .map(|m| m.to_string())
            .collect();
        assert_eq!(declaring, compared, "methods declaring a result");

        // Every interface is a compared result or named as something else.
        let others: BTreeSet<&str> = NOT_RESULTS.iter().map(|(name, _)| *name).collect();
        let unchecked: Vec<&str> = declarations
            .interface_names()
            .filter(|name| !findings.visited.contains(*name) && !others.contains(name))
            .collect();
        assert!(
            unchecked.is_empty(),
            "interfaces neither compared nor listed: {unchecked:?}"
        );
    }
}
