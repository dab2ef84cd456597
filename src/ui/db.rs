//! The queue as the view reaches it: the workspace's [`Queue`], opened once, behind a mutex,
//! every call on tokio's blocking pool (the queue's calls are synchronous).

use std::sync::{Arc, Mutex, PoisonError};

use crate::queue::Queue;

use super::error::UiError;

/// The queue shared by every request.
#[derive(Clone)]
pub(crate) struct Shared(Arc<Mutex<Queue>>);

impl Shared {
    pub(crate) fn new(q: Queue) -> Self {
        Shared(Arc::new(Mutex::new(q)))
    }

    /// Runs `f` on the queue on tokio's blocking pool.
    pub(crate) async fn call<T, F>(&self, f: F) -> Result<T, UiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Queue) -> Result<T, UiError> + Send + 'static,
    {
        let q = self.0.clone();
        tokio::task::spawn_blocking(move || {
            let mut q = q.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut q)
        })
        .await
        .map_err(|e| UiError::Internal(e.to_string()))?
    }
}
