//! The embedded stylesheet: light and dark by `prefers-color-scheme`, nothing fetched from
//! elsewhere.

use axum::http::header;
use axum::response::IntoResponse;

/// The stylesheet every page links.
pub(crate) const STYLE: &str = include_str!("assets/style.css");

/// `/assets/style.css`.
pub(crate) async fn style() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        STYLE,
    )
}
