//! Coding agents: given the patch under review, the relevant files and review comments, revise a
//! working copy of the reviewed code. Validation (does the human comment lead the agent to a
//! revision that passes the hidden test?) and evaluation (does a review tool's comment?) both use
//! one [`Agent`]. The agent never sees the synthesized test or the fixed commit: it works on a
//! history-free copy ([`crate::repo::workspace`]) and its revision is whatever it changed there.
//!
//! - [`builtin`]: driven by the configured LLM, writing search/replace [`edits`], or, in the
//!   [`rewrite`] mode, rewriting the function around each commented line;
//! - [`command`]: any command-line agent (Claude Code, Codex, aider, mini-swe-agent) run on the copy.

pub mod builtin;
pub mod command;
pub mod edits;
pub mod focus;
pub mod rewrite;
pub mod tested;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::context::StageContext;
use crate::engine::stage::{Meter, TaskError};
use crate::errors::ConfigError;
use crate::llm::LlmSpec;
use crate::llm::prompt::Texts;

/// One review comment for the agent to address.
#[derive(Debug, Clone, Serialize)]
pub struct ReviewNote {
    pub path: Option<String>,
    pub line: Option<u64>,
    pub body: String,
}

/// What the agent is told.
#[derive(Debug, Clone)]
pub struct AgentTask {
    pub pr_title: String,
    /// The diff under review.
    pub patch: String,
    pub review: Vec<ReviewNote>,
    /// Files worth reading, at the reviewed state: path and text.
    pub files: Vec<(String, String)>,
}

impl AgentTask {
    /// The task as the fields of a prompt template.
    pub fn values(&self, clip_lines: usize) -> BTreeMap<&'static str, String> {
        let review = self
            .review
            .iter()
            .map(|n| match (&n.path, n.line) {
                (Some(p), Some(l)) => format!("- {p}, line {l}: {}", n.body.trim()),
                (Some(p), None) => format!("- {p}: {}", n.body.trim()),
                _ => format!("- {}", n.body.trim()),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let files = self
            .files
            .iter()
            .map(|(path, text)| {
                format!("{path}:\n```python\n{}\n```", crate::text::first_lines(text, clip_lines))
            })
            .collect::<Vec<_>>()
            .join("\n\n");
        BTreeMap::from([
            ("pr_title", self.pr_title.clone()),
            ("patch", crate::text::first_lines(&self.patch, clip_lines)),
            ("review", review),
            ("files", files),
        ])
    }
}

/// The placeholders an agent's prompt may use.
pub const PLACEHOLDERS: [&str; 4] = ["pr_title", "patch", "review", "files"];
/// The placeholders of the rewrite mode's prompt: one commented place at a time.
pub const REWRITE_PLACEHOLDERS: [&str; 9] =
    ["pr_title", "patch", "review", "path", "line", "start", "end", "code", "changes"];

/// The placeholders of the rewrite mode's narrower question ([`focus`]): the commented statement
/// (`start`, `end`, `code`) in the definition shown around it (`context_start`, `context_end`,
/// `context`).
pub const FOCUS_PLACEHOLDERS: [&str; 10] =
    ["pr_title", "review", "path", "line", "start", "end", "code", "context", "context_start", "context_end"];

/// How the built-in agent answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Search/replace blocks (or a unified diff, or a whole file) over the files shown.
    #[default]
    Edits,
    /// The function or method around each commented line, rewritten whole.
    Rewrite,
}

/// The sections of a unified diff that touch `path` (on either side); the whole diff when none do.
pub fn file_patch(patch: &str, path: &str) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in patch.split_inclusive('\n') {
        if let Some(header) = line.strip_prefix("diff --git ") {
            keep = header
                .split_whitespace()
                .any(|side| side.strip_prefix("a/").or_else(|| side.strip_prefix("b/")) == Some(path));
        }
        if keep {
            out.push_str(line);
        }
    }
    if out.is_empty() { patch.to_string() } else { out }
}

