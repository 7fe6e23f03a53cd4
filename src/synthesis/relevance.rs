//! The relevance gate's pure parts: which lines of the fixed code an accepted test must reach to be
//! about its comment (the attributed changes), whether a behavioural test's trace reached them,
//! whether a structural test reads the definition they belong to, and the fixed file with those
//! changes alone undone (the partial revert a behavioural test must fail on).

use std::collections::BTreeMap;

/// A change of the fix attributed to the comment, as the gate needs it.
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    /// The file at the fixed commit.
    pub path: &'a str,
    /// Added lines, numbered in the fixed file.
    pub added: &'a [u64],
    /// Removed lines, numbered in the reviewed file.
    pub removed: &'a [u64],
    /// Where the change starts in the fixed file.
    pub new_start: u64,
}

/// Lines of the fixed files a test must reach: per file, line numbers.
pub type Targets = BTreeMap<String, Vec<u64>>;

/// New-side lines around a deletion: where the removed lines were.
const AROUND_DELETION: u64 = 6;

/// Whether line `at` (from 0) of `file` is in a function's body: reading upwards, a line less
/// indented than all below it (and not closing brackets) opens a `def` before the module's top
/// level is reached. A
/// module-level statement spread over lines (`OPS = frozenset([` ... `'in', 'is'] +`) is not, nor
/// is a class body's own statement.
fn in_function(file: &[&str], at: usize) -> bool {
    let Some(line) = file.get(at) else { return false };
    let mut indent = line.len() - line.trim_start().len();
    for l in file[..at].iter().rev() {
        let t = l.trim_start();
        let here = l.len() - t.len();
        // A line that closes brackets (a header's `):`) continues a statement above it.
        if t.is_empty() || t.starts_with(['#', ')', ']', '}']) || here >= indent {
            continue;
        }
        if t.strip_prefix("async ").unwrap_or(t).starts_with("def ") {
            return true;
        }
        indent = here;
        if here == 0 {
            break;
        }
    }
    false
}

/// A line that runs when its module is imported, so any test that imports the module "reaches" it:
/// a header, a comment, a blank, or any line outside a function's body.
fn runs_at_import(file: &[&str], n: u64) -> bool {
    let text = file.get((n as usize).wrapping_sub(1)).copied().unwrap_or("");
    let t = text.trim_start();
    t.starts_with("def ")
        || t.starts_with("async def ")
        || t.starts_with("class ")
        || t.starts_with('@')
        || t.starts_with('#')
        || t.is_empty()
        || t.starts_with("\"\"\"")
        || !in_function(file, (n as usize).wrapping_sub(1))
}

/// Lines a `def` header may span: a search back for one stops here.
const MAX_HEADER_LINES: usize = 40;

/// For line `n` (from 1) of a `def` header that spans lines (a parameter, the closing `):`), the
/// `def` line: the lines of a signature never run on their own (a call binds the arguments without
/// a line event; a binding that fails never enters the body), while the `def` line runs when the
/// module is imported. The partial revert then tells whether a test depends on the signature.
/// `None` for any other line.
fn def_line_of_header(file: &[&str], n: u64) -> Option<u64> {
    let at = usize::try_from(n).ok()?.checked_sub(1)?;
    if at >= file.len() {
        return None;
    }
    let def = (at.saturating_sub(MAX_HEADER_LINES)..at).rev().find(|&i| {
        let t = file[i].trim_start();
        t.starts_with("def ") || t.starts_with("async def ")
    })?;
    let (_, body) = super::facts::joined_header(file, def);
    (at < body).then_some(def as u64 + 1)
}

