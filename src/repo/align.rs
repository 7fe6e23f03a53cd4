//! Aligning a review comment to the code it was made on. A comment carries the diff hunk the reviewer
//! saw (from its `@@` header down to the commented line) and line numbers; this finds the commented
//! lines in the file at the reviewed commit, checks that the hunk still matches the file (moving it if
//! the lines shifted), and extracts them.
//!
//! The hunk comes from the diff base..reviewed, so its new side is the reviewed file. A comment on a
//! deleted line (the old side) is anchored where the deletion happened in the reviewed file.

use serde::Serialize;

use super::hunks::{LineKind as Kind, hunk_line};
use crate::record::ReviewComment;

/// Which side of the diff the comment is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The old file: the comment is on removed lines.
    Left,
    /// The new file: the reviewed code.
    Right,
}

/// Rejection reasons are short and stable, so the funnel can count them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AlignError {
    #[error("the comment has neither a diff hunk nor a line")]
    NoLocation,
    #[error("the diff hunk cannot be read: {0}")]
    BadHunk(String),
    #[error("the diff hunk does not match the file at the reviewed commit")]
    HunkMismatch,
    #[error("the commented line is outside the file at the reviewed commit")]
    LineOutOfRange,
}

/// One line of a hunk with its numbers on both sides. An added line's `old` and a removed line's
/// `new` are positions: the number the next line on that side has.
#[derive(Debug, Clone)]
struct HunkLine {
    kind: Kind,
    old: u64,
    new: u64,
    text: String,
}

fn parse_header(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("@@ -")?;
    let (old, rest) = rest.split_once(" +")?;
    let (new, _) = rest.split_once(" @@")?;
    let start = |s: &str| s.split(',').next()?.parse::<u64>().ok();
    Some((start(old)?, start(new)?))
}

fn parse(hunk: &str) -> Result<Vec<HunkLine>, AlignError> {
    let mut out = Vec::new();
    let mut pos: Option<(u64, u64)> = None;
    for line in hunk.lines() {
        if line.starts_with("@@") {
            let (old, new) = parse_header(line).ok_or_else(|| {
                AlignError::BadHunk(format!("bad header `{}`", line.chars().take(60).collect::<String>()))
            })?;
            // A file's first hunk starts at 0 when that side is empty; the next line is 1.
            pos = Some((old.max(1), new.max(1)));
            continue;
        }
        if line.starts_with('\\') {
            continue; // "\ No newline at end of file"
        }
        let Some((old, new)) = pos.as_mut() else {
            if line.starts_with("diff ")
                || line.starts_with("--- ")
                || line.starts_with("+++ ")
                || line.starts_with("index ")
            {
                continue;
            }
            return Err(AlignError::BadHunk("lines before any `@@` header".into()));
        };
        let Some((kind, text)) = hunk_line(line) else {
            return Err(AlignError::BadHunk("a line without a +, - or space prefix".into()));
        };
        out.push(HunkLine { kind, old: *old, new: *new, text: text.to_string() });
        match kind {
            Kind::Context => {
                *old += 1;
                *new += 1;
            }
            Kind::Added => *new += 1,
            Kind::Removed => *old += 1,
        }
    }
    if out.is_empty() {
        return Err(AlignError::BadHunk("no lines".into()));
    }
    Ok(out)
}

/// The commented lines, located in the reviewed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Aligned {
    pub side: Side,
    /// First and last commented line in the reviewed file (1-based, inclusive). For a comment on
    /// removed lines, where they were removed.
    pub start: u64,
    pub end: u64,
    /// The commented code: the reviewed file's lines, or the removed lines for the left side.
    pub code: String,
    /// How far the hunk had moved in the file (0 when it matched where it said).
    pub moved: i64,
}

fn same(a: &str, b: &str) -> bool {
    a.trim_end() == b.trim_end()
}

/// The offset at which every new-side line of the hunk matches the file, nearest first.
fn find_offset(hunk: &[HunkLine], file: &[&str]) -> Option<i64> {
    let anchors: Vec<(i64, &str)> =
        hunk.iter().filter(|l| l.kind != Kind::Removed).map(|l| (l.new as i64, l.text.as_str())).collect();
    if anchors.is_empty() {
        return Some(0);
    }
    let fits = |d: i64| {
        anchors.iter().all(|(n, text)| {
            let i = n + d - 1;
            i >= 0 && (i as usize) < file.len() && same(file[i as usize], text)
        })
    };
    let span = file.len() as i64 + anchors.last().map_or(0, |a| a.0);
    (0..=span).flat_map(|d| [d, -d]).find(|&d| fits(d))
}

