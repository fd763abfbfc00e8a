//! The small traits the use cases run over; infrastructure implements them,
//! tests swap in fakes.

use crate::domain::status::MemberStatus;
use crate::domain::team::TeamSnapshot;
use crate::domain::time::EpochMs;

/// Failures of a port.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// The file system failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The app clock. Leases and tokens are timed by it only.
pub trait Clock: Send + Sync {
    /// Now, in epoch milliseconds.
    fn now_ms(&self) -> EpochMs;
}

/// Reads a consistent snapshot of a team from wherever the team lives.
pub trait TeamSource: Send + Sync {
    /// Loads the team; missing or broken inputs degrade to defaults plus diagnostics.
    fn load(&self, team_name: &str) -> TeamSnapshot;

    /// Loads only what identifies the roster (config and members meta), no
    /// tasks or board: enough to check who is an active member.
    fn load_roster(&self, team_name: &str) -> TeamSnapshot {
        self.load(team_name)
    }
}

/// A stored status and how it was found.
#[derive(Debug, Clone, PartialEq)]
pub enum StoredStatus {
    /// Nothing stored.
    Missing,
    /// The member's own status file.
    Current(MemberStatus),
    /// Found only in the legacy v1 team-level file.
    Legacy(MemberStatus),
    /// The member file was corrupt or from a future version and was moved aside.
    Quarantined {
        /// Why (`invalid_json`, `future_schema_version:3`, ...).
        reason: String,
    },
}

impl StoredStatus {
    /// The status, wherever it came from.
    pub fn into_status(self) -> Option<MemberStatus> {
        match self {
            Self::Missing | Self::Quarantined { .. } => None,
            Self::Current(s) | Self::Legacy(s) => Some(s),
        }
    }
}

/// Per-member status persistence.
pub trait StatusStore: Send + Sync {
    /// Reads the stored status of a member (corrupt files are quarantined and read as missing).
    fn read(&self, team_name: &str, member_name: &str) -> Result<StoredStatus, PortError>;
    /// Read-modify-write of a member's status under the member's store lock:
    /// `build` gets what is stored and returns what to write.
    fn update(
        &self,
        team_name: &str,
        member_name: &str,
        build: &mut dyn FnMut(StoredStatus) -> MemberStatus,
    ) -> Result<MemberStatus, PortError>;
}

/// One audit journal event.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEvent {
    /// `reconcile_started`, `agenda_loaded`, ...
    pub kind: &'static str,
    /// `reconciler`, `reporter`, ...
    pub source: &'static str,
    /// Team.
    pub team_name: String,
    /// Member.
    pub member_name: String,
    /// When.
    pub at_ms: EpochMs,
    /// Diagnostics at that point.
    pub diagnostics: Vec<String>,
    /// Extra fields.
    pub metadata: serde_json::Map<String, serde_json::Value>,
}

/// Append-only audit trail. Audit failures never fail the use case.
pub trait AuditJournal: Send + Sync {
    /// Records `event`.
    fn record(&self, event: AuditEvent);
}
