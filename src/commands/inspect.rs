//! Commands that read and never run: `validate`, `graph`, `status`, `report`, `export`.

use std::path::Path;

use anyhow::Context;

use super::{Failure, Selection, exit, load};
use crate::engine::flow::Flow;
use crate::engine::item::Scope;
use crate::engine::pipeline::Pipeline;
use crate::engine::{lock, store, walk};
use crate::{export, report};

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
    // Table 4 once tests exist: of the comments the last comment stage kept.
    let stats = loaded
        .pipeline
        .stages
        .iter()
        .any(|s| s.kind == "test_synthesis")
        .then(|| export::final_stage(&flow, None).ok())
        .flatten()
        .map(|last| export::assemble(&flow, &states, last).stats);
    // Table 5 and its figures, for an evaluation pipeline.
    let evaluation = report::evaluation::evaluation(&flow, &states);
    match format {
        ReportFormat::Md => {
            print!("{}", funnel.to_markdown());
            if let Some(stats) = &stats {
                print!("\n## Benchmark statistics (Table 4)\n\n{}", stats.to_markdown());
            }
            if let Some(evaluation) = &evaluation {
                print!("\n{}", evaluation.to_markdown());
            }
        }
        ReportFormat::Json => {
            let mut value = serde_json::to_value(&funnel).context("encoding the report")?;
            if let (Some(stats), Some(map)) = (&stats, value.as_object_mut()) {
                map.insert("stats".into(), serde_json::to_value(stats).context("encoding the report")?);
            }
            if let (Some(evaluation), Some(map)) = (&evaluation, value.as_object_mut()) {
                map.insert(
                    "evaluation".into(),
                    serde_json::to_value(evaluation).context("encoding the report")?,
                );
            }
            println!("{}", serde_json::to_string_pretty(&value).context("encoding the report")?)
        }
    }
    Ok(exit::OK)
}

pub fn export(path: &Path, sel: &Selection, out: &Path, stage: Option<&str>) -> Result<u8, Failure> {
    let loaded = load(path, sel)?;
    let records = store::load(&loaded.state_dir).context("reading the state")?;
    let flow = Flow::new(&loaded.pipeline, &loaded.data);
    let states = walk::walk(&flow, &records);
    let last = export::final_stage(&flow, stage).map_err(anyhow::Error::msg)?;
    let funnel = report::funnel::funnel(&flow, &states, &records, loaded.problems.len());
    if !funnel.complete {
        eprintln!("warning: the run is incomplete (tasks errored or still to run); exporting what is done");
    }
    let bench = export::assemble(&flow, &states, last);
    export::write(&bench, out).map_err(anyhow::Error::msg)?;
    println!(
        "exported {} instance(s) and {} test(s) from stage `{}` to {}",
        bench.stats.instances,
        bench.stats.tests.total,
        loaded.pipeline.stages[last].id,
        out.display()
    );
    Ok(exit::OK)
}
