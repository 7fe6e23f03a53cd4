//! Running a test file against the reviewed and the fixed commit inside a PR's image, with the
//! verdict classified. Uses the sample's durations#3 and its probe tests, which fail on the reviewed
//! commit and pass on the fixed one. Skips loudly without Docker; fails under CURATE_REQUIRE_DOCKER=1.

use std::process::Command;
use std::time::Duration;

use crate::common::{Scratch, docker_or_skip, root, stderr};
use curate::exec::testrun::{Target, Verdict, run_target, run_target_seeds, run_test, run_test_traced};
use serde_json::Value;

#[test]
fn a_probe_fails_on_the_reviewed_commit_and_passes_on_the_fixed_one() {
    if !docker_or_skip("the test-run test") {
        return;
    }
    let s = Scratch::new();
    let mirrors = s.sample_mirrors();
    let record: Value = std::fs::read_to_string(root().join("sample/swe-care.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["instance_id"] == "curate-sample__durations-3")
        .unwrap();
    s.write("one.jsonl", &format!("{record}\n"));
    s.write(
        "p.yaml",
        &format!(
            "name: tr\nsource: {{kind: swe-care, path: one.jsonl}}\ndefaults:\n  cache: cache\n  repos: {{url: '{}/{{repo}}.git'}}\nstages:\n  - id: env\n    kind: environment\n",
            mirrors.display()
        ),
    );
    let out = s.curate(&["run", "p.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let db = rusqlite::Connection::open(s.path(".curate/tr/state.db")).unwrap();
    let output: String =
        db.query_row("SELECT output FROM tasks WHERE state = 'kept'", [], |r| r.get(0)).unwrap();
    let image = serde_json::from_str::<Value>(&output).unwrap()["image"].as_str().unwrap().to_string();

    let fixed = s.path("fixed");
    let git = |args: &[&str]| {
        assert!(Command::new("git").args(args).output().unwrap().status.success(), "git {args:?}")
    };
    git(&[
        "clone",
        "-q",
        mirrors.join("curate-sample/durations.git").to_str().unwrap(),
        fixed.to_str().unwrap(),
    ]);
    git(&["-C", fixed.to_str().unwrap(), "checkout", "-q", record["merged_commit"].as_str().unwrap()]);
    let reviewed_tree = s.path("reviewed");
    git(&[
        "clone",
        "-q",
        mirrors.join("curate-sample/durations.git").to_str().unwrap(),
        reviewed_tree.to_str().unwrap(),
    ]);
    let head = record["commit_to_review"]["head_commit"].as_str().unwrap();
    git(&["-C", reviewed_tree.to_str().unwrap(), "checkout", "-q", head]);
    let reviewed_tree = reviewed_tree.as_path();

    let probe = std::fs::read_to_string(root().join("sample/probes/durations-3.py")).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let d = curate::exec::connect().await.unwrap();
        let t = Duration::from_secs(120);
        let reviewed = run_test(&d, &image, reviewed_tree, ("test_probe.py", &probe), t).await.unwrap();
        assert!(reviewed.verdict.is_test_failure(), "{:?}\n{}", reviewed.verdict, reviewed.output);
        let after = run_test(&d, &image, &fixed, ("test_probe.py", &probe), t).await.unwrap();
        assert_eq!(after.verdict, Verdict::Passed, "{}", after.output);
        assert!(reviewed.wrote.is_empty() && after.wrote.is_empty(), "{:?}", after.wrote);

        // Traced, a run says which lines of the named files it executed: the probe calls
        // parse_duration, so lines of its body; a test that only imports the module reaches none.
        let source = std::fs::read_to_string(fixed.join("src/durations/__init__.py")).unwrap();
        let lines: Vec<&str> = source.lines().collect();
        let def = lines.iter().position(|l| l.starts_with("def parse_duration")).unwrap() + 1;
        let end = lines.iter().skip(def).position(|l| !l.is_empty() && !l.starts_with(' ')).map_or(lines.len(), |k| def + k);
        let body = |traced: &std::collections::BTreeMap<String, Vec<u64>>| -> usize {
            traced.get("src/durations/__init__.py").map_or(0, |hit| hit.iter().filter(|n| (def as u64 + 1..=end as u64).contains(n)).count())
        };
        let files = ["src/durations/__init__.py".to_string()];
        let (run, traced) = run_test_traced(&d, &image, &fixed, ("test_probe.py", &probe), t, &files).await.unwrap();
        assert_eq!(run.verdict, Verdict::Passed, "{}", run.output);
        assert!(!run.output.contains("curate-trace"), "{}", run.output);
        assert!(body(&traced) > 0, "no line of parse_duration's body ({def}..{end}) traced: {traced:?}");
        let idle = "import durations\n\ndef test_x():\n    assert durations\n";
        let (_, traced) = run_test_traced(&d, &image, &fixed, ("test_idle.py", idle), t, &files).await.unwrap();
        assert!(traced.contains_key("src/durations/__init__.py"), "the import itself runs module lines: {traced:?}");
        assert_eq!(body(&traced), 0, "{traced:?}");

        let writer = "import pathlib\n\ndef test_x():\n    pathlib.Path('/repo/notes.txt').write_text('x')\n";
        let writer = run_test(&d, &image, reviewed_tree, ("test_writer.py", writer), t).await.unwrap();
        assert_eq!(writer.verdict, Verdict::Passed, "{}", writer.output);
        assert_eq!(writer.wrote, ["/repo/notes.txt"], "the write into the repository is seen");
        assert!(!writer.output.contains("curate-wrote"), "{}", writer.output);
        // Appending to a project file and setting its times back does not hide the write.
        let sly = "import os\n\ndef test_x():\n    p = '/repo/pyproject.toml'\n    st = os.stat(p)\n    with open(p, 'a') as f:\n        f.write('# x')\n    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))\n";
        let sly = run_test(&d, &image, reviewed_tree, ("test_sly.py", sly), t).await.unwrap();
        assert_eq!(sly.verdict, Verdict::Passed, "{}", sly.output);
        assert_eq!(sly.wrote, ["/repo/pyproject.toml"], "the write is seen whatever the file's times say");
        // Nor does moving the run's start marker, if there were one, into the future or deleting it,
        // nor deleting a project file.
        let marker = "import os, pathlib\n\ndef test_x():\n    with open('/repo/pyproject.toml', 'a') as f:\n        f.write('# x')\n    for p in pathlib.Path('/curate-test').glob('.*'):\n        os.utime(p, (4102444800, 4102444800))\n";
        let marker = run_test(&d, &image, reviewed_tree, ("test_marker.py", marker), t).await.unwrap();
        assert_eq!(marker.wrote, ["/repo/pyproject.toml"], "{}", marker.output);
        let deleter = "import os, pathlib\n\ndef test_x():\n    os.remove('/repo/pyproject.toml')\n    for p in pathlib.Path('/curate-test').glob('.*'):\n        p.unlink()\n";
        let deleter = run_test(&d, &image, reviewed_tree, ("test_deleter.py", deleter), t).await.unwrap();
        assert_eq!(deleter.wrote, ["/repo"], "the deletion shows as its directory's change: {}", deleter.output);

        // Past the memory limit, the kernel kills it: out of memory, not a collection error.
        let hog = "def test_hog():\n    blocks = [b'x' * (64 << 20) for _ in range(48)]\n    assert blocks\n";
        let hog = run_test(&d, &image, reviewed_tree, ("test_hog.py", hog), t).await.unwrap();
        assert_eq!(hog.verdict, Verdict::OutOfMemory, "{:?}: {}", hog.exit_code, hog.output);
        // /tmp is held in memory and bounded: a test that fills it gets "No space left on device"
        // and writes nothing on the host's disk (before, 1 GiB there passed).
        let filler = "def test_fill():\n    with open('/tmp/fill', 'wb') as f:\n        for _ in range(1024):\n            f.write(b'x' * (1 << 20))\n";
        let filler = run_test(&d, &image, reviewed_tree, ("test_filler.py", filler), t).await.unwrap();
        assert_eq!(filler.verdict, Verdict::UnexpectedException, "{}", filler.output);
        assert!(filler.output.contains("No space left on device"), "{}", filler.output);
        // Past the process limit, a new thread cannot start: too many processes, its own verdict.
        let spawner = "import threading\n\ndef test_threads():\n    stop = threading.Event()\n    for _ in range(2000):\n        threading.Thread(target=stop.wait, daemon=True).start()\n";
        let spawner = run_test(&d, &image, reviewed_tree, ("test_spawner.py", spawner), t).await.unwrap();
        assert_eq!(spawner.verdict, Verdict::TooManyProcesses, "{:?}: {}", spawner.exit_code, spawner.output);
        // The limit is the test run's own: a hundred threads fit, two hundred do not.
        let threads = |n: usize| {
            format!("import threading\n\ndef test_threads():\n    stop = threading.Event()\n    for _ in range({n}):\n        threading.Thread(target=stop.wait, daemon=True).start()\n")
        };
        let hundred = run_test(&d, &image, reviewed_tree, ("test_hundred.py", &threads(100)), t).await.unwrap();
        assert_eq!(hundred.verdict, Verdict::Passed, "{}", hundred.output);
        let two_hundred = run_test(&d, &image, reviewed_tree, ("test_two_hundred.py", &threads(200)), t).await.unwrap();
        assert_eq!(two_hundred.verdict, Verdict::TooManyProcesses, "{}", two_hundred.output);

        // A test that ends the process before pytest does gives no verdict, whatever its exit code;
        // the line that tells is not left in what the run printed.
        for code in [0, 1] {
            let quitter = format!("import os\n\ndef test_x():\n    os._exit({code})\n");
            let quitter = run_test(&d, &image, reviewed_tree, ("test_quitter.py", &quitter), t).await.unwrap();
            assert_eq!(quitter.verdict, Verdict::Aborted, "os._exit({code}): {}", quitter.output);
            assert_eq!(quitter.exit_code, Some(code));
        }
        assert!(!after.output.contains("curate-finished"), "{}", after.output);

        let broken = run_test(&d, &image, reviewed_tree, ("test_bad.py", "def test_x(:\n    pass\n"), t).await.unwrap();
        assert_eq!(broken.verdict, Verdict::SyntaxError, "{}", broken.output);
        let missing = "import durations_that_never_was\n\ndef test_x():\n    assert True\n";
        let missing = run_test(&d, &image, reviewed_tree, ("test_missing.py", missing), t).await.unwrap();
        assert_eq!(missing.verdict, Verdict::ImportError, "{}", missing.output);
        let raises = "import pytest\nfrom durations import parse_duration\n\ndef test_x():\n    with pytest.raises(KeyError):\n        parse_duration('1h')\n";
        let raises = run_test(&d, &image, reviewed_tree, ("test_raises.py", raises), t).await.unwrap();
        assert_eq!(raises.verdict, Verdict::ExpectedExceptionMissing, "{}", raises.output);
        // Among the project's tests, a test of curate's has the fixtures of the conftest files
        // above it; outside the repository it has not. Its own file is not a write of the test.
        std::fs::create_dir_all(reviewed_tree.join("checks")).unwrap();
        std::fs::write(
            reviewed_tree.join("checks/conftest.py"),
            "import pytest\n\n@pytest.fixture\ndef answer():\n    return 42\n",
        )
        .unwrap();
        let uses = "def test_answer(answer):\n    assert answer == 42\n";
        let in_tree = Target::InTree { path: "checks/test_curate_in_tree.py", code: uses };
        let there = run_target(&d, &image, reviewed_tree, in_tree, t, 0).await.unwrap();
        assert_eq!(there.verdict, Verdict::Passed, "{}", there.output);
        assert!(there.wrote.is_empty(), "{:?}", there.wrote);
        let outside = Target::File { name: "test_curate_outside.py", code: uses };
        let outside = run_target(&d, &image, reviewed_tree, outside, t, 0).await.unwrap();
        assert_ne!(outside.verdict, Verdict::Passed, "no fixture outside the tree: {}", outside.output);
        assert!(outside.output.contains("fixture 'answer' not found"), "{}", outside.output);

        // A test's repeats run in one container, each under its own hash seed, each with an empty
        // /tmp, each verdict and output the run's own.
        let seeded = "import os\n\ndef test_tmp_is_empty():\n    assert not os.path.exists('/tmp/left')\n    open('/tmp/left', 'w').write('x')\n\ndef test_seed():\n    assert os.environ['PYTHONHASHSEED'] == 'never'\n";
        let target = Target::File { name: "test_seeded.py", code: seeded };
        let runs = run_target_seeds(&d, &image, reviewed_tree, target, t, &[1, 2, 3]).await.unwrap();
        assert_eq!(runs.len(), 3);
        for (run, seed) in runs.iter().zip(1..) {
            assert_eq!((run.verdict, run.exit_code), (Verdict::Assertion, Some(1)), "{}", run.output);
            assert!(run.output.contains(&format!("'{seed}' == 'never'")), "seed {seed}: {}", run.output);
            assert!(run.output.contains("1 failed, 1 passed"), "seed {seed}: {}", run.output);
            assert!(!run.output.contains("curate-run-end") && !run.output.contains("curate-finished"));
            assert!(run.wrote.is_empty(), "{:?}", run.wrote);
        }
        // A run that writes into the repository ends the batch: the next runs each get a fresh tree.
        let once = "import pathlib\n\ndef test_x():\n    p = pathlib.Path('/repo/once.txt')\n    assert not p.exists()\n    p.write_text('x')\n";
        let target = Target::File { name: "test_once.py", code: once };
        let runs = run_target_seeds(&d, &image, reviewed_tree, target, t, &[1, 2, 3]).await.unwrap();
        for run in &runs {
            assert_eq!(run.verdict, Verdict::Passed, "{}", run.output);
            assert_eq!(run.wrote, ["/repo/once.txt"]);
        }
        // Outputs too long to keep whole in one container's: each run alone, its own output whole.
        let loud = "import os\n\ndef test_x():\n    print('x' * 50000)\n    assert os.environ['PYTHONHASHSEED'] == 'never'\n";
        let target = Target::File { name: "test_loud.py", code: loud };
        let runs = run_target_seeds(&d, &image, reviewed_tree, target, t, &[1, 2]).await.unwrap();
        for (run, seed) in runs.iter().zip(1..) {
            assert_eq!(run.verdict, Verdict::Assertion, "{}", run.output);
            assert!(run.output.contains(&format!("'{seed}' == 'never'")), "seed {seed}");
            assert!(!run.output.contains("bytes cut"), "seed {seed}");
        }

        let slow = "def test_forever():\n    while True:\n        pass\n";
        let slow = run_test(&d, &image, reviewed_tree, ("test_slow.py", slow), Duration::from_secs(3)).await.unwrap();
        assert_eq!(slow.verdict, Verdict::Timeout);
    });
}
