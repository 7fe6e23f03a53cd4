//! The `curate` command line: parses arguments and calls the library.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use curate::commands::{self, ExportFormat, ExportOptions, GraphFormat, ReportFormat, RunOptions, Selection};
use curate::engine::resources::{Resource, parse_override};
use curate::report::progress::Mode;

/// Build executable code-review benchmarks (the c-CRAB method) and score review tools on them.
///
/// A pipeline is a YAML file of stages over PR and comment items. `curate run` does only the work
/// that is missing: stop it, crash it, edit a prompt or add PRs, and run it again.
#[derive(Parser)]
#[command(name = "curate", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a pipeline: compute every task that has no result yet, reuse the rest.
    ///
    /// Exit codes: 0 done (rejections are results), 1 some tasks errored (run again to retry
    /// them) or the run could not start, 2 bad pipeline or arguments, 130 stopped by Ctrl-C.
    Run {
        pipeline: PathBuf,
        #[command(flatten)]
        select: Select,
        /// Concurrency limit for a resource (llm, docker, cpu), e.g. `--concurrency cpu=8`;
        /// repeatable, overrides the pipeline's `defaults.concurrency`.
        #[arg(long, value_name = "RES=N", value_parser = parse_override)]
        concurrency: Vec<(Resource, usize)>,
        /// Treat any bad record in the source as fatal instead of skipping it.
        #[arg(long)]
        strict: bool,
        /// How to show progress.
        #[arg(long, value_enum, default_value_t = Mode::Auto)]
        progress: Mode,
    },
    /// Per stage: tasks kept, rejected, errored, still to run; and the errors.
    Status {
        pipeline: PathBuf,
        #[command(flatten)]
        select: Select,
    },
    /// The funnel: PRs and comments remaining after each stage, with rejection reasons; Table 4
    /// once tests exist; for an evaluation pipeline, Table 5 with its figures and the text
    /// similarity to the human comments.
    Report {
        pipeline: PathBuf,
        #[command(flatten)]
        select: Select,
        /// md and json print the report; html prints one self-contained page with the figures.
        #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
        format: ReportFormat,
        /// Also write the figures as SVG files into DIR (funnel.svg; for an evaluation,
        /// overlaps.svg and categories.svg).
        #[arg(long, value_name = "DIR")]
        charts: Option<PathBuf>,
    },
    /// Where each review comment went: the last stage it reached, how it ended and why, and who
    /// wrote its test. With --comment ID, every stage of that comment and each candidate test it
    /// was given, with its verdicts on the reviewed and the fixed code.
    Explain {
        pipeline: PathBuf,
        /// One comment's id (as the table lists them).
        #[arg(long, value_name = "ID")]
        comment: Option<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Write the finished benchmark as files: instances.jsonl, the tests, the Dockerfiles and
    /// install scripts, and stats.json / stats.md (the paper's Table 4). The same state always
    /// gives the same bytes.
    Export {
        pipeline: PathBuf,
        /// Directory to write (replaced if it holds an earlier export).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The stage whose kept comments make the benchmark (default: the last comment stage).
        #[arg(long)]
        stage: Option<String>,
        /// swe-bench also writes swe-bench.jsonl: one instance a comment with `base_commit` (the
        /// reviewed commit), `patch`, `test_patch`, `FAIL_TO_PASS`, `PASS_TO_PASS`,
        /// `problem_statement` and its image, as SWE-bench-style harnesses read them.
        #[arg(long, value_enum, default_value_t = ExportFormat::Curate)]
        format: ExportFormat,
        /// Then run every SWE-bench-style instance in its image as a harness would (apply
        /// `test_patch`, run `FAIL_TO_PASS` and `PASS_TO_PASS` without and with `patch`); exits 1
        /// unless the reviewed code fails and the fix passes in every one.
        #[arg(long)]
        check: bool,
        #[command(flatten)]
        select: Select,
    },
    /// Write what the pipeline's source yields as SWE-CARE JSONL: a `github` source's collection
    /// (its answers are stored under the pipeline's cache, so a stopped collection resumes and a
    /// second one asks GitHub nothing), to share it or read it again with a `swe-care` source.
    Collect {
        pipeline: PathBuf,
        /// The JSONL file to write (replaced).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// Treat any record the source had to skip as fatal.
        #[arg(long)]
        strict: bool,
    },
    /// Remove the Docker containers a killed `curate run` of this state left behind (the next run
    /// does it too), listing them.
    Clean {
        pipeline: PathBuf,
        #[command(flatten)]
        select: Select,
    },
    /// Check a pipeline and its source without running anything.
    Validate { pipeline: PathBuf },
    /// Measure a review_filter stage's prompt on its labelled gold set and calibrate it: precision,
    /// recall, F1 and the confusion matrix for the tuning and held-out splits, by the model's word
    /// and at the keep threshold on its confidence that is chosen on the tuning split (the lowest
    /// whose precision reaches the stage's `precision_bar`, default 0.86, the paper's figure).
    /// Exits 1 when held-out precision is under the bar.
    Gold {
        pipeline: PathBuf,
        /// The stage to measure (default: the first review_filter stage).
        #[arg(long)]
        stage: Option<String>,
        /// Write the chosen threshold to the stage's `calibration:` file, which the stage reads.
        #[arg(long)]
        record: bool,
        /// Also write every gold comment's confidence, split and label to FILE (JSON lines).
        #[arg(long, value_name = "FILE")]
        scores: Option<PathBuf>,
        /// Measure on FILE (the gold set's format) instead of the stage's `gold:` set, e.g. real
        /// review comments kept outside the repository; adds the figures at the threshold the
        /// stage has recorded, which is what `curate run` applies. Cannot be combined with
        /// `--record`: a measurement set never calibrates.
        #[arg(long, value_name = "FILE", conflicts_with = "record")]
        gold: Option<PathBuf>,
        /// Judge by each comment's words and hunk alone: the rows' `by_pr_author`, `is_reply` and
        /// `fix_diff` are set aside, as for comments that come without their thread or their PR's
        /// fix. Cannot be combined with `--record`.
        #[arg(long, conflicts_with = "record")]
        words_only: bool,
    },
    /// Score an attribution stage's choices in a run's state against its hand gold (`gold:` in the
    /// stage): agreement on whether a change answers each comment, exact and overlapping lines,
    /// line precision and recall.
    Relevance {
        pipeline: PathBuf,
        /// The stage to score (default: the first attribution stage).
        #[arg(long)]
        stage: Option<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Base images for environments, made here when no registry is reachable.
    #[command(subcommand)]
    Images(Images),
    /// The state database: check its health, or repair a damaged one.
    #[command(subcommand)]
    State(State),
    /// Print the stage DAG.
    Graph {
        pipeline: PathBuf,
        #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
        format: GraphFormat,
    },
}

/// A command that only prints ends, as Unix tools do, when what reads its output stops reading
/// (`curate status | head -1`), instead of panicking on the failed write. A run keeps Rust's
/// default: its state is written whatever becomes of its output.
fn end_quietly_on_a_closed_pipe() {
    // SAFETY: restores the default action of one signal before any thread is started; no handler
    // of the program's own is replaced.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[derive(Subcommand)]
enum State {
    /// Run SQLite's integrity check on the state database; exits 1 when it is damaged.
    Check {
        pipeline: PathBuf,
        /// State directory (default: `.curate/<pipeline name>` beside the pipeline file).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
    /// Move a damaged state database aside (as state.db.damaged-TIME) and start a new one with every
    /// task that can still be read from it; the next run redoes only what was lost.
    Repair {
        pipeline: PathBuf,
        /// State directory (default: `.curate/<pipeline name>` beside the pipeline file).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum Images {
    /// Make a base image from Debian's packages (debootstrap, needs root): Python 3 with venv, pip,
    /// headers and a C compiler, and git. Does nothing if the tag exists.
    Bootstrap {
        /// Debian suite; it decides the Python: bullseye 3.9, bookworm 3.11, trixie 3.13.
        #[arg(long, default_value = "bookworm")]
        suite: String,
        /// Image tag (default: curate/base:SUITE).
        #[arg(long)]
        tag: Option<String>,
        /// Debian mirror to fetch packages from.
        #[arg(long)]
        mirror: Option<String>,
        /// Make it again even if the tag exists.
        #[arg(long)]
        force: bool,
    },
}

#[derive(Args)]
struct Select {
    /// State directory (default: `.curate/<pipeline name>` beside the pipeline file).
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// Only the first N PRs of the source (and their comments).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
}

impl Select {
    fn selection(self, strict: bool) -> Selection {
        Selection { state: self.state, limit: self.limit, strict }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Run { .. }) {
        end_quietly_on_a_closed_pipe();
    }
    let result = match cli.command {
        Command::Run { pipeline, select, concurrency, strict, progress } => {
            let opts = RunOptions {
                selection: select.selection(strict),
                concurrency: concurrency.into_iter().collect::<BTreeMap<_, _>>(),
                progress,
            };
            commands::run(&pipeline, &opts)
        }
        Command::Status { pipeline, select } => commands::status(&pipeline, &select.selection(false)),
        Command::Report { pipeline, select, format, charts } => {
            commands::report(&pipeline, &select.selection(false), format, charts.as_deref())
        }
        Command::Explain { pipeline, comment, select } => {
            commands::explain(&pipeline, &select.selection(false), comment.as_deref())
        }
        Command::Collect { pipeline, out, strict } => commands::collect(&pipeline, &out, strict),
        Command::Export { pipeline, out, stage, format, check, select } => {
            let options = ExportOptions { out, stage, format, check };
            commands::export(&pipeline, &select.selection(false), &options)
        }
        Command::Validate { pipeline } => commands::validate(&pipeline),
        Command::Clean { pipeline, select } => commands::clean(&pipeline, &select.selection(false)),
        Command::Gold { pipeline, stage, record, scores, gold, words_only } => commands::gold(
            &pipeline,
            &commands::GoldOptions {
                stage: stage.as_deref(),
                record,
                scores: scores.as_deref(),
                gold: gold.as_deref(),
                words_only,
            },
        ),
        Command::Relevance { pipeline, stage, select } => {
            commands::relevance(&pipeline, &select.selection(false), stage.as_deref())
        }
        Command::Graph { pipeline, format } => commands::graph(&pipeline, format),
        Command::State(State::Check { pipeline, state }) => {
            commands::state_check(&pipeline, &Selection { state, ..Selection::default() })
        }
        Command::State(State::Repair { pipeline, state }) => {
            commands::state_repair(&pipeline, &Selection { state, ..Selection::default() })
        }
        Command::Images(Images::Bootstrap { suite, tag, mirror, force }) => {
            commands::images_bootstrap(&suite, tag.as_deref(), mirror.as_deref(), force)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(failure) => {
            eprintln!("error: {failure:#}");
            ExitCode::from(failure.exit_code())
        }
    }
}
