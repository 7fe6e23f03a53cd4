//! What the PR's fix did to the commented lines (issue 27): a fact of the PR, read from git, that
//! the wording cannot give. A comment whose lines the fix leaves as they were was not acted on
//! there; one whose lines the fix only lays out anew or renames asked for the same behaviour
//! written another way. Neither can yield a test that fails on the reviewed code and passes on the
//! fixed code at that place.
//!
//! The input is the unified diff of the commented file from the reviewed commit to the fixed one
//! (empty when the fix left the file alone), and the commented lines' span in the reviewed file.

use super::suggestion::{Comments, tokens};
use crate::record::ReviewComment;
use crate::repo::align::align;
use crate::repo::hunks;

/// Lines above and below the commented ones whose change still counts as a change at the comment:
/// a fix often lands on the line after the one commented (a missing check, a `return` added).
pub const NEAR: u64 = 3;

/// What the fix did at the commented lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixChange {
    /// No fixed side, no diff, or the commented lines could not be placed.
    Unknown,
    /// The fix changed nothing within [`NEAR`] lines of the commented ones.
    Untouched,
    /// It changed only layout: the same tokens (whitespace, line breaks, quotes, comments, a
    /// trailing comma).
    Layout,
    /// It renamed: the same tokens but for names, each old name swapped for one new name wherever
    /// it occurs, and each of them bound there or used more than once (a variable's rename, not
    /// one call swapped for another).
    Renamed,
    /// Only Python docstrings changed (and maybe layout and comments): prose no test runs.
    Documentation,
    /// Other tokens: what runs may differ.
    Behaviour,
}

/// What the fix, given as `diff` (reviewed to fixed, of the commented file at `path`), did at
/// lines `start..=end` of the reviewed file: within [`NEAR`] lines of them, and anywhere in
/// `definition` (the lines of the function or class they are in, when known: a comment on a
/// `def` line asking for an empty case is answered by a check at the body's top).
pub fn change_near(
    diff: &str,
    path: &str,
    (start, end): (u64, u64),
    definition: Option<(u64, u64)>,
) -> FixChange {
    change_near_with(diff, path, (start, end), definition, None)
}

/// [`change_near`], with each side's docstring lines ([`hunks::docstring_lines`]) when they are known.
fn change_near_with(
    diff: &str,
    path: &str,
    (start, end): (u64, u64),
    definition: Option<(u64, u64)>,
    docstrings: Option<(&[bool], &[bool])>,
) -> FixChange {
    let all = hunks::parse(diff);
    let within = |(from, to): (u64, u64)| -> Vec<&hunks::Hunk> {
        all.iter()
            .filter(|h| {
                let (first, last) = h.changed_span();
                first <= to && last >= from
            })
            .collect()
    };
    // The lines near the comment and the whole function or class around them: a docstring
    // reworded next to a `class` line says nothing of what the fix did to the class's methods.
    let mut near = within((start.saturating_sub(NEAR), end + NEAR));
    for hunk in definition.map(within).unwrap_or_default() {
        if !near.iter().any(|h| std::ptr::eq(*h, hunk)) {
            near.push(hunk);
        }
    }
    if near.is_empty() {
        return FixChange::Untouched;
    }
    let joined = |lines: &[(u64, String)], skip: &dyn Fn(u64) -> bool| {
        lines.iter().filter(|(n, _)| !skip(*n)).map(|(_, t)| t.as_str()).collect::<Vec<_>>().join("\n")
    };
    let comments = Comments::of(path);
    let code = |side: fn(&hunks::Hunk) -> &Vec<(u64, String)>, skip: &dyn Fn(u64) -> bool| -> Vec<String> {
        near.iter().flat_map(|h| tokens(&joined(side(h), skip), comments)).collect()
    };
    let all_lines = |_: u64| false;
    let (removed, added) = (code(|h| &h.removed, &all_lines), code(|h| &h.added, &all_lines));
    if removed == added {
        return FixChange::Layout;
    }
    if renamed(&removed, &added) {
        return FixChange::Renamed;
    }
    if let Some((old, new)) = docstrings {
        let marked = |map: &[bool], n: u64| {
            (n as usize).checked_sub(1).and_then(|i| map.get(i)).copied().unwrap_or(false)
        };
        let (in_old, in_new) = (|n| marked(old, n), |n| marked(new, n));
        if code(|h| &h.removed, &in_old) == code(|h| &h.added, &in_new) {
            return FixChange::Documentation;
        }
    }
    FixChange::Behaviour
}

