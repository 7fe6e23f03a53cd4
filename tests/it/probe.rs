//! The behaviour probe's planning, run by the host's Python on a small project (no Docker: the
//! probe is plain Python, and what it chooses to call does not depend on the image): the calls it
//! takes from the comment, from the project's tests (aliases, locals and parametrize rows put
//! in) and from the changed function's parameters, and the tests it writes for them.

use std::process::Command;

use serde_json::{Value, json};

const MODULE: &str = "from typing import Literal, Optional


def price(amount, mode: Optional[Literal['net', 'gross']] = None):
    if amount < 0:
        raise ValueError(\"negative amount\")
    return amount * (2 if mode == 'gross' else 1)


def test_helper():
    return 1
";

const TESTS: &str = "import pytest
import shop as s


@pytest.mark.parametrize(\"amount, expected\", [(3, 3), (-1, None)])
def test_price(amount, expected):
    assert s.price(amount) == expected


def test_gross():
    base = 5
    assert s.price(base, mode='gross') == 10
";

/// Runs the probe on the fixed `shop.py` (the negative check added) and returns its records.
fn probe(comment: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(repo.join("shop.py"), MODULE).unwrap();
    std::fs::write(repo.join("tests/test_shop.py"), TESTS).unwrap();
    let before = MODULE.replace("    if amount < 0:\n        raise ValueError(\"negative amount\")\n", "");
    let request = json!({
        "module": "shop", "before": before, "after": MODULE,
        "added": [5, 6, 11], "removed": [], "comment": comment, "calls": null,
    });
    std::fs::write(dir.path().join("request.json"), request.to_string()).unwrap();
    let out = Command::new("python3")
        .arg(crate::common::root().join("src/exec/probe.py"))
        .env("CURATE_PROBE_REQUEST", dir.path().join("request.json"))
        .env("CURATE_PROBE_REPO", &repo)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("curate-probe: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn call<'a>(records: &'a [Value], text: &str) -> Option<&'a Value> {
    records.iter().find(|r| r["call"] == text)
}

#[test]
fn the_probe_takes_calls_from_the_comment_and_the_tests_and_writes_tests_for_them() {
    let records = probe(
        "`price(x, 'gross')` with a negative amount returns a negative price, and `price(-7)` should raise; `price(y)` too.",
    );
    assert!(records.iter().all(|r| r.get("error").is_none() && r.get("note").is_none()), "{records:?}");

    // The comment's own call, and its placeholder filled with what the tests pass there, around
    // the comment's value 'gross'; a placeholder with nothing of the comment's is left alone.
    let own = call(&records, "price(-7)").expect("the comment's call");
    assert_eq!(own["from"], "comment");
    assert_eq!(own["result"], "raises ValueError: negative amount");
    let check = own["check"].as_str().unwrap();
    assert!(check.contains("with pytest.raises(ValueError):\n        price(-7)"), "{check}");
    assert!(check.starts_with("import pytest\nfrom shop import price\n"), "{check}");
    assert_eq!(call(&records, "price(-1, 'gross')").unwrap()["from"], "comment");
    assert!(
        !records.iter().any(|r| r["from"] == "comment" && r["call"] == "price(3)"),
        "`price(y)` names nothing of the comment's: {records:?}"
    );

    // The tests' calls: the alias `s` is the module, parametrize rows and locals are put in, and
    // the call that passes the comment's value says so.
    assert_eq!(call(&records, "shop.price(-1)").unwrap()["from"], "tests");
    let named = call(&records, "shop.price(5, mode='gross')").unwrap();
    assert_eq!(named["echoes"], true);
    assert_eq!(named["result"], "returns 10");
    assert_eq!(
        named["check"],
        "import shop\n\n\ndef test_observed_call():\n    assert shop.price(5, mode='gross') == 10\n"
    );
    assert!(call(&records, "shop.price(3)").unwrap().get("echoes").is_none());

    // Made-up calls of the changed function, the annotated parameter included; the module's
    // `test_helper` is not code under test.
    assert!(records.iter().any(|r| r["from"] == "generated" && r["call"] == "price(0)"), "{records:?}");
    assert!(records.iter().any(|r| r["call"].as_str().is_some_and(|c| c.contains("mode="))));
    assert!(!records.iter().any(|r| r["call"].as_str().is_some_and(|c| c.contains("test_helper"))));
}

#[test]
fn the_reviewed_side_makes_exactly_the_calls_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("shop.py"), "def price(amount, mode=None):\n    return amount\n").unwrap();
    let request = json!({
        "module": "shop", "before": "", "after": "", "added": [], "removed": [], "comment": "",
        "calls": [["comment", "price(-7)"], ["tests", "price(2, mode='gross')"], ["generated", "nothing_here()"]],
    });
    std::fs::write(dir.path().join("request.json"), request.to_string()).unwrap();
    let out = Command::new("python3")
        .arg(crate::common::root().join("src/exec/probe.py"))
        .env("CURATE_PROBE_REQUEST", dir.path().join("request.json"))
        .env("CURATE_PROBE_REPO", dir.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let results: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("curate-probe: "))
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| (r["call"].as_str().unwrap().to_string(), r["result"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        results,
        [
            ("price(-7)".to_string(), "returns -7".to_string()),
            ("price(2, mode='gross')".to_string(), "returns 2".to_string()),
            (
                "nothing_here()".to_string(),
                "raises NameError: name 'nothing_here' is not defined".to_string()
            ),
        ],
        "no test is written on this side, and no call added: {text}"
    );
    assert!(!text.contains("\"check\""), "{text}");
}

/// The module the shared-container test probes: it notes, when imported, whether an earlier run
/// left files in /repo or /tmp, leaves some itself, and reads a file only the image's /repo has.
const LEAKY: &str = "import os

SEEN = sorted(p for p in ('/repo/leak.txt', '/tmp/leak') if os.path.exists(p))
open('/repo/leak.txt', 'w').write('x')
open('/tmp/leak', 'w').write('x')
IMAGE = open('/repo/from_image.txt').read().strip()


def seen(x):
    return SEEN + [IMAGE, x]
";

/// The probe's sides in one container give what a container each gives: each side starts from the
/// image's /repo with its own tree over it and an empty /tmp, whatever the side before it left; the
/// reviewed and partial sides make the fixed side's calls; the partial side runs only where a call
/// differs, and says it skipped otherwise.
#[tokio::test]
async fn the_sides_in_one_container_see_what_a_container_each_sees() {
    use curate::exec::probe::{Request, Side, run, run_sides};
    if !crate::common::docker_or_skip("the probe's shared-container test") {
        return;
    }
    let d = curate::exec::connect().await.unwrap();
    let image = "curate-test/probe-sides:1";
    let dockerfile = "FROM curate/base:bookworm\nRUN ln -sf /usr/bin/python3 /usr/local/bin/python \
        && mkdir -p /repo && echo image > /repo/from_image.txt\n";
    curate::exec::build::build(&d, image, dockerfile, &[], None)
        .await
        .unwrap()
        .expect("the test image builds");

    let dir = tempfile::tempdir().unwrap();
    let tree = |name: &str, module: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("leaky.py"), module).unwrap();
        path
    };
    let fixed = tree("fixed", LEAKY);
    let partial = tree("partial", LEAKY);
    let reviewed = tree("reviewed", &LEAKY.replace("[IMAGE, x]", "[IMAGE, x, 'reviewed']"));
    let same = tree("same", LEAKY);
    let added: Vec<u64> = vec![10];
    let request = Request {
        module: "leaky",
        before: LEAKY,
        after: LEAKY,
        added: &added,
        removed: &[],
        comment: "`seen(1)` should not say where it was reviewed",
        calls: None,
    };
    let result = |p: &curate::exec::probe::Probe, call: &str| {
        p.calls.iter().find(|c| c.call == call).map(|c| c.result.clone()).unwrap_or_else(|| panic!("{p:?}"))
    };

    let sides = [
        (Side::Fixed, fixed.as_path()),
        (Side::Reviewed, reviewed.as_path()),
        (Side::Partial, partial.as_path()),
    ];
    let shared = run_sides(&d, image, &sides, &request).await.unwrap();
    let [Some(on_fixed), Some(on_reviewed), Some(on_partial)] = &shared[..] else { panic!("{shared:?}") };
    assert_eq!(result(on_fixed, "seen(1)"), "returns ['image', 1]", "{on_fixed:?}");
    assert_eq!(result(on_reviewed, "seen(1)"), "returns ['image', 1, 'reviewed']", "{on_reviewed:?}");
    assert_eq!(result(on_partial, "seen(1)"), "returns ['image', 1]", "{on_partial:?}");
    let calls = |p: &curate::exec::probe::Probe| p.calls.iter().map(|c| c.call.clone()).collect::<Vec<_>>();
    assert_eq!(calls(on_reviewed), calls(on_fixed), "the fixed side's calls, in order");
    assert_eq!(calls(on_partial), calls(on_fixed));

    // A container of its own says the same on the fixed side, tests written down and all.
    let alone = run(&d, image, &fixed, &request).await.unwrap();
    assert_eq!(alone.calls, on_fixed.calls);
    assert_eq!(alone.targets, on_fixed.targets);

    // Where no call differs, the partial side does not run.
    let sides = [
        (Side::Fixed, fixed.as_path()),
        (Side::Reviewed, same.as_path()),
        (Side::Partial, partial.as_path()),
    ];
    let shared = run_sides(&d, image, &sides, &request).await.unwrap();
    assert!(matches!(&shared[..], [Some(_), Some(_), None]), "{shared:?}");
    let results = |p: &curate::exec::probe::Probe| {
        p.calls.iter().map(|c| (c.call.clone(), c.result.clone())).collect::<Vec<_>>()
    };
    assert_eq!(
        results(shared[1].as_ref().unwrap()),
        results(on_fixed),
        "the same results as the fixed side's"
    );
}
