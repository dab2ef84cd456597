//! A host embedding hookq's durable hook queue: it records a task's transition inside its own
//! SQLite transaction, next to a write of its own, then takes the runner lock and drains.
//!
//! `cargo run --example embed_queue` works in a scratch folder under the system temp dir and
//! removes it at the end.

use std::path::{Path, PathBuf};

use hookq::queue::record::{self, MoveFacts};
use hookq::{Drainer, Phase, PlanId, RunnerLock, Stop, Store, TaskId, Wait, Workspace};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scratch = Scratch::new()?;
    let outcome = run(scratch.path());
    drop(scratch);
    outcome
}

fn run(root: &Path) -> Result<(), Box<dyn std::error::Error>> {
    // The host's repository root, with the queue's state dir and config inside it.
    let ws = Workspace::at(root);
    let mut store = Store::open(&ws.db_path())?;
    std::fs::write(
        ws.config_path(),
        "[hooks]\nafter_awaiting_human = ['echo \"$ARC_TASK is $ARC_STATE\"']\n",
    )?;
    println!("workspace {}", ws.root().display());

    // The host's own table lives in the same database.
    store
        .conn()
        .execute_batch("CREATE TABLE reviews (task TEXT NOT NULL, note TEXT NOT NULL)")?;
    let (task, plan) = (TaskId::new("t1")?, PlanId::new("p1")?);
    let ready = Phase::new("todo.ready")?;
    store.write(|tx| record::add_task(tx, &task, &plan, &ready))?;

    // One transaction of the host's: its own row, and the move that records a hook point.
    // Either both commit or neither does; hookq never commits behind the host's back.
    let tx = store.transaction()?;
    tx.execute(
        "INSERT INTO reviews (task, note) VALUES (?1, ?2)",
        ("t1", "ready for review"),
    )?;
    let awaiting = Phase::new("review.awaiting_human")?;
    let moved = record::move_task(&tx, &task, &awaiting, &MoveFacts::default())?;
    tx.commit()?;
    if let Some(o) = &moved.occurrence {
        println!(
            "recorded {} for {} (occurrence {})",
            o.point, moved.task, o.id
        );
    }

    // Only the holder of the runner lock runs hooks. Taken without waiting, as `hookq task
    // move` does: if a hub holds it, the hub runs the point.
    let stop = Stop::new();
    match RunnerLock::acquire(&ws.lock_path(), Wait::No, &|| true)? {
        Some(lock) => {
            let mut drainer = Drainer::with_warnings(ws.clone(), &stop, |line| println!("{line}"));
            let report = drainer.drain(&mut store, &lock)?;
            println!(
                "drained: {} point(s) cleared, {} command(s) run, {} failed",
                report.cleared, report.commands, report.failed
            );
        }
        None => println!("the runner lock is held elsewhere; its holder runs the point"),
    }

    for h in store.history(Some("t1"), None, 10)? {
        let command = h.command.as_deref().unwrap_or("-");
        println!("ran {} for {}: {command} -> {}", h.point, h.task, h.outcome);
        if let Some(log) = &h.log_path {
            for line in std::fs::read_to_string(log)?.lines() {
                println!("  log: {line}");
            }
        }
    }
    Ok(())
}

/// A folder of its own under the system temp dir, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("hookq-embed-queue-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir)?;
        Ok(Self(dir))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
