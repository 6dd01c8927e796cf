//! The master's chore thread (HBase's master chores): it serves what the region server asks
//! for (splits, the catalog janitor) and runs the archive cleaner periodically.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use basalt_model::{Error, Result};
use parking_lot::{Condvar, Mutex};

use super::Master;
use crate::regionserver::{MasterQueue, MasterRequest};

/// The chore thread and its queue's count of unserved requests.
#[derive(Debug, Default)]
pub(crate) struct Chores {
    /// Shared with the [`MasterQueue`] that counts requests in.
    pending: Mutex<Option<Arc<AtomicUsize>>>,
    /// Notified after each request served.
    served: Condvar,
    thread: Mutex<Option<(JoinHandle<()>, MasterQueue)>>,
}

impl Chores {
    /// Whether every request sent has been served.
    pub fn is_idle(&self) -> bool {
        self.pending
            .lock()
            .as_ref()
            .is_none_or(|p| p.load(Ordering::SeqCst) == 0)
    }

    /// Waits until every request sent has been served.
    pub fn wait_idle(&self) {
        let mut g = self.pending.lock();
        while g.as_ref().is_some_and(|p| p.load(Ordering::SeqCst) > 0) {
            // Re-checked periodically as well: a request is counted before it is sent.
            self.served.wait_for(&mut g, Duration::from_millis(50));
        }
    }

    /// Ends the chore thread after the request it is serving.
    pub fn stop(&self) {
        let Some((thread, queue)) = self.thread.lock().take() else {
            return;
        };
        queue.send(MasterRequest::Stop);
        // The thread may hold the last handle on the node and end up here itself.
        if thread.thread().id() != std::thread::current().id() {
            let _ = thread.join();
        }
    }
}

impl Master {
    /// Starts the chore thread: it serves `inbox` (fed by `queue`) and cleans the archive
    /// every `interval`.
    ///
    /// # Errors
    /// The thread failed to start.
    pub fn start_chores(
        self: &Arc<Self>,
        queue: MasterQueue,
        inbox: Receiver<MasterRequest>,
        interval: Duration,
    ) -> Result<()> {
        *self.chores.pending.lock() = Some(Arc::clone(queue.pending()));
        let master = Arc::clone(self);
        let thread = std::thread::Builder::new()
            .name("basalt-master-chores".into())
            .spawn(move || master.run_chores(&inbox, interval))
            .map_err(|e| Error::io("starting the master's chore thread", e))?;
        *self.chores.thread.lock() = Some((thread, queue));
        Ok(())
    }

    fn run_chores(&self, inbox: &Receiver<MasterRequest>, interval: Duration) {
        loop {
            let request = match inbox.recv_timeout(interval) {
                Ok(r) => r,
                Err(RecvTimeoutError::Timeout) => {
                    self.clean_archive();
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let stop = request == MasterRequest::Stop;
            if !stop {
                self.serve(&request);
            }
            if let Some(p) = self.chores.pending.lock().as_ref() {
                p.fetch_sub(1, Ordering::SeqCst);
            }
            self.chores.served.notify_all();
            if stop {
                return;
            }
        }
    }

    /// Serves one request of the region server. Failures are logged: the region server asks
    /// again after its next compaction check.
    fn serve(&self, request: &MasterRequest) {
        let outcome = match request {
            MasterRequest::Split(id) => self.split_by_size(*id),
            MasterRequest::RunJanitor => self.clean_retired().map(drop),
            MasterRequest::Stop => Ok(()),
        };
        if let Err(e) = outcome {
            tracing::warn!(?request, error = %e, "a master chore failed; it is asked for again later");
        }
    }

    /// Splits the online region `id` at its split point, if it still needs it.
    fn split_by_size(&self, id: u64) -> Result<()> {
        let Some((state, region)) = self.find_region_by_id(id) else {
            return Ok(()); // closed, split or merged meanwhile
        };
        if !region.should_split() {
            return Ok(());
        }
        match self.split(&state, &region, None) {
            // A region closed or replaced meanwhile, or a table disabled, is not split.
            Ok(_) | Err(Error::NotServingRegion(_) | Error::TableNotEnabled(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }
}
