//! `review_filter` (the paper's section 4.2.1): per review comment, a model decides whether it raises a
//! specific, actionable, objectively verifiable issue (keep) or not (drop), names one of ten
//! categories and gives a one-sentence reason. Dropped comments are rejected with that reason. An
//! answer that is not the JSON asked for gets one more try with the parse error; then the comment is
//! rejected as `unparseable`.
//!
//! - [`rules`]: the obvious drops, decided before the model is asked;
//! - [`calibration`]: the keep threshold on the model's confidence, chosen by `curate gold`. With a
//!   `calibration:` record the stage keeps a comment when the probability the model gave to a kept
//!   kind reaches the recorded threshold, not on the word it wrote.

pub mod calibration;
pub mod fix;
pub mod rules;
pub mod suggestion;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::json;
use serde_yaml::Mapping;
use sha2::Digest;

use super::contract::{self, Contract};
use super::{Stage, StageContext, StageDef, TaskFuture, TaskInput};
use crate::engine::item::{Outcome, Scope};
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::llm::client::Llm;
use crate::llm::confidence::{choice_probability, first_word_probability};
use crate::llm::json::{ObjectError, extract_object};
use crate::llm::prompt::{Template, TextSpec, Texts, template_part};
use crate::llm::{LlmError, LlmSpec, Message, Usage};
use crate::record::{PullRequest, ReviewComment};

/// The paper's ten review categories.
pub const CATEGORIES: [&str; 10] = [
    "functional correctness",
    "testing",
    "robustness",
    "compatibility",
    "documentation",
    "design",
    "error handling",
    "maintainability",
    "efficiency",
    "security",
];

/// Comment kinds (when the prompt asks for one) that make a comment kept, and dropped.
const KEPT_KINDS: [&str; 2] = ["defect", "change"];
const DROPPED_KINDS: [&str; 5] = ["question", "vague", "style", "praise", "process"];

/// What the prompt may use.
const PLACEHOLDERS: [&str; 4] = ["pr_title", "path", "diff_hunk", "comment"];

/// Lines of the diff hunk shown to the model: the end, where the commented line is.
const HUNK_LINES: usize = 16;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The prompt template, relative to the pipeline file.
    pub prompt: PathBuf,
    /// The labelled set `curate gold` measures the prompt on.
    pub gold: Option<PathBuf>,
    /// `curate gold` fails below this precision on the held-out split.
    #[serde(default = "default_bar")]
    pub precision_bar: f64,
    /// The keep threshold recorded by `curate gold --record`; without it the model's word decides.
    pub calibration: Option<PathBuf>,
    /// Decide from facts of the PR too, before the wording ([`rules::fact_rule`]): the PR author's
    /// own comments, answers to an earlier comment of the thread and comments on documentation
    /// pages that name no failure are dropped, and a suggestion block is judged by what it changes
    /// against the lines it would replace (layout only: dropped; values only: never dropped as a
    /// bare suggestion; other tokens, such as names, calls or structure: dropped like any bare
    /// suggestion when no word says what is wrong).
    #[serde(default)]
    pub pr_facts: bool,
    /// With `pr_facts`, read what the PR's fix did at the commented lines too ([`fix`]): a comment
    /// whose lines (and the function or class they are in) the fixed commit leaves as they were,
    /// or only lays out anew or renames, is dropped. Needs the repository's mirror and the PR's
    /// fixed commit; without them the fact is unknown and decides nothing.
    #[serde(default)]
    pub fix_facts: bool,
    /// Yes-or-no questions asked after the verdict, each a prompt file: with only a `[user]` part
    /// it follows the verdict in the same conversation, with a `[system]` part it stands alone.
    /// The probability of "yes" multiplies the confidence in keeping; once that is under one half,
    /// the questions left are not asked.
    #[serde(default)]
    pub questions: Vec<PathBuf>,
    #[serde(default)]
    pub llm: LlmSpec,
}

fn default_bar() -> f64 {
    0.86
}

