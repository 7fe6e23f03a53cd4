//! A checked pipeline: the spec with every stage built, every `needs` resolved, the DAG acyclic and
//! every file the config names read and hashed. Anything wrong is a [`SpecError`] at its line.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::errors::SpecError;
use crate::graph::StageGraph;
use crate::item::Scope;
use crate::key::StageFingerprint;
use crate::plugins::Plugins;
use crate::resources::Resource;
use crate::source::Source;
use crate::spec::{PipelineSpec, StageSpec};
use crate::stage::Stage;

/// A stage ready to run.
pub struct StagePlan {
    pub id: Arc<str>,
    pub kind: String,
    /// The funnel row's label.
    pub title: String,
    pub scope: Scope,
    pub resource: Resource,
    pub concurrency: Option<usize>,
    /// Indices of the stages this one needs.
    pub needs: Vec<usize>,
    pub stage: Arc<dyn Stage>,
    pub side_effects: bool,
    pub fingerprint: StageFingerprint,
    /// The stage kind's own config, as written.
    pub config: serde_yaml::Mapping,
    /// The output contract the stage's kept outputs follow.
    pub provides: Option<&'static str>,
    /// For each contract its direct upstream stages provide, the stage that provides it.
    pub providers: Arc<BTreeMap<&'static str, Arc<str>>>,
}

pub struct Pipeline {
    pub name: String,
    pub file: PathBuf,
    /// The pipeline file's directory; relative paths in it are relative to this.
    pub dir: PathBuf,
    pub source: Box<dyn Source>,
    /// In declaration order.
    pub stages: Vec<StagePlan>,
    pub graph: StageGraph,
    pub concurrency: BTreeMap<Resource, usize>,
}

impl Pipeline {
    /// Reads the pipeline file's text, or says why it cannot.
    pub fn read(file: &Path) -> Result<String, SpecError> {
        crate::files::read_regular_text(file, crate::files::MAX_CONFIG_BYTES).map_err(|e| SpecError {
            file: file.to_path_buf(),
            position: None,
            key: None,
            message: format!("cannot read the pipeline: {e}"),
        })
    }

    /// Parses and checks pipeline text, building its source and stages with `plugins`.
    pub fn from_text(file: &Path, text: &str, plugins: &dyn Plugins) -> Result<Pipeline, SpecError> {
        Pipeline::from_spec(file, text, PipelineSpec::parse(file, text)?, plugins)
    }

    /// Checks a parsed spec (`text` is what it was parsed from, for error positions) and builds its
    /// source and stages with `plugins`.
    pub fn from_spec(
        file: &Path,
        text: &str,
        spec: PipelineSpec,
        plugins: &dyn Plugins,
    ) -> Result<Pipeline, SpecError> {
        let dir = pipeline_dir(file);
        let err = |key: String, message: String| SpecError::at(file, text, key, message);
        check_top_level(&spec, &err)?;
        let source = build_source(&spec, plugins, &err)?;
        let needs = resolve_needs(&spec.stages, &err)?;
        let graph = StageGraph::new(&needs).map_err(|cycle| {
            let names: Vec<&str> = cycle.iter().map(|&s| spec.stages[s].id.as_str()).collect();
            err(
                format!("stages[{}].needs", cycle[0]),
                format!("the stages form a cycle: {}", names.join(" -> ")),
            )
        })?;

        let mut stages = Vec::with_capacity(spec.stages.len());
        let mut requires = Vec::with_capacity(spec.stages.len());
        for (i, (stage, needs)) in spec.stages.iter().zip(needs).enumerate() {
            let (plan, required) = plan_stage(i, stage, needs, &dir, plugins, &err)?;
            stages.push(plan);
            requires.push(required);
        }
        check_contracts(&spec.stages, &stages, &requires, &err)?;
        for s in 0..stages.len() {
            let providers = stages[s]
                .needs
                .iter()
                .filter_map(|&u| stages[u].provides.map(|c| (c, stages[u].id.clone())))
                .collect();
            stages[s].providers = Arc::new(providers);
        }
        Ok(Pipeline {
            name: spec.name,
            file: file.to_path_buf(),
            dir,
            source,
            stages,
            graph,
            concurrency: spec.defaults.concurrency,
        })
    }

    /// Where run state lives unless `--state` says otherwise: beside the pipeline file, named after
    /// the pipeline.
    pub fn default_state_dir(&self) -> PathBuf {
        self.dir.join(".curate").join(&self.name)
    }

