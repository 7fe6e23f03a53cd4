//! `curate run`: does the work that is missing, reuses what is done.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

use super::{Failure, Selection, exit, load};
use crate::engine::flow::Flow;
use crate::engine::resources::{Limits, Resource};
use crate::engine::store::{self, Store};
use crate::engine::{lock, scheduler};
use crate::report;
use crate::report::progress::Mode;

pub struct RunOptions {
    pub selection: Selection,
    /// `--concurrency RES=N`, over the pipeline's own limits.
    pub concurrency: BTreeMap<Resource, usize>,
    pub progress: Mode,
}

/// Local mirrors that are not there would fail every task of their PRs on every run: stop before
/// any work instead, naming them.
fn check_local_repositories(loaded: &super::Loaded) -> Result<(), Failure> {
    let mut repos: Vec<&str> = loaded.data.items.iter().filter_map(|i| i.data["repo"].as_str()).collect();
    repos.sort_unstable();
    repos.dedup();
    let missing = loaded.context.mirrors.missing_local(&repos);
    let Some((_, first)) = missing.first() else { return Ok(()) };
    let shown: Vec<String> =
        missing.iter().take(5).map(|(repo, path)| format!("{repo} ({})", path.display())).collect();
    Err(Failure::BadInput(format!(
        "{} repositor{} of the source {} no local mirror to clone from: {}{}; `defaults.repos.url` names local directories, so make them there first{}",
        missing.len(),
        if missing.len() == 1 { "y" } else { "ies" },
        if missing.len() == 1 { "has" } else { "have" },
        shown.join(", "),
        if missing.len() > 5 { ", …" } else { "" },
        if first.to_string_lossy().contains("cache/mirrors/") {
            " (the bundled sample's: `python3 sample/build.py --out cache/mirrors`, which scripts/run-sample runs)"
        } else {
            ", or point the template at the network (the default is GitHub)"
        }
    )))
}

/// With several Docker hosts, what each did: printed, and kept in the state directory for
/// `curate status` (not in the task results, which do not depend on where a run went).
fn report_hosts(counts: &[crate::exec::hosts::HostCounts], dir: &Path) {
    if counts.len() < 2 {
        return;
    }
    eprintln!("Docker hosts:");
    for line in crate::exec::hosts::describe(counts) {
        eprintln!("  {line}");
    }
    if let Ok(json) = serde_json::to_string_pretty(counts) {
        let _ = std::fs::write(dir.join(crate::exec::hosts::COUNTS_FILE), json + "\n");
    }
}

/// The limits a run works under: the machine's, then the pipeline's, then the command line's. With
/// every model answer replayed (`CURATE_LLM_CACHE=replay`) no conversation reaches a model server,
/// and the `llm` limit, which keeps to one conversation at a time for the server's prompt cache,
/// guards nothing: the stages that hold it spend their time in containers, so they run a task per
/// core (the `cpu` limit) unless the command line sets `llm`.
fn limits(
    pipeline: &BTreeMap<Resource, usize>,
    command_line: &BTreeMap<Resource, usize>,
    replayed: bool,
) -> Limits {
    let mut limits = Limits::machine_defaults().with(pipeline);
    if replayed {
        let llm = limits.get(Resource::Llm).max(limits.get(Resource::Cpu));
        limits = limits.with(&BTreeMap::from([(Resource::Llm, llm)]));
    }
    limits.with(command_line)
}

