//! `hookq init`: the state dir, the database and a config that is never overwritten.

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use crate::cli::error::Error;
use hookq::queue::config::initial_config;
use hookq::queue::store::Store;
use hookq::queue::workspace::Workspace;

use super::app::{Ctx, store_options};

/// Create the state dir, database and config.toml in DIR (default: the current directory).
#[derive(Debug, clap::Args)]
pub(super) struct Args {
    /// The remote the default `after_merge` lines delete the task's branch from.
    #[arg(long, value_name = "NAME", default_value = "origin")]
    remote: String,
    /// The repository's main branch (`repository.main_branch`).
    #[arg(long, value_name = "NAME", default_value = "main")]
    main_branch: String,
}

/// A remote name safe to write into a shell line: `[A-Za-z0-9][A-Za-z0-9._-]*`.
fn check_remote(name: &str) -> Result<(), Error> {
    let ok = name.len() <= 100
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "invalid remote name {name:?}: use ASCII letters, digits, `.`, `_` and `-`"
        )))
    }
}

/// A branch name: like a remote name, with `/` between parts.
fn check_branch(name: &str) -> Result<(), Error> {
    let ok = name.len() <= 200
        && name
            .split('/')
            .all(|part| check_remote(part).is_ok() && !part.ends_with(".lock"))
        && !name.contains("..");
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "invalid branch name {name:?}: use ASCII letters, digits, `.`, `_`, `-` and `/`"
        )))
    }
}

pub(super) fn run(ctx: &Ctx, args: Args) -> Result<(), Error> {
    check_remote(&args.remote)?;
    check_branch(&args.main_branch)?;
    // The directory itself, symlinks and `..` resolved, as every other command finds it.
    let root = std::fs::canonicalize(ctx.start())
        .ok()
        .filter(|r| r.is_dir())
        .ok_or_else(|| Error::NotFound(format!("no directory {}", ctx.start().display())))?;
    let ws = Workspace::at(root);
    let io = |what, path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { what, path, source }
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(ws.state_dir())
        .map_err(io("cannot create", ws.state_dir()))?;
    let config = ws.config_path();
    let text = initial_config(&args.remote, &args.main_branch);
    let wrote = write_new(&config, text.as_bytes()).map_err(io("cannot write", &config))?;
    let db = ws.db_path();
    Store::open_with(&db, store_options()?).map_err(|e| Error::store(&db, e))?;
    let lock = ws.lock_path();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock)
        .map_err(io("cannot create", &lock))?;
    outln!("hookq workspace: {}", ws.root().display());
    if wrote {
        outln!("wrote {}", config.display());
    } else {
        outln!(
            "kept {} (it exists; init never overwrites it)",
            config.display()
        );
    }
    outln!("database {}", db.display());
    Ok(())
}

/// Writes `bytes` to `path` unless it exists, whole or not at all: into a file of its own
/// beside it first, synced, then linked into place, which fails if `path` appeared meanwhile.
/// Whether it wrote. (Written in place, a full disk or a file-size limit left a short or empty
/// `config.toml`, which the next `init` kept and which cleared every point without running it.)
fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    if path.symlink_metadata().is_ok() {
        return Ok(false);
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.new-{}", std::process::id()));
    let linked = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        })
        .and_then(|()| match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        });
    let _ = std::fs::remove_file(&tmp);
    if linked? {
        // The new name is durable once its folder is.
        std::fs::File::open(path.parent().unwrap_or(Path::new(".")))?.sync_all()?;
        return Ok(true);
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_remote("origin").is_ok());
        assert!(check_remote("my-fork.2").is_ok());
        for bad in ["", "-x", "a b", "a'b", "a;b", "o/x"] {
            assert!(check_remote(bad).is_err(), "{bad}");
        }
        assert!(check_branch("release/1.0").is_ok());
        for bad in ["", "a//b", "a/", "/a", "a..b", "x.lock", "a b"] {
            assert!(check_branch(bad).is_err(), "{bad}");
        }
    }
}
