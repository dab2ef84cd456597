//! A command's environment, built as a whole and passed as is: nothing is inherited behind the
//! builder's back. Each hook model decides what goes in and what must not leak through.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

/// A command's whole environment, laid out as `execve` takes it: `NAME=value` strings, each
/// ending in a NUL byte, in one buffer. A model builds it once per pass or load and extends a
/// copy per run (arc: the pass's base plus the `ARC_*` table), and starting a command reads it
/// as it is: no map, and no string per variable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environ {
    bytes: Vec<u8>,
    /// Where each variable starts in `bytes`.
    starts: Vec<usize>,
    /// A name or value held a NUL byte, which no environment can carry: starting a command
    /// with it fails, as it does with `std::process::Command`.
    nul: bool,
}

impl Environ {
    /// An empty environment.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `name=value` after the variables already there. Names are expected once each (a
    /// name added twice is passed twice).
    pub fn push(&mut self, name: impl AsRef<OsStr>, value: impl AsRef<OsStr>) {
        let (name, value) = (name.as_ref().as_bytes(), value.as_ref().as_bytes());
        self.nul |= name.contains(&0) || value.contains(&0);
        self.starts.push(self.bytes.len());
        self.bytes.extend_from_slice(name);
        self.bytes.push(b'=');
        self.bytes.extend_from_slice(value);
        self.bytes.push(0);
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The variables in order, as (name, value).
    pub fn iter(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.starts.iter().map(|&at| {
            let end = at + self.bytes[at..].iter().position(|&b| b == 0).unwrap_or(0);
            let var = &self.bytes[at..end];
            // Split at the first `=`: a name holds none. A variable with a NUL byte in it reads
            // back cut there; such an environment is never handed to a command (`raw`).
            let eq = var.iter().position(|&b| b == b'=').unwrap_or(var.len());
            let value = var.get(eq + 1..).unwrap_or_default();
            (OsStr::from_bytes(&var[..eq]), OsStr::from_bytes(value))
        })
    }

    /// How many variables there are.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// The buffer of NUL-terminated `NAME=value` strings, and where each starts; `None` when a
    /// name or value held a NUL byte.
    pub(crate) fn raw(&self) -> Option<(&[u8], &[usize])> {
        (!self.nul).then_some((&self.bytes, &self.starts))
    }
}

impl<K: AsRef<OsStr>, V: AsRef<OsStr>> FromIterator<(K, V)> for Environ {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(vars: I) -> Self {
        let mut env = Environ::new();
        for (k, v) in vars {
            env.push(k, v);
        }
        env
    }
}

/// Variables that would point git at another repository than the one asked for (what
/// `git rev-parse --local-env-vars` lists, and the `-c` pairs that go with `GIT_CONFIG_COUNT`).
/// Every hook model strips them from what its hooks inherit, so a hook's git works on the
/// repository the hook is about; worktree commands strip them from hookq's own git too.
pub const GIT_LOCAL_ENV_VARS: &[&str] = &[
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
];

/// Whether an inherited variable named `name` is one of git's repository overrides.
pub fn is_git_local(name: &OsStr) -> bool {
    let name = name.as_bytes();
    GIT_LOCAL_ENV_VARS.iter().any(|v| v.as_bytes() == name)
        || name.starts_with(b"GIT_CONFIG_KEY_")
        || name.starts_with(b"GIT_CONFIG_VALUE_")
}

/// What a hook inherits of `vars` (hookq's own environment, once per pass or command): every
/// variable but git's repository overrides ([`is_git_local`]) and those whose name starts with
/// `prefix`, the hook model's own (`ARC_`, `ARASHI_`): the model sets those itself for each
/// hook, and an inherited one must not pass for it. Names are compared as bytes, so a name that
/// is not UTF-8 after its prefix goes too.
pub fn inherited(vars: impl IntoIterator<Item = (OsString, OsString)>, prefix: &str) -> Environ {
    vars.into_iter()
        .filter(|(name, _)| !name.as_bytes().starts_with(prefix.as_bytes()) && !is_git_local(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environ_reads_back_what_was_pushed() {
        let env: Environ = [("A", "1"), ("EMPTY", ""), ("EQ", "x=y"), ("U", "é")]
            .into_iter()
            .collect();
        let read: Vec<(&OsStr, &OsStr)> = env.iter().collect();
        assert_eq!(
            read,
            [("A", "1"), ("EMPTY", ""), ("EQ", "x=y"), ("U", "é")]
                .map(|(k, v)| (OsStr::new(k), OsStr::new(v)))
        );
        assert_eq!(env.len(), 4);
        assert_eq!(env.raw().unwrap().0, b"A=1\0EMPTY=\0EQ=x=y\0U=\xc3\xa9\0");
        let mut bad = env.clone();
        bad.push("B", "x\0y");
        assert!(bad.raw().is_none(), "a NUL byte cannot be passed");
    }

    #[test]
    fn a_hook_inherits_neither_the_models_prefix_nor_gits_overrides() {
        use std::os::unix::ffi::OsStringExt;
        let vars = [
            ("PATH", b"/bin".to_vec()),
            ("ARC_TASK", b"forged".to_vec()),
            ("GIT_DIR", b"/elsewhere".to_vec()),
            ("GIT_CONFIG_KEY_0", b"x".to_vec()),
            ("GIT_AUTHOR_NAME", b"kept".to_vec()),
            ("ARCHIVE", b"kept".to_vec()),
            ("BYTES", b"\xff".to_vec()),
        ]
        .map(|(n, v)| (OsString::from(n), OsString::from_vec(v)));
        let mut odd = b"ARC_".to_vec();
        odd.push(0xff);
        let vars = vars
            .into_iter()
            .chain([(OsString::from_vec(odd), OsString::from("x"))]);
        let env = inherited(vars, "ARC_");
        let names: Vec<&OsStr> = env.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["PATH", "GIT_AUTHOR_NAME", "ARCHIVE", "BYTES"]);
        assert_eq!(env.get("BYTES").unwrap().as_bytes(), b"\xff");
    }
}
