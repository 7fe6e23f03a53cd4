//! The agent_validation stage against the real Docker daemon on the sample's durations#3: the
//! built-in agent with a scripted model (an edit that makes the hidden test pass; a malformed edit,
//! then one that does not pass, after an attempt that changed nothing), and a command-line agent
//! that must find a history-free copy with its prompt file beside it. Then `curate export` on the
//! result, twice, byte for byte. Skips loudly without Docker; fails under CURATE_REQUIRE_DOCKER=1.

use std::collections::HashMap;
use std::process::Command;

use crate::common::durations::*;
use crate::common::openai::{Reply, Server, first_user};
use crate::common::{Scratch, docker_or_skip, root, stderr, stdout};
use serde_json::Value;

/// The fix of comment 1, as search/replace edits.
const ROUNDING_EDIT: &str = "src/durations/__init__.py\n<<<<<<< SEARCH\n    return sum(\n        int(float(number) * _UNITS[unit]) for number, unit in _TOKEN.findall(text)\n    )\n=======\n    total = sum(float(number) * _UNITS[unit] for number, unit in _TOKEN.findall(text))\n    return round(total)\n>>>>>>> REPLACE\n";
/// Adds the unit but not the word "week": comment 3's test still fails.
const HALF_DOC_EDIT: &str = "src/durations/__init__.py\n<<<<<<< SEARCH\n    Units are ``d``, ``h``, ``m`` and ``s``.  They may come in any order and\n=======\n    Units are ``w``, ``d``, ``h``, ``m`` and ``s``.  They may come in any order and\n>>>>>>> REPLACE\n";
const MISSING_EDIT: &str = "src/durations/__init__.py\n<<<<<<< SEARCH\n    return nothing_like_this\n=======\n    return 0\n>>>>>>> REPLACE\n";

fn rows(s: &Scratch, stage: &str) -> HashMap<String, (String, Option<String>, Value)> {
    rows_of(s, "val", stage)
}

