//! Review tools under evaluation (the paper's section 4.3): each gives review comments on a patch.
//! The human comments of the benchmark are a reviewer too (the upper bound); the built-in reviewer
//! is the configured LLM with a prompt; any other tool is a command whose output is read as
//! comments. What a tool printed becomes [`Finding`]s here, whatever form it took.

pub mod command;
pub mod fit;
pub mod similarity;
pub mod worth;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One review comment from a reviewer: where, and what.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub path: Option<String>,
    pub line: Option<u64>,
    pub body: String,
}

fn finding_of(v: &Value) -> Option<Finding> {
    let text =
        ["body", "comment", "text", "message", "issue_text"].iter().find_map(|k| v.get(*k)?.as_str())?;
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    // A linter's rule (ruff's `code`, pylint's `symbol`, bandit's `test_id`) says what kind of
    // finding it is; it leads the body, as the tools print it on a terminal.
    let rule =
        ["code", "symbol", "test_id"].iter().find_map(|k| v.get(*k)?.as_str()).filter(|r| !r.is_empty());
    let body = match rule {
        Some(rule) if !text.starts_with(rule) => format!("{rule} {text}"),
        _ => text.to_string(),
    };
    let path = ["path", "file", "filename"].iter().find_map(|k| v.get(*k)?.as_str()).map(str::to_string);
    let number = |x: &Value| x.as_u64().or_else(|| x.as_str()?.trim().parse().ok());
    let line = ["line", "start_line", "line_number"]
        .iter()
        .find_map(|k| number(v.get(*k)?))
        .or_else(|| number(v.get("location")?.get("row")?));
    Some(Finding { path, line, body })
}

/// The keys under which a tool's JSON object holds its list of comments.
const LISTS: [&str; 4] = ["comments", "findings", "reviews", "results"];

/// Reads the comments in what a reviewer printed: a JSON array of objects (`path`/`file`,
/// `line`, `body`/`comment`/`text`; ruff's and pylint's JSON too), an object holding such an array
/// (`comments`, `findings`, bandit's `results`), JSON lines, Markdown whose issues link to their
/// lines (PR-Agent's review, [`linked_issues`]), or plain `path:line: text` lines. Anything else is
/// not a review.
pub fn findings(output: &str) -> Vec<Finding> {
    let trimmed = output.trim();
    let from_value = |v: &Value| -> Vec<Finding> {
        match v {
            Value::Array(items) => items.iter().filter_map(finding_of).collect(),
            Value::Object(o) => LISTS
                .iter()
                .find_map(|k| o.get(*k)?.as_array())
                .map(|a| a.iter().filter_map(finding_of).collect())
                .unwrap_or_else(|| finding_of(v).into_iter().collect()),
            _ => Vec::new(),
        }
    };
    // The outermost JSON array or object, even inside prose or a code fence.
    for (open, close) in [('[', ']'), ('{', '}')] {
        if let (Some(a), Some(b)) = (trimmed.find(open), trimmed.rfind(close))
            && a < b
            && let Ok(v) = serde_json::from_str::<Value>(&trimmed[a..=b])
        {
            let found = from_value(&v);
            if !found.is_empty() {
                return found;
            }
        }
    }
    // An array cut off (a model's answer at its length cap): the comments complete before the cut.
    let complete: Vec<Finding> = complete_items(trimmed).iter().filter_map(finding_of).collect();
    if !complete.is_empty() {
        return complete;
    }
    let json_lines: Vec<Finding> = trimmed
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter_map(|v| finding_of(&v))
        .collect();
    if !json_lines.is_empty() {
        return json_lines;
    }
    let linked = linked_issues(trimmed);
    if !linked.is_empty() {
        return linked;
    }
    trimmed
        .lines()
        .filter_map(|l| {
            let (path, rest) = l.trim().split_once(':')?;
            let (line, body) = rest.split_once(':')?;
            let line: u64 = line.trim().parse().ok()?;
            let body = body.trim();
            (!path.is_empty() && !path.contains(' ') && !body.is_empty()).then(|| Finding {
                path: Some(path.to_string()),
                line: Some(line),
                body: body.to_string(),
            })
        })
        .collect()
}

