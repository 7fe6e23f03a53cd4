//! Observed behaviour, the strongest fact a test writer can be given: the calls whose results
//! differ between the reviewed and the fixed code (made by the probe, `exec::probe`), chosen and
//! written out for the prompt.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::exec::probe::Call;
use crate::llm::types::TokenLogprob;

/// A call that gave one thing on the reviewed code and another on the fixed code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    pub call: String,
    /// Where the call came from: `comment`, `tests` or `generated`.
    pub from: String,
    pub reviewed: String,
    pub fixed: String,
    /// A pytest file that checks the fixed result, when the probe could write one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// A call of the project's tests that passes a value the comment names.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub echoes: bool,
}

/// Results that say nothing about the code: a call that gives another result each time, or one
/// that ran out of its time on both sides.
const UNSTABLE: &str = "unstable";

/// The calls made on both sides whose results differ, in the fixed side's order. A call unstable
/// on either side is left out: its difference may be chance.
pub fn differences(fixed: &[Call], reviewed: &[Call]) -> Vec<Difference> {
    let reviewed: BTreeMap<&str, &str> =
        reviewed.iter().map(|c| (c.call.as_str(), c.result.as_str())).collect();
    fixed
        .iter()
        .filter_map(|f| {
            let r = *reviewed.get(f.call.as_str())?;
            (r != f.result && r != UNSTABLE && f.result != UNSTABLE).then(|| Difference {
                call: f.call.clone(),
                from: f.from.clone(),
                reviewed: r.to_string(),
                fixed: f.result.clone(),
                check: f.check.clone(),
                echoes: f.echoes,
            })
        })
        .collect()
}

/// Of `differences`, those the comment's own change causes: the call gives another result on the
/// fixed code with only that change undone (`partial`) than on the fixed code. A call missing on
/// the partial side (the probe ran out of time) is kept: nothing says otherwise.
pub fn caused_by_change(differences: &[Difference], partial: &[Call]) -> Vec<Difference> {
    let partial: BTreeMap<&str, &str> =
        partial.iter().map(|c| (c.call.as_str(), c.result.as_str())).collect();
    differences
        .iter()
        .filter(|d| partial.get(d.call.as_str()).is_none_or(|p| *p != d.fixed))
        .cloned()
        .collect()
}

/// How the two results differ, so that only one call of each kind is shown: a call that raises on
/// one side and not the other differs in kind from one that returns two values.
fn kind(d: &Difference) -> (String, String) {
    let head = |r: &str| match r.strip_prefix("raises ") {
        Some(error) => format!("raises {}", error.split(':').next().unwrap_or("")),
        None => r.split(' ').next().unwrap_or("").to_string(),
    };
    (head(&d.reviewed), head(&d.fixed))
}

/// Calls the comment writes first, then the tests' calls that pass a value the comment names, then
/// the other calls of the tests, then made-up ones.
fn rank(d: &Difference) -> u8 {
    match (d.from.as_str(), d.echoes) {
        ("comment", _) => 0,
        ("tests", true) => 1,
        ("tests", false) => 2,
        _ => 3,
    }
}

/// At most `max` differences for the prompt. When calls the comment writes differ, only those: the
/// reviewer named the case, and the other calls of a function the fix changed in several ways are
/// often about another comment. Else the project's tests' calls, then made-up ones. Of the
/// comment's and made-up calls, one per function and kind of difference (the shortest made-up one).
pub fn chosen(all: &[Difference], max: usize) -> Vec<Difference> {
    let from_comment = all.iter().any(|d| d.from == "comment");
    let mut ordered: Vec<&Difference> = all.iter().filter(|d| !from_comment || d.from == "comment").collect();
    ordered.sort_by_key(|d| (rank(d), if d.from == "generated" { d.call.len() } else { 0 }));
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for d in ordered {
        let function = d.call.split('(').next().unwrap_or("").to_string();
        let key = (function, kind(d));
        if d.from != "tests" && seen.contains(&key) {
            continue;
        }
        seen.push(key);
        out.push(d.clone());
        if out.len() == max {
            break;
        }
    }
    out
}