/// Locates `comment` in `reviewed`, the file's text at the reviewed commit.
pub fn align(comment: &ReviewComment, reviewed: &str) -> Result<Aligned, AlignError> {
    let file: Vec<&str> = reviewed.lines().collect();
    let given_end = comment.original_line.or(comment.line);
    let given_start =
        if comment.original_line.is_some() { comment.original_start_line } else { comment.start_line };
    let Some(hunk_text) = comment.diff_hunk.as_deref().filter(|h| !h.trim().is_empty()) else {
        let end = given_end.ok_or(AlignError::NoLocation)?;
        let start = given_start.filter(|s| *s <= end).unwrap_or(end);
        if start == 0 || end as usize > file.len() {
            return Err(AlignError::LineOutOfRange);
        }
        let code = file[start as usize - 1..end as usize].join("\n");
        return Ok(Aligned { side: Side::Right, start, end, code, moved: 0 });
    };

    let hunk = parse(hunk_text)?;
    let last = hunk.last().ok_or(AlignError::NoLocation)?;
    let side = if last.kind == Kind::Removed { Side::Left } else { Side::Right };
    let moved = find_offset(&hunk, &file).ok_or(AlignError::HunkMismatch)?;
    let (start, end, code) = match side {
        Side::Right => {
            let end = last.new;
            let start = given_start.filter(|s| *s <= end).unwrap_or(end);
            let (s, e) = ((start as i64 + moved) as usize, (end as i64 + moved) as usize);
            if s == 0 || e > file.len() {
                return Err(AlignError::LineOutOfRange);
            }
            (s as u64, e as u64, file[s - 1..e].join("\n"))
        }
        Side::Left => {
            let end = last.old;
            let start = given_start.filter(|s| *s <= end).unwrap_or(end);
            let lines: Vec<&HunkLine> =
                hunk.iter().filter(|l| l.kind != Kind::Added && (start..=end).contains(&l.old)).collect();
            let first = lines.first().map_or(last.new, |l| l.new);
            let last_kept = lines.iter().filter(|l| l.kind == Kind::Context).map(|l| l.new).max();
            let clamp = |n: u64| ((n as i64 + moved).max(1) as u64).min(file.len().max(1) as u64);
            let code = lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>().join("\n");
            let s = clamp(first);
            (s, clamp(last_kept.unwrap_or(first)).max(s), code)
        }
    };
    Ok(Aligned { side, start, end, code, moved })
}

/// The commented line by the hunk alone, for a comment whose file is not at hand: the number of
/// the hunk's last line on its own side (the old side for a removed line).
pub fn hunk_end(hunk: &str) -> Option<u64> {
    let last = parse(hunk).ok()?.pop()?;
    Some(if last.kind == Kind::Removed { last.old } else { last.new })
}