pub fn run(path: &Path, opts: &RunOptions) -> Result<u8, Failure> {
    let loaded = load(path, &opts.selection)?;
    check_local_repositories(&loaded)?;
    let dir = &loaded.state_dir;
    std::fs::create_dir_all(dir).with_context(|| {
        format!("cannot create state directory {}; choose a writable one with --state", dir.display())
    })?;
    let _lock = lock::acquire(dir).map_err(anyhow::Error::from)?;
    let store = Store::open(dir).map_err(anyhow::Error::from)?;
    let records = store::load(dir).map_err(anyhow::Error::from)?;
    let replayed = crate::llm::config::cache_from_env() == Some(crate::llm::types::CacheMode::Replay);
    let limits = limits(&loaded.pipeline.concurrency, &opts.concurrency, replayed);
    let flow = Flow::new(&loaded.pipeline, &loaded.data);
    let mut reporter = report::progress::reporter(opts.progress);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // A pipeline that uses Docker checks the daemon once, before any work: one clear error rather
    // than a thousand errored tasks.
    crate::exec::sandbox::set_owner(dir);
    let hosts = loaded.context.docker.clone();
    hosts.tell_through(reporter.notice());
    let uses_docker = loaded.pipeline.stages.iter().any(|s| s.resource == Resource::Docker);
    if uses_docker {
        for warning in runtime.block_on(hosts.connect_all()).map_err(anyhow::Error::from)? {
            eprintln!("warning: {warning}");
        }
        // What a killed run of this state left behind; the lock says no live run owns it.
        let swept = runtime.block_on(hosts.sweep(dir)).map_err(anyhow::Error::from)?;
        if !swept.is_empty() {
            eprintln!(
                "removed {} container(s) an earlier run of this state left: {}",
                swept.len(),
                swept.join(", ")
            );
        }
    }
    let summary = runtime
        .block_on(scheduler::run(&flow, &store, &records, &limits, reporter.as_mut()))
        .map_err(|e| anyhow::anyhow!("{e}; results so far are saved in {}", store.path().display()));
    // No task runs now: a container of this state still there belongs to a task a second signal
    // cut off, whose removal was only started. Removed before exit, not left to run on.
    if uses_docker && let Err(e) = runtime.block_on(hosts.sweep(dir)) {
        eprintln!("warning: cannot remove this run's containers ({e}); `curate clean` removes them");
    }
    let summary = summary?;
    drop(runtime);
    if uses_docker {
        report_hosts(&hosts.counts(), dir);
    }

    drop(store); // joins the writer: everything is committed
    let records = store::load(dir).map_err(anyhow::Error::from)?;
    let funnel = report::funnel::funnel(&flow, &summary.states, &records, loaded.problems.len());
    if opts.progress != Mode::Quiet {
        println!();
        print!("{}", funnel.to_markdown());
    }
    println!(
        "\nrun: {} task(s) done now, {} taken from the store, {} errored; state in {}",
        summary.executed,
        summary.cached,
        summary.errored,
        dir.display()
    );
    Ok(if summary.interrupted {
        eprintln!("stopped before the end; `curate run` again to go on");
        exit::INTERRUPTED
    } else if summary.errored > 0 {
        eprintln!(
            "{} task(s) errored; `curate status` lists them, `curate run` retries them",
            summary.errored
        );
        exit::ERRORED
    } else {
        exit::OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replayed_answers_free_the_llm_limit_up_to_the_cores_unless_the_command_line_sets_it() {
        let pipeline = BTreeMap::from([(Resource::Llm, 1), (Resource::Docker, 1), (Resource::Cpu, 2)]);
        let none = BTreeMap::new();
        assert_eq!(limits(&pipeline, &none, false).get(Resource::Llm), 1);
        assert_eq!(limits(&pipeline, &none, true).get(Resource::Llm), 2);
        assert_eq!(limits(&pipeline, &none, true).get(Resource::Docker), 1, "the other limits stay");
        let wider = BTreeMap::from([(Resource::Llm, 6), (Resource::Cpu, 2)]);
        assert_eq!(limits(&wider, &none, true).get(Resource::Llm), 6, "never lowered");
        let told = BTreeMap::from([(Resource::Llm, 1)]);
        assert_eq!(
            limits(&pipeline, &told, true).get(Resource::Llm),
            1,
            "the command line has the last word"
        );
    }
}
