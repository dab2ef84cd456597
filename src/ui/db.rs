//! The queue as the view reaches it: a small pool of connections to the workspace's queue
//! ([`Queue`]s, opened as they are first needed and kept), every call on tokio's blocking pool
//! (the queue's calls are synchronous). A page waits only for a free connection, not for the
//! others' queries: a slow read (a table another transaction locked, a large history) stalls
//! its own page and no other.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Semaphore;

use crate::queue::workspace::Workspace;
use crate::queue::{Options, Queue};

use super::error::UiError;

/// How many connections one view opens at most: as many requests read at the same time.
pub(crate) const CONNECTIONS: usize = 4;

/// The connections shared by every request of one view.
#[derive(Clone)]
pub(crate) struct Shared(Arc<Pool>);

struct Pool {
    workspace: Workspace,
    options: Options,
    /// Connections open and not in use.
    idle: Mutex<Vec<Queue>>,
    /// One permit per connection, in use or not.
    permits: Arc<Semaphore>,
}

impl Shared {
    /// A pool of `workspace`'s queue opened with `options`, holding `first` (already open,
    /// which proved the database can be reached) to begin with.
    pub(crate) fn new(workspace: Workspace, options: Options, first: Queue) -> Self {
        Shared(Arc::new(Pool {
            workspace,
            options,
            idle: Mutex::new(vec![first]),
            permits: Arc::new(Semaphore::new(CONNECTIONS)),
        }))
    }

    /// Runs `f` on a connection of its own, on tokio's blocking pool; waits while every
    /// connection is in use. A connection that cannot be opened is the call's error.
    pub(crate) async fn call<T, F>(&self, f: F) -> Result<T, UiError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Queue) -> Result<T, UiError> + Send + 'static,
    {
        let permit = Arc::clone(&self.0.permits)
            .acquire_owned()
            .await
            .map_err(|e| UiError::Internal(e.to_string()))?;
        let pool = Arc::clone(&self.0);
        tokio::task::spawn_blocking(move || {
            let idle = pool.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
            let mut q = match idle {
                Some(q) => q,
                None => Queue::open_with(&pool.workspace, pool.options.clone())?,
            };
            let result = f(&mut q);
            pool.idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(q);
            drop(permit);
            result
        })
        .await
        .map_err(|e| UiError::Internal(e.to_string()))?
    }
}
