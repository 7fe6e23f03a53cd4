//! Commands that read and never run: `validate`, `graph`, `status`, `report`, `export`; and
//! `clean`, which removes what a killed run left in Docker.

use std::path::Path;

use anyhow::Context;

use super::{Failure, Selection, exit, load};
use crate::engine::flow::Flow;
use crate::engine::item::Scope;
use crate::engine::{lock, store, walk};
use crate::stages::contract::{self, Contract};
use crate::{export, report};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Md,
    Json,
    Html,
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
    let (pipeline, _) = crate::curation::load(path)?;
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
    let hosts = std::fs::read(loaded.state_dir.join(crate::exec::hosts::COUNTS_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Vec<crate::exec::hosts::HostCounts>>(&bytes).ok());
    if let Some(counts) = hosts {
        println!("\nDocker hosts (last run):");
        for line in crate::exec::hosts::describe(&counts) {
            println!("  {line}");
        }
    }
    Ok(exit::OK)
}

/// Where each comment went (or, with `comment`, everything about one comment).
pub fn explain(path: &Path, sel: &Selection, comment: Option<&str>) -> Result<u8, Failure> {
    let loaded = load(path, sel)?;
    let records = store::load(&loaded.state_dir).context("reading the state")?;
    let flow = Flow::new(&loaded.pipeline, &loaded.data);
    let states = walk::walk(&flow, &records);
    match comment {
        None => print!("{}", report::explain::table(&flow, &states, &records)),
        Some(id) => match report::explain::comment(&flow, &states, &records, id) {
            Some(md) => print!("{md}"),
            None => {
                eprintln!(
                    "error: no comment `{id}` in the source of {}; `curate explain` lists them",
                    path.display()
                );
                return Ok(exit::BAD_INPUT);
            }
        },
    }
    Ok(exit::OK)
}

pub fn report(
    path: &Path,
    sel: &Selection,
    format: ReportFormat,
    charts: Option<&Path>,
) -> Result<u8, Failure> {
    let loaded = load(path, sel)?;
    let records = store::load(&loaded.state_dir).context("reading the state")?;
    let flow = Flow::new(&loaded.pipeline, &loaded.data);
    let states = walk::walk(&flow, &records);
    let sections = Sections {
        funnel: report::funnel::funnel(&flow, &states, &records, loaded.problems.len()),
        // Table 4 once tests exist: of the comments the last comment stage kept.
        stats: loaded
            .pipeline
            .stages
            .iter()
            .any(|s| s.provides == Some(contract::Test::NAME))
            .then(|| export::final_stage(&flow, None).ok())
            .flatten()
            .map(|last| export::assemble(&flow, &states, last).stats),
        // Table 5 and its figures, for an evaluation pipeline.
        evaluation: report::evaluation::evaluation(&flow, &states),
        relevance: report::relevance::section(&flow, &states),
    };
    let figures = sections.figures();
    if let Some(dir) = charts {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for (file, _, svg) in &figures {
            let path = dir.join(file);
            std::fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
        }
    }
    match format {
        ReportFormat::Md => print!("{}", sections.markdown()),
        ReportFormat::Html => {
            let captioned: Vec<(&str, String)> =
                figures.into_iter().map(|(_, caption, svg)| (caption, svg)).collect();
            let title = format!("curate report: {}", sections.funnel.pipeline);
            print!("{}", report::html::page(&title, &sections.markdown(), &captioned));
        }
        ReportFormat::Json => println!("{}", sections.json()?),
    }
    Ok(exit::OK)
}

/// What `curate report` shows of a state.
struct Sections {
    funnel: report::funnel::Funnel,
    stats: Option<export::stats::Stats>,
    evaluation: Option<report::evaluation::Evaluation>,
    relevance: Option<String>,
}

impl Sections {
    fn markdown(&self) -> String {
        let mut md = self.funnel.to_markdown();
        if let Some(stats) = &self.stats {
            md.push_str(&format!("\n## Benchmark statistics (Table 4)\n\n{}", stats.to_markdown()));
        }
        if let Some(relevance) = &self.relevance {
            md.push_str(&format!("\n{relevance}"));
        }
        if let Some(evaluation) = &self.evaluation {
            md.push_str(&format!("\n{}", evaluation.to_markdown()));
        }
        md
    }

    /// The charts: file name, caption, SVG.
    fn figures(&self) -> Vec<(&'static str, &'static str, String)> {
        let mut figures = vec![("funnel.svg", "The funnel (Table 3)", report::chart::funnel(&self.funnel))];
        if let Some(evaluation) = &self.evaluation {
            figures.push((
                "overlaps.svg",
                "Tests passed by each set of reviewers (Figure 5)",
                report::chart::overlaps(evaluation),
            ));
            figures.push((
                "categories.svg",
                "Pass rate by review category (Figure 7)",
                report::chart::categories(evaluation),
            ));
        }
        figures
    }

    fn json(&self) -> Result<String, Failure> {
        let mut value = serde_json::to_value(&self.funnel).context("encoding the report")?;
        if let (Some(stats), Some(map)) = (&self.stats, value.as_object_mut()) {
            map.insert("stats".into(), serde_json::to_value(stats).context("encoding the report")?);
        }
        if let (Some(evaluation), Some(map)) = (&self.evaluation, value.as_object_mut()) {
            map.insert("evaluation".into(), serde_json::to_value(evaluation).context("encoding the report")?);
        }
        Ok(serde_json::to_string_pretty(&value).context("encoding the report")?)
    }
}

/// Removes the containers a killed run of this state left behind, listing them. Holds the state's
/// lock while it does, so it never touches a live run's containers.
pub fn clean(path: &Path, sel: &Selection) -> Result<u8, Failure> {
    let loaded = load(path, sel)?;
    let dir = &loaded.state_dir;
    if !dir.exists() {
        println!("no state at {}: nothing to clean", dir.display());
        return Ok(exit::OK);
    }
    let _lock = lock::acquire(dir).map_err(anyhow::Error::from)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let hosts = loaded.context.docker.clone();
    let removed = runtime.block_on(async {
        for warning in hosts.connect_all().await? {
            eprintln!("warning: {warning}");
        }
        hosts.sweep(dir).await
    });
    let removed = removed.map_err(anyhow::Error::from)?;
    for name in &removed {
        println!("removed container {name}");
    }
    println!("{} container(s) of {} removed", removed.len(), dir.display());
    Ok(exit::OK)
}
