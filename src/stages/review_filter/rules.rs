//! Cheap rules that decide the obvious drops before the model is asked: acknowledgements, praise,
//! process and deferred work, and questions that ask why or where without naming a failing case.
//! Each rule is named in the rejection's reason. They are deliberately narrow: a comment that says
//! anything that sounds like a defect (a failing input, a wrong result, a missing check) is left to
//! the model, so a rule costs recall only on comments that are drops by the gold set's criteria.

/// Words that make a comment possibly about a defect, which no rule may drop.
const CONCERN: [&str; 34] = [
    "but ",
    "however",
    "though",
    "bug",
    "break",
    "fail",
    "crash",
    "wrong",
    "incorrect",
    "missing",
    "raise",
    "error",
    "exception",
    "none",
    "null",
    "empty",
    "zero",
    "negative",
    "overflow",
    "leak",
    "race",
    "deadlock",
    "loop",
    "hang",
    "off-by",
    "off by",
    "should",
    "must",
    "instead",
    "return",
    "message",
    "docstring",
    "security",
    "inject",
];

/// A rule that fired: its name and the reason it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub name: &'static str,
    pub reason: &'static str,
}

const ACKNOWLEDGEMENT: Rule = Rule { name: "acknowledgement", reason: "a reply or acknowledgement" };
const PRAISE: Rule = Rule { name: "praise", reason: "approval or praise only" };
const PROCESS: Rule = Rule { name: "process", reason: "about the PR's process, not the code" };
const DEFERRED: Rule = Rule { name: "deferred", reason: "defers the work to later" };
const QUESTION: Rule = Rule { name: "question", reason: "asks why or where, naming no failing case" };
const NIT: Rule = Rule { name: "nit", reason: "a nit with no behaviour named" };

/// Replies and approvals, as the first words of a short comment.
const ACKNOWLEDGEMENTS: [&str; 20] = [
    "done",
    "fixed",
    "addressed",
    "updated",
    "agreed",
    "agree",
    "same",
    "thanks",
    "thank you",
    "ty",
    "+1",
    "👍",
    "ack",
    "will do",
    "sounds good",
    "good catch",
    "great catch",
    "nice catch",
    "makes sense",
    "ok",
];
const PRAISES: [&str; 8] =
    ["lgtm", "looks good", "nice", "great", "love this", "👍", "approving", "approved"];
const PROCESSES: [&str; 12] = [
    "rebase",
    "squash",
    "changelog",
    "pr description",
    "the description",
    "commit message",
    "fixup commit",
    "split this into",
    "separate pr",
    "ci is green",
    "link the issue",
    "release note",
];
const DEFERRALS: [&str; 6] =
    ["at some point", "eventually", "for later", "follow-up", "followup", "once it exists"];
const WHY_QUESTIONS: [&str; 10] = [
    "why",
    "what's the reasoning",
    "what is the reasoning",
    "what's the reason",
    "is there a reason",
    "any reason",
    "where is",
    "can you explain",
    "how come",
    "just curious",
];

/// Whether `word` occurs in `text` at the start of a word: "hang" is not in "changelog", nor
/// "race" in "trace"; "fail" is in "failing".
fn starts_a_word(text: &str, word: &str) -> bool {
    text.match_indices(word)
        .any(|(at, _)| !text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_'))
}

/// The rule that drops `comment`, if one does.
pub fn drop_rule(comment: &str) -> Option<Rule> {
    // Quoted lines are the comment being replied to, not this one.
    let own: Vec<&str> =
        comment.lines().map(str::trim).filter(|l| !l.starts_with('>') && !l.is_empty()).collect();
    let text = own.join(" ").to_lowercase();
    if text.is_empty() {
        return Some(ACKNOWLEDGEMENT);
    }
    if text.contains("```") || CONCERN.iter().any(|w| starts_a_word(&text, w)) {
        return None;
    }
    let words = text.split_whitespace().count();
    // Whole words: "ty" must not take "typo".
    let starts = |list: &[&str]| {
        list.iter().any(|w| {
            text.strip_prefix(w).is_some_and(|rest| !rest.starts_with(|c: char| c.is_alphanumeric()))
        })
    };
    if words <= 8 && starts(&ACKNOWLEDGEMENTS) {
        return Some(ACKNOWLEDGEMENT);
    }
    if starts(&PRAISES) {
        return Some(PRAISE);
    }
    if PROCESSES.iter().any(|w| text.contains(w)) {
        return Some(PROCESS);
    }
    if DEFERRALS.iter().any(|w| text.contains(w)) {
        return Some(DEFERRED);
    }
    let one_question = text.ends_with('?') && text.matches('?').count() == 1 && !text.contains(". ");
    if one_question && starts(&WHY_QUESTIONS) {
        return Some(QUESTION);
    }
    if text.starts_with("nit") {
        return Some(NIT);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(comment: &str) -> Option<&'static str> {
        drop_rule(comment).map(|r| r.name)
    }

    #[test]
    fn obvious_drops_are_named() {
        assert_eq!(name("Done, fixed in 4c1e9a2"), Some("acknowledgement"));
        assert_eq!(name("> could we cache this?\n\nagreed, done"), Some("acknowledgement"));
        assert_eq!(name("LGTM, the caching reads well"), Some("praise"));
        assert_eq!(name("please squash before merging"), Some("process"));
        assert_eq!(name("we can add property tests at some point"), Some("deferred"));
        assert_eq!(name("why a dict and not a list here?"), Some("question"));
        assert_eq!(name("nit: `idx` -> `pos`"), Some("nit"));
        assert_eq!(name("typo: recieve"), None, "a word that begins with an acknowledgement is not one");
        assert_eq!(
            name("needs a changelog entry"),
            Some("process"),
            "`hang` is not a concern inside `changelog`"
        );
    }

    #[test]
    fn no_rule_drops_a_kept_comment_of_the_tuning_split() {
        let gold = include_str!("../../../gold/filter.jsonl");
        for line in gold.lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            if row["split"] == "tune" && row["label"] == "keep" {
                let comment = row["comment"].as_str().unwrap();
                assert_eq!(drop_rule(comment), None, "{}: {comment}", row["id"]);
            }
        }
    }

    #[test]
    fn anything_that_may_name_a_defect_is_left_to_the_model() {
        for comment in [
            "LGTM but this crashes when `items` is empty",
            "why does this return None for an empty list? callers index it",
            "nit: the error message says `recieve`",
            "nice, though the timeout is never passed to connect()",
            "```suggestion\n    return a <= b\n```",
            "this returns the wrong total when a discount is negative",
            "what happens when two workers write the same key?",
            "nice, but failing inputs are not logged",
        ] {
            assert_eq!(name(comment), None, "{comment}");
        }
    }
}
