//! How a hook log's bytes look in the web view, decided once, on the server, for the log page
//! and for every chunk its live tail sends: ANSI SGR colour codes become classed spans, every
//! other escape sequence is dropped, control characters show as their pictures (`␇`), a
//! carriage return ends a line, invalid UTF-8 shows as `�`. Text is HTML-escaped here: nothing
//! of the log ever becomes markup.
//!
//! The log is read in pieces (the page's end of the file, then what the hook appends), so
//! [`render`] never decides on an incomplete end: a UTF-8 character, an escape sequence or a
//! carriage return cut by the end of the bytes it is given is left for the next piece, and
//! [`Rendered::used`] says where it stopped. Rendering a log piece by piece, each piece starting
//! where the last one stopped and in the [`Style`] it ended in, gives the same text in the same
//! styles as rendering it whole.
//!
//! An escape sequence ends at a line break or any other control byte (which then shows as
//! itself), and after [`ESCAPE_MAX`] bytes: whatever a hook prints, it never swallows the next
//! line, such as the footer hookq writes after each run, nor holds the tail back for long.

use std::fmt::Write as _;

/// The longest escape sequence kept whole: an unfinished one is given up after this many bytes
/// (and dropped), so that the tail is never held back by more.
pub const ESCAPE_MAX: usize = 4096;

/// The style text is shown in at a point of a log: what its SGR codes have set so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
    fg: Option<u8>,
    bg: Option<u8>,
}

impl Style {
    /// Its CSS classes (`fg-1 b`), empty for plain text; [`Style::parse`] reads them back.
    pub fn class(&self) -> String {
        let mut c: Vec<String> = Vec::new();
        if let Some(f) = self.fg {
            c.push(format!("fg-{f}"));
        }
        if let Some(b) = self.bg {
            c.push(format!("bg-{b}"));
        }
        for (on, name) in [
            (self.bold, "b"),
            (self.dim, "d"),
            (self.italic, "i"),
            (self.underline, "u"),
        ] {
            if on {
                c.push(name.to_owned());
            }
        }
        c.join(" ")
    }

    /// The style whose classes [`Style::class`] gives as `classes`; `None` for a class it
    /// never gives.
    pub fn parse(classes: &str) -> Option<Style> {
        let mut s = Style::default();
        let colour = |n: &str| n.parse::<u8>().ok().filter(|n| *n < 16);
        for class in classes.split_whitespace() {
            match class {
                "b" => s.bold = true,
                "d" => s.dim = true,
                "i" => s.italic = true,
                "u" => s.underline = true,
                _ => {
                    if let Some(n) = class.strip_prefix("fg-") {
                        s.fg = Some(colour(n)?);
                    } else if let Some(n) = class.strip_prefix("bg-") {
                        s.bg = Some(colour(n)?);
                    } else {
                        return None;
                    }
                }
            }
        }
        Some(s)
    }

    /// Applies an SGR sequence's parameters (`1;31`, ``: a reset).
    fn apply(&mut self, params: &str) {
        let mut ps = params
            .split([';', ':'])
            .map(|p| if p.is_empty() { Some(0) } else { p.parse::<u16>().ok() });
        while let Some(p) = ps.next() {
            let Some(p) = p else { continue };
            match p {
                0 => *self = Style::default(),
                1 => self.bold = true,
                2 => self.dim = true,
                3 => self.italic = true,
                4 => self.underline = true,
                22 => (self.bold, self.dim) = (false, false),
                23 => self.italic = false,
                24 => self.underline = false,
                30..=37 => self.fg = Some((p - 30) as u8),
                39 => self.fg = None,
                40..=47 => self.bg = Some((p - 40) as u8),
                49 => self.bg = None,
                90..=97 => self.fg = Some((p - 90 + 8) as u8),
                100..=107 => self.bg = Some((p - 100 + 8) as u8),
                38 | 48 => {
                    // 256 colours (`38;5;n`) keep the 16 that have classes; true colour
                    // (`38;2;r;g;b`) is dropped.
                    let colour = match ps.next().flatten() {
                        Some(5) => ps.next().flatten().filter(|n| *n < 16).map(|n| n as u8),
                        Some(2) => {
                            ps.next();
                            ps.next();
                            ps.next();
                            None
                        }
                        _ => None,
                    };
                    if p == 38 {
                        self.fg = colour;
                    } else {
                        self.bg = colour;
                    }
                }
                _ => {}
            }
        }
    }
}