/// The values of the first JSON array in `text` up to where it stops parsing: all of them when it
/// is whole, those complete before the cut when it was cut off.
fn complete_items(text: &str) -> Vec<Value> {
    let Some(open) = text.find('[') else { return Vec::new() };
    let mut rest = &text[open + 1..];
    let mut items = Vec::new();
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match values.next() {
            Some(Ok(v)) => {
                items.push(v);
                rest = &rest[values.byte_offset()..];
            }
            _ => return items,
        }
    }
}

/// The issues of a Markdown review that each link to the lines they are about, as PR-Agent
/// writes them: a line holding `[Header](TARGET#L12-L14)`, then the issue's paragraphs up to the
/// next such line or heading. TARGET is the file's path in the repository, or a web address with
/// the path after `/blob/<commit>/`. The header (without its emphasis) and the paragraphs are the
/// comment's body; the first line linked is its line.
fn linked_issues(text: &str) -> Vec<Finding> {
    let mut issues: Vec<Finding> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        if let Some((label, path, first, rest)) = line_link(line) {
            let body = [label.replace("**", "").trim(), rest.trim()].join(" ").trim().to_string();
            issues.push(Finding { path: Some(path), line: Some(first), body });
            open = true;
        } else if line.trim_start().starts_with('#') || line.trim() == "---" {
            open = false;
        } else if let Some(last) = issues.last_mut().filter(|_| open && !line.trim().is_empty()) {
            last.body = format!("{}\n{}", last.body, line.trim());
        }
    }
    issues.retain(|f| !f.body.is_empty());
    issues
}

/// The first Markdown link of `line` whose target names lines (`...#L12` or `...#L12-L14`): its
/// label, the file's path, the first line, and what follows the link on `line`.
fn line_link(line: &str) -> Option<(String, String, u64, &str)> {
    let open = line.find('[')?;
    let middle = open + line[open..].find("](")?;
    let close = middle + line[middle..].find(')')?;
    let (label, target) = (&line[open + 1..middle], &line[middle + 2..close]);
    let (file, lines) = target.rsplit_once("#L")?;
    let first: u64 = lines.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()?;
    let path = match file.split_once("/blob/") {
        Some((_, after)) => after.split_once('/')?.1,
        None => file.trim_start_matches("./"),
    };
    let rest = &line[close + 1..];
    (!path.is_empty() && !path.contains(' ')).then(|| (label.to_string(), path.to_string(), first, rest))
}

/// Whether what a tool printed is a review that found nothing: an empty JSON list, bare or
/// under one of the keys [`findings`] reads (a linter's clean run), alone or alone in a code fence
/// (a model's answer), as against output that holds no review at all.
pub fn found_nothing(output: &str) -> bool {
    let trimmed = output.trim();
    let body = match trimmed.strip_prefix("```") {
        Some(fenced) => match (fenced.find('\n'), fenced.strip_suffix("```")) {
            (Some(start), Some(inner)) if start < inner.len() => inner[start..].trim(),
            _ => return false,
        },
        None => trimmed,
    };
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Array(items)) => items.is_empty(),
        Ok(Value::Object(o)) => {
            LISTS.iter().any(|k| o.get(*k).and_then(Value::as_array).is_some_and(Vec::is_empty))
        }
        _ => false,
    }
}

/// Paths as the repository names them: tools that print absolute paths (ruff) or `./` ones
/// (bandit) are read relative to `root`, the copy they ran in.
pub fn relative_to(findings: Vec<Finding>, root: &std::path::Path) -> Vec<Finding> {
    let roots: Vec<String> = [Some(root.to_path_buf()), root.canonicalize().ok()]
        .into_iter()
        .flatten()
        .map(|r| format!("{}/", r.to_string_lossy().trim_end_matches('/')))
        .collect();
    findings
        .into_iter()
        .map(|mut f| {
            if let Some(path) = f.path.take() {
                let inside = roots.iter().find_map(|r| path.strip_prefix(r.as_str())).unwrap_or(&path);
                f.path = Some(inside.trim_start_matches("./").to_string());
            }
            f
        })
        .collect()
}

/// The findings on lines the patch adds (numbered in the reviewed code): a linter's diagnostics on
/// the change, not on the code it left alone.
pub fn on_changed_lines(findings: Vec<Finding>, patch: &str) -> Vec<Finding> {
    let added: BTreeSet<(String, u64)> = crate::repo::hunks::parse(patch)
        .iter()
        .filter_map(|h| Some((h.new_path.clone()?, h)))
        .flat_map(|(path, h)| h.added.iter().map(move |(n, _)| (path.clone(), *n)))
        .collect();
    findings
        .into_iter()
        .filter(|f| match (&f.path, f.line) {
            (Some(path), Some(line)) => added.contains(&(path.clone(), line)),
            _ => false,
        })
        .collect()
}

