//! The behaviour probe: a small Python program (`probe.py`) run in a PR's image that calls the
//! functions a fix changed and says what each call gives. It runs once on the fixed tree, where it
//! also chooses the calls (from the comment, the project's tests, and values made up from the
//! changed functions' parameters), and once on the reviewed tree with exactly those calls; the
//! calls whose results differ are facts a test can be written from. Where the sides share an
//! image, [`run_sides`] runs them one after the other in one container, each on its own copy of
//! the image's repository with its tree over it, as a container of its own would.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::docker::ExecError;
use super::hosts::Executor;
use super::sandbox::RunSpec;
use super::testrun::{TEST_DISK_BYTES, TEST_PIDS, TEST_TMP_BYTES, env_spec, split_ended, tree_files};

/// The probe's source and where it runs from in the container.
const PROBE: &str = include_str!("probe.py");
const PROBE_DIR: &str = "/curate-probe";
/// The probe's source as a digest: what it calls and says changes with it, so a stage's results
/// are keyed by it.
pub fn version() -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    hash.update(PROBE.as_bytes());
    hash.update(SIDES_RUNNER.as_bytes());
    hex::encode(&hash.finalize()[..8])
}

/// Prefixes each line the probe prints for curate.
const PREFIX: &str = "curate-probe: ";
/// The probe stops making calls after 20 s of its own; this is the container's limit around it.
const TIMEOUT: Duration = Duration::from_secs(60);

/// What the probe is asked.
#[derive(Debug, Clone, Serialize)]
pub struct Request<'a> {
    /// The commented module's import name.
    pub module: &'a str,
    /// The commented file as reviewed and as fixed.
    pub before: &'a str,
    pub after: &'a str,
    /// The changed lines: added ones numbered in `after`, removed ones in `before`.
    pub added: &'a [u64],
    pub removed: &'a [u64],
    pub comment: &'a str,
    /// `None`: choose the calls; else make exactly these, as (where from, call).
    pub calls: Option<Vec<(String, String)>>,
}

/// One call and what it gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Call {
    pub call: String,
    /// `comment`, `tests` or `generated`.
    pub from: String,
    /// `returns …`, `yields …`, `raises E: …`, `runs over 1 s`, or `unstable`.
    pub result: String,
    /// On the side that chose the calls: a pytest file checking this result, when it can be
    /// written down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// A call of the project's tests that passes a value the comment names: about its case.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub echoes: bool,
}

/// What one run of the probe said.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Probe {
    /// The definitions the changed lines are in (`f`, `Class.method`), when it chose the calls.
    pub targets: Vec<String>,
    pub calls: Vec<Call>,
    /// Why it made no calls: the module did not import, the run failed.
    pub error: Option<String>,
    /// It stopped on its own time limit before the last call.
    pub stopped: bool,
    pub seconds: f64,
}

/// Reads the probe's output: its lines for curate, the rest ignored.
pub fn parse(output: &str) -> Probe {
    let mut probe = Probe::default();
    for line in output.lines() {
        let Some(json) = line.strip_prefix(PREFIX) else { continue };
        let Ok(value) = serde_json::from_str::<serde_json::Value>(json) else { continue };
        if let Some(targets) = value.get("targets").and_then(|t| t.as_array()) {
            probe.targets = targets.iter().filter_map(|t| t.as_str().map(str::to_string)).collect();
        } else if let Some(error) = value.get("error").and_then(|e| e.as_str()) {
            probe.error = Some(error.to_string());
        } else if value.get("stopped").is_some() {
            probe.stopped = true;
        } else if let Ok(call) = serde_json::from_value::<Call>(value) {
            probe.calls.push(call);
        }
    }
    probe
}

/// A side of the fix a probe runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The fixed tree: the side that chooses the calls.
    Fixed,
    /// The reviewed tree, with the fixed side's calls.
    Reviewed,
    /// The fixed tree with the comment's change undone, with the fixed side's calls; it runs only
    /// where some call differs between the other two.
    Partial,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Fixed => "fixed",
            Side::Reviewed => "reviewed",
            Side::Partial => "partial",
        }
    }
}

/// Runs the sides of a shared container, one after the other (see its docstring).
const SIDES_RUNNER: &str = include_str!("probe_sides.py");
/// Ends each side's run in a shared container: `curate-probe-side: SIDE EXIT START END`.
const SIDE_END: &str = "curate-probe-side: ";
/// Where the sides' trees wait in a shared container.
const SIDES_DIR: &str = "/curate-sides";
/// The most a shared container copies: the trees together, which with the image's repository
/// count against the run's disk allowance. Larger repositories run a container per side.
pub const SHARED_TREE_BYTES: u64 = 16 << 20;
/// The exit code of a side killed at its time limit or by the kernel: it did not end as a
/// container of its own would have.
const KILLED: i64 = 137;