/// The tasks of `stage` in the state of the pipeline named `pipeline`, by item.
fn rows_of(s: &Scratch, pipeline: &str, stage: &str) -> HashMap<String, (String, Option<String>, Value)> {
    let db = rusqlite::Connection::open(s.path(&format!(".curate/{pipeline}/state.db"))).unwrap();
    let mut stmt = db.prepare("SELECT item, state, message, output FROM tasks WHERE stage = ?1").unwrap();
    stmt.query_map([stage], |r| {
        let out: Option<String> = r.get(3)?;
        Ok((
            r.get::<_, String>(0)?,
            (
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                out.map_or(Value::Null, |o| serde_json::from_str(&o).unwrap()),
            ),
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// A scripted model for the sample's durations#3 where only comment 1 matters: its other
/// comments get no test, comment 1's test writer gets [`BEHAVIOURAL`], and the agent (the
/// conversation whose system prompt contains `agent`) gets `answer`'s reply to the request.
fn comment_one_model(agent: &'static str, answer: impl Fn(&Value) -> Reply + Send + 'static) -> Server {
    let (_, texts) = durations3();
    let first: String = texts[0].chars().take(60).collect();
    Server::responding(move |body| {
        if !first_user(body).contains(first.as_str()) {
            return Reply::Answer("I cannot write a test for this.".into());
        }
        if !body["messages"][0]["content"].as_str().unwrap_or("").contains(agent) {
            return fence(BEHAVIOURAL);
        }
        answer(body)
    })
}

fn tree_of(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = walk(dir)
        .into_iter()
        .map(|p| (p.strip_prefix(dir).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    files.sort();
    files
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

#[test]
fn an_agent_guided_by_the_comment_must_make_the_hidden_test_pass() {
    if !docker_or_skip("the validation test") {
        return;
    }
    let (record, texts) = durations3();
    let keys: Vec<String> = texts.iter().map(|t| t.chars().take(60).collect()).collect();
    let server = Server::responding(move |body| {
        let messages = body["messages"].as_array().unwrap();
        let system = messages[0]["content"].as_str().unwrap_or("");
        let first_user = messages.iter().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap();
        let step = messages.iter().filter(|m| m["role"] == "assistant").count();
        let found = keys.iter().position(|k| first_user.contains(k.as_str()));
        if system.contains("reviewer who found nothing") {
            return Reply::Answer("```json\n[]\n```".into());
        }
        if system.contains("experienced code reviewer") {
            // The built-in reviewer's prompt, refused as llama.cpp refuses one over its context.
            let refusal = r#"{"error":{"code":400,"message":"request (26442 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error"}}"#;
            return Reply::Status(400, vec![], refusal.into());
        }
        if system.contains("software engineer") && found.is_none() {
            return Reply::Answer("The review asks for nothing I can change.".into()); // a tool's review
        }
        let Some(c) = found else {
            return Reply::Status(500, vec![], "no such comment in the script".into());
        };
        if !system.contains("software engineer") {
            // Test synthesis: comments 1 and 3 get their tests; the rest get no test.
            return match c {
                0 => fence(BEHAVIOURAL),
                2 => fence(STRUCTURAL),
                _ => Reply::Answer("I cannot write a test for this.".into()),
            };
        }
        let hidden = ["test_fractions_are_rounded", "test_docstring"];
        assert!(!hidden.iter().any(|t| first_user.contains(t)), "the agent never sees the test");
        let attempt = body["seed"].as_i64().unwrap() - 6;
        // The second attempt is sampled at the resample temperature; without it, it would repeat
        // the first answer.
        let resampled = (body["temperature"].as_f64().unwrap_or(0.0) - 0.8).abs() < 1e-6;
        assert_eq!(resampled, attempt > 1, "only attempts after the first are resampled");
        Reply::Answer(match (c, attempt, step) {
            (0, _, _) => ROUNDING_EDIT.into(),
            (2, 1, _) => "The code looks fine to me.".into(),
            (2, _, 0) if resampled => MISSING_EDIT.into(),
            (2, _, 0) => "The code looks fine to me.".into(),
            (2, _, _) => HALF_DOC_EDIT.into(),
            _ => "nothing".into(),
        })
    });

    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    // The command agent's "fix": the fixed file, from outside the copy it is given.
    let fixed = Command::new("git")
        .args(["--git-dir", mirrors.join("curate-sample/durations.git").to_str().unwrap(), "show"])
        .arg(format!("{}:src/durations/__init__.py", record["merged_commit"].as_str().unwrap()))
        .output()
        .unwrap();
    s.write("fixed_init.py", &String::from_utf8(fixed.stdout).unwrap());
    let stages = format!(
        "  - id: validate
    kind: agent_validation
    title: Validation with Coding Agents (Final)
    needs: [tests, context, environment]
    attempts: 2
    agent:
      kind: builtin
      prompt: {{prompts}}/agent.md
      feedback_prompt: {{prompts}}/agent_feedback.md
      max_steps: 2
      resample_temperature: 0.8
  - id: by_command
    kind: agent_validation
    needs: [tests, context, environment]
    attempts: 1
    agent:
      kind: command
      prompt: {{prompts}}/agent_task.md
      command: >-
        grep -q 'The reviewer asks' {{prompt_file}}
        && test \"$(git rev-list --all | wc -l)\" = 1
        && cp {scratch}/fixed_init.py src/durations/__init__.py
",
        scratch = s.dir.path().display(),
    );
    s.write("p.yaml", &curation_pipeline("val", &mirrors, &server.base_url, "    repeats: 1\n", &stages));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = |n: usize| format!("curate-sample__durations-3#{n}");

    let built_in = rows(&s, "validate");
    assert_eq!(built_in.len(), 2, "only comments with an accepted test are validated: {built_in:?}");
    let (state, _, c1) = &built_in[&id(1)];
    assert_eq!(state, "kept", "{c1}");
    assert_eq!(c1["attempts"], 1);
    assert!(c1["patch"].as_str().unwrap().contains("+    return round(total)"), "{c1}");

    let (state, reason, c3) = &built_in[&id(3)];
    assert_eq!(
        (state.as_str(), reason.as_deref()),
        ("rejected", Some("the agent's revision did not pass the test")),
        "{c3}"
    );
    let h = c3["history"].as_array().unwrap();
    assert_eq!(h[0]["result"], "the agent changed nothing");
    assert_eq!(h[1]["test"]["verdict"], "assertion");
    let steps = h[1]["transcript"].as_array().unwrap();
    assert!(steps[0]["errors"][0].as_str().unwrap().contains("not in the file"), "{steps:?}");
    assert_eq!(steps[1]["applied"], 1);

    let by_command = rows(&s, "by_command");
    for n in [1, 3] {
        let (state, _, out) = &by_command[&id(n)];
        assert_eq!(state, "kept", "c{n}: {out}");
        assert!(out["patch"].as_str().unwrap().contains("+    return round(total)"), "{out}");
    }

    // The funnel's final row.
    let report = s.curate(&["report", "p.yaml"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("| Validation with Coding Agents (Final) | 1 | 1 | 1 | 0 | 0 |"), "{text}");

    // The benchmark as files, the same bytes every time.
    let first = s.curate(&["export", "p.yaml", "--out", "bench1", "--stage", "validate"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let second = s.curate(&["export", "p.yaml", "--out", "bench2", "--stage", "validate"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let (a, b) = (tree_of(&s.path("bench1")), tree_of(&s.path("bench2")));
    assert_eq!(a, b, "export is byte-identical");
    let instances: Vec<Value> =
        s.read("bench1/instances.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(instances.len(), 1);
    let comments = instances[0]["comments"].as_array().unwrap();
    assert_eq!(comments.len(), 1, "the comments the chosen stage kept");
    let test_path = comments[0]["test_path"].as_str().unwrap();
    assert_eq!(s.read(&format!("bench1/{test_path}")), BEHAVIOURAL);
    assert_eq!(comments[0]["kind"], "behavioural");
    // Its id as pytest names it where it runs (SWE-bench's FAIL_TO_PASS).
    let file = test_path.rsplit('/').next().unwrap();
    assert_eq!(
        comments[0]["fail_to_pass"],
        serde_json::json!([format!("{file}::test_fractions_are_rounded")])
    );
    // The same benchmark as SWE-bench-style instances, run the way a harness runs them: the
    // reviewed commit with test_patch fails FAIL_TO_PASS, and passes it with patch applied too.
    let args =
        ["export", "p.yaml", "--out", "bench3", "--stage", "validate", "--format", "swe-bench", "--check"];
    let swe = s.curate(&args);
    assert_eq!(swe.status.code(), Some(0), "{}\n{}", stdout(&swe), stderr(&swe));
    assert!(
        stdout(&swe).contains("1 of 1 instance(s) fail without `patch` and pass with it"),
        "{}",
        stdout(&swe)
    );
    let harness: Vec<Value> =
        s.read("bench3/swe-bench.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(harness.len(), 1);
    let h = &harness[0];
    assert_eq!(h["base_commit"], instances[0]["head_commit"]);
    assert_eq!(h["environment_setup_commit"], instances[0]["head_commit"]);
    // SWE-bench's instances hold the lists as JSON text.
    let f2p: Vec<String> = serde_json::from_str(h["FAIL_TO_PASS"].as_str().unwrap()).unwrap();
    assert_eq!(f2p, [format!("curate_tests/{file}::test_fractions_are_rounded")]);
    let test_patch = h["test_patch"].as_str().unwrap();
    assert!(test_patch.contains(&format!("+++ b/curate_tests/{file}")), "{test_patch}");
    let patch = h["patch"].as_str().unwrap();
    assert!(patch.contains("+    return round(total)") || patch.contains("round("), "{patch}");
    assert!(!patch.contains("+++ b/tests/"), "the fix's test side is in test_patch: {patch}");
    let statement = h["problem_statement"].as_str().unwrap();
    assert!(statement.contains(comments[0]["text"].as_str().unwrap()), "{statement}");
    // A harness and the curate layout name the same test.
    assert_eq!(s.read(&format!("bench3/{test_path}")), BEHAVIOURAL);

    let dockerfile = instances[0]["environment"]["dockerfiles"]["instance"].as_str().unwrap();
    assert!(s.path(&format!("bench1/{dockerfile}")).exists(), "{dockerfile}");
    let stats: Value = serde_json::from_str(&s.read("bench1/stats.json")).unwrap();
    assert_eq!(stats["instances"], 1);
    assert_eq!(stats["tests"]["total"], 1);
    assert_eq!(stats["tests"]["behavioural"], 1);
    assert!(s.read("bench1/stats.md").contains("| Instances (PRs) | 1 |"));

    // Scoring review tools on that benchmark: the human comments (the upper bound), a tool whose
    // comments miss the point, and a tool that crashes. The instance's image is renamed to one this
    // machine lacks, so scoring must make it again from the exported Dockerfiles.
    let fresh_image = format!("curate-test/rebuilt-{}:v1", std::process::id());
    let renamed = s
        .read("bench1/instances.jsonl")
        .replace(instances[0]["environment"]["image"].as_str().unwrap(), &fresh_image);
    s.write("bench1/instances.jsonl", &renamed);
    let agent = format!(
        "{{kind: builtin, prompt: {p}/agent.md, feedback_prompt: {p}/agent_feedback.md, max_steps: 1}}",
        p = root().join("prompts").display()
    );
    let chain = |id: &str, reviewer: &str| {
        format!(
            "  - {{id: review_{id}, kind: review, name: {id}, reviewer: {reviewer}}}\n  - {{id: revise_{id}, kind: revise, needs: review_{id}, agent: {agent}}}\n  - {{id: score_{id}, kind: score, needs: revise_{id}}}\n"
        )
    };
    let review_prompt = std::fs::read_to_string(root().join("prompts/review.md")).unwrap();
    s.write("clean.md", &review_prompt.replace("experienced code reviewer", "reviewer who found nothing"));
    s.write(
        "eval.yaml",
        &format!(
            "name: ev\nsource: {{kind: benchmark, path: bench1}}\ndefaults:\n  cache: cache\n  repos: {{url: '{mirrors}/{{repo}}.git'}}\n  llm: {{base_url: '{url}', max_retries: 0}}\nstages:\n{}{}{}{}{}",
            chain("human", "{kind: human}"),
            chain("vague", "{kind: command, command: 'echo src/durations/__init__.py:30: consider renaming this'}"),
            chain("broken", "{kind: command, command: 'echo boom >&2; exit 3'}"),
            chain("llm", &format!("{{kind: llm, prompt: {}/review.md}}", root().join("prompts").display())),
            chain("clean", &format!("{{kind: llm, prompt: {}}}", s.path("clean.md").display())),
            mirrors = mirrors.display(),
            url = server.base_url,
        ),
    );
    let eval = s.curate(&["run", "eval.yaml"]);
    assert_eq!(eval.status.code(), Some(0), "{}", stderr(&eval));
    let report = s.curate(&["report", "eval.yaml", "--format", "json"]);
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let rows = report["evaluation"]["reviewers"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["reviewer"] == name).unwrap();
    assert_eq!(row("human")["overall"]["passed"], 1, "{report}");
    assert_eq!(row("human")["comments"], 1);
    assert_eq!(row("vague")["overall"]["passed"], 0);
    assert_eq!(row("vague")["comments"], 1);
    assert_eq!(row("broken")["failed_reviews"], 1, "a crashing tool is recorded, not dropped");
    assert_eq!(row("broken")["instances"], 1);
    assert_eq!(row("broken")["overall"]["total"], 1, "and scored zero on every test");
    // A prompt the model refuses as too long is a failed review too, not an instance dropped.
    assert_eq!(row("llm")["failed_reviews"], 1, "{report}");
    assert_eq!(row("llm")["instances"], 1, "{report}");
    assert_eq!(row("llm")["overall"]["total"], 1, "{report}");
    // A model's answer that it found nothing (`[]`) is a review with no comments, as a tool's
    // empty report is, not a failed one.
    assert_eq!(
        (row("clean")["failed_reviews"].as_u64(), row("clean")["comments"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(report["evaluation"]["union"], 1);
    let md = s.curate(&["report", "eval.yaml"]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("| human | 1 | 1 | 1.00 | 0 | 100.0% (1/1) | – | 100.0% (1/1) |"), "{md}");
    let rebuilt = Command::new("docker").args(["image", "rm", &fresh_image]).output().unwrap();
    assert!(
        rebuilt.status.success(),
        "the image was made from the export: {}",
        String::from_utf8_lossy(&rebuilt.stderr)
    );

    // The text-similarity contrast: the human comments against themselves score full marks.
    let similarity = |name: &str| &row(name)["text_similarity"];
    assert_eq!(similarity("human")["pairs"], 1);
    assert_eq!(similarity("human")["mean"]["bleu4"], 100.0);
    assert_eq!(similarity("human")["mean"]["chrf"], 100.0);
    assert!(similarity("vague")["mean"]["rouge_l"].as_f64().unwrap() < 50.0, "{report}");
    assert!(similarity("broken").is_null(), "no comments, nothing to compare");
    assert!(md.contains("| vague | 1 |"), "{md}");

    // The same report as one HTML page, and its figures as SVG files.
    let html = s.curate(&["report", "eval.yaml", "--format", "html", "--charts", "charts"]);
    assert_eq!(html.status.code(), Some(0), "{}", stderr(&html));
    let html = String::from_utf8_lossy(&html.stdout);
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(html.contains("<td>human</td><td class=\"n\">1</td>"), "{html}");
    assert_eq!(html.matches("<svg").count(), 3, "the funnel, Figure 5 and Figure 7");
    for chart in ["funnel.svg", "overlaps.svg", "categories.svg"] {
        let svg = s.read(&format!("charts/{chart}"));
        assert!(svg.starts_with("<svg") && svg.contains("</svg>"), "{chart}");
    }
    assert!(s.read("charts/overlaps.svg").contains("human (1)"));
}

#[test]
fn an_agent_command_that_hangs_is_killed_with_its_group_and_retried_next_run() {
    if !docker_or_skip("the validation test") {
        return;
    }
    let (record, texts) = durations3();
    let first: String = texts[0].chars().take(60).collect();
    let server = Server::responding(move |body| {
        let user = body["messages"][1]["content"].as_str().unwrap_or("");
        if user.contains(first.as_str()) { fence(BEHAVIOURAL) } else { Reply::Answer("no test".into()) }
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let pipeline = |command: &str| {
        let validate = format!(
            "  - id: validate
    kind: agent_validation
    needs: [tests, context, environment]
    attempts: 1
    agent: {{kind: command, prompt: {{prompts}}/agent_task.md, timeout_secs: 1, command: '{command}'}}
"
        );
        curation_pipeline(
            "val",
            &mirrors,
            &server.base_url,
            "    max_attempts: 1\n    repeats: 1\n",
            &validate,
        )
    };
    // Until `ready` exists the agent hangs; the same command then does its job.
    let fixed = Command::new("git")
        .args(["--git-dir", mirrors.join("curate-sample/durations.git").to_str().unwrap(), "show"])
        .arg(format!("{}:src/durations/__init__.py", record["merged_commit"].as_str().unwrap()))
        .output()
        .unwrap();
    s.write("fixed_init.py", &String::from_utf8(fixed.stdout).unwrap());
    let (ready, fix) = (s.path("ready"), s.path("fixed_init.py"));
    s.write(
        "p.yaml",
        &pipeline(&format!(
            "if test -f {}; then cp {} src/durations/__init__.py; else sleep 31.5; fi",
            ready.display(),
            fix.display()
        )),
    );
    let started = std::time::Instant::now();
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(1), "an errored task makes the run exit 1: {}", stderr(&out));
    assert!(started.elapsed().as_secs() < 25, "the hanging agent was killed at its limit");
    assert!(stderr(&out).contains("ran past its 1 s limit"), "{}", stderr(&out));
    let left = Command::new("pgrep").args(["-fx", "sleep 31.5"]).output().unwrap();
    assert!(left.stdout.is_empty(), "the agent's whole process group was killed");
    assert_eq!(rows(&s, "validate")["curate-sample__durations-3#1"].0, "errored");

    // Errors are not results: the next run tries the same task again.
    s.write("ready", "");
    let again = s.curate(&["run", "p.yaml"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let rows = rows(&s, "validate");
    assert_eq!(rows.len(), 1, "the same task, not a new one: {rows:?}");
    assert_eq!(rows["curate-sample__durations-3#1"].0, "kept");
}

/// The agent in rewrite mode: shown the function around the commented line, it first sends it back
/// unchanged (and is told so), then rewritten; the rewrite is spliced in and the hidden test passes.
/// With `hide_docstrings` it is shown the function without its docstring, and the docstring is
/// put back: the patch leaves it as it was.
#[test]
fn a_rewrite_of_the_commented_function_is_spliced_back_and_validated() {
    if !docker_or_skip("the rewrite-mode validation test") {
        return;
    }
    let (record, _) = durations3();
    let server = comment_one_model("one piece of code", |body| {
        let messages = body["messages"].as_array().unwrap();
        let user = first_user(body);
        let shown = user.split("```python\n").nth(1).and_then(|c| c.split("\n```").next()).unwrap();
        assert!(shown.trim_start().starts_with("def parse_duration"), "the function is shown whole: {shown}");
        let hiding = messages[1]["content"].as_str().unwrap().contains("HIDING");
        assert_eq!(shown.contains("Return the number of seconds"), !hiding, "{shown}");
        let step = messages.iter().filter(|m| m["role"] == "assistant").count();
        let code = if step == 0 {
            shown.to_string()
        } else {
            let old = "    return sum(\n        int(float(number) * _UNITS[unit]) for number, unit in _TOKEN.findall(text)\n    )";
            assert!(shown.contains(old), "{shown}");
            shown.replace(old, "    total = sum(float(number) * _UNITS[unit] for number, unit in _TOKEN.findall(text))\n    return round(total)")
        };
        Reply::Answer(format!("```python\n{code}\n```"))
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let stage = |id: &str, prompt: &str, more: &str| {
        format!(
            "  - id: {id}
    kind: agent_validation
    needs: [tests, context, environment]
    attempts: 1
    agent:
      kind: builtin
      mode: rewrite
      prompt: {prompt}
      feedback_prompt: {{prompts}}/agent_rewrite_feedback.md
      max_steps: 2
{more}"
        )
    };
    let stages = stage("validate", "{prompts}/agent_rewrite.md", "")
        + &stage("validate_hiding", "hiding.md", "      hide_docstrings: true\n");
    let prompt = std::fs::read_to_string(root().join("prompts/agent_rewrite.md")).unwrap();
    s.write("hiding.md", &prompt.replace("Pull request:", "HIDING Pull request:"));
    s.write("p.yaml", &curation_pipeline("val", &mirrors, &server.base_url, "    repeats: 1\n", &stages));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let validated = rows(&s, "validate");
    let (state, _, c1) = &validated["curate-sample__durations-3#1"];
    assert_eq!(state, "kept", "{c1}");
    assert!(c1["patch"].as_str().unwrap().contains("+    return round(total)"), "{c1}");
    let steps = c1["history"][0]["transcript"].as_array().unwrap();
    assert!(steps[0]["errors"][0].as_str().unwrap().contains("changes nothing"), "{steps:?}");
    assert_eq!(steps[1]["applied"], 1);
    let told = server.requests().iter().any(|r| r.to_string().contains("it changes nothing"));
    assert!(told, "the unchanged answer was reported back");

    let (state, _, hidden) = &rows(&s, "validate_hiding")["curate-sample__durations-3#1"];
    assert_eq!(state, "kept", "{hidden}");
    let patch = hidden["patch"].as_str().unwrap();
    assert_eq!(patch, c1["patch"].as_str().unwrap(), "the docstring was put back where it was");
    assert!(!patch.contains("Return the number of seconds"), "{patch}");
}

/// Runs the curation of `one.jsonl` with `stages` after the tests stage, the model at `url`, and
/// returns durations#3 comment 1's validation, which must be kept.
fn kept_validation(s: &Scratch, mirrors: &std::path::Path, url: &str, stages: &str) -> Value {
    s.write("p.yaml", &curation_pipeline("val", mirrors, url, "    repeats: 1\n", stages));
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let (state, _, validated) = rows(s, "validate").remove("curate-sample__durations-3#1").unwrap();
    assert_eq!(state, "kept", "{validated}");
    validated
}

/// With `focus_prompt`, an answer that sends the function back unchanged is followed by the
/// commented statement alone (`return sum(...)`, three lines), the function shown around it; the
/// answer, with the line before the statement copied along, replaces only the statement.
#[test]
fn an_unchanged_rewrite_is_followed_by_the_commented_statement_alone() {
    if !docker_or_skip("the narrower-question validation test") {
        return;
    }
    let (record, _) = durations3();
    let raise = "        raise ValueError(f\"malformed duration: {text!r}\")";
    let server = comment_one_model("one piece of code", move |body| {
        let user = first_user(body);
        let blocks: Vec<&str> =
            user.split("```python\n").skip(1).filter_map(|c| c.split("\n```").next()).collect();
        if !user.contains("The comment is about lines") {
            return Reply::Answer(format!("```python\n{}\n```", blocks[0]));
        }
        assert!(blocks[0].trim_start().starts_with("def parse_duration"), "the function as context: {user}");
        assert_eq!(
            blocks[1],
            "    return sum(\n        int(float(number) * _UNITS[unit]) for number, unit in _TOKEN.findall(text)\n    )",
            "the statement the comment is on, whole"
        );
        Reply::Answer(format!(
            "Change: add the floats up and round once.\n```python\n{raise}\n    return round(sum(float(number) * _UNITS[unit] for number, unit in _TOKEN.findall(text)))\n```"
        ))
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let stages = "  - id: validate
    kind: agent_validation
    needs: [tests, context, environment]
    attempts: 1
    agent:
      kind: builtin
      mode: rewrite
      prompt: {prompts}/agent_rewrite_real.md
      feedback_prompt: {prompts}/agent_rewrite_feedback.md
      focus_prompt: {prompts}/agent_focus_real.md
      max_steps: 2
      mark_added: added by the pull request
      mark_commented: the review comment points here
";
    let validated = &kept_validation(&s, &mirrors, &server.base_url, stages);
    let patch = validated["patch"].as_str().unwrap();
    assert!(patch.contains("+    return round(sum(float(number)"), "{patch}");
    assert!(
        !patch.contains("+        raise"),
        "the copied line before the statement is not doubled: {patch}"
    );
    assert!(!patch.contains("def parse_duration(text: str) -> int:\n+"), "{patch}");
    let steps = validated["history"][0]["transcript"].as_array().expect("the attempt's transcript");
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert_eq!(steps[1]["focus"], true, "{steps:?}");
    let told = server.requests().iter().any(|r| r.to_string().contains("it changes nothing"));
    assert!(!told, "the unchanged answer was followed by the narrower question, not by feedback");
}

/// With `tested_code`, a comment on one of the PR's tests (here moved to the line of
/// `test_fractions_and_weeks` that calls `parse_duration`) is answered at the code that test calls:
/// the agent is shown `parse_duration`, with the test quoted in the comment and the lines the PR
/// added to it marked (`mark_added`), the comment's line too (`mark_commented`); its rewrite, marks
/// copied, validates without them.
#[test]
fn a_comment_on_a_test_is_answered_at_the_code_the_test_calls() {
    if !docker_or_skip("the tested-code validation test") {
        return;
    }
    let (mut record, _) = durations3();
    let comment = &mut record["reference_review_comments"][0];
    for key in ["line", "original_line", "start_line", "original_start_line"] {
        comment[key] = 27.into();
    }
    comment["path"] = "tests/test_parse.py".into();
    // GitHub's hunk of a comment: the file's hunk up to the commented line.
    let patch = record["commit_to_review"]["patch_to_review"].as_str().unwrap().to_string();
    let hunk = patch.split("+++ b/tests/test_parse.py\n").nth(1).unwrap();
    let end = hunk.find("+    assert parse_duration(text) == expected").unwrap();
    let hunk = format!("{}+    assert parse_duration(text) == expected", &hunk[..end]);
    record["reference_review_comments"][0]["diff_hunk"] = hunk.into();
    let server = comment_one_model("one piece of code", |body| {
        let user = first_user(body);
        assert!(user.contains("src/durations/__init__.py"), "{user}");
        assert!(
            user.contains("(The comment is on this test, tests/test_parse.py line 27;"),
            "the test is quoted: {user}"
        );
        assert!(
            user.contains(
                "def test_fractions_and_weeks(text, expected):\n    assert parse_duration(text) == expected"
            ),
            "{user}"
        );
        let shown = user.split("```python\n").nth(2).and_then(|c| c.split("\n```").next()).unwrap();
        assert!(shown.trim_start().starts_with("def parse_duration"), "the code the test calls: {shown}");
        assert!(
            shown.lines().any(|l| l.ends_with("  # added by the pull request")),
            "the lines the PR added to parse_duration are marked: {shown}"
        );
        assert!(
            shown.lines().next().unwrap().ends_with("  # the review comment points here"),
            "the moved comment points at the definition: {shown}"
        );
        // The answer keeps the other lines as shown, marks and all.
        let lines: Vec<&str> = shown.lines().collect();
        let at = lines.iter().position(|l| l.starts_with("    return sum(")).expect(shown);
        let mut code: Vec<&str> = lines[..at].to_vec();
        code.extend([
            "    total = sum(float(number) * _UNITS[unit] for number, unit in _TOKEN.findall(text))",
            "    return round(total)",
        ]);
        code.extend(&lines[at + 3..]);
        Reply::Answer(format!("```python\n{}\n```", code.join("\n")))
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let stages = "  - id: validate
    kind: agent_validation
    needs: [tests, context, environment]
    attempts: 1
    tested_code: true
    agent:
      kind: builtin
      mode: rewrite
      prompt: {prompts}/agent_rewrite_real.md
      feedback_prompt: {prompts}/agent_rewrite_feedback.md
      max_steps: 1
      mark_added: added by the pull request
      mark_commented: the review comment points here
";
    let validated = &kept_validation(&s, &mirrors, &server.base_url, stages);
    let patch = validated["patch"].as_str().unwrap();
    assert!(
        patch.contains("+++ b/src/durations/__init__.py") && patch.contains("+    return round(total)"),
        "{patch}"
    );
    assert!(!patch.contains("tests/test_parse.py"), "the test is left alone: {patch}");
    assert!(!patch.contains("# added by"), "the marks are taken off the answer: {patch}");
}

/// Drops the pattern check along with the truncation: the rounding test passes, but the project's
/// own `test_rejects_malformed` cases, which passed before, no longer raise.
const BREAKING_EDIT: &str = "src/durations/__init__.py\n<<<<<<< SEARCH\n    if not _WHOLE.fullmatch(text):\n        raise ValueError(f\"malformed duration: {text!r}\")\n    return sum(\n        int(float(number) * _UNITS[unit]) for number, unit in _TOKEN.findall(text)\n    )\n=======\n    total = sum(float(number) * _UNITS[unit] for number, unit in _TOKEN.findall(text))\n    return round(total)\n>>>>>>> REPLACE\n";

/// With a `project_tests` stage upstream, the hidden test may be the project's own (run in the
/// repository with the fix's test module written over the revision), and a revision that passes it
/// must also keep passing the project's tests that passed on both commits: the first revision
/// drops the pattern check and breaks them, the second does not.
#[test]
fn a_revision_that_breaks_the_projects_passing_tests_is_not_validated() {
    if !docker_or_skip("the regression check test") {
        return;
    }
    let (record, texts) = durations3();
    let keys: Vec<String> = texts.iter().map(|t| t.chars().take(60).collect()).collect();
    let server = Server::responding(move |body| {
        let messages = body["messages"].as_array().unwrap();
        let system = messages[0]["content"].as_str().unwrap_or("");
        let first_user = messages.iter().find(|m| m["role"] == "user").unwrap()["content"].as_str().unwrap();
        if !system.contains("software engineer") {
            return Reply::Answer("I cannot write a test for this.".into());
        }
        assert!(!first_user.contains("test_fractions_are_rounded"), "the agent never sees the test");
        let attempt = body["seed"].as_i64().unwrap() - 6;
        Reply::Answer(match (keys.iter().position(|k| first_user.contains(k.as_str())), attempt) {
            (Some(0), 1) => BREAKING_EDIT.into(),
            (Some(0), _) => ROUNDING_EDIT.into(),
            _ => "nothing".into(),
        })
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let stages = "  - id: attribution
    kind: attribution
    needs: context
    prompt: {prompts}/attribution.md
  - id: project
    kind: project_tests
    needs: environment
  - id: validate
    kind: agent_validation
    needs: [tests, context, environment, project]
    attempts: 2
    agent:
      kind: builtin
      prompt: {prompts}/agent.md
      feedback_prompt: {prompts}/agent_feedback.md
      max_steps: 1
";
    let extra = "    repeats: 1\n    max_attempts: 1\n    from_project_tests: true\n";
    let yaml = curation_pipeline("val", &mirrors, &server.base_url, extra, stages)
        .replace("needs: [context, environment]\n", "needs: [context, environment, attribution, project]\n");
    s.write("p.yaml", &yaml);
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let id = |n: usize| format!("curate-sample__durations-3#{n}");
    let tests = rows(&s, "tests");
    assert_eq!(tests[&id(1)].2["written_by"], "project test", "{:?}", tests[&id(1)]);

    let validated = rows(&s, "validate");
    let (state, _, c1) = &validated[&id(1)];
    assert_eq!(state, "kept", "{c1}");
    assert_eq!(c1["attempts"], 2, "{c1}");
    let history = c1["history"].as_array().unwrap();
    assert_eq!(history[0]["test"]["verdict"], "passed", "the breaking revision passes the hidden test: {c1}");
    assert_eq!(history[0]["result"], "the agent's revision broke tests of the project that passed", "{c1}");
    let broken: Vec<&str> =
        history[0]["regression"]["broken"].as_array().unwrap().iter().map(|b| b.as_str().unwrap()).collect();
    assert!(broken.iter().any(|b| b.starts_with("tests/test_parse.py::test_rejects_malformed[")), "{c1}");
    assert!(!broken.iter().any(|b| b.contains("test_fractions_and_weeks")), "{c1}");
    assert_eq!(c1["regression"]["broken"], serde_json::json!([]), "{c1}");
    assert!(c1["regression"]["checked"].as_u64().unwrap() > 5, "{c1}");

    // The evaluation's score holds a revision to the same check: the agent, guided by the human
    // comment, revises once (its first attempt: the breaking edit), which passes the test and
    // breaks the project's tests.
    let export = s.curate(&["export", "p.yaml", "--out", "bench", "--stage", "validate"]);
    assert_eq!(export.status.code(), Some(0), "{}", stderr(&export));
    let agent = format!(
        "{{kind: builtin, prompt: {p}/agent.md, feedback_prompt: {p}/agent_feedback.md, max_steps: 1}}",
        p = root().join("prompts").display()
    );
    s.write(
        "eval.yaml",
        &format!(
            "name: ev\nsource: {{kind: benchmark, path: bench}}\ndefaults:\n  cache: cache\n  repos: {{url: '{mirrors}/{{repo}}.git'}}\n  llm: {{base_url: '{url}', max_retries: 0}}\nstages:\n  - {{id: review_human, kind: review, name: human, reviewer: {{kind: human}}}}\n  - {{id: revise_human, kind: revise, needs: review_human, agent: {agent}}}\n  - {{id: score_human, kind: score, needs: revise_human}}\n",
            mirrors = mirrors.display(),
            url = server.base_url,
        ),
    );
    let eval = s.curate(&["run", "eval.yaml"]);
    assert_eq!(eval.status.code(), Some(0), "{}", stderr(&eval));
    let scored = rows_of(&s, "ev", "score_human");
    let (state, _, score) = scored.values().next().unwrap();
    assert_eq!(state, "kept", "{score}");
    assert_eq!(score["tests"][0]["passed"], true, "the breaking edit passes the test: {score}");
    let broken = score["regression"]["broken"].as_array().unwrap();
    assert!(
        broken
            .iter()
            .any(|b| b.as_str().unwrap().starts_with("tests/test_parse.py::test_rejects_malformed[")),
        "{score}"
    );
    let md = s.curate(&["report", "eval.yaml"]);
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("| – | 100.0% (1/1) | 0.0% (0/1) |"), "{md}");
    assert!(md.contains("run on 1 scored revision(s)"), "{md}");
}

/// A revision that an earlier attempt already tried is not tested again: the agent is run once
/// more with the next seed (`redraws`, default 2), and the run drawn again is stored with the
/// attempt. With `redraws: 0` the repeat ends the attempt, untested.
#[test]
fn a_revision_an_earlier_attempt_tried_is_drawn_again_not_tested_again() {
    if !docker_or_skip("the redraw validation test") {
        return;
    }
    let (record, _) = durations3();
    let server = comment_one_model("software engineer", |body| {
        // The agent's runs on the comment: the second repeats the first's wrong edit.
        Reply::Answer(match body["seed"].as_i64().unwrap() - 6 {
            1 | 2 => HALF_DOC_EDIT.into(),
            _ => ROUNDING_EDIT.into(),
        })
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let stage = |id: &str, more: &str| {
        format!(
            "  - id: {id}
    kind: agent_validation
    needs: [tests, context, environment]
    attempts: 2
{more}    agent:
      kind: builtin
      prompt: {{prompts}}/agent.md
      feedback_prompt: {{prompts}}/agent_feedback.md
      max_steps: 1
"
        )
    };
    let stages = stage("validate", "") + &stage("no_redraw", "    redraws: 0\n");
    let validated = kept_validation(&s, &mirrors, &server.base_url, &stages);
    assert_eq!(validated["attempts"], 2, "{validated}");
    let history = validated["history"].as_array().unwrap();
    assert_eq!(history[0]["test"]["verdict"], "assertion", "{validated}");
    assert_eq!(history[1]["redrawn"][0]["run"], 2, "the repeat was drawn again: {validated}");
    assert!(history[1]["patch"].as_str().unwrap().contains("+    return round(total)"), "{validated}");

    let (state, reason, rejected) = &rows(&s, "no_redraw")["curate-sample__durations-3#1"];
    assert_eq!(
        (state.as_str(), reason.as_deref()),
        ("rejected", Some("the agent's revision repeated an earlier attempt's")),
        "{rejected}"
    );
    let history = rejected["history"].as_array().unwrap();
    assert!(history[1].get("test").is_none(), "the repeat is not tested again: {rejected}");
    assert_eq!(history[1]["patch"], history[0]["patch"], "{rejected}");
}

/// With `focus_first_every: 2`, the second run asks for the commented statement first: a model
/// that answers the whole definition with the same wrong change every time (here a comment line
/// added) is asked the question it answers well. Without it, the second run asks the first's
/// question again and writes the first's revision, which is not tested again.
#[test]
fn every_second_run_asks_for_the_commented_statement_first() {
    if !docker_or_skip("the narrower-question-first validation test") {
        return;
    }
    let (record, _) = durations3();
    let server = comment_one_model("one piece of code", |body| {
        let user = first_user(body);
        let blocks: Vec<&str> =
            user.split("```python\n").skip(1).filter_map(|c| c.split("\n```").next()).collect();
        if !user.contains("The comment is about lines") {
            let wrong = blocks[0].replacen('\n', "\n    # durations are whole seconds\n", 1);
            return Reply::Answer(format!("```python\n{wrong}\n```"));
        }
        Reply::Answer(
            "```python\n    return round(sum(float(number) * _UNITS[unit] for number, unit in _TOKEN.findall(text)))\n```"
                .into(),
        )
    });
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    s.write("one.jsonl", &format!("{record}\n"));
    let stage = |id: &str, more: &str| {
        format!(
            "  - id: {id}
    kind: agent_validation
    needs: [tests, context, environment]
    attempts: 2
    redraws: 0
    agent:
      kind: builtin
      mode: rewrite
      prompt: {{prompts}}/agent_rewrite_real.md
      feedback_prompt: {{prompts}}/agent_rewrite_feedback.md
      focus_prompt: {{prompts}}/agent_focus_real.md
      resample_temperature: 0.7
      max_steps: 2
{more}"
        )
    };
    let stages = stage("validate", "      focus_first_every: 2\n") + &stage("whole_only", "");
    let validated = kept_validation(&s, &mirrors, &server.base_url, &stages);
    let history = validated["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{validated}");
    assert_eq!(history[0]["test"]["verdict"], "assertion", "the first run's wrong change: {validated}");
    let steps = history[1]["transcript"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{steps:?}");
    assert_eq!(steps[0]["focus"], true, "the second run asked for the statement first: {steps:?}");
    let patch = validated["patch"].as_str().unwrap();
    assert!(patch.contains("+    return round(sum(float(number)"), "{patch}");
    assert!(!patch.contains("whole seconds"), "the second run starts from the reviewed code: {patch}");

    let (state, reason, rejected) = &rows(&s, "whole_only")["curate-sample__durations-3#1"];
    assert_eq!(
        (state.as_str(), reason.as_deref()),
        ("rejected", Some("the agent's revision repeated an earlier attempt's")),
        "{rejected}"
    );
}
