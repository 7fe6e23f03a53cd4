//! The behaviour probe: a small Python program (`probe.py`) run in a PR's image that calls the
//! functions a fix changed and says what each call gives. It runs once on the fixed tree, where it
//! also chooses the calls (from the comment, the project's tests, and values made up from the
//! changed functions' parameters), and once on the reviewed tree with exactly those calls; the
//! calls whose results differ are facts a test can be written from.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::docker::ExecError;
use super::hosts::Executor;
use super::testrun::{TEST_DISK_BYTES, TEST_PIDS, TEST_TMP_BYTES, env_spec, tree_files};

/// The probe's source and where it runs from in the container.
const PROBE: &str = include_str!("probe.py");
const PROBE_DIR: &str = "/curate-probe";
/// The probe's source as a digest: what it calls and says changes with it, so a stage's results
/// are keyed by it.
pub fn version() -> String {
    use sha2::{Digest, Sha256};
    hex::encode(&Sha256::digest(PROBE.as_bytes())[..8])
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

/// Runs the probe in `image` against the repository `tree`.
pub async fn run(
    docker: &impl Executor,
    image: &str,
    tree: &std::path::Path,
    request: &Request<'_>,
) -> Result<Probe, ExecError> {
    let json = serde_json::to_vec(request).map_err(|e| ExecError::Other(format!("probe request: {e}")))?;
    let mut spec = env_spec(image, vec!["python".into(), format!("{PROBE_DIR}/probe.py")]);
    spec.timeout = TIMEOUT;
    spec.pids = TEST_PIDS;
    spec.tmp_bytes = Some(TEST_TMP_BYTES);
    spec.disk_bytes = Some(TEST_DISK_BYTES);
    spec.env.push(("PYTHONHASHSEED".into(), "0".into()));
    spec.files = tree_files(tree)?;
    spec.files.push((format!("{PROBE_DIR}/probe.py"), PROBE.as_bytes().to_vec()));
    spec.files.push((format!("{PROBE_DIR}/request.json"), json));
    let r = docker.run(&spec).await?;
    let mut probe = parse(&r.output);
    probe.seconds = (r.duration.as_secs_f64() * 1000.0).round() / 1000.0;
    if probe.error.is_none() && r.exit_code != Some(0) {
        let tail: Vec<&str> = r.output.lines().rev().take(3).collect();
        let why = match (r.timed_out, r.disk_full) {
            (true, _) => "timed out".to_string(),
            (_, true) => "wrote too much to disk".to_string(),
            _ => format!("exit {:?}", r.exit_code),
        };
        probe.error =
            Some(format!("the probe {why}: {}", tail.into_iter().rev().collect::<Vec<_>>().join(" | ")));
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
}
