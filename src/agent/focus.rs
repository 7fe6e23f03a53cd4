//! The rewrite mode's narrower question: after an answer that sent the definition back unchanged,
//! the model is asked for the commented statement alone (with the definition shown around it),
//! and its answer replaces only that statement. A small model asked to rewrite forty lines copies
//! them; asked for the one `raise ValueError(` the comment is on, it has little left to copy.

use super::rewrite::{Region, indent_of, is_code};

/// A compound statement's body up to this many lines is asked for with its header: an answer to
/// `if x:` alone comes back with the body, which would then be there twice.
const SMALL_BODY: usize = 6;

/// Extensions of the files whose statements [`statement_in`] finds (Python's).
const PYTHON: &[&str] = &["py", "pyi", "pyx", "pxd"];

/// The lines of the Python statement of `source` that holds `line` (from 1), within `within`:
/// a statement over several lines (open brackets, a string in triple quotes, a backslash) whole;
/// a compound statement's header with its body when that body is small. None for a file that is
/// not Python, or a line that is blank or only a comment.
pub fn statement_in(path: &str, source: &str, line: usize, within: Region) -> Option<Region> {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    if !PYTHON.contains(&ext) || !(within.start..=within.end).contains(&line) {
        return None;
    }
    let lines: Vec<&str> = source.lines().collect();
    let last = within.end.min(lines.len());
    let text = |n: usize| lines[n - 1];
    if !is_code(lines.get(line - 1)?) {
        return None;
    }
    let starts = logical_starts(&lines, within.start, last);
    let start = *starts.iter().rev().find(|&&s| s <= line)?;
    let end = starts.iter().find(|&&s| s > line).map_or(last, |&next| next - 1);
    // The statement ends at its last code line, not at blank lines after it.
    let end = (start..=end).rev().find(|&n| is_code(text(n))).unwrap_or(start);
    let header = text(end).split(" #").next().unwrap_or("").trim_end().ends_with(':');
    if !header {
        return Some(Region { start, end });
    }
    let indent = indent_of(text(start));
    let body_end = (end + 1..=last)
        .take_while(|&n| !is_code(text(n)) || indent_of(text(n)) > indent)
        .filter(|&n| is_code(text(n)))
        .last();
    match body_end {
        Some(b) if b - end <= SMALL_BODY => Some(Region { start, end: b }),
        _ => Some(Region { start, end }),
    }
}

/// The lines (from 1) in `first..=last` that begin a logical line: not inside brackets, a string
/// or after a backslash.
fn logical_starts(lines: &[&str], first: usize, last: usize) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut depth = 0usize;
    // The open string's quote, and whether it is triple.
    let mut string: Option<(char, bool)> = None;
    let mut continued = false;
    for n in first..=last {
        if depth == 0 && string.is_none() && !continued {
            starts.push(n);
        }
        let chars: Vec<char> = lines[n - 1].chars().collect();
        let mut i = 0;
        continued = false;
        while i < chars.len() {
            let c = chars[i];
            let triple = |q: char| chars.get(i + 1) == Some(&q) && chars.get(i + 2) == Some(&q);
            match string {
                Some(_) if c == '\\' => {
                    // A backslash at the end of a line in a string continues it.
                    continued = i + 1 == chars.len();
                    i += 1;
                }
                Some((q, true)) if c == q && triple(q) => {
                    string = None;
                    i += 2;
                }
                Some((q, false)) if c == q => string = None,
                Some(_) => {}
                None => match c {
                    '#' => break,
                    '\'' | '"' if triple(c) => {
                        string = Some((c, true));
                        i += 2;
                    }
                    '\'' | '"' => string = Some((c, false)),
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth = depth.saturating_sub(1),
                    '\\' if i + 1 == chars.len() => continued = true,
                    _ => {}
                },
            }
            i += 1;
        }
        // A quote of one character does not run past its line unless a backslash continues it.
        if matches!(string, Some((_, false))) && !continued {
            string = None;
        }
    }
    starts
}

