//! Curation's source and stage kinds, plugged into the engine: the one place that knows both the
//! registries and the engine's [`Plugins`] trait, and loads a pipeline with them.

use std::path::Path;

use serde_yaml::Mapping;

use crate::context::Context;
use crate::engine::errors::{ConfigError, SpecError};
use crate::engine::pipeline::Pipeline;
use crate::engine::plugins::Plugins;
use crate::engine::source::Source;
use crate::engine::spec::PipelineSpec;
use crate::engine::stage::StageDef;
use crate::{sources, stages};

/// Curation's kinds, built with one pipeline's [`Context`].
pub struct Curation(pub Context);

/// A curation pipeline, checked, and the context its stages were built with.
pub fn load(file: &Path) -> Result<(Pipeline, Context), SpecError> {
    let text = Pipeline::read(file)?;
    let spec = PipelineSpec::parse(file, &text)?;
    let curation = Curation(Context::from_spec(file, &text, &spec)?);
    let pipeline = Pipeline::from_spec(file, &text, spec, &curation)?;
    Ok((pipeline, curation.0))
}

/// A pipeline file read and checked as a spec, with its context, without building its stages: for
/// commands that work on one stage's config (`curate gold` calibrates a stage that cannot be built
/// until it is calibrated).
pub fn load_spec(file: &Path) -> Result<(PipelineSpec, Context), SpecError> {
    let text = Pipeline::read(file)?;
    let spec = PipelineSpec::parse(file, &text)?;
    let context = Context::from_spec(file, &text, &spec)?;
    Ok((spec, context))
}

impl Plugins for Curation {
    fn source_kinds(&self) -> Vec<&'static str> {
        sources::kinds().collect()
    }

    fn source(&self, kind: &str, config: &Mapping) -> Option<Result<Box<dyn Source>, ConfigError>> {
        sources::build(
            kind,
            &sources::SourceContext { dir: &self.0.dir, cache: &self.0.cache, mirrors: &self.0.mirrors },
            config,
        )
    }

    fn stage_kinds(&self) -> Vec<&'static str> {
        stages::kinds().collect()
    }

    fn stage(&self, id: &str, kind: &str, config: &Mapping) -> Option<Result<StageDef, ConfigError>> {
        stages::build(kind, &self.0.for_stage(id), config)
    }
}
