//! The `hookq` command line, built by the tour's first step so that it is there to type when the
//! tour ends: `cargo run --example` builds the example alone, not the package's binary.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where cargo puts the `hookq` binary of the same profile as the example running from `exe`:
/// `<target>/<profile>/examples/quickstart` → `<target>/<profile>/hookq`.
pub fn binary_beside(exe: &Path) -> Option<PathBuf> {
    let profile_dir = exe.parent()?.parent()?;
    Some(profile_dir.join("hookq"))
}

/// The cargo arguments that build the binary for the profile the example was built with.
///
/// The example is named too: a build that selects an example resolves the dev-dependencies'
/// features with the library's, so `--bin hookq` alone would compile the library (and a few
/// dependencies) a second time with other features. Named with it, the library the example
/// was built against is reused and only the binary compiles.
pub fn build_args(release: bool) -> Vec<&'static str> {
    let mut args = vec![
        "build",
        "--locked",
        "--bin",
        "hookq",
        "--example",
        "quickstart",
    ];
    if release {
        args.push("--release");
    }
    args
}

/// Builds the `hookq` binary with the cargo that runs this example (`cargo run` sets `CARGO`),
/// into the same target folder. The binary's path, or why there is none.
pub fn build() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this example: {e}"))?;
    let binary = binary_beside(&exe).ok_or("cannot find the target folder")?;
    let Some(cargo) = std::env::var_os("CARGO") else {
        return Err("not started by cargo run, so there is no cargo to build it with".into());
    };
    let args = build_args(!cfg!(debug_assertions));
    println!(
        "Building the hookq command line (cargo {})...",
        args.join(" ")
    );
    let status = Command::new(cargo)
        .args(&args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("cargo {} failed ({status})", args.join(" ")));
    }
    if !binary.is_file() {
        return Err(format!("cargo built no {}", binary.display()));
    }
    Ok(binary)
}

/// The `hookq` binary run on the tour's workspace, its output indented.
pub fn show(binary: &Path, root: &Path, args: &[&str]) {
    let mut line = vec![
        binary.display().to_string(),
        "-C".into(),
        root.display().to_string(),
    ];
    line.extend(args.iter().map(|a| a.to_string()));
    println!("  $ {}", line.join(" "));
    match Command::new(binary).arg("-C").arg(root).args(args).output() {
        Ok(out) => {
            for l in String::from_utf8_lossy(&out.stdout)
                .lines()
                .chain(String::from_utf8_lossy(&out.stderr).lines())
            {
                println!("  {l}");
            }
        }
        Err(e) => println!("  cannot run it: {e}"),
    }
}

/// The tour's last lines: where `hookq` is, and how to have it on `PATH`.
pub fn tell(built: &Result<PathBuf, String>) {
    println!();
    println!("The hookq command line");
    println!("----------------------");
    match built {
        Ok(binary) => {
            println!("It is built: {}", binary.display());
            println!("Run it from there, or put it on your PATH (in ~/.cargo/bin):");
        }
        Err(why) => {
            println!("It was not built ({why}).");
            println!("Build it and put it on your PATH (in ~/.cargo/bin):");
        }
    }
    println!(
        "  cargo install --locked --path {}",
        env!("CARGO_MANIFEST_DIR")
    );
    println!("then `hookq --help`; README.md's tour of the CLI and docs/ go on from there.");
}