/// `code` (an answer for the statement `focus` of `source`, asked with the lines `shown` around
/// it) without the lines at its start that copy the lines before `focus`, and those at its end
/// that copy the lines after it: shown the definition around, a model often sends neighbours back
/// with its change. A copy is either next to the statement or, of two lines or more, runs from the
/// first shown line on or up to the last (the model may leave out a line between the copy and the
/// statement: that line stays as it is). Never the whole answer.
pub fn without_copied_neighbours(code: &str, source: &str, focus: Region, shown: Region) -> String {
    let lines: Vec<&str> = source.lines().collect();
    let mut answer: Vec<&str> = code.lines().collect();
    let before = &lines[..focus.start - 1];
    let after = &lines[focus.end.min(lines.len())..];
    let shown_before = &before[(shown.start - 1).min(before.len())..];
    let shown_after = &after[..shown.end.saturating_sub(focus.end).min(after.len())];
    let shown_after = &shown_after[..shown_after.iter().rposition(|l| is_code(l)).map_or(0, |i| i + 1)];
    let lead = copied(&answer, before, Copy::Ending).max(copied(&answer, shown_before, Copy::Opening));
    answer.drain(..lead);
    // A copy at the end is one at the start with every side read backwards.
    let tail = copied(&backwards(&answer), &backwards(after), Copy::Ending).max(copied(
        &backwards(&answer),
        &backwards(shown_after),
        Copy::Opening,
    ));
    answer.truncate(answer.len() - tail);
    answer.join("\n")
}

fn backwards<'a>(lines: &[&'a str]) -> Vec<&'a str> {
    lines.iter().rev().copied().collect()
}

/// Which lines of a neighbouring side a copy at the start of an answer repeats.
#[derive(Clone, Copy, PartialEq)]
enum Copy {
    /// The side's last lines, up to the statement.
    Ending,
    /// The side's first lines (from where the shown lines begin), two at least.
    Opening,
}

/// How many lines at the start of `answer` (never all of them) repeat `side`'s ending or opening.
fn copied(answer: &[&str], side: &[&str], from: Copy) -> usize {
    let same = |a: &&str, b: &&str| a.trim() == b.trim();
    let least = if from == Copy::Opening { 2 } else { 1 };
    (least..=side.len().min(answer.len().saturating_sub(1)))
        .rev()
        .find(|&k| {
            let copy = if from == Copy::Ending { &side[side.len() - k..] } else { &side[..k] };
            answer[..k].iter().zip(copy).all(|(a, b)| same(a, b))
        })
        .unwrap_or(0)
}

/// Whether an answer to the narrower question is the whole definition instead: it opens with the
/// definition's first line, which the statement does not, or holds far more lines than the
/// statement and most of the definition's, and opens like the definition or answers for its
/// `def` line (marshmallow 1998: asked for `def __init__(...)` alone, the model sent the whole
/// method back with a parameter added, which spliced in at the `def` line doubled the body).
pub fn is_whole(code: &str, shown: &str, statement: &str) -> bool {
    let first = |text: &str| text.lines().find(|l| is_code(l)).map(|l| l.trim().to_string());
    let count = |text: &str| text.lines().filter(|l| is_code(l)).count();
    let opens_like_shown = first(code).is_some() && first(code) == first(shown);
    if opens_like_shown && first(statement) != first(shown) {
        return true;
    }
    let header =
        first(statement).is_some_and(|l| ["def ", "async def ", "class "].iter().any(|k| l.starts_with(k)));
    (opens_like_shown || header) && count(code) > count(statement) + 3 && 2 * count(code) >= count(shown)
}

