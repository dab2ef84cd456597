//! The schema a fresh database gets is the one `fixtures/schema/current.sql` records: every
//! table, index and trigger in `sqlite_master`, the pragmas that shape the file, and the rows the
//! migrations seed. A migration that changes any of it changes the fixture in the same commit,
//! where a reviewer sees the difference.
//!
//! To write the fixture again from the schema the migrations make now:
//! `HOOKQ_BLESS_SCHEMA=1 cargo test --test docs schema::`.

use std::path::{Path, PathBuf};

use hookq::Store;
use rusqlite::Connection;
use rusqlite::types::ValueRef;

/// The fixture, in the repository.
fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/schema/current.sql")
}

/// What the fixture's header says, above the dump.
const HEADER: &str = "\
-- The schema of a database that `Store::open` has just created: what the migrations in
-- migrations/ make, compared with this file line for line by tests/docs/schema.rs.
--
-- Written by `HOOKQ_BLESS_SCHEMA=1 cargo test --test docs schema::`, which opens a fresh store
-- in a temporary folder and dumps it:
--   * the pragmas that describe the file (page size, encoding, user_version, ...);
--   * every row of sqlite_master but the root page: type, name, table and SQL, sorted by type
--     and name. The SQL is normalized so that only its meaning counts: comments removed,
--     whitespace collapsed (none around parentheses and commas), \"quoted\" plain names
--     unquoted (SQLite stores a renamed table's name quoted);
--   * the rows each table starts with (refinery_schema_history aside: it lists the migration
--     files, which may change while the schema does not).
-- Do not edit it by hand: change a migration, bless, and review the difference.
";

/// `sql` with comments gone, whitespace collapsed, and plain double-quoted names unquoted;
/// string literals kept as they are.
fn normalize(sql: &str) -> String {
    let mut out = String::new();
    let mut chars = sql.chars().peekable();
    let mut space = false;
    while let Some(c) = chars.next() {
        match c {
            '-' if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                space = true;
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                space = true;
            }
            c if c.is_whitespace() => space = true,
            '\'' | '"' | '`' | '[' => {
                let close = if c == '[' { ']' } else { c };
                let mut quoted = String::new();
                while let Some(q) = chars.next() {
                    if q == close {
                        // A doubled quote inside the literal stands for one.
                        if close != ']' && chars.peek() == Some(&close) {
                            chars.next();
                            quoted.push(q);
                            quoted.push(q);
                            continue;
                        }
                        break;
                    }
                    quoted.push(q);
                }
                let plain = c != '\''
                    && quoted
                        .chars()
                        .next()
                        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
                    && quoted
                        .chars()
                        .all(|q| q.is_ascii_alphanumeric() || q == '_');
                push_token(&mut out, &mut space);
                if plain {
                    out.push_str(&quoted);
                } else {
                    out.push(c);
                    out.push_str(&quoted);
                    out.push(close);
                }
            }
            '(' | ')' | ',' | ';' => {
                space = false;
                out.push(c);
            }
            c => {
                push_token(&mut out, &mut space);
                out.push(c);
            }
        }
    }
    out.trim_end_matches(';').trim().to_string()
}

/// Puts the one space that separates two words, unless punctuation that takes none is next to it.
fn push_token(out: &mut String, space: &mut bool) {
    if *space && !out.is_empty() && !out.ends_with(['(', ',', ';']) {
        out.push(' ');
    }
    *space = false;
}

/// One value of a row as SQL would write it.
fn literal(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Text(t) => format!("'{}'", String::from_utf8_lossy(t).replace('\'', "''")),
        ValueRef::Blob(b) => format!(
            "X'{}'",
            b.iter().map(|x| format!("{x:02X}")).collect::<String>()
        ),
    }
}

