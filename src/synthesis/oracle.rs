//! The fail-then-pass oracle: given how a candidate test ran on the reviewed commit and on the fixed
//! one, is it an executable form of the reviewer's concern? It must fail on the reviewed commit by
//! its own verdict (an assertion, a missing expected exception, an error from the project's code, or
//! an import of a name the fix adds) and pass on the fixed commit, without writing into the project.
//! Anything else is a miss, with a short reason for the funnel and a longer one for the model.

use crate::exec::testrun::{TestRun, Verdict};
use crate::llm::prompt::{TextSpec, Texts};
use crate::synthesis::answer::{self, NotATest};

/// Why a candidate was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Miss {
    /// Short and fixed, so the funnel can count rejections by it.
    pub reason: &'static str,
    /// What went wrong, for the model that wrote the test.
    pub problem: Problem,
}

impl Miss {
    pub fn new(reason: &'static str, problem: Problem) -> Miss {
        Miss { reason, problem }
    }
}

/// What went wrong with a candidate, with the facts its text names. The words the model reads are
/// the feedback prompt's `[text KEY]` parts ([`Problem::text`]; every key in [`TEXTS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// It wrote into the project's files (the first few).
    Wrote {
        files: Vec<String>,
    },
    OutOfMemory,
    /// It wrote more to disk than a run may.
    DiskFull,
    TooManyProcesses,
    Timeout,
    Syntax,
    NoTests,
    PassedBoth,
    Inverted,
    /// It cannot be imported on either side.
    ImportsNeither,
    FailedBoth,
    /// It cannot be imported on the reviewed side.
    ImportsMissing,
    Collection,
    /// The process ended before pytest did (`os._exit`, a crashed interpreter).
    Aborted,
    /// A repeated run ended otherwise: the verdicts on each side.
    Flaky {
        reviewed: String,
        fixed: String,
    },
    /// It imports the project's own test modules.
    ImportsTests {
        modules: Vec<String>,
    },
    /// It imports what needs the network.
    Network {
        modules: Vec<String>,
    },
    /// A structural test names none of the definitions holding the lines.
    NotRead {
        names: Vec<String>,
        lines: String,
    },
    /// A behavioural test never runs the lines.
    NeverRuns {
        lines: String,
    },
    /// It also passes with only the lines undone.
    OtherPart {
        lines: String,
    },
    /// A sampled answer that repeats an earlier one.
    Repeat,
    /// The answer holds no test.
    NotATest(NotATest),
}

/// The texts a feedback prompt must hold, with their placeholders.
pub const TEXTS: &[TextSpec] = &[
    ("wrote", &["files"]),
    ("out of memory", &[]),
    ("disk full", &[]),
    ("too many processes", &[]),
    ("timed out", &[]),
    ("syntax error", &[]),
    ("no tests", &[]),
    ("passed on both sides", &[]),
    ("fails only on the fixed commit", &[]),
    ("imports on neither side", &[]),
    ("failed on both sides", &[]),
    ("imports on the reviewed side", &[]),
    ("collection error", &[]),
    ("ended early", &[]),
    ("flaky", &["reviewed", "fixed"]),
    ("imports the tests", &["modules"]),
    ("network", &["modules"]),
    ("not read", &["names"]),
    ("never runs", &[]),
    ("another part", &[]),
    ("not the change", &["why", "lines"]),
    ("repeat", &[]),
    ("cut off", &[]),
    ("empty answer", &[]),
    ("no code block", &[]),
    ("no test function", &[]),
];

impl Problem {
    /// Its text in the feedback prompt's `texts`.
    pub fn text(&self, texts: &Texts) -> String {
        use Problem::*;
        let plain = |key: &str| texts.get(key);
        let with = |key: &str, values: &[(&str, String)]| texts.with(key, values);
        let irrelevant =
            |why: String, lines: &str| with("not the change", &[("why", why), ("lines", lines.into())]);
        match self {
            Wrote { files } => with("wrote", &[("files", files.join(", "))]),
            OutOfMemory => plain("out of memory"),
            DiskFull => plain("disk full"),
            TooManyProcesses => plain("too many processes"),
            Timeout => plain("timed out"),
            Syntax => plain("syntax error"),
            NoTests => plain("no tests"),
            PassedBoth => plain("passed on both sides"),
            Inverted => plain("fails only on the fixed commit"),
            ImportsNeither => plain("imports on neither side"),
            FailedBoth => plain("failed on both sides"),
            ImportsMissing => plain("imports on the reviewed side"),
            Collection => plain("collection error"),
            Aborted => plain("ended early"),
            Flaky { reviewed, fixed } => {
                with("flaky", &[("reviewed", reviewed.clone()), ("fixed", fixed.clone())])
            }
            ImportsTests { modules } => with("imports the tests", &[("modules", modules.join(", "))]),
            Network { modules } => with("network", &[("modules", modules.join(", "))]),
            NotRead { names, lines } => irrelevant(with("not read", &[("names", names.join(" or "))]), lines),
            NeverRuns { lines } => irrelevant(plain("never runs"), lines),
            OtherPart { lines } => irrelevant(plain("another part"), lines),
            Repeat => plain("repeat"),
            NotATest(why) => plain(match why {
                answer::NotATest::CutOff => "cut off",
                answer::NotATest::Empty => "empty answer",
                answer::NotATest::NoCodeBlock => "no code block",
                answer::NotATest::NoTestFunction => "no test function",
            }),
        }
    }
}