/// What the agent did.
#[derive(Debug, Clone, Serialize)]
pub struct Revision {
    /// `git diff` of the working copy against the reviewed code; empty when nothing changed.
    pub diff: String,
    /// What was said and done, step by step, for the record.
    pub transcript: Vec<Value>,
}

/// A revision, or [`TaskError::Infra`] when the agent could not be run at all (model server down,
/// command missing): not the agent's answer, so the task errors and runs again.
pub type AgentFuture<'a> = Pin<Box<dyn Future<Output = Result<Revision, TaskError>> + Send + 'a>>;

pub trait Agent: Send + Sync {
    /// Revises the working copy in `workdir`. `attempt` counts from 1; an agent may vary with it
    /// (the built-in agent changes its sampling seed).
    fn revise<'a>(
        &'a self,
        task: &'a AgentTask,
        workdir: &'a Path,
        attempt: u32,
        meter: &'a Meter,
    ) -> AgentFuture<'a>;
}

/// An agent as a pipeline names it.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum AgentConfig {
    Builtin {
        /// The task prompt.
        prompt: PathBuf,
        /// The message that reports edits that could not be applied.
        feedback_prompt: PathBuf,
        /// Model answers at most, the first included.
        #[serde(default = "default_steps")]
        max_steps: u32,
        /// `edits` (the default) or `rewrite`.
        #[serde(default)]
        mode: Mode,
        /// The temperature of every attempt after the first (the first keeps the model's own):
        /// at temperature 0 another seed gives the same answer, so a second attempt would only
        /// repeat the first.
        #[serde(default)]
        resample_temperature: Option<f32>,
        /// In the rewrite mode: show a definition without its docstring, and put it back in the
        /// answer. A small model asked to rewrite a long documented function answers with it
        /// unchanged.
        #[serde(default)]
        hide_docstrings: bool,
        /// In the rewrite mode: a comment text put after each shown line that the PR added (and
        /// taken off the answer), so that a small model sees which lines the review is about.
        #[serde(default)]
        mark_added: Option<String>,
        /// In the rewrite mode: a comment text put after each shown line a review comment is on
        /// (and taken off the answer): a small model is not shown line numbers.
        #[serde(default)]
        mark_commented: Option<String>,
        /// In the rewrite mode: after an answer that changed nothing, the steps left ask with this
        /// prompt for the commented statement alone, the definition shown around it.
        #[serde(default)]
        focus_prompt: Option<PathBuf>,
        /// With `focus_prompt`: every run whose number (from 1) is a multiple of this asks the
        /// narrower question first. The first run keeps the whole definition's question.
        #[serde(default)]
        focus_first_every: Option<u32>,
        #[serde(default)]
        llm: Box<LlmSpec>,
    },
    Command {
        /// Run with `sh -c` in the working copy; `{prompt_file}` and `{workdir}` are filled in.
        command: String,
        /// The task text written to the prompt file.
        prompt: PathBuf,
        #[serde(default = "default_command_timeout")]
        timeout_secs: u64,
    },
}

fn default_steps() -> u32 {
    3
}
fn default_command_timeout() -> u64 {
    900
}

/// A built agent, and what of its config the engine hashes into task keys.
pub struct BuiltAgent {
    pub agent: Arc<dyn Agent>,
    pub files: Vec<String>,
    pub fingerprint: Value,
}

impl AgentConfig {
    /// The agent's task prompt file, which also holds the texts a stage adds to the task
    /// (`[text tested]`: [`tested::TEXTS`]).
    pub fn prompt(&self) -> &Path {
        match self {
            AgentConfig::Builtin { prompt, .. } | AgentConfig::Command { prompt, .. } => prompt,
        }
    }

    /// With `tested_code` on, the texts of [`tested::retarget`] from the agent's prompt file.
    pub fn tested_texts(&self, ctx: &StageContext, tested_code: bool) -> Result<Option<Texts>, ConfigError> {
        tested_code.then(|| ctx.texts("agent.prompt", self.prompt(), tested::TEXTS)).transpose()
    }

