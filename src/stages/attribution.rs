//! `attribution`: per kept review comment, the changes of the fix (reviewed -> fixed) that answer it,
//! so a test can be held to them. Position first: a single hunk of the fix in the commented file
//! next to the commented lines is the answer, and so is the single one of several next to them that
//! changes behaviour (not only an annotation or a docstring). When there are several candidates (hunks next to the
//! comment, else the commented file's hunks, else the whole fix's), the model chooses among them,
//! numbered, which is a task a small model does far better than writing; it may also answer that
//! none does, and the comment is rejected for that. How the hunks were chosen is stored with them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use serde_yaml::Mapping;

use super::contract::{self, Contract};
use super::{AsyncStage, StageContext, StageDef, TaskError, TaskInput, adapt, comment_records};
use crate::engine::item::Scope;
use crate::engine::resources::Resource;
use crate::engine::spec::parse_config;
use crate::errors::ConfigError;
use crate::llm::client::Llm;
use crate::llm::prompt::{Template, TextSpec, Texts};
use crate::llm::{LlmSpec, Message};
use crate::repo::Mirrors;
use crate::repo::hunks::{self, Hunk};

const PLACEHOLDERS: [&str; 4] = ["path", "line", "comment", "changes"];

/// Candidates shown to the model at most, and lines of each.
const MAX_CANDIDATES: usize = 8;
const HUNK_LINES: usize = 14;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// The prompt that asks the model to choose among several candidate hunks.
    prompt: PathBuf,
    /// A hunk whose lines come within this many lines of the commented ones is next to it.
    #[serde(default = "default_near")]
    near: u64,
    /// The hand gold `curate relevance` scores the stage's choices against (not read by the stage).
    #[allow(dead_code)]
    gold: Option<PathBuf>,
    /// Only changes outside the tests can answer a comment: a comment on a test's data
    /// (pycodestyle 931, on a case in `testsuite/E71.py`) is answered by the code that reads it.
    #[serde(default)]
    code_only: bool,
    #[serde(default)]
    llm: LlmSpec,
}

fn default_near() -> u64 {
    3
}

/// The texts the prompt file must hold after its template: a numbered candidate, and the question
/// asked again after an answer with no number.
const TEXTS: &[TextSpec] = &[("change", &["number", "path", "line", "diff"]), ("ask again", &["count"])];

struct Attribution {
    llm: Llm,
    prompt: Template,
    texts: Texts,
    mirrors: Arc<Mirrors>,
    near: u64,
    code_only: bool,
}

pub fn build(ctx: &StageContext, config: &Mapping) -> Result<StageDef, ConfigError> {
    let config: Config = parse_config(config)?;
    let prompt = ctx.template("prompt", &config.prompt, &PLACEHOLDERS)?;
    let texts = ctx.texts("prompt", &config.prompt, TEXTS)?;
    let settings = ctx.llm.merged(&config.llm).settings();
    let llm =
        Llm::new(settings, &ctx.cache.join("llm")).map_err(|e| ConfigError::new("llm", e.to_string()))?;
    let fingerprint = llm.settings.fingerprint();
    let stage = adapt(Attribution {
        llm,
        prompt,
        texts,
        mirrors: ctx.mirrors.clone(),
        near: config.near,
        code_only: config.code_only,
    });
    Ok(StageDef {
        side_effects: true,
        files: vec![config.prompt.to_string_lossy().into_owned()],
        fingerprint_extra: fingerprint,
        // The gold only scores the stage; the model's settings are in the fingerprint.
        unhashed: &["llm", "gold"],
        provides: Some(contract::Attribution::NAME),
        requires: vec![contract::CommentContext::NAME],
        // 2: of several changes next to the comment, the one on its lines; 4: the only one that
        // changes behaviour, docstrings read from the whole file.
        ..StageDef::new(stage, 4, Scope::Comment, Resource::Llm)
    })
}

