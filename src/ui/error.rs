//! What a request can fail with, and the response each failure is.

use std::path::PathBuf;

use axum::http::StatusCode;

/// A failure of the web view.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// The queue failed (its database, its config).
    #[error(transparent)]
    Queue(#[from] crate::queue::Error),
    /// A file the view reads (a hook log, the log folder) could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// What the request names is not there.
    #[error("{0}")]
    NotFound(String),
    /// The request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// The server failed in itself (a worker thread was lost).
    #[error("internal error: {0}")]
    Internal(String),
}

impl UiError {
    /// The response status.
    pub fn status(&self) -> StatusCode {
        match self {
            UiError::NotFound(_) => StatusCode::NOT_FOUND,
            UiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            UiError::Queue(_) | UiError::Io { .. } => StatusCode::SERVICE_UNAVAILABLE,
            UiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}
