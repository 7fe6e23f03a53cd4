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

/// At most `max` differences for the prompt: calls the comment makes first, then the project's
/// tests' calls, then made-up ones; of made-up calls, one per kind of difference and function,
/// the shortest.
pub fn chosen(all: &[Difference], max: usize) -> Vec<Difference> {
    let mut ordered: Vec<&Difference> = all.iter().collect();
    ordered.sort_by_key(|d| (rank(&d.from), if d.from == "generated" { d.call.len() } else { 0 }));
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for d in ordered {
        let function = d.call.split('(').next().unwrap_or("").to_string();
        let key = (function, kind(d));
        if d.from == "generated" && seen.contains(&key) {
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

/// The differences as the prompt shows them: a Python comment per call.
pub fn shown(differences: &[Difference]) -> String {
    if differences.is_empty() {
        return "# no call was found whose result differs".to_string();
    }
    differences
        .iter()
        .map(|d| format!("{}\n# reviewed code: {}\n# changed code: {}", d.call, d.reviewed, d.fixed))
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
    fn the_comments_calls_come_first_and_made_up_ones_once_per_kind() {
        let d = |c: &str, from: &str, r: &str, f: &str| Difference {
            call: c.into(),
            from: from.into(),
            reviewed: r.into(),
            fixed: f.into(),
        };
        let all = [
            d("median([3, 1, 2, 4])", "generated", "returns 3", "returns 2.5"),
            d("median([1, 2])", "generated", "returns 2", "returns 1.5"),
            d("median(())", "generated", "raises IndexError: x", "raises ValueError: y"),
            d("median([4.0, 1.0, 3.0, 2.0])", "tests", "returns 3.0", "returns 2.5"),
            d("median([])", "comment", "raises IndexError: x", "raises ValueError: y"),
            d("median(None)", "generated", "raises TypeError: x", "returns None"),
            d("mean(())", "generated", "raises IndexError: x", "raises ValueError: y"),
        ];
        let shown: Vec<String> = chosen(&all, 4).into_iter().map(|d| d.call).collect();
        assert_eq!(shown, ["median([])", "median([4.0, 1.0, 3.0, 2.0])", "mean(())", "median(None)"]);
        let first: Vec<String> = chosen(&all, 1).into_iter().map(|d| d.call).collect();
        assert_eq!(first, ["median([])"]);
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
            "median([])\n# reviewed code: raises IndexError: list index out of range\n# changed code: raises ValueError: median of an empty sequence"
        );
        assert_eq!(shown(&[]), "# no call was found whose result differs");
    }
}
