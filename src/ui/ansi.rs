//! A hook log's text for a page: its ANSI SGR colour codes turned into classed spans, every
//! other escape sequence dropped, control characters made visible. The page escapes the text;
//! nothing of the log ever becomes markup.

/// A run of text in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The CSS classes of its style (`fg-1 b`), empty for plain text.
    pub class: String,
    /// The text.
    pub text: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Style {
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
    fg: Option<u8>,
    bg: Option<u8>,
}

impl Style {
    fn class(&self) -> String {
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

/// `text` as styled spans: SGR sequences (`ESC [ … m`) set the style, other CSI, OSC and
/// two-byte escapes are dropped; `\r\n` and a lone `\r` end a line; other control characters
/// show as their Unicode pictures (`␇`).
pub fn spans(text: &str) -> Vec<Span> {
    let mut out: Vec<Span> = Vec::new();
    let mut style = Style::default();
    let mut buf = String::new();
    let flush = |out: &mut Vec<Span>, buf: &mut String, style: &Style| {
        if buf.is_empty() {
            return;
        }
        let class = style.class();
        match out.last_mut() {
            Some(last) if last.class == class => last.text.push_str(buf),
            _ => out.push(Span {
                class,
                text: std::mem::take(buf),
            }),
        }
        buf.clear();
    };
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    let mut params = String::new();
                    let mut fin = None;
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            fin = Some(c);
                            break;
                        }
                        if params.len() < 64 {
                            params.push(c);
                        }
                    }
                    if fin == Some('m') {
                        flush(&mut out, &mut buf, &style);
                        style.apply(&params);
                    }
                }
                Some(']') => {
                    // An OSC (a title, a hyperlink) runs to BEL or ESC \.
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                // `ESC ( B` and its kin: intermediates, then a final byte.
                Some('\u{20}'..='\u{2f}') => {
                    for c in chars.by_ref() {
                        if !('\u{20}'..='\u{2f}').contains(&c) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {
                if chars.peek() != Some(&'\n') {
                    buf.push('\n');
                }
            }
            '\n' | '\t' => buf.push(c),
            '\u{0}'..='\u{1f}' => buf.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}')),
            '\u{7f}' => buf.push('\u{2421}'),
            '\u{80}'..='\u{9f}' => buf.push('\u{fffd}'),
            c => buf.push(c),
        }
    }
    flush(&mut out, &mut buf, &style);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(class: &str, text: &str) -> Span {
        Span {
            class: class.into(),
            text: text.into(),
        }
    }

    #[test]
    fn colours_become_classes() {
        assert_eq!(
            spans("a \u{1b}[1;31mred\u{1b}[0m b"),
            [span("", "a "), span("fg-1 b", "red"), span("", " b")]
        );
        assert_eq!(
            spans("\u{1b}[92mx\u{1b}[39;44my\u{1b}[mz"),
            [span("fg-10", "x"), span("bg-4", "y"), span("", "z")]
        );
        assert_eq!(
            spans("\u{1b}[38;5;3mx\u{1b}[38;2;1;2;3;4my"),
            [span("fg-3", "x"), span("u", "y")]
        );
    }

    #[test]
    fn other_escapes_are_dropped() {
        assert_eq!(spans("a\u{1b}[2Kb\u{1b}[10;20Hc"), [span("", "abc")]);
        assert_eq!(
            spans("\u{1b}]0;title\u{7}x\u{1b}]8;;http://e\u{1b}\\y"),
            [span("", "xy")]
        );
        assert_eq!(spans("a\u{1b}(Bb\u{1b}"), [span("", "ab")]);
        // An unfinished sequence at the end is dropped, however long.
        assert_eq!(spans(&format!("a\u{1b}[{}", "1;".repeat(1000))), [span("", "a")]);
    }

    #[test]
    fn control_characters_show() {
        assert_eq!(
            spans("a\r\nb\rc\u{7}\u{0}\u{7f}\u{85}\td"),
            [span("", "a\nb\nc\u{2407}\u{2400}\u{2421}\u{fffd}\td")]
        );
    }

    #[test]
    fn markup_stays_text() {
        let s = spans("<script>alert(\"x\")</script>&amp;");
        assert_eq!(s, [span("", "<script>alert(\"x\")</script>&amp;")]);
    }
}
