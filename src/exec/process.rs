//! Commands run on this machine rather than in a container (an `exec` stage, a command-line coding
//! agent or review tool): each in its own process group, so that on a timeout the whole group goes,
//! not only the shell that started it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Kills process group `pgid` with SIGKILL. Best effort: the group may be gone already.
pub fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// How a host command ended.
pub struct HostOutput {
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot start `{command}`: {error}")]
    Start { command: String, error: std::io::Error },
    #[error("`{command}` ran past its {secs} s limit and was killed")]
    Timeout { command: String, secs: u64 },
}

/// Runs `command` with `sh -c` in `dir`, with `env` added, killing its group after `timeout`.
pub async fn run_shell(
    command: &str,
    dir: &Path,
    env: &[(&str, &Path)],
    timeout: Duration,
) -> Result<HostOutput, HostError> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().map_err(|error| HostError::Start { command: command.into(), error })?;
    let pgid = child.id();
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(out)) => Ok(HostOutput {
            exit_code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }),
        Ok(Err(error)) => Err(HostError::Start { command: command.into(), error }),
        Err(_) => {
            if let Some(pgid) = pgid {
                kill_group(pgid);
            }
            Err(HostError::Timeout { command: command.into(), secs: timeout.as_secs() })
        }
    }
}