/// How the candidates for the model are found, narrowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Candidates {
    /// The one hunk, of several next to the commented lines, that changes behaviour (the others
    /// change only annotations, docstrings, comments or imports).
    Behaviour,
    /// Hunks of the commented file next to the commented lines.
    Near,
    /// Every hunk of the commented file.
    File,
    /// Every hunk of the fix.
    Fix,
}

/// The candidate hunks for a comment on `path`, lines `start..=end` of the reviewed file;
/// `behaves` tells a hunk that changes behaviour from one that only declares.
pub fn candidates(
    all: &[Hunk],
    (path, start, end): (&str, u64, u64),
    near: u64,
    behaves: impl Fn(&Hunk) -> bool,
) -> (Candidates, Vec<Hunk>) {
    let in_file: Vec<Hunk> = all.iter().filter(|h| h.old_path.as_deref() == Some(path)).cloned().collect();
    let within = |h: &&Hunk| {
        let (from, to) = h.changed_span();
        from.saturating_sub(near) <= end && start <= to + near
    };
    let close: Vec<Hunk> = in_file.iter().filter(within).cloned().collect();
    // Of several changes next to the comment, the only one that changes behaviour is the answer
    // (the `raise` the comment is on, not the annotation two lines above it).
    let behaving: Vec<&Hunk> = close.iter().filter(|h| behaves(h)).collect();
    if close.len() > 1 && behaving.len() == 1 {
        (Candidates::Behaviour, vec![behaving[0].clone()])
    } else if !close.is_empty() {
        (Candidates::Near, close)
    } else if !in_file.is_empty() {
        (Candidates::File, in_file)
    } else {
        (Candidates::Fix, all.to_vec())
    }
}

/// The hunks of `all` outside the project's tests, or all of them when every one is a test's.
pub fn code_hunks(all: Vec<Hunk>) -> Vec<Hunk> {
    let code: Vec<Hunk> =
        all.iter().filter(|h| !crate::synthesis::project::is_test_side(h.path())).cloned().collect();
    if code.is_empty() { all } else { code }
}

/// The model's choice: the numbers it named (from 1, within `n`), or `Some(empty)` for none.
fn read_choice(answer: &str, n: usize) -> Option<Vec<usize>> {
    let numbers: Vec<usize> = answer
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .filter(|k| (1..=n).contains(k))
        .collect();
    if !numbers.is_empty() {
        let mut numbers = numbers;
        numbers.sort_unstable();
        numbers.dedup();
        return Some(numbers);
    }
    answer.to_lowercase().contains("none").then(Vec::new)
}

