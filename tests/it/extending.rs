//! A stage kind added from outside the crate, the way the README's "Extending it" says: one
//! [`AsyncStage`] and one line that registers it. It runs after curation's own `comment_context` on
//! the bundled sample, reads that stage's typed output, and a pipeline that forgets the `needs:` it
//! relies on is refused when it loads.

use std::collections::HashMap;

use crate::common::{Scratch, root};
use curate::context::Context;
use curate::curation::Curation;
use curate::engine::errors::ConfigError;
use curate::engine::events::Silent;
use curate::engine::flow::{Flow, TaskState};
use curate::engine::item::{Dataset, Scope};
use curate::engine::pipeline::Pipeline;
use curate::engine::plugins::Plugins;
use curate::engine::resources::{Limits, Resource};
use curate::engine::scheduler;
use curate::engine::source::Source;
use curate::engine::spec::PipelineSpec;
use curate::engine::stage::{AsyncStage, StageDef, TaskError, TaskInput, adapt};
use curate::engine::store::Store;
use curate::stages::contract::{self, CommentContext, Contract};
use serde_json::{Value, json};
use serde_yaml::Mapping;

/// Counts the commented lines; rejects comments on a single line.
struct LineCount;

impl AsyncStage for LineCount {
    async fn run(&self, input: TaskInput) -> Result<Value, TaskError> {
        let context: CommentContext = contract::upstream(&input)?;
        let lines = context.end_line - context.start_line + 1;
        if lines == 1 {
            return Err(TaskError::reject("a one-line comment"));
        }
        Ok(json!({"lines": lines}))
    }
}

fn line_count() -> StageDef {
    StageDef {
        stage: adapt(LineCount),
        version: 1,
        scope: Scope::Comment,
        resource: Resource::Cpu,
        side_effects: false,
        files: Vec::new(),
        fingerprint_extra: Value::Null,
        unhashed: &[],
        provides: None,
        requires: vec![CommentContext::NAME],
    }
}

/// Curation's kinds plus one.
struct Extended(Curation);

impl Plugins for Extended {
    fn source_kinds(&self) -> Vec<&'static str> {
        self.0.source_kinds()
    }
    fn source(&self, kind: &str, config: &Mapping) -> Option<Result<Box<dyn Source>, ConfigError>> {
        self.0.source(kind, config)
    }
    fn stage_kinds(&self) -> Vec<&'static str> {
        let mut kinds = self.0.stage_kinds();
        kinds.push("line_count");
        kinds
    }
    fn stage(&self, id: &str, kind: &str, config: &Mapping) -> Option<Result<StageDef, ConfigError>> {
        match kind {
            "line_count" => Some(Ok(line_count())),
            _ => self.0.stage(id, kind, config),
        }
    }
}

fn load(s: &Scratch, needs: &str) -> Result<Pipeline, String> {
    let mirrors = s.sample_mirrors();
    let text = format!(
        "name: ext\nsource: {{kind: swe-care, path: {}}}\ndefaults:\n  repos: {{url: '{}/{{repo}}.git'}}\nstages:\n  - id: context\n    kind: comment_context\n  - id: other\n    kind: noop\n    scope: comment\n  - id: lines\n    kind: line_count\n    needs: {needs}\n",
        root().join("sample/swe-care.jsonl").display(),
        mirrors.display()
    );
    let file = s.write("ext.yaml", &text);
    let spec = PipelineSpec::parse(&file, &text).map_err(|e| e.to_string())?;
    let plugins = Extended(Curation(Context::from_spec(&file, &text, &spec).map_err(|e| e.to_string())?));
    Pipeline::from_spec(&file, &text, spec, &plugins).map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_stage_added_outside_the_crate_reads_a_typed_upstream_output() {
    let s = Scratch::new();
    let pipeline = load(&s, "context").expect("the extended pipeline loads");
    let data = Dataset::new(pipeline.source.load().unwrap().items, None);
    let flow = Flow::new(&pipeline, &data);
    let store = Store::open(&s.path("state")).unwrap();
    let summary = scheduler::run(&flow, &store, &HashMap::new(), &Limits::machine_defaults(), &mut Silent)
        .await
        .unwrap();
    assert_eq!(summary.errored, 0);

    let (context, lines) = (0, 2);
    let (mut counted, mut one_line) = (0, 0);
    for x in flow.tasks(lines) {
        match (&summary.states[context][x], &summary.states[lines][x]) {
            (TaskState::Kept { output: c, .. }, TaskState::Kept { output, .. }) => {
                let span = c["end_line"].as_u64().unwrap() - c["start_line"].as_u64().unwrap() + 1;
                assert_eq!(output["lines"], span, "{}", data.items[x].id);
                counted += 1;
            }
            (TaskState::Kept { .. }, TaskState::Rejected { reason, .. }) => {
                assert_eq!(reason, "a one-line comment");
                one_line += 1;
            }
            (TaskState::Rejected { .. }, TaskState::Skipped { .. }) => {}
            (c, l) => panic!("{}: context {c:?}, lines {l:?}", data.items[x].id),
        }
    }
    assert!(counted > 0 && one_line > 0, "{counted} counted, {one_line} one-line");
}

#[test]
fn a_missing_needs_is_refused_at_load_naming_the_stage_that_provides_it() {
    let s = Scratch::new();
    let err = load(&s, "other").err().expect("refused");
    assert!(
        err.ends_with(
            ":13:5: `stages[2].needs`: stage `lines` (line_count) reads the `context` output of a stage it needs, and none of its `needs` provides it; add `context` to its `needs`"
        ),
        "{err}"
    );
}
