//! A unified diff (as git writes it) read into files and hunks, each changed line with its number on
//! the side it belongs to: what attribution numbers for the model and what the relevance gate
//! looks for in a test's trace.

use serde::{Deserialize, Serialize};

/// One hunk of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    /// The file on the old side (`None` when the diff adds it).
    pub old_path: Option<String>,
    /// The file on the new side (`None` when the diff deletes it).
    pub new_path: Option<String>,
    /// First line of the hunk on each side, from 1 (0 for an empty side).
    pub old_start: u64,
    pub new_start: u64,
    /// Removed lines: number on the old side and text.
    pub removed: Vec<(u64, String)>,
    /// Added lines: number on the new side and text.
    pub added: Vec<(u64, String)>,
    /// The hunk's lines as the diff shows them, `+`, `-` or ` ` first.
    pub text: String,
}

impl Hunk {
    /// The old side's lines its changes cover: the removed lines, or the place an addition goes in
    /// (context lines left out).
    pub fn changed_span(&self) -> (u64, u64) {
        let lead = self.text.lines().take_while(|l| l.starts_with(' ')).count() as u64;
        let at = self.old_start + lead;
        match (self.removed.first(), self.removed.last()) {
            (Some((first, _)), Some((last, _))) => (*first, *last),
            _ => (at.saturating_sub(1), at),
        }
    }

    /// Whether a changed line of it does something when the code runs: not only blank lines,
    /// comments, imports, docstrings, decorators and `def`/`class` headers with their parameter
    /// lines (a changed annotation or docstring is no change of behaviour a test can reach).
    /// `old` and `new` are [`declarative_lines`] of the file's text on each side, read whole so
    /// that a docstring that opens before the hunk is known as one.
    pub fn changes_behaviour(&self, old: &[bool], new: &[bool]) -> bool {
        let does = |map: &[bool], n: u64| !map.get((n as usize).wrapping_sub(1)).copied().unwrap_or(false);
        self.removed.iter().any(|(n, _)| does(old, *n)) || self.added.iter().any(|(n, _)| does(new, *n))
    }

    /// The path it is known by: the new side's, or the old side's for a deletion.
    pub fn path(&self) -> &str {
        self.new_path.as_deref().or(self.old_path.as_deref()).unwrap_or("")
    }
}

/// Per line of `source` (from 0), whether it declares rather than does (see [`declarative_line`]),
/// docstrings and other string-only lines included: read by lines, counting triple quotes.
pub fn declarative_lines(source: &str) -> Vec<bool> {
    source
        .lines()
        .zip(quoted_lines(source))
        .map(|(line, quoted)| match quoted {
            Quoted::Docstring => true,
            // A string that code assigns or passes: a value a test sees.
            Quoted::Value => false,
            Quoted::Code => declarative_line(line.trim()),
        })
        .collect()
}

/// Per line of Python `source` (from 0), whether it is part of a docstring: a triple-quoted string
/// that is a statement of its own, not a value assigned or passed.
pub fn docstring_lines(source: &str) -> Vec<bool> {
    quoted_lines(source).into_iter().map(|q| q == Quoted::Docstring).collect()
}

/// Where a line stands as to triple-quoted strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quoted {
    /// Code, or the line that opens a string code assigns or passes.
    Code,
    /// In a docstring: one that opens a line of its own (the string is all the line holds), or a
    /// line inside it.
    Docstring,
    /// Inside a string that code assigns or passes, or the line that closes it.
    Value,
}

/// Per line of `source`, [`Quoted`]: read by lines, counting triple quotes.
fn quoted_lines(source: &str) -> Vec<Quoted> {
    // Inside a triple-quoted string: `Some(true)` for a docstring, `Some(false)` for a value.
    let mut open: Option<bool> = None;
    source
        .lines()
        .map(|line| {
            let t = line.trim();
            let quotes = t.matches("\"\"\"").count() + t.matches("'''").count();
            let bare = ["\"\"\"", "'''", "r\"\"\"", "r'''"].iter().any(|q| t.starts_with(q));
            let quoted = match open {
                Some(true) => Quoted::Docstring,
                Some(false) => Quoted::Value,
                None if quotes > 0 && bare => Quoted::Docstring,
                None => Quoted::Code,
            };
            if quotes % 2 == 1 {
                open = match open {
                    Some(_) => None,
                    None => Some(bare),
                };
            }
            quoted
        })
        .collect()
}

