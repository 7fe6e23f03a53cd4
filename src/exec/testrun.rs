//! Running one test file against one state of a repository inside the PR's image: the tree under
//! test (the reviewed or the fixed commit, a revised working copy) is copied into /repo, and what
//! pytest said is classified: passed, failed (and how), or an error that is
//! not the test's own verdict (a syntax error in the test, an import that breaks collection, a
//! timeout).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::docker::ExecError;
use super::hosts::Executor;
use super::sandbox::RunSpec;
use crate::repo::working_files;

/// Where the repository lives in an environment image.
pub const REPO: &str = "/repo";
/// Where the test under trial is written; outside the repository, so it cannot shadow its files.
const TEST_DIR: &str = "/curate-test";
/// Processes and threads a test run may have at once: room for a test that hammers a function from
/// a hundred threads (a comment about thread safety), and a fork bomb stops here. The host stays
/// responsive during one because of the CPU quota of one core, whatever this limit (measured with
/// `cargo bench --bench fork_bomb`: docs/benchmarks.md).
pub const TEST_PIDS: i64 = 128;
/// The size of a test run's `/tmp`, held in memory (see [`RunSpec::tmp_bytes`]): room for what
/// tests keep in pytest's `tmp_path`, and a test that fills the disk stops here.
pub const TEST_TMP_BYTES: i64 = 256 << 20;
/// What a test run may write to disk outside `/tmp` (see [`RunSpec::disk_bytes`]): room for a
/// project's tests that build something in their tree, and a test that fills the disk stops here.
pub const TEST_DISK_BYTES: u64 = 1 << 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Passed,
    /// An `assert` did not hold.
    Assertion,
    /// `pytest.raises` saw no exception.
    ExpectedExceptionMissing,
    /// The code under test raised something else (including a missing attribute or name).
    UnexpectedException,
    /// The test file is not valid Python.
    SyntaxError,
    /// The test module could not be imported, so no test ran.
    ImportError,
    /// Collection failed for another reason, or pytest could not run.
    CollectionError,
    /// Pytest collected nothing.
    NoTests,
    Timeout,
    /// Killed for its memory: the container's OOM flag, or a SIGKILL that was not the time limit.
    OutOfMemory,
    /// A fork or a thread failed at the sandbox's process limit.
    TooManyProcesses,
    /// The process ended before pytest finished its session (the test called `os._exit`, the
    /// interpreter crashed): its exit code is not pytest's verdict.
    Aborted,
    /// Killed for writing more than [`TEST_DISK_BYTES`] to disk.
    DiskFull,
}

