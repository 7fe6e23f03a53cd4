//! The built-in coding agent: the configured LLM reads the task and answers with search/replace
//! edits (or a unified diff, or a whole file: see [`super::edits`]), which are applied to the
//! working copy; edits that cannot be applied are reported back, for at most `max_steps` answers.
//! It stops as soon as an answer's edits all apply. In the rewrite mode (see [`super::rewrite`]) it
//! asks, per commented place, for the code around it rewritten whole, with the same step limit.

use std::path::Path;

use serde_json::{Value, json};

use super::edits::{self, EditError, apply, parse_any};
use super::rewrite::{self, Region};
use super::{
    Agent, AgentFuture, AgentTask, FOCUS_PLACEHOLDERS, Mode, PLACEHOLDERS, REWRITE_PLACEHOLDERS, Revision,
    focus,
};
use crate::context::StageContext;
use crate::engine::stage::{Meter, TaskError};
use crate::errors::ConfigError;
use crate::llm::client::Llm;
use crate::llm::prompt::{Template, Texts};
use crate::llm::{LlmSpec, Message};
use crate::repo::workspace::working_diff;

/// Lines of the patch and of each file shown to the model.
const CLIP_LINES: usize = 300;

pub struct BuiltinAgent {
    llm: Llm,
    prompt: Template,
    feedback: Template,
    /// What each problem of an answer is called in the feedback (its `[text KEY]` parts).
    texts: Texts,
    max_steps: u32,
    mode: Mode,
    /// The temperature of attempts after the first, when set.
    resample_temperature: Option<f32>,
    /// In the rewrite mode, show a definition without its docstring (put back after).
    hide_docstrings: bool,
    /// In the rewrite mode, the comments put after each shown line the PR added and after each
    /// commented line (`  # ...`), taken off the answer again.
    marks: Marks,
    /// In the rewrite mode, the prompt that asks for the commented statement alone after an answer
    /// that changed nothing ([`focus`]).
    focus: Option<Template>,
    /// In the rewrite mode, the runs (from 1) whose number is a multiple of this ask the narrower
    /// question first, not only after an unchanged answer.
    focus_first_every: Option<u32>,
}

/// The comments the rewrite mode puts after shown lines, each `  # TEXT`.
#[derive(Debug, Clone, Default)]
pub struct Marks {
    /// After each line the PR added, unless it added every line shown.
    pub added: Option<String>,
    /// After each line a review comment is on.
    pub commented: Option<String>,
}

impl Marks {
    /// Each as `text`, or none.
    pub fn new(added: Option<&str>, commented: Option<&str>) -> Marks {
        let comment = |t: &str| format!("  # {t}");
        Marks { added: added.map(comment), commented: commented.map(comment) }
    }

    fn all(&self) -> Vec<&str> {
        self.added.iter().chain(&self.commented).map(String::as_str).collect()
    }

    /// `code` (lines `region` of `path`) with its added and `noted` (from 0) lines marked.
    fn put(&self, code: &str, patch: &str, path: &str, region: rewrite::Region, noted: &[usize]) -> String {
        let mut code = code.to_string();
        if let Some(mark) = &self.added {
            let added = rewrite::added_lines(patch, path, region);
            if !rewrite::every_code_line(&code, &added) {
                code = rewrite::mark(&code, &added, mark);
            }
        }
        if let Some(mark) = &self.commented {
            code = rewrite::mark(&code, noted, mark);
        }
        code
    }
}

impl BuiltinAgent {
    pub fn new(
        ctx: &StageContext,
        prompt: &Path,
        feedback: &Path,
        max_steps: u32,
        mode: Mode,
        llm: &LlmSpec,
    ) -> Result<BuiltinAgent, ConfigError> {
        if max_steps == 0 {
            return Err(ConfigError::new("agent.max_steps", "must be at least 1"));
        }
        let settings = ctx.llm.merged(llm).settings();
        Ok(BuiltinAgent {
            llm: Llm::new(settings, &ctx.cache.join("llm"))
                .map_err(|e| ConfigError::new("agent.llm", e.to_string()))?,
            prompt: ctx.template(
                "agent.prompt",
                prompt,
                if mode == Mode::Rewrite { &REWRITE_PLACEHOLDERS } else { &PLACEHOLDERS },
            )?,
            feedback: ctx.template("agent.feedback_prompt", feedback, &["errors"])?,
            texts: ctx.texts(
                "agent.feedback_prompt",
                feedback,
                if mode == Mode::Rewrite { rewrite::TEXTS } else { edits::TEXTS },
            )?,
            max_steps,
            mode,
            resample_temperature: None,
            hide_docstrings: false,
            marks: Marks::default(),
            focus: None,
            focus_first_every: None,
        })
    }

