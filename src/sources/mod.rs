//! PR sources: each turns some dataset format into items. Adding a format means one new file here and
//! one line in [`REGISTRY`].

use std::path::Path;
use std::sync::Arc;

use serde_yaml::Mapping;

pub use crate::engine::source::{Ingest, Source};
use crate::errors::ConfigError;
use crate::repo::Mirrors;

pub mod benchmark;
pub mod github;
pub mod jsonl;
pub mod lines;
pub mod swe_care;
pub mod swe_prbench;

type BuildFn = fn(&SourceContext, &Mapping) -> Result<Box<dyn Source>, ConfigError>;

/// Every source kind, by the name used in `source: {kind: ...}`.
const REGISTRY: &[(&str, BuildFn)] = &[
    ("jsonl", jsonl::build),
    ("swe-care", swe_care::build),
    ("swe-prbench", swe_prbench::build),
    ("benchmark", benchmark::build),
    ("github", github::build),
];

pub fn kinds() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|(name, _)| *name)
}

pub fn build(
    kind: &str,
    ctx: &SourceContext,
    config: &Mapping,
) -> Option<Result<Box<dyn Source>, ConfigError>> {
    REGISTRY.iter().find(|(name, _)| *name == kind).map(|(_, build)| build(ctx, config))
}

pub struct SourceContext<'a> {
    /// The pipeline file's directory: source paths are relative to it.
    pub dir: &'a Path,
    /// The pipeline's cache directory (a collecting source stores its answers there).
    pub cache: &'a Path,
    /// The pipeline's repository mirrors.
    pub mirrors: &'a Arc<Mirrors>,
}
