//! Issue 23 item 1: the memory a delivery takes is bounded by the inbox's
//! size, not by how many rows it holds. Counted by a global allocator that
//! tracks the peak of live heap bytes (deterministic, no timing), so this
//! file holds this one test: other tests' threads would share the count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};

use member_work_sync::infrastructure::inbox::{
    DeliveryOutcome, InboxWriter, NudgeRow, NudgeTaskRef, MAX_INBOX_FILE_BYTES,
};

/// The system allocator, counting live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const MIB: usize = 1024 * 1024;

fn nudge() -> NudgeRow {
    NudgeRow {
        to: "jack".into(),
        text: "You have 1 actionable item: #1 Ship".into(),
        timestamp: "2025-05-06T03:33:20.000Z".into(),
        task_refs: vec![NudgeTaskRef {
            team_name: "forge".into(),
            task_id: "1".into(),
            display_id: "1".into(),
        }],
        message_id: "member-work-sync:forge:jack:fp".into(),
        work_sync_intent: "agenda_sync".into(),
        work_sync_intent_key: None,
        work_sync_review_request_event_ids: Vec::new(),
        work_sync_payload_hash: "h1".into(),
    }
}

/// `[e,e,…]` of 8 MiB: enough that a tree of its rows (32 bytes per `0`)
/// would be far over the bound; `scripts/bench/bench-hostile-inbox.js` measures 31 MiB.
fn hostile(element: &str) -> Vec<u8> {
    let size = 8 * MIB;
    let mut bytes = Vec::with_capacity(size);
    bytes.push(b'[');
    while bytes.len() + element.len() + 2 <= size {
        if bytes.len() > 1 {
            bytes.push(b',');
        }
        bytes.extend_from_slice(element.as_bytes());
    }
    bytes.push(b']');
    bytes
}

#[test]
fn delivering_into_a_hostile_inbox_takes_one_copy_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let teams = dir.path().join("teams");
    let inbox = teams.join("forge/inboxes/jack.json");
    fs::create_dir_all(inbox.parent().unwrap()).unwrap();
    let writer = InboxWriter::new(teams);
    for element in ["0", "{}"] {
        let content = hostile(element);
        fs::write(&inbox, &content).unwrap();
        let size = content.len();
        drop(content);
        let baseline = LIVE.load(Ordering::Relaxed);
        PEAK.store(baseline, Ordering::Relaxed);
        let outcome = writer.deliver("forge", "jack", &nudge(), 0).unwrap();
        let peak_over_baseline = PEAK.load(Ordering::Relaxed) - baseline;
        assert_eq!(outcome, DeliveryOutcome::Inserted, "{element}");
        // The file once, plus what does not grow with it (the row, paths,
        // one bit per nesting level of a row).
        assert!(
            peak_over_baseline <= size + MIB,
            "`{element}` rows: peak {peak_over_baseline} bytes over the baseline for a {size} byte inbox"
        );
        let after = fs::metadata(&inbox).unwrap().len();
        assert!(after <= MAX_INBOX_FILE_BYTES && after < (size + 1024) as u64);
    }
}
