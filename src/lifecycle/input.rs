//! What a hook's stdin is, decided once per command: the terminal, or end of file at once.
//! A setup script waiting on stdin under CI must end, not hang, so anything but a person at a
//! terminal gets immediate EOF.

/// The command-wide input mode, as `ARASHI_HOOK_INPUT` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputPolicy {
    /// stdin is a terminal: each hook runs as the terminal's foreground job, after a banner,
    /// its output streamed as it comes.
    Tty,
    /// `--no-hook-input`, or `--json` (even on a terminal): immediate EOF.
    Disabled,
    /// stdin is not a terminal, or `CI` is set: immediate EOF.
    Unavailable,
}

impl InputPolicy {
    /// The mode for a command: `json` and `no_hook_input` are its flags, `stdin_tty` whether
    /// its stdin is a terminal, `ci` the value of `CI`. JSON always wins; then the flag; then
    /// the terminal, unless CI says nobody is there (`CI` set to anything but empty, `0` or
    /// `false`).
    pub fn decide(json: bool, no_hook_input: bool, stdin_tty: bool, ci: Option<&str>) -> Self {
        let ci = ci.is_some_and(|v| {
            let v = v.trim();
            !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false"))
        });
        if json || no_hook_input {
            InputPolicy::Disabled
        } else if !stdin_tty || ci {
            InputPolicy::Unavailable
        } else {
            InputPolicy::Tty
        }
    }

    /// `tty`, `disabled` or `unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            InputPolicy::Tty => "tty",
            InputPolicy::Disabled => "disabled",
            InputPolicy::Unavailable => "unavailable",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::InputPolicy::*;
    use super::*;

    #[test]
    fn json_wins_then_the_flag_then_the_terminal() {
        let d = InputPolicy::decide;
        assert_eq!(d(false, false, true, None), Tty);
        assert_eq!(d(true, false, true, None), Disabled);
        assert_eq!(d(true, false, false, Some("true")), Disabled);
        assert_eq!(d(false, true, true, None), Disabled);
        assert_eq!(d(false, false, false, None), Unavailable);
        assert_eq!(d(false, false, true, Some("true")), Unavailable);
        assert_eq!(d(false, false, true, Some("1")), Unavailable);
        assert_eq!(d(false, false, true, Some("false")), Tty);
        assert_eq!(d(false, false, true, Some("")), Tty);
        assert_eq!(d(false, false, true, Some("0")), Tty);
    }
}
