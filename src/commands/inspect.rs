//! Commands that read and never run: `validate`, `graph`, `status`, `report`.

use std::path::Path;

use anyhow::Context;

use super::{Failure, Selection, exit, load};
use crate::engine::flow::Flow;
use crate::engine::item::Scope;
use crate::engine::pipeline::Pipeline;
use crate::engine::{lock, store, walk};
use crate::report;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Md,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphFormat {
    Text,
    Dot,
}

pub fn validate(path: &Path) -> Result<u8, Failure> {
    let loaded = load(path, &Selection::default())?;
    let p = &loaded.pipeline;
    println!(
        "ok: pipeline `{}`: {} stage(s); source: {} PR(s), {} comment(s), {} bad record(s)",
        p.name,
        p.stages.len(),
        loaded.data.count(Scope::Pr),
        loaded.data.count(Scope::Comment),
        loaded.problems.len()
    );
    Ok(exit::OK)
}

pub fn graph(path: &Path, format: GraphFormat) -> Result<u8, Failure> {
    let pipeline = Pipeline::load(path)?;
    print!(
        "{}",
        match format {
            GraphFormat::Text => report::graph::text(&pipeline),
            GraphFormat::Dot => report::graph::dot(&pipeline),
        }
    );
    Ok(exit::OK)
}

pub fn status(path: &Path, sel: &Selection) -> Result<u8, Failure> {
    let loaded = load(path, sel)?;
    let records = store::load(&loaded.state_dir).context("reading the state")?;
    let flow = Flow::new(&loaded.pipeline, &loaded.data);
    let states = walk::walk(&flow, &records);
    let holder = lock::holder(&loaded.state_dir);
    println!("state: {}", loaded.state_dir.display());
    print!("{}", report::status::render(&flow, &states, &records, holder.as_deref()));
    Ok(exit::OK)
}

pub fn report(path: &Path, sel: &Selection, format: ReportFormat) -> Result<u8, Failure> {
    let loaded = load(path, sel)?;
    let records = store::load(&loaded.state_dir).context("reading the state")?;
    let flow = Flow::new(&loaded.pipeline, &loaded.data);
    let states = walk::walk(&flow, &records);
    let funnel = report::funnel::funnel(&flow, &states, &records, loaded.problems.len());
    match format {
        ReportFormat::Md => print!("{}", funnel.to_markdown()),
        ReportFormat::Json => {
            println!("{}", serde_json::to_string_pretty(&funnel).context("encoding the report")?)
        }
    }
    Ok(exit::OK)
}
