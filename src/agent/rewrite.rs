//! The localize-then-rewrite mode of the built-in agent, for models too small to copy SEARCH text
//! exactly: the code around a commented line (the innermost function or method that holds it, with
//! its decorators; a window of lines at module level) is shown whole, the model answers with that
//! code rewritten, and the answer is spliced back in place of those lines.

use crate::llm::prompt::TextSpec;

/// Lines shown on each side of a commented line that no definition holds.
const WINDOW: usize = 8;
/// A definition longer than this is shown as a window instead.
const MAX_DEFINITION_LINES: usize = 120;

/// Lines `start..=end` of a file (from 1), to be rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    pub start: usize,
    pub end: usize,
}

pub(super) fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

pub(super) fn is_code(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// Where the header of the definition at `at` ends (the line with its closing `:`).
fn header_end(lines: &[&str], at: usize) -> usize {
    let mut depth = 0i32;
    for (i, line) in lines.iter().enumerate().skip(at) {
        let code = line.split(" #").next().unwrap_or("");
        depth += code.matches(['(', '[', '{']).count() as i32 - code.matches([')', ']', '}']).count() as i32;
        if depth <= 0 && code.trim_end().ends_with(':') {
            return i;
        }
    }
    at
}

/// The region to show for a comment on `line` (from 1) of `source`.
pub fn region(source: &str, line: usize) -> Region {
    let lines: Vec<&str> = source.lines().collect();
    let total = lines.len().max(1);
    let line = line.clamp(1, total);
    let mut best: Option<Region> = None;
    for (i, text) in lines.iter().enumerate() {
        if !opens_def(text) {
            continue;
        }
        let indent = indent_of(text);
        let body_from = header_end(&lines, i) + 1;
        // The body runs to the last code line before one at the header's indent or less.
        let mut end = body_from.saturating_sub(1);
        for (j, l) in lines.iter().enumerate().skip(body_from) {
            if is_code(l) && indent_of(l) <= indent {
                break;
            }
            if is_code(l) {
                end = j;
            }
        }
        let mut start = i;
        while start > 0
            && lines[start - 1].trim_start().starts_with('@')
            && indent_of(lines[start - 1]) == indent
        {
            start -= 1;
        }
        let found = Region { start: start + 1, end: end + 1 };
        // The innermost holder is the one that starts last.
        if found.start <= line && line <= found.end && best.is_none_or(|b| found.start >= b.start) {
            best = Some(found);
        }
    }
    match best {
        Some(r) if r.end - r.start < MAX_DEFINITION_LINES => r,
        _ => Region { start: line.saturating_sub(WINDOW).max(1), end: (line + WINDOW).min(total) },
    }
}

/// Extensions of languages whose definitions are blocks in braces.
const BRACE_LANGUAGES: &[&str] =
    &["c", "h", "cc", "cpp", "cxx", "hh", "hpp", "js", "jsx", "ts", "tsx", "java", "go", "rs", "cs", "kt"];

/// The region to show for a comment on `line` of the file `path`: in a language of braces, the
/// top-level block that holds the line with the lines of its signature above it (`static int` /
/// `f(PyObject *obj)` / `{` ... `}`), so the model rewrites a whole function and every brace
/// it opens is closed within what is spliced back (a window of lines cut simplejson 284's C
/// function after the previous one's closing brace, and each answer moved that brace); else
/// [`region`].
pub fn region_in(path: &str, source: &str, line: usize) -> Region {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    if BRACE_LANGUAGES.contains(&ext)
        && let Some(block) = brace_block(source, line)
        && block.end - block.start < MAX_DEFINITION_LINES
    {
        return block;
    }
    region(source, line)
}

/// The braces of a line of C-like code that count: those outside comments, strings and character
/// literals; `in_comment` carries an open `/* */` comment from line to line.
fn braces(line: &str, in_comment: &mut bool) -> Vec<char> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if *in_comment {
            if c == '*' && chars.peek() == Some(&'/') {
                chars.next();
                *in_comment = false;
            }
            continue;
        }
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => quote = Some(c),
            (None, '/') if chars.peek() == Some(&'/') => break,
            (None, '/') if chars.peek() == Some(&'*') => {
                chars.next();
                *in_comment = true;
            }
            (None, '{' | '}') => out.push(c),
            _ => {}
        }
    }
    out
}

