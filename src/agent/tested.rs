//! A comment on a test is about the code the test calls. When a reviewer comments on a test of the
//! PR (w3lib 174: "this test of a user without a password has an empty password"), the change that
//! answers it is in the code under test, so an agent shown only the test rewrites the test, which
//! the hidden test then replaces. [`retarget`] moves such a note to the definition, in the PR's
//! changed code, that the commented test calls first, and quotes the test in the note. A comment
//! on a test's data, which calls nothing (pycodestyle 847: a case in `testsuite/E22.py` that the
//! suite's runner checks), is moved to the PR's own change in its code that shares most words
//! with the comment: the PR's cases check what the PR changed.

use std::collections::BTreeMap;
use std::path::Path;

use super::rewrite;
use super::{AgentTask, ReviewNote};
use crate::llm::prompt::{TextSpec, Texts};
use crate::synthesis::project::{changed_paths, is_test_side};

/// The text the agent's prompt file must hold for a moved note: the comment, where it was, and
/// the test quoted.
pub const TEXTS: &[TextSpec] =
    &[("tested", &["comment", "path", "line", "test"]), ("case", &["comment", "path", "line", "test"])];

/// A definition of the PR's code: its file and its `def` line (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub path: String,
    pub line: usize,
}

/// The names `code` calls, in the order they are first called: `name(` and `.name(`.
pub fn called_names(code: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in code.lines() {
        let line = line.split('#').next().unwrap_or("");
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i].is_ascii_alphabetic() || bytes[i] == b'_' {
                let start = i;
                while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                    i += 1;
                }
                let name = &line[start..i];
                if bytes.get(i) == Some(&b'(') && name != "def" && !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            } else {
                i += 1;
            }
        }
    }
    names
}

/// The line (from 1) where `source` defines `name` with `def`, the least indented first.
fn definition_line(source: &str, name: &str) -> Option<usize> {
    source
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start();
            let t = t.strip_prefix("async ").unwrap_or(t);
            t.strip_prefix("def ").and_then(|r| r.strip_prefix(name)).is_some_and(|r| r.starts_with('('))
        })
        .min_by_key(|(_, l)| l.len() - l.trim_start().len())
        .map(|(i, _)| i + 1)
}

/// The definition among `sources` (path and text) that `test` calls first.
pub fn code_under_test(test: &str, sources: &[(String, String)]) -> Option<Definition> {
    called_names(test).iter().find_map(|name| {
        sources.iter().find_map(|(path, text)| {
            definition_line(text, name).map(|line| Definition { path: path.clone(), line })
        })
    })
}

/// Python's keywords: in code they are its syntax, not what the code says.
const KEYWORDS: &[&str] = &[
    "false", "none", "true", "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
    "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield",
];

/// The words of added code, lower-cased: its names and what its strings and comments say, not its
/// keywords (pycodestyle 847's `elif token_type in operator_types and prev_end is not None` says
/// none of the comment's "is, in and not in"; `'and', 'or'` does).
fn words_of_code(code: &str) -> Vec<String> {
    let mut words = Vec::new();
    for line in code.lines() {
        let (mut quote, mut word, mut quoted) = (None::<char>, String::new(), false);
        let mut flush = |word: &mut String, quoted: bool| {
            let w = std::mem::take(word).to_lowercase();
            if !w.is_empty() && (quoted || !KEYWORDS.contains(&w.as_str())) {
                words.push(w);
            }
        };
        for c in line.chars() {
            if c.is_alphanumeric() || c == '_' {
                word.push(c);
                continue;
            }
            flush(&mut word, quoted);
            match quote {
                Some(q) if c == q => quote = None,
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == '#' => quote = Some('\n'),
                _ => {}
            }
            quoted = quote.is_some();
        }
        flush(&mut word, quoted);
    }
    words
}

/// Where the PR changed its code (`sources`: path and text) in the way that shares most words with
/// `comment` ([`words_of_code`]): the first added line of that hunk of `patch`; the first such hunk
/// on a tie, none when the PR adds no line to them.
pub fn changed_place(comment: &str, patch: &str, sources: &[(String, String)]) -> Option<Definition> {
    let words: Vec<String> = comment
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| w.len() > 1)
        .map(str::to_lowercase)
        .collect();
    let shared = |code: &str| {
        let said = words_of_code(code);
        words.iter().filter(|w| said.contains(w)).count()
    };
    let mut best: Option<(usize, Definition)> = None;
    for hunk in crate::repo::hunks::parse(patch) {
        let Some(path) = hunk.new_path.as_deref().filter(|p| sources.iter().any(|(s, _)| s == p)) else {
            continue;
        };
        let Some((first, _)) = hunk.added.first() else { continue };
        let added: String = hunk.added.iter().map(|(_, l)| format!("{l}\n")).collect();
        let score = shared(&added);
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, Definition { path: path.to_string(), line: *first as usize }));
        }
    }
    best.map(|(_, d)| d)
}

