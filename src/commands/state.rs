//! `curate state check` and `curate state repair`: the state database's health, and the way back
//! from a damaged one that keeps what can still be read.

use std::path::Path;

use anyhow::Context as _;

use super::{Failure, Selection, exit};
use crate::engine::lock;
use crate::engine::repair::{self, Health};

fn state_dir(path: &Path, sel: &Selection) -> Result<std::path::PathBuf, Failure> {
    let (pipeline, _) = crate::curation::load(path)?;
    Ok(sel.state.clone().unwrap_or_else(|| pipeline.default_state_dir()))
}

/// Prints what SQLite's integrity check finds; exits 1 when the database is damaged.
pub fn state_check(path: &Path, sel: &Selection) -> Result<u8, Failure> {
    let dir = state_dir(path, sel)?;
    let _lock = lock::acquire(&dir).map_err(anyhow::Error::from)?;
    match repair::check(&dir).map_err(anyhow::Error::from)? {
        Health::Missing => {
            println!("no state database in {}: nothing has run yet", dir.display());
            Ok(exit::OK)
        }
        Health::Sound => {
            println!("the state database in {} is sound", dir.display());
            Ok(exit::OK)
        }
        Health::Damaged(problems) => {
            println!("the state database in {} is damaged:", dir.display());
            for p in problems.iter().take(20) {
                println!("  {p}");
            }
            if problems.len() > 20 {
                println!("  … and {} more", problems.len() - 20);
            }
            println!("`curate state repair {}` keeps every task it can still read", path.display());
            Ok(exit::ERRORED)
        }
    }
}

/// Moves a damaged database aside and starts a new one with every task row still readable. A
/// sound one is left alone.
pub fn state_repair(path: &Path, sel: &Selection) -> Result<u8, Failure> {
    let dir = state_dir(path, sel)?;
    let _lock = lock::acquire(&dir).map_err(anyhow::Error::from)?;
    match repair::check(&dir).map_err(anyhow::Error::from)? {
        Health::Missing => {
            println!("no state database in {}: nothing to repair", dir.display());
            return Ok(exit::OK);
        }
        Health::Sound => {
            println!("the state database in {} is sound: nothing to repair", dir.display());
            return Ok(exit::OK);
        }
        Health::Damaged(_) => {}
    }
    let repaired =
        repair::repair(&dir).with_context(|| format!("repairing the state in {}", dir.display()))?;
    let of = repaired.recorded.map_or(String::new(), |n| format!(" of the {n} it counts"));
    println!(
        "kept {} task(s){of}; the damaged file is now {}\nthe next `curate run` redoes only the tasks that were lost",
        repaired.kept,
        repaired.moved_to.display()
    );
    Ok(exit::OK)
}
