//! `curate export`: the finished benchmark as files, in curate's layout and, asked for, as
//! SWE-bench-style instances, which `--check` runs the way a harness would.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use super::{Failure, Selection, exit, load};
use crate::engine::flow::Flow;
use crate::engine::{store, walk};
use crate::export::{self, swe_bench};
use crate::report;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ExportFormat {
    /// curate's layout: instances.jsonl, tests, environments, stats.
    #[default]
    Curate,
    /// curate's layout and `swe-bench.jsonl`: one SWE-bench-style instance a comment.
    SweBench,
}

#[derive(Debug, Clone)]
pub struct ExportOptions {
    pub out: PathBuf,
    /// The stage whose kept comments make the benchmark (default: the last comment stage).
    pub stage: Option<String>,
    pub format: ExportFormat,
    /// Run every SWE-bench-style instance in its image, as a harness would.
    pub check: bool,
}

/// The file of SWE-bench-style instances in an export.
pub const SWE_BENCH_FILE: &str = "swe-bench.jsonl";

pub fn export(path: &Path, sel: &Selection, options: &ExportOptions) -> Result<u8, Failure> {
    if options.check && options.format != ExportFormat::SweBench {
        return Err(Failure::BadInput(
            "--check runs the SWE-bench-style instances: add --format swe-bench".into(),
        ));
    }
    let loaded = load(path, sel)?;
    let records = store::load(&loaded.state_dir).context("reading the state")?;
    let flow = Flow::new(&loaded.pipeline, &loaded.data);
    let states = walk::walk(&flow, &records);
    let last = export::final_stage(&flow, options.stage.as_deref()).map_err(anyhow::Error::from)?;
    let funnel = report::funnel::funnel(&flow, &states, &records, loaded.problems.len());
    if !funnel.complete {
        eprintln!("warning: the run is incomplete (tasks errored or still to run); exporting what is done");
    }
    let mut bench = export::assemble(&flow, &states, last);
    let mut harness = Vec::new();
    if options.format == ExportFormat::SweBench {
        let (instances, skipped) = swe_bench::instances(&flow, &states, last, &loaded.context.mirrors);
        for s in &skipped {
            eprintln!("warning: comment {} gives no SWE-bench instance: {}", s.comment, s.why);
        }
        bench.files.insert(SWE_BENCH_FILE.into(), swe_bench::lines(&instances).into_bytes());
        harness = instances;
    }
    export::write(&bench, &options.out).map_err(anyhow::Error::from)?;
    println!(
        "exported {} instance(s) and {} test(s) from stage `{}` to {}",
        bench.stats.instances,
        bench.stats.tests.total,
        loaded.pipeline.stages[last].id,
        options.out.display()
    );
    if options.format == ExportFormat::SweBench {
        println!(
            "{} SWE-bench-style instance(s) in {}",
            harness.len(),
            options.out.join(SWE_BENCH_FILE).display()
        );
    }
    if !options.check {
        return Ok(exit::OK);
    }
    let held = check_all(&harness, &loaded.context)?;
    println!("{held} of {} instance(s) fail without `patch` and pass with it", harness.len());
    Ok(if held == harness.len() { exit::OK } else { exit::ERRORED })
}

/// Runs every instance as a harness would, a line each; how many held.
fn check_all(instances: &[swe_bench::Instance], context: &crate::context::Context) -> Result<usize, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let hosts = context.docker.clone();
    let mirrors = context.mirrors.clone();
    let held = runtime.block_on(async {
        for warning in hosts.connect_all().await? {
            eprintln!("warning: {warning}");
        }
        let mut held = 0;
        for instance in instances {
            let timeout = Duration::from_secs(120);
            match swe_bench::check(instance, mirrors.clone(), &hosts, timeout).await {
                Ok(c) => {
                    let p2p = c.pass_to_pass.map_or("none".to_string(), |v| format!("{v:?}"));
                    let mark = if c.holds() { "ok" } else { "FAILS" };
                    println!(
                        "{mark:5} {}: without the fix {:?}, with it {:?}; PASS_TO_PASS {p2p}",
                        c.instance, c.without_fix, c.with_fix
                    );
                    held += usize::from(c.holds());
                }
                Err(why) => println!("FAILS {}: {why}", instance.instance_id),
            }
        }
        Ok::<_, crate::exec::docker::ExecError>(held)
    });
    Ok(held.map_err(anyhow::Error::from)?)
}
