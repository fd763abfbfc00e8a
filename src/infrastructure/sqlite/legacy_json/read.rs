//! Reading a team's legacy snapshot: the live files (quarantining what does
//! not parse or validate) and every archive generation, oldest to newest.

use std::path::PathBuf;

use serde_json::Value;

use crate::domain::names::normalize_member_name;
use crate::infrastructure::sqlite::identity::team_key;

use super::shape::{entries_of, events_of, values_of, Shape, Source};
use super::snapshot::{member_of, pick_domain_intent, pick_domain_outbox, str_of, team_of, Keyed};
use super::{LegacyFileError, LegacyFiles, LegacySnapshot};

impl LegacyFiles {
    /// The live files' snapshot; `None` when no candidate file exists.
    pub(crate) fn read_active(
        &self,
        team: &str,
        now_ms: i64,
    ) -> Result<Option<LegacySnapshot>, LegacyFileError> {
        let members = self.members(team)?;
        let mut files_to_archive = Vec::new();
        for path in self.candidates(team, &members) {
            if self.exists(&path)? {
                files_to_archive.push(path);
            }
        }
        if files_to_archive.is_empty() {
            return Ok(None);
        }
        let key = team_key(team);
        let live = |path: PathBuf, shape| self.read(&path, shape, Source::Live, now_ms);

        let mut statuses = Keyed::new();
        for member in &members {
            let file = live(
                self.member_file(team, member, "status.json"),
                Shape::MemberStatus,
            )?;
            if let Some(status) = file.and_then(|f| f.get("status").cloned()) {
                if team_of(&status) == key {
                    statuses.set(member_of(&status), status);
                }
            }
        }
        let legacy_status = live(self.legacy_status(team), Shape::LegacyStatus)?;
        for (member, status) in entries_of(&legacy_status, "members") {
            if team_of(&status) != key {
                continue;
            }
            let mut member_key_of = member_of(&status);
            if member_key_of.is_empty() {
                member_key_of = normalize_member_name(&member);
            }
            if statuses.get(&member_key_of).is_none() {
                statuses.set(member_key_of, status);
            }
        }

        let owned = |row: &Value, member: &str| {
            team_of(row) == key && member_of(row) == normalize_member_name(member)
        };
        let mut intents = Keyed::new();
        for member in &members {
            let file = live(
                self.member_file(team, member, "reports.json"),
                Shape::MemberReports,
            )?;
            for intent in values_of(&file, "intents") {
                if let (true, Some(id)) = (owned(&intent, member), str_of(&intent, "id")) {
                    intents.set(id.to_string(), intent.clone());
                }
            }
        }
        let legacy_reports = live(self.legacy_reports(team), Shape::LegacyReports)?;
        for intent in values_of(&legacy_reports, "intents") {
            if let (true, Some(id)) = (team_of(&intent) == key, str_of(&intent, "id")) {
                intents.pick(id.to_string(), intent.clone(), pick_domain_intent);
            }
        }

        let mut outbox = Keyed::new();
        for member in &members {
            let file = live(
                self.member_file(team, member, "outbox.json"),
                Shape::MemberOutbox,
            )?;
            for item in values_of(&file, "items") {
                if let (true, Some(id)) = (owned(&item, member), str_of(&item, "id")) {
                    outbox.set(id.to_string(), item.clone());
                }
            }
        }
        let legacy_outbox = live(self.legacy_outbox(team), Shape::LegacyOutbox)?;
        for item in values_of(&legacy_outbox, "items") {
            if let (true, Some(id)) = (team_of(&item) == key, str_of(&item, "id")) {
                outbox.pick(id.to_string(), item.clone(), pick_domain_outbox);
            }
        }

        let mut events = Keyed::new();
        let metrics = live(self.index(team, "metrics.json"), Shape::MetricsIndex)?;
        for event in events_of(&legacy_status, &["metrics", "recentEvents"])
            .into_iter()
            .chain(events_of(&metrics, &["recentEvents"]))
        {
            if let (true, Some(id)) = (team_of(&event) == key, str_of(&event, "id")) {
                events.set(id.to_string(), event.clone());
            }
        }
        Ok(Some(LegacySnapshot {
            statuses: statuses.into_values(),
            report_intents: intents.into_values(),
            outbox_items: outbox.into_values(),
            metric_events: events.into_values(),
            files_to_archive,
        }))
    }