/// What [`render`] made of a piece of a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The text as HTML: escaped text, in `<span class="…">` where styled.
    pub html: String,
    /// How many of the bytes it shows: all but an incomplete end, which the next piece starts
    /// with.
    pub used: usize,
    /// The style in effect at `used`, the next piece's to start in.
    pub style: Style,
}

/// Where the renderer stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Text,
    /// After ESC.
    Esc,
    /// After ESC and intermediate bytes (`ESC ( B`): up to the final byte.
    EscIntermediate,
    /// A control sequence (`ESC [`): its parameters (the first 64 bytes) up to the final byte.
    Csi(String),
    /// A string (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _`): up to BEL or `ESC \`.
    Str,
    /// ESC inside a string: `\` ends it, anything else ends it and begins a new sequence.
    StrEsc,
}

/// One decoded unit of the bytes.
enum Unit {
    Char(char, usize),
    /// Bytes that are not UTF-8, shown as one `�`.
    Invalid(usize),
    /// A character cut by the end of the bytes.
    Cut,
}

fn decode(bytes: &[u8], at: usize) -> Unit {
    let b = bytes[at];
    let width = match b {
        0..=0x7f => return Unit::Char(b as char, 1),
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Unit::Invalid(1),
    };
    let end = (at + width).min(bytes.len());
    match std::str::from_utf8(&bytes[at..end]) {
        Ok(s) => Unit::Char(s.chars().next().unwrap_or('\u{fffd}'), width),
        // As `String::from_utf8_lossy` does: the longest valid prefix becomes one `�`.
        Err(e) => match e.error_len() {
            Some(n) => Unit::Invalid(n),
            None => Unit::Cut,
        },
    }
}

/// The output: runs of text, each in one style.
struct Out {
    html: String,
    /// The class of the open span, if one is open.
    open: Option<String>,
}

