//! The report as one self-contained HTML file, for people who would rather look than read: the
//! same text as the Markdown report (rendered from it, so the two never disagree) and the figures
//! inline as SVG. No scripts, fonts or styles are fetched.
//!
//! The renderer knows only what the Markdown report uses: `#` headings, pipe tables (a `---:`
//! column is right-aligned), `-` lists nested by two spaces, paragraphs and `code` spans.

use std::fmt::Write;

use super::chart::escape;

const STYLE: &str = "body{font-family:sans-serif;max-width:70em;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:.25em .6em}\
th{background:#f3f3f3}td.n{text-align:right}code{background:#f3f3f3;padding:0 .2em}\
figure{margin:1.5em 0}figcaption{font-size:.9em;color:#555}";

/// Inline Markdown: escaped text with `code` spans.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for (i, part) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

fn cells(line: &str) -> Vec<&str> {
    let line = line.trim().trim_start_matches('|').trim_end_matches('|');
    line.split('|').map(str::trim).collect()
}

fn table(out: &mut String, lines: &[&str]) {
    let header = cells(lines[0]);
    let right: Vec<bool> =
        lines.get(1).map(|l| cells(l).iter().map(|c| c.ends_with(':')).collect()).unwrap_or_default();
    out.push_str("<table>\n<tr>");
    for h in &header {
        let _ = write!(out, "<th>{}</th>", inline(h));
    }
    out.push_str("</tr>\n");
    for line in lines.iter().skip(2) {
        out.push_str("<tr>");
        for (i, c) in cells(line).iter().enumerate() {
            let class = if right.get(i).copied().unwrap_or(false) { " class=\"n\"" } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", inline(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

fn list(out: &mut String, lines: &[&str]) {
    // A nested list goes inside the item before it, which stays open until the level falls back.
    let mut depth = 0;
    for line in lines {
        let indent = line.len() - line.trim_start().len();
        let level = indent / 2 + 1;
        if level > depth {
            while depth < level {
                out.push_str("<ul>\n");
                depth += 1;
            }
        } else {
            out.push_str("</li>\n");
            while depth > level {
                out.push_str("</ul>\n</li>\n");
                depth -= 1;
            }
        }
        let item = line.trim_start().trim_start_matches("- ");
        let _ = write!(out, "<li>{}", inline(item));
    }
    if depth > 0 {
        out.push_str("</li>\n");
    }
    while depth > 1 {
        out.push_str("</ul>\n</li>\n");
        depth -= 1;
    }
    if depth == 1 {
        out.push_str("</ul>\n");
    }
}

/// Markdown (the report's subset) to HTML.
pub fn markdown(md: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        // A block runs while its lines look alike.
        let block = |start: usize, like: &dyn Fn(&str) -> bool| {
            let mut end = start;
            while end < lines.len() && like(lines[end]) {
                end += 1;
            }
            end
        };
        if line.trim().is_empty() {
            i += 1;
        } else if let Some(level) = (1..=6).find(|n| trimmed.starts_with(&format!("{} ", "#".repeat(*n)))) {
            let _ = writeln!(out, "<h{level}>{}</h{level}>", inline(trimmed[level + 1..].trim()));
            i += 1;
        } else if trimmed.starts_with('|') {
            let end = block(i, &|l: &str| l.trim_start().starts_with('|'));
            table(&mut out, &lines[i..end]);
            i = end;
        } else if trimmed.starts_with("- ") {
            let end = block(i, &|l: &str| l.trim_start().starts_with("- "));
            list(&mut out, &lines[i..end]);
            i = end;
        } else {
            let end = block(i, &|l: &str| {
                let t = l.trim_start();
                !t.is_empty() && !t.starts_with('|') && !t.starts_with("- ") && !t.starts_with('#')
            });
            let _ = writeln!(out, "<p>{}</p>", inline(&lines[i..end].join(" ")));
            i = end;
        }
    }
    out
}

/// The whole page: the report's text, then its figures with their captions.
pub fn page(title: &str, report_md: &str, figures: &[(&str, String)]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>",
        escape(title)
    );
    out.push_str(&markdown(report_md));
    if !figures.is_empty() {
        out.push_str("<h2>Figures</h2>\n");
    }
    for (caption, svg) in figures {
        let _ = writeln!(out, "<figure>\n{svg}<figcaption>{}</figcaption>\n</figure>", escape(caption));
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_subset_renders() {
        let md = "# Funnel: x\n\n| Stage | PRs |\n|---|---:|\n| Review `filter` | 3 |\n\n## Reasons\n\n- Tests (`tests`)\n  - 2 × failed <both>\n- Other\n\nUnion: 1 of 2\ntests.\n";
        let html = markdown(md);
        assert_eq!(
            html,
            "<h1>Funnel: x</h1>\n<table>\n<tr><th>Stage</th><th>PRs</th></tr>\n<tr><td>Review <code>filter</code></td><td class=\"n\">3</td></tr>\n</table>\n<h2>Reasons</h2>\n<ul>\n<li>Tests (<code>tests</code>)<ul>\n<li>2 × failed &lt;both&gt;</li>\n</ul>\n</li>\n<li>Other</li>\n</ul>\n<p>Union: 1 of 2 tests.</p>\n"
        );
    }

    #[test]
    fn a_page_is_self_contained() {
        let page = page("r", "# A\n", &[("Figure", "<svg></svg>\n".to_string())]);
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        assert!(page.contains("<figure>\n<svg></svg>\n<figcaption>Figure</figcaption>"));
        assert!(!page.contains("http://") && !page.contains("https://") && !page.contains("<script"));
    }
}
