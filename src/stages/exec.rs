//! `exec`: runs a shell command per item, so users can add steps without writing Rust.
//!
//! The task input (item and upstream outputs, as JSON) goes to the command's stdin, with
//! `CURATE_ITEM_ID`, `CURATE_PR_ID` and `CURATE_STAGE` in its environment; it runs in the pipeline's
//! directory. Exit 0 keeps the item (stdout, if it is JSON, becomes the output), exit 1 rejects it with
//! the last line of stderr as the reason, anything else is an infrastructure error.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use serde_yaml::Mapping;
use tokio::process::Command;

use crate::exec::process::{CaptureError, OUTPUT_LIMIT, Tag, capture};

use super::{Stage, StageContext, StageDef, TaskFuture, TaskInput};
use crate::engine::item::{Outcome, Scope};
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// A shell command line, run with `sh -c`.
    command: String,
    /// Kill the command and record an error after this many seconds.
    timeout_secs: Option<u64>,
}

struct Exec {
    command: Arc<str>,
    dir: PathBuf,
    timeout: Option<Duration>,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    if config.command.trim().is_empty() {
        return Err(ConfigError::new("command", "the command is empty"));
    }
    if config.timeout_secs == Some(0) {
        return Err(ConfigError::new("timeout_secs", "the timeout must be at least 1 second"));
    }
    let stage = Arc::new(Exec {
        command: config.command.into(),
        dir: ctx.dir.to_path_buf(),
        timeout: config.timeout_secs.map(Duration::from_secs),
    });
    Ok(StageDef {
        side_effects: true,
        unhashed: &["timeout_secs"],
        ..StageDef::new(stage, 1, Scope::Pr, Resource::Cpu)
    })
}

/// What stdin carries: the item's fields at the top level, for a comment its PR's record as
/// `pull_request`, and the upstream outputs.
#[derive(serde::Serialize)]
struct Stdin<'a> {
    #[serde(flatten)]
    item: &'a crate::engine::item::Item,
    #[serde(skip_serializing_if = "Option::is_none")]
    pull_request: Option<&'a Value>,
    upstream: &'a std::collections::BTreeMap<String, Value>,
}

impl Stage for Exec {
    fn run(&self, input: TaskInput) -> TaskFuture {
        let command = self.command.clone();
        let dir = self.dir.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            let stdin = match serde_json::to_vec(&Stdin {
                item: &input.item,
                pull_request: input.pr.as_ref().map(|p| &p.data),
                upstream: &input.upstream,
            }) {
                Ok(bytes) => bytes,
                Err(e) => return Outcome::Errored { error: format!("cannot encode the item: {e}") },
            };
            let tag = Tag::new();
            let mut cmd = Command::new("sh");
            tag.apply(&mut cmd)
                .arg("-c")
                .arg(&*command)
                .current_dir(&dir)
                .env("CURATE_ITEM_ID", &input.item.id)
                .env("CURATE_PR_ID", &input.item.pr)
                .env("CURATE_STAGE", &*input.stage)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                // Its own process group: Ctrl-C at the terminal reaches curate, which lets running
                // commands finish, rather than killing them mid-way.
                .process_group(0);
            let child = match cmd.spawn() {
                Ok(child) => child,
                Err(e) => return Outcome::Errored { error: format!("cannot start `sh`: {e}") },
            };
            match capture(child, &tag, Some(stdin), timeout, OUTPUT_LIMIT).await {
                Ok(out) => outcome(out.exit_code, &out.stdout, &out.stderr),
                Err(CaptureError::Timeout) => Outcome::Errored {
                    error: format!("timed out after {}s and was killed", timeout.map_or(0, |t| t.as_secs())),
                },
                Err(CaptureError::TooMuch(stream)) => Outcome::Errored {
                    error: format!("printed more than {} MiB on {stream} and was killed", OUTPUT_LIMIT >> 20),
                },
                Err(CaptureError::Wait(e)) => {
                    Outcome::Errored { error: format!("waiting for the command failed: {e}") }
                }
            }
        })
    }
}

fn outcome(code: Option<i32>, stdout: &[u8], stderr: &[u8]) -> Outcome {
    let stderr = String::from_utf8_lossy(stderr);
    match code {
        Some(0) => {
            let output = serde_json::from_slice(stdout).unwrap_or(Value::Null);
            Outcome::Kept { output }
        }
        Some(1) => {
            let reason = stderr
                .lines()
                .rev()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("exit status 1 with nothing on stderr");
            Outcome::rejected(reason)
        }
        other => {
            let status = match other {
                Some(c) => format!("exit status {c}"),
                None => "killed by a signal".to_string(),
            };
            Outcome::Errored { error: format!("{status}: {}", crate::text::last_bytes(&stderr, 2000)) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exit_codes_map_to_outcomes() {
        assert_eq!(outcome(Some(0), br#"{"n": 1}"#, b""), Outcome::Kept { output: json!({"n": 1}) });
        assert_eq!(outcome(Some(0), b"not json", b""), Outcome::Kept { output: Value::Null });
        assert_eq!(outcome(Some(1), b"", b"warming up\ntoo chatty\n\n"), Outcome::rejected("too chatty"));
        assert!(
            matches!(outcome(Some(2), b"", b"boom"), Outcome::Errored { error } if error == "exit status 2: boom")
        );
        assert!(matches!(outcome(None, b"", b""), Outcome::Errored { error } if error.contains("signal")));
    }
}