impl Verdict {
    /// A failure that is the test's own verdict on the code, not a broken test.
    pub fn is_test_failure(self) -> bool {
        matches!(self, Verdict::Assertion | Verdict::ExpectedExceptionMissing | Verdict::UnexpectedException)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct TestRun {
    pub verdict: Verdict,
    pub exit_code: Option<i64>,
    pub output: String,
    /// Paths under the repository that the run created or changed (it should leave none).
    pub wrote: Vec<String>,
    pub seconds: f64,
}

/// The files of the repository tree `dir` as they go into a run's /repo. An image with an instance
/// layer already holds the reviewed commit there: the tree's files replace it, and a file the tree
/// lacks stays.
pub fn tree_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>, ExecError> {
    let io = |e: std::io::Error| ExecError::Other(format!("{}: {e}", dir.display()));
    let mut files = Vec::new();
    for rel in working_files(dir).map_err(io)? {
        let bytes = std::fs::read(dir.join(&rel)).map_err(io)?;
        files.push((format!("{REPO}/{rel}"), bytes));
    }
    Ok(files)
}

/// Whether the output shows a fork or a thread refused at the sandbox's process limit.
fn fork_failed(output: &str) -> bool {
    ["Cannot fork", "BlockingIOError: [Errno 11] Resource temporarily unavailable", "can't start new thread"]
        .iter()
        .any(|m| output.contains(m))
}

/// A run's verdict from what the container said: killed for memory (its OOM flag, unless the
/// output shows forks refused at the process limit: a fork bomb fills memory too, and the limit is
/// what stopped it), else what pytest's exit code and output say.
pub fn verdict(oom_killed: bool, exit_code: Option<i64>, timed_out: bool, output: &str) -> Verdict {
    if oom_killed && !timed_out && !fork_failed(output) {
        Verdict::OutOfMemory
    } else if oom_killed && !timed_out {
        Verdict::TooManyProcesses
    } else {
        classify(exit_code, timed_out, output)
    }
}

/// Reads pytest's exit code and output.
pub fn classify(exit_code: Option<i64>, timed_out: bool, output: &str) -> Verdict {
    if timed_out {
        return Verdict::Timeout;
    }
    if exit_code.is_some_and(|c| c != 0) && fork_failed(output) {
        return Verdict::TooManyProcesses;
    }
    match exit_code {
        Some(0) => Verdict::Passed,
        // SIGKILL, and not by the time limit (handled above): the OOM killer.
        Some(137) => Verdict::OutOfMemory,
        Some(1) => {
            if output.contains("DID NOT RAISE") {
                Verdict::ExpectedExceptionMissing
            } else if output.contains("AssertionError")
                || output.lines().any(|l| l.starts_with("E       assert "))
            {
                Verdict::Assertion
            } else {
                Verdict::UnexpectedException
            }
        }
        Some(2) | Some(4) | Some(3) => {
            if output.contains("SyntaxError") || output.contains("IndentationError") {
                Verdict::SyntaxError
            } else if output.contains("ImportError while importing test module")
                || output.contains("ModuleNotFoundError")
            {
                Verdict::ImportError
            } else {
                Verdict::CollectionError
            }
        }
        Some(5) => Verdict::NoTests,
        _ => Verdict::CollectionError,
    }
}

/// A run of `command` in an environment image: in the repository, with the project's venv first
/// on the PATH, as its layers set it up.
pub fn env_spec(image: &str, command: Vec<String>) -> RunSpec {
    let mut spec = RunSpec::new(image, &[]);
    spec.command = command;
    spec.workdir = REPO.into();
    spec.env.retain(|(k, _)| k != "PATH");
    spec.env.push(("PATH".into(), "/opt/venv/bin:/usr/local/bin:/usr/bin:/bin".into()));
    spec.env.push(("VIRTUAL_ENV".into(), "/opt/venv".into()));
    spec
}

/// Prefixes the lines that name a path the test run wrote under the repository.
const WROTE: &str = "curate-wrote: ";

/// What a run runs.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// A test file of curate's (the model's, the probe's): its file name and code, written outside
    /// the repository so it cannot shadow the project's files, and run with that directory as
    /// pytest's root.
    File { name: &'a str, code: &'a str },
    /// The project's own tests, by their pytest node ids (`tests/test_x.py::test_y[1]`, or a whole
    /// file), run in the repository with the project's configuration, conftest files and data.
    Project { nodes: &'a [String] },
    /// A test file of curate's placed in the project's tree at `path` (relative to the
    /// repository, a name no file of the project has), so that it runs with the project's
    /// configuration and the fixtures of its conftest files.
    InTree { path: &'a str, code: &'a str },
}

impl Target<'_> {
    /// What pytest is given to run, quoted for the shell.
    fn pytest_args(&self) -> String {
        match self {
            Target::File { name, .. } => format!("--rootdir {TEST_DIR} {}", shell_quote(&test_path(name))),
            // The repository as pytest's root, whatever directory holds its configuration, so
            // node ids are relative to the repository and run from there.
            Target::Project { nodes } => {
                let nodes: Vec<String> = nodes.iter().map(|n| shell_quote(n)).collect();
                format!("--rootdir {REPO} {}", nodes.join(" "))
            }
            Target::InTree { path, .. } => format!("--rootdir {REPO} {}", shell_quote(path)),
        }
    }
}

/// `text` as one word of `sh`: in single quotes, each quote in it closed, escaped and reopened.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The path a test file of curate's runs under.
fn test_path(name: &str) -> String {
    format!("{TEST_DIR}/{}", test_name(name))
}

/// The shell command of a test run: pytest on `pytest_args`, then every path under the repository
/// that changed while it ran (a test may not write into the project). Changed by the inode's change
/// time, which every write, rename, deletion (on the directory) and `utime` sets and which no
/// process without CAP_SYS_TIME (the sandbox drops every capability) can set back, so a test that
/// restores a file's modification time is still seen. The time it is compared with is held in the
/// shell, not in a file the test could touch, move or delete. `options` go to pytest (with a
/// leading space).
fn test_command(pytest_args: &str, options: &str) -> Vec<String> {
    let script = format!("{}; exit $rc", pytest_then_writes(pytest_args, options));
    vec!["sh".into(), "-c".into(), script]
}

/// The part of a test run's shell command that runs pytest (its exit code left in `rc`, its start
/// in `start`) and then lists the paths it wrote under the repository (see [`test_command`]).
fn pytest_then_writes(pytest_args: &str, options: &str) -> String {
    format!(
        "start=$(date +%s.%N) && python -m pytest -q -p no:cacheprovider{options} {pytest_args}; \
         rc=$?; find {REPO} -newerct \"@$start\" -not -path '*/__pycache__*' -printf '%y %p\\n' \
         | sed 's|^|{WROTE}|'"
    )
}

/// The module name of the tracing plugin in the test directory, and its source.
const TRACE_PLUGIN: (&str, &str) = ("curate_trace", include_str!("trace_plugin.py"));
/// Prefixes the line the tracing plugin prints.
const TRACED: &str = "curate-trace: ";

/// Runs `test` like [`run_test`], tracing which lines of `files` (paths relative to the repository)
/// it executes: per file, its executed line numbers. A run whose plugin printed nothing (killed,
/// timed out) traced nothing.
pub async fn run_test_traced(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    test: (&str, &str),
    timeout: Duration,
    files: &[String],
) -> Result<(TestRun, BTreeMap<String, Vec<u64>>), ExecError> {
    let target = Target::File { name: test.0, code: test.1 };
    run_target_traced(docker, image, tree, target, timeout, files).await
}

/// Runs `target` like [`run_target`], tracing which lines of `files` (paths relative to the
/// repository) it executes.
pub async fn run_target_traced(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    target: Target<'_>,
    timeout: Duration,
    files: &[String],
) -> Result<(TestRun, BTreeMap<String, Vec<u64>>), ExecError> {
    let ran = run_pytest(docker, image, tree, target, timeout, 0, Plugin::Trace(files)).await?;
    Ok((ran.run, ran.traced))
}

/// A plugin of curate's a run adds to pytest.
#[derive(Clone, Copy)]
enum Plugin<'a> {
    None,
    /// The tracing plugin, on these repository-relative files.
    Trace(&'a [String]),
    /// The tracing plugin, per test node.
    TracePerTest(&'a [String]),
    /// The plugin that prints every test node's outcome.
    Outcomes,
}

/// What one pytest run gave: the run, and what its plugin said.
struct Ran {
    run: TestRun,
    traced: BTreeMap<String, Vec<u64>>,
    per_node: BTreeMap<String, BTreeMap<String, Vec<u64>>>,
    outcomes: BTreeMap<String, NodeOutcome>,
}

/// The module name of the outcome plugin in the test directory, and its source.
const OUTCOME_PLUGIN: (&str, &str) = ("curate_outcomes", include_str!("outcome_plugin.py"));
/// Prefixes the line the outcome plugin prints.
const OUTCOMES: &str = "curate-outcomes: ";
/// The module name of the plugin that marks the end of pytest's session, and its source.
const FINISH_PLUGIN: (&str, &str) = ("curate_finished", include_str!("finish_plugin.py"));
/// What that plugin prints, exactly.
const FINISHED: &str = "\ncurate-finished\n";

/// Takes the finish plugin's line out of what the run printed, byte for byte as it went in, and
/// says whether it was there.
fn split_finished(output: &str) -> (String, bool) {
    match output.find(FINISHED) {
        Some(at) => (format!("{}{}", &output[..at], &output[at + FINISHED.len()..]), true),
        None => (output.to_string(), false),
    }
}

/// Prefixes the line the tracing plugin prints when it traces per test.
const TRACED_PER_TEST: &str = "curate-trace-per-test: ";

/// One pytest run of `target` in a fresh container: under hash seed `seed`, with `plugin`. What
/// the run said, and what its plugin found.
async fn run_pytest(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    target: Target<'_>,
    timeout: Duration,
    seed: u32,
    plugin: Plugin<'_>,
) -> Result<Ran, ExecError> {
    let options = match plugin {
        Plugin::None => String::new(),
        Plugin::Trace(_) | Plugin::TracePerTest(_) => format!(" -p {}", TRACE_PLUGIN.0),
        Plugin::Outcomes => format!(" --tb=line -p {}", OUTCOME_PLUGIN.0),
    };
    let options = format!(" -p {}{options}", FINISH_PLUGIN.0);
    let mut spec = pytest_spec(image, tree, target, test_command(&target.pytest_args(), &options), plugin)?;
    spec.timeout = timeout;
    spec.env.push(("PYTHONHASHSEED".into(), seed.to_string()));
    let r = docker.run(&spec).await?;
    let (output, wrote) = split_writes(&r.output);
    let (output, traced) = split_trace(&output);
    let (output, per_node): (_, BTreeMap<String, BTreeMap<String, Vec<u64>>>) =
        split_packed(&output, TRACED_PER_TEST);
    let (output, outcomes) = split_packed(&output, OUTCOMES);
    let (output, finished) = split_finished(&output);
    let verdict = match verdict(r.oom_killed, r.exit_code, r.timed_out, &output) {
        _ if r.disk_full => Verdict::DiskFull,
        verdict => unless_aborted(verdict, finished),
    };
    let run = TestRun { verdict, exit_code: r.exit_code, output, wrote, seconds: r.duration.as_secs_f64() };
    let per_node = per_node.into_iter().map(|(node, files)| (node, relative(files))).collect();
    Ok(Ran { run, traced, per_node, outcomes })
}

/// A verdict of pytest's own (a pass, a failing test) stands only when pytest `finished` its
/// session: otherwise the process ended first, and its exit code is not pytest's.
fn unless_aborted(verdict: Verdict, finished: bool) -> Verdict {
    match verdict {
        Verdict::Passed
        | Verdict::Assertion
        | Verdict::ExpectedExceptionMissing
        | Verdict::UnexpectedException
            if !finished =>
        {
            Verdict::Aborted
        }
        verdict => verdict,
    }
}

/// Ends each run of a batch (see [`run_target_seeds`]): its hash seed, pytest's exit code, and the
/// times the run started and ended.
const RUN_END: &str = "curate-run-end: ";

/// The shell command of a batch: `pytest_args` run once under each of `seeds`, one after the other,
/// `/tmp` emptied before each, each followed by the paths it wrote under the repository (as in
/// [`test_command`]) and its end line, which starts on a line of its own.
fn seeds_command(pytest_args: &str, options: &str, seeds: &[u32]) -> Vec<String> {
    let seeds: Vec<String> = seeds.iter().map(u32::to_string).collect();
    let script = format!(
        "for seed in {seeds}; do find /tmp -mindepth 1 -delete 2>/dev/null; export PYTHONHASHSEED=$seed; \
         {run}; printf '\\n{RUN_END}%s %s %s %s\\n' \"$seed\" \"$rc\" \"$start\" \"$(date +%s.%N)\"; done",
        seeds = seeds.join(" "),
        run = pytest_then_writes(pytest_args, options)
    );
    vec!["sh".into(), "-c".into(), script]
}

/// One run of a batch, as its end line and what it printed before it describe it.
pub(crate) struct Ended {
    /// What the end line names the run by: its seed, its side.
    pub label: String,
    pub exit_code: i64,
    pub seconds: f64,
    pub output: String,
}

/// Splits a batch's output at its end lines (`MARKER LABEL EXIT START END`, each on a line of its
/// own), in order: the runs that ended, each with what it printed (the newline printed before the
/// end line taken off). What follows the last end line (a run the container's end cut short), or
/// an end line that does not read as one, is not a run that ended.
pub(crate) fn split_ended(output: &str, marker: &str) -> Vec<Ended> {
    let marker = format!("\n{marker}");
    let mut ended = Vec::new();
    let mut rest = output;
    while let Some(at) = rest.find(&marker) {
        let line_start = at + marker.len();
        let Some(line_len) = rest[line_start..].find('\n') else { break };
        let fields: Vec<&str> = rest[line_start..line_start + line_len].split(' ').collect();
        let parsed = match fields[..] {
            [label, code, start, end] => (|| {
                let seconds = end.parse::<f64>().ok()? - start.parse::<f64>().ok()?;
                Some((label.to_string(), code.parse().ok()?, seconds))
            })(),
            _ => None,
        };
        let Some((label, exit_code, seconds)) = parsed else { break };
        ended.push(Ended { label, exit_code, seconds, output: rest[..at].to_string() });
        rest = &rest[line_start + line_len + 1..];
    }
    ended
}

/// Runs `target` against `tree` once under each hash seed of `seeds`, the runs of one test's
/// repeats: one after the other in one container, where one container each costs about half a
/// second of the CPU's time more per run. The runs share nothing a run of their own would not
/// have: `/tmp` is emptied before each, and the next runs only when the last wrote nothing under
/// the repository. Every seed whose run did not end in the batch (one wrote into the repository,
/// the container was killed for its time, memory or disk, its output was cut) is run again in a
/// container of its own, so each verdict is what [`run_target`] would give.
pub async fn run_target_seeds(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    target: Target<'_>,
    timeout: Duration,
    seeds: &[u32],
) -> Result<Vec<TestRun>, ExecError> {
    let mut runs = Vec::new();
    if seeds.len() > 1 {
        let options = format!(" -p {}", FINISH_PLUGIN.0);
        let command = seeds_command(&target.pytest_args(), &options, seeds);
        let mut spec = pytest_spec(image, tree, target, command, Plugin::None)?;
        spec.timeout = timeout * seeds.len() as u32;
        let r = docker.run(&spec).await?;
        // An output cut in the middle may have lost a run's end line or its verdict's words.
        let cut = r.output.len() > crate::exec::sandbox::OUTPUT_LIMIT;
        let ended = if cut { Vec::new() } else { split_ended(&r.output, RUN_END) };
        for (ended, seed) in ended.into_iter().zip(seeds) {
            // A run past its own limit would have been killed alone: it runs again, alone.
            if ended.label != seed.to_string() || ended.seconds > timeout.as_secs_f64() {
                break;
            }
            let (output, wrote) = split_writes(&ended.output);
            let (output, finished) = split_finished(&output);
            let verdict = unless_aborted(classify(Some(ended.exit_code), false, &output), finished);
            let exit_code = Some(ended.exit_code);
            let wrote_any = !wrote.is_empty();
            runs.push(TestRun { verdict, exit_code, output, wrote, seconds: ended.seconds });
            if wrote_any {
                break;
            }
        }
    }
    for seed in &seeds[runs.len()..] {
        runs.push(run_target(docker, image, tree, target, timeout, *seed).await?);
    }
    Ok(runs)
}

/// The container of a pytest run of `target` against `tree` that runs `command`: the sandbox's
/// limits for tests, the tree, the test file and curate's plugins (the finish plugin always, and
/// `plugin`'s) written in, and the test directory on the module path.
fn pytest_spec(
    image: &str,
    tree: &Path,
    target: Target<'_>,
    command: Vec<String>,
    plugin: Plugin<'_>,
) -> Result<RunSpec, ExecError> {
    let mut spec = env_spec(image, command);
    spec.pids = TEST_PIDS;
    spec.tmp_bytes = Some(TEST_TMP_BYTES);
    spec.disk_bytes = Some(TEST_DISK_BYTES);
    spec.files = tree_files(tree)?;
    match target {
        Target::File { name, code } => spec.files.push((test_path(name), code.as_bytes().to_vec())),
        // The directory the run's marker goes in.
        Target::Project { .. } => spec.files.push((format!("{TEST_DIR}/.keep"), Vec::new())),
        // Written with the tree, before the run's marker: not a write of the test.
        Target::InTree { path, code } => {
            spec.files.push((format!("{REPO}/{path}"), code.as_bytes().to_vec()));
            spec.files.push((format!("{TEST_DIR}/.keep"), Vec::new()));
        }
    }
    spec.env.push(("PYTHONPATH".into(), TEST_DIR.into()));
    let mut add_plugin = |(name, source): (&str, &str)| {
        spec.files.push((format!("{TEST_DIR}/{name}.py"), source.as_bytes().to_vec()));
    };
    add_plugin(FINISH_PLUGIN);
    match plugin {
        Plugin::None => {}
        Plugin::Trace(files) | Plugin::TracePerTest(files) => {
            add_plugin(TRACE_PLUGIN);
            let absolute: Vec<String> = files.iter().map(|f| format!("{REPO}/{f}")).collect();
            spec.env.push(("CURATE_TRACE_FILES".into(), absolute.join(":")));
            if matches!(plugin, Plugin::TracePerTest(_)) {
                spec.env.push(("CURATE_TRACE_PER_TEST".into(), "1".into()));
            }
        }
        Plugin::Outcomes => add_plugin(OUTCOME_PLUGIN),
    }
    Ok(spec)
}

/// Paths under the repository made relative to it.
fn relative(files: BTreeMap<String, Vec<u64>>) -> BTreeMap<String, Vec<u64>> {
    files
        .into_iter()
        .map(|(p, l)| (p.strip_prefix(&format!("{REPO}/")).unwrap_or(&p).to_string(), l))
        .collect()
}

/// How one test node of the project ended in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeOutcome {
    Passed,
    Failed,
    /// Its setup, teardown or collection failed.
    Error,
    /// Skipped, or marked xfail: no verdict.
    Skipped,
}

/// Splits a plugin's packed line (after `marker`: JSON, zlib-compressed, in base64) from what
/// pytest printed, and reads it; empty when there is none, or it does not read.
fn split_packed<T: serde::de::DeserializeOwned + Default>(output: &str, marker: &str) -> (String, T) {
    use base64::Engine;
    use std::io::Read;
    let mut read = T::default();
    let (rest, lines) = take_marked(output, marker);
    for packed in lines {
        let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(packed.trim()) else { continue };
        let mut json = String::new();
        if flate2::read::ZlibDecoder::new(bytes.as_slice()).read_to_string(&mut json).is_ok() {
            read = serde_json::from_str(&json).unwrap_or_default();
        }
    }
    (rest, read)
}

/// Runs the project's tests `nodes` on `tree` with the tracing plugin per test on `files`
/// (repository-relative): per node, the lines of each file it executed from its setup to its
/// teardown.
pub async fn trace_per_node(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    nodes: &[String],
    timeout: Duration,
    files: &[String],
) -> Result<BTreeMap<String, BTreeMap<String, Vec<u64>>>, ExecError> {
    let target = Target::Project { nodes };
    Ok(run_pytest(docker, image, tree, target, timeout, 0, Plugin::TracePerTest(files)).await?.per_node)
}

/// Runs the project's test files `files` (repository-relative) in `tree`: the run, and every test
/// node's outcome.
pub async fn project_outcomes(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    files: &[String],
    timeout: Duration,
) -> Result<(TestRun, BTreeMap<String, NodeOutcome>), ExecError> {
    let target = Target::Project { nodes: files };
    let ran = run_pytest(docker, image, tree, target, timeout, 0, Plugin::Outcomes).await?;
    Ok((ran.run, ran.outcomes))
}

/// Splits the tracing plugin's line from what pytest printed: per repository-relative file, the
/// lines executed (nothing when the plugin printed nothing).
fn split_trace(output: &str) -> (String, BTreeMap<String, Vec<u64>>) {
    let (rest, lines) = take_marked(output, TRACED);
    let mut traced = BTreeMap::new();
    for json in lines {
        let hits: BTreeMap<String, Vec<u64>> = serde_json::from_str(json.trim()).unwrap_or_default();
        for (path, lines) in hits {
            let relative = path.strip_prefix(&format!("{REPO}/")).unwrap_or(&path).to_string();
            traced.insert(relative, lines);
        }
    }
    (rest, traced)
}

/// Takes every line a plugin of curate's printed after `marker` out of what the run printed, with
/// the newline the plugin wrote before it (which ended pytest's progress line early), so the rest
/// is byte for byte what pytest printed without the plugin; and the lines' text after the marker.
fn take_marked(output: &str, marker: &str) -> (String, Vec<String>) {
    let mut rest = String::with_capacity(output.len());
    let mut taken = Vec::new();
    let mut from = 0;
    while let Some(at) = output[from..].find(marker).map(|at| at + from) {
        let at_line_start = at == 0 || output.as_bytes()[at - 1] == b'\n';
        let end = output[at..].find('\n').map(|e| at + e + 1).unwrap_or(output.len());
        if !at_line_start {
            rest.push_str(&output[from..end]);
            from = end;
            continue;
        }
        // The plugin's own newline before the marker, when there is one.
        let cut = if at > 0 { at - 1 } else { at };
        rest.push_str(&output[from..cut.max(from)]);
        taken.push(output[at + marker.len()..end].trim_end_matches('\n').to_string());
        from = end;
    }
    rest.push_str(&output[from..]);
    (rest, taken)
}

/// The file name a test runs under.
fn test_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "test_curate.py".into())
}