    /// In the rewrite mode, an unchanged answer followed by the narrower question of `prompt`.
    pub fn focusing(self, ctx: &StageContext, prompt: Option<&Path>) -> Result<BuiltinAgent, ConfigError> {
        let focus = prompt.map(|p| ctx.template("agent.focus_prompt", p, &FOCUS_PLACEHOLDERS)).transpose()?;
        Ok(BuiltinAgent { focus, ..self })
    }

    /// Every `n`th run asks the narrower question first (with [`BuiltinAgent::focusing`]): a small
    /// model sampled again on the same question often writes the same revision, and the two
    /// questions fail on different comments.
    pub fn focusing_first_every(self, n: Option<u32>) -> BuiltinAgent {
        BuiltinAgent { focus_first_every: n, ..self }
    }

    /// Attempts after the first sampled at `temperature` (none: every attempt at the model's own).
    pub fn resampled_at(self, temperature: Option<f32>) -> BuiltinAgent {
        BuiltinAgent { resample_temperature: temperature, ..self }
    }

    /// In the rewrite mode, definitions shown without their docstrings.
    pub fn hiding_docstrings(self, hide: bool) -> BuiltinAgent {
        BuiltinAgent { hide_docstrings: hide, ..self }
    }

    /// In the rewrite mode, shown lines marked with a comment after them.
    pub fn marking(self, marks: Marks) -> BuiltinAgent {
        BuiltinAgent { marks, ..self }
    }

    pub fn fingerprint(&self) -> Value {
        self.llm.settings.fingerprint()
    }

    /// A request for `messages`; another attempt samples differently, the first with the configured
    /// seed and temperature.
    fn request(&self, messages: Vec<Message>, attempt: u32) -> crate::llm::ChatRequest {
        let mut request = self.llm.request(messages);
        request.seed = request.seed.map(|s| s + i64::from(attempt) - 1);
        if let Some(t) = self.resample_temperature.filter(|_| attempt > 1) {
            request.temperature = t;
        }
        request
    }

    /// The feedback message that reports `errors` (each already in the feedback prompt's words).
    fn feedback_message(&self, errors: &[String]) -> Option<Message> {
        let values = std::collections::BTreeMap::from([(
            "errors",
            errors.iter().map(|e| format!("- {e}")).collect::<Vec<_>>().join("\n"),
        )]);
        self.feedback.render(&values).pop()
    }

    async fn work(
        &self,
        task: &AgentTask,
        workdir: &Path,
        attempt: u32,
        meter: &Meter,
    ) -> Result<Revision, TaskError> {
        if self.mode == Mode::Rewrite {
            return self.rewrite(task, workdir, attempt, meter).await;
        }
        let mut messages = self.prompt.render(&task.values(CLIP_LINES));
        // Only a file the model saw whole can be answered with a whole new version.
        let whole: Vec<(String, String)> =
            task.files.iter().filter(|(_, text)| text.lines().count() <= CLIP_LINES).cloned().collect();
        let mut transcript = Vec::new();
        for step in 1..=self.max_steps {
            let request = self.request(messages.clone(), attempt);
            let (answer, _) = self.llm.chat(&request).await?;
            meter.add(answer.usage.into());
            let (edits, mut problems) = parse_any(&answer.text, &whole, answer.truncated);
            if edits.is_empty() && problems.is_empty() {
                problems.push(if answer.truncated { EditError::CutOff } else { EditError::NoEdits });
            }
            let mut applied = 0;
            for edit in &edits {
                match apply(workdir, edit) {
                    Ok(()) => applied += 1,
                    Err(e) => problems.push(e),
                }
            }
            let errors: Vec<String> = problems.iter().map(|p| p.text(&self.texts)).collect();
            transcript
                .push(json!({"step": step, "answer": answer.text, "applied": applied, "errors": errors}));
            if errors.is_empty() {
                break;
            }
            messages.push(Message::assistant(answer.text));
            messages.extend(self.feedback_message(&errors));
        }
        let diff = working_diff(workdir).map_err(|e| TaskError::infra(e.to_string()))?;
        Ok(Revision { diff, transcript })
    }

