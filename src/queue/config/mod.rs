//! `config.toml`: parsed from spans so every error names the file, the line and the key
//! ([`parse`]), re-read while a drain or a hub runs ([`source`]), and written by `hookq init`
//! ([`initial`]).

pub mod initial;
pub mod parse;
pub mod source;

pub use initial::{initial_config, toml_quote};
pub use parse::{
    Config, ConfigError, ConfigWarning, DEFAULT_MAX_LOG_FILE_BYTES, Gate, MAX_COMMANDS, MAX_CONFIG_BYTES, Queue, Repository,
};
pub use source::{ConfigSource, FileVersion, QUIET, SETTLE, SETTLE_LIMIT};