/// Directories pytest plugins keep their own state in, made in the working directory whatever the
/// test does (pytest-benchmark's `.benchmarks`, hypothesis's database): not writes of the test.
const TOOL_STATE: [&str; 3] = [".benchmarks", ".hypothesis", ".pytest_cache"];

/// Splits the run's output into what pytest printed and the paths written under the repository.
/// Plugins' state directories are left out, and so is a directory whose only change is an entry
/// listed (or left out) below it; a directory changed with nothing listed below it lost an entry
/// (a deleted file), and stays.
fn split_writes(output: &str) -> (String, Vec<String>) {
    let mut changed: Vec<(bool, String)> = Vec::new();
    let mut rest = String::with_capacity(output.len());
    for line in output.split_inclusive('\n') {
        match line.strip_prefix(WROTE) {
            Some(entry) => {
                let (kind, path) = entry.trim_end().split_once(' ').unwrap_or(("f", entry.trim_end()));
                changed.push((kind == "d", path.to_string()));
            }
            None => rest.push_str(line),
        }
    }
    let tool_state = |path: &str| {
        TOOL_STATE.iter().any(|d| {
            let root = format!("{REPO}/{d}");
            path == root || path.starts_with(&format!("{root}/"))
        })
    };
    let explained = |dir: &str| {
        let prefix = format!("{dir}/");
        changed.iter().any(|(_, p)| p.strip_prefix(&prefix).is_some_and(|rest| !rest.contains('/')))
    };
    let wrote = changed
        .iter()
        .filter(|(is_dir, path)| !(tool_state(path) || (*is_dir && explained(path))))
        .map(|(_, path)| path.clone())
        .collect();
    (rest, wrote)
}

