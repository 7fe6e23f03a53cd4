//! `curate collect`: what a pipeline's source yields, written as SWE-CARE JSONL, so a collection
//! (from GitHub above all) can be shared and read again, with no API, by the `swe-care` source.

use std::path::Path;

use anyhow::Context as _;

use super::{Failure, exit};
use crate::engine::item::Scope;
use crate::sources::swe_care;

pub fn collect(pipeline: &Path, out: &Path, strict: bool) -> Result<u8, Failure> {
    let (pipeline, _context) = crate::curation::load(pipeline)?;
    let ingest = pipeline.source.load()?;
    if strict && !ingest.problems.is_empty() {
        let first = ingest.problems[0].clone();
        return Err(crate::errors::SourceError::Strict { count: ingest.problems.len(), first }.into());
    }
    for p in &ingest.problems {
        eprintln!("warning: skipped {p}");
    }
    let instances = swe_care::to_instances(&ingest.items);
    let text: String = instances.iter().map(|i| format!("{i}\n")).collect();
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // Written beside and renamed, so a stopped collection never leaves half a file.
    let tmp = out.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, out))
        .with_context(|| format!("writing {}", out.display()))?;
    let comments = ingest.items.iter().filter(|i| i.scope == Scope::Comment).count();
    println!("wrote {} PR(s) with {comments} review comment(s) to {}", instances.len(), out.display());
    Ok(exit::OK)
}
