//! Small runtimes for the async clients the node uses (object storage, ZooKeeper), so the
//! node's own threads stay plain threads: a call spawns its future on the client's runtime
//! and blocks the calling thread on a channel. That works from any thread, inside another
//! runtime too (only the calling thread waits), which `Handle::block_on` does not.

use std::future::Future;

/// A multi-threaded runtime of `threads` workers named `name`.
///
/// # Errors
/// The operating system refused the threads.
pub fn start(name: &str, threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name(name)
        .enable_all()
        .build()
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
