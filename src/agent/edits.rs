//! Search/replace edits, the form the built-in agent writes its changes in:
//!
//! ```text
//! path/to/file.py
//! <<<<<<< SEARCH
//! lines as they are now
//! =======
//! lines as they should be
//! >>>>>>> REPLACE
//! ```
//!
//! An empty SEARCH part creates a new file. Each edit is applied to a working copy on its own, and
//! one that cannot be (no path, a path outside the copy, text not found) is reported in words the
//! model can act on.
//!
//! Models do not always keep to that form. An answer without edit blocks is read, in this order,
//! as a unified diff (each hunk becomes an edit: its context and removed lines are the SEARCH text,
//! its context and added lines the replacement, so wrong line numbers do not matter), or as a whole
//! file in one complete code block that replaces a file the model was shown.

use std::path::Path;

use crate::llm::prompt::{TextSpec, Texts};
use crate::record::{PathError, check_repo_path};
use crate::repo::hunks::{LineKind, hunk_line};

/// Why an answer's edits could not all be applied. What the model is told of it is the feedback
/// prompt's `[text KEY]` part ([`EditError::text`], every key in [`TEXTS`]).
#[derive(Debug)]
pub enum EditError {
    /// Edit `block` (from 1) lacks its divider or its end.
    Incomplete {
        block: usize,
    },
    /// Edit `block` names no file.
    NoFile {
        block: usize,
    },
    /// The answer, cut off at the length limit, holds no edit.
    CutOff,
    /// The answer holds no edit.
    NoEdits,
    /// The path may not be written (absolute, outside the repository).
    Path {
        path: String,
        error: PathError,
    },
    /// A new file's path is taken.
    Exists(String),
    Missing(String),
    /// The SEARCH text is not in the file.
    NotInFile(String),
    Io {
        path: String,
        error: std::io::Error,
    },
}

/// The texts the edit mode's feedback prompt must hold, with their placeholders.
pub const TEXTS: &[TextSpec] = &[
    ("incomplete", &["block", "divider", "replace"]),
    ("no file", &["block", "search"]),
    ("cut off", &[]),
    ("no edits", &[]),
    ("path", &["path", "error"]),
    ("exists", &["path"]),
    ("missing", &["path"]),
    ("not in file", &["path"]),
    ("io", &["path", "error"]),
];

