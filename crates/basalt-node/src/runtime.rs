//! Small runtimes for the async clients the node uses (object storage, ZooKeeper, the
//! master's RPCs), so the node's own threads stay plain threads: a call spawns its future on
//! the client's runtime and blocks the calling thread on a channel. That works from any
//! thread, inside another runtime too (only the calling thread waits), which
//! `Handle::block_on` does not.

use std::future::Future;

/// A runtime a client owns. Dropping it stops it without waiting for its tasks: a plain
/// drop blocks on them, which panics when the owner is dropped by async code.
#[derive(Debug)]
pub struct OwnedRuntime {
    handle: tokio::runtime::Handle,
    /// Always `Some` until dropped.
    runtime: Option<tokio::runtime::Runtime>,
}

impl OwnedRuntime {
    /// A multi-threaded runtime of `threads` workers named `name`.
    ///
    /// # Errors
    /// The operating system refused the threads.
    pub fn start(name: &str, threads: usize) -> std::io::Result<OwnedRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name(name)
            .enable_all()
            .build()?;
        Ok(OwnedRuntime {
            handle: runtime.handle().clone(),
            runtime: Some(runtime),
        })
    }

    /// The runtime's handle, for spawning and for [`wait_for`] from elsewhere.
    #[must_use]
    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// Runs `f` here and waits for its output; `None` when the runtime stopped first.
    pub fn wait_for<T: Send + 'static>(
        &self,
        f: impl Future<Output = T> + Send + 'static,
    ) -> Option<T> {
        wait_for(&self.handle, f)
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Runs `f` on the runtime of `handle` and waits for its output; `None` when the runtime
/// stopped before it finished.
pub fn wait_for<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    f: impl Future<Output = T> + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    handle.spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv().ok()
}
