//! A team's legacy rows as the app's importer collects them: keyed by the
//! app's row keys, a later file's row replacing an earlier one's, except
//! where the app keeps the domain-preferred report intent or outbox item.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::domain::names::normalize_member_name;
use crate::infrastructure::sqlite::identity::team_key;

/// A team's rows read from legacy files, in the domain (camelCase) form.
#[derive(Debug, Clone, Default)]
pub(crate) struct LegacySnapshot {
    /// Member statuses, archived generations first, then the live file's.
    pub statuses: Vec<Value>,
    /// Report intents, in the same order.
    pub report_intents: Vec<Value>,
    /// Outbox items, in the same order.
    pub outbox_items: Vec<Value>,
    /// Metric events, in the same order.
    pub metric_events: Vec<Value>,
    /// The live files read, to archive once imported.
    pub files_to_archive: Vec<PathBuf>,
}

impl LegacySnapshot {
    /// `archived` rows followed by `active` ones (later rows win in the
    /// merge), the active files to archive.
    pub(crate) fn combine(archived: Option<Self>, active: Option<Self>) -> Option<Self> {
        if archived.is_none() && active.is_none() {
            return None;
        }
        let (archived, active) = (archived.unwrap_or_default(), active.unwrap_or_default());
        let join = |a: Vec<Value>, b: Vec<Value>| a.into_iter().chain(b).collect();
        Some(Self {
            statuses: join(archived.statuses, active.statuses),
            report_intents: join(archived.report_intents, active.report_intents),
            outbox_items: join(archived.outbox_items, active.outbox_items),
            metric_events: join(archived.metric_events, active.metric_events),
            files_to_archive: active.files_to_archive,
        })
    }

    /// The domain snapshot value [`super::snapshot::domain_to_records`] takes.
    pub(crate) fn to_domain(&self) -> Value {
        serde_json::json!({
            "statuses": self.statuses,
            "reportIntents": self.report_intents,
            "outboxItems": self.outbox_items,
            "metricEvents": self.metric_events,
            "filesToArchive": [],
        })
    }
}

/// Rows kept by identity in first-insertion order (a JavaScript `Map`).
pub(super) struct Keyed {
    order: Vec<String>,
    rows: HashMap<String, Value>,
}

impl Keyed {
    pub(super) fn new() -> Self {
        Self {
            order: Vec::new(),
            rows: HashMap::new(),
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        self.rows.get(key)
    }

    pub(super) fn set(&mut self, key: String, row: Value) {
        if !self.rows.contains_key(&key) {
            self.order.push(key.clone());
        }
        self.rows.insert(key, row);
    }

    /// Sets `row`, or what `pick(current, row)` chooses when the key is taken.
    pub(super) fn pick(&mut self, key: String, row: Value, pick: fn(Value, Value) -> Value) {
        let next = match self.rows.get(&key) {
            Some(current) => pick(current.clone(), row),
            None => row,
        };
        self.set(key, next);
    }

    pub(super) fn into_values(mut self) -> Vec<Value> {
        self.order
            .iter()
            .filter_map(|k| self.rows.remove(k))
            .collect()
    }
}

/// A row's string field (`None` when absent or not a string).
pub(in crate::infrastructure::sqlite) fn str_of<'a>(
    row: &'a Value,
    field: &str,
) -> Option<&'a str> {
    row.get(field).and_then(Value::as_str)
}

/// `normalizeTeamKey`: a non-string is the empty key.
pub(super) fn team_of(row: &Value) -> String {
    str_of(row, "teamName").map(team_key).unwrap_or_default()
}

/// `normalizeMemberKey` of a row's `memberName` (a non-string gives the
/// empty key).
pub(in crate::infrastructure::sqlite) fn member_of(row: &Value) -> String {
    str_of(row, "memberName")
        .map(normalize_member_name)
        .unwrap_or_default()
}

pub(in crate::infrastructure::sqlite) fn compare_iso(
    left: Option<&str>,
    right: Option<&str>,
) -> std::cmp::Ordering {
    use crate::domain::time::parse_iso;
    let ms = |v: Option<&str>| v.filter(|v| !v.is_empty()).and_then(parse_iso);
    match (ms(left), ms(right)) {
        (Some(l), Some(r)) => l.cmp(&r),
        (Some(_), None) => std::cmp::Ordering::Greater,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (None, None) => std::cmp::Ordering::Equal,
    }
}

/// `pickDomainReportIntent`: processed (any non-pending status) beats
/// pending; otherwise the later or equal time wins (ties to incoming).
pub(in crate::infrastructure::sqlite) fn pick_domain_intent(
    canonical: Value,
    incoming: Value,
) -> Value {
    let processed = |v: &Value| str_of(v, "status") != Some("pending");
    let (c, i) = (processed(&canonical), processed(&incoming));
    if c != i {
        return if i { incoming } else { canonical };
    }
    let time = |v: &Value, p: bool| {
        str_of(v, if p { "processedAt" } else { "recordedAt" }).map(str::to_string)
    };
    let (left, right) = (time(&canonical, c), time(&incoming, i));
    if compare_iso(right.as_deref(), left.as_deref()).is_ge() {
        incoming
    } else {
        canonical
    }
}

/// `pickDomainOutboxItem`: delivery proof, then generation, then the later
/// or equal update.
pub(in crate::infrastructure::sqlite) fn pick_domain_outbox(
    canonical: Value,
    incoming: Value,
) -> Value {
    let rank = |v: &Value| match str_of(v, "status") {
        Some("delivered") => 2,
        Some("failed_terminal") => 1,
        _ => 0,
    };
    let (c, i) = (rank(&canonical), rank(&incoming));
    if c != i && (c > 0 || i > 0) {
        return if i > c { incoming } else { canonical };
    }
    let generation = |v: &Value| v.get("attemptGeneration").and_then(Value::as_f64);
    let (cg, ig) = (generation(&canonical), generation(&incoming));
    if cg != ig {
        return if ig > cg { incoming } else { canonical };
    }
    if compare_iso(
        str_of(&incoming, "updatedAt"),
        str_of(&canonical, "updatedAt"),
    )
    .is_ge()
    {
        incoming
    } else {
        canonical
    }
}
