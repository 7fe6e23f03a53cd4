//! The commands behind the CLI. Each returns an exit code or a [`Failure`]; `main` only parses
//! arguments and prints.

use std::path::{Path, PathBuf};

use crate::engine::item::Dataset;
use crate::engine::pipeline::Pipeline;
use crate::errors::{Problem, SourceError, SpecError};

mod collect;
mod export;
mod gold;
mod images;
mod inspect;
mod relevance;
mod run;
mod state;

pub use collect::collect;
pub use export::{ExportFormat, ExportOptions, SWE_BENCH_FILE, export};
pub use gold::{GoldOptions, gold};
pub use images::images_bootstrap;
pub use inspect::{GraphFormat, ReportFormat, clean, explain, graph, report, status, validate};
pub use relevance::relevance;
pub use run::{RunOptions, run};
pub use state::{state_check, state_repair};

/// Exit codes, as documented in the README.
pub mod exit {
    pub const OK: u8 = 0;
    /// The run finished, but some tasks errored (they are retried next time); or it could not run.
    pub const ERRORED: u8 = 1;
    /// The pipeline or the arguments are wrong.
    pub const BAD_INPUT: u8 = 2;
    /// Stopped by Ctrl-C or SIGTERM.
    pub const INTERRUPTED: u8 = 130;
}

#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The input cannot be worked on, and retrying will not change that.
    #[error("{0}")]
    BadInput(String),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

impl Failure {
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Spec(_) | Failure::Source(SourceError::Strict { .. }) | Failure::BadInput(_) => {
                exit::BAD_INPUT
            }
            Failure::Source(_) | Failure::Other(_) => exit::ERRORED,
        }
    }
}

/// Where `--state` points, or the pipeline's default.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub state: Option<PathBuf>,
    pub limit: Option<usize>,
    pub strict: bool,
}

/// A loaded pipeline and its items.
struct Loaded {
    pipeline: Pipeline,
    context: crate::context::Context,
    data: Dataset,
    problems: Vec<Problem>,
    state_dir: PathBuf,
}

/// Problems listed in full before the rest are counted.
const PROBLEMS_SHOWN: usize = 20;

fn load(path: &Path, sel: &Selection) -> Result<Loaded, Failure> {
    let (pipeline, context) = crate::curation::load(path)?;
    let ingest = pipeline.source.load()?;
    if sel.strict && !ingest.problems.is_empty() {
        return Err(
            SourceError::Strict { count: ingest.problems.len(), first: ingest.problems[0].clone() }.into()
        );
    }
    for p in ingest.problems.iter().take(PROBLEMS_SHOWN) {
        eprintln!("warning: skipped {p}");
    }
    if ingest.problems.len() > PROBLEMS_SHOWN {
        eprintln!("warning: … and {} more bad records skipped", ingest.problems.len() - PROBLEMS_SHOWN);
    }
    let state_dir = sel.state.clone().unwrap_or_else(|| pipeline.default_state_dir());
    let data = Dataset::new(ingest.items, sel.limit);
    Ok(Loaded { pipeline, context, data, problems: ingest.problems, state_dir })
}