/// What the fix did at `comment`, from `diff`, the commented file's diff from the reviewed commit
/// to the fix (empty: the file was left alone). Where the diff shows the whole file
/// ([`whole_sides`]) the comment is placed in it as the context stage places it, the function or
/// class around it is read, and, in Python, its docstrings; otherwise the hunk's last line is the
/// comment's and only the lines near it count.
pub fn at_comment(diff: &str, comment: &ReviewComment) -> FixChange {
    let path = comment.path.as_deref().unwrap_or("");
    if diff.trim().is_empty() {
        return FixChange::Untouched;
    }
    if let Some((old, new)) = whole_sides(diff)
        && let Ok(at) = align(comment, &old)
    {
        let definition = enclosing_definition(&old, at.start, at.end);
        let python = matches!(path.rsplit_once('.').map(|(_, e)| e), Some("py" | "pyi" | "pyx"));
        let marks = python.then(|| (hunks::docstring_lines(&old), hunks::docstring_lines(&new)));
        let docstrings = marks.as_ref().map(|(o, n)| (o.as_slice(), n.as_slice()));
        return change_near_with(diff, path, (at.start, at.end), definition, docstrings);
    }
    crate::repo::align::hunk_end(comment.diff_hunk.as_deref().unwrap_or(""))
        .map_or(FixChange::Unknown, |end| change_near(diff, path, (end, end), None))
}

/// Words of the languages curate reads that are not names: swapping one (`and` for `or`, `is` for
/// `is not`) changes what runs.
const KEYWORDS: [&str; 40] = [
    "and", "or", "not", "is", "in", "if", "else", "elif", "for", "while", "return", "yield", "def", "class",
    "lambda", "with", "as", "try", "except", "finally", "raise", "import", "from", "pass", "break",
    "continue", "await", "async", "True", "False", "None", "true", "false", "null", "nil", "let", "const",
    "var", "fn", "func",
];

fn is_name(token: &str) -> bool {
    token.starts_with(|c: char| c.is_alphabetic() || c == '_') && !KEYWORDS.contains(&token)
}

/// Whether `after` is `before` with names swapped consistently (see [`FixChange::Renamed`]).
fn renamed(before: &[String], after: &[String]) -> bool {
    if before.len() != after.len() {
        return false;
    }
    let mut swaps: Vec<(&str, &str)> = Vec::new();
    for (old, new) in before.iter().zip(after) {
        if old == new {
            continue;
        }
        if !is_name(old) || !is_name(new) {
            return false;
        }
        match swaps.iter().find(|(o, n)| o == old || n == new) {
            Some((o, n)) if (o, n) == (&old.as_str(), &new.as_str()) => {}
            Some(_) => return false,
            None => swaps.push((old, new)),
        }
    }
    // A name the change never uses itself must keep its spelling elsewhere in the lines: one
    // occurrence swapped for another name is another call or attribute, which may behave otherwise.
    let bound = |name: &str| {
        let at: Vec<usize> = before.iter().enumerate().filter(|(_, t)| *t == name).map(|(i, _)| i).collect();
        // An attribute or method (`os.path.exists` to `os.path.isdir`) is another object's name:
        // swapping it calls something else, however often.
        if at.iter().any(|&i| i > 0 && before[i - 1] == ".") {
            return false;
        }
        at.len() > 1
            || at.iter().any(|&i| {
                let previous = i.checked_sub(1).map(|p| before[p].as_str());
                let next = before.get(i + 1).map(String::as_str);
                let after_next = before.get(i + 2).map(String::as_str);
                matches!(
                    previous,
                    Some("def" | "class" | "fn" | "func" | "let" | "var" | "const" | "as" | "for")
                ) || (next == Some("=") && after_next != Some("="))
            })
    };
    // A new name the lines already used merges two variables into one.
    let fresh = |new: &str| !before.iter().any(|t| t == new) || swaps.iter().any(|(o, _)| *o == new);
    !swaps.is_empty() && swaps.iter().all(|(old, new)| bound(old) && fresh(new))
}

/// Words that open a function or class in the languages curate reads.
const DEFINITIONS: [&str; 7] = ["def ", "async def ", "class ", "fn ", "func ", "function ", "pub fn "];

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The lines (from 1) of the innermost function or class of `text` that holds lines
/// `start..=end`, read by indentation: the nearest line at or above `start` that opens one less
/// indented than the line commented (or the commented line itself), to the line before the next
/// one indented no deeper than it (blank lines included).
pub fn enclosing_definition(text: &str, start: u64, end: u64) -> Option<(u64, u64)> {
    let lines: Vec<&str> = text.lines().collect();
    let at = (start as usize).checked_sub(1).filter(|&i| i < lines.len())?;
    let opens = |l: &str| DEFINITIONS.iter().any(|d| l.trim_start().starts_with(d));
    let commented = indent(lines[at]);
    let head = (0..=at).rev().find(|&i| {
        let l = lines[i];
        opens(l) && (i == at || (indent(l) < commented && !l.trim().is_empty()))
    })?;
    let depth = indent(lines[head]);
    // A signature over several lines ends at the first line after the head that is deeper.
    let body_end = (head + 1..lines.len())
        .find(|&i| {
            let l = lines[i];
            !l.trim().is_empty() && indent(l) <= depth && !l.trim_start().starts_with([')', ']', '}'])
        })
        .unwrap_or(lines.len());
    // The blank lines after its last statement count: a method added at a class's end goes there.
    let last = body_end.saturating_sub(1).max(head);
    ((last + 1) as u64 >= end).then_some(((head + 1) as u64, (last + 1) as u64))
}

