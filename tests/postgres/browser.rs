//! The web view on a PostgreSQL queue, in the browser: the pages' scenarios of the `browser`
//! test binary (its scenarios, shared, driven by the tests' WebDriver client), on a workspace whose queue is on this
//! binary's cluster. The screenshots are `target/ui-screens/postgres-<page>.png`.

use crate::postgres::cli::{pg_config, pg_workspace_with};
use crate::postgres::cluster::PASSWORD;
use crate::postgres::scenarios::{self, HOOKS, populate};
use crate::support::queue::{Config, Ws};

/// A workspace whose queue `q` is on a fresh database of the cluster, with `HOOKS`, recorded
/// into by `populate`.
fn populated() -> Ws {
    let (ws, _db, _url) = pg_workspace_with(&Config::hooks(HOOKS), "");
    populate(&ws);
    ws
}

#[test]
fn every_page_renders_on_postgres_with_no_console_error() {
    if crate::postgres::without_postgres("every_page_renders_on_postgres_with_no_console_error") {
        return;
    }
    let ws = populated();
    scenarios::every_page_renders(
        "every_page_renders_on_postgres_with_no_console_error",
        &ws,
        "postgres-",
    );
}

#[test]
fn a_task_move_shows_on_open_pages_within_a_second_on_postgres() {
    if crate::postgres::without_postgres(
        "a_task_move_shows_on_open_pages_within_a_second_on_postgres",
    ) {
        return;
    }
    let ws = populated();
    scenarios::a_move_shows_live(
        "a_task_move_shows_on_open_pages_within_a_second_on_postgres",
        &ws,
    );
}

#[test]
fn the_log_page_tails_a_running_hook_on_postgres() {
    if crate::postgres::without_postgres("the_log_page_tails_a_running_hook_on_postgres") {
        return;
    }
    let (ws, _db, url) = pg_workspace_with(&Config::default(), "");
    scenarios::the_log_page_tails_a_running_hook(
        "the_log_page_tails_a_running_hook_on_postgres",
        &ws,
        |ws, hooks| {
            ws.write_config_text(pg_config(&Config::hooks(hooks), &url, "q", "").as_bytes())
        },
    );
}

/// The view never shows the database's password: not on its pages, not in what it prints.
#[test]
fn the_view_never_shows_the_database_password() {
    if crate::postgres::without_postgres("the_view_never_shows_the_database_password") {
        return;
    }
    let ws = populated();
    let ui = crate::postgres::server::Ui::start(&ws, &[], &[]);
    let Some(b) =
        crate::support::browser::Browser::start("the_view_never_shows_the_database_password")
    else {
        return;
    };
    for path in ["", "pending", "history", "task/t1", "metrics"] {
        b.goto(&ui.url(path));
        assert!(!b.source().contains(PASSWORD), "the password on /{path}");
    }
    assert!(!ui.stdout().contains(PASSWORD) && !ui.stderr().contains(PASSWORD));
}

#[test]
fn a_hook_starting_and_ending_shows_within_a_second_on_postgres() {
    if crate::postgres::without_postgres(
        "a_hook_starting_and_ending_shows_within_a_second_on_postgres",
    ) {
        return;
    }
    let (ws, _db, url) = pg_workspace_with(&Config::default(), "");
    scenarios::a_hook_starting_and_ending_shows_live(
        "a_hook_starting_and_ending_shows_within_a_second_on_postgres",
        &ws,
        |ws, hooks| {
            ws.write_config_text(pg_config(&Config::hooks(hooks), &url, "q", "").as_bytes())
        },
    );
}
