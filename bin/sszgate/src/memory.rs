//! Returning freed memory to the OS once a long-running server is idle.
//!
//! mimalloc (the binary's allocator, `main.rs`) returns freed pages to the OS only after a
//! delay, and only when an allocation or free runs after that delay: a relay that has just
//! carried a burst of 20 MB answers and then waits for the next slot keeps the burst's
//! pages resident indefinitely. Purging at once (`MIMALLOC_PURGE_DELAY=0`) keeps memory flat
//! but was measured to cost about 9 ms of CPU per 72-blob call (every 20 MB buffer faulted
//! and zeroed anew; docs/benchmarks.md, "rpc-snooper as a peer"). Instead the delay is
//! longer ([`PURGE_DELAY_MS`], where mimalloc's 1 s purged a busy relay's buffers between
//! two calls about once a second), and a thread of its own asks the allocator once a second
//! to purge what has been free past it: a busy relay keeps reusing its buffers, an idle one
//! gives them back within seconds.
//!
//! Not here: the choice of allocator (`main.rs`).

use std::time::Duration;

/// How often the idle purge runs.
const PURGE_EVERY: Duration = Duration::from_secs(1);
/// mimalloc's purge delay, ms: memory freed this long ago (counted from the first free since
/// the last purge) is returned to the OS.
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;
/// mimalloc's `mi_option_purge_delay` (its `mi_option_e`; libmimalloc-sys names only some).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Starts the thread that purges freed memory; if it cannot start, memory is only returned
/// as mimalloc itself does (said once).
pub(crate) fn return_freed_memory_when_idle() {
    // SAFETY: sets one of mimalloc's options, a plain integer it reads atomically.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Option 15 is the purge delay: it reads mimalloc's documented default (1000 ms, the only
    /// option with that default) until it is set, then the value set.
    #[test]
    fn the_option_set_is_mimallocs_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // SAFETY: reads an integer option.
            let default = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
            assert_eq!(default, 1000);
        }
        return_freed_memory_when_idle();
        // SAFETY: as above.
        let set = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) };
        assert_eq!(set, PURGE_DELAY_MS);
    }
}