/// A line that declares rather than does: blank, a comment, an import, a decorator, a `def` or
/// `class` header, a parameter line of a signature (`name: Type,`, `self,`) or its close (`) -> T:`).
fn declarative_line(t: &str) -> bool {
    let starts = |p: &str| t.starts_with(p);
    if t.is_empty() || starts("#") || starts("@") || starts("import ") || starts("from ") {
        return true;
    }
    if starts("def ") || starts("async def ") || starts("class ") {
        return true;
    }
    if starts(")") && t.ends_with(':') {
        return true;
    }
    // A parameter: a name, maybe starred, with an annotation and no default call or operator.
    let param = t.trim_end_matches(',').trim_start_matches('*');
    let (name, annotation) = param.split_once(':').unwrap_or((param, ""));
    t.ends_with(',')
        && !name.is_empty()
        && name.trim().chars().all(|c| c.is_alphanumeric() || c == '_')
        && !annotation.contains('=')
        && !annotation.contains('(')
}

fn side_path(line: &str, prefix: &str) -> Option<String> {
    let path = line.strip_prefix(prefix)?.trim_end();
    let path = path.split('\t').next().unwrap_or(path);
    if path == "/dev/null" {
        return None;
    }
    Some(path.strip_prefix("a/").or_else(|| path.strip_prefix("b/")).unwrap_or(path).to_string())
}

/// `-a,b +c,d` of a hunk header: the two starts.
fn starts(header: &str) -> Option<(u64, u64)> {
    let inner = header.strip_prefix("@@ ")?.split(" @@").next()?;
    let mut parts = inner.split_whitespace();
    let old = parts.next()?.strip_prefix('-')?.split(',').next()?.parse().ok()?;
    let new = parts.next()?.strip_prefix('+')?.split(',').next()?.parse().ok()?;
    Some((old, new))
}

/// One file's part of a unified diff: the path on its `diff --git` line's `b/` side (empty when
/// that line has none), and its text, from that line to the next file's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSection<'a> {
    pub path: &'a str,
    pub text: &'a str,
}

/// What `diff` holds before its first file (usually nothing), and its files' sections in order.
/// A section starts at a line that starts with `diff --git `.
pub fn file_sections(diff: &str) -> (&str, Vec<FileSection<'_>>) {
    let starts: Vec<usize> = diff
        .match_indices("diff --git ")
        .map(|(i, _)| i)
        .filter(|&i| i == 0 || diff.as_bytes()[i - 1] == b'\n')
        .collect();
    let head = &diff[..starts.first().copied().unwrap_or(diff.len())];
    let ends = starts.iter().skip(1).copied().chain(std::iter::once(diff.len()));
    let sections = starts
        .iter()
        .zip(ends)
        .map(|(&from, to)| {
            let text = &diff[from..to];
            let header = text.lines().next().unwrap_or_default();
            FileSection { path: header.split_once(" b/").map_or("", |(_, b)| b), text }
        })
        .collect();
    (head, sections)
}

/// Context lines shown around a block of changes.
const SHOWN_CONTEXT: usize = 2;

/// The blocks of changes of `diff`, in its order: each run of removed and added lines with no
/// unchanged line between them is one [`Hunk`] (git's hunks, which merge changes up to six lines
/// apart, would tie unrelated edits together), shown with up to two unchanged lines around it.
pub fn parse(diff: &str) -> Vec<Hunk> {
    let mut parser = Parser::default();
    for line in diff.lines() {
        parser.line(line);
    }
    parser.close();
    parser.hunks
}

/// What a line inside a unified diff's hunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

/// A hunk line's kind and its text without the prefix. An empty line is an empty context line,
/// whose space some tools strip. `None` for anything else: `\ No newline at end of file`, a
/// header, prose.
pub fn hunk_line(line: &str) -> Option<(LineKind, &str)> {
    match line.chars().next() {
        Some('+') => Some((LineKind::Added, &line[1..])),
        Some('-') => Some((LineKind::Removed, &line[1..])),
        Some(' ') => Some((LineKind::Context, &line[1..])),
        None => Some((LineKind::Context, "")),
        Some(_) => None,
    }
}

/// Where [`parse`] is in a diff.
#[derive(Default)]
struct Parser {
    hunks: Vec<Hunk>,
    old_path: Option<String>,
    new_path: Option<String>,
    /// The line numbers, on each side, of the next line of the git hunk.
    old_line: u64,
    new_line: u64,
    /// Inside a git hunk (after its `@@` header).
    in_hunk: bool,
    /// Unchanged lines since the last change.
    context: Vec<String>,
    /// Whether the last block is still open (no unchanged line has ended it).
    open: bool,
}