/// Alternatives asked for at each answer token: enough for every kind to show up.
const TOP_LOGPROBS: u8 = 10;

/// The filter itself, shared by the stage and `curate gold`.
pub struct Filter {
    pub llm: Arc<Llm>,
    template: Template,
    /// The prompt file's texts: what the model is told after an answer that is not a verdict.
    texts: Texts,
    /// SHA-256 of the prompt file: a calibration is valid for this prompt only.
    pub prompt_sha256: String,
    /// Facts of the PR decide before the wording (`Config::pr_facts`).
    pr_facts: bool,
    /// And so does what the fix did at the commented lines (`Config::fix_facts`).
    fix_facts: bool,
    /// `Config::questions`: each file's stem and template.
    questions: Vec<(String, Template)>,
}

/// Tokens a one-word answer to a question may take.
const QUESTION_TOKENS: u32 = 2;
/// The confidence under which no further question is asked.
const QUESTION_FLOOR: f64 = 0.5;

/// What the model decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    pub keep: bool,
    pub category: Option<String>,
    pub reason: String,
    /// The probability the model gave to keeping (a kept kind, or `keep`), when the server returned
    /// log-probabilities for the first answer.
    pub p_keep: Option<f64>,
    /// Each question's name and the probability of "yes".
    pub answers: Vec<(String, f64)>,
}

impl Verdict {
    /// The confidence a threshold is held against: the model's probability, or its word, times
    /// each question's probability of "yes".
    pub fn confidence(&self) -> f64 {
        let base = self.p_keep.unwrap_or(if self.keep { 1.0 } else { 0.0 });
        self.answers.iter().fold(base, |c, (_, p)| c * p)
    }
}

pub enum Judgement {
    /// A rule decided before the model was asked.
    Rule(rules::Rule),
    Verdict(Verdict, Usage),
    Unparseable {
        error: String,
        usage: Usage,
    },
}

impl Judgement {
    /// The confidence in keeping: 0 for a rule's drop and for an answer that could not be read.
    pub fn confidence(&self) -> f64 {
        match self {
            Judgement::Verdict(v, _) => v.confidence(),
            Judgement::Rule(_) | Judgement::Unparseable { .. } => 0.0,
        }
    }
}

/// The fields the prompt is filled with.
pub struct Fields<'a> {
    pub pr_title: &'a str,
    pub path: &'a str,
    pub diff_hunk: &'a str,
    pub comment: &'a str,
    /// Whether the PR's own author wrote the comment, when the source says.
    pub by_pr_author: Option<bool>,
    /// Whether it answers an earlier comment of its thread, when the source says.
    pub is_reply: Option<bool>,
    /// How many lines the comment is on, when the source says (a suggestion replaces them).
    pub lines: Option<usize>,
    /// What the PR's fix did at the commented lines.
    pub fix: fix::FixChange,
}

/// Words models use for the paper's categories.
const CATEGORY_SYNONYMS: [(&str, &str); 12] = [
    ("correctness", "functional correctness"),
    ("bug", "functional correctness"),
    ("logic", "functional correctness"),
    ("error", "error handling"),
    ("exception handling", "error handling"),
    ("performance", "efficiency"),
    ("docs", "documentation"),
    ("tests", "testing"),
    ("test", "testing"),
    ("readability", "maintainability"),
    ("api design", "design"),
    ("portability", "compatibility"),
];

fn normalize_category(c: &str) -> Option<String> {
    let c = c.trim().to_lowercase().replace(['_', '-'], " ");
    let c = CATEGORY_SYNONYMS.iter().find(|(s, _)| *s == c).map_or(c.as_str(), |(_, k)| k).to_string();
    CATEGORIES.iter().find(|k| **k == c).map(|k| k.to_string())
}

/// The string value of `"key": "..."` in text that is not valid JSON (a quote left unescaped in a
/// later field, an answer cut off at the token limit).
fn loose_field(text: &str, key: &str) -> Option<String> {
    let at = text.find(&format!("\"{key}\""))?;
    let rest = text[at + key.len() + 2..].trim_start().strip_prefix(':')?.trim_start();
    if rest.starts_with("null") {
        return None;
    }
    let rest = rest.strip_prefix('"')?;
    Some(rest[..rest.find('"').unwrap_or(rest.len())].to_string())
}

