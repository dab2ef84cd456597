//! Every page of `hookq ui` on a SQLite queue, in the browser: the scenarios of `scenarios`.

use crate::browser::scenarios::{self, HOOKS, populate};
use crate::support::queue::Ws;
use crate::support::workspace::Scratch;

/// Its screenshots are docs/ui.md's: its workspace is in a folder whose name reads well in the
/// pages' header, not a temp dir's random name.
#[test]
fn every_page_renders_with_no_console_error() {
    let ws = Ws::init_in(Scratch::readable("widgets"));
    ws.write_config(HOOKS);
    populate(&ws);
    scenarios::every_page_renders("every_page_renders_with_no_console_error", &ws, "");
}

#[test]
fn a_task_move_shows_on_open_pages_within_a_second() {
    let ws = Ws::init();
    ws.write_config(HOOKS);
    populate(&ws);
    scenarios::a_move_shows_live("a_task_move_shows_on_open_pages_within_a_second", &ws);
}

#[test]
fn the_log_page_tails_a_running_hook() {
    let ws = Ws::init();
    scenarios::the_log_page_tails_a_running_hook(
        "the_log_page_tails_a_running_hook",
        &ws,
        |ws, hooks| ws.write_config(hooks),
    );
}

#[test]
fn a_hook_starting_and_ending_shows_within_a_second() {
    let ws = Ws::init();
    scenarios::a_hook_starting_and_ending_shows_live(
        "a_hook_starting_and_ending_shows_within_a_second",
        &ws,
        |ws, hooks| ws.write_config(hooks),
    );
}