/// Both sides of the file, when `diff` shows all of it: one hunk from its first line, as `git diff
/// --unified=N` writes it with N at least the file's length (the old side: context and removed
/// lines; the new side: context and added lines). A gold row's fix diff made so lets the comment
/// be placed and its definition read as the stage does from the mirror.
fn whole_sides(diff: &str) -> Option<(String, String)> {
    let mut lines = diff.lines().skip_while(|l| !l.starts_with("@@ "));
    let header = lines.next()?;
    if !header.starts_with("@@ -1,") && !header.starts_with("@@ -1 ") {
        return None;
    }
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for line in lines.filter(|l| !l.starts_with('\\')) {
        // Anything else, a second hunk's header: the lines between the two are not shown.
        let (kind, text) = hunks::hunk_line(line)?;
        if kind != hunks::LineKind::Added {
            old.push(text);
        }
        if kind != hunks::LineKind::Removed {
            new.push(text);
        }
    }
    let text = |lines: Vec<&str>| lines.iter().map(|l| format!("{l}\n")).collect::<String>();
    Some((text(old), text(new)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A diff of `path` with one git hunk starting at `line` on both sides.
    fn diff(line: u64, body: &str) -> String {
        let old = body.lines().filter(|l| !l.starts_with('+')).count();
        let new = body.lines().filter(|l| !l.starts_with('-')).count();
        format!("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -{line},{old} +{line},{new} @@\n{body}")
    }

    #[test]
    fn a_fix_elsewhere_in_the_file_leaves_the_comment_untouched() {
        let d = diff(40, " a = 1\n-b = 2\n+b = 3\n c = 4\n");
        assert_eq!(change_near(&d, "m.py", (10, 10), None), FixChange::Untouched);
        assert_eq!(change_near("", "m.py", (10, 10), None), FixChange::Untouched);
        // Three lines away still counts: the check the reviewer asked for lands below the line.
        assert_eq!(change_near(&d, "m.py", (38, 38), None), FixChange::Behaviour);
        // Further away, inside the commented definition: the empty case checked at its top.
        assert_eq!(change_near(&d, "m.py", (30, 30), Some((30, 45))), FixChange::Behaviour);
        assert_eq!(change_near(&d, "m.py", (30, 30), Some((30, 35))), FixChange::Untouched);
    }

    #[test]
    fn the_definition_around_the_commented_lines_is_read_by_indentation() {
        let text = "import os\n\ndef f(a,\n      b):\n    x = 1\n\n    return x\n\n\nclass C:\n    def g(self):\n        pass\n    y = 2\n";
        assert_eq!(enclosing_definition(text, 5, 5), Some((3, 9)), "a body line, blank lines after it too");
        assert_eq!(enclosing_definition(text, 3, 3), Some((3, 9)), "the def line itself");
        assert_eq!(enclosing_definition(text, 12, 12), Some((11, 12)), "the innermost");
        assert_eq!(enclosing_definition(text, 13, 13), Some((10, 13)), "the class around a field");
        assert_eq!(enclosing_definition(text, 1, 1), None, "top-level code");
    }

    #[test]
    fn layout_renames_and_behaviour_are_told_apart() {
        let layout = diff(10, "-x = f(a,b)\n+x = f(\n+    a, b,\n+)\n");
        assert_eq!(change_near(&layout, "m.py", (10, 10), None), FixChange::Layout);
        let quotes_and_comment = diff(10, "-y = 'a'  # old\n+y = \"a\"\n");
        assert_eq!(change_near(&quotes_and_comment, "m.py", (10, 10), None), FixChange::Layout);
        let rename = diff(10, "-tmp = load()\n-return tmp\n+data = load()\n+return data\n");
        assert_eq!(change_near(&rename, "m.py", (10, 11), None), FixChange::Renamed);
        let bound_once = diff(10, "-for i in items:\n+for item in items:\n");
        assert_eq!(change_near(&bound_once, "m.py", (10, 10), None), FixChange::Renamed);
        // One call swapped for another is not a rename: `isfile` is not `exists`.
        let twice = diff(
            10,
            "-a = os.path.exists(p)\n-b = os.path.exists(q)\n+a = os.path.isdir(p)\n+b = os.path.isdir(q)\n",
        );
        assert_eq!(change_near(&twice, "m.py", (10, 11), None), FixChange::Behaviour);
        let call = diff(10, "-ok = os.path.exists(p)\n+ok = os.path.isfile(p)\n");
        assert_eq!(change_near(&call, "m.py", (10, 10), None), FixChange::Behaviour);
        let keyword = diff(10, "-if a and b:\n+if a or b:\n");
        assert_eq!(change_near(&keyword, "m.py", (10, 10), None), FixChange::Behaviour);
        let value = diff(10, "-if n > 0:\n+if n >= 0:\n");
        assert_eq!(change_near(&value, "m.py", (10, 10), None), FixChange::Behaviour);
        // Two old names for one new one merge variables: behaviour.
        let merged = diff(10, "-a = 1\n-b = a\n+a = 1\n+a = a\n");
        assert_eq!(change_near(&merged, "m.py", (10, 11), None), FixChange::Behaviour);
    }

    #[test]
    fn a_diff_with_the_whole_file_as_context_gives_both_files() {
        let whole = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 3\n c = 4\n";
        assert_eq!(
            whole_sides(whole),
            Some(("a = 1\nb = 2\nc = 4\n".to_string(), "a = 1\nb = 3\nc = 4\n".to_string()))
        );
        let part = "--- a/m.py\n+++ b/m.py\n@@ -10,2 +10,2 @@\n-b = 2\n+b = 3\n c = 4\n";
        assert_eq!(whole_sides(part), None, "a hunk that starts further down shows part of it");
        let two = "@@ -1,1 +1,1 @@\n-a\n+b\n@@ -9,1 +9,1 @@\n-c\n+d\n";
        assert_eq!(whole_sides(two), None);
    }

    /// A comment on line `line` of `m.py`, its hunk the file's first `line` lines as added.
    fn comment_on(reviewed: &str, line: u64) -> ReviewComment {
        let shown: Vec<String> = reviewed.lines().take(line as usize).map(|l| format!("+{l}")).collect();
        ReviewComment {
            text: "c".into(),
            path: Some("m.py".into()),
            diff_hunk: Some(format!("@@ -0,0 +1,{line} @@\n{}", shown.join("\n"))),
            line: Some(line),
            start_line: None,
            original_line: None,
            original_start_line: None,
            index: 1,
            by_pr_author: None,
            is_reply: None,
            extra: Default::default(),
        }
    }

    #[test]
    fn a_whole_file_diff_places_the_comment_and_tells_docstrings_from_code() {
        let reviewed =
            "def f(force):\n    \"\"\"Overwrite.\n\n    force: whether to.\n    \"\"\"\n    return force\n";
        let diff = |fixed: &str| {
            crate::repo::workspace::whole_file_diff("m.py", reviewed.as_bytes(), fixed.as_bytes()).unwrap()
        };
        let documented = reviewed.replace("whether to.", "whether to overwrite\n        existing files.");
        assert_eq!(at_comment(&diff(&documented), &comment_on(reviewed, 4)), FixChange::Documentation);
        let changed = reviewed.replace("return force", "return not force");
        assert_eq!(at_comment(&diff(&changed), &comment_on(reviewed, 4)), FixChange::Behaviour);
        let both = documented.replace("return force", "return not force");
        assert_eq!(at_comment(&diff(&both), &comment_on(reviewed, 4)), FixChange::Behaviour);
        assert_eq!(at_comment("", &comment_on(reviewed, 4)), FixChange::Untouched);
        // A string that code assigns is a value, not a docstring.
        let assigned = "MESSAGE = \"\"\"hello\n\"\"\"\n";
        let fixed = diff_of(assigned, &assigned.replace("hello", "bye"));
        assert_eq!(at_comment(&fixed, &comment_on(assigned, 1)), FixChange::Behaviour);
        assert_eq!(hunks::docstring_lines(reviewed), [false, true, true, true, true, false]);
        // A field commented; the fix rewords the class's docstring and adds a method at its end,
        // after the blank lines: the class's behaviour changed.
        let class = "class V:\n    \"\"\"A version.\"\"\"\n\n    major: int\n    pre: str = ''\n\n\ndef parse():\n    pass\n";
        let fixed = class
            .replace("A version.", "A version, ordered by precedence.")
            .replace("    pre: str = ''\n", "    pre: str = ''\n\n    def key(self):\n        return 1\n");
        assert_eq!(at_comment(&diff_of(class, &fixed), &comment_on(class, 5)), FixChange::Behaviour);
        // On the `class` line itself, next to the reworded docstring: the same.
        assert_eq!(at_comment(&diff_of(class, &fixed), &comment_on(class, 1)), FixChange::Behaviour);
    }

    fn diff_of(old: &str, new: &str) -> String {
        crate::repo::workspace::whole_file_diff("m.py", old.as_bytes(), new.as_bytes()).unwrap()
    }
}
