//! What the stages, sources and agents of one pipeline share: curation's `defaults` beyond
//! concurrency (the cache, where repositories come from, the model) and what is built from them.
//! [`crate::curation`] plugs the kinds that use it into the engine.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;

use crate::engine::errors::{ConfigError, SpecError};
use crate::engine::pipeline::pipeline_dir;
use crate::engine::spec::{PipelineSpec, parse_config};
use crate::exec::hosts::{DockerSpec, Hosts, host_specs, registry, registry_login};
use crate::llm::LlmSpec;
use crate::llm::prompt::{Template, TextSpec, Texts};
use crate::repo::Mirrors;

/// `defaults:` keys that curation owns.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    /// The cache directory (repository mirrors, recorded model answers), relative to the pipeline
    /// file; default `cache` beside it.
    cache: Option<PathBuf>,
    #[serde(default)]
    repos: Repos,
    /// Model settings for every LLM stage; a stage's own `llm:` overrides them field by field.
    #[serde(default)]
    llm: LlmSpec,
    /// The Docker hosts that build images and run containers.
    #[serde(default)]
    docker: DockerSpec,
}

/// Where repositories come from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Repos {
    /// Clone URL template: `{repo}` is `owner/name`, `{owner}` and `{name}` its parts. A relative
    /// path is relative to the pipeline file, so a directory of local mirrors works offline.
    #[serde(default = "default_repo_url")]
    url: String,
}

fn default_repo_url() -> String {
    "https://github.com/{repo}.git".into()
}

impl Default for Repos {
    fn default() -> Repos {
        Repos { url: default_repo_url() }
    }
}

/// What every stage and source of one pipeline shares.
pub struct Context {
    /// The pipeline file's directory: relative paths in config are relative to it.
    pub dir: PathBuf,
    /// The cache directory (`cache/llm` holds recorded model answers).
    pub cache: PathBuf,
    /// The pipeline's repository mirrors.
    pub mirrors: Arc<Mirrors>,
    /// The pipeline's `defaults.llm`; a stage's own `llm:` goes on top.
    pub llm: LlmSpec,
    /// The Docker hosts every stage shares (connected on first use).
    pub docker: Arc<Hosts>,
}

impl Context {
    /// Reads curation's `defaults` of a parsed pipeline (`text` is what it was parsed from, for
    /// error positions). A program that adds its own kinds wraps this context in a `Plugins` of
    /// its own that falls back to [`crate::curation::Curation`].
    pub fn from_spec(file: &Path, text: &str, spec: &PipelineSpec) -> Result<Context, SpecError> {
        let defaults: Defaults = parse_config(&spec.defaults.other).map_err(|e| {
            let key = e.key.map_or("defaults".into(), |k| format!("defaults.{k}"));
            SpecError::at(file, text, key, e.message)
        })?;
        let dir = pipeline_dir(file);
        let cache = dir.join(defaults.cache.unwrap_or_else(|| PathBuf::from("cache")));
        // CURATE_REPOS_URL points a pipeline at other mirrors (a directory of local ones, offline)
        // without editing it; where repositories come from changes no result.
        let url = std::env::var("CURATE_REPOS_URL").ok().filter(|u| !u.is_empty());
        let mirrors = Arc::new(Mirrors::new(url.as_deref().unwrap_or(&defaults.repos.url), &dir, &cache));
        let hosts = host_specs(&defaults.docker, &dir)
            .map_err(|e| SpecError::at(file, text, "defaults.docker".into(), e.to_string()))?;
        let login = registry_login()
            .map_err(|e| SpecError::at(file, text, "defaults.docker".into(), e.to_string()))?;
        let docker = Arc::new(Hosts::new(hosts, registry(&defaults.docker)).with_login(login));
        Ok(Context { dir, cache, mirrors, llm: defaults.llm, docker })
    }

    /// What stage `id`'s build function is given.
    pub fn for_stage<'a>(&'a self, id: &'a str) -> StageContext<'a> {
        StageContext {
            dir: &self.dir,
            id,
            mirrors: &self.mirrors,
            llm: &self.llm,
            cache: &self.cache,
            docker: &self.docker,
        }
    }
}

/// What a stage's (or an agent's) build function gets besides its config.
pub struct StageContext<'a> {
    /// The pipeline file's directory: relative paths in config are relative to it.
    pub dir: &'a Path,
    pub id: &'a str,
    /// The pipeline's repository mirrors, shared by every stage.
    pub mirrors: &'a Arc<Mirrors>,
    /// The pipeline's `defaults.llm`; a stage's own `llm:` goes on top.
    pub llm: &'a LlmSpec,
    /// The cache directory (`cache/llm` holds recorded model answers).
    pub cache: &'a Path,
    /// The pipeline's Docker hosts, shared by every stage.
    pub docker: &'a Arc<Hosts>,
}

impl StageContext<'_> {
    /// The prompt template at `path` (relative to the pipeline file), checked to use only the
    /// `known` placeholders; errors name the config `key`.
    pub fn template(&self, key: &str, path: &Path, known: &[&str]) -> Result<Template, ConfigError> {
        Self::template_of(key, &self.prompt_text(key, path)?, known)
    }

    /// [`StageContext::template`] of a prompt file's `text`, already read.
    pub fn template_of(key: &str, text: &str, known: &[&str]) -> Result<Template, ConfigError> {
        Template::parse(text, known).map_err(|e| ConfigError::new(key, e.to_string()))
    }

    /// The `[text KEY]` parts of the prompt file at `path` (config key `key`), each of `wanted`
    /// there with only its placeholders.
    pub fn texts(&self, key: &str, path: &Path, wanted: &[TextSpec]) -> Result<Texts, ConfigError> {
        self.texts_of(key, path, &self.prompt_text(key, path)?, wanted)
    }

    /// [`StageContext::texts`] of the prompt file at `path`, whose `text` is already read.
    pub fn texts_of(
        &self,
        key: &str,
        path: &Path,
        text: &str,
        wanted: &[TextSpec],
    ) -> Result<Texts, ConfigError> {
        let full = self.dir.join(path);
        Texts::parse(text, wanted).map_err(|e| ConfigError::new(key, format!("{}: {e}", full.display())))
    }

    /// The text of the prompt file at `path` (config key `key`): a regular file of bounded size.
    pub fn prompt_text(&self, key: &str, path: &Path) -> Result<String, ConfigError> {
        let full = self.dir.join(path);
        crate::engine::files::read_regular_text(&full, crate::engine::files::MAX_CONFIG_BYTES)
            .map_err(|e| ConfigError::new(key, format!("cannot read {}: {e}", full.display())))
    }
}