    /// The rewrite mode: per review note on a shown file, the code around its line rewritten whole
    /// and spliced back, the notes lowest in a file first so earlier places keep their lines.
    async fn rewrite(
        &self,
        task: &AgentTask,
        workdir: &Path,
        attempt: u32,
        meter: &Meter,
    ) -> Result<Revision, TaskError> {
        let mut transcript = Vec::new();
        for place in places(task) {
            // A path from data may not leave the working copy.
            if crate::record::check_repo_path(&place.path).is_err() {
                continue;
            }
            self.rewrite_place(task, &place, workdir, attempt, meter, &mut transcript).await?;
        }
        let diff = working_diff(workdir).map_err(|e| TaskError::infra(e.to_string()))?;
        Ok(Revision { diff, transcript })
    }

    /// One place rewritten: asked, and asked again with the error, until an answer splices in or
    /// the steps run out. Every answer goes to `transcript`.
    async fn rewrite_place(
        &self,
        task: &AgentTask,
        place: &Place,
        workdir: &Path,
        attempt: u32,
        meter: &Meter,
        transcript: &mut Vec<Value>,
    ) -> Result<(), TaskError> {
        let Place { path, line, region } = place;
        let review: Vec<&str> = task
            .review
            .iter()
            .filter(|n| {
                n.path.as_deref() == Some(path.as_str())
                    && n.line.is_some_and(|l| (region.start..=region.end).contains(&(l as usize)))
            })
            .map(|n| n.body.trim())
            .collect();
        let file = workdir.join(path);
        let source = std::fs::read_to_string(&file)
            .map_err(|e| TaskError::infra(format!("reading {}: {e}", file.display())))?;
        // The lines (from the region's start) that notes of this file are on.
        let noted: Vec<usize> = task
            .review
            .iter()
            .filter(|n| n.path.as_deref() == Some(path.as_str()))
            .filter_map(|n| (n.line? as usize).checked_sub(region.start))
            .collect();
        let original = self.marks.put(&rewrite::cut(&source, *region), &task.patch, path, *region, &noted);
        let marks = self.marks.all();
        let unmark = |text: &str| rewrite::unmark(text, &marks);
        let shown = if self.hide_docstrings {
            rewrite::Shown::without_docstring(&original, &noted)
        } else {
            rewrite::Shown::whole(&original)
        };
        let values = std::collections::BTreeMap::from([
            ("pr_title", task.pr_title.clone()),
            ("patch", crate::agent::file_patch(&task.patch, path)),
            ("review", review.join("\n\n")),
            ("path", path.clone()),
            ("line", line.to_string()),
            ("start", region.start.to_string()),
            ("end", region.end.to_string()),
            ("code", shown.code.clone()),
            ("changes", rewrite::changes_in(&task.patch, path, *region)),
        ]);
        let plain = unmark(&shown.code);
        // An answer read as the definition rewritten, and the source with it spliced in.
        let whole = |text: &str, truncated: bool| {
            rewrite::rewritten(text, &plain, truncated)
                .map(|c| rewrite::splice(&source, *region, &unmark(&shown.restore(&c))))
        };
        let mut messages = self.prompt.render(&values);
        // Set once an answer changed nothing, or from the start on every `focus_first_every`th
        // run: the steps left ask for the commented statement.
        let mut narrowed: Option<Narrowed> = None;
        if self.focus_first_every.is_some_and(|n| attempt.is_multiple_of(n)) {
            narrowed = self.narrowed(&values, &source, place, &shown.code);
        }
        for step in 1..=self.max_steps {
            let asked = narrowed.as_ref().map_or(&messages, |n| &n.messages).clone();
            let (answer, _) = self.llm.chat(&self.request(asked, attempt)).await?;
            meter.add(answer.usage.into());
            let text = unmark(&answer.text);
            let (lines, spliced) = match &narrowed {
                None => (*region, whole(&text, answer.truncated)),
                Some(n) => {
                    let body = rewrite::code_of(&text);
                    // Sent back whole, the definition is a rewrite of what the first question showed.
                    // Stopped short of the definition's end, it keeps the rest, not asked about.
                    let spliced = if focus::is_whole(&body, &plain, &n.code) {
                        let kept = focus::with_rest_kept(&body, &plain);
                        whole(kept.as_deref().unwrap_or(&text), answer.truncated)
                    } else {
                        let body = focus::without_copied_neighbours(&body, &source, n.region, *region);
                        rewrite::rewritten(&body, &n.code, answer.truncated)
                            .map(|c| rewrite::splice(&source, n.region, &c))
                    };
                    (n.region, spliced)
                }
            };
            let mut entry = json!({
                "step": step,
                "place": format!("{path}:{}-{}", lines.start, lines.end),
                "answer": answer.text,
                "applied": usize::from(spliced.is_ok()),
                "errors": spliced.as_ref().err().map(|e| self.texts.get(e.key())).into_iter().collect::<Vec<_>>(),
            });
            if narrowed.is_some() {
                entry["focus"] = json!(true);
            }
            transcript.push(entry);
            let error = match spliced {
                Ok(text) => return write(&file, &text),
                Err(error) => error,
            };
            if narrowed.is_none() && error == rewrite::NotARewrite::Unchanged {
                narrowed = self.narrowed(&values, &source, place, &shown.code);
                if narrowed.is_some() {
                    continue;
                }
            }
            let conversation = narrowed.as_mut().map_or(&mut messages, |n| &mut n.messages);
            conversation.push(Message::assistant(answer.text));
            conversation.extend(self.feedback_message(&[self.texts.get(error.key())]));
        }
        Ok(())
    }