/// The candidates as the prompt shows them: numbered, with their file and lines, each in the
/// prompt file's `[text change]`.
fn numbered(candidates: &[Hunk], texts: &Texts) -> String {
    candidates
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let lines: Vec<&str> = h.text.lines().collect();
            let shown = lines.iter().take(HUNK_LINES).copied().collect::<Vec<_>>().join("\n");
            let more = if lines.len() > HUNK_LINES { "\n…" } else { "" };
            let values = BTreeMap::from([
                ("number", (i + 1).to_string()),
                ("path", h.path().to_string()),
                ("line", h.new_start.to_string()),
                ("diff", format!("{shown}{more}")),
            ]);
            texts.render("change", &values)
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// What is stored: the contract downstream stages read, and how its changes were found.
#[derive(Serialize)]
struct Record {
    #[serde(flatten)]
    attribution: contract::Attribution,
    among: Candidates,
    candidates: usize,
}

/// The record downstream stages read.
fn record(chosen: &[Hunk], how: &str, among: Candidates, candidates: usize) -> Result<Value, TaskError> {
    let changes = chosen
        .iter()
        .map(|h| contract::AttributedChange {
            path: h.path().to_string(),
            old_path: h.old_path.clone(),
            added: h.added.iter().map(|(n, _)| *n).collect(),
            removed: h.removed.iter().map(|(n, _)| *n).collect(),
            new_start: h.new_start,
        })
        .collect();
    let record =
        Record { attribution: contract::Attribution { how: how.to_string(), changes }, among, candidates };
    serde_json::to_value(record).map_err(|e| TaskError::infra(format!("cannot store the attribution: {e}")))
}

impl Attribution {
    async fn attribute(&self, input: &TaskInput) -> Result<Value, TaskError> {
        let (pr, comment) = comment_records(input)?;
        let context: contract::CommentContext = contract::upstream(input)?;
        let Some(fixed) = pr.fixed_commit.clone() else {
            return Err(TaskError::reject("the PR has no fixed commit"));
        };
        let (mirrors, repo, head) = (self.mirrors.clone(), pr.repo.clone(), pr.head_commit.clone());
        let path = context.path.clone();
        let (diff, old, new) = tokio::task::spawn_blocking(move || {
            let mirror = mirrors.open(&repo, &[&head, &fixed])?;
            let text = |commit: &str| -> Result<Option<String>, crate::repo::RepoError> {
                Ok(mirror.file_at(commit, &path)?.map(|b| String::from_utf8_lossy(&b).into_owned()))
            };
            Ok::<_, crate::repo::RepoError>((mirror.diff(&head, &fixed)?, text(&head)?, text(&fixed)?))
        })
        .await
        .map_err(|e| TaskError::infra(format!("the git worker failed: {e}")))??;
        let all = hunks::parse(&diff);
        let all = if self.code_only { code_hunks(all) } else { all };
        if all.is_empty() {
            return Err(TaskError::reject("the fix changes no lines"));
        }
        // Without both sides of the commented file (a rename), every change counts as behaviour.
        // Each side's lines are classified once, for every candidate.
        let declared =
            old.zip(new).map(|(o, n)| (hunks::declarative_lines(&o), hunks::declarative_lines(&n)));
        let behaves = |h: &Hunk| declared.as_ref().is_none_or(|(o, n)| h.changes_behaviour(o, n));
        let span = (context.path.as_str(), context.start_line, context.end_line);
        let (among, mut found) = candidates(&all, span, self.near, behaves);
        if found.len() == 1 {
            let how = match among {
                Candidates::Behaviour => "position, the only change of behaviour next to it",
                Candidates::Near => "position",
                Candidates::File => "the only change in the file",
                Candidates::Fix => "the only change of the fix",
            };
            return record(&found, how, among, 1);
        }
        found.truncate(MAX_CANDIDATES);
        let values = BTreeMap::from([
            ("path", context.path.clone()),
            ("line", context.end_line.to_string()),
            ("comment", comment.text.trim().to_string()),
            ("changes", numbered(&found, &self.texts)),
        ]);
        let mut messages = self.prompt.render(&values);
        for attempt in 0..2 {
            let (answer, _) = self.llm.chat(&self.llm.request(messages.clone())).await?;
            input.meter.add(answer.usage.into());
            match read_choice(&answer.text, found.len()) {
                Some(chosen) if chosen.is_empty() => {
                    return Err(TaskError::Reject {
                        reason: "no change of the fix answers the comment".into(),
                        detail: json!({"among": among, "candidates": found.len(), "answer": answer.text}),
                    });
                }
                Some(chosen) => {
                    let picked: Vec<Hunk> = chosen.iter().map(|k| found[k - 1].clone()).collect();
                    return record(&picked, "model", among, found.len());
                }
                None if attempt == 0 => {
                    messages.push(Message::assistant(answer.text));
                    let count = BTreeMap::from([("count", found.len().to_string())]);
                    messages.push(Message::user(self.texts.render("ask again", &count)));
                }
                None => {}
            }
        }
        Err(TaskError::reject("unparseable"))
    }
}

impl AsyncStage for Attribution {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        self.attribute(&input).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunk(path: &str, old_start: u64, removed: &[u64], added: &[u64], context: usize) -> Hunk {
        let mut text = String::new();
        for _ in 0..context {
            text.push_str(" c\n");
        }
        for _ in removed {
            text.push_str("-r\n");
        }
        for _ in added {
            text.push_str("+a\n");
        }
        Hunk {
            old_path: Some(path.into()),
            new_path: Some(path.into()),
            old_start,
            new_start: old_start,
            removed: removed.iter().map(|n| (*n, "r".into())).collect(),
            added: added.iter().map(|n| (*n, "a".into())).collect(),
            text,
        }
    }

    #[test]
    fn candidates_are_numbered_in_the_prompt_files_words() {
        let texts = Texts::parse(include_str!("../../prompts/attribution.md"), TEXTS).unwrap();
        let long = hunk("m.py", 40, &[], &(40..40 + HUNK_LINES as u64 + 2).collect::<Vec<_>>(), 0);
        let shown = numbered(&[hunk("m.py", 7, &[7], &[7], 1), long], &texts);
        let first = "Change 1 in m.py, near line 7:\n```diff\n c\n-r\n+a\n```";
        assert!(
            shown.starts_with(&format!("{first}\n\nChange 2 in m.py, near line 40:\n```diff\n+a\n")),
            "{shown}"
        );
        assert!(shown.ends_with("+a\n…\n```"), "a long change is cut: {shown}");
        let count = BTreeMap::from([("count", "3".to_string())]);
        assert_eq!(
            texts.render("ask again", &count),
            "Answer with only the numbers of the changes (1 to 3), or none."
        );
    }

    #[test]
    fn with_code_only_a_comment_on_a_tests_data_is_answered_by_the_code() {
        let all = vec![
            hunk("testsuite/E71.py", 68, &[], &[70], 1),
            hunk("pycodestyle.py", 1300, &[1301], &[1301], 1),
        ];
        let code = code_hunks(all.clone());
        assert_eq!(code.len(), 1);
        assert_eq!(code[0].path(), "pycodestyle.py");
        let (among, found) = candidates(&code, ("testsuite/E71.py", 68, 68), 3, |_| true);
        assert_eq!((among, found[0].path()), (Candidates::Fix, "pycodestyle.py"));
        let tests_only = vec![hunk("tests/test_a.py", 5, &[], &[6], 1)];
        assert_eq!(code_hunks(tests_only.clone()), tests_only, "a fix of tests only keeps them");
    }

    #[test]
    fn candidates_narrow_from_the_fix_to_the_commented_lines() {
        let all = vec![
            hunk("a.py", 10, &[11], &[11], 1),
            hunk("a.py", 40, &[41], &[41], 1),
            hunk("b.py", 5, &[], &[6], 1),
        ];
        let (among, near) = candidates(&all, ("a.py", 13, 13), 3, |_| true);
        assert_eq!((among, near.len(), near[0].old_start), (Candidates::Near, 1, 10));
        let (among, file) = candidates(&all, ("a.py", 25, 25), 3, |_| true);
        assert_eq!((among, file.len()), (Candidates::File, 2));
        let (among, fix) = candidates(&all, ("c.py", 1, 1), 3, |_| true);
        assert_eq!((among, fix.len()), (Candidates::Fix, 3));
    }

    /// A hunk that removes lines `old` of the old file and adds lines `new` of the new one.
    fn change(old: &[(u64, &str)], new: &[(u64, &str)]) -> Hunk {
        let own = |lines: &[(u64, &str)]| lines.iter().map(|(n, t)| (*n, t.to_string())).collect();
        let text: String = old
            .iter()
            .map(|(_, t)| format!("-{t}\n"))
            .chain(new.iter().map(|(_, t)| format!("+{t}\n")))
            .collect();
        Hunk {
            old_path: Some("a.py".into()),
            new_path: Some("a.py".into()),
            old_start: old.first().map_or(0, |l| l.0),
            new_start: new.first().map_or(0, |l| l.0),
            removed: own(old),
            added: own(new),
            text,
        }
    }

    /// Whether `h` changes behaviour between the file texts `old` and `new`.
    fn behaves(h: &Hunk, old: &str, new: &str) -> bool {
        h.changes_behaviour(&hunks::declarative_lines(old), &hunks::declarative_lines(new))
    }

    const PLUGGY_OLD: &str = "class C:\n    def set_spec(\n        self,\n        opts: \"_Opts\",\n    ) -> None:\n        if self.spec is not None:\n            raise RuntimeError(\n                \"already\"\n            )\n";

    #[test]
    fn of_several_changes_next_to_the_comment_the_only_one_of_behaviour_is_chosen() {
        // pluggy 379: an annotation changed at 4 and the `raise` the comment is on at 7.
        let new = PLUGGY_OLD.replace("\"_Opts\"", "_Opts").replace("RuntimeError", "ValueError");
        let annotation = change(&[(4, "        opts: \"_Opts\",")], &[(4, "        opts: _Opts,")]);
        let raise =
            change(&[(7, "            raise RuntimeError(")], &[(7, "            raise ValueError(")]);
        assert!(!behaves(&annotation, PLUGGY_OLD, &new) && behaves(&raise, PLUGGY_OLD, &new));
        let behaves = |h: &Hunk| behaves(h, PLUGGY_OLD, &new);
        let all = vec![annotation, raise.clone()];
        let (among, chosen) = candidates(&all, ("a.py", 7, 7), 3, behaves);
        assert_eq!((among, chosen), (Candidates::Behaviour, vec![raise]));
        // Both changing behaviour: the model chooses.
        let (among, near) = candidates(&all, ("a.py", 7, 7), 3, |_| true);
        assert_eq!((among, near.len()), (Candidates::Near, 2));
    }

    #[test]
    fn a_docstring_is_known_by_the_whole_file_not_by_the_hunk() {
        let old = "def slug(t, n=None):\n    \"\"\"Make a slug.\n\n    Cut to n\n    characters.\n    \"\"\"\n    s = t.lower()\n    return s[:n]\n";
        let new = "def slug(t, n=None):\n    \"\"\"Make a slug.\n\n    Cut to n\n    characters, and a dangling\n    separator is removed.\n    \"\"\"\n    if n is not None and n < 1:\n        raise ValueError(n)\n    s = t.lower()\n    return s[:n]\n";
        // The docstring opened before the hunk: its lines declare; the guard after it does.
        let doc = change(
            &[(5, "    characters.")],
            &[(5, "    characters, and a dangling"), (6, "    separator is removed.")],
        );
        assert!(!behaves(&doc, old, new));
        let guard =
            change(&[], &[(8, "    if n is not None and n < 1:"), (9, "        raise ValueError(n)")]);
        assert!(behaves(&guard, old, new));
    }

    #[test]
    fn declarations_comments_and_docstrings_declare_and_strings_of_code_do() {
        let source = "from typing import Sequence\n# a note\n@cached\ndef f(\n    x: int,\n    *rest: str,\n) -> int:\n    \"\"\"Doc.\"\"\"\n    query = \"\"\"\n    SELECT 1\n    \"\"\"\n    return x\n    timeout=5,\n";
        let lines = hunks::declarative_lines(source);
        let declared: Vec<usize> = (0..lines.len()).filter(|i| lines[*i]).map(|i| i + 1).collect();
        assert_eq!(declared, [1, 2, 3, 4, 5, 6, 7, 8], "{lines:?}");
    }

    #[test]
    fn the_models_choice_is_read_as_numbers_or_none() {
        assert_eq!(read_choice("2", 3), Some(vec![2]));
        assert_eq!(read_choice("Changes 3, 1 and 3.", 3), Some(vec![1, 3]));
        assert_eq!(read_choice("none", 3), Some(vec![]));
        assert_eq!(read_choice("9", 3), None, "a number out of range is no choice");
        assert_eq!(read_choice("the first one", 3), None);
    }
}