/// The test the probe wrote for the first difference a test may be taken from: a call the comment
/// writes, or one of the project's tests that passes a value the comment names. Another call of the
/// tests, or a made-up one, may show a case of the same code that is another comment's.
pub fn written_check(differences: &[Difference]) -> Option<&str> {
    differences.iter().filter(|d| d.from == "comment" || d.echoes).find_map(|d| d.check.as_deref())
}

/// The differences whose written check the model may choose among (the numbered choice of
/// [`numbered`]): those with a check other than `judged` (already judged), at most `max`, in the
/// order given.
pub fn choosable<'a>(differences: &'a [Difference], judged: Option<&str>, max: usize) -> Vec<&'a Difference> {
    differences.iter().filter(|d| d.check.is_some() && d.check.as_deref() != judged).take(max).collect()
}

/// `choices` as a numbered list for the model: each call with its result on the reviewed code and
/// on the fixed code.
pub fn numbered(choices: &[&Difference]) -> String {
    choices
        .iter()
        .enumerate()
        .map(|(i, d)| {
            format!(
                "{}. `{}`\n   on the reviewed code: {}\n   after the fix: {}\n",
                i + 1,
                d.call,
                d.reviewed,
                d.fixed
            )
        })
        .collect()
}

/// The number the model answered among `0..=n` (0: none of them), and how sure it was: the mass of
/// that number at the answer's first token over the mass of every number there. Without
/// log-probabilities (a server that gives none), the first number of `text`, with no probability.
pub fn chosen_number(tokens: &[TokenLogprob], text: &str, n: usize) -> Option<(usize, Option<f64>)> {
    let number =
        |t: &str| t.trim().trim_end_matches(['.', ')', ':']).parse::<usize>().ok().filter(|k| *k <= n);
    let first = tokens.iter().find(|t| !t.token.trim().is_empty());
    if let Some(first) = first {
        let chosen = [(first.token.clone(), first.logprob)];
        let alternatives = if first.top.is_empty() { &chosen[..] } else { &first.top[..] };
        let mut mass = vec![0.0; n + 1];
        for (token, logprob) in alternatives {
            if let Some(k) = number(token) {
                mass[k] += f64::from(*logprob).exp();
            }
        }
        let total: f64 = mass.iter().sum();
        if total > 0.0 {
            let (k, m) = mass
                .iter()
                .enumerate()
                .fold((0, 0.0), |best, (k, m)| if *m > best.1 { (k, *m) } else { best });
            return Some((k, Some(m / total)));
        }
    }
    let word = text.split(|c: char| !c.is_ascii_digit()).find(|w| !w.is_empty())?;
    number(word).map(|k| (k, None))
}

/// An exception's type, for a result that is one.
fn raised(result: &str) -> Option<&str> {
    result.strip_prefix("raises ").map(|r| r.split(':').next().unwrap_or(r))
}

/// The two results as the prompt shows them. Of two different exceptions only their types: a test
/// that matches the fix's message word for word asks more than the reviewer did.
fn pair(d: &Difference) -> (String, String) {
    match (raised(&d.reviewed), raised(&d.fixed)) {
        (Some(r), Some(f)) if r != f => (format!("raises {r}"), format!("raises {f}")),
        (_, Some(f)) => (d.reviewed.clone(), format!("raises {f}")),
        _ => (d.reviewed.clone(), d.fixed.clone()),
    }
}

