//! The keep threshold on the model's confidence. `curate gold` scores every gold comment with the
//! probability the model gave to a kept kind, chooses on the tuning split the lowest threshold whose
//! precision reaches the stage's bar with a margin (the lower end of its one-sided 95% Wilson
//! interval, so a threshold that only just reaches the bar on a hundred comments is not taken:
//! measured, such a threshold lost 0.12 of precision on the held-out split, and a margin of one
//! standard error still lost 0.03 to 0.05), and records it
//! with the figures of both splits. The stage
//! reads the record and keeps a comment when its confidence reaches the threshold; a record made for
//! another prompt or model is refused, since the threshold means nothing for them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The way out of every refused calibration.
const REDO: &str = "run `curate gold PIPELINE --record` with the model server up to calibrate again";

/// The first characters of a hash, enough to tell two apart.
fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

/// A calibration record the stage cannot use.
#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    #[error("cannot read the calibration {}: {error}; {REDO}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}: not a calibration record: {error}", path.display())]
    Malformed {
        path: PathBuf,
        #[source]
        error: serde_json::Error,
    },
    #[error(
        "{} was calibrated for another version of the prompt (sha256 {}…, now {}…); {REDO}",
        path.display(),
        short(recorded),
        short(current)
    )]
    OtherPrompt { path: PathBuf, recorded: String, current: String },
    #[error("{} was calibrated for other model settings ({recorded}, now {current}); {REDO}", path.display())]
    OtherModel { path: PathBuf, recorded: serde_json::Value, current: serde_json::Value },
    #[error("{}: threshold {threshold} is not a probability", path.display())]
    NotAProbability { path: PathBuf, threshold: f64 },
}

/// Keep is the positive class.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Confusion {
    pub tp: usize,
    pub fp: usize,
    #[serde(rename = "fn")]
    pub fn_: usize,
    pub tn: usize,
}

impl Confusion {
    pub fn add(&mut self, gold_keep: bool, predicted_keep: bool) {
        match (gold_keep, predicted_keep) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (true, false) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }

    /// The matrix of `scored` (confidence, gold keep) when keeping what reaches `threshold`.
    pub fn at(scored: &[(f64, bool)], threshold: f64) -> Confusion {
        let mut c = Confusion::default();
        for (p, gold_keep) in scored {
            c.add(*gold_keep, *p >= threshold);
        }
        c
    }

    fn ratio(a: usize, b: usize) -> f64 {
        if b == 0 { 0.0 } else { a as f64 / b as f64 }
    }

    pub fn precision(&self) -> f64 {
        Confusion::ratio(self.tp, self.tp + self.fp)
    }

    pub fn recall(&self) -> f64 {
        Confusion::ratio(self.tp, self.tp + self.fn_)
    }

    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 { 0.0 } else { 2.0 * p * r / (p + r) }
    }

    pub fn total(&self) -> usize {
        self.tp + self.fp + self.fn_ + self.tn
    }
}

/// The threshold chosen on the tuning split.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    pub threshold: f64,
    /// Whether its precision on the tuning split reaches the bar; when none does, the threshold of
    /// the highest precision is chosen.
    pub reaches_bar: bool,
}

/// The normal quantile of a one-sided 95% bound.
const Z: f64 = 1.645;

/// The lower end of the one-sided 95% Wilson score interval of the precision `tp / kept`.
pub fn precision_lower_bound(tp: usize, kept: usize) -> f64 {
    if kept == 0 {
        return 0.0;
    }
    let (n, p, z2) = (kept as f64, tp as f64 / kept as f64, Z * Z);
    let centre = p + z2 / (2.0 * n);
    let spread = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    (centre - spread) / (1.0 + z2 / n)
}

/// The lowest threshold, among the confidences seen, at which the lower bound of precision on
/// `scored` ([`precision_lower_bound`]) reaches `bar`; failing that, the one with the highest lower
/// bound (the lowest of equals). `None` when no threshold keeps a single kept comment.
pub fn choose(scored: &[(f64, bool)], bar: f64) -> Option<Choice> {
    let mut thresholds: Vec<f64> = scored.iter().map(|(p, _)| *p).collect();
    thresholds.sort_by(f64::total_cmp);
    thresholds.dedup();
    let bound = |c: &Confusion| precision_lower_bound(c.tp, c.tp + c.fp);
    let useful = || thresholds.iter().map(|t| (*t, Confusion::at(scored, *t))).filter(|(_, c)| c.tp > 0);
    if let Some((threshold, _)) = useful().find(|(_, c)| bound(c) >= bar) {
        return Some(Choice { threshold, reaches_bar: true });
    }
    let best = useful().fold(None::<(f64, f64)>, |best, (t, c)| match best {
        Some((_, b)) if b >= bound(&c) => best,
        _ => Some((t, bound(&c))),
    })?;
    Some(Choice { threshold: best.0, reaches_bar: false })
}