/// What the stage records of a kept comment: the contract, and the model's probability of keeping.
fn kept_record(v: Verdict) -> serde_json::Value {
    #[derive(serde::Serialize)]
    struct Record {
        #[serde(flatten)]
        verdict: super::contract::FilterVerdict,
        p_keep: Option<f64>,
        #[serde(skip_serializing_if = "BTreeMap::is_empty")]
        answers: BTreeMap<String, f64>,
    }
    let record = Record {
        verdict: super::contract::FilterVerdict { category: v.category, reason: v.reason },
        p_keep: v.p_keep,
        answers: v.answers.into_iter().collect(),
    };
    serde_json::to_value(record).unwrap_or(serde_json::Value::Null)
}

/// When the answer is not valid JSON, its fields read one by one.
fn loose_object(text: &str) -> Option<serde_json::Value> {
    let verdict =
        loose_field(text, "verdict").or_else(|| loose_field(text, "kind").map(|_| "drop".into()))?;
    Some(json!({
        "kind": loose_field(text, "kind"),
        "verdict": verdict,
        "category": loose_field(text, "category"),
        "reason": loose_field(text, "reason"),
    }))
}

/// The texts the prompt file must hold after its template: the request after an answer that is
/// not a verdict, with why (`error`: one of the others).
const TEXTS: &[TextSpec] = &[
    ("retry", &["error"]),
    ("no object", &[]),
    ("invalid object", &[]),
    ("not a verdict", &["error"]),
    ("not keep or drop", &["given"]),
    ("unknown category", &["categories", "given"]),
    ("no category", &[]),
];

