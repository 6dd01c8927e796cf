//! A region opened after its server died replays the edits the master split out of that
//! server's log (`wal/split.rs`) before it serves (HBase's `replayRecoveredEditsIfAny`).

use std::sync::atomic::Ordering;

use basalt_model::Result;

use super::Region;
use crate::failpoint::fail_point;
use crate::wal::split::{decode_whole, recovered_edits, RECOVERED_EDITS};

impl Region {
    /// Replays the region's recovered edits, if any: each edit its stores have not flushed
    /// goes into the memstore, the server's sequence id is raised past them (so they are
    /// visible, and later writes order after them), the region flushes, and the files go.
    /// Returns how many edits it replayed. Run once on open, before the region serves; run
    /// again after a crash part-way, it replays nothing twice that a flush already holds.
    ///
    /// # Errors
    /// `Corruption` for a damaged file (the region must not serve without its edits); `Io`
    /// reading, flushing or deleting. The files stay until a flush holds their edits.
    pub fn replay_recovered_edits(&self) -> Result<usize> {
        let files = recovered_edits(&self.env, &self.dir)?;
        if files.is_empty() {
            return Ok(0);
        }
        fail_point("region.replaying");
        let mut replayed = 0;
        let mut max_seq = 0;
        for f in &files {
            for e in decode_whole(&self.env, f)? {
                if e.region_id != self.info.id {
                    continue;
                }
                max_seq = max_seq.max(e.seq_id);
                replayed += 1;
                self.replay(e.seq_id, e.cells);
            }
        }
        self.seq.fetch_max(max_seq, Ordering::SeqCst);
        self.flush()?;
        self.env.remove_dir_all(&self.dir.join(RECOVERED_EDITS))?;
        tracing::info!(region = %self.name(), replayed, files = files.len(), "replayed recovered edits");
        Ok(replayed)
    }
}