/// What `curate gold --record` writes and the stage reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// SHA-256 of the prompt file the threshold was chosen for.
    pub prompt_sha256: String,
    /// The model settings that change answers (as in task keys).
    pub llm: serde_json::Value,
    /// SHA-256 of the gold set it was measured on.
    pub gold_sha256: String,
    pub precision_bar: f64,
    /// A comment is kept when the model's confidence in a kept kind reaches this.
    pub threshold: f64,
    pub reaches_bar_on_tune: bool,
    pub tune: Confusion,
    pub heldout: Confusion,
}

impl Calibration {
    /// The record at `path`, checked to be for this prompt and these model settings.
    pub fn load(
        path: &Path,
        prompt_sha256: &str,
        llm: &serde_json::Value,
    ) -> Result<Calibration, CalibrationError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| CalibrationError::Read { path: path.to_path_buf(), error })?;
        let calibration: Calibration = serde_json::from_str(&text)
            .map_err(|error| CalibrationError::Malformed { path: path.to_path_buf(), error })?;
        if calibration.prompt_sha256 != prompt_sha256 {
            return Err(CalibrationError::OtherPrompt {
                path: path.to_path_buf(),
                recorded: calibration.prompt_sha256,
                current: prompt_sha256.to_string(),
            });
        }
        if &calibration.llm != llm {
            return Err(CalibrationError::OtherModel {
                path: path.to_path_buf(),
                recorded: calibration.llm,
                current: llm.clone(),
            });
        }
        if !(0.0..=1.0).contains(&calibration.threshold) {
            return Err(CalibrationError::NotAProbability {
                path: path.to_path_buf(),
                threshold: calibration.threshold,
            });
        }
        Ok(calibration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` comments at confidence `p`, `keeps` of them kept by the gold.
    fn at(p: f64, n: usize, keeps: usize) -> Vec<(f64, bool)> {
        (0..n).map(|i| (p, i < keeps)).collect()
    }

    #[test]
    fn the_lower_bound_of_precision_shrinks_with_fewer_comments() {
        // All kept comments right: n / (n + z²).
        assert!((precision_lower_bound(20, 20) - 20.0 / (20.0 + Z * Z)).abs() < 1e-9);
        assert!(precision_lower_bound(1, 1) < 0.3);
        assert!(precision_lower_bound(90, 100) > precision_lower_bound(9, 10));
        assert!(precision_lower_bound(90, 100) < 0.9);
        assert_eq!(precision_lower_bound(0, 0), 0.0);
    }

    #[test]
    fn the_lowest_threshold_whose_precision_reaches_the_bar_with_a_margin() {
        // 20 of 21 kept at 0.9 (precision 0.95, lower bound 0.81), 30 of 36 from 0.6 (0.83,
        // 0.71), 30 of 46 from 0.3 (0.65, 0.53).
        let scored: Vec<(f64, bool)> = [at(0.9, 21, 20), at(0.6, 15, 10), at(0.3, 10, 0)].concat();
        assert_eq!(choose(&scored, 0.7), Some(Choice { threshold: 0.6, reaches_bar: true }));
        assert_eq!(choose(&scored, 0.8), Some(Choice { threshold: 0.9, reaches_bar: true }));
        // Out of reach (0.95 on 21 comments is not 0.86 with the margin): the best lower bound
        // is chosen, and said.
        assert_eq!(choose(&scored, 0.86), Some(Choice { threshold: 0.9, reaches_bar: false }));
        assert_eq!(choose(&at(0.5, 3, 0), 0.5), None);
        let c = Confusion::at(&scored, 0.6);
        assert_eq!((c.tp, c.fp, c.fn_, c.tn), (30, 6, 0, 10));
    }

    #[test]
    fn a_record_for_another_prompt_or_model_is_refused_with_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let llm = serde_json::json!({"model": "m", "temperature": 0.0});
        let record = Calibration {
            prompt_sha256: "a".repeat(64),
            llm: llm.clone(),
            gold_sha256: "b".repeat(64),
            precision_bar: 0.86,
            threshold: 0.7,
            reaches_bar_on_tune: true,
            tune: Confusion::default(),
            heldout: Confusion::default(),
        };
        std::fs::write(&path, serde_json::to_string_pretty(&record).unwrap()).unwrap();
        assert_eq!(Calibration::load(&path, &"a".repeat(64), &llm).unwrap(), record);
        let e = Calibration::load(&path, &"c".repeat(64), &llm).unwrap_err().to_string();
        assert!(e.contains("another version of the prompt") && e.contains("--record"), "{e}");
        let e = Calibration::load(&path, &"a".repeat(64), &serde_json::json!({"model": "n"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("other model settings"), "{e}");
        let e = Calibration::load(&dir.path().join("none.json"), "a", &llm).unwrap_err().to_string();
        assert!(e.contains("cannot read the calibration"), "{e}");
    }
}
