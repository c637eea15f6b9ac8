//! Answering off the async workers: [`Offload`] runs a request's answering — upstream
//! waits, and the CPU-bound work between them (revm, BLS, hashing, proof building) — on a
//! thread of tokio's blocking pool, at most `max` at once. The async workers keep accepting,
//! reading heads and bodies, refusing what is over a limit and answering `/metrics`, however
//! many expensive requests run; the OS shares the cores among the requests being answered.
//!
//! Not here: the in-flight cap (`conn`), which bounds requests before they get this far.

use std::{future::Future, sync::Arc};

use tokio::{runtime::Handle, sync::Semaphore};

/// The blocking-pool threads one process may take by default (tokio's pool has 512).
pub const DEFAULT_OFFLOAD_THREADS: usize = 256;

/// Runs futures on blocking threads, at most `max` at once; the rest wait, without holding
/// an async worker, for a thread to come free.
#[derive(Clone, Debug)]
pub struct Offload {
    threads: Arc<Semaphore>,
}

/// Why an offloaded future gave no output.
#[derive(Debug, thiserror::Error)]
pub enum OffloadError {
    /// The pool was closed (the runtime is shutting down).
    #[error("the answering pool is shut down")]
    Closed,
    /// The future panicked: the panic's message.
    #[error("answering panicked: {0}")]
    Panicked(String),
}

impl Offload {
    /// At most `max` threads at once (at least 1).
    pub fn new(max: usize) -> Offload {
        Offload {
            threads: Arc::new(Semaphore::new(max.max(1))),
        }
    }

    /// Drives `future` to its end on a blocking thread and returns its output.
    pub async fn run<F>(&self, future: F) -> Result<F::Output, OffloadError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let permit = self
            .threads
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| OffloadError::Closed)?;
        let handle = Handle::current();
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            handle.block_on(future)
        })
        .await;
        joined.map_err(|e| match e.try_into_panic() {
            Ok(panic) => OffloadError::Panicked(panic_message(panic.as_ref())),
            Err(_) => OffloadError::Closed,
        })
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Barrier, Mutex};

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn blocking_work_leaves_the_async_worker_free() {
        let pool = Offload::new(4);
        let gate = Arc::new(Barrier::new(3));
        let running: Vec<_> = (0..2)
            .map(|_| {
                let (pool, gate) = (pool.clone(), gate.clone());
                tokio::spawn(async move { pool.run(async move { gate.wait() }).await })
            })
            .collect();
        // The single async worker is free while both block: this task runs and opens the gate.
        let opened = Mutex::new(false);
        tokio::task::spawn_blocking({
            let gate = gate.clone();
            move || gate.wait()
        })
        .await
        .unwrap();
        *opened.lock().unwrap() = true;
        for r in running {
            r.await.unwrap().unwrap();
        }
        assert!(*opened.lock().unwrap());
    }

    #[tokio::test]
    async fn a_panic_is_an_error_naming_it() {
        let e = Offload::new(1)
            .run(async { panic!("boom") })
            .await
            .unwrap_err();
        assert_eq!(e.to_string(), "answering panicked: boom");
    }
}