/// Whether the probe's sides on `trees` (the partial side's tree is the fixed one's size) fit in
/// one container: their files together no larger than [`SHARED_TREE_BYTES`].
pub fn sharable(trees: &[&std::path::Path]) -> bool {
    let mut bytes = 0;
    for tree in trees {
        let Ok(files) = crate::repo::working_files(tree) else { return false };
        for rel in files {
            bytes += std::fs::symlink_metadata(tree.join(rel)).map_or(0, |m| m.len());
        }
    }
    bytes <= SHARED_TREE_BYTES
}

/// Whether the partial side said it did not run: no call differs.
fn skipped(output: &str) -> bool {
    output
        .lines()
        .filter_map(|l| l.strip_prefix(PREFIX))
        .any(|json| serde_json::from_str::<serde_json::Value>(json).is_ok_and(|v| v.get("skipped").is_some()))
}

/// Runs the probe on `sides` (the fixed side first, `request` without calls) one after the other
/// in one container of `image`. Per side, in order: what the probe said, as [`run`] reads it, or
/// `None` for a side that did not end there (killed by its limit or for memory or disk, its output
/// cut) and every side after it, and for a partial side that skipped: run those alone with [`run`].
pub async fn run_sides(
    docker: &impl Executor,
    image: &str,
    sides: &[(Side, &std::path::Path)],
    request: &Request<'_>,
) -> Result<Vec<Option<Probe>>, ExecError> {
    debug_assert!(sides.first().is_some_and(|(s, _)| *s == Side::Fixed) && request.calls.is_none());
    let names: Vec<Side> = sides.iter().map(|(s, _)| *s).collect();
    let mut command =
        vec!["python".into(), format!("{PROBE_DIR}/probe_sides.py"), TIMEOUT.as_secs().to_string()];
    command.extend(names.iter().map(|s| s.name().to_string()));
    let mut spec = probe_spec(image, command, request)?;
    spec.timeout = TIMEOUT * sides.len() as u32 + Duration::from_secs(30);
    spec.files.push((format!("{PROBE_DIR}/probe_sides.py"), SIDES_RUNNER.as_bytes().to_vec()));
    for (side, tree) in sides {
        for (path, bytes) in tree_files(tree)? {
            let rel = path.strip_prefix(super::testrun::REPO).unwrap_or(&path).trim_start_matches('/');
            spec.files.push((format!("{SIDES_DIR}/{}/{rel}", side.name()), bytes));
        }
    }
    let r = docker.run(&spec).await?;
    // An output cut in the middle may have lost a side's end line or its calls.
    if r.output.len() > crate::exec::sandbox::OUTPUT_LIMIT {
        return Ok(vec![None; names.len()]);
    }
    Ok(read_sides(&r.output, &names))
}

/// What each of `sides` said in a shared container's `output`, as [`run_sides`] gives it.
fn read_sides(output: &str, sides: &[Side]) -> Vec<Option<Probe>> {
    let mut out = Vec::new();
    let mut ended = split_ended(output, SIDE_END).into_iter();
    for side in sides {
        let Some(end) = ended.next().filter(|e| e.label == side.name() && e.exit_code != KILLED) else {
            break;
        };
        if *side == Side::Partial && skipped(&end.output) {
            break;
        }
        let mut probe = parse(&end.output);
        probe.seconds = to_millis(end.seconds);
        if probe.error.is_none() && end.exit_code != 0 {
            probe.error = Some(failed(&format!("exit {:?}", Some(end.exit_code)), &end.output));
        }
        out.push(Some(probe));
    }
    out.resize(sides.len(), None);
    out
}

/// A failed run's error: why, and the last three lines of its output.
fn failed(why: &str, output: &str) -> String {
    let tail: Vec<&str> = output.lines().rev().take(3).collect();
    format!("the probe {why}: {}", tail.into_iter().rev().collect::<Vec<_>>().join(" | "))
}

