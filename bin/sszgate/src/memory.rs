//! Returning freed memory to the OS once a long-running server is idle.
//!
//! mimalloc (the binary's allocator, `main.rs`) returns freed pages to the OS only after a
//! delay, and only when an allocation or free runs after that delay: a relay that has just
//! carried a burst of 20 MB answers and then waits for the next slot keeps the burst's
//! pages resident indefinitely. Purging at once (`MIMALLOC_PURGE_DELAY=0`) keeps memory flat
//! but was measured to cost about 9 ms of CPU per 72-blob call (every 20 MB buffer faulted
//! and zeroed anew; docs/benchmarks.md, "rpc-snooper as a peer"). Instead a thread of its own
//! asks the allocator once a second to purge what has been free past its delay: a busy
//! relay keeps reusing its buffers, an idle one gives them back within a few seconds.
//!
//! Not here: the choice of allocator (`main.rs`).

use std::time::Duration;

/// How often the idle purge runs.
const PURGE_EVERY: Duration = Duration::from_secs(1);

/// Starts the thread that purges freed memory; if it cannot start, memory is only returned
/// as mimalloc itself does (said once).
pub(crate) fn return_freed_memory_when_idle() {
    let spawned = std::thread::Builder::new()
        .name("sszgate-purge".into())
        .spawn(|| {
            loop {
                std::thread::sleep(PURGE_EVERY);
                // SAFETY: mi_collect takes no pointers; it collects this thread's own (empty)
                // heap and purges the process's arenas of pages freed past the purge delay,
                // which mimalloc synchronises itself.
                unsafe { libmimalloc_sys::mi_collect(false) };
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "could not start the idle memory purge");
    }
}