/// The top-level brace block holding `line` (from 1), from the first line of its signature to its
/// closing brace; `None` when no such block holds it.
fn brace_block(source: &str, line: usize) -> Option<Region> {
    let lines: Vec<&str> = source.lines().collect();
    let (mut depth, mut in_comment, mut opened) = (0usize, false, None);
    for (i, text) in lines.iter().enumerate() {
        for b in braces(text, &mut in_comment) {
            match b {
                '{' => {
                    if depth == 0 {
                        opened = Some(i);
                    }
                    depth += 1;
                }
                _ => {
                    depth = depth.saturating_sub(1);
                    if depth == 0
                        && let Some(open) = opened.take()
                        && (open + 1..=i + 1).contains(&line)
                    {
                        return Some(Region { start: signature_start(&lines, open) + 1, end: i + 1 });
                    }
                }
            }
        }
    }
    None
}

/// The first line (from 0) of the signature of the block opened on line `open`: the lines above
/// it up to a blank line, the end of a statement or block, a comment's end or a preprocessor line.
fn signature_start(lines: &[&str], open: usize) -> usize {
    let mut start = open;
    while start > 0 {
        let above = lines[start - 1].trim();
        let ends = [";", "}", "*/", "{"].iter().any(|e| above.ends_with(e));
        if above.is_empty() || ends || above.starts_with('#') || above.starts_with("//") {
            break;
        }
        start -= 1;
    }
    start
}

/// Lines `region` of `source`.
pub fn cut(source: &str, region: Region) -> String {
    source.lines().skip(region.start - 1).take(region.end + 1 - region.start).collect::<Vec<_>>().join("\n")
}

/// The blocks of changes of `patch` (a unified diff) to `path` whose new side lies in `region`,
/// as the diff shows them, with their context lines: what the pull request changed in the code
/// shown. Empty when it changed none of it.
pub fn changes_in(patch: &str, path: &str, region: Region) -> String {
    crate::repo::hunks::parse(patch)
        .into_iter()
        .filter(|h| h.new_path.as_deref() == Some(path))
        .filter(|h| {
            let new_lines = h.text.lines().filter(|l| !l.starts_with('-')).count() as u64;
            let (from, to) = (h.new_start, h.new_start + new_lines.saturating_sub(1));
            from <= region.end as u64 && region.start as u64 <= to
        })
        .map(|h| h.text)
        .collect::<Vec<_>>()
        .join("...\n")
}

/// The lines of `region` (from 0, counted from its start) that `patch` adds to `path`.
pub fn added_lines(patch: &str, path: &str, region: Region) -> Vec<usize> {
    crate::repo::hunks::parse(patch)
        .iter()
        .filter(|h| h.new_path.as_deref() == Some(path))
        .flat_map(|h| h.added.iter().map(|(n, _)| *n as usize))
        .filter(|n| (region.start..=region.end).contains(n))
        .map(|n| n - region.start)
        .collect()
}

/// Whether `lines` (from 0) hold every code line of `code`: a mark on all of them tells nothing.
pub fn every_code_line(code: &str, lines: &[usize]) -> bool {
    code.lines().enumerate().all(|(i, l)| !is_code(l) || lines.contains(&i))
}