/// What the no-review control tells the agent: one note at the first added line of each of the
/// patch's first [`CONTROL_NOTES`] changed Python files (tests left out), each saying only that no
/// reviewer commented. The agent sees the change as every reviewer's agent does, and nothing a
/// review would add; a test it passes so measures the agent, not a review.
pub fn control_notes(patch: &str) -> Vec<Finding> {
    let mut notes: Vec<Finding> = Vec::new();
    for hunk in crate::repo::hunks::parse(patch) {
        let (Some(path), Some((line, _))) = (&hunk.new_path, hunk.added.first()) else { continue };
        let test = crate::synthesis::project::is_test_side(path);
        if !path.ends_with(".py") || test || notes.iter().any(|n| n.path.as_ref() == Some(path)) {
            continue;
        }
        notes.push(Finding { path: Some(path.clone()), line: Some(*line), body: CONTROL_NOTE.to_string() });
        if notes.len() == CONTROL_NOTES {
            break;
        }
    }
    notes
}

/// At most this many files get a control note.
pub const CONTROL_NOTES: usize = 3;

/// The control's note: no content a review would give.
pub const CONTROL_NOTE: &str = "No reviewer commented on this change. If these lines have a defect, fix it; otherwise leave them as they are.";

/// The human comment `finding` is compared with for text similarity: the nearest in file and
/// line. One on the same file beats any other; among those, the nearest line (a missing line
/// counts as farthest); ties go to the first. `None` only when there are no human comments.
pub fn nearest<'h>(finding: &Finding, humans: &'h [Finding]) -> Option<&'h Finding> {
    humans.iter().min_by_key(|h| {
        let other_file = finding.path.is_none() || h.path != finding.path;
        let distance = match (finding.line, h.line) {
            (Some(a), Some(b)) => a.abs_diff(b),
            _ => u64::MAX,
        };
        (other_file, distance)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_list_is_a_review_that_found_nothing_and_junk_is_not() {
        for nothing in
            ["[]", " [ ]\n", "```json\n[]\n```", "{\"comments\": []}", "```\n{\"findings\": []}\n```"]
        {
            assert!(found_nothing(nothing), "{nothing:?}");
            assert!(findings(nothing).is_empty(), "{nothing:?}");
        }
        for junk in [
            "",
            "LGTM",
            "[1, 2]",
            "{\"verdict\": \"ok\"}",
            "Nothing to add: []",
            "```json\n[\n```",
            "[{\"path\": \"a.py\"",
        ] {
            assert!(!found_nothing(junk), "{junk:?}");
        }
    }

    #[test]
    fn a_markdown_review_whose_issues_link_to_lines_gives_one_comment_an_issue() {
        let review = "## PR Reviewer Guide\n\n### Recommended focus areas for review\n\n#### \n\
            [**Possible Issue**](pkg/m.py#L3-L5)\n\nThe loop never ends when `n` is 0.\n\n\
            Check the bound.\n\n\
            [**Naming**](https://github.com/o/r/blob/0123abc/pkg/util.py#L12)\n\n`x` says nothing.\n\n\
            ### Security concerns\n\nNo\n";
        let found = findings(review);
        assert_eq!(
            found,
            vec![
                Finding {
                    path: Some("pkg/m.py".into()),
                    line: Some(3),
                    body: "Possible Issue\nThe loop never ends when `n` is 0.\nCheck the bound.".into(),
                },
                Finding {
                    path: Some("pkg/util.py".into()),
                    line: Some(12),
                    body: "Naming\n`x` says nothing.".into()
                },
            ]
        );
        // A link that names no lines is no issue, and prose alone is no review.
        assert!(findings("See [the guide](docs/guide.md) for more.\nLooks good.").is_empty());
    }

    #[test]
    fn the_nearest_human_comment_shares_the_file_first_then_the_line() {
        let at = |path: &str, line: Option<u64>, body: &str| Finding {
            path: Some(path.into()),
            line,
            body: body.into(),
        };
        let humans = [at("a.py", Some(3), "a3"), at("b.py", Some(40), "b40"), at("b.py", Some(10), "b10")];
        assert_eq!(nearest(&at("b.py", Some(12), "x"), &humans).unwrap().body, "b10");
        assert_eq!(nearest(&at("a.py", Some(90), "x"), &humans).unwrap().body, "a3");
        assert_eq!(nearest(&at("c.py", Some(10), "x"), &humans).unwrap().body, "b10");
        assert_eq!(nearest(&at("b.py", None, "x"), &humans).unwrap().body, "b40");
        assert!(nearest(&at("b.py", None, "x"), &[]).is_none());
    }

    #[test]
    fn comments_are_read_from_every_form_tools_print() {
        let array = "Here you go:\n```json\n[{\"path\": \"a.py\", \"line\": 3, \"body\": \"off by one\"}, {\"file\": \"b.py\", \"line\": \"7\", \"comment\": \"leaks\"}]\n```";
        assert_eq!(
            findings(array),
            vec![
                Finding { path: Some("a.py".into()), line: Some(3), body: "off by one".into() },
                Finding { path: Some("b.py".into()), line: Some(7), body: "leaks".into() },
            ]
        );
        let object = r#"{"comments": [{"path": "a.py", "body": "x"}]}"#;
        assert_eq!(findings(object)[0].line, None);
        let lines = "{\"path\": \"a.py\", \"line\": 1, \"body\": \"one\"}\n{\"path\": \"a.py\", \"line\": 2, \"body\": \"two\"}\n";
        assert_eq!(findings(lines).len(), 2);
        let plain = "src/x.py:12: this can divide by zero\nnot a finding\n";
        assert_eq!(
            findings(plain),
            vec![Finding {
                path: Some("src/x.py".into()),
                line: Some(12),
                body: "this can divide by zero".into()
            }]
        );
        assert!(findings("Looks good to me!").is_empty());
        assert!(findings("[]").is_empty());
    }

    #[test]
    fn linters_json_is_read_with_its_rule_and_a_clean_run_is_told_from_no_review() {
        let pylint = r#"[{"type": "warning", "path": "pkg/m.py", "line": 4, "symbol": "unused-import", "message": "Unused import os", "message-id": "W0611"}]"#;
        assert_eq!(
            findings(pylint),
            vec![Finding {
                path: Some("pkg/m.py".into()),
                line: Some(4),
                body: "unused-import Unused import os".into()
            }]
        );
        let bandit = r#"{"errors": [], "results": [{"filename": "./pkg/m.py", "line_number": 9, "issue_text": "Use of assert detected.", "test_id": "B101"}]}"#;
        let read = relative_to(findings(bandit), std::path::Path::new("/nowhere"));
        assert_eq!(read[0].path.as_deref(), Some("pkg/m.py"));
        assert_eq!(read[0].body, "B101 Use of assert detected.");
        assert!(found_nothing("[]\n") && found_nothing(r#"{"errors": [], "results": []}"#));
        assert!(!found_nothing("") && !found_nothing("no issues") && !found_nothing(pylint));
    }

    #[test]
    fn control_notes_carry_no_review_and_skip_tests() {
        let patch = "diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n\
diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n a\n+b\n\
diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -3,2 +3,3 @@\n x = 1\n+y = 2\n z = 3\n@@ -9 +10,2 @@\n q = 1\n+r = 2\n";
        let notes = control_notes(patch);
        assert_eq!(
            notes,
            vec![Finding { path: Some("pkg/m.py".into()), line: Some(4), body: CONTROL_NOTE.into() }]
        );
        assert!(control_notes("").is_empty());
    }

    #[test]
    fn an_array_cut_off_at_the_length_cap_gives_the_comments_complete_before_the_cut() {
        let cut = "```json\n[\n  {\"path\": \"a.py\", \"line\": 3, \"body\": \"first\"},\n  {\"path\": \"a.py\", \"line\": 9, \"body\": \"second\"},\n  {\n    \"path\": \"b.py\",\n    \"body\": \"the thi";
        let found = findings(cut);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            (found[1].path.as_deref(), found[1].line, found[1].body.as_str()),
            (Some("a.py"), Some(9), "second")
        );
        assert!(findings("```json\n[\n  {\"path\": \"b.py\",\n  \"bo").is_empty());
    }
}
