//! The report's figures as self-contained SVG: the funnel (Table 3 as bars), which tests each
//! reviewer passed and their overlaps (the paper's Figure 5, drawn as an UpSet plot: one bar per
//! set of reviewers that passed exactly those tests, the set marked by dots below), and the pass
//! rate by review category (Figure 7). Plain strings, no fonts or scripts fetched: the files open
//! anywhere and embed in the HTML report as they are.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::evaluation::Evaluation;
use super::funnel::Funnel;

const FONT: &str = "font-family=\"sans-serif\" font-size=\"12\"";
/// Reviewer colours, in order; more reviewers than colours reuse them.
const PALETTE: [&str; 6] = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"];

pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn open(out: &mut String, width: usize, height: usize, title: &str) {
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\">"
    );
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    let _ = writeln!(out, "<rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>");
    let _ = writeln!(out, "<text x=\"10\" y=\"20\" {FONT} font-weight=\"bold\">{}</text>", escape(title));
}

/// About how wide `chars` characters of the charts' font are, in pixels.
fn text_width(chars: usize) -> f64 {
    7.0 * chars as f64
}

fn text(out: &mut String, x: f64, y: f64, anchor: &str, body: &str) {
    let _ = writeln!(
        out,
        "<text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"{anchor}\" {FONT}>{}</text>",
        escape(body)
    );
}

fn bar(out: &mut String, x: f64, y: f64, w: f64, h: f64, fill: &str) {
    let _ =
        writeln!(out, "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{fill}\"/>");
}

/// Horizontal bars: items (PRs) and comments left after each stage of the funnel.
pub fn funnel(f: &Funnel) -> String {
    let (label_w, bar_w, row_h) = (300.0, 360.0, 22.0);
    let height = 60 + f.funnel.len() * 2 * row_h as usize;
    let mut out = String::new();
    open(&mut out, (label_w + bar_w + 120.0) as usize, height, &format!("Funnel: {}", f.pipeline));
    let max = f.funnel.iter().map(|r| r.comments.max(r.prs)).max().unwrap_or(0).max(1) as f64;
    for (i, row) in f.funnel.iter().enumerate() {
        let y = 40.0 + (2 * i) as f64 * row_h;
        text(&mut out, label_w - 8.0, y + row_h * 0.7, "end", &row.title);
        for (k, (n, what, fill)) in
            [(row.comments, "comments", PALETTE[0]), (row.prs, "PRs", PALETTE[1])].into_iter().enumerate()
        {
            let yy = y + k as f64 * (row_h - 4.0);
            let w = bar_w * n as f64 / max;
            bar(&mut out, label_w, yy + 2.0, w, row_h - 8.0, fill);
            text(&mut out, label_w + w + 4.0, yy + row_h * 0.55, "start", &format!("{n} {what}"));
        }
    }
    out.push_str("</svg>\n");
    out
}

/// For each non-empty set of reviewers, the tests passed by exactly that set; the largest first,
/// ties in reviewer order. Tests nobody passed are counted under the empty set.
pub fn exact_overlaps(e: &Evaluation) -> (Vec<(BTreeSet<usize>, usize)>, usize) {
    let mut by_set: BTreeMap<BTreeSet<usize>, usize> = BTreeMap::new();
    let tests: BTreeSet<&String> = e.reviewers.iter().flat_map(|r| r.passed_tests.iter()).collect();
    for t in tests {
        let set = e
            .reviewers
            .iter()
            .enumerate()
            .filter(|(_, r)| r.passed_tests.contains(t))
            .map(|(i, _)| i)
            .collect();
        *by_set.entry(set).or_default() += 1;
    }
    let mut sets: Vec<_> = by_set.into_iter().collect();
    sets.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    (sets, e.tests - e.union)
}

/// Figure 5 as an UpSet plot: a bar per exact set of reviewers, dots below marking the set, and
/// each reviewer's total on the left.
pub fn overlaps(e: &Evaluation) -> String {
    const TITLE: &str = "Tests passed by each set of reviewers (Figure 5)";
    let (sets, nobody) = exact_overlaps(e);
    let labels: Vec<String> =
        e.reviewers.iter().map(|r| format!("{} ({})", r.reviewer, r.passed_tests.len())).collect();
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let (col_w, top, plot_h, dot_h) = (34.0, 40.0, 150.0, 22.0);
    let left = text_width(longest).max(120.0) + 20.0;
    let columns = sets.len().max(1);
    let width = (left + columns as f64 * col_w + 40.0).max(text_width(TITLE.len() + 4)) as usize;
    let height = (top + plot_h + 30.0 + e.reviewers.len() as f64 * dot_h + 40.0) as usize;
    let mut out = String::new();
    open(&mut out, width, height, TITLE);
    if sets.is_empty() {
        text(&mut out, left, top + plot_h / 2.0, "start", "no test passed");
    }
    let max = sets.iter().map(|s| s.1).max().unwrap_or(0).max(1) as f64;
    let base = top + plot_h;
    for (c, (set, n)) in sets.iter().enumerate() {
        let x = left + c as f64 * col_w;
        let h = (plot_h - 20.0) * *n as f64 / max;
        bar(&mut out, x + 6.0, base - h, col_w - 12.0, h, "#333333");
        text(&mut out, x + col_w / 2.0, base - h - 4.0, "middle", &n.to_string());
        let rows: Vec<f64> = set.iter().map(|r| base + 30.0 + *r as f64 * dot_h).collect();
        if let (Some(a), Some(b)) = (rows.first(), rows.last()) {
            let _ = writeln!(
                out,
                "<line x1=\"{cx:.1}\" y1=\"{a:.1}\" x2=\"{cx:.1}\" y2=\"{b:.1}\" stroke=\"#333333\" stroke-width=\"2\"/>",
                cx = x + col_w / 2.0
            );
        }
        for r in 0..e.reviewers.len() {
            let fill = if set.contains(&r) { "#333333" } else { "#dddddd" };
            let cy = base + 30.0 + r as f64 * dot_h;
            let _ = writeln!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{cy:.1}\" r=\"6\" fill=\"{fill}\"/>",
                x + col_w / 2.0
            );
        }
    }
    for (r, row) in e.reviewers.iter().enumerate() {
        let cy = base + 30.0 + r as f64 * dot_h;
        text(
            &mut out,
            left - 10.0,
            cy + 4.0,
            "end",
            &format!("{} ({})", row.reviewer, row.passed_tests.len()),
        );
    }
    let footer =
        format!("{} of {} tests passed by at least one reviewer; {nobody} by none.", e.union, e.tests);
    text(&mut out, 10.0, height as f64 - 12.0, "start", &footer);
    out.push_str("</svg>\n");
    out
}

