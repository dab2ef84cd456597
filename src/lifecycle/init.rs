//! `hookq worktree init`: a config skeleton when there is none, and inert example hooks that do
//! nothing until one is copied to its active name. Nothing that exists is overwritten.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::config::CONFIG_FILE;
use super::names;
use super::point::Lifecycle;

/// One file `init` looked at.
#[derive(Debug, Clone, Serialize)]
pub struct InitFile {
    /// Its path.
    pub path: PathBuf,
    /// Whether `init` wrote it (`false`: it existed and was kept).
    pub written: bool,
}

/// A state-folder failure.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", path.display())]
pub struct InitError {
    /// The path.
    pub path: PathBuf,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

/// The repositories found below `root`: git checkouts directly in it or in `root/repos/`,
/// sorted by name.
pub fn find_repos(root: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (dir, prefix) in [(root.to_path_buf(), ""), (root.join("repos"), "repos/")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if names::repo_name_problem(&name).is_none()
                && e.path().join(".git").exists()
                && !found.iter().any(|(n, _)| n == &name)
            {
                found.push((name.clone(), format!("{prefix}{name}")));
            }
        }
    }
    found.sort();
    found
}

/// The skeleton config for `repos` (name, relative path).
pub fn skeleton(repos: &[(String, String)]) -> String {
    let mut repo_map = serde_json::Map::new();
    for (name, path) in repos {
        repo_map.insert(name.clone(), serde_json::json!({ "path": path }));
    }
    let doc = serde_json::json!({
        "repos": repo_map,
        "hooks": { "timeout": 300000, "scripts": {} }
    });
    let mut text = serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

fn example(lc: Lifecycle, repo: Option<&str>) -> String {
    let what = match (lc, repo) {
        (Lifecycle::PreCreate, None) => "before any worktree is made, in the workspace root",
        (Lifecycle::PostCreate, None) => "after every worktree was made, in the workspace root",
        (Lifecycle::PreCreate, Some(_)) => "in the new worktree, right after it was made",
        (Lifecycle::PostCreate, Some(_)) => "in the new worktree, after its pre-create hook",
        (Lifecycle::PreRemove, _) => "before a worktree is removed (a failure aborts the removal)",
        (Lifecycle::PostRemove, _) => "after the removals were attempted",
    };
    let body = match (lc, repo) {
        (_, Some(_)) => {
            "[ \"$PWD\" = \"$ARASHI_HOOK_TARGET_WORKTREE_PATH\" ] || exit 1\nprintf 'set up %s\\n' \"$ARASHI_HOOK_TARGET_WORKTREE_PATH\"\n"
        }
        (Lifecycle::PreRemove | Lifecycle::PostRemove, None) => {
            "# Every remove hook gets the targets as JSON; parse it rather than a joined list.\nprintf '%s\\n' \"$ARASHI_REMOVE_TARGETS_JSON\"\n"
        }
        _ => "printf '%s %s\\n' \"$ARASHI_HOOK_NAME\" \"$ARASHI_BRANCH_NAME\"\n",
    };
    format!(
        "#!/usr/bin/env bash\n# Inert example: runs {what}.\n# Activate: install -m 755 <this file> <the same name without .example>\nset -eu\n\n# Only ask when a person is at the terminal.\n# [ \"${{ARASHI_HOOK_INPUT:-unavailable}}\" = tty ] || exit 0\n{body}"
    )
}

/// Writes what is missing in `root`: the config listing the repositories found below it (when
/// `configured` is `None`), and the examples, for the configured repositories (`Some`) or the
/// ones found.
pub fn init(root: &Path, configured: Option<&[String]>) -> Result<Vec<InitFile>, InitError> {
    let mut files = Vec::new();
    let mut wanted: Vec<(PathBuf, String)> = Vec::new();
    let repos: Vec<(String, String)> = match configured {
        Some(names) => names.iter().map(|n| (n.clone(), String::new())).collect(),
        None => {
            let found = find_repos(root);
            wanted.push((root.join(CONFIG_FILE), skeleton(&found)));
            found
        }
    };
    let hooks = root.join(".arashi").join("hooks");
    for lc in Lifecycle::ALL {
        wanted.push((hooks.join(format!("{lc}.sh.example")), example(lc, None)));
    }
    for (name, _) in &repos {
        for lc in [Lifecycle::PreCreate, Lifecycle::PostCreate] {
            wanted.push((
                hooks.join(format!("{lc}.{name}.sh.example")),
                example(lc, Some(name)),
            ));
        }
    }
    for (path, text) in wanted {
        let err = |source| InitError {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let written = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                use std::io::Write as _;
                f.write_all(text.as_bytes()).map_err(err)?;
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(e) => return Err(err(e)),
        };
        files.push(InitFile { path, written });
    }
    Ok(files)
}