/// The lines a behavioural test must execute: the added lines of the attributed changes, less the
/// ones that run at import when others remain; for a change that only removes lines, the lines
/// where they were. `fixed` gives a fixed file's text by path.
pub fn targets(changes: &[Change<'_>], fixed: impl Fn(&str) -> Option<String>) -> Targets {
    let mut out = Targets::new();
    for change in changes.iter().filter(|c| c.path.ends_with(".py")) {
        let lines: Vec<u64> = if change.added.is_empty() {
            (change.new_start..change.new_start + AROUND_DELETION).collect()
        } else {
            change.added.to_vec()
        };
        let text = fixed(change.path).unwrap_or_default();
        let file: Vec<&str> = text.lines().collect();
        let body: Vec<u64> =
            lines.iter().copied().filter(|n| *n >= 1 && !runs_at_import(&file, *n)).collect();
        // Lines of a signature spread over lines never run on their own: with nothing else to
        // reach, its `def` line stands for them.
        let (header, body): (Vec<u64>, Vec<u64>) =
            body.into_iter().partition(|n| def_line_of_header(&file, *n).is_some());
        let defs: Vec<u64> = header.iter().filter_map(|n| def_line_of_header(&file, *n)).collect();
        let chosen = match (body.is_empty(), defs.is_empty()) {
            (false, _) => body,
            (true, false) => defs,
            (true, true) => lines,
        };
        out.entry(change.path.to_string()).or_default().extend(chosen);
    }
    for lines in out.values_mut() {
        lines.sort_unstable();
        lines.dedup();
    }
    out.retain(|_, lines| !lines.is_empty());
    out
}

/// Whether every target line runs only when its module is imported (a module-level constant, a
/// class attribute): a trace from a test's setup to its teardown never names such a line, so
/// coverage cannot tell a test that depends on it from one that does not, and the partial revert
/// must decide alone. A `def` line is not one: a call of the function reports it.
pub fn only_at_import(targets: &Targets, fixed: impl Fn(&str) -> Option<String>) -> bool {
    !targets.is_empty()
        && targets.iter().all(|(path, lines)| {
            let text = fixed(path).unwrap_or_default();
            let file: Vec<&str> = text.lines().collect();
            lines.iter().all(|n| {
                let t = file.get((*n as usize).wrapping_sub(1)).map_or("", |l| l.trim_start());
                let def = t.strip_prefix("async ").unwrap_or(t).starts_with("def ");
                !def && runs_at_import(&file, *n)
            })
        })
}

/// The target lines a trace reached.
pub fn covered(targets: &Targets, traced: &BTreeMap<String, Vec<u64>>) -> Targets {
    targets
        .iter()
        .filter_map(|(path, lines)| {
            let hit = traced.get(path)?;
            let both: Vec<u64> = lines.iter().copied().filter(|n| hit.contains(n)).collect();
            (!both.is_empty()).then(|| (path.clone(), both))
        })
        .collect()
}

/// The names of the definitions that hold (or are) the target lines, innermost first per line.
pub fn definitions(targets: &Targets, fixed: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let mut names = Vec::new();
    for (path, lines) in targets {
        let Some(text) = fixed(path) else { continue };
        let file: Vec<&str> = text.lines().collect();
        for line in lines {
            // The lines up to the target's, read upwards (all of them for a line past the end).
            let upto = (*line as usize).min(file.len());
            let mut indent = usize::MAX;
            for l in file[..upto].iter().rev() {
                let t = l.trim_start();
                let here = l.len() - t.len();
                if t.is_empty() || here >= indent {
                    continue;
                }
                let header = t.strip_prefix("async ").unwrap_or(t);
                let name = header.strip_prefix("def ").or_else(|| header.strip_prefix("class "));
                if let Some(name) = name {
                    let name: String =
                        name.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if !name.is_empty() && !names.contains(&name) {
                        names.push(name);
                    }
                }
                indent = here;
                if here == 0 {
                    break;
                }
            }
        }
    }
    names
}

/// The fixed file at `path` with its attributed changes undone: each change's added lines replaced
/// by the lines it removed, read from the reviewed file. `None` when that cannot be done alone: a
/// change only removes lines (where they go back is not known), or its lines are not where it says.
pub fn reverted(path: &str, changes: &[Change<'_>], fixed: &str, reviewed: &str) -> Option<String> {
    let mut mine: Vec<&Change<'_>> = changes.iter().filter(|c| c.path == path).collect();
    if mine.is_empty() || mine.iter().any(|c| c.added.is_empty()) {
        return None;
    }
    // From the bottom up, so earlier line numbers still hold.
    mine.sort_by_key(|c| std::cmp::Reverse(c.added[0]));
    let mut lines: Vec<&str> = fixed.lines().collect();
    let old: Vec<&str> = reviewed.lines().collect();
    for change in mine {
        let (first, last) = (change.added[0] as usize, *change.added.last()? as usize);
        if first == 0 || last > lines.len() || last - first + 1 != change.added.len() {
            return None;
        }
        let back: Vec<&str> = change
            .removed
            .iter()
            .map(|n| old.get((*n as usize).checked_sub(1)?).copied())
            .collect::<Option<_>>()?;
        lines.splice(first - 1..last, back);
    }
    let mut text = lines.join("\n");
    if fixed.ends_with('\n') {
        text.push('\n');
    }
    Some(text)
}

/// The target lines with their text, as the model is shown them: at most `max`.
pub fn shown(targets: &Targets, fixed: impl Fn(&str) -> Option<String>, max: usize) -> String {
    let mut out = Vec::new();
    for (path, lines) in targets {
        let text = fixed(path).unwrap_or_default();
        let file: Vec<&str> = text.lines().collect();
        for n in lines {
            let line = file.get((*n as usize).saturating_sub(1)).copied().unwrap_or("");
            out.push(format!("{path}:{n}: {}", line.trim_end()));
        }
    }
    let more = out.len().saturating_sub(max);
    out.truncate(max);
    if more > 0 {
        out.push(format!("… and {more} more"));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXED: &str = "import os\n\n\ndef median(xs):\n    if not xs:\n        raise ValueError(\"empty\")\n    return sorted(xs)[len(xs) // 2]\n\n\nclass Stats:\n    def mean(self, xs):\n        \"\"\"The mean.\"\"\"\n        return sum(xs) / len(xs)\n";

    fn change(added: &[u64], new_start: u64) -> Change<'_> {
        Change { path: "m.py", added, removed: &[], new_start }
    }

    fn fixed(path: &str) -> Option<String> {
        (path == "m.py").then(|| FIXED.to_string())
    }

    #[test]
    fn targets_leave_out_what_runs_at_import_when_more_remains() {
        let t = targets(&[change(&[4, 5, 6], 4)], fixed);
        assert_eq!(t["m.py"], vec![5, 6]);
        // Only import-time lines: they are all there is to reach.
        assert_eq!(targets(&[change(&[1], 1)], fixed)["m.py"], vec![1]);
        // A deletion: the lines around where it was.
        assert_eq!(targets(&[change(&[], 5)], fixed)["m.py"], vec![5, 6, 7]);
    }

    #[test]
    fn a_module_level_statement_over_lines_runs_at_import() {
        // pycodestyle 847's fix: one continuation line of a module-level constant.
        let text = "import re\nOPS = frozenset([\n    '==',\n    'and', 'in', 'or'] +\n    EXTRA)\n\n\nclass K:\n    x = [\n        1]\n\n    def f(self):\n        y = [\n            2]\n        return y\n";
        let fixed = |_: &str| Some(text.to_string());
        let module = targets(&[change(&[4], 4)], fixed);
        assert_eq!(module["m.py"], vec![4]);
        assert!(only_at_import(&module, fixed));
        // A class attribute over two lines runs at import too.
        assert!(only_at_import(&targets(&[change(&[10], 9)], fixed), fixed));
        // A continuation line in a method's body does not, and wins over an import-time line.
        let body = targets(&[change(&[4, 14], 4)], fixed);
        assert_eq!(body["m.py"], vec![14]);
        assert!(!only_at_import(&body, fixed));
        // A def line stands for a signature a call reports.
        assert!(!only_at_import(&targets(&[change(&[12], 12)], fixed), fixed));
        assert!(!only_at_import(&Targets::new(), fixed));
    }

    #[test]
    fn a_signature_spread_over_lines_is_reached_at_its_def_line() {
        let text = "class TimeDelta:\n    def __init__(\n        self,\n        serde_type=int,\n    ):\n        self.unit = 1\n\n    def one(self, x=2):\n        return x\n";
        let fixed = |_: &str| Some(text.to_string());
        // The new parameter and the closing line: no line event ever names them.
        assert_eq!(targets(&[change(&[3, 4, 5], 2)], fixed)["m.py"], vec![2]);
        // With a body line changed too, the body line: a call runs it.
        assert_eq!(targets(&[change(&[4, 6], 2)], fixed)["m.py"], vec![6]);
        // A one-line header changed alone is its own target, as any import-time line is.
        assert_eq!(targets(&[change(&[8], 8)], fixed)["m.py"], vec![8]);
        assert_eq!(targets(&[change(&[9], 9)], fixed)["m.py"], vec![9]);
    }

    #[test]
    fn a_trace_covers_targets_and_definitions_hold_them() {
        let t = targets(&[change(&[5, 6], 4)], fixed);
        let traced = BTreeMap::from([("m.py".to_string(), vec![4, 5, 7])]);
        assert_eq!(covered(&t, &traced), Targets::from([("m.py".to_string(), vec![5])]));
        assert!(covered(&t, &BTreeMap::new()).is_empty());
        assert_eq!(definitions(&t, fixed), vec!["median"]);
        let doc = targets(&[change(&[12], 11)], fixed);
        assert_eq!(definitions(&doc, fixed), vec!["mean", "Stats"]);
        assert_eq!(shown(&t, fixed, 1), "m.py:5:     if not xs:\n… and 1 more");
    }

    #[test]
    fn a_revert_puts_back_what_each_change_removed_and_takes_out_what_it_added() {
        let reviewed = "import os\n\n\ndef median(xs):\n    return sorted(xs)[len(xs) // 2]\n\n\nclass Stats:\n    def mean(self, xs):\n        return float(sum(xs)) / len(xs)\n";
        // The guard added at 5-6, the docstring at 12, and the mean's line 10 rewritten as 13.
        let guard = Change { path: "m.py", added: &[5, 6], removed: &[], new_start: 5 };
        let doc = Change { path: "m.py", added: &[12], removed: &[], new_start: 12 };
        let mean = Change { path: "m.py", added: &[13], removed: &[10], new_start: 13 };
        assert_eq!(reverted("m.py", &[guard, doc, mean], FIXED, reviewed).as_deref(), Some(reviewed));
        // Only the guard undone: the rest of the fix stays.
        let partial = reverted("m.py", &[guard], FIXED, reviewed).unwrap();
        assert!(!partial.contains("raise ValueError") && partial.contains("The mean."), "{partial}");
        assert!(partial.ends_with("return sum(xs) / len(xs)\n"), "{partial}");
        // A rewritten line comes back from the reviewed file.
        let back = reverted("m.py", &[mean], FIXED, reviewed).unwrap();
        assert!(
            back.ends_with("        \"\"\"The mean.\"\"\"\n        return float(sum(xs)) / len(xs)\n"),
            "{back}"
        );
        // What cannot be undone alone: a pure removal, lines that are not there.
        let removal = Change { path: "m.py", added: &[], removed: &[5], new_start: 5 };
        assert_eq!(reverted("m.py", &[removal], FIXED, reviewed), None);
        let beyond = Change { path: "m.py", added: &[40], removed: &[], new_start: 40 };
        assert_eq!(reverted("m.py", &[beyond], FIXED, reviewed), None);
        assert_eq!(reverted("other.py", &[guard], FIXED, reviewed), None);
    }
}
