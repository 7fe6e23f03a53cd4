//! Any command-line coding agent (Claude Code, Codex, aider, mini-swe-agent) as a [`super::Agent`]:
//! the task is written to a prompt file beside the working copy, the command runs with `sh -c` in
//! the copy (`{prompt_file}` and `{workdir}` filled in, also given as `CURATE_PROMPT_FILE` and
//! `CURATE_WORKDIR`), and the revision is whatever it changed there. It runs on this machine, as
//! such agents need their own credentials and network; a command that cannot start or runs past
//! its time limit is an infrastructure error, not a result.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use super::{Agent, AgentFuture, AgentTask, PLACEHOLDERS, Revision};
use crate::context::StageContext;
use crate::engine::stage::{Meter, TaskError};
use crate::errors::ConfigError;
use crate::exec::process::run_shell;
use crate::llm::prompt::Template;
use crate::repo::workspace::working_diff;

const CLIP_LINES: usize = 2_000;
const OUTPUT_LIMIT: usize = 16 * 1024;

pub struct CommandAgent {
    command: String,
    prompt: Template,
    timeout: Duration,
}

impl CommandAgent {
    pub fn new(
        ctx: &StageContext,
        command: &str,
        prompt: &Path,
        timeout_secs: u64,
    ) -> Result<CommandAgent, ConfigError> {
        if command.trim().is_empty() {
            return Err(ConfigError::new("agent.command", "is empty"));
        }
        let prompt = ctx.template("agent.prompt", prompt, &PLACEHOLDERS)?;
        Ok(CommandAgent { command: command.to_string(), prompt, timeout: Duration::from_secs(timeout_secs) })
    }

    async fn work(&self, task: &AgentTask, workdir: &Path) -> Result<Revision, TaskError> {
        let infra = |what: &str, e: std::io::Error| TaskError::infra(format!("{what}: {e}"));
        let text: Vec<String> =
            self.prompt.render(&task.values(CLIP_LINES)).into_iter().map(|m| m.content).collect();
        // Beside the copy, not in it, so it is not part of the revision.
        let prompt_file = workdir.with_extension("prompt.md");
        std::fs::write(&prompt_file, text.join("\n\n")).map_err(|e| infra("writing the prompt file", e))?;
        let command = self
            .command
            .replace("{prompt_file}", &prompt_file.to_string_lossy())
            .replace("{workdir}", &workdir.to_string_lossy());
        let env = [("CURATE_PROMPT_FILE", prompt_file.as_path()), ("CURATE_WORKDIR", workdir)];
        let output = run_shell(&command, workdir, &env, self.timeout)
            .await
            .map_err(|e| TaskError::infra(e.to_string()))?;
        let printed = format!("{}{}", output.stdout, output.stderr);
        let diff = working_diff(workdir).map_err(|e| TaskError::infra(e.to_string()))?;
        Ok(Revision {
            diff,
            transcript: vec![json!({
                "command": command,
                "exit_code": output.exit_code,
                "output": crate::text::keep_ends(&printed, OUTPUT_LIMIT),
            })],
        })
    }
}

impl Agent for CommandAgent {
    fn revise<'a>(
        &'a self,
        task: &'a AgentTask,
        workdir: &'a Path,
        _attempt: u32,
        _meter: &'a Meter,
    ) -> AgentFuture<'a> {
        Box::pin(self.work(task, workdir))
    }
}