    pub fn build(&self, ctx: &StageContext) -> Result<BuiltAgent, ConfigError> {
        match self {
            AgentConfig::Builtin {
                prompt,
                feedback_prompt,
                max_steps,
                mode,
                resample_temperature,
                hide_docstrings,
                mark_added,
                mark_commented,
                focus_prompt,
                focus_first_every,
                llm,
            } => {
                if resample_temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
                    return Err(ConfigError::new("agent.resample_temperature", "must be between 0 and 2"));
                }
                if *hide_docstrings && *mode != Mode::Rewrite {
                    return Err(ConfigError::new(
                        "agent.hide_docstrings",
                        "applies to the rewrite mode only",
                    ));
                }
                for (key, text) in
                    [("agent.mark_added", mark_added), ("agent.mark_commented", mark_commented)]
                {
                    let Some(text) = text else { continue };
                    if *mode != Mode::Rewrite {
                        return Err(ConfigError::new(key, "applies to the rewrite mode only"));
                    }
                    if text.trim().is_empty() || text.contains('\n') {
                        return Err(ConfigError::new(key, "must be one line of text"));
                    }
                }
                let agent = builtin::BuiltinAgent::new(ctx, prompt, feedback_prompt, *max_steps, *mode, llm)?
                    .resampled_at(*resample_temperature)
                    .hiding_docstrings(*hide_docstrings)
                    .marking(builtin::Marks::new(mark_added.as_deref(), mark_commented.as_deref()))
                    .focusing(ctx, focus_prompt.as_deref())?
                    .focusing_first_every(*focus_first_every);
                if focus_prompt.is_some() && *mode != Mode::Rewrite {
                    return Err(ConfigError::new("agent.focus_prompt", "applies to the rewrite mode only"));
                }
                if let Some(n) = focus_first_every {
                    if focus_prompt.is_none() {
                        return Err(ConfigError::new("agent.focus_first_every", "needs agent.focus_prompt"));
                    }
                    if *n < 2 {
                        return Err(ConfigError::new(
                            "agent.focus_first_every",
                            "must be at least 2: the first run asks for the whole definition",
                        ));
                    }
                }
                let mut fingerprint = agent.fingerprint();
                // Only when not the default, so keys made before these settings stay valid.
                if *mode == Mode::Rewrite {
                    fingerprint["mode"] = serde_json::json!("rewrite");
                }
                if let Some(t) = resample_temperature {
                    fingerprint["resample_temperature"] = serde_json::json!(t);
                }
                if *hide_docstrings {
                    fingerprint["hide_docstrings"] = serde_json::json!(true);
                }
                if let Some(text) = mark_added {
                    fingerprint["mark_added"] = serde_json::json!(text);
                }
                if let Some(text) = mark_commented {
                    fingerprint["mark_commented"] = serde_json::json!(text);
                }
                if let Some(n) = focus_first_every {
                    fingerprint["focus_first_every"] = serde_json::json!(n);
                }
                let mut files = vec![path_text(prompt), path_text(feedback_prompt)];
                files.extend(focus_prompt.as_deref().map(path_text));
                Ok(BuiltAgent { agent: Arc::new(agent), files, fingerprint })
            }
            AgentConfig::Command { command, prompt, timeout_secs } => Ok(BuiltAgent {
                agent: Arc::new(command::CommandAgent::new(ctx, command, prompt, *timeout_secs)?),
                files: vec![path_text(prompt)],
                fingerprint: Value::Null,
            }),
        }
    }
}

fn path_text(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_sections_are_cut_from_a_patch() {
        let patch = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/y.py b/y.py\n--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-c\n+d\n";
        assert_eq!(
            file_patch(patch, "y.py"),
            "diff --git a/y.py b/y.py\n--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-c\n+d\n"
        );
        assert_eq!(file_patch(patch, "z.py"), patch, "the whole patch when the file is not in it");
    }
}
