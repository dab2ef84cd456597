//! `hookq completions <SHELL>` and `hookq man`: what they print is a working completion script
//! and a man page naming every subcommand, outside any workspace, and a bad argument is a usage
//! error.

use crate::support::queue as common;

use crate::cli::Cli;
use clap::CommandFactory;
use common::{HOOKQ, Ws};

const USAGE: i32 = 2;

/// The subcommands hookq has, as clap defines them (`help` aside).
fn subcommands() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// Runs `script` in a bash that reads no startup file; its stdout, after checking it succeeded.
fn bash(ws: &Ws, script: &str) -> String {
    let out = ws
        .command("bash")
        .args(["--norc", "--noprofile", "-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "bash -c {script:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Whether `program` is on the `PATH` the tests run with.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

#[test]
fn the_bash_script_parses_registers_and_completes() {
    // No workspace: `hookq init` has not run, and the script needs none.
    let ws = Ws::new();
    let script = ws.hookq(&["completions", "bash"]).ok().stdout();
    let file = ws.base().join("hookq.bash");
    std::fs::write(&file, &script).unwrap();
    let file = file.display();
    bash(&ws, &format!("bash -n '{file}'"));
    let registered = bash(&ws, &format!("source '{file}' && complete -p hookq"));
    assert!(
        registered.starts_with("complete ") && registered.trim_end().ends_with(" hookq"),
        "{registered}"
    );
    // Completing as bash would: `hookq qu<TAB>`, `hookq task mo<TAB>`, `hookq completions <TAB>`.
    let complete = |words: &[&str]| -> Vec<String> {
        let cword = words.len() - 1;
        let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
        let prev = if cword > 0 { words[cword - 1] } else { "" };
        let out = bash(
            &ws,
            &format!(
                "source '{file}' && COMP_WORDS=({}) && COMP_CWORD={cword} && _hookq hookq '{}' '{prev}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
                quoted.join(" "),
                words[cword],
            ),
        );
        out.lines().map(str::to_string).collect()
    };
    assert_eq!(complete(&["hookq", "qu"]), ["queue"]);
    assert_eq!(complete(&["hookq", "task", "mo"]), ["move"]);
    let shells = complete(&["hookq", "completions", ""]);
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.iter().any(|s| s == shell), "{shells:?}");
    }
}

#[test]
fn the_zsh_and_fish_scripts_name_every_subcommand() {
    let ws = Ws::new();
    for (shell, first) in [("zsh", "#compdef hookq"), ("fish", "")] {
        let script = ws.hookq(&["completions", shell]).ok().stdout();
        assert!(script.starts_with(first), "{shell}: {script:.200}");
        for sub in subcommands() {
            assert!(script.contains(&sub), "{shell} script does not name {sub}");
        }
        if shell == "fish" {
            assert!(script.contains("complete -c hookq"), "{script:.400}");
        }
        // Checked by the shell itself where it is installed.
        if on_path(shell) {
            let file = ws.base().join(format!("hookq.{shell}"));
            std::fs::write(&file, &script).unwrap();
            let check = if shell == "zsh" { "-n" } else { "--no-execute" };
            let status = ws.command(shell).arg(check).arg(&file).status().unwrap();
            assert!(status.success(), "{shell} {check}: {status}");
        }
    }
}

#[test]
fn the_man_page_is_roff_naming_every_subcommand() {
    let ws = Ws::new();
    let page = ws.hookq(&["man"]).ok().stdout();
    assert!(page.contains("\n.TH hookq 1 "), "{page:.300}");
    assert!(page.contains("\n.SH SUBCOMMANDS\n"), "{page}");
    // roff writes a hyphen as `\-`.
    for sub in subcommands() {
        assert!(
            page.contains(&format!("hookq\\-{sub}(1)")),
            "no {sub}:\n{page}"
        );
    }
    // Every page it points to is there: each subcommand's and each of theirs.
    for sub in Cli::command().get_subcommands() {
        let mut words = vec![sub.get_name()];
        let sub_page = ws
            .hookq(&[&["man"], words.as_slice()].concat())
            .ok()
            .stdout();
        assert!(
            sub_page.contains(&format!("\n.TH hookq-{} 1 ", sub.get_name())),
            "{sub_page:.300}"
        );
        assert!(sub_page.contains(&format!("\\fBhookq {}\\fR", sub.get_name())));
        for inner in sub.get_subcommands() {
            words.push(inner.get_name());
            let inner_page = ws
                .hookq(&[&["man"], words.as_slice()].concat())
                .ok()
                .stdout();
            let title = words.join("-");
            assert!(
                inner_page.contains(&format!("\n.TH hookq-{title} 1 ")),
                "{inner_page:.300}"
            );
            words.pop();
        }
    }
    // `man` shows it, where it is installed; installing the page is `hookq man > hookq.1`.
    if on_path("man") {
        let file = ws.base().join("hookq.1");
        std::fs::write(&file, &page).unwrap();
        let shown = ws
            .command("man")
            .args(["-P", "cat", "-l"])
            .arg(&file)
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.status.success(), "man -l: {}", shown.status);
        assert!(
            text.contains("NAME") && text.contains("SUBCOMMANDS"),
            "{text}"
        );
        assert!(text.contains("hookq-queue(1)"), "{text}");
    }
}

#[test]
fn the_mans_help_tells_how_to_install_it() {
    let ws = Ws::new();
    let help = ws.hookq(&["man", "--help"]).ok().stdout();
    assert!(help.contains("`hookq man > hookq.1`"), "{help}");
}

#[test]
fn a_shell_or_page_hookq_does_not_have_is_a_usage_error() {
    let ws = Ws::new();
    let out = ws.hookq(&["completions", "tcsh"]).expect_code(USAGE);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr().contains("invalid value 'tcsh'") && out.stderr().contains("bash, zsh, fish"),
        "{}",
        out.stderr()
    );
    ws.hookq(&["completions"]).expect_code(USAGE);
    let out = ws.hookq(&["man", "task", "jump"]).expect_code(USAGE);
    assert!(out.stdout.is_empty());
    assert_eq!(
        out.errors(),
        ["error: man: hookq task has no subcommand \"jump\""],
        "{}",
        out.stderr()
    );
}

#[test]
fn a_page_that_cannot_be_written_is_an_error() {
    let ws = Ws::new();
    for args in [&["man"][..], &["completions", "bash"]] {
        let out = ws
            .command(HOOKQ)
            .args(args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("error: cannot write to stdout"),
            "{stderr}"
        );
    }
}