/// Why a model's answer is not a verdict: stored in these words; the model gets another try in
/// the prompt file's ([`VerdictError::text`]).
#[derive(Debug, thiserror::Error)]
enum VerdictError {
    #[error(transparent)]
    NoObject(#[from] ObjectError),
    #[error("the JSON object is not a verdict: {0}")]
    NotAVerdict(#[source] serde_json::Error),
    #[error("`verdict` must be \"keep\" or \"drop\", not \"{0}\"")]
    NotKeepOrDrop(String),
    #[error("`category` must be one of: {}; not \"{given}\"", CATEGORIES.join(", "))]
    UnknownCategory { given: String },
    #[error("a kept comment needs a `category`")]
    NoCategory,
}

impl VerdictError {
    /// What the model is told of it, in the prompt file's `texts`.
    fn text(&self, texts: &Texts) -> String {
        let with = |key: &str, values: &[(&str, String)]| texts.with(key, values);
        match self {
            VerdictError::NoObject(ObjectError::Absent) => texts.get("no object"),
            VerdictError::NoObject(ObjectError::Invalid) => texts.get("invalid object"),
            VerdictError::NotAVerdict(e) => with("not a verdict", &[("error", e.to_string())]),
            VerdictError::NotKeepOrDrop(given) => with("not keep or drop", &[("given", given.clone())]),
            VerdictError::UnknownCategory { given } => {
                with("unknown category", &[("categories", CATEGORIES.join(", ")), ("given", given.clone())])
            }
            VerdictError::NoCategory => texts.get("no category"),
        }
    }
}

fn parse_verdict(text: &str) -> Result<Verdict, VerdictError> {
    #[derive(Deserialize)]
    struct Raw {
        /// Optional: when the prompt asks for the comment's kind, it decides, since a small model
        /// names a kind more reliably than it applies a criterion.
        kind: Option<String>,
        verdict: String,
        category: Option<String>,
        reason: Option<String>,
    }
    let value = match extract_object(text) {
        Ok(v) => v,
        Err(e) => loose_object(text).ok_or(e)?,
    };
    let raw: Raw = serde_json::from_value(value).map_err(VerdictError::NotAVerdict)?;
    let by_kind = match raw.kind.as_deref().map(|k| k.trim().to_lowercase()) {
        Some(k) if KEPT_KINDS.contains(&k.as_str()) => Some(true),
        Some(k) if DROPPED_KINDS.contains(&k.as_str()) => Some(false),
        _ => None,
    };
    let keep = match (by_kind, raw.verdict.trim().to_lowercase().as_str()) {
        (Some(keep), _) => keep,
        (None, "keep") => true,
        (None, "drop") => false,
        (None, other) => return Err(VerdictError::NotKeepOrDrop(other.to_string())),
    };
    let category = match raw.category.as_deref().map(str::trim).filter(|c| !c.is_empty() && *c != "null") {
        Some(c) => match normalize_category(c) {
            Some(c) => Some(c),
            // A dropped comment needs no category: a word that is none ("formatting" on a style
            // remark) is no reason to ask again, and a second answer would decide on its word
            // alone, without the first answer's doubts.
            None if !keep => None,
            None => return Err(VerdictError::UnknownCategory { given: c.to_string() }),
        },
        None if keep => return Err(VerdictError::NoCategory),
        None => None,
    };
    let reason = raw.reason.unwrap_or_default().trim().chars().take(300).collect();
    Ok(Verdict { keep, category, reason, p_keep: None, answers: Vec::new() })
}

/// The probability of keeping, read where the answer names its kind (or, without one, its verdict).
fn keep_probability(answer: &crate::llm::Answer) -> Option<f64> {
    choice_probability(&answer.logprobs, "kind", &KEPT_KINDS, &DROPPED_KINDS)
        .or_else(|| choice_probability(&answer.logprobs, "verdict", &["keep"], &["drop"]))
}

impl Filter {
    pub fn build(ctx: &StageContext, config: &Config) -> Result<Filter, ConfigError> {
        let prompt = ctx.prompt_text("prompt", &config.prompt)?;
        let template = StageContext::template_of("prompt", &prompt, &PLACEHOLDERS)?;
        let texts = ctx.texts_of("prompt", &config.prompt, &prompt, TEXTS)?;
        // The calibration reads the first answer's confidence, which the texts for a second try
        // never touch: it is tied to the template alone, and to the questions' templates.
        let mut hashed = template_part(&prompt).to_string();
        let mut questions = Vec::new();
        for path in &config.questions {
            let text = ctx.prompt_text("questions", path)?;
            let template = Template::parse(&text, &PLACEHOLDERS)
                .map_err(|e| ConfigError::new("questions", format!("{}: {e}", path.display())))?;
            hashed.push_str("\n[question]\n");
            hashed.push_str(template_part(&text));
            let name = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
            questions.push((name, template));
        }
        let prompt_sha256 = hex::encode(sha2::Sha256::digest(hashed));
        let settings = ctx.llm.merged(&config.llm).settings();
        let llm =
            Llm::new(settings, &ctx.cache.join("llm")).map_err(|e| ConfigError::new("llm", e.to_string()))?;
        Ok(Filter {
            llm: Arc::new(llm),
            template,
            texts,
            prompt_sha256,
            pr_facts: config.pr_facts,
            fix_facts: config.fix_facts,
            questions,
        })
    }

    /// The rule that drops the comment before the model is asked, if one does.
    fn rule(&self, fields: &Fields<'_>) -> Option<rules::Rule> {
        if !self.pr_facts {
            return rules::drop_rule(fields.comment);
        }
        let change = suggestion::change(fields.comment, fields.diff_hunk, fields.path, fields.lines);
        let facts = rules::Facts {
            by_pr_author: fields.by_pr_author,
            is_reply: fields.is_reply,
            path: fields.path,
            suggestion: change,
            names_a_failure: rules::names_a_failure(fields.comment),
            rewords_prose: rules::asks_a_rewording(fields.comment) && rules::on_prose(fields.diff_hunk),
            fix: if self.fix_facts { fields.fix } else { fix::FixChange::Unknown },
        };
        // A suggestion that changes values, and a rename of the public class or function on the
        // commented line, change what callers see: the model judges them.
        rules::fact_rule(&facts).or_else(|| {
            rules::drop_rule(fields.comment)
                .filter(|r| !(*r == rules::SUGGESTION && change == suggestion::Change::Values))
                .filter(|r| !(*r == rules::SAME_BEHAVIOUR && rules::defines_a_public_name(fields.diff_hunk)))
        })
    }

    pub async fn judge(&self, fields: &Fields<'_>) -> Result<Judgement, LlmError> {
        if let Some(rule) = self.rule(fields) {
            return Ok(Judgement::Rule(rule));
        }
        let values = BTreeMap::from([
            ("pr_title", fields.pr_title.to_string()),
            ("path", fields.path.to_string()),
            ("diff_hunk", crate::text::last_lines(fields.diff_hunk, HUNK_LINES)),
            ("comment", fields.comment.trim().to_string()),
        ]);
        let mut messages = self.template.render(&values);
        let mut usage = Usage::default();
        let mut last_error = String::new();
        for attempt in 0..2 {
            let request = crate::llm::ChatRequest {
                top_logprobs: Some(TOP_LOGPROBS),
                ..self.llm.request(messages.clone())
            };
            let (answer, _) = self.llm.chat(&request).await?;
            usage.prompt_tokens += answer.usage.prompt_tokens;
            usage.completion_tokens += answer.usage.completion_tokens;
            match parse_verdict(&answer.text) {
                Ok(v) => {
                    // After a correction the first answer's doubts are not this one's: its word decides.
                    let p_keep = if attempt == 0 { keep_probability(&answer) } else { None };
                    messages.push(Message::assistant(answer.text));
                    let mut verdict = Verdict { p_keep, ..v };
                    for (name, question) in &self.questions {
                        // Each question costs a call; under even odds no threshold worth its name
                        // keeps the comment, so it is asked no more.
                        if verdict.confidence() < QUESTION_FLOOR {
                            break;
                        }
                        let (p, used) = self.ask(question, &messages, &values).await?;
                        usage.prompt_tokens += used.prompt_tokens;
                        usage.completion_tokens += used.completion_tokens;
                        verdict.answers.push((name.clone(), p));
                    }
                    return Ok(Judgement::Verdict(verdict, usage));
                }
                Err(e) if attempt == 0 => {
                    messages.push(Message::assistant(answer.text));
                    let error = BTreeMap::from([("error", e.text(&self.texts))]);
                    messages.push(Message::user(self.texts.render("retry", &error)));
                    last_error = e.to_string();
                }
                Err(e) => last_error = e.to_string(),
            }
        }
        Ok(Judgement::Unparseable { error: last_error, usage })
    }

    /// The probability of "yes" to `question`, asked after `conversation` (the verdict's, ending
    /// with its answer) or, when the question has a system part, on its own. An answer that is
    /// neither word counts as even odds.
    async fn ask(
        &self,
        question: &Template,
        conversation: &[Message],
        values: &BTreeMap<&str, String>,
    ) -> Result<(f64, Usage), LlmError> {
        let asked = question.render(values);
        let messages = if asked.len() > 1 { asked } else { [conversation, &asked[..]].concat() };
        let request = crate::llm::ChatRequest {
            top_logprobs: Some(TOP_LOGPROBS),
            max_tokens: QUESTION_TOKENS,
            ..self.llm.request(messages)
        };
        let (answer, _) = self.llm.chat(&request).await?;
        let word = answer.text.trim_start_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
        let p = first_word_probability(&answer.logprobs, &["yes"], &["no"]).unwrap_or(
            if word.starts_with("yes") {
                1.0
            } else if word.starts_with("no") {
                0.0
            } else {
                0.5
            },
        );
        Ok((p, answer.usage))
    }
}

struct ReviewFilter {
    /// Shared with every task's future, which must be 'static.
    filter: Arc<Filter>,
    /// Where the fix is read from, with `pr_facts` and `fix_facts`.
    mirrors: Option<Arc<crate::repo::Mirrors>>,
    /// The calibrated keep threshold, when the stage names a calibration.
    threshold: Option<f64>,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    if !(0.0..=1.0).contains(&config.precision_bar) {
        return Err(ConfigError::new("precision_bar", "must be between 0 and 1"));
    }
    let filter = Filter::build(ctx, &config)?;
    let fingerprint = filter.llm.settings.fingerprint();
    let threshold = match &config.calibration {
        Some(path) => Some(
            calibration::Calibration::load(&ctx.dir.join(path), &filter.prompt_sha256, &fingerprint)
                .map_err(|e| ConfigError::new("calibration", e.to_string()))?
                .threshold,
        ),
        None => None,
    };
    if config.fix_facts && !config.pr_facts {
        return Err(ConfigError::new(
            "fix_facts",
            "is read with the other facts of the PR: set `pr_facts: true` too",
        ));
    }
    let mirrors = config.fix_facts.then(|| ctx.mirrors.clone());
    let mut files = vec![config.prompt.to_string_lossy().into_owned()];
    files.extend(config.calibration.iter().map(|c| c.to_string_lossy().into_owned()));
    files.extend(config.questions.iter().map(|q| q.to_string_lossy().into_owned()));
    Ok(StageDef {
        side_effects: true,
        files,
        fingerprint_extra: fingerprint,
        // The model's settings that change answers are in the fingerprint.
        unhashed: &["llm"],
        provides: Some(contract::FilterVerdict::NAME),
        ..StageDef::new(
            Arc::new(ReviewFilter { filter: Arc::new(filter), threshold, mirrors }),
            2,
            Scope::Comment,
            Resource::Llm,
        )
    })
}

impl Stage for ReviewFilter {
    fn run(&self, input: TaskInput) -> TaskFuture {
        let (filter, threshold, mirrors) = (self.filter.clone(), self.threshold, self.mirrors.clone());
        Box::pin(async move {
            let comment: ReviewComment = match serde_json::from_value(input.item.data.clone()) {
                Ok(c) => c,
                Err(_) => return Outcome::rejected("not a review comment record"),
            };
            let pr: Option<PullRequest> =
                input.pr.as_ref().and_then(|p| serde_json::from_value(p.data.clone()).ok());
            let fix = match (mirrors, &pr) {
                (Some(mirrors), Some(pr)) => {
                    let (pr, comment) = (pr.clone(), comment.clone());
                    tokio::task::spawn_blocking(move || fix_at_comment(&mirrors, &pr, &comment))
                        .await
                        .unwrap_or(fix::FixChange::Unknown)
                }
                _ => fix::FixChange::Unknown,
            };
            let fields = Fields {
                pr_title: pr.as_ref().map_or("", |p| p.title.as_str()),
                path: comment.path.as_deref().unwrap_or(""),
                diff_hunk: comment.diff_hunk.as_deref().unwrap_or(""),
                comment: &comment.text,
                by_pr_author: comment.by_pr_author,
                is_reply: comment.is_reply,
                lines: comment
                    .line
                    .zip(comment.start_line)
                    .map(|(end, start)| (end + 1).saturating_sub(start) as usize),
                fix,
            };
            match filter.judge(&fields).await {
                Ok(Judgement::Rule(rule)) => {
                    Outcome::rejected(format!("rule `{}`: {}", rule.name, rule.reason))
                }
                Ok(Judgement::Verdict(v, usage)) => {
                    input.meter.add(usage.into());
                    let keep = threshold.map_or(v.keep, |t| v.confidence() >= t);
                    if keep {
                        Outcome::Kept { output: kept_record(v) }
                    } else if v.keep {
                        Outcome::rejected("under the calibrated keep threshold")
                    } else {
                        Outcome::rejected(if v.reason.is_empty() {
                            "dropped by the filter".into()
                        } else {
                            v.reason
                        })
                    }
                }
                Ok(Judgement::Unparseable { usage, .. }) => {
                    input.meter.add(usage.into());
                    Outcome::rejected("unparseable")
                }
                Err(e) => Outcome::from(Err::<serde_json::Value, super::TaskError>(e.into())),
            }
        })
    }
}

/// What the PR's fixed commit did at `comment`'s lines, placed as the context stage places them:
/// [`fix::FixChange::Unknown`] when the PR names no fixed commit or the file or the lines cannot
/// be read.
fn fix_at_comment(
    mirrors: &crate::repo::Mirrors,
    pr: &PullRequest,
    comment: &ReviewComment,
) -> fix::FixChange {
    let unknown = fix::FixChange::Unknown;
    let (Some(path), Some(fixed)) = (comment.path.as_deref(), pr.fixed_commit.as_deref()) else {
        return unknown;
    };
    let Ok(file) = mirrors.across_fix(&pr.repo, &pr.head_commit, fixed, path) else { return unknown };
    let (before, after) = match file.fixed {
        Some((_, Some(after))) => (file.before, after),
        Some((_, None)) => return unknown,
        // A fix that deletes the file changes what runs there.
        None => return fix::FixChange::Behaviour,
    };
    match crate::repo::workspace::whole_file_diff(path, before.as_bytes(), after.as_bytes()) {
        Ok(diff) => fix::at_comment(&diff, comment),
        Err(_) => unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_model_is_told_of_an_answer_that_is_no_verdict_is_the_prompt_files() {
        let texts = Texts::parse(include_str!("../../../prompts/review_filter.md"), TEXTS).unwrap();
        // The model reads the same words a person reads in the store.
        for answer in
            ["no json here", "{\"verdict\": \"maybe\"}", "{\"verdict\": \"keep\", \"category\": \"style\"}"]
        {
            let e = parse_verdict(answer).unwrap_err();
            assert_eq!(e.text(&texts), e.to_string(), "{answer}");
        }
        let e = parse_verdict("{\"verdict\": \"keep\"}").unwrap_err();
        let retry = texts.render("retry", &BTreeMap::from([("error", e.text(&texts))]));
        assert_eq!(
            retry,
            "That answer could not be used: a kept comment needs a `category`. Reply with only the JSON object, nothing else."
        );
    }

    #[test]
    fn verdicts_are_read_tolerantly_and_checked() {
        let v = parse_verdict(
            "```json\n{\"verdict\": \"KEEP\", \"category\": \"Error_Handling\", \"reason\": \"x\"}\n```",
        )
        .unwrap();
        assert_eq!(
            v,
            Verdict {
                keep: true,
                category: Some("error handling".into()),
                reason: "x".into(),
                p_keep: None,
                answers: Vec::new()
            }
        );
        let d = parse_verdict("{\"verdict\": \"drop\", \"category\": null, \"reason\": \"praise\"}").unwrap();
        assert!(!d.keep);
        assert!(
            parse_verdict("{\"verdict\": \"keep\", \"reason\": \"r\"}")
                .unwrap_err()
                .to_string()
                .contains("needs a `category`")
        );
        assert!(parse_verdict("{\"verdict\": \"maybe\"}").unwrap_err().to_string().contains("keep"));
        assert!(
            parse_verdict("{\"verdict\": \"keep\", \"category\": \"vibes\"}")
                .unwrap_err()
                .to_string()
                .contains("one of")
        );
        assert!(parse_verdict("I think it is fine").is_err());
        let by_kind =
            parse_verdict(r#"{"kind": "praise", "verdict": "keep", "category": "design", "reason": "r"}"#);
        assert!(!by_kind.unwrap().keep, "the kind decides over the verdict");
        let dropped = parse_verdict(r#"{"kind": "style", "verdict": "keep", "category": "formatting"}"#)
            .expect("a dropped kind needs no category");
        assert_eq!((dropped.keep, dropped.category), (false, None));
        assert!(
            parse_verdict(r#"{"kind": "change", "verdict": "keep", "category": "formatting"}"#).is_err(),
            "a kept kind still needs one of the ten"
        );
    }
}