/// Runs `test` (a file name and its source) with pytest in `image`, against the repository `tree`.
pub async fn run_test(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    test: (&str, &str),
    timeout: Duration,
) -> Result<TestRun, ExecError> {
    run_test_seeded(docker, image, tree, test, timeout, 0).await
}

/// [`run_test`] with Python's hash seed set to `seed`: runs are reproducible, and repeats under
/// other seeds show a test that depends on set or dict order.
pub async fn run_test_seeded(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    test: (&str, &str),
    timeout: Duration,
    seed: u32,
) -> Result<TestRun, ExecError> {
    run_target(docker, image, tree, Target::File { name: test.0, code: test.1 }, timeout, seed).await
}

/// One run of `target` against `tree` under hash seed `seed`.
pub async fn run_target(
    docker: &impl Executor,
    image: &str,
    tree: &Path,
    target: Target<'_>,
    timeout: Duration,
    seed: u32,
) -> Result<TestRun, ExecError> {
    Ok(run_pytest(docker, image, tree, target, timeout, seed, Plugin::None).await?.run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batchs_runs_are_split_at_their_end_lines() {
        let output = "1 failed\n\ncurate-run-end: 1 1 10.5 11.75\n.\n1 passed\ncurate-wrote: f /repo/x\n\ncurate-run-end: 2 0 12 12.5\nhalf of a third";
        let ended = split_ended(output, RUN_END);
        assert_eq!(ended.len(), 2, "what follows the last end line did not end");
        assert_eq!((ended[0].label.as_str(), ended[0].exit_code, ended[0].seconds), ("1", 1, 1.25));
        assert_eq!(ended[0].output, "1 failed\n");
        assert_eq!((ended[1].label.as_str(), ended[1].exit_code), ("2", 0));
        assert_eq!(ended[1].output, ".\n1 passed\ncurate-wrote: f /repo/x\n");
        // An end line that does not read as one ends the split: the runs after it run again.
        assert_eq!(
            split_ended("x\ncurate-run-end: 1 one 1 2\n\ncurate-run-end: 2 0 1 2\n", RUN_END).len(),
            0
        );
        assert_eq!(split_ended("no end line", RUN_END).len(), 0);
    }

    #[test]
    fn pytest_outcomes_are_classified() {
        assert_eq!(classify(Some(0), false, "1 passed"), Verdict::Passed);
        assert_eq!(classify(Some(1), false, "E       assert 3.0 == 2.5\n1 failed"), Verdict::Assertion);
        assert_eq!(
            classify(Some(1), false, "E       Failed: DID NOT RAISE <class 'ValueError'>"),
            Verdict::ExpectedExceptionMissing
        );
        assert_eq!(
            classify(Some(1), false, "E       AttributeError: module 'x' has no attribute 'y'"),
            Verdict::UnexpectedException
        );
        assert_eq!(classify(Some(2), false, "E     SyntaxError: invalid syntax"), Verdict::SyntaxError);
        assert_eq!(
            classify(
                Some(2),
                false,
                "ImportError while importing test module '/t/test_x.py'.\nE   ModuleNotFoundError: No module named 'nope'"
            ),
            Verdict::ImportError
        );
        assert_eq!(classify(Some(5), false, "no tests ran"), Verdict::NoTests);
        assert_eq!(classify(None, true, ""), Verdict::Timeout);
        assert_eq!(classify(Some(137), false, "Killed"), Verdict::OutOfMemory);
        assert_eq!(classify(Some(137), true, ""), Verdict::Timeout);
        assert_eq!(
            classify(Some(1), false, "E   BlockingIOError: [Errno 11] Resource temporarily unavailable"),
            Verdict::TooManyProcesses
        );
        assert!(Verdict::Assertion.is_test_failure() && !Verdict::SyntaxError.is_test_failure());
    }

    #[test]
    fn the_finish_line_comes_out_byte_for_byte() {
        let printed = "F                                                                        [100%]\ncurate-finished\n\n1 failed in 0.01s\n";
        let (rest, finished) = split_finished(printed);
        assert!(finished);
        assert_eq!(
            rest,
            "F                                                                        [100%]\n1 failed in 0.01s\n"
        );
        assert_eq!(
            split_finished("Fatal Python error: Aborted\n"),
            ("Fatal Python error: Aborted\n".into(), false)
        );
    }

    #[test]
    fn a_fork_bomb_that_also_filled_memory_is_a_fork_bomb() {
        let forks = "E   BlockingIOError: [Errno 11] Resource temporarily unavailable\n1 failed";
        assert_eq!(verdict(true, Some(137), false, forks), Verdict::TooManyProcesses);
        assert_eq!(verdict(true, Some(137), false, "Killed"), Verdict::OutOfMemory);
        assert_eq!(verdict(true, None, true, forks), Verdict::Timeout);
        assert_eq!(verdict(false, Some(1), false, forks), Verdict::TooManyProcesses);
        assert_eq!(verdict(false, Some(0), false, "1 passed"), Verdict::Passed);
    }

    #[test]
    fn the_outcome_plugins_line_is_read_and_split_from_the_output() {
        use base64::Engine;
        use std::io::Write;
        let json = r#"{"t/test_a.py::test_x[1]": "failed", "t/test_a.py::test_y": "passed", "t/test_b.py": "error"}"#;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(json.as_bytes()).unwrap();
        let packed = base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap());
        let (out, outcomes): (_, BTreeMap<String, NodeOutcome>) =
            split_packed(&format!("F.\n{OUTCOMES}{packed}\n\n1 failed\n"), OUTCOMES);
        assert_eq!(out, "F.\n1 failed\n");
        assert_eq!(outcomes["t/test_a.py::test_x[1]"], NodeOutcome::Failed);
        assert_eq!(outcomes["t/test_a.py::test_y"], NodeOutcome::Passed);
        assert_eq!(outcomes["t/test_b.py"], NodeOutcome::Error);
        let (_, none): (_, BTreeMap<String, NodeOutcome>) =
            split_packed(&format!("{OUTCOMES}not base64 at all\n"), OUTCOMES);
        assert!(none.is_empty());
    }

    #[test]
    fn the_trace_comes_out_leaving_what_pytest_printed_byte_for_byte() {
        // As a run printed it: the plugin's newline ends the progress line early, and pytest's own
        // newline follows the plugin's line.
        let plain = "F                                                                        [100%]\n=== FAILURES ===\n1 failed in 0.01s\n";
        let traced = "F                                                                        [100%]\ncurate-trace: {\"/repo/m.py\": [1, 4]}\n\n=== FAILURES ===\n1 failed in 0.01s\n";
        let (rest, lines) = split_trace(traced);
        assert_eq!(rest, plain);
        assert_eq!(lines["m.py"], [1, 4]);
        // A marker inside a line of pytest's is not the plugin's.
        let quoted = "E   assert 'curate-trace: x' == ''\n";
        assert_eq!(split_trace(quoted), (quoted.to_string(), BTreeMap::new()));
    }

    #[test]
    fn written_paths_are_split_from_the_output() {
        let (out, wrote) =
            split_writes("..F\ncurate-wrote: f /repo/data.json\n1 failed\ncurate-wrote: d /repo\n");
        assert_eq!(out, "..F\n1 failed\n");
        assert_eq!(wrote, ["/repo/data.json"], "the directory changed because the file was made in it");
        // A plugin's state directory is not the test's write, nor is its parent's change.
        let (_, wrote) = split_writes("curate-wrote: d /repo\ncurate-wrote: d /repo/.benchmarks\n");
        assert!(wrote.is_empty(), "{wrote:?}");
        // A directory that changed with nothing new in it lost an entry: a deletion.
        let (_, wrote) = split_writes("curate-wrote: d /repo/pkg\n");
        assert_eq!(wrote, ["/repo/pkg"]);
    }
}
