//! The paper's Table 4: statistics of a finished benchmark.

use std::fmt::Write;

use serde::Serialize;

/// What one exported instance contributes.
pub struct InstanceFacts {
    pub repo: String,
    pub modified_lines: usize,
    /// Per test: its kind (`behavioural` or `structural`), its lines, its synthesis attempts.
    pub tests: Vec<(String, usize, u64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tests {
    pub total: usize,
    pub behavioural: usize,
    pub structural: usize,
    pub per_instance: f64,
    pub lines_mean: f64,
    /// Model answers it took to get each accepted test, on average.
    pub synthesis_attempts_mean: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stats {
    pub repositories: usize,
    pub instances: usize,
    pub modified_lines_mean: f64,
    pub modified_lines_median: f64,
    pub tests: Tests,
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { 0.0 } else { round2(sum / n as f64) }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn median(mut xs: Vec<usize>) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.sort_unstable();
    let n = xs.len();
    if n % 2 == 1 { xs[n / 2] as f64 } else { (xs[n / 2 - 1] + xs[n / 2]) as f64 / 2.0 }
}

/// Lines added or removed by a unified diff, headers not counted.
pub fn modified_lines(patch: &str) -> usize {
    patch
        .lines()
        .filter(|l| {
            (l.starts_with('+') && !l.starts_with("+++")) || (l.starts_with('-') && !l.starts_with("---"))
        })
        .count()
}

pub fn stats(instances: &[InstanceFacts]) -> Stats {
    let mut repos: Vec<&str> = instances.iter().map(|i| i.repo.as_str()).collect();
    repos.sort_unstable();
    repos.dedup();
    let tests: Vec<&(String, usize, u64)> = instances.iter().flat_map(|i| &i.tests).collect();
    let kind = |k: &str| tests.iter().filter(|t| t.0 == k).count();
    Stats {
        repositories: repos.len(),
        instances: instances.len(),
        modified_lines_mean: mean(instances.iter().map(|i| i.modified_lines as f64)),
        modified_lines_median: median(instances.iter().map(|i| i.modified_lines).collect()),
        tests: Tests {
            total: tests.len(),
            behavioural: kind("behavioural"),
            structural: kind("structural"),
            per_instance: if instances.is_empty() {
                0.0
            } else {
                round2(tests.len() as f64 / instances.len() as f64)
            },
            lines_mean: mean(tests.iter().map(|t| t.1 as f64)),
            synthesis_attempts_mean: mean(tests.iter().map(|t| t.2 as f64)),
        },
    }
}

fn share(n: usize, of: usize) -> String {
    if of == 0 { format!("{n}") } else { format!("{n} ({:.1}%)", 100.0 * n as f64 / of as f64) }
}

impl Stats {
    pub fn to_markdown(&self) -> String {
        let t = &self.tests;
        let mut out = String::new();
        let _ = writeln!(out, "| Statistic | Value |\n|---|---|");
        let _ = writeln!(out, "| Repositories | {} |", self.repositories);
        let _ = writeln!(out, "| Instances (PRs) | {} |", self.instances);
        let _ = writeln!(
            out,
            "| Avg. modified lines | {:.1} (median {:.1}) |",
            self.modified_lines_mean, self.modified_lines_median
        );
        let _ = writeln!(out, "| Total review comments (tests) | {} |", t.total);
        let _ = writeln!(out, "| Behavioural | {} |", share(t.behavioural, t.total));
        let _ = writeln!(out, "| Structural | {} |", share(t.structural, t.total));
        let _ = writeln!(out, "| Avg. tests per instance | {:.2} |", t.per_instance);
        let _ = writeln!(out, "| Avg. lines per test | {:.1} |", t.lines_mean);
        let _ = writeln!(out, "| Avg. model answers per accepted test | {:.2} |", t.synthesis_attempts_mean);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_4_is_computed_from_the_instances() {
        let facts = vec![
            InstanceFacts {
                repo: "a/x".into(),
                modified_lines: 10,
                tests: vec![("behavioural".into(), 6, 1), ("structural".into(), 9, 2)],
            },
            InstanceFacts {
                repo: "a/x".into(),
                modified_lines: 30,
                tests: vec![("structural".into(), 12, 3)],
            },
            InstanceFacts { repo: "b/y".into(), modified_lines: 5, tests: vec![("structural".into(), 3, 1)] },
        ];
        let s = stats(&facts);
        assert_eq!((s.repositories, s.instances), (2, 3));
        assert_eq!((s.modified_lines_mean, s.modified_lines_median), (15.0, 10.0));
        assert_eq!((s.tests.total, s.tests.behavioural, s.tests.structural), (4, 1, 3));
        assert_eq!(
            (s.tests.per_instance, s.tests.lines_mean, s.tests.synthesis_attempts_mean),
            (1.33, 7.5, 1.75)
        );
        let md = s.to_markdown();
        assert!(
            md.contains("| Structural | 3 (75.0%) |")
                && md.contains("| Avg. modified lines | 15.0 (median 10.0) |")
        );
        assert_eq!(modified_lines("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n c\n"), 2);
    }
}
