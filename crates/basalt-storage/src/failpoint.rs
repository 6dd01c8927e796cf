//! Named steps where a process can be made to die, as `kill -9` would kill it there, so a
//! test proves that recovery copes with a death at exactly that step (HBase's tests inject
//! the same with procedure kill-and-restart toggles). A process arms them at start with
//! `BASALT_FAILPOINTS=name[,name...]`; unarmed, a failpoint is one comparison against an
//! empty list.
//!
//! The points, by where they sit:
//! - `master.recovery.fenced`: a dead server's log is fenced, not yet split;
//! - `master.recovery.split`: its log is split and cleared, its regions not yet assigned;
//! - `master.split.closed`: a split's parent is closed, the catalog not yet switched;
//! - `master.merge.closed`: a merge's parents are closed, the catalog not yet switched;
//! - `region.replaying`: a region opening on a new server has its recovered edits to
//!   replay, and has replayed none.

use std::sync::OnceLock;

/// The environment variable that arms failpoints.
pub const ARMED_BY: &str = "BASALT_FAILPOINTS";

fn armed() -> &'static [String] {
    static ARMED: OnceLock<Vec<String>> = OnceLock::new();
    ARMED.get_or_init(|| {
        std::env::var(ARMED_BY)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    })
}

/// Dies here, at once and without cleaning up (no flush, no goodbye to the coordinator),
/// when the process armed failpoint `name`.
pub fn fail_point(name: &str) {
    if armed().iter().any(|a| a == name) {
        eprintln!("failpoint {name}: the process dies here");
        std::process::abort();
    }
}