    /// Stage indices in the order funnel rows and progress bars list them.
    pub fn order(&self) -> &[usize] {
        self.graph.order()
    }
}

/// The pipeline's name (it names the state directory), its limits, and that it has stages.
fn check_top_level(spec: &PipelineSpec, err: &impl Fn(String, String) -> SpecError) -> Result<(), SpecError> {
    if spec.name.is_empty() || !spec.name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err(err(
            "name".into(),
            format!("`{}` cannot name a state directory; use letters, digits, `-`, `_`, `.`", spec.name),
        ));
    }
    for (r, n) in &spec.defaults.concurrency {
        if *n == 0 {
            return Err(err(format!("defaults.concurrency.{r}"), "a limit must be at least 1".into()));
        }
    }
    if spec.stages.is_empty() {
        return Err(err("stages".into(), "the pipeline has no stages".into()));
    }
    Ok(())
}

fn build_source(
    spec: &PipelineSpec,
    plugins: &dyn Plugins,
    err: &impl Fn(String, String) -> SpecError,
) -> Result<Box<dyn Source>, SpecError> {
    match plugins.source(&spec.source.kind, &spec.source.config) {
        None => {
            let known = plugins.source_kinds();
            Err(err(
                "source.kind".into(),
                format!("unknown source kind `{}`; known kinds: {}", spec.source.kind, known.join(", ")),
            ))
        }
        Some(Err(e)) => {
            let key = e.key.map_or("source".into(), |k| format!("source.{k}"));
            Err(err(key, e.message))
        }
        Some(Ok(source)) => Ok(source),
    }
}

/// Each stage's `needs`, as indices of the stages named; a name no stage has is an error at it.
fn resolve_needs(
    stages: &[StageSpec],
    err: &impl Fn(String, String) -> SpecError,
) -> Result<Vec<Vec<usize>>, SpecError> {
    let index = stage_index(stages, err)?;
    let mut needs = Vec::with_capacity(stages.len());
    for (i, stage) in stages.iter().enumerate() {
        let mut resolved = Vec::new();
        for (j, need) in stage.needs.iter().enumerate() {
            let Some(&u) = index.get(need.as_str()) else {
                let key = if stage.needs.len() == 1 {
                    format!("stages[{i}].needs")
                } else {
                    format!("stages[{i}].needs[{j}]")
                };
                return Err(err(key, format!("stage `{}` needs `{need}`, which no stage defines", stage.id)));
            };
            resolved.push(u);
        }
        needs.push(resolved);
    }
    Ok(needs)
}

/// Removes the key at a dotted `path` (`agent.llm`) from a config mapping, if it is there.
fn remove_path(config: &mut serde_yaml::Mapping, path: &str) {
    match path.split_once('.') {
        None => {
            config.remove(path);
        }
        Some((head, rest)) => {
            if let Some(serde_yaml::Value::Mapping(inner)) = config.get_mut(head) {
                remove_path(inner, rest);
            }
        }
    }
}

/// The directory relative paths in a pipeline file are relative to.
pub fn pipeline_dir(file: &Path) -> PathBuf {
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir }
}

/// Every contract a stage requires must come from a stage it needs directly: that is what its tasks
/// are given. A missing one is found here, not by every task of every run.
fn check_contracts(
    specs: &[StageSpec],
    stages: &[StagePlan],
    requires: &[Vec<&'static str>],
    err: &impl Fn(String, String) -> SpecError,
) -> Result<(), SpecError> {
    for (i, (plan, required)) in stages.iter().zip(requires).enumerate() {
        for contract in required {
            if plan.needs.iter().any(|&u| stages[u].provides == Some(contract)) {
                continue;
            }
            let providers: Vec<String> = stages
                .iter()
                .filter(|s| s.provides == Some(contract))
                .map(|s| format!("`{}`", s.id))
                .collect();
            let hint = if providers.is_empty() {
                "add a stage that provides it (its kind says so) and list it in `needs`".to_string()
            } else {
                format!("add {} to its `needs`", providers.join(" or "))
            };
            let key = if specs[i].needs.is_empty() {
                format!("stages[{i}].kind")
            } else {
                format!("stages[{i}].needs")
            };
            return Err(err(
                key,
                format!(
                    "stage `{}` ({}) reads the `{contract}` output of a stage it needs, and none of its `needs` provides it; {hint}",
                    plan.id, plan.kind
                ),
            ));
        }
    }
    Ok(())
}

fn stage_index<'a>(
    stages: &'a [StageSpec],
    err: &impl Fn(String, String) -> SpecError,
) -> Result<HashMap<&'a str, usize>, SpecError> {
    let mut index = HashMap::new();
    for (i, stage) in stages.iter().enumerate() {
        if stage.id.is_empty() || stage.id.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(err(format!("stages[{i}].id"), format!("`{}` is not a usable stage id", stage.id)));
        }
        if stage.id == "ingest" {
            return Err(err(
                format!("stages[{i}].id"),
                "`ingest` is reserved for the funnel's first row; choose another id".into(),
            ));
        }
        if let Some(first) = index.insert(stage.id.as_str(), i) {
            return Err(err(
                format!("stages[{i}].id"),
                format!("stage id `{}` is already used by stages[{first}]", stage.id),
            ));
        }
    }
    Ok(index)
}

