//! The built-in coding agent: the configured LLM reads the task and answers with search/replace
//! edits (or a unified diff, or a whole file: see [`super::edits`]), which are applied to the
//! working copy; edits that cannot be applied are reported back, for at most `max_steps` answers.
//! It stops as soon as an answer's edits all apply.

use std::path::Path;

use serde_json::{Value, json};

use super::edits::{apply, parse_any};
use super::{Agent, AgentFuture, AgentTask, PLACEHOLDERS, Revision};
use crate::context::StageContext;
use crate::engine::stage::{Meter, TaskError};
use crate::errors::ConfigError;
use crate::llm::client::Llm;
use crate::llm::prompt::Template;
use crate::llm::{LlmSpec, Message};
use crate::repo::workspace::working_diff;

/// Lines of the patch and of each file shown to the model.
const CLIP_LINES: usize = 300;

pub struct BuiltinAgent {
    llm: Llm,
    prompt: Template,
    feedback: Template,
    max_steps: u32,
}

impl BuiltinAgent {
    pub fn new(
        ctx: &StageContext,
        prompt: &Path,
        feedback: &Path,
        max_steps: u32,
        llm: &LlmSpec,
    ) -> Result<BuiltinAgent, ConfigError> {
        if max_steps == 0 {
            return Err(ConfigError::new("agent.max_steps", "must be at least 1"));
        }
        let settings = ctx.llm.merged(llm).settings();
        Ok(BuiltinAgent {
            llm: Llm::new(settings, &ctx.cache.join("llm")).map_err(|e| ConfigError::new("agent.llm", e))?,
            prompt: ctx.template("agent.prompt", prompt, &PLACEHOLDERS)?,
            feedback: ctx.template("agent.feedback_prompt", feedback, &["errors"])?,
            max_steps,
        })
    }

    pub fn fingerprint(&self) -> Value {
        self.llm.settings.fingerprint()
    }

    async fn work(
        &self,
        task: &AgentTask,
        workdir: &Path,
        attempt: u32,
        meter: &Meter,
    ) -> Result<Revision, TaskError> {
        let mut messages = self.prompt.render(&task.values(CLIP_LINES));
        // Only a file the model saw whole can be answered with a whole new version.
        let whole: Vec<(String, String)> =
            task.files.iter().filter(|(_, text)| text.lines().count() <= CLIP_LINES).cloned().collect();
        let mut transcript = Vec::new();
        for step in 1..=self.max_steps {
            let mut request = self.llm.request(messages.clone());
            // Another attempt samples differently; the first is the configured seed.
            request.seed = request.seed.map(|s| s + i64::from(attempt) - 1);
            let (answer, _) = self.llm.chat(&request).await.map_err(|e| TaskError::infra(e.to_string()))?;
            meter.add(answer.usage.into());
            let (edits, mut errors) = parse_any(&answer.text, &whole, answer.truncated);
            if edits.is_empty() && errors.is_empty() {
                errors.push(if answer.truncated {
                    "the answer was cut off at the length limit before it ended; send SEARCH/REPLACE edit blocks for only the lines that change".into()
                } else {
                    "the answer has no edit blocks".into()
                });
            }
            let mut applied = 0;
            for edit in &edits {
                match apply(workdir, edit) {
                    Ok(()) => applied += 1,
                    Err(e) => errors.push(e),
                }
            }
            transcript
                .push(json!({"step": step, "answer": answer.text, "applied": applied, "errors": errors}));
            if errors.is_empty() {
                break;
            }
            messages.push(Message::assistant(answer.text));
            let values = std::collections::BTreeMap::from([(
                "errors",
                errors.iter().map(|e| format!("- {e}")).collect::<Vec<_>>().join("\n"),
            )]);
            if let Some(m) = self.feedback.render(&values).pop() {
                messages.push(m);
            }
        }
        let diff = working_diff(workdir).map_err(|e| TaskError::infra(e.to_string()))?;
        Ok(Revision { diff, transcript })
    }
}

impl Agent for BuiltinAgent {
    fn revise<'a>(
        &'a self,
        task: &'a AgentTask,
        workdir: &'a Path,
        attempt: u32,
        meter: &'a Meter,
    ) -> AgentFuture<'a> {
        Box::pin(self.work(task, workdir, attempt, meter))
    }
}
