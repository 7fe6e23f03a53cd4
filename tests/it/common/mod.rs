//! Shared helpers for the integration tests: a scratch directory with a pipeline and its items, and
//! the real `curate` binary run on it.

pub mod dockerd;
pub mod durations;
pub mod graphql;
pub mod openai;
pub mod registry;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Scratch {
    pub dir: tempfile::TempDir,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch { dir: tempfile::tempdir().expect("temp dir") }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
        path
    }

    /// `n` PR items `item-0000`…, one JSON object a line.
    pub fn items(&self, name: &str, n: usize) -> PathBuf {
        let text: String = (0..n).map(|i| format!("{{\"id\": \"item-{i:04}\", \"n\": {i}}}\n")).collect();
        self.write(name, &text)
    }

    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// Runs `curate ARGS` in the scratch directory.
    pub fn curate(&self, args: &[&str]) -> Output {
        curate_cmd(self.dir.path(), args).output().expect("run curate")
    }

    /// Runs `curate ARGS` with extra environment variables.
    pub fn curate_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut cmd = curate_cmd(self.dir.path(), args);
        cmd.envs(env.iter().copied());
        cmd.output().expect("run curate")
    }
}

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the bundled sample's git repositories under the repository's `cache/mirrors`, which
/// `pipelines/ccrab.yaml` reads: once per test process. `sample/build.py` replaces each mirror
/// whole, so a second build while another test's pipeline reads the mirrors took its commits
/// away in the middle of the run ("revspec not found").
pub fn build_sample_mirrors() {
    static BUILT: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    if let Err(e) = BUILT.get_or_init(|| sample_build(&root().join("cache/mirrors"))) {
        panic!("sample/build.py: {e}");
    }
}

/// Runs `sample/build.py --out out`: the error is its stderr.
fn sample_build(out: &Path) -> Result<(), String> {
    let built = Command::new("python3")
        .arg(root().join("sample/build.py"))
        .arg("--out")
        .arg(out)
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if built.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&built.stderr).into_owned()) }
}

impl Scratch {
    /// Builds the bundled sample's git repositories under `mirrors/` and returns that directory.
    pub fn sample_mirrors(&self) -> PathBuf {
        let out = self.path("mirrors");
        if let Err(e) = sample_build(&out) {
            panic!("sample/build.py: {e}");
        }
        out
    }
}

/// Whether a Docker daemon answers. Without one a test skips, loudly, unless CURATE_REQUIRE_DOCKER=1
/// (CI), where it fails.
pub fn docker_or_skip(what: &str) -> bool {
    let ok = Command::new("docker").arg("info").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert_ne!(
            std::env::var("CURATE_REQUIRE_DOCKER").as_deref(),
            Ok("1"),
            "CURATE_REQUIRE_DOCKER=1 but no Docker daemon answers"
        );
        eprintln!("\n!!! SKIPPING {what}: no Docker daemon answers\n");
        // cargo shows a skipped test as passed; scripts/test reads this list and says otherwise.
        let list = Path::new(env!("CARGO_TARGET_TMPDIR")).join("skipped-tests.txt");
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(list) {
            let _ = std::io::Write::write_all(&mut f, format!("{what}\n").as_bytes());
        }
    }
    ok
}

pub fn curate_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_curate"));
    // Tests choose their own model server and cache mode.
    cmd.args(args).current_dir(dir).env_remove("CURATE_LLM_CACHE").env_remove("OPENAI_BASE_URL");
    cmd
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The funnel of `curate report --format json`, as (stage, prs, comments) rows.
pub fn funnel(s: &Scratch, pipeline: &str, extra: &[&str]) -> Vec<(String, u64, u64)> {
    let mut args = vec!["report", pipeline, "--format", "json"];
    args.extend_from_slice(extra);
    let out = s.curate(&args);
    assert!(out.status.success(), "report failed: {}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report is JSON");
    json["funnel"]
        .as_array()
        .expect("funnel array")
        .iter()
        .map(|r| {
            (
                r["stage"].as_str().unwrap_or_default().to_string(),
                r["prs"].as_u64().unwrap_or(u64::MAX),
                r["comments"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect()
}

/// Counts lines of a side-effect log: how many times each line was written.
pub fn counts(log: &str) -> std::collections::HashMap<String, usize> {
    let mut out = std::collections::HashMap::new();
    for line in log.lines().filter(|l| !l.is_empty()) {
        *out.entry(line.to_string()).or_default() += 1;
    }
    out
}