/// Seconds to the millisecond, as a probe's time is stored.
fn to_millis(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// A run of `command` in `image` under the sandbox's limits for a test run, with the probe and
/// `request` in [`PROBE_DIR`].
fn probe_spec(image: &str, command: Vec<String>, request: &Request<'_>) -> Result<RunSpec, ExecError> {
    let json = serde_json::to_vec(request).map_err(|e| ExecError::Other(format!("probe request: {e}")))?;
    let mut spec = env_spec(image, command);
    spec.timeout = TIMEOUT;
    spec.pids = TEST_PIDS;
    spec.tmp_bytes = Some(TEST_TMP_BYTES);
    spec.disk_bytes = Some(TEST_DISK_BYTES);
    spec.env.push(("PYTHONHASHSEED".into(), "0".into()));
    spec.files.push((format!("{PROBE_DIR}/probe.py"), PROBE.as_bytes().to_vec()));
    spec.files.push((format!("{PROBE_DIR}/request.json"), json));
    Ok(spec)
}

/// Runs the probe in `image` against the repository `tree`.
pub async fn run(
    docker: &impl Executor,
    image: &str,
    tree: &std::path::Path,
    request: &Request<'_>,
) -> Result<Probe, ExecError> {
    let mut spec = probe_spec(image, vec!["python".into(), format!("{PROBE_DIR}/probe.py")], request)?;
    spec.files.extend(tree_files(tree)?);
    let r = docker.run(&spec).await?;
    let mut probe = parse(&r.output);
    probe.seconds = to_millis(r.duration.as_secs_f64());
    if probe.error.is_none() && r.exit_code != Some(0) {
        let why = match (r.timed_out, r.disk_full) {
            (true, _) => "timed out".to_string(),
            (_, true) => "wrote too much to disk".to_string(),
            _ => format!("exit {:?}", r.exit_code),
        };
        probe.error = Some(failed(&why, &r.output));
    }
    Ok(probe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probes_lines_are_read_and_the_rest_ignored() {
        let out = "warning: something\n\
            curate-probe: {\"targets\": [\"median\"]}\n\
            curate-probe: {\"call\": \"median([])\", \"from\": \"comment\", \"result\": \"raises ValueError: empty\"}\n\
            curate-probe: not json\n\
            curate-probe: {\"stopped\": \"time\"}\n";
        let p = parse(out);
        assert_eq!(p.targets, vec!["median"]);
        assert_eq!(p.calls.len(), 1);
        assert_eq!(p.calls[0].result, "raises ValueError: empty");
        assert!(p.stopped);
        assert_eq!(p.error, None);
        let p = parse("curate-probe: {\"error\": \"cannot import x\"}\n");
        assert_eq!(p.error.as_deref(), Some("cannot import x"));
    }

    const CALL: &str =
        "curate-probe: {\"call\": \"f(1)\", \"from\": \"comment\", \"result\": \"returns 1\"}\n";

    #[test]
    fn a_shared_containers_sides_are_read_up_to_the_first_that_did_not_end() {
        let all = [Side::Fixed, Side::Reviewed, Side::Partial];
        let out = format!(
            "{CALL}\ncurate-probe-side: fixed 0 10.0 10.25\n{CALL}\ncurate-probe-side: reviewed 0 11 11.5\n\
             curate-probe: {{\"skipped\": \"no call differs\"}}\n\ncurate-probe-side: partial 0 12 12.1\n"
        );
        let read = read_sides(&out, &all);
        assert_eq!(read[0].as_ref().unwrap().calls[0].result, "returns 1");
        assert_eq!(read[0].as_ref().unwrap().seconds, 0.25);
        assert_eq!(read[1].as_ref().unwrap().calls.len(), 1);
        assert!(read[2].is_none(), "a partial side that skipped runs alone where it is needed");

        // Killed at its limit: that side and the ones after it run alone.
        let out =
            format!("{CALL}\ncurate-probe-side: fixed 137 1 61\n{CALL}\ncurate-probe-side: reviewed 0 1 2\n");
        assert!(read_sides(&out, &all).iter().all(Option::is_none));
        // A side cut short has no end line; nor has one whose end line is not whole.
        let out = format!("{CALL}\ncurate-probe-side: fixed 0 1 2\n{CALL}");
        let read = read_sides(&out, &all);
        assert!(read[0].is_some() && read[1].is_none() && read[2].is_none());
        assert!(
            read_sides(&format!("{CALL}\ncurate-probe-side: fixed 0 1"), &all).iter().all(Option::is_none)
        );
        // An end line of another side than the one expected ends the reading.
        let out = format!("{CALL}\ncurate-probe-side: reviewed 0 1 2\n");
        assert!(read_sides(&out, &all)[0].is_none());

        // A side that failed says so as a container of its own would.
        let out = "Traceback (most recent call last):\nImportError: boom\n\ncurate-probe-side: fixed 1 1 2\n";
        let read = read_sides(out, &all[..1]);
        assert_eq!(
            read[0].as_ref().unwrap().error.as_deref(),
            Some("the probe exit Some(1): Traceback (most recent call last): | ImportError: boom")
        );
    }
}
