//! The engine's one extension point: the application names its source and stage kinds and builds
//! them from their config. The engine parses, checks and runs; it never knows what a kind does.

use serde_yaml::Mapping;

use crate::errors::ConfigError;
use crate::source::Source;
use crate::stage::StageDef;

pub trait Plugins {
    /// Every source kind, by the name used in `source: {kind: ...}`.
    fn source_kinds(&self) -> Vec<&'static str>;

    /// Builds a source of `kind` from its config; `None` when no such kind exists.
    fn source(&self, kind: &str, config: &Mapping) -> Option<Result<Box<dyn Source>, ConfigError>>;

    /// Every stage kind, by the name used in `kind:`.
    fn stage_kinds(&self) -> Vec<&'static str>;

    /// Builds stage `id` of `kind` from its config; `None` when no such kind exists.
    fn stage(&self, id: &str, kind: &str, config: &Mapping) -> Option<Result<StageDef, ConfigError>>;
}