/// The differences as the prompt shows them: a Python comment per call.
pub fn shown(differences: &[Difference]) -> String {
    if differences.is_empty() {
        return "# no call was found whose result differs".to_string();
    }
    differences
        .iter()
        .map(|d| {
            let (reviewed, fixed) = pair(d);
            format!("{}\n# reviewed code: {reviewed}\n# changed code: {fixed}", d.call)
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(call: &str, from: &str, result: &str) -> Call {
        Call { call: call.into(), from: from.into(), result: result.into(), check: None, echoes: false }
    }

    fn difference(call: &str, from: &str, reviewed: &str, fixed: &str) -> Difference {
        Difference {
            call: call.into(),
            from: from.into(),
            reviewed: reviewed.into(),
            fixed: fixed.into(),
            check: None,
            echoes: false,
        }
    }

    #[test]
    fn the_choice_is_among_written_checks_not_judged_yet_numbered_from_one() {
        let with_check = |call: &str, check: &str| Difference {
            check: Some(check.into()),
            ..difference(call, "generated", "raises TypeError", "False")
        };
        let all = [
            with_check("f([1])", "def test_a(): ..."),
            difference("f(2)", "tests", "1", "2"),
            with_check("f('x')", "def test_b(): ..."),
        ];
        let choices = choosable(&all, Some("def test_a(): ..."), 5);
        assert_eq!(choices.iter().map(|d| d.call.as_str()).collect::<Vec<_>>(), ["f('x')"]);
        let text = numbered(&choosable(&all, None, 5));
        assert!(text.starts_with("1. `f([1])`\n   on the reviewed code: raises TypeError\n"), "{text}");
        assert!(text.contains("2. `f('x')`"), "{text}");
        assert_eq!(choosable(&all, None, 1).len(), 1);
    }

    #[test]
    fn the_chosen_number_is_the_likeliest_number_at_the_first_token() {
        let token = |t: &str, top: &[(&str, f32)]| TokenLogprob {
            token: t.into(),
            logprob: top.iter().find(|(a, _)| *a == t).map_or(0.0, |(_, p)| *p),
            top: top.iter().map(|(a, p)| (a.to_string(), *p)).collect(),
        };
        let tokens = [token("2", &[("2", -0.3), ("1", -1.6), ("0", -3.0), ("The", -4.0)])];
        let (k, p) = chosen_number(&tokens, "2", 3).unwrap();
        assert_eq!(k, 2);
        assert!(p.unwrap() > 0.7 && p.unwrap() < 0.8, "{p:?}");
        let none = [token("0", &[("0", -0.1), ("1", -2.5)])];
        assert_eq!(chosen_number(&none, "0", 2).unwrap().0, 0);
        // A number past the list is no choice; no log-probabilities: the answer's first number.
        let past = [token("7", &[("7", -0.1)])];
        assert_eq!(chosen_number(&past, "7", 2), None);
        assert_eq!(chosen_number(&[], "Call 1 shows it.", 2), Some((1, None)));
        assert_eq!(chosen_number(&[], "none", 2), None);
    }

    #[test]
    fn only_calls_made_on_both_sides_with_stable_different_results_count() {
        let fixed = [
            call("median([])", "comment", "raises ValueError: empty"),
            call("median([1])", "generated", "returns 1"),
            call("median([1, 2])", "generated", "returns 1.5"),
            call("now()", "generated", "unstable"),
            call("only_fixed()", "generated", "returns 1"),
        ];
        let reviewed = [
            call("median([])", "comment", "raises IndexError: list index out of range"),
            call("median([1])", "generated", "returns 1"),
            call("median([1, 2])", "generated", "returns 2"),
            call("now()", "generated", "returns 3"),
        ];
        let d = differences(&fixed, &reviewed);
        let calls: Vec<&str> = d.iter().map(|d| d.call.as_str()).collect();
        assert_eq!(calls, ["median([])", "median([1, 2])"]);
        assert_eq!(d[0].reviewed, "raises IndexError: list index out of range");
        assert_eq!(d[0].fixed, "raises ValueError: empty");
    }

    #[test]
    fn the_comments_calls_alone_when_they_differ_else_the_tests_then_made_up_ones_once_per_kind() {
        let d = difference;
        let mut all = vec![
            d("median([3, 1, 2, 4])", "generated", "returns 3", "returns 2.5"),
            d("median([1, 2])", "generated", "returns 2", "returns 1.5"),
            d("median(())", "generated", "raises IndexError: x", "raises ValueError: y"),
            d("median([4.0, 1.0, 3.0, 2.0])", "tests", "returns 3.0", "returns 2.5"),
            d("median([5.0, 1.0])", "tests", "returns 5.0", "returns 3.0"),
            d("median(None)", "generated", "raises TypeError: x", "returns None"),
        ];
        let calls = |all: &[Difference], max: usize| -> Vec<String> {
            chosen(all, max).into_iter().map(|d| d.call).collect()
        };
        assert_eq!(
            calls(&all, 5),
            ["median([4.0, 1.0, 3.0, 2.0])", "median([5.0, 1.0])", "median(())", "median(None)"],
            "a made-up call of a kind already shown is left out"
        );
        assert_eq!(calls(&all, 1), ["median([4.0, 1.0, 3.0, 2.0])"]);
        all.push(d("median([])", "comment", "raises IndexError: x", "raises ValueError: y"));
        all.push(d("median(x=[])", "comment", "raises IndexError: x", "raises ValueError: y"));
        assert_eq!(calls(&all, 5), ["median([])"], "the comment's calls alone, once per kind");
    }

    #[test]
    fn a_test_call_that_names_the_comments_value_comes_first_and_alone_may_become_the_test() {
        let check = |d: Difference, text: &str| Difference { check: Some(text.into()), ..d };
        let other =
            check(difference("slugify('Æble')", "tests", "returns 'ble'", "returns 'aeble'"), "other");
        let named = Difference {
            echoes: true,
            ..check(
                difference("slugify('a', max_length=0)", "tests", "returns ''", "raises ValueError: x"),
                "named",
            )
        };
        let shown: Vec<String> =
            chosen(&[other.clone(), named.clone()], 2).into_iter().map(|d| d.call).collect();
        assert_eq!(shown, ["slugify('a', max_length=0)", "slugify('Æble')"]);
        assert_eq!(written_check(&[other.clone(), named]), Some("named"));
        assert_eq!(written_check(&[other]), None, "a case of the tests the comment does not name");
    }

    #[test]
    fn a_difference_the_comments_change_does_not_cause_is_dropped() {
        let d = |c: &str, r: &str, f: &str| difference(c, "tests", r, f);
        let all = [
            d("median([])", "raises IndexError: x", "raises ValueError: y"),
            d("median([4, 1, 3, 2])", "returns 3", "returns 2.5"),
            d("median([1, 2])", "returns 2", "returns 1.5"),
        ];
        // With only the empty-input check undone: the empty call fails as reviewed, the even
        // counts still average (another change of the fix did that); the last call was not made.
        let partial = [
            call("median([])", "tests", "raises IndexError: x"),
            call("median([4, 1, 3, 2])", "tests", "returns 2.5"),
        ];
        let kept: Vec<String> = caused_by_change(&all, &partial).into_iter().map(|d| d.call).collect();
        assert_eq!(kept, ["median([])", "median([1, 2])"]);
    }

    #[test]
    fn the_prompt_text_names_both_sides() {
        let d = difference(
            "median([])",
            "comment",
            "raises IndexError: list index out of range",
            "raises ValueError: median of an empty sequence",
        );
        assert_eq!(
            shown(&[d]),
            "median([])\n# reviewed code: raises IndexError\n# changed code: raises ValueError"
        );
        let same_type = difference(
            "parse('1.h')",
            "tests",
            "returns 3600",
            "raises ValueError: malformed duration: '1.h'",
        );
        assert_eq!(
            shown(&[same_type]),
            "parse('1.h')\n# reviewed code: returns 3600\n# changed code: raises ValueError"
        );
        assert_eq!(shown(&[]), "# no call was found whose result differs");
    }
}
