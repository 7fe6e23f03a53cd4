//! What a reviewer's comments were worth, beside its pass rate: how many of them the agent acted
//! on, how many of those led to a passing test, and how well they overlap the human comments by
//! place alone (AACR-Bench's line-overlap precision, recall and F1). A tool that floods a PR with
//! comments shows here: its pass rate may match another's, its precision will not.

use serde::Serialize;

use super::Finding;
use crate::repo::hunks::{self, Hunk};

/// Two comments are on the same place when they name the same file and lie this many lines apart
/// or fewer (AACR-Bench's tolerance for a comment on the same change).
pub const NEAR_LINES: u64 = 5;

/// A revision acted on a comment when it changed the comment's file this close to its line.
pub const ACTED_LINES: u64 = 3;

/// One human comment of an instance, and whether its test passed on this reviewer's revision.
pub struct Human<'a> {
    pub comment: &'a Finding,
    pub test_passed: bool,
}

/// Counts over every instance a reviewer reviewed.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Worth {
    pub comments: usize,
    /// Comments whose place the agent's revision changed.
    pub acted_on: usize,
    /// Acted-on comments on the place of a human comment whose test then passed.
    pub led_to_pass: usize,
    /// Comments on the place of some human comment (the overlap's true positives).
    pub on_human_place: usize,
    pub human_comments: usize,
    /// Human comments with some comment of this reviewer on their place.
    pub humans_found: usize,
}

/// Whether `a` and `b` are on the same place (see [`NEAR_LINES`]); a comment without a file or
/// a line is on no place.
pub fn same_place(a: &Finding, b: &Finding) -> bool {
    match (&a.path, a.line, &b.path, b.line) {
        (Some(p), Some(x), Some(q), Some(y)) => p == q && x.abs_diff(y) <= NEAR_LINES,
        _ => false,
    }
}

/// Whether the revision (its hunks, the old side being the reviewed code) changed the comment's
/// file near its line; a comment without a line is acted on by any change of its file, one
/// without a file by any change at all.
pub fn acted_on(comment: &Finding, revision: &[Hunk]) -> bool {
    revision.iter().any(|h| {
        let Some(path) = &comment.path else { return true };
        if h.old_path.as_ref().or(h.new_path.as_ref()) != Some(path) {
            return false;
        }
        let Some(line) = comment.line else { return true };
        let (first, last) = h.changed_span();
        line + ACTED_LINES >= first && line <= last + ACTED_LINES
    })
}

impl Worth {
    /// Adds one instance: the reviewer's comments, the revision they led to (a `git diff` of the
    /// reviewed code) and the instance's human comments.
    pub fn add(&mut self, comments: &[Finding], revision: &str, humans: &[Human]) {
        let revision = hunks::parse(revision);
        self.comments += comments.len();
        self.human_comments += humans.len();
        for c in comments {
            let acted = acted_on(c, &revision);
            self.acted_on += usize::from(acted);
            self.on_human_place += usize::from(humans.iter().any(|h| same_place(c, h.comment)));
            let passed_there = humans.iter().any(|h| h.test_passed && same_place(c, h.comment));
            self.led_to_pass += usize::from(acted && passed_there);
        }
        self.humans_found +=
            humans.iter().filter(|h| comments.iter().any(|c| same_place(c, h.comment))).count();
    }

    /// Line-overlap precision in percent; `None` without comments.
    pub fn precision(&self) -> Option<f64> {
        percent(self.on_human_place, self.comments)
    }

    /// Line-overlap recall in percent; `None` without human comments.
    pub fn recall(&self) -> Option<f64> {
        percent(self.humans_found, self.human_comments)
    }

    /// The harmonic mean of the two, in percent; `None` when either is missing, 0 when both are 0.
    pub fn f1(&self) -> Option<f64> {
        let (p, r) = (self.precision()?, self.recall()?);
        Some(if p + r == 0.0 { 0.0 } else { (10.0 * 2.0 * p * r / (p + r)).round() / 10.0 })
    }
}

fn percent(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| (1000.0 * part as f64 / whole as f64).round() / 10.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(path: &str, line: u64) -> Finding {
        Finding { path: Some(path.into()), line: Some(line), body: "x".into() }
    }

    /// A revision of `a.py` that replaces line 20.
    const REVISION: &str = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -19,3 +19,3 @@\n x = 1\n-y = 2\n+y = 3\n z = 4\n";

    #[test]
    fn a_comment_is_acted_on_when_the_revision_changes_its_file_near_its_line() {
        let revision = hunks::parse(REVISION);
        assert!(acted_on(&at("a.py", 20), &revision));
        assert!(acted_on(&at("a.py", 17), &revision));
        assert!(acted_on(&at("a.py", 23), &revision));
        assert!(!acted_on(&at("a.py", 16), &revision));
        assert!(!acted_on(&at("a.py", 24), &revision));
        assert!(!acted_on(&at("b.py", 20), &revision));
        assert!(acted_on(&Finding { path: Some("a.py".into()), line: None, body: "x".into() }, &revision));
        assert!(!acted_on(&at("a.py", 20), &[]));
    }

    #[test]
    fn worth_counts_action_passes_and_line_overlap() {
        let humans = [at("a.py", 24), at("c.py", 5)];
        let humans = [
            Human { comment: &humans[0], test_passed: true },
            Human { comment: &humans[1], test_passed: false },
        ];
        // On a human's place and acted on; on a human's place, not acted on (c.py is unchanged);
        // on no human's place, acted on; nowhere.
        let comments = [at("a.py", 21), at("c.py", 9), at("a.py", 18), at("d.py", 1)];
        let mut w = Worth::default();
        w.add(&comments, REVISION, &humans);
        assert_eq!(w.comments, 4);
        assert_eq!(w.acted_on, 2, "{w:?}");
        assert_eq!(w.led_to_pass, 1);
        assert_eq!(w.on_human_place, 2);
        assert_eq!((w.human_comments, w.humans_found), (2, 2));
        assert_eq!(w.precision(), Some(50.0));
        assert_eq!(w.recall(), Some(100.0));
        assert_eq!(w.f1(), Some(66.7));
        assert_eq!(Worth::default().f1(), None);
    }
}