/// The funnel's reasons, in one place.
pub mod reasons {
    pub const UNPARSEABLE: &str = "unparseable";
    pub const NETWORK: &str = "uses the network";
    pub const TEST_PACKAGE: &str = "imports the project's tests";
    pub const WRITES: &str = "writes into the repository";
    pub const TIMEOUT: &str = "timed out";
    pub const OUT_OF_MEMORY: &str = "out of memory";
    pub const DISK_FULL: &str = "wrote too much to disk";
    pub const TOO_MANY_PROCESSES: &str = "too many processes";
    pub const SYNTAX: &str = "syntax error in the test";
    pub const BROKEN_IMPORT: &str = "broken import in the test";
    pub const COLLECTION: &str = "collection error";
    pub const ABORTED: &str = "ended before pytest did";
    pub const NO_TESTS: &str = "no tests collected";
    pub const PASSED_BOTH: &str = "passed on both sides";
    pub const FAILED_BOTH: &str = "failed on both sides";
    pub const INVERTED: &str = "fails only on the fixed commit";
    pub const FLAKY: &str = "flaky";
    /// A sampled candidate that repeats an earlier answer: not judged again.
    pub const REPEAT: &str = "the same answer as an earlier one";
    pub const IRRELEVANT: &str = "does not exercise the change that answers the comment";
}

/// The module an import error names as missing, if it is the project's own: `from pkg.mod import
/// name` where the fix adds `name`, or a module the fix adds.
fn missing_project_import(output: &str, project: &[String]) -> bool {
    let named = |marker: &str| -> Vec<String> {
        output
            .match_indices(marker)
            .filter_map(|(at, _)| {
                let rest = &output[at + marker.len()..];
                let quoted = rest.split('\'').next()?;
                Some(quoted.to_string())
            })
            .collect()
    };
    let from_modules: Vec<String> = output
        .match_indices("cannot import name '")
        .filter_map(|(at, _)| {
            let rest = &output[at..];
            let from = rest.find(" from '")?;
            rest[from + 7..].split('\'').next().map(str::to_string)
        })
        .collect();
    from_modules.iter().chain(named("No module named '").iter()).any(|m| {
        let top = m.split('.').next().unwrap_or("");
        project.iter().any(|p| p == top)
    })
}

/// Whether the reviewed side's result is the test's own verdict on the code.
fn is_own_failure(run: &TestRun, project: &[String]) -> bool {
    run.verdict.is_test_failure()
        || (run.verdict == Verdict::ImportError && missing_project_import(&run.output, project))
}

/// Judges one candidate from its run on the reviewed commit and on the fixed one.
pub fn judge(reviewed: &TestRun, fixed: &TestRun, project: &[String]) -> Result<(), Miss> {
    use reasons::*;
    let wrote: Vec<&String> = reviewed.wrote.iter().chain(&fixed.wrote).collect();
    if !wrote.is_empty() {
        let files = wrote.iter().take(5).map(|s| s.to_string()).collect();
        return Err(Miss::new(WRITES, Problem::Wrote { files }));
    }
    if reviewed.verdict == Verdict::OutOfMemory || fixed.verdict == Verdict::OutOfMemory {
        return Err(Miss::new(OUT_OF_MEMORY, Problem::OutOfMemory));
    }
    if reviewed.verdict == Verdict::DiskFull || fixed.verdict == Verdict::DiskFull {
        return Err(Miss::new(DISK_FULL, Problem::DiskFull));
    }
    if reviewed.verdict == Verdict::TooManyProcesses || fixed.verdict == Verdict::TooManyProcesses {
        return Err(Miss::new(TOO_MANY_PROCESSES, Problem::TooManyProcesses));
    }
    if reviewed.verdict == Verdict::Timeout || fixed.verdict == Verdict::Timeout {
        return Err(Miss::new(TIMEOUT, Problem::Timeout));
    }
    if reviewed.verdict == Verdict::SyntaxError || fixed.verdict == Verdict::SyntaxError {
        return Err(Miss::new(SYNTAX, Problem::Syntax));
    }
    if reviewed.verdict == Verdict::Aborted || fixed.verdict == Verdict::Aborted {
        return Err(Miss::new(ABORTED, Problem::Aborted));
    }
    if reviewed.verdict == Verdict::NoTests {
        return Err(Miss::new(NO_TESTS, Problem::NoTests));
    }
    if reviewed.verdict == Verdict::Passed {
        return Err(if fixed.verdict == Verdict::Passed {
            Miss::new(PASSED_BOTH, Problem::PassedBoth)
        } else {
            Miss::new(INVERTED, Problem::Inverted)
        });
    }
    if reviewed.verdict == Verdict::ImportError && fixed.verdict == Verdict::ImportError {
        return Err(Miss::new(BROKEN_IMPORT, Problem::ImportsNeither));
    }
    if is_own_failure(reviewed, project) {
        return match fixed.verdict {
            Verdict::Passed => Ok(()),
            _ => Err(Miss::new(FAILED_BOTH, Problem::FailedBoth)),
        };
    }
    Err(match reviewed.verdict {
        Verdict::ImportError => Miss::new(BROKEN_IMPORT, Problem::ImportsMissing),
        _ => Miss::new(COLLECTION, Problem::Collection),
    })
}