/// The dump of `conn`'s schema, as the fixture holds it below its header.
fn dump(conn: &Connection) -> String {
    let mut out = String::new();
    for pragma in [
        "application_id",
        "auto_vacuum",
        "encoding",
        "journal_mode",
        "page_size",
        "user_version",
    ] {
        let v: String = conn
            .query_row(
                &format!("SELECT CAST({pragma} AS TEXT) FROM pragma_{pragma}"),
                [],
                |r| r.get(0),
            )
            .unwrap();
        out.push_str(&format!("PRAGMA {pragma} = {v};\n"));
    }
    out.push('\n');
    let objects: Vec<(String, String, String, Option<String>)> = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (kind, name, table, sql) in &objects {
        let sql = sql.as_deref().map_or("(made by SQLite)".into(), normalize);
        out.push_str(&format!("-- {kind} {name} on {table}\n{sql};\n"));
    }
    out.push('\n');
    for (_, table, _, _) in objects.iter().filter(|(k, ..)| k == "table") {
        if table == "refinery_schema_history" {
            continue;
        }
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns = stmt.column_count();
        let mut rows: Vec<String> = stmt
            .query_map([], |r| {
                let values: Vec<String> = (0..columns)
                    .map(|i| r.get_ref(i).map(literal))
                    .collect::<Result<_, _>>()?;
                Ok(values.join(", "))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        rows.sort();
        for row in rows {
            out.push_str(&format!("-- row of {table}: ({row})\n"));
        }
    }
    out
}

#[test]
fn a_fresh_database_has_the_schema_the_fixture_records() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("arc.db")).unwrap();
    let dumped = format!("{HEADER}\n{}", dump(store.conn()));
    if std::env::var_os("HOOKQ_BLESS_SCHEMA").is_some() {
        std::fs::create_dir_all(fixture().parent().unwrap()).unwrap();
        std::fs::write(fixture(), &dumped).unwrap();
        return;
    }
    let recorded = std::fs::read_to_string(fixture()).unwrap();
    if recorded != dumped {
        let only = |a: &str, b: &str| -> Vec<String> {
            let b: std::collections::HashSet<&str> = b.lines().collect();
            a.lines()
                .filter(|l| !b.contains(l))
                .map(|l| format!("  {l}"))
                .collect()
        };
        panic!(
            "the fresh schema differs from {}; bless it if the change is meant (see the top of \
             tests/docs/schema.rs).\nonly in the fixture:\n{}\nonly in the fresh database:\n{}",
            fixture().display(),
            only(&recorded, &dumped).join("\n"),
            only(&dumped, &recorded).join("\n"),
        );
    }
}

#[test]
fn normalizing_keeps_literals_and_drops_comments() {
    assert_eq!(
        normalize(
            "CREATE TABLE \"t\" (\n  a  TEXT, -- why a\n  b /* c */ TEXT CHECK (b = 'x -- y''s')\n)"
        ),
        "CREATE TABLE t(a TEXT,b TEXT CHECK(b = 'x -- y''s'))"
    );
    assert_eq!(
        normalize("CREATE INDEX \"odd name\" ON t (a)"),
        "CREATE INDEX \"odd name\" ON t(a)"
    );
}

/// docs/ui.md says why two pages scan a task's pending points on SQLite and read them through
/// an index on PostgreSQL; this keeps it true of the migrations.
#[test]
fn the_ui_docs_say_which_store_scans_a_tasks_pending_points() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read_all = |dir: &str| -> String {
        let mut files: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        files
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect()
    };
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let sqlite = flat(&read_all("migrations/sqlite"));
    let postgres = flat(&read_all("migrations/postgres"));
    let ui = flat(&std::fs::read_to_string(root.join("docs/ui.md")).unwrap());
    assert!(
        !sqlite.contains("ON pending_hooks (task"),
        "SQLite indexes pending points by task: docs/ui.md says they are scanned"
    );
    assert!(
        ui.contains(
            "On SQLite, `/pending?task=` and `/task/{id}` find a task's pending points by scanning"
        ),
        "docs/ui.md does not say why a task's pending points are scanned"
    );
    assert!(
        postgres.contains(
            "CREATE INDEX hookq_pending_hooks_by_task ON hookq_pending_hooks (queue, task, id)"
        ) && ui.contains("PostgreSQL has that index (`hookq_pending_hooks_by_task`)")
    );
}