/// Figure 7: per review category, one bar per reviewer with its pass rate.
pub fn categories(e: &Evaluation) -> String {
    let names: BTreeSet<&String> = e.reviewers.iter().flat_map(|r| r.by_category.keys()).collect();
    let (label_w, bar_w, bar_h) = (200.0, 320.0, 14.0);
    let group_h = bar_h * e.reviewers.len() as f64 + 12.0;
    let legend_h = 20.0 * e.reviewers.len() as f64;
    let height = (50.0 + names.len() as f64 * group_h + legend_h + 20.0) as usize;
    let mut out = String::new();
    open(&mut out, (label_w + bar_w + 140.0) as usize, height, "Pass rate by review category (Figure 7)");
    for (g, name) in names.iter().enumerate() {
        let y = 40.0 + g as f64 * group_h;
        text(&mut out, label_w - 8.0, y + group_h / 2.0, "end", name);
        for (r, row) in e.reviewers.iter().enumerate() {
            let Some(rate) = row.by_category.get(*name) else { continue };
            let yy = y + r as f64 * bar_h;
            let w = bar_w * rate.percent().unwrap_or(0.0) / 100.0;
            bar(&mut out, label_w, yy, w, bar_h - 2.0, PALETTE[r % PALETTE.len()]);
            let label = format!("{:.1}% ({}/{})", rate.percent().unwrap_or(0.0), rate.passed, rate.total);
            text(&mut out, label_w + w + 4.0, yy + bar_h - 4.0, "start", &label);
        }
    }
    let legend_y = 50.0 + names.len() as f64 * group_h;
    for (r, row) in e.reviewers.iter().enumerate() {
        let y = legend_y + r as f64 * 20.0;
        bar(&mut out, label_w, y, 12.0, 12.0, PALETTE[r % PALETTE.len()]);
        text(&mut out, label_w + 18.0, y + 10.0, "start", &row.reviewer);
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::evaluation::{Rate, ReviewerRow};

    fn reviewer(name: &str, passed: &[&str], category: (&str, usize, usize)) -> ReviewerRow {
        ReviewerRow {
            reviewer: name.into(),
            instances: 2,
            comments: 3,
            comments_per_pr: 1.5,
            by_category: BTreeMap::from([(
                category.0.to_string(),
                Rate { passed: category.1, total: category.2 },
            )]),
            passed_tests: passed.iter().map(|t| t.to_string()).collect(),
            ..ReviewerRow::new(&format!("score_{name}"))
        }
    }

    fn evaluation() -> Evaluation {
        Evaluation {
            reviewers: vec![
                reviewer("human", &["t1", "t2", "t3"], ("Logic", 3, 4)),
                reviewer("a<b", &["t1", "t4"], ("Logic", 1, 4)),
                reviewer("c", &["t1", "t2"], ("Docs", 0, 1)),
            ],
            tests: 5,
            union: 4,
            regression_checked: 0,
        }
    }

    #[test]
    fn overlaps_count_each_test_under_the_exact_set_that_passed_it() {
        let (sets, nobody) = exact_overlaps(&evaluation());
        let as_vec = |s: &BTreeSet<usize>| s.iter().copied().collect::<Vec<_>>();
        let got: Vec<(Vec<usize>, usize)> = sets.iter().map(|(s, n)| (as_vec(s), *n)).collect();
        // t1 by all three, t2 by human and c, t3 by human alone, t4 by a<b alone; t5 by nobody.
        assert_eq!(got, vec![(vec![0], 1), (vec![0, 1, 2], 1), (vec![0, 2], 1), (vec![1], 1)]);
        assert_eq!(nobody, 1);
    }

    #[test]
    fn figures_draw_one_mark_per_datum_and_escape_names() {
        let e = evaluation();
        let svg = overlaps(&e);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        // 4 set bars (plus the background), and a dot per set and reviewer.
        assert_eq!(svg.matches("<rect").count(), 1 + 4);
        assert_eq!(svg.matches("<circle").count(), 4 * 3);
        assert!(svg.contains("a&lt;b (2)") && !svg.contains("a<b"));
        assert!(svg.contains("4 of 5 tests passed by at least one reviewer; 1 by none."));
        let svg = categories(&e);
        // Background, 3 category bars, 3 legend swatches.
        assert_eq!(svg.matches("<rect").count(), 1 + 3 + 3);
        assert!(svg.contains(">75.0% (3/4)<") && svg.contains(">0.0% (0/1)<"));
    }
}