impl EditError {
    /// Its text in the feedback prompt's `texts`.
    pub fn text(&self, texts: &Texts) -> String {
        let with = |key: &str, values: &[(&str, String)]| texts.with(key, values);
        let path = |key: &str, path: &String| with(key, &[("path", path.clone())]);
        match self {
            EditError::Incomplete { block } => with(
                "incomplete",
                &[("block", block.to_string()), ("divider", DIVIDER.into()), ("replace", REPLACE.into())],
            ),
            EditError::NoFile { block } => {
                with("no file", &[("block", block.to_string()), ("search", SEARCH.into())])
            }
            EditError::CutOff => texts.get("cut off"),
            EditError::NoEdits => texts.get("no edits"),
            EditError::Path { path, error } => {
                with("path", &[("path", path.clone()), ("error", error.to_string())])
            }
            EditError::Exists(p) => path("exists", p),
            EditError::Missing(p) => path("missing", p),
            EditError::NotInFile(p) => path("not in file", p),
            EditError::Io { path, error } => {
                with("io", &[("path", path.clone()), ("error", error.to_string())])
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub path: String,
    pub search: String,
    pub replace: String,
}

const SEARCH: &str = "<<<<<<< SEARCH";
const DIVIDER: &str = "=======";
const REPLACE: &str = ">>>>>>> REPLACE";

/// The path named on the line before a block: the last non-empty line that is not a fence,
/// without backticks, `File:` or `#` in front.
fn path_before(lines: &[&str]) -> Option<String> {
    let line = lines.iter().rev().map(|l| l.trim()).find(|l| !l.is_empty() && !l.starts_with("```"))?;
    let line = line.trim_start_matches('#').trim();
    let line = line.strip_prefix("File:").or_else(|| line.strip_prefix("file:")).unwrap_or(line);
    let path = line.trim().trim_matches('`').trim_matches('*').trim();
    (!path.is_empty() && !path.contains(' ')).then(|| path.to_string())
}

/// Reads every edit block in `answer`; a block that is not complete is an error naming it.
pub fn parse(answer: &str) -> (Vec<Edit>, Vec<EditError>) {
    let lines: Vec<&str> = answer.lines().collect();
    let (mut edits, mut errors) = (Vec::new(), Vec::new());
    let mut i = 0;
    let mut block = 0;
    while i < lines.len() {
        if lines[i].trim() != SEARCH {
            i += 1;
            continue;
        }
        block += 1;
        let path = path_before(&lines[..i]);
        let start = i + 1;
        let divider = (start..lines.len()).find(|&j| lines[j].trim() == DIVIDER);
        let end = divider.and_then(|d| (d + 1..lines.len()).find(|&j| lines[j].trim() == REPLACE));
        let (Some(divider), Some(end)) = (divider, end) else {
            errors.push(EditError::Incomplete { block });
            break;
        };
        match path {
            Some(path) => edits.push(Edit {
                path,
                search: join(&lines[start..divider]),
                replace: join(&lines[divider + 1..end]),
            }),
            None => errors.push(EditError::NoFile { block }),
        }
        i = end + 1;
    }
    (edits, errors)
}

/// The edits in an answer, in whichever of the forms above it took. `shown` are the files the
/// model was shown (path, text); `truncated` says the answer was cut off at the length limit, so
/// a whole file in it cannot be trusted.
pub fn parse_any(answer: &str, shown: &[(String, String)], truncated: bool) -> (Vec<Edit>, Vec<EditError>) {
    let (edits, errors) = parse(answer);
    if !edits.is_empty() || !errors.is_empty() {
        return (edits, errors);
    }
    let hunks = diff_edits(answer);
    if !hunks.is_empty() {
        return (hunks, Vec::new());
    }
    match whole_file(answer, shown, truncated) {
        Some(edit) => (vec![edit], Vec::new()),
        None => (Vec::new(), Vec::new()),
    }
}

/// The hunks of a unified diff as edits; lines outside hunks (headers, fences, prose) are skipped.
fn diff_edits(answer: &str) -> Vec<Edit> {
    let mut edits = Vec::new();
    let mut path: Option<String> = None;
    let mut hunk: Option<(Vec<&str>, Vec<&str>)> = None;
    let mut flush = |hunk: &mut Option<(Vec<&str>, Vec<&str>)>, path: &Option<String>| {
        if let (Some((mut search, mut replace)), Some(path)) = (hunk.take(), path)
            && search != replace
        {
            // A blank line closing both sides is more likely the gap before the next hunk.
            while search.last() == Some(&"") && replace.last() == Some(&"") {
                search.pop();
                replace.pop();
            }
            edits.push(Edit { path: path.clone(), search: join(&search), replace: join(&replace) });
        }
    };
    for line in answer.lines() {
        if let Some(p) = line.strip_prefix("+++ ") {
            flush(&mut hunk, &path);
            let p = p.split('\t').next().unwrap_or("").trim();
            path = (p != "/dev/null").then(|| p.strip_prefix("b/").unwrap_or(p).to_string());
        } else if line.starts_with("--- ") || line.starts_with("diff ") || line.starts_with("```") {
            flush(&mut hunk, &path);
        } else if line.starts_with("@@") {
            flush(&mut hunk, &path);
            hunk = Some((Vec::new(), Vec::new()));
        } else if let Some((search, replace)) = hunk.as_mut() {
            // `\ No newline at end of file` and anything else ends nothing.
            if let Some((kind, text)) = hunk_line(line) {
                if kind != LineKind::Added {
                    search.push(text);
                }
                if kind != LineKind::Removed {
                    replace.push(text);
                }
            }
        }
    }
    flush(&mut hunk, &path);
    edits
}

/// One complete code block that is a whole new version of a shown file: the file named on the
/// line before it, or the only file shown. A block much shorter than the file is a snippet, not
/// the file.
fn whole_file(answer: &str, shown: &[(String, String)], truncated: bool) -> Option<Edit> {
    if truncated {
        return None;
    }
    let open = answer.find("```")?;
    let after = &answer[open + 3..];
    let (_, body) = after.split_once('\n')?;
    let close = body.find("\n```")?;
    let code = &body[..close + 1];
    let named = path_before(&answer[..open].lines().collect::<Vec<_>>());
    let (path, text) = match named.and_then(|n| shown.iter().find(|(p, _)| *p == n)) {
        Some(file) => file,
        None if shown.len() == 1 => &shown[0],
        None => return None,
    };
    (code.lines().count() * 2 >= text.lines().count()).then(|| Edit {
        path: path.clone(),
        search: text.clone(),
        replace: code.to_string(),
    })
}

fn join(lines: &[&str]) -> String {
    if lines.is_empty() { String::new() } else { format!("{}\n", lines.join("\n")) }
}

/// Applies one edit to the working copy in `root`.
pub fn apply(root: &Path, edit: &Edit) -> Result<(), EditError> {
    let path = || edit.path.clone();
    let io = |error| EditError::Io { path: path(), error };
    check_repo_path(&edit.path).map_err(|error| EditError::Path { path: path(), error })?;
    let file = root.join(&edit.path);
    if edit.search.trim().is_empty() {
        if file.exists() {
            return Err(EditError::Exists(path()));
        }
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        return std::fs::write(&file, &edit.replace).map_err(io);
    }
    let text = std::fs::read_to_string(&file).map_err(|_| EditError::Missing(path()))?;
    // An exact match must start a line; otherwise the loose match re-indents.
    let exact =
        text.match_indices(&edit.search).map(|(at, _)| at).find(|&at| at == 0 || text[..at].ends_with('\n'));
    let updated = match exact {
        Some(at) => format!("{}{}{}", &text[..at], edit.replace, &text[at + edit.search.len()..]),
        None => {
            replace_loosely(&text, &edit.search, &edit.replace).ok_or_else(|| EditError::NotInFile(path()))?
        }
    };
    std::fs::write(&file, updated).map_err(io)
}

/// Finds `search` line by line ignoring trailing spaces and a common change of indentation, and
/// puts `replace` there re-indented the same way.
fn replace_loosely(text: &str, search: &str, replace: &str) -> Option<String> {
    let hay: Vec<&str> = text.lines().collect();
    let needle: Vec<&str> = search.lines().collect();
    if needle.is_empty() || needle.len() > hay.len() {
        return None;
    }
    let indent = |l: &str| l.len() - l.trim_start().len();
    for at in 0..=hay.len() - needle.len() {
        let window = &hay[at..at + needle.len()];
        if !window.iter().zip(&needle).all(|(h, n)| h.trim() == n.trim()) {
            continue;
        }
        let first = needle.iter().position(|l| !l.trim().is_empty()).unwrap_or(0);
        let shift = indent(window[first]) as isize - indent(needle[first]) as isize;
        let moved: Vec<String> = replace
            .lines()
            .map(|l| {
                if l.trim().is_empty() {
                    String::new()
                } else if shift >= 0 {
                    format!("{}{l}", " ".repeat(shift as usize))
                } else {
                    l.chars().skip((-shift) as usize).collect()
                }
            })
            .collect();
        let mut out: Vec<String> = hay[..at].iter().map(|s| s.to_string()).collect();
        out.extend(moved);
        out.extend(hay[at + needle.len()..].iter().map(|s| s.to_string()));
        let mut joined = out.join("\n");
        if text.ends_with('\n') {
            joined.push('\n');
        }
        return Some(joined);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_read_with_their_paths() {
        let answer = "I will round instead.\n\n`src/d.py`\n```python\n<<<<<<< SEARCH\n    return int(x)\n=======\n    return round(x)\n>>>>>>> REPLACE\n```\nFile: new.py\n<<<<<<< SEARCH\n=======\nA = 1\n>>>>>>> REPLACE\n";
        let (edits, errors) = parse(answer);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            edits[0],
            Edit {
                path: "src/d.py".into(),
                search: "    return int(x)\n".into(),
                replace: "    return round(x)\n".into()
            }
        );
        assert_eq!((edits[1].path.as_str(), edits[1].search.as_str()), ("new.py", ""));
    }

    #[test]
    fn a_unified_diff_becomes_one_edit_per_hunk() {
        let answer = "```diff\ndiff --git a/src/d.py b/src/d.py\n--- a/src/d.py\n+++ b/src/d.py\n@@ -10,3 +10,3 @@ def f(x):\n     y = x\n-    return int(y)\n+    return round(y)\n\n@@ -40,2 +40,3 @@\n def g():\n+    '''Doc.'''\n     pass\n```\n";
        let (edits, errors) = parse_any(answer, &[], false);
        assert!(errors.is_empty());
        assert_eq!(
            edits,
            vec![
                Edit {
                    path: "src/d.py".into(),
                    search: "    y = x\n    return int(y)\n".into(),
                    replace: "    y = x\n    return round(y)\n".into()
                },
                Edit {
                    path: "src/d.py".into(),
                    search: "def g():\n    pass\n".into(),
                    replace: "def g():\n    '''Doc.'''\n    pass\n".into()
                },
            ]
        );
    }

    #[test]
    fn a_whole_file_replaces_the_file_shown() {
        let shown = vec![("d.py".to_string(), "def f(x):\n    return int(x)\n".to_string())];
        let answer = "Here it is:\n```python\ndef f(x):\n    return round(x)\n```\n";
        let (edits, _) = parse_any(answer, &shown, false);
        assert_eq!(
            edits,
            vec![Edit {
                path: "d.py".into(),
                search: shown[0].1.clone(),
                replace: "def f(x):\n    return round(x)\n".into()
            }]
        );
        assert!(
            parse_any(answer, &shown, true).0.is_empty(),
            "a cut-off answer may have lost the file's end"
        );
        let unclosed = "```python\ndef f(x):\n    return round(x)\n";
        assert!(parse_any(unclosed, &shown, false).0.is_empty());
        let two = vec![shown[0].clone(), ("e.py".to_string(), "x = 1\n".to_string())];
        assert!(parse_any(answer, &two, false).0.is_empty(), "which file is not said");
        let named = "e.py\n```python\nx = 2\n```\n";
        assert_eq!(parse_any(named, &two, false).0[0].path, "e.py");
        let long = vec![("d.py".to_string(), "a = 1\n".repeat(10))];
        assert!(parse_any(answer, &long, false).0.is_empty(), "a snippet is not the whole file");
    }

    #[test]
    fn broken_blocks_are_reported() {
        let (edits, errors) = parse("a.py\n<<<<<<< SEARCH\nx\n=======\ny\n");
        assert!(edits.is_empty());
        assert!(matches!(errors[..], [EditError::Incomplete { block: 1 }]), "{errors:?}");
        let (_, errors) = parse("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n");
        assert!(matches!(errors[..], [EditError::NoFile { block: 1 }]), "{errors:?}");
        // What the model reads of them is the shipped feedback prompt's.
        let texts = Texts::parse(include_str!("../../prompts/agent_feedback.md"), TEXTS).unwrap();
        assert_eq!(
            EditError::Incomplete { block: 2 }.text(&texts),
            "edit 2 is not complete: it needs `=======` and `>>>>>>> REPLACE` lines"
        );
        assert_eq!(
            EditError::NoFile { block: 1 }.text(&texts),
            "edit 1 names no file on the line before `<<<<<<< SEARCH`"
        );
        assert_eq!(
            EditError::NotInFile("a.py".into()).text(&texts),
            "the SEARCH text of the edit to `a.py` is not in the file; copy the lines exactly as they are"
        );
    }

    #[test]
    fn edits_apply_exactly_loosely_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.py"), "def f(x):\n    return int(x)\n").unwrap();
        let edit = |search: &str, replace: &str| Edit {
            path: "d.py".into(),
            search: search.into(),
            replace: replace.into(),
        };
        apply(dir.path(), &edit("    return int(x)\n", "    return round(x)\n")).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("d.py")).unwrap(),
            "def f(x):\n    return round(x)\n"
        );
        // Indented differently in the answer: found and re-indented.
        apply(dir.path(), &edit("return round(x)\n", "y = round(x)\nreturn y\n")).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("d.py")).unwrap(),
            "def f(x):\n    y = round(x)\n    return y\n"
        );
        assert!(matches!(
            apply(dir.path(), &edit("return nothing\n", "x\n")),
            Err(EditError::NotInFile(p)) if p == "d.py"
        ));
        let outside = Edit { path: "../x.py".into(), search: String::new(), replace: "x\n".into() };
        assert!(apply(dir.path(), &outside).is_err());
        let missing = Edit { path: "nope.py".into(), search: "a\n".into(), replace: "b\n".into() };
        assert!(matches!(apply(dir.path(), &missing), Err(EditError::Missing(p)) if p == "nope.py"));
    }
}