/// Output as shown to the model: the tail (where pytest puts the failure and the summary), with
/// what changes from run to run (durations, addresses) replaced, so the same failure gives the same
/// prompt and recorded answers replay.
pub fn for_feedback(output: &str, max_lines: usize) -> String {
    crate::text::last_lines(output, max_lines).lines().map(stable_line).collect::<Vec<_>>().join("\n")
}

fn stable_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while !rest.is_empty() {
        // " in 0.12s" (pytest's summary) and "0x7f3a…" (object addresses).
        if let Some(after) = rest.strip_prefix(" in ")
            && let Some(end) = after.find('s')
            && end > 0
            && after[..end].chars().all(|c| c.is_ascii_digit() || c == '.')
        {
            out.push_str(" in Ns");
            rest = &after[end + 1..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("0x") {
            let end = after.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(after.len());
            if end >= 6 {
                out.push_str("0x…");
                rest = &after[end..];
                continue;
            }
        }
        // "1.0000043539994294": a float at full precision is most often a measurement (elapsed
        // time, a rate), different on every run; its first three decimals are kept.
        let starts_number = !out.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '.' || c == '_');
        if starts_number && rest.starts_with(|c: char| c.is_ascii_digit()) {
            let whole = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
            if let Some(fraction) = rest[whole..].strip_prefix('.') {
                let digits = fraction.find(|c: char| !c.is_ascii_digit()).unwrap_or(fraction.len());
                if digits >= NOISY_DECIMALS {
                    out.push_str(&rest[..whole + 4]);
                    out.push('…');
                    rest = &fraction[digits..];
                    continue;
                }
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Decimals from which a printed float is taken for a measurement and cut.
const NOISY_DECIMALS: usize = 7;

#[cfg(test)]
mod tests {
    use super::*;

    fn run(verdict: Verdict, output: &str) -> TestRun {
        TestRun { verdict, exit_code: Some(1), output: output.into(), wrote: Vec::new(), seconds: 0.1 }
    }

    fn project() -> Vec<String> {
        vec!["durations".into()]
    }

    #[test]
    fn every_problem_has_its_text_in_the_shipped_feedback_prompt() {
        let file = include_str!("../../prompts/test_synthesis_feedback.md");
        let texts = Texts::parse(file, TEXTS).unwrap();
        let lines = "m.py:5:     if not xs:".to_string();
        let all = [
            Problem::Wrote { files: vec!["/repo/a".into(), "/repo/b".into()] },
            Problem::OutOfMemory,
            Problem::DiskFull,
            Problem::TooManyProcesses,
            Problem::Timeout,
            Problem::Syntax,
            Problem::NoTests,
            Problem::PassedBoth,
            Problem::Inverted,
            Problem::ImportsNeither,
            Problem::FailedBoth,
            Problem::ImportsMissing,
            Problem::Collection,
            Problem::Aborted,
            Problem::Flaky { reviewed: "assertion".into(), fixed: "passed".into() },
            Problem::ImportsTests { modules: vec!["tests.helpers".into()] },
            Problem::Network { modules: vec!["requests".into()] },
            Problem::NotRead { names: vec!["median".into(), "Stats".into()], lines: lines.clone() },
            Problem::NeverRuns { lines: lines.clone() },
            Problem::OtherPart { lines: lines.clone() },
            Problem::Repeat,
            Problem::NotATest(NotATest::CutOff),
            Problem::NotATest(NotATest::Empty),
            Problem::NotATest(NotATest::NoCodeBlock),
            Problem::NotATest(NotATest::NoTestFunction),
        ];
        let mut seen = Vec::new();
        for p in &all {
            let text = p.text(&texts);
            assert!(!text.is_empty() && !text.contains("{{"), "{p:?}: {text:?}");
            assert!(!seen.contains(&text), "{p:?} says what another problem says");
            seen.push(text);
        }
        assert_eq!(
            all[0].text(&texts),
            "The test wrote into the repository (/repo/a, /repo/b). Tests must leave the project's files alone; use pytest's tmp_path for files."
        );
        let not_read = all[17].text(&texts);
        assert!(
            not_read
                .starts_with("The test passes on the changed code, but it does not read median or Stats,")
        );
        assert!(
            not_read.ends_with(":\nm.py:5:     if not xs:\nWrite a test of what these lines do."),
            "{not_read}"
        );
    }

    #[test]
    fn fail_then_pass_is_accepted() {
        let p = project();
        for v in [Verdict::Assertion, Verdict::ExpectedExceptionMissing, Verdict::UnexpectedException] {
            assert_eq!(judge(&run(v, ""), &run(Verdict::Passed, ""), &p), Ok(()));
        }
        let missing = run(
            Verdict::ImportError,
            "E   ImportError: cannot import name 'parse_weeks' from 'durations' (/repo/durations/__init__.py)",
        );
        assert_eq!(judge(&missing, &run(Verdict::Passed, ""), &p), Ok(()), "a name the fix adds");
        let neither = judge(&missing, &missing, &p).unwrap_err();
        assert_eq!(neither.reason, reasons::BROKEN_IMPORT, "a project name that exists on neither side");
    }

    #[test]
    fn broken_tests_are_not_failures_on_the_reviewed_side() {
        let p = project();
        let nowhere = run(Verdict::ImportError, "E   ModuleNotFoundError: No module named 'hypothesis'");
        assert_eq!(
            judge(&nowhere, &run(Verdict::Passed, ""), &p).unwrap_err().reason,
            reasons::BROKEN_IMPORT
        );
        let syntax = run(Verdict::SyntaxError, "E   SyntaxError: invalid syntax");
        assert_eq!(judge(&syntax, &syntax, &p).unwrap_err().reason, reasons::SYNTAX);
        let collection = run(Verdict::CollectionError, "E   fixture 'client' not found");
        assert_eq!(
            judge(&collection, &run(Verdict::Passed, ""), &p).unwrap_err().reason,
            reasons::COLLECTION
        );
    }

    #[test]
    fn the_other_misses_are_named() {
        let p = project();
        let (pass, fail) = (run(Verdict::Passed, ""), run(Verdict::Assertion, ""));
        assert_eq!(judge(&pass, &pass, &p).unwrap_err().reason, reasons::PASSED_BOTH);
        assert_eq!(judge(&fail, &fail, &p).unwrap_err().reason, reasons::FAILED_BOTH);
        assert_eq!(judge(&pass, &fail, &p).unwrap_err().reason, reasons::INVERTED);
        assert_eq!(judge(&run(Verdict::Timeout, ""), &pass, &p).unwrap_err().reason, reasons::TIMEOUT);
        assert_eq!(
            judge(&run(Verdict::OutOfMemory, ""), &pass, &p).unwrap_err().reason,
            reasons::OUT_OF_MEMORY
        );
        assert_eq!(
            judge(&pass, &run(Verdict::TooManyProcesses, ""), &p).unwrap_err().reason,
            reasons::TOO_MANY_PROCESSES
        );
        assert_eq!(judge(&fail, &run(Verdict::DiskFull, ""), &p).unwrap_err().reason, reasons::DISK_FULL);
        let mut writer = fail.clone();
        writer.wrote = vec!["/repo/out.json".into()];
        let miss = judge(&writer, &pass, &p).unwrap_err();
        assert_eq!(miss.reason, reasons::WRITES);
        assert_eq!(miss.problem, Problem::Wrote { files: vec!["/repo/out.json".into()] });
    }

    #[test]
    fn feedback_output_is_the_stable_tail() {
        let out = "a\nb\nE   assert <Obj at 0x7f3a2b1c9d00> == 2\n1 failed in 0.12s\n";
        assert_eq!(for_feedback(out, 2), "E   assert <Obj at 0x…> == 2\n1 failed in Ns");
        assert_eq!(for_feedback("x = 0x10 in 3 steps", 5), "x = 0x10 in 3 steps");
        // Measured floats at full precision differ on every run; short ones and names stay.
        assert_eq!(
            for_feedback("E  assert 1.0000043539994294 == 1.0 (-12.3456789) v1.2345678 x_1.1234567", 1),
            "E  assert 1.000… == 1.0 (-12.345…) v1.2345678 x_1.1234567"
        );
    }
}
