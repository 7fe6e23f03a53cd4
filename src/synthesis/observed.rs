//! Observed behaviour, the strongest fact a test writer can be given: the calls whose results
//! differ between the reviewed and the fixed code (made by the probe, `exec::probe`), chosen and
//! written out for the prompt.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::exec::probe::Call;

/// A call that gave one thing on the reviewed code and another on the fixed code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    pub call: String,
    /// Where the call came from: `comment`, `tests` or `generated`.
    pub from: String,
    pub reviewed: String,
    pub fixed: String,
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

fn rank(from: &str) -> u8 {
    match from {
        "comment" => 0,
        "tests" => 1,
        _ => 2,
    }
}

/// At most `max` differences for the prompt. When calls the comment writes differ, only those: the
/// reviewer named the case, and the other calls of a function the fix changed in several ways are
/// often about another comment. Else the project's tests' calls, then made-up ones. Of the
/// comment's and made-up calls, one per function and kind of difference (the shortest made-up one).
pub fn chosen(all: &[Difference], max: usize) -> Vec<Difference> {
    let from_comment = all.iter().any(|d| d.from == "comment");
    let mut ordered: Vec<&Difference> = all.iter().filter(|d| !from_comment || d.from == "comment").collect();
    ordered.sort_by_key(|d| (rank(&d.from), if d.from == "generated" { d.call.len() } else { 0 }));
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
        Call { call: call.into(), from: from.into(), result: result.into() }
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
        let d = |c: &str, from: &str, r: &str, f: &str| Difference {
            call: c.into(),
            from: from.into(),
            reviewed: r.into(),
            fixed: f.into(),
        };
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
    fn a_difference_the_comments_change_does_not_cause_is_dropped() {
        let d = |c: &str, r: &str, f: &str| Difference {
            call: c.into(),
            from: "tests".into(),
            reviewed: r.into(),
            fixed: f.into(),
        };
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
        let d = Difference {
            call: "median([])".into(),
            from: "comment".into(),
            reviewed: "raises IndexError: list index out of range".into(),
            fixed: "raises ValueError: median of an empty sequence".into(),
        };
        assert_eq!(
            shown(&[d]),
            "median([])\n# reviewed code: raises IndexError\n# changed code: raises ValueError"
        );
        let same_type = Difference {
            call: "parse('1.h')".into(),
            from: "tests".into(),
            reviewed: "returns 3600".into(),
            fixed: "raises ValueError: malformed duration: '1.h'".into(),
        };
        assert_eq!(
            shown(&[same_type]),
            "parse('1.h')\n# reviewed code: returns 3600\n# changed code: raises ValueError"
        );
        assert_eq!(shown(&[]), "# no call was found whose result differs");
    }
}
