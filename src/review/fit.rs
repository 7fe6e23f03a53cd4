//! A patch cut to fit a reviewer's prompt. A real PR's diff can be many times a small model's
//! context (pygments 2662: 26,442 tokens against 8,192, most of them a lexer's example files), and
//! a prompt the server refuses gives no review at all. What a reviewer needs most is the code the
//! PR changes, so whole files are kept, the code's before the tests' and the rest, and the files
//! left out are named.

use crate::repo::hunks::file_sections;
use crate::synthesis::project::is_test_side;

/// Which files go first: the code (0), then the tests' code (1), then the rest: data the tests
/// read, documentation, configuration (2).
fn rank(path: &str) -> u8 {
    const CODE: [&str; 8] = ["py", "pyx", "pxd", "c", "h", "cpp", "rs", "js"];
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match (CODE.contains(&ext), is_test_side(path)) {
        (true, false) => 0,
        (true, true) => 1,
        (false, _) => 2,
    }
}

/// `patch` within `budget` bytes: whole file sections, taken the code's first, then the tests',
/// then the rest's (each in the patch's order), shown in the patch's order, with a last line that
/// names the files left out. A patch that fits is returned as it is. When not even the first code
/// file fits, its first hunks that do are kept.
pub fn fit_patch(patch: &str, budget: usize) -> String {
    if patch.len() <= budget {
        return patch.to_string();
    }
    let (head, sections) = file_sections(patch);
    let mut order: Vec<usize> = (0..sections.len()).collect();
    order.sort_by_key(|&i| rank(sections[i].path));
    let mut kept = vec![false; sections.len()];
    let mut used = head.len();
    for i in order.iter().copied() {
        if used + sections[i].text.len() <= budget {
            kept[i] = true;
            used += sections[i].text.len();
        }
    }
    let mut out = head.to_string();
    // Not even one file fits: the first one's hunks that do.
    let cut = order.first().copied().filter(|_| !kept.contains(&true));
    for (i, section) in sections.iter().enumerate() {
        if Some(i) == cut {
            let hunks = first_hunks(section.text, budget.saturating_sub(head.len()));
            kept[i] = !hunks.is_empty();
            out.push_str(&hunks);
        } else if kept[i] {
            out.push_str(section.text);
        }
    }
    let left: Vec<&str> = sections.iter().zip(&kept).filter(|(_, k)| !**k).map(|(s, _)| s.path).collect();
    if !left.is_empty() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("(left out for length: the changes to {})\n", left.join(", ")));
    }
    out
}

/// The header of a file section and as many of its first hunks as fit in `budget` bytes; empty
/// when not even the first does.
fn first_hunks(section: &str, budget: usize) -> String {
    let mut out = String::new();
    let mut hunk = String::new();
    for line in section.split_inclusive('\n') {
        if line.starts_with("@@") && !hunk.is_empty() {
            if out.len() + hunk.len() > budget {
                return out;
            }
            out.push_str(&hunk);
            hunk.clear();
        }
        hunk.push_str(line);
    }
    if out.len() + hunk.len() <= budget {
        out.push_str(&hunk);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, lines: usize) -> String {
        let body: String = (0..lines).map(|i| format!("+line {i}\n")).collect();
        format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -0,0 +1,{lines} @@\n{body}")
    }

    #[test]
    fn a_patch_that_fits_is_left_as_it_is() {
        let patch = file("a.py", 3);
        assert_eq!(fit_patch(&patch, 10_000), patch);
    }

    #[test]
    fn the_code_is_kept_before_tests_and_data_and_what_is_left_out_is_named() {
        let (data, code, test) = (
            file("tests/examplefiles/x.gleam", 400),
            file("lexers/gleam.py", 20),
            file("tests/test_gleam.py", 20),
        );
        let patch = format!("{data}{code}{test}");
        let fitted = fit_patch(&patch, code.len() + test.len() + 100);
        assert_eq!(
            fitted,
            format!("{code}{test}(left out for length: the changes to tests/examplefiles/x.gleam)\n")
        );
        // Less room: the tests go too, the code stays.
        let fitted = fit_patch(&patch, code.len() + 100);
        assert!(fitted.starts_with(&code), "{fitted}");
        assert!(
            fitted.ends_with("the changes to tests/examplefiles/x.gleam, tests/test_gleam.py)\n"),
            "{fitted}"
        );
    }

    #[test]
    fn a_single_file_too_large_keeps_its_first_hunks() {
        let two = format!("{}@@ -9,0 +30,2 @@\n+more\n+more\n", file("big.py", 5));
        let one_hunk = file("big.py", 5).len();
        let fitted = fit_patch(&format!("{two}{}", file("big_test.txt", 500)), one_hunk + 5);
        assert!(fitted.starts_with(&file("big.py", 5)), "{fitted}");
        assert!(!fitted.contains("+more"), "{fitted}");
        assert!(fitted.ends_with("(left out for length: the changes to big_test.txt)\n"), "{fitted}");
    }
}