/// An answer to the narrower question that is the whole definition (`shown`) but stops copying it
/// before its end, completed with the rest: more-itertools 545's model, asked for the `def` line,
/// sent the definition back with two lines added under it and left off its last block, which
/// spliced in as a rewrite deleted what the question never asked about. None when the answer's
/// last two code lines are not a run of the definition's that is found once and has code after
/// it, or when the answer already holds the first code line of that rest.
pub fn with_rest_kept(code: &str, shown: &str) -> Option<String> {
    let same = |a: &str, b: &str| a.trim() == b.trim();
    let answer: Vec<&str> = code.lines().filter(|l| is_code(l)).collect();
    let lines: Vec<&str> = shown.lines().collect();
    // The definition's code lines, each with its index in `lines`.
    let defined: Vec<(usize, &str)> = lines.iter().copied().enumerate().filter(|(_, l)| is_code(l)).collect();
    let [.., before_last, last] = answer[..] else { return None };
    let ends: Vec<usize> = (1..defined.len())
        .filter(|&k| same(defined[k - 1].1, before_last) && same(defined[k].1, last))
        .collect();
    let &[k] = &ends[..] else { return None };
    let (_, next) = *defined.get(k + 1)?;
    if answer.iter().any(|a| same(a, next)) {
        return None;
    }
    // The rest, moved by as much as the answer moved the line it stopped at.
    let (at, matched) = defined[k];
    let by = indent_of(last) as isize - indent_of(matched) as isize;
    let moved = |l: &str| match by {
        _ if l.trim().is_empty() => String::new(),
        0.. => format!("{}{l}", " ".repeat(by as usize)),
        _ => l[(-by as usize).min(indent_of(l))..].to_string(),
    };
    let rest: Vec<String> = lines[at + 1..].iter().map(|l| moved(l)).collect();
    Some(format!("{}\n{}", code.trim_end_matches('\n'), rest.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "\
def merge(self, other):
    try:
        with self._merge(other):
            f(self, other)
    except MergeError:
        raise ValueError(
            \"no alignment \"
            \"(see the docs)\"
        )
    return self


def ordinal(value):
    try:
        if value is math.nan:
            return format(value)
        value = int(value)
    except TypeError:
        return str(value)
    s = '''a ( string
    over lines'''
    return value
";

    fn at(line: usize) -> Option<Region> {
        statement_in("x.py", SOURCE, line, Region { start: 1, end: SOURCE.lines().count() })
    }

    #[test]
    fn a_statement_over_several_lines_is_found_from_any_of_them() {
        let call = Region { start: 6, end: 9 };
        assert_eq!(at(6), Some(call));
        assert_eq!(at(7), Some(call), "from inside the brackets");
        assert_eq!(at(9), Some(call));
        assert_eq!(at(10), Some(Region { start: 10, end: 10 }));
        assert_eq!(at(20), Some(Region { start: 20, end: 21 }), "a string in triple quotes");
    }

    #[test]
    fn a_header_comes_with_a_small_body_and_alone_with_a_long_one() {
        assert_eq!(at(15), Some(Region { start: 15, end: 16 }), "`if` and its one line");
        assert_eq!(at(3), Some(Region { start: 3, end: 4 }));
        assert_eq!(at(13), Some(Region { start: 13, end: 13 }), "a def of eight lines stays a header");
        assert_eq!(at(5), Some(Region { start: 5, end: 9 }), "`except` and the call under it");
    }

    #[test]
    fn blank_lines_other_languages_and_lines_outside_give_none() {
        assert_eq!(at(11), None);
        assert_eq!(statement_in("x.c", SOURCE, 6, Region { start: 1, end: 22 }), None);
        assert_eq!(statement_in("x.py", SOURCE, 6, Region { start: 13, end: 22 }), None);
    }

    #[test]
    fn an_answer_loses_the_neighbours_it_copied() {
        let focus = Region { start: 15, end: 16 };
        let shown = Region { start: 13, end: 22 };
        let answer = "    try:\n        if not math.isfinite(value):\n            return format(value)\n        value = int(value)";
        assert_eq!(
            without_copied_neighbours(answer, SOURCE, focus, shown),
            "        if not math.isfinite(value):\n            return format(value)"
        );
        let alone = "        if not math.isfinite(value):\n            return format(value)";
        assert_eq!(without_copied_neighbours(alone, SOURCE, focus, shown), alone, "nothing copied");
        let only_a_copy = "        value = int(value)";
        assert_eq!(
            without_copied_neighbours(only_a_copy, SOURCE, focus, shown),
            only_a_copy,
            "never all of it"
        );
    }

    /// pygments 2576: the answer copied the shown lines after the statement through the last one,
    /// leaving out the line right after the statement, which stays.
    #[test]
    fn a_copy_that_runs_to_the_last_shown_line_is_taken_off_with_a_line_left_out() {
        let focus = Region { start: 15, end: 16 };
        let shown = Region { start: 13, end: 22 };
        let changed = "        if value != value:\n            return format(value)";
        let to_the_end = format!(
            "{changed}\n    except TypeError:\n        return str(value)\n    s = '''a ( string\n    over lines'''\n    return value"
        );
        assert_eq!(without_copied_neighbours(&to_the_end, SOURCE, focus, shown), changed);
        let from_the_top = format!("def ordinal(value):\n    try:\n{changed}");
        assert_eq!(
            without_copied_neighbours(&from_the_top, SOURCE, focus, shown),
            changed,
            "copied from the first shown line"
        );
        let one_last_line = format!("{changed}\n    return value");
        assert_eq!(
            without_copied_neighbours(&one_last_line, SOURCE, focus, shown),
            one_last_line,
            "one line like the last shown one, away from the statement, may be meant"
        );
    }

    #[test]
    fn the_whole_definition_sent_back_is_told_from_a_statement() {
        let shown = "def merge(self, other):\n    try:\n        with self._merge(other):\n            f(self, other)\n    except MergeError:\n        raise ValueError(\"x\")\n    return self";
        let statement = "        raise ValueError(\"x\")";
        assert!(is_whole(shown, shown, statement));
        assert!(!is_whole("        raise MergeError(\"x\")", shown, statement));
        let def = "def merge(self, other):";
        assert!(!is_whole("def merge(self, other):\n    if not other:\n        return self", shown, def));
        let with_a_parameter = shown.replace("other):", "other, strict=False):");
        assert!(is_whole(&with_a_parameter, shown, def), "the definition again, its `def` line changed");
        assert!(
            !is_whole(&with_a_parameter, shown, statement),
            "for a statement inside, only an answer that opens like the definition"
        );
    }

    /// more-itertools 545: the definition sent back for its `def` line, two lines added at the top
    /// and the last block left off: the rest is put back, moved as far as the answer moved it.
    #[test]
    fn a_definition_sent_back_short_of_its_end_keeps_the_rest() {
        let shown = "def zip(*objects, strict=False):\n    its = [iter(o) for o in objects]\n    yield from zip(*its)\n\n    # exhausted?\n    if strict:\n        check(its)";
        let answer = "def zip(*objects, strict=False):\n    if not objects:\n        return\n    its = [iter(o) for o in objects]\n    yield from zip(*its)";
        assert_eq!(
            with_rest_kept(answer, shown).as_deref(),
            Some(format!("{answer}\n\n    # exhausted?\n    if strict:\n        check(its)").as_str())
        );
        let dedented: String =
            answer.lines().map(|l| l.strip_prefix("    ").unwrap_or(l)).collect::<Vec<_>>().join("\n");
        let kept = with_rest_kept(&dedented, shown).unwrap();
        assert!(kept.ends_with("\nif strict:\n    check(its)"), "moved like the answer: {kept}");
        assert_eq!(with_rest_kept(shown, shown), None, "it ends where the definition ends");
        let moved = format!(
            "{answer}\n    if strict:\n        check(its)\n    its = [iter(o) for o in objects]\n    yield from zip(*its)"
        );
        assert_eq!(with_rest_kept(&moved, shown), None, "the rest is in the answer already");
        assert_eq!(with_rest_kept("    if not objects:\n        return", shown), None, "not a copy");
    }
}