impl Parser {
    fn line(&mut self, line: &str) {
        if line.starts_with("diff --git ") {
            self.close();
            self.in_hunk = false;
            (self.old_path, self.new_path) = (None, None);
        } else if !self.in_hunk && line.starts_with("--- ") {
            self.old_path = side_path(line, "--- ");
        } else if !self.in_hunk && line.starts_with("+++ ") {
            self.new_path = side_path(line, "+++ ");
        } else if line.starts_with("@@ ") {
            self.close();
            match starts(line) {
                Some((old, new)) => {
                    (self.old_line, self.new_line) = (old, new);
                    self.in_hunk = true;
                }
                None => self.in_hunk = false,
            }
        } else if self.in_hunk {
            match hunk_line(line) {
                Some((LineKind::Context, _)) => {
                    self.context.push(line.to_string());
                    self.old_line += 1;
                    self.new_line += 1;
                }
                Some((kind, text)) => self.change(kind, text),
                // "\ No newline at end of file"
                None if line.starts_with('\\') => {}
                None => {
                    self.close();
                    self.in_hunk = false;
                }
            }
        }
    }

    /// A removed or added line: a first change, or one after unchanged lines, begins a block.
    fn change(&mut self, kind: LineKind, text: &str) {
        if !self.open || !self.context.is_empty() {
            let lead = self.context.len().min(SHOWN_CONTEXT);
            let text = self.context[self.context.len() - lead..].iter().map(|l| format!("{l}\n")).collect();
            self.close();
            self.hunks.push(Hunk {
                old_path: self.old_path.clone(),
                new_path: self.new_path.clone(),
                old_start: self.old_line - lead as u64,
                new_start: self.new_line - lead as u64,
                removed: Vec::new(),
                added: Vec::new(),
                text,
            });
            self.open = true;
        }
        let Some(hunk) = self.hunks.last_mut() else { return };
        let prefix = if kind == LineKind::Added {
            hunk.added.push((self.new_line, text.to_string()));
            self.new_line += 1;
            '+'
        } else {
            hunk.removed.push((self.old_line, text.to_string()));
            self.old_line += 1;
            '-'
        };
        hunk.text.push(prefix);
        hunk.text.push_str(text);
        hunk.text.push('\n');
    }

    /// Ends the open block with up to [`SHOWN_CONTEXT`] of the unchanged lines after it.
    fn close(&mut self) {
        if self.open
            && let Some(h) = self.hunks.last_mut()
        {
            for line in self.context.iter().take(SHOWN_CONTEXT) {
                h.text.push_str(line);
                h.text.push('\n');
            }
        }
        self.open = false;
        self.context.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_splits_into_its_files_at_the_lines_that_start_them() {
        let diff = "preamble\ndiff --git a/x.py b/x.py\n+y = 'diff --git a/q b/q'\n+diff --git in a string\ndiff --git a/z b/z\n";
        let (head, sections) = file_sections(diff);
        assert_eq!(head, "preamble\n");
        let paths: Vec<&str> = sections.iter().map(|s| s.path).collect();
        assert_eq!(paths, ["x.py", "z"]);
        assert_eq!(
            sections[0].text,
            "diff --git a/x.py b/x.py\n+y = 'diff --git a/q b/q'\n+diff --git in a string\n"
        );
        assert_eq!(file_sections("no diff"), ("no diff", Vec::new()));
    }

    const DIFF: &str = "diff --git a/m.py b/m.py\nindex 1..2 100644\n--- a/m.py\n+++ b/m.py\n@@ -3,4 +3,5 @@ def f():\n a\n-b\n+B\n+C\n c\n d\n@@ -20,2 +21,1 @@\n x\n-y\ndiff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,2 @@\n+one\n+two\n\\ No newline at end of file\n";

    #[test]
    fn hunks_with_their_line_numbers_on_each_side() {
        let hunks = parse(DIFF);
        assert_eq!(hunks.len(), 3);
        assert_eq!(hunks[0].removed, vec![(4, "b".to_string())]);
        assert_eq!(hunks[0].added, vec![(4, "B".to_string()), (5, "C".to_string())]);
        assert_eq!(hunks[0].text, " a\n-b\n+B\n+C\n c\n d\n");
        assert_eq!(hunks[0].changed_span(), (4, 4));
        assert_eq!(hunks[2].changed_span(), (0, 0), "an addition at the top of a new file");
        assert_eq!(hunks[1].removed, vec![(21, "y".to_string())]);
        assert_eq!(hunks[1].path(), "m.py");
        assert_eq!(hunks[2].old_path, None);
        assert_eq!(hunks[2].path(), "new.py");
        assert_eq!(hunks[2].added.iter().map(|(n, _)| *n).collect::<Vec<_>>(), vec![1, 2]);
    }
}