/// `task` with each note on a test module of the PR moved to the code that the commented test
/// calls: the definition in the PR's changed non-test Python files under `root` (the reviewed
/// tree) that it calls first, with the test quoted in the note; a note on lines that call none of
/// them (a test's data) goes to the PR's change in them nearest the comment in words
/// ([`changed_place`]). A note that is not on a test, or with nowhere to go, is kept as it is.
/// The moved note says so in the words of `texts` (the agent prompt's `[text tested]`, or
/// `[text case]` for data).
pub fn retarget(task: &AgentTask, patch: &str, root: &Path, texts: &Texts) -> AgentTask {
    let sources: Vec<(String, String)> = changed_paths(patch)
        .into_iter()
        .filter(|p| p.ends_with(".py") && !is_test_side(p) && crate::record::check_repo_path(p).is_ok())
        .filter_map(|p| std::fs::read_to_string(root.join(&p)).ok().map(|text| (p, text)))
        .collect();
    let mut out = AgentTask { review: Vec::new(), ..task.clone() };
    for note in &task.review {
        let moved = match (&note.path, note.line) {
            (Some(path), Some(line)) if is_test_side(path) => {
                task.files.iter().find(|(p, _)| p == path).and_then(|(_, text)| {
                    let test = rewrite::cut(text, rewrite::region(text, line as usize));
                    match code_under_test(&test, &sources) {
                        Some(d) => Some((d, test, "tested")),
                        None => changed_place(&note.body, patch, &sources).map(|d| (d, test, "case")),
                    }
                })
            }
            _ => None,
        };
        let Some((definition, test, said)) = moved else {
            out.review.push(note.clone());
            continue;
        };
        let (Some(path), Some(line)) = (&note.path, note.line) else { continue };
        out.review.push(ReviewNote {
            path: Some(definition.path.clone()),
            line: Some(definition.line as u64),
            body: texts.render(
                said,
                &BTreeMap::from([
                    ("comment", note.body.trim().to_string()),
                    ("path", path.clone()),
                    ("line", line.to_string()),
                    ("test", rewrite::dedent(&test)),
                ]),
            ),
        });
        // The code's part of the patch, for what the PR changed in it.
        let section = super::file_patch(patch, &definition.path);
        if !out.patch.contains(&section) {
            out.patch.push_str(&section);
        }
        if !out.files.iter().any(|(p, _)| *p == definition.path) {
            let text = sources.iter().find(|(p, _)| *p == definition.path).map(|(_, t)| t.clone());
            out.files.extend(text.map(|t| (definition.path.clone(), t)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: &str = "    def test_user_without_password(self):\n        url = 'http://user@example.com'\n        # check(url) would not do\n        self.assertEqual(safe_url_string(url), url)\n";

    #[test]
    fn the_names_a_test_calls_come_in_order_once() {
        assert_eq!(
            called_names(TEST),
            ["test_user_without_password", "assertEqual", "safe_url_string"],
            "a def line's own name counts, a commented-out call does not"
        );
    }

    #[test]
    fn the_first_called_name_the_pr_defines_is_the_code_under_test() {
        let sources = vec![
            ("w3lib/html.py".to_string(), "def other():\n    pass\n".to_string()),
            (
                "w3lib/url.py".to_string(),
                "class X:\n    def safe_url_string(self):\n        pass\n\n\ndef safe_url_string(url, encoding='utf8'):\n    return url\n".to_string(),
            ),
        ];
        assert_eq!(
            code_under_test(TEST, &sources),
            Some(Definition { path: "w3lib/url.py".into(), line: 6 }),
            "the module-level definition before a method of the same name"
        );
        assert_eq!(code_under_test("def test_a():\n    assert f(1)\n", &sources), None);
    }

    #[test]
    fn a_note_on_a_test_moves_to_the_code_it_calls_and_quotes_the_test() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("w3lib")).unwrap();
        let url = "import re\n\n\ndef safe_url_string(url):\n    return url\n";
        std::fs::write(root.path().join("w3lib/url.py"), url).unwrap();
        let test_file = format!("import unittest\n\n\nclass T(unittest.TestCase):\n{TEST}");
        let patch =
            "--- a/w3lib/url.py\n+++ b/w3lib/url.py\n--- a/tests/test_url.py\n+++ b/tests/test_url.py\n";
        let task = AgentTask {
            pr_title: "t".into(),
            patch: String::new(),
            review: vec![ReviewNote {
                path: Some("tests/test_url.py".into()),
                line: Some(7),
                body: "The URL has an empty password.".into(),
            }],
            files: vec![("tests/test_url.py".into(), test_file.clone())],
        };
        let texts = Texts::parse(include_str!("../../prompts/agent_rewrite_real.md"), TEXTS).unwrap();
        let moved = retarget(&task, patch, root.path(), &texts);
        assert_eq!(moved.review.len(), 1);
        let note = &moved.review[0];
        assert_eq!((note.path.as_deref(), note.line), (Some("w3lib/url.py"), Some(4)));
        assert!(note.body.starts_with(
            "The URL has an empty password.\n\n(The comment is on this test, tests/test_url.py line 7"
        ));
        assert!(note.body.contains("def test_user_without_password(self):\n    url ="), "{}", note.body);
        assert!(moved.files.contains(&("w3lib/url.py".to_string(), url.to_string())));
        assert!(moved.patch.contains("+++ b/w3lib/url.py"), "the code's part of the patch is added");

        let on_code = AgentTask {
            review: vec![ReviewNote { path: Some("w3lib/url.py".into()), line: Some(5), body: "b".into() }],
            files: vec![("w3lib/url.py".into(), url.into())],
            ..task
        };
        let kept = retarget(&on_code, patch, root.path(), &texts);
        assert_eq!(kept.review[0].path.as_deref(), Some("w3lib/url.py"));
        assert_eq!(kept.review[0].line, Some(5), "a note on the code stays where it is");
    }

    #[test]
    fn a_note_on_a_tests_data_goes_to_the_prs_change_nearest_in_words() {
        // pycodestyle 847: the cases in testsuite/E22.py call nothing; the PR added `and`, `or`
        // to the operators that need spaces, and a docstring example elsewhere.
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("testsuite")).unwrap();
        let code = "import re\n\nOPS = frozenset([\n    '==', '=',\n    'and', 'or'])\n\n\ndef check(line):\n    \"\"\"E225: z = 1and 1\"\"\"\n    return OPS\n";
        std::fs::write(root.path().join("pep.py"), code).unwrap();
        let cases = "#: E225\ni=i+ 1\n#: E225\nz = 1and 1\n";
        let patch = "diff --git a/pep.py b/pep.py\n--- a/pep.py\n+++ b/pep.py\n@@ -3,3 +3,3 @@\n OPS = frozenset([\n-    '==', '='])\n+    '==', '=',\n+    'and', 'or'])\n@@ -8,2 +8,2 @@\n def check(line):\n-    \"\"\"E225: z = 1\"\"\"\n+    \"\"\"E225: z = 1and 1\"\"\"\n@@ -10,1 +10,1 @@\n-    return OPS\n+    return OPS if line is not None and 'x' in line else OPS\n diff --git a/testsuite/E22.py b/testsuite/E22.py\n--- a/testsuite/E22.py\n+++ b/testsuite/E22.py\n@@ -1,2 +1,4 @@\n #: E225\n i=i+ 1\n+#: E225\n+z = 1and 1\n";
        let body = "More operators need the same check: is, in and not in, as in 1is 1 or 1in [].";
        let task = AgentTask {
            pr_title: "t".into(),
            patch: String::new(),
            review: vec![ReviewNote {
                path: Some("testsuite/E22.py".into()),
                line: Some(4),
                body: body.into(),
            }],
            files: vec![("testsuite/E22.py".into(), cases.into())],
        };
        let texts = Texts::parse(include_str!("../../prompts/agent_rewrite_real.md"), TEXTS).unwrap();
        let moved = retarget(&task, patch, root.path(), &texts);
        let note = &moved.review[0];
        // The operators' hunk says `and` with the comment; the docstring's and the loop's
        // (whose `in`, `and`, `is not` are syntax) say nothing of it.
        assert_eq!((note.path.as_deref(), note.line), (Some("pep.py"), Some(4)));
        assert!(
            note.body.starts_with(&format!("{body}\n\n(The comment is on testsuite/E22.py line 4,")),
            "{}",
            note.body
        );
        assert!(note.body.contains("z = 1and 1"), "the case is quoted: {}", note.body);
        assert!(moved.files.iter().any(|(p, _)| p == "pep.py"), "the code is shown");
        // A comment sharing more words with the docstring's hunk goes there.
        let sources = vec![("pep.py".to_string(), code.to_string())];
        let at = changed_place("the E225 example of check should read z = 1and 1", patch, &sources);
        assert_eq!(at, Some(Definition { path: "pep.py".into(), line: 9 }));
        assert_eq!(changed_place("anything", "", &sources), None);
        assert_eq!(words_of_code("elif t in ops and p is not None:  # or"), ["t", "ops", "p", "or"]);
        assert_eq!(words_of_code("    'and', 'or'] + X"), ["and", "or", "x"]);
    }
}
