//! An inline hook's command text. Configuration is shared and may be shown to anyone who sees
//! hookq's output, so the text never leaves this type except as the argument handed to the
//! interpreter: it has no `Display`, no `Serialize`, and its `Debug` prints no text. Every
//! outcome, preview, banner, diagnostic, error and log names the snippet by where it was
//! configured instead.

use std::ffi::OsString;
use std::fmt;

/// An inline snippet's text, kept out of every message.
#[derive(Clone, PartialEq, Eq)]
pub struct Snippet(String);

impl Snippet {
    pub(crate) fn new(text: String) -> Self {
        Snippet(text)
    }

    /// The argument the interpreter runs (`bash -c <this>`): the one place the text goes.
    pub(crate) fn to_arg(&self) -> OsString {
        OsString::from(&self.0)
    }

    /// How many bytes it holds (the inspector says an inline hook is empty without showing it).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Snippet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Snippet(<inline text not shown>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_text() {
        let s = Snippet::new("echo TOKEN=hunter2".into());
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(!format!("{:?}", Some(vec![s.clone()])).contains("hunter2"));
        assert_eq!(s.to_arg(), "echo TOKEN=hunter2");
    }
}