fn plan_stage(
    i: usize,
    spec: &StageSpec,
    needs: Vec<usize>,
    dir: &Path,
    plugins: &dyn Plugins,
    err: &impl Fn(String, String) -> SpecError,
) -> Result<(StagePlan, Vec<&'static str>), SpecError> {
    let built = match plugins.stage(&spec.id, &spec.kind, &spec.config) {
        None => {
            let known = plugins.stage_kinds();
            return Err(err(
                format!("stages[{i}].kind"),
                format!("unknown stage kind `{}`; known kinds: {}", spec.kind, known.join(", ")),
            ));
        }
        Some(Err(e)) => {
            let key = e.key.map_or(format!("stages[{i}]"), |k| format!("stages[{i}].{k}"));
            return Err(err(key, format!("stage `{}`: {}", spec.id, e.message)));
        }
        Some(Ok(built)) => built,
    };
    if spec.concurrency == Some(0) {
        return Err(err(format!("stages[{i}].concurrency"), "must be at least 1".into()));
    }
    let scope = spec.scope.unwrap_or(built.scope);
    let mut files = BTreeMap::new();
    let named = built.files.iter().map(|f| (f, "")).chain(spec.inputs.iter().map(|f| (f, "inputs")));
    for (name, key) in named {
        let path = dir.join(name);
        let bytes = crate::files::read_regular(&path, crate::files::MAX_CONFIG_BYTES).map_err(|e| {
            let key = if key.is_empty() { format!("stages[{i}]") } else { format!("stages[{i}].{key}") };
            err(key, format!("stage `{}`: cannot read {}: {e}", spec.id, path.display()))
        })?;
        files.insert(name.clone(), bytes);
    }
    let mut hashed = spec.config.clone();
    for path in built.unhashed {
        remove_path(&mut hashed, path);
    }
    let mut config = serde_json::to_value(&hashed).map_err(|e| {
        err(format!("stages[{i}]"), format!("stage `{}`: config is not plain data: {e}", spec.id))
    })?;
    if let serde_json::Value::Object(map) = &mut config {
        map.insert("scope".into(), serde_json::Value::String(scope.to_string()));
        if !built.fingerprint_extra.is_null() {
            map.insert("(settings)".into(), built.fingerprint_extra.clone());
        }
    }
    let plan = StagePlan {
        id: spec.id.as_str().into(),
        kind: spec.kind.clone(),
        title: spec.title.clone().unwrap_or_else(|| spec.id.clone()),
        scope,
        resource: spec.resource.unwrap_or(built.resource),
        concurrency: spec.concurrency,
        needs,
        stage: built.stage,
        side_effects: built.side_effects,
        fingerprint: StageFingerprint::new(&spec.kind, built.version, &config, &files),
        config: spec.config.clone(),
        provides: built.provides,
        providers: Arc::default(),
    };
    Ok((plan, built.requires))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::Kinds;

    fn load(stages: &str) -> Result<Pipeline, SpecError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("items.jsonl"), "{\"id\": 1}\n").unwrap();
        std::fs::write(dir.path().join("prompt.txt"), "say hi").unwrap();
        let text = format!("name: t\nsource:\n  kind: jsonl\n  path: items.jsonl\nstages:\n{stages}");
        Pipeline::from_text(&dir.path().join("p.yaml"), &text, &Kinds { dir: dir.path().to_path_buf() })
    }

    fn message(stages: &str) -> String {
        let e = load(stages).err().expect("should fail");
        let shown = e.to_string();
        shown[shown.find("p.yaml").unwrap()..].to_string()
    }

    #[test]
    fn a_good_pipeline_loads() {
        let p = load("  - id: a\n    kind: noop\n  - id: b\n    kind: exec\n    needs: a\n    command: cat\n    inputs: [prompt.txt]\n").unwrap();
        assert_eq!(p.stages[1].needs, vec![0]);
        assert_eq!(p.stages[1].title, "b");
    }

    #[test]
    fn dangling_needs_names_stage_and_line() {
        assert_eq!(
            message("  - id: a\n    kind: noop\n  - id: synth\n    kind: noop\n    needs: env2\n"),
            "p.yaml:10:5: `stages[1].needs`: stage `synth` needs `env2`, which no stage defines"
        );
    }

    #[test]
    fn cycle_is_named() {
        let m = message(
            "  - id: a\n    kind: noop\n    needs: c\n  - id: b\n    kind: noop\n    needs: a\n  - id: c\n    kind: noop\n    needs: b\n",
        );
        assert_eq!(m, "p.yaml:8:5: `stages[0].needs`: the stages form a cycle: a -> b -> c -> a");
    }

    #[test]
    fn duplicate_ids_unknown_kinds_and_bad_config_are_located() {
        assert!(
            message("  - id: a\n    kind: noop\n  - id: a\n    kind: noop\n")
                .starts_with("p.yaml:8:5: `stages[1].id`: stage id `a` is already used")
        );
        assert!(
            message("  - id: a\n    kind: nope\n")
                .starts_with("p.yaml:7:5: `stages[0].kind`: unknown stage kind `nope`")
        );
        assert!(
            message("  - id: a\n    kind: exec\n    comand: ls\n")
                .starts_with("p.yaml:8:5: `stages[0].comand`: stage `a`: unknown field `comand`")
        );
        assert!(
            message("  - id: a\n    kind: exec\n    command: ls\n    timeout_secs: soon\n")
                .starts_with("p.yaml:9:5: `stages[0].timeout_secs`: stage `a`: invalid type")
        );
        assert!(
            message("  - id: a\n    kind: noop\n    inputs: [missing.txt]\n")
                .starts_with("p.yaml:8:5: `stages[0].inputs`: stage `a`: cannot read")
        );
    }

    #[test]
    fn input_files_are_part_of_the_fingerprint() {
        let stages = "  - id: a\n    kind: noop\n    inputs: [prompt.txt]\n";
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("items.jsonl"), "{\"id\": 1}\n").unwrap();
        let text = format!("name: t\nsource:\n  kind: jsonl\n  path: items.jsonl\nstages:\n{stages}");
        let file = dir.path().join("p.yaml");
        std::fs::write(dir.path().join("prompt.txt"), "one").unwrap();
        let one = Pipeline::from_text(&file, &text, &Kinds { dir: dir.path().to_path_buf() }).unwrap().stages
            [0]
        .fingerprint;
        std::fs::write(dir.path().join("prompt.txt"), "two").unwrap();
        let two = Pipeline::from_text(&file, &text, &Kinds { dir: dir.path().to_path_buf() }).unwrap().stages
            [0]
        .fingerprint;
        assert_ne!(one, two);
    }

    #[test]
    fn a_required_contract_must_come_from_a_needed_stage() {
        assert_eq!(
            message(
                "  - id: m\n    kind: make\n  - id: a\n    kind: noop\n  - id: u\n    kind: use\n    needs: a\n"
            ),
            "p.yaml:12:5: `stages[2].needs`: stage `u` (use) reads the `thing` output of a stage it needs, and none of its `needs` provides it; add `m` to its `needs`"
        );
        assert!(
            message("  - id: u\n    kind: use\n").contains("add a stage that provides it"),
            "no stage provides it at all"
        );
        assert!(load("  - id: m\n    kind: make\n  - id: u\n    kind: use\n    needs: m\n").is_ok());
    }

    #[test]
    fn settings_a_kind_calls_unhashed_leave_the_key_alone() {
        let key = |extra: &str| {
            load(&format!("  - id: a\n    kind: exec\n    command: ls\n{extra}")).unwrap().stages[0]
                .fingerprint
        };
        assert_eq!(key(""), key("    retries: 5\n"));
        assert_ne!(key(""), key("    timeout_secs: 5\n"));
    }
}
