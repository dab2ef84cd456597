//! The web view in a real headless Chromium (Debian's `chromium` and `chromium-driver`), driven
//! over WebDriver by the tests' shared client (`support::browser`): the client against a page the test
//! serves itself (`own_page`), then `hookq ui` run for real (`server`) on workspaces the binary
//! recorded into: every page, live updates and a tailed log (`pages`, the `scenarios` the
//! PostgreSQL tests run too), hostile values (`hostile`), the actions and the token
//! (`actions`), a reader clicking through many pages (`navigation`), and the list of many
//! workspaces' queues (`fleet`). Screenshots go to
//! `target/ui-screens/`. Without Chromium a test says `SKIPPED` and passes, but under CI.

mod actions;
mod fleet;
mod hostile;
mod navigation;
mod own_page;
mod pages;
mod scenarios;
mod server;