    /// The narrower question for `place` ([`focus`]), when the agent asks one and the commented
    /// line is in a statement it can find: `values` of the first question, with the definition
    /// as it was shown (`shown`) for context.
    fn narrowed(
        &self,
        values: &std::collections::BTreeMap<&str, String>,
        source: &str,
        place: &Place,
        shown: &str,
    ) -> Option<Narrowed> {
        let template = self.focus.as_ref()?;
        let region = focus::statement_in(&place.path, source, place.line as usize, place.region)?;
        let code = rewrite::cut(source, region);
        let mut values = values.clone();
        values.insert("context", shown.to_string());
        values.insert("context_start", place.region.start.to_string());
        values.insert("context_end", place.region.end.to_string());
        values.insert("start", region.start.to_string());
        values.insert("end", region.end.to_string());
        values.insert("code", code.clone());
        Some(Narrowed { region, code, messages: template.render(&values) })
    }
}

/// The narrower question's state: the statement's lines, their code, the conversation so far.
struct Narrowed {
    region: Region,
    code: String,
    messages: Vec<Message>,
}

fn write(file: &Path, text: &str) -> Result<(), TaskError> {
    std::fs::write(file, text).map_err(|e| TaskError::infra(format!("writing {}: {e}", file.display())))
}

/// A place the rewrite mode rewrites: a file, the line of its first note, the region around it.
#[derive(Debug, PartialEq)]
struct Place {
    path: String,
    line: u64,
    region: Region,
}

/// The places of the review notes on shown files: two notes in one place are answered together;
/// by file, and the lowest first within a file.
fn places(task: &AgentTask) -> Vec<Place> {
    let mut places: Vec<Place> = Vec::new();
    for note in &task.review {
        let (Some(path), Some(line)) = (&note.path, note.line) else { continue };
        let Some((_, text)) = task.files.iter().find(|(p, _)| p == path) else { continue };
        let region = rewrite::region_in(path, text, line as usize);
        match places
            .iter_mut()
            .find(|p| &p.path == path && p.region.start <= region.end && region.start <= p.region.end)
        {
            Some(place) => {
                place.region = Region {
                    start: place.region.start.min(region.start),
                    end: place.region.end.max(region.end),
                }
            }
            None => places.push(Place { path: path.clone(), line, region }),
        }
    }
    places.sort_by(|a, b| a.path.cmp(&b.path).then(b.region.start.cmp(&a.region.start)));
    places
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