    /// Every archive generation overlaid oldest to newest; `None` when no
    /// generation of any file exists.
    pub(crate) fn read_archived(
        &self,
        team: &str,
    ) -> Result<Option<LegacySnapshot>, LegacyFileError> {
        let members = self.members(team)?;
        let key = team_key(team);
        let mut count = 0usize;
        let mut archives =
            |path: PathBuf, shape: Shape| -> Result<Vec<Option<Value>>, LegacyFileError> {
                let generations = self.generations(&path)?;
                count += generations.len();
                generations
                    .into_iter()
                    .map(|(_, p)| self.read(&p, shape, Source::Archive, 0))
                    .collect()
            };

        let mut statuses = Keyed::new();
        let legacy_statuses = archives(self.legacy_status(team), Shape::LegacyStatus)?;
        for legacy in &legacy_statuses {
            for (member, status) in entries_of(legacy, "members") {
                if team_of(&status) != key {
                    continue;
                }
                let mut k = member_of(&status);
                if k.is_empty() {
                    k = normalize_member_name(&member);
                }
                statuses.set(k, status);
            }
        }
        for member in &members {
            for file in archives(
                self.member_file(team, member, "status.json"),
                Shape::MemberStatus,
            )? {
                if let Some(status) = file.and_then(|f| f.get("status").cloned()) {
                    if team_of(&status) == key {
                        statuses.set(member_of(&status), status);
                    }
                }
            }
        }

        let owned = |row: &Value, member: &str| {
            team_of(row) == key && member_of(row) == normalize_member_name(member)
        };
        let mut intents = Keyed::new();
        for file in archives(self.legacy_reports(team), Shape::LegacyReports)? {
            for intent in values_of(&file, "intents") {
                if let (true, Some(id)) = (team_of(&intent) == key, str_of(&intent, "id")) {
                    intents.pick(id.to_string(), intent.clone(), pick_domain_intent);
                }
            }
        }
        for member in &members {
            for file in archives(
                self.member_file(team, member, "reports.json"),
                Shape::MemberReports,
            )? {
                for intent in values_of(&file, "intents") {
                    if let (true, Some(id)) = (owned(&intent, member), str_of(&intent, "id")) {
                        intents.pick(id.to_string(), intent.clone(), pick_domain_intent);
                    }
                }
            }
        }

        let mut outbox = Keyed::new();
        for file in archives(self.legacy_outbox(team), Shape::LegacyOutbox)? {
            for item in values_of(&file, "items") {
                if let (true, Some(id)) = (team_of(&item) == key, str_of(&item, "id")) {
                    outbox.pick(id.to_string(), item.clone(), pick_domain_outbox);
                }
            }
        }
        for member in &members {
            for file in archives(
                self.member_file(team, member, "outbox.json"),
                Shape::MemberOutbox,
            )? {
                for item in values_of(&file, "items") {
                    if let (true, Some(id)) = (owned(&item, member), str_of(&item, "id")) {
                        outbox.pick(id.to_string(), item.clone(), pick_domain_outbox);
                    }
                }
            }
        }

        let mut events = Keyed::new();
        let metrics = archives(self.index(team, "metrics.json"), Shape::MetricsIndex)?;
        let legacy_events = legacy_statuses
            .iter()
            .flat_map(|f| events_of(f, &["metrics", "recentEvents"]));
        let index_events = metrics.iter().flat_map(|f| events_of(f, &["recentEvents"]));
        for event in legacy_events.chain(index_events) {
            if let (true, Some(id)) = (team_of(&event) == key, str_of(&event, "id")) {
                events.set(id.to_string(), event.clone());
            }
        }
        // The routing indexes hold no rows, but an archived one is a snapshot.
        archives(self.index(team, "outbox-index.json"), Shape::MemberOutbox)?;
        archives(
            self.index(team, "pending-reports-index.json"),
            Shape::MemberOutbox,
        )?;
        if count == 0 {
            return Ok(None);
        }
        Ok(Some(LegacySnapshot {
            statuses: statuses.into_values(),
            report_intents: intents.into_values(),
            outbox_items: outbox.into_values(),
            metric_events: events.into_values(),
            files_to_archive: Vec::new(),
        }))
    }
}
