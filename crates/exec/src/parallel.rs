//! Work split over the machine's cores: sender recovery (~50 µs a signature) dominates the
//! cost of rendering or checking a full block's transactions, in both verifiers. On a target
//! without threads (wasm32) everything runs on the calling thread.
//!
//! Not here: what the work is.

/// `f(0..count)` in order, split over the machine's cores in runs of at least `at_least`
/// (fewer items stay on the calling thread); the first error is returned.
pub fn map_on_cores<R: Send, E: Send>(
    count: usize,
    at_least: usize,
    f: impl Fn(usize) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(count / at_least.max(1)).max(1);
    if threads == 1 {
        return (0..count).map(&f).collect();
    }
    let chunk = count.div_ceil(threads);
    let f = &f;
    std::thread::scope(|scope| {
        let parts: Vec<_> = (0..count)
            .step_by(chunk)
            .map(|start| {
                scope.spawn(move || {
                    (start..(start + chunk).min(count))
                        .map(f)
                        .collect::<Result<Vec<_>, _>>()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(count);
        for part in parts {
            out.extend(
                part.join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))?,
            );
        }
        Ok(out)
    })
}