/// `code` with `mark` (a comment) put after each code line of `lines` (from 0).
pub fn mark(code: &str, lines: &[usize], mark: &str) -> String {
    code.lines()
        .enumerate()
        .map(|(i, l)| if lines.contains(&i) && is_code(l) { format!("{l}{mark}") } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Words at the end of a mark that say a trailing comment is a copy of it, altered or not.
const MARK_TAIL_WORDS: usize = 3;

/// `text` with `marks` taken off the end of every line that has them, in any order; and the
/// model's copies of a mark of three words or more: a trailing comment that ends in the mark's
/// last three words (pycodestyle 847's agent wrote "# addressed by the pull request", which
/// stayed in the file and failed the project's own style check), or a line that is only such a
/// comment, is taken off too.
pub fn unmark(text: &str, marks: &[&str]) -> String {
    let tails: Vec<String> = marks
        .iter()
        .map(|m| m.trim_start().trim_start_matches('#').split_whitespace().collect::<Vec<_>>())
        .filter(|words| words.len() >= MARK_TAIL_WORDS)
        .map(|words| words[words.len() - MARK_TAIL_WORDS..].join(" ").to_lowercase())
        .collect();
    let copied = |line: &str| -> Option<usize> {
        let lower = line.trim_end().to_lowercase();
        let tail = tails.iter().find(|t| lower.ends_with(t.as_str()))?;
        let before = lower[..lower.len() - tail.len()].chars().last();
        if before.is_some_and(|c| c.is_alphanumeric()) {
            return None;
        }
        line.rfind('#')
    };
    let bare = |mut line: &str| -> Option<String> {
        let had_text = !line.trim().is_empty();
        loop {
            if let Some(rest) = marks.iter().find_map(|m| line.strip_suffix(m)) {
                line = rest;
            } else if let Some(hash) = copied(line) {
                line = line[..hash].trim_end();
            } else {
                break;
            }
        }
        (!had_text || !line.trim().is_empty()).then(|| line.to_string())
    };
    let out: Vec<String> = text.lines().filter_map(bare).collect();
    let mut out = out.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `code` with the indentation all its code lines share taken off.
pub fn dedent(code: &str) -> String {
    let have = code.lines().filter(|l| is_code(l)).map(indent_of).min().unwrap_or(0);
    reindent(code, have, 0)
}

/// `source` with `region` replaced by `code`, its other lines and final newline as they were.
pub fn splice(source: &str, region: Region, code: &str) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut out: Vec<&str> = lines[..region.start - 1].to_vec();
    out.extend(code.lines());
    out.extend(&lines[region.end.min(lines.len())..]);
    let mut text = out.join("\n");
    if source.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// Whether `line` is a `def` (or `async def`) line.
fn opens_def(line: &str) -> bool {
    let t = line.trim_start();
    t.strip_prefix("async ").unwrap_or(t).starts_with("def ")
}

/// The line (from 0) of the `def` a definition opens with, after its decorators.
fn def_line(lines: &[&str]) -> Option<usize> {
    lines.iter().position(|l| opens_def(l))
}

/// The docstring of the definition `code` opens with: its lines (from 0) from the opening quotes
/// to the closing ones. None when `code` is no definition or its body opens with no string.
pub fn docstring(code: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let def = def_line(&lines)?;
    let first = (header_end(&lines, def) + 1..lines.len()).find(|&i| !lines[i].trim().is_empty())?;
    let text = lines[first].trim_start().trim_start_matches(['r', 'R', 'u', 'U']);
    let quote = [r#"""""#, "'''"].into_iter().find(|q| text.starts_with(q))?;
    if text[3..].contains(quote) {
        return Some((first, first));
    }
    let last = (first + 1..lines.len()).find(|&i| lines[i].contains(quote))?;
    Some((first, last))
}

/// Code shown to the model, with its docstring left out or not, and what puts it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub code: String,
    /// The docstring's lines as they were, when left out.
    hidden: Option<String>,
}

impl Shown {
    /// `original` as it is.
    pub fn whole(original: &str) -> Shown {
        Shown { code: original.to_string(), hidden: None }
    }

    /// `original` without the docstring of the definition it opens with, unless a line in `keep`
    /// (from 0) is in it: a long docstring is text the model must copy back unchanged, and a small
    /// model then answers with the code unchanged too.
    pub fn without_docstring(original: &str, keep: &[usize]) -> Shown {
        let Some((from, to)) = docstring(original) else { return Shown::whole(original) };
        if keep.iter().any(|k| (from..=to).contains(k)) {
            return Shown::whole(original);
        }
        let lines: Vec<&str> = original.lines().collect();
        let code = lines[..from].iter().chain(&lines[to + 1..]).copied().collect::<Vec<_>>().join("\n");
        Shown { code, hidden: Some(lines[from..=to].join("\n")) }
    }

    /// A rewrite of the shown code with the docstring put back after its definition's header,
    /// unless the rewrite holds a docstring of its own.
    pub fn restore(&self, rewritten: &str) -> String {
        let Some(hidden) = &self.hidden else { return rewritten.to_string() };
        let lines: Vec<&str> = rewritten.lines().collect();
        let Some(def) = def_line(&lines) else { return rewritten.to_string() };
        if docstring(rewritten).is_some() {
            return rewritten.to_string();
        }
        let at = header_end(&lines, def) + 1;
        lines[..at]
            .iter()
            .copied()
            .chain(hidden.lines())
            .chain(lines[at..].iter().copied())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Why an answer is not a rewrite of the code. What the model is told of it, with what to send
/// instead, is the feedback prompt's `[text KEY]` part ([`NotARewrite::key`], every key in
/// [`TEXTS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotARewrite {
    /// Cut off at the length limit.
    CutOff,
    NoCode,
    /// The code as it was.
    Unchanged,
    /// A part of the definition shown, not the whole.
    PartOfDefinition,
}

/// The texts the rewrite mode's feedback prompt must hold (none has placeholders).
pub const TEXTS: &[TextSpec] =
    &[("cut off", &[]), ("no code", &[]), ("unchanged", &[]), ("part of the definition", &[])];

impl NotARewrite {
    /// Its text's key in the feedback prompt.
    pub fn key(self) -> &'static str {
        match self {
            NotARewrite::CutOff => "cut off",
            NotARewrite::NoCode => "no code",
            NotARewrite::Unchanged => "unchanged",
            NotARewrite::PartOfDefinition => "part of the definition",
        }
    }
}

/// The code of the model's answer for `original`: the first fenced block (or the whole answer), moved
/// to the original's indentation when the model gave it another.
pub fn rewritten(answer: &str, original: &str, truncated: bool) -> Result<String, NotARewrite> {
    if truncated {
        return Err(NotARewrite::CutOff);
    }
    let code = code_of(answer);
    if code.trim().is_empty() {
        return Err(NotARewrite::NoCode);
    }
    // Both sides' least indentation: a window's first line may sit deeper than a later one (a
    // dict's entry, then the bracket that closes it).
    let least = |text: &str| text.lines().filter(|l| is_code(l)).map(indent_of).min().unwrap_or(0);
    let (want, have) = (least(original), least(&code));
    let code = reindent(&code, have, want);
    let same = |a: &str, b: &str| {
        a.lines()
            .map(str::trim_end)
            .filter(|l| !l.is_empty())
            .eq(b.lines().map(str::trim_end).filter(|l| !l.is_empty()))
    };
    if same(&code, original) {
        return Err(NotARewrite::Unchanged);
    }
    let first = |text: &str| text.lines().find(|l| is_code(l)).map(|l| l.trim().to_string());
    let opens_definition =
        |l: &str| l.starts_with("def ") || l.starts_with("async def ") || l.starts_with('@');
    if first(original).is_some_and(|l| opens_definition(&l))
        && !first(&code).is_some_and(|l| opens_definition(&l))
    {
        return Err(NotARewrite::PartOfDefinition);
    }
    Ok(code)
}

/// The code of an answer: its first fenced block, or the whole answer when it has none.
pub fn code_of(answer: &str) -> String {
    fenced(answer).unwrap_or_else(|| answer.trim_matches('\n').to_string())
}

/// The first fenced code block of `answer`, without its fences.
fn fenced(answer: &str) -> Option<String> {
    let open = answer.find("```")?;
    let body = &answer[open + 3..];
    let body = &body[body.find('\n')? + 1..];
    let close = if body.starts_with("```") { 0 } else { body.find("\n```").map_or(body.len(), |c| c + 1) };
    Some(body[..close].trim_end_matches('\n').to_string())
}

/// `code` with `have` columns of indentation replaced by `want` on every line.
fn reindent(code: &str, have: usize, want: usize) -> String {
    if have == want {
        return code.to_string();
    }
    code.lines()
        .map(|l| {
            if l.trim().is_empty() {
                String::new()
            } else {
                format!("{}{}", " ".repeat(want), &l[have.min(indent_of(l))..])
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "import os\n\n\nclass Box:\n    size = 1\n\n    @property\n    def area(self):\n        # square\n        return self.size ** 2\n\n    def grow(self, by=1):\n        def step(x):\n            return x + 1\n        self.size = step(self.size)\n\n\nVALUE = 3\n";

    #[test]
    fn the_innermost_definition_holds_the_line_with_its_decorators() {
        assert_eq!(region(SOURCE, 10), Region { start: 7, end: 10 });
        assert_eq!(region(SOURCE, 15), Region { start: 12, end: 15 });
        assert_eq!(region(SOURCE, 14), Region { start: 13, end: 14 });
        // At module level: a window of lines around it.
        assert_eq!(region(SOURCE, 18), Region { start: 10, end: 18 });
        assert_eq!(cut(SOURCE, Region { start: 7, end: 8 }), "    @property\n    def area(self):");
    }

    #[test]
    fn the_lines_a_pr_added_are_marked_and_the_marks_taken_off_again() {
        let patch = "diff --git a/r.py b/r.py\n--- a/r.py\n+++ b/r.py\n@@ -1,3 +1,4 @@\n def f(x):\n-    return x\n+    if x is None:\n+        return 0\n+    return x\n";
        let region = Region { start: 1, end: 3 };
        assert_eq!(added_lines(patch, "r.py", region), [1, 2], "line 4 is outside the region");
        assert_eq!(added_lines(patch, "other.py", region), Vec::<usize>::new());
        let code = "def f(x):\n    if x is None:\n\n        return 0";
        let marked = mark(code, &[1, 2, 3], "  # new");
        assert_eq!(
            marked, "def f(x):\n    if x is None:  # new\n\n        return 0  # new",
            "a blank line is not marked"
        );
        assert_eq!(unmark(&marked, &["  # new"]), code);
        assert_eq!(unmark("a  # new\nb  # newer\n", &["  # new"]), "a\nb  # newer\n");
        assert_eq!(unmark("a  # here  # new\nb  # new  # here", &["  # new", "  # here"]), "a\nb");
        // The model's copies of a mark of three words or more, altered, come off too; a line
        // that is only such a copy goes; other comments stay.
        let marks = ["  # added by the pull request", "  # the review comment points here"];
        let answer = "x = 1  # addressed by the pull request\n    # The review comment points here\ny = 2  # see the pull request\nz = 3  # not the pull requests\n\nw = 4\n";
        assert_eq!(unmark(answer, &marks), "x = 1\ny = 2\nz = 3  # not the pull requests\n\nw = 4\n");
        assert!(
            !every_code_line(code, &[1, 3]) && every_code_line(code, &[0, 1, 3]),
            "a blank line needs none"
        );
    }

    #[test]
    fn the_changes_shown_are_the_prs_blocks_in_the_region() {
        let patch = "diff --git a/r.py b/r.py\n--- a/r.py\n+++ b/r.py\n@@ -1,7 +1,8 @@\n a = 1\n-b = 2\n+b = 3\n c = 4\n d = 5\n e = 6\n f = 7\n g = 8\n+h = 9\n";
        assert_eq!(
            changes_in(patch, "r.py", Region { start: 1, end: 3 }),
            " a = 1\n-b = 2\n+b = 3\n c = 4\n d = 5\n"
        );
        assert_eq!(changes_in(patch, "r.py", Region { start: 8, end: 8 }), " f = 7\n g = 8\n+h = 9\n");
        assert_eq!(
            changes_in(patch, "r.py", Region { start: 1, end: 9 }),
            " a = 1\n-b = 2\n+b = 3\n c = 4\n d = 5\n...\n f = 7\n g = 8\n+h = 9\n"
        );
        assert_eq!(changes_in(patch, "other.py", Region { start: 1, end: 9 }), "");
    }

    #[test]
    fn a_window_that_starts_deeper_than_it_ends_is_not_shifted() {
        // pygments 2576: a window of a lexer's token table, from inside one state's list to the
        // next state's; the model sent it back as it was.
        let original = "            (r'\\.', Keyword),\n            (r'\\]', Keyword, '#pop'),\n        ],\n        'value': [\n            (_time, Literal.Date, '#pop'),\n";
        assert_eq!(
            rewritten(&format!("```python\n{original}```\n"), original, false),
            Err(NotARewrite::Unchanged)
        );
        let edited = original.replace("(r'\\.', Keyword)", "(r'\\s*\\.\\s*', Keyword)");
        assert_eq!(
            rewritten(&format!("```python\n{edited}```"), original, false).unwrap(),
            edited.trim_end()
        );
        // An answer moved as a whole comes back to the original's indentation.
        let moved: String = edited.lines().map(|l| format!("{}\n", &l[4..])).collect();
        assert_eq!(rewritten(&format!("```python\n{moved}```"), original, false).unwrap(), edited.trim_end());
    }

    #[test]
    fn a_rewrite_is_reindented_and_spliced_in_place() {
        let r = region(SOURCE, 15);
        let original = cut(SOURCE, r);
        let answer = "Here it is:\n```python\ndef grow(self, by=1):\n    self.size += by\n```\n";
        let code = rewritten(answer, &original, false).unwrap();
        assert_eq!(code, "    def grow(self, by=1):\n        self.size += by");
        let after = splice(SOURCE, r, &code);
        assert!(
            after.contains("    def grow(self, by=1):\n        self.size += by\n\n\nVALUE = 3\n"),
            "{after}"
        );
        assert!(after.starts_with("import os\n\n\nclass Box:"));
    }

    #[test]
    fn a_docstring_is_left_out_of_what_is_shown_and_put_back_in_the_rewrite() {
        let original = "    @cached\n    def area(self,\n             exact=True):\n        \"\"\"The area.\n\n        Long text.\n        \"\"\"\n        # square\n        return self.size ** 2";
        assert_eq!(docstring(original), Some((3, 6)));
        let shown = Shown::without_docstring(original, &[8]);
        let header = "    @cached\n    def area(self,\n             exact=True):\n";
        assert_eq!(shown.code, format!("{header}        # square\n        return self.size ** 2"));
        let answer = format!("{header}        return self.size * self.size");
        assert_eq!(
            shown.restore(&answer),
            format!(
                "{header}        \"\"\"The area.\n\n        Long text.\n        \"\"\"\n        return self.size * self.size"
            )
        );
        // A rewrite that writes a docstring of its own keeps it; a note inside the docstring
        // shows the code whole.
        let own = "    def area(self):\n        '''Squared.'''\n        return 1";
        assert_eq!(shown.restore(own), own);
        assert_eq!(Shown::without_docstring(original, &[5]), Shown::whole(original));
        assert_eq!(Shown::whole(original).restore("x"), "x");
        // One-line docstrings, and code without one.
        assert_eq!(docstring("def f():\n    r\"\"\"Doc.\"\"\"\n    return 1"), Some((1, 1)));
        assert_eq!(docstring("def f():\n    return 1"), None);
        assert_eq!(docstring("x = 1\ny = 2"), None);
    }

    #[test]
    fn an_answer_that_changes_nothing_or_is_not_the_definition_is_told_so() {
        let r = region(SOURCE, 10);
        let original = cut(SOURCE, r);
        let same = format!("```python\n{original}\n```");
        assert_eq!(rewritten(&same, &original, false), Err(NotARewrite::Unchanged));
        let part = "```python\n        return self.size * self.size\n```";
        assert_eq!(rewritten(part, &original, false), Err(NotARewrite::PartOfDefinition));
        assert_eq!(rewritten("```python\n```", &original, false), Err(NotARewrite::NoCode));
        assert_eq!(rewritten("def area(self):", &original, true), Err(NotARewrite::CutOff));
        // What the model reads of each is the shipped feedback prompt's.
        let texts =
            crate::llm::prompt::Texts::parse(include_str!("../../prompts/agent_rewrite_feedback.md"), TEXTS)
                .unwrap();
        assert_eq!(
            texts.get(NotARewrite::Unchanged.key()),
            "the answer repeats the code as it is, so it changes nothing; change it so that the reviewer's point is addressed"
        );
        // Each kind's key is one the prompt is checked for when it loads: the two lists agree.
        for kind in
            [NotARewrite::CutOff, NotARewrite::NoCode, NotARewrite::Unchanged, NotARewrite::PartOfDefinition]
        {
            assert!(TEXTS.iter().any(|(key, _)| *key == kind.key()), "{kind:?} is not in TEXTS");
            assert!(!texts.get(kind.key()).is_empty(), "{kind:?}");
        }
    }

    #[test]
    fn in_c_the_region_is_the_whole_function_that_holds_the_line() {
        let c = "static PyObject *\nquote(PyObject *s)\n{\n    return s;\n}\n\n/* { not a brace */\nstatic int\n_is_namedtuple(PyObject *obj)\n{\n    int rval = 0;\n    if (!PyTuple_Check(obj)) {\n        return 0;   // }\n    }\n    const char *b = \"}\";\n    return rval;\n}\n\nint x = 1;\n";
        let r = region_in("simplejson/_speedups.c", c, 12);
        assert_eq!(r, Region { start: 8, end: 17 });
        assert!(
            cut(c, r).starts_with("static int\n_is_namedtuple") && cut(c, r).ends_with("return rval;\n}")
        );
        assert_eq!(region_in("m.c", c, 4), Region { start: 1, end: 5 });
        // Outside every block: the window, as in Python.
        assert_eq!(region_in("m.c", c, 19), region(c, 19));
        // A Python file keeps its definitions, whatever braces it holds.
        assert_eq!(region_in("m.py", SOURCE, 10), region(SOURCE, 10));
    }
}
