//! Log bytes made safe to show as text: ANSI escape sequences and control bytes removed (a
//! newline and a tab kept), invalid UTF-8 replaced, across chunk boundaries.

/// Where [`Clean`] stands in an escape sequence when a chunk ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Plain text.
    #[default]
    Text,
    /// After ESC.
    Esc,
    /// After ESC and intermediate bytes (`ESC ( B`): up to the final byte.
    EscIntermediate,
    /// A control sequence (`ESC [`): parameters up to the final byte.
    Csi,
    /// A string (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _`): up to BEL or `ESC \`.
    Str,
    /// ESC inside a string: `\` ends it.
    StrEsc,
}

/// Cleans a log read a chunk at a time: a sequence or a UTF-8 character cut by a chunk's end is
/// finished by the next chunk.
#[derive(Debug, Default)]
pub struct Clean {
    state: State,
    /// The start of a UTF-8 character the last chunk ended inside.
    partial: Vec<u8>,
}

impl Clean {
    /// A cleaner at the start of a file.
    pub fn new() -> Self {
        Self::default()
    }

    /// The text of `bytes`, the next chunk of the log.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        let mut kept = std::mem::take(&mut self.partial);
        kept.reserve(bytes.len());
        for &b in bytes {
            self.state = match (self.state, b) {
                (State::Text, 0x1b) => State::Esc,
                (State::Text, b'\n' | b'\t') => {
                    kept.push(b);
                    State::Text
                }
                (State::Text, 0..=0x1f | 0x7f) => State::Text,
                (State::Text, _) => {
                    kept.push(b);
                    State::Text
                }
                (State::Esc, b'[') => State::Csi,
                (State::Esc, b']' | b'P' | b'X' | b'^' | b'_') => State::Str,
                (State::Esc | State::EscIntermediate, 0x20..=0x2f) => State::EscIntermediate,
                (State::Esc | State::EscIntermediate, _) => State::Text,
                (State::Csi, 0x20..=0x3f) => State::Csi,
                (State::Csi, _) => State::Text,
                (State::Str, 0x07) => State::Text,
                (State::Str | State::StrEsc, 0x1b) => State::StrEsc,
                (State::StrEsc, b'\\') => State::Text,
                (State::Str | State::StrEsc, _) => State::Str,
            };
        }
        let mut out = String::with_capacity(kept.len());
        let mut rest = &kept[..];
        loop {
            match std::str::from_utf8(rest) {
                Ok(s) => {
                    push_text(&mut out, s);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    push_text(&mut out, std::str::from_utf8(valid).unwrap_or_default());
                    match e.error_len() {
                        Some(n) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[n..];
                        }
                        None => {
                            // Cut by the chunk's end: finished by the next one.
                            self.partial = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        out
    }
}

/// Appends `s` without its control characters (C1 ones too), but for newlines and tabs.
fn push_text(out: &mut String, s: &str) {
    out.extend(
        s.chars()
            .filter(|&c| !c.is_control() || c == '\n' || c == '\t'),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colours_and_controls_but_keeps_lines() {
        let mut c = Clean::new();
        assert_eq!(
            c.push(b"\x1b[1;31mred\x1b[0m\tok\r\n\x07bell\x00\x7f\n"),
            "red\tok\nbell\n"
        );
        assert_eq!(c.push(b"\x1b]0;title\x07after"), "after");
        assert_eq!(c.push(b"\x1b]8;;http://x\x1b\\link"), "link");
        assert_eq!(c.push(b"\x1b(Bcharset\x1bMx"), "charsetx");
        assert_eq!(c.push("c1:\u{9b}31m é".as_bytes()), "c1:31m é");
    }

    #[test]
    fn a_sequence_or_character_cut_by_a_chunk_is_finished_by_the_next() {
        let mut c = Clean::new();
        assert_eq!(c.push(b"a\x1b[3"), "a");
        assert_eq!(c.push(b"1mb"), "b");
        let e = "é".as_bytes();
        assert_eq!(c.push(&[b'x', e[0]]), "x");
        assert_eq!(c.push(&[e[1], b'y']), "éy");
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let mut c = Clean::new();
        assert_eq!(c.push(b"a\xff\xfeb<script>"), "a\u{fffd}\u{fffd}b<script>");
    }
}