/// Lines `start - around ..= end + around` of `text`, with the number of the first.
pub fn window(text: &str, start: u64, end: u64, around: u64) -> (u64, String) {
    let lines: Vec<&str> = text.lines().collect();
    let first = start.saturating_sub(around).max(1);
    let last = (end + around).min(lines.len() as u64);
    if first > last {
        return (first, String::new());
    }
    (first, lines[first as usize - 1..last as usize].join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hunk_alone_gives_its_last_line_on_its_own_side() {
        let hunk = "@@ -10,4 +12,5 @@ def f():\n     a = 1\n-    b = 2\n+    b = 3\n+    c = 4\n     d = 5";
        assert_eq!(hunk_end(hunk), Some(15));
        assert_eq!(hunk_end("@@ -3,2 +3,1 @@\n a\n-b"), Some(4), "a removed line: its old number");
        assert_eq!(hunk_end("no header"), None);
    }

    fn comment(hunk: Option<&str>, line: Option<u64>, start: Option<u64>) -> ReviewComment {
        ReviewComment {
            text: "t".into(),
            path: Some("f.py".into()),
            diff_hunk: hunk.map(str::to_string),
            line,
            start_line: start,
            original_line: line,
            original_start_line: start,
            index: 1,
            by_pr_author: None,
            is_reply: None,
            extra: Default::default(),
        }
    }

    /// The reviewed file: ten numbered lines with two inserted after line 4.
    const REVIEWED: &str = "l1\nl2\nl3\nl4\nnew a\nnew b\nl5\nl6\nl7\nl8\nl9\nl10\n";

    #[test]
    fn a_comment_on_an_added_line() {
        let hunk = "@@ -2,4 +2,6 @@ def f():\n l2\n l3\n l4\n+new a\n+new b";
        let a = align(&comment(Some(hunk), Some(6), None), REVIEWED).unwrap();
        assert_eq!((a.side, a.start, a.end, a.code.as_str(), a.moved), (Side::Right, 6, 6, "new b", 0));
    }

    #[test]
    fn a_multi_line_range() {
        let hunk = "@@ -2,4 +2,6 @@\n l2\n l3\n l4\n+new a\n+new b\n l5";
        let a = align(&comment(Some(hunk), Some(7), Some(5)), REVIEWED).unwrap();
        assert_eq!((a.start, a.end), (5, 7));
        assert_eq!(a.code, "new a\nnew b\nl5");
    }

    #[test]
    fn several_hunks_use_the_last_one() {
        let hunk = "@@ -1,2 +1,2 @@\n-l0\n+l1\n l2\n@@ -8,3 +10,3 @@\n l8\n-old l9\n+l9";
        let a = align(&comment(Some(hunk), Some(11), None), REVIEWED).unwrap();
        assert_eq!((a.start, a.code.as_str()), (11, "l9"));
    }

    #[test]
    fn a_comment_on_a_removed_line_is_anchored_where_it_was_removed() {
        // The reviewed file lost "gone" between l3 and l4.
        let hunk = "@@ -2,4 +2,3 @@\n l2\n l3\n-gone";
        let a = align(&comment(Some(hunk), None, None), "l1\nl2\nl3\nl4\n").unwrap();
        assert_eq!((a.side, a.start, a.end, a.code.as_str()), (Side::Left, 4, 4, "gone"));
    }

    #[test]
    fn a_deletion_only_hunk() {
        let hunk = "@@ -5,2 +4,0 @@\n-a\n-b";
        let mut c = comment(Some(hunk), None, Some(5));
        c.original_line = Some(6);
        let a = align(&c, "l1\nl2\nl3\nl4\n").unwrap();
        assert_eq!((a.side, a.code.as_str()), (Side::Left, "a\nb"));
        assert_eq!((a.start, a.end), (4, 4), "clamped to the file");
    }

    #[test]
    fn a_shifted_hunk_is_found_and_reported_as_moved() {
        let hunk = "@@ -1,3 +1,3 @@\n l7\n l8\n+l9";
        let a = align(&comment(Some(hunk), Some(3), None), REVIEWED).unwrap();
        assert_eq!((a.start, a.code.as_str(), a.moved), (11, "l9", 8));
    }

    #[test]
    fn a_hunk_that_no_longer_matches_is_an_error() {
        let hunk = "@@ -1,2 +1,2 @@\n l1\n+something else";
        assert_eq!(align(&comment(Some(hunk), Some(2), None), REVIEWED), Err(AlignError::HunkMismatch));
    }

    #[test]
    fn without_a_hunk_the_line_numbers_are_used() {
        let a = align(&comment(None, Some(3), Some(2)), REVIEWED).unwrap();
        assert_eq!(a.code, "l2\nl3");
        assert_eq!(align(&comment(None, Some(99), None), REVIEWED), Err(AlignError::LineOutOfRange));
        assert_eq!(align(&comment(None, None, None), REVIEWED), Err(AlignError::NoLocation));
    }

    #[test]
    fn bad_hunks_are_errors_not_panics() {
        for bad in ["@@ nonsense @@\n x", "no header\n+x", "@@ -1 +1 @@\n*x", "@@ -1 +1 @@"] {
            assert!(
                matches!(align(&comment(Some(bad), Some(1), None), REVIEWED), Err(AlignError::BadHunk(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_window_around_lines() {
        assert_eq!(window(REVIEWED, 2, 3, 1), (1, "l1\nl2\nl3\nl4".to_string()));
        assert_eq!(window(REVIEWED, 12, 12, 5).0, 7);
    }
}