impl Out {
    /// Appends `c` in the style whose classes are `class`.
    fn push(&mut self, class: &str, c: char) {
        if self.open.as_deref().unwrap_or("") != class {
            if self.open.take().is_some() {
                self.html.push_str("</span>");
            }
            if !class.is_empty() {
                let _ = write!(self.html, r#"<span class="{class}">"#);
                self.open = Some(class.to_owned());
            }
        }
        match c {
            // As askama escapes the page's other values.
            '&' => self.html.push_str("&#38;"),
            '<' => self.html.push_str("&#60;"),
            '>' => self.html.push_str("&#62;"),
            '"' => self.html.push_str("&#34;"),
            '\'' => self.html.push_str("&#39;"),
            '\n' | '\t' => self.html.push(c),
            '\u{0}'..='\u{1f}' => self
                .html
                .push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
            '\u{7f}' => self.html.push('\u{2421}'),
            '\u{80}'..='\u{9f}' => self.html.push('\u{fffd}'),
            c => self.html.push(c),
        }
    }

    fn finish(mut self) -> String {
        if self.open.take().is_some() {
            self.html.push_str("</span>");
        }
        self.html
    }
}

/// A piece of a log, `bytes`, shown from style `style`, as HTML (see the module's
/// documentation): SGR sequences (`ESC [ … m`) set the style; other control sequences, OSC
/// and other strings and two-byte escapes are dropped; `\r\n` and a lone `\r` end a line;
/// other control characters show as their Unicode pictures (`␇`). An incomplete end is not
/// shown: [`Rendered::used`] stops before it.
pub fn render(bytes: &[u8], style: Style) -> Rendered {
    let mut out = Out {
        html: String::with_capacity(bytes.len() + bytes.len() / 8),
        open: None,
    };
    let mut style = style;
    let mut class = style.class();
    let mut state = State::Text;
    // Where the escape sequence being read began.
    let mut began = 0;
    let mut at = 0;
    let mut used = 0;
    while at < bytes.len() {
        let (c, len) = match decode(bytes, at) {
            Unit::Char(c, len) => (Some(c), len),
            Unit::Invalid(len) => (None, len),
            Unit::Cut => break,
        };
        if state != State::Text && at - began >= ESCAPE_MAX {
            // Given up: what was read of it is dropped, this byte is read as text.
            state = State::Text;
        }
        // A byte that ends an unfinished sequence without belonging to it: read again as text.
        let mut again = false;
        state = match (std::mem::replace(&mut state, State::Text), c) {
            (State::Text, Some('\u{1b}')) => {
                began = at;
                State::Esc
            }
            (State::Text, Some('\r')) => match bytes.get(at + 1) {
                // Whether `\n` follows is for the next piece to say.
                None => break,
                Some(b'\n') => State::Text,
                Some(_) => {
                    out.push(&class, '\n');
                    State::Text
                }
            },
            (State::Text, c) => {
                out.push(&class, c.unwrap_or('\u{fffd}'));
                State::Text
            }
            (State::Esc, Some('[')) => State::Csi(String::new()),
            (State::Esc, Some(']' | 'P' | 'X' | '^' | '_')) => State::Str,
            (State::Esc | State::EscIntermediate, Some('\u{20}'..='\u{2f}')) => {
                State::EscIntermediate
            }
            (State::Esc | State::EscIntermediate, Some('\u{30}'..='\u{7e}')) => State::Text,
            (State::Csi(mut params), Some(c @ '\u{20}'..='\u{3f}')) => {
                if params.len() < 64 {
                    params.push(c);
                }
                State::Csi(params)
            }
            (State::Csi(params), Some(c @ '\u{40}'..='\u{7e}')) => {
                if c == 'm' {
                    style.apply(&params);
                    class = style.class();
                }
                State::Text
            }
            (State::Str | State::StrEsc, Some('\n' | '\r')) => {
                again = true;
                State::Text
            }
            (State::Str, Some('\u{7}')) => State::Text,
            (State::Str | State::StrEsc, Some('\u{1b}')) => {
                began = at;
                State::StrEsc
            }
            (State::StrEsc, Some('\\')) => State::Text,
            (State::StrEsc, _) => {
                // The ESC ended the string and begins a sequence of its own.
                state = State::Esc;
                continue;
            }
            (State::Str, _) => State::Str,
            // A control byte, DEL, or a byte that is no part of an escape sequence: the
            // unfinished sequence is dropped, the byte shown.
            (State::Esc | State::EscIntermediate | State::Csi(_), _) => {
                again = true;
                State::Text
            }
        };
        if again {
            continue;
        }
        at += len;
        if state == State::Text {
            used = at;
        }
    }
    Rendered {
        html: out.finish(),
        used,
        style,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn html(text: &str) -> String {
        let r = render(text.as_bytes(), Style::default());
        assert_eq!(r.used, text.len(), "all of {text:?} shown");
        r.html
    }

    #[test]
    fn colours_become_classes() {
        assert_eq!(
            html("a \u{1b}[1;31mred\u{1b}[0m b"),
            r#"a <span class="fg-1 b">red</span> b"#
        );
        assert_eq!(
            html("\u{1b}[92mx\u{1b}[39;44my\u{1b}[mz"),
            r#"<span class="fg-10">x</span><span class="bg-4">y</span>z"#
        );
        assert_eq!(
            html("\u{1b}[38;5;3mx\u{1b}[38;2;1;2;3;4my"),
            r#"<span class="fg-3">x</span><span class="u">y</span>"#
        );
    }

    #[test]
    fn a_style_is_read_back_from_its_classes() {
        let r = render(b"\x1b[1;4;93;41mx", Style::default());
        assert_eq!(r.style.class(), "fg-11 bg-1 b u");
        assert_eq!(Style::parse(&r.style.class()), Some(r.style));
        assert_eq!(Style::parse(""), Some(Style::default()));
        for bad in ["fg-16", "bg-x", "fg-", "span", "b\"", "fg-1<"] {
            assert_eq!(Style::parse(bad), None, "{bad}");
        }
        // A piece starts in the style the last one ended in.
        assert_eq!(render(b"y", r.style).html, r#"<span class="fg-11 bg-1 b u">y</span>"#);
    }

    #[test]
    fn other_escapes_are_dropped() {
        assert_eq!(html("a\u{1b}[2Kb\u{1b}[10;20Hc"), "abc");
        assert_eq!(html("\u{1b}]0;title\u{7}x\u{1b}]8;;http://e\u{1b}\\y"), "xy");
        assert_eq!(html("a\u{1b}(Bb\u{1b}Mc"), "abc");
    }

    #[test]
    fn control_characters_show() {
        assert_eq!(
            html("a\r\nb\rc\u{7}\u{0}\u{8}\u{7f}\u{85}\td"),
            "a\nb\nc\u{2407}\u{2400}\u{2408}\u{2421}\u{fffd}\td"
        );
    }

    #[test]
    fn markup_stays_text() {
        assert_eq!(
            html("<script>alert(\"x\")</script>&amp;'"),
            "&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62;&#38;amp;&#39;"
        );
    }

    #[test]
    fn invalid_utf8_shows_replaced() {
        let r = render(b"a\xff\xfeb\xe2\x82x", Style::default());
        assert_eq!((r.html.as_str(), r.used), ("a\u{fffd}\u{fffd}b\u{fffd}x", 7));
    }

    #[test]
    fn an_incomplete_end_is_left_for_the_next_piece() {
        for (bytes, shown) in [
            (&b"ok \xc3"[..], "ok "),
            (b"ok \xe2\x82", "ok "),
            (b"ok \x1b", "ok "),
            (b"ok \x1b[1;3", "ok "),
            (b"ok \x1b]0;title", "ok "),
            (b"ok \x1b]0;title\x1b", "ok "),
            (b"ok\r", "ok"),
        ] {
            let r = render(bytes, Style::default());
            assert_eq!((r.html.as_str(), r.used), (shown, shown.len()), "{bytes:?}");
        }
    }

    #[test]
    fn an_escape_never_runs_past_its_line() {
        // The footer hookq writes after output that ended in an unfinished sequence.
        let footer = "--- hookq exit 0 after 2 ms\n";
        for unfinished in ["\u{1b}[", "\u{1b}[1;", "\u{1b}]0;title", "\u{1b}(", "\u{1b}"] {
            assert_eq!(
                html(&format!("cut {unfinished}\n{footer}")),
                format!("cut \n{footer}"),
                "{unfinished:?}"
            );
            assert_eq!(
                html(&format!("cut {unfinished}\r\n{footer}")),
                format!("cut \n{footer}"),
            );
        }
        // Another control byte ends it and shows; ESC begins a sequence of its own.
        assert_eq!(html("a\u{1b}[1\u{7}b"), "a\u{2407}b");
        assert_eq!(html("a\u{1b}[1\u{1b}[32mb"), r#"a<span class="fg-2">b</span>"#);
        assert_eq!(html("a\u{1b}é"), "aé");
    }

    #[test]
    fn an_escape_too_long_is_given_up() {
        let long = format!("a\u{1b}]{}", "x".repeat(2 * ESCAPE_MAX));
        let r = render(long.as_bytes(), Style::default());
        assert_eq!(r.used, long.len());
        assert_eq!(r.html, format!("a{}", "x".repeat(ESCAPE_MAX + 2)));
        // One still within the bound is held back.
        let r = render(format!("a\u{1b}[{}", "1;".repeat(1000)).as_bytes(), Style::default());
        assert_eq!((r.html.as_str(), r.used), ("a", 1));
    }

    /// Bytes rendered piece by piece, each piece starting where the last stopped.
    fn in_pieces(bytes: &[u8], cuts: &[usize]) -> (String, usize) {
        let mut style = Style::default();
        let mut from = 0;
        let mut text = String::new();
        for &cut in cuts.iter().chain([&bytes.len()]) {
            if cut < from {
                continue;
            }
            let r = render(&bytes[from..cut], style);
            text.push_str(&r.html);
            from += r.used;
            style = r.style;
        }
        (text, from)
    }

    /// The text of `html` a character at a time, each with its class.
    fn styled(html: &str) -> Vec<(String, char)> {
        let mut out = Vec::new();
        let mut class = String::new();
        let mut rest = html;
        while let Some(c) = rest.chars().next() {
            if let Some(tag) = rest.strip_prefix(r#"<span class=""#) {
                let end = tag.find("\">").unwrap();
                class = tag[..end].to_owned();
                rest = &tag[end + 2..];
            } else if let Some(after) = rest.strip_prefix("</span>") {
                class.clear();
                rest = after;
            } else {
                out.push((class.clone(), c));
                rest = &rest[c.len_utf8()..];
            }
        }
        out
    }

    proptest! {
        #[test]
        fn pieces_render_as_the_whole_does(
            bytes in proptest::collection::vec(
                prop_oneof![
                    Just(0x1b_u8), Just(b'['), Just(b']'), Just(b'm'), Just(b';'), Just(b'3'),
                    Just(b'1'), Just(b'\r'), Just(b'\n'), Just(0x07), Just(b'\\'), Just(b'a'),
                    Just(0xc3), Just(0xbc), Just(0xe2), Just(0x82), Just(0xac), Just(0xff),
                    Just(b'('), Just(b'<'), any::<u8>(),
                ],
                0..200,
            ),
            mut cuts in proptest::collection::vec(0..200_usize, 0..6),
        ) {
            cuts.sort_unstable();
            let cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            let whole = render(&bytes, Style::default());
            let (text, used) = in_pieces(&bytes, &cuts);
            prop_assert_eq!(used, whole.used);
            prop_assert_eq!(styled(&text), styled(&whole.html));
        }
    }
}
