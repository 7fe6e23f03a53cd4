//! The text-similarity scores the paper argues against (its Table 2), for contrast with the
//! executable ones: how much a tool's comment reads like the human comment it is paired with.
//!
//! - **BLEU-4**: the geometric mean of clipped 1- to 4-gram precisions over word tokens, times a
//!   brevity penalty. Sentence level, so n-gram orders with no match would zero it: orders 2 to 4
//!   are add-one smoothed (Lin and Och's smoothing, as code-review papers use).
//! - **ROUGE-L**: the F1 of the longest common subsequence of word tokens.
//! - **chrF**: the character 1- to 6-gram F-score with recall weighted by beta = 2, whitespace
//!   removed, precision and recall averaged over the orders first.
//!
//! All three are on a 0–100 scale. Word tokens are lowercased runs of letters and digits, and each
//! other visible character on its own, so `foo()` and `foo ( )` tokenise alike.

use std::collections::HashMap;
use std::hash::Hash;

use serde::Serialize;

/// One pair's three scores, 0–100.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Similarity {
    pub bleu4: f64,
    pub rouge_l: f64,
    pub chrf: f64,
}

impl Similarity {
    pub fn between(candidate: &str, reference: &str) -> Similarity {
        let (c, r) = (words(candidate), words(reference));
        Similarity { bleu4: bleu4(&c, &r), rouge_l: rouge_l(&c, &r), chrf: chrf(candidate, reference) }
    }
}

pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for ch in text.chars().flat_map(char::to_lowercase) {
        if ch.is_alphanumeric() || ch == '_' {
            word.push(ch);
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if !ch.is_whitespace() {
            out.push(ch.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

fn ngrams<T: Hash + Eq + Clone>(tokens: &[T], n: usize) -> HashMap<&[T], usize> {
    let mut counts = HashMap::new();
    if n > 0 && tokens.len() >= n {
        for g in tokens.windows(n) {
            *counts.entry(g).or_insert(0) += 1;
        }
    }
    counts
}

/// Matches of `candidate`'s n-grams in `reference`, each clipped to the reference's count, and
/// the candidate's n-gram total.
fn clipped_matches<T: Hash + Eq + Clone>(candidate: &[T], reference: &[T], n: usize) -> (usize, usize) {
    let (c, r) = (ngrams(candidate, n), ngrams(reference, n));
    let matched = c.iter().map(|(g, k)| (*k).min(r.get(g).copied().unwrap_or(0))).sum();
    (matched, candidate.len().saturating_sub(n - 1))
}

pub fn bleu4(candidate: &[String], reference: &[String]) -> f64 {
    if candidate.is_empty() || reference.is_empty() {
        return 0.0;
    }
    let mut log_sum = 0.0;
    for n in 1..=4 {
        let (matched, total) = clipped_matches(candidate, reference, n);
        let (m, t) =
            if n == 1 { (matched as f64, total as f64) } else { (matched as f64 + 1.0, total as f64 + 1.0) };
        if m == 0.0 {
            return 0.0;
        }
        log_sum += (m / t).ln() / 4.0;
    }
    let (c, r) = (candidate.len() as f64, reference.len() as f64);
    let brevity = if c >= r { 1.0 } else { (1.0 - r / c).exp() };
    100.0 * brevity * log_sum.exp()
}

fn lcs_len<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let mut row = vec![0usize; b.len() + 1];
    for x in a {
        let mut diagonal = 0;
        for (j, y) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if x == y { diagonal + 1 } else { above.max(row[j]) };
            diagonal = above;
        }
    }
    row[b.len()]
}

pub fn rouge_l(candidate: &[String], reference: &[String]) -> f64 {
    let lcs = lcs_len(candidate, reference) as f64;
    if lcs == 0.0 {
        return 0.0;
    }
    let (p, r) = (lcs / candidate.len() as f64, lcs / reference.len() as f64);
    100.0 * 2.0 * p * r / (p + r)
}

pub fn chrf(candidate: &str, reference: &str) -> f64 {
    const ORDERS: usize = 6;
    const BETA2: f64 = 4.0;
    let chars = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<Vec<char>>();
    let (c, r) = (chars(candidate), chars(reference));
    let (mut precision, mut recall, mut orders) = (0.0, 0.0, 0);
    for n in 1..=ORDERS {
        let (matched, c_total) = clipped_matches(&c, &r, n);
        let r_total = r.len().saturating_sub(n - 1);
        // Orders longer than either text carry no evidence either way.
        if c_total == 0 || r_total == 0 {
            continue;
        }
        precision += matched as f64 / c_total as f64;
        recall += matched as f64 / r_total as f64;
        orders += 1;
    }
    if orders == 0 {
        return 0.0;
    }
    let (p, r) = (precision / orders as f64, recall / orders as f64);
    if p + r == 0.0 {
        return 0.0;
    }
    100.0 * (1.0 + BETA2) * p * r / (BETA2 * p + r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.01
    }

    #[test]
    fn tokens_split_words_and_marks() {
        assert_eq!(
            words("Use `foo()`, not Bar_2!"),
            ["use", "`", "foo", "(", ")", "`", ",", "not", "bar_2", "!"]
        );
    }

    #[test]
    fn identical_texts_score_full_and_disjoint_ones_nothing() {
        let s = Similarity::between("the timeout is never checked here", "the timeout is never checked here");
        assert!(close(s.bleu4, 100.0) && close(s.rouge_l, 100.0) && close(s.chrf, 100.0), "{s:?}");
        let s = Similarity::between("qqq zzz", "abc def");
        assert_eq!(s, Similarity::default());
    }

    #[test]
    fn bleu_by_hand() {
        // 6 candidate tokens, all in the 7-token reference; 1-grams 6/6, 2-grams 4/5 -> (4+1)/(5+1),
        // 3-grams 2/4 -> 3/5, 4-grams 1/3 -> 2/4; brevity exp(1 - 7/6).
        let c = words("the cat sat on a mat");
        let r = words("the cat sat on the a mat");
        let expected = 100.0
            * (1.0f64 - 7.0 / 6.0).exp()
            * (1.0f64 * (5.0 / 6.0) * (3.0 / 5.0) * (2.0 / 4.0)).powf(0.25);
        assert!(close(bleu4(&c, &r), expected), "{} vs {expected}", bleu4(&c, &r));
    }

    #[test]
    fn rouge_l_is_the_f1_of_the_longest_common_subsequence() {
        // LCS "a c d" = 3; P = 3/4, R = 3/5.
        let (c, r) = (words("a b c d"), words("a c x d y"));
        assert!(close(rouge_l(&c, &r), 100.0 * 2.0 * 0.75 * 0.6 / 1.35));
        assert_eq!(lcs_len(&words("a b"), &words("")), 0);
    }

    #[test]
    fn chrf_weights_recall_and_ignores_spaces() {
        assert!(close(chrf("a b", "ab"), 100.0));
        // "ab" against "abcd": every candidate n-gram matches (P = 1); recall is 2/4 for 1-grams
        // and 1/3 for 2-grams, and orders 3-6 have no candidate n-grams.
        let (p, r) = (1.0, (0.5 + 1.0 / 3.0) / 2.0);
        assert!(close(chrf("ab", "abcd"), 100.0 * 5.0 * p * r / (4.0 * p + r)));
        // Recall counts more than precision.
        assert!(chrf("abcd", "ab") > chrf("ab", "abcd"));
    }
}
