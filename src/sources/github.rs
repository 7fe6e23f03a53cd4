//! `github`: merged PRs with inline review comments, collected from GitHub's GraphQL API for the
//! repositories and window of the pipeline (see [`crate::github`]). What it yields is what the
//! `swe-care` source yields for the same PRs: the collection is written as SWE-CARE records and
//! read by that source's parser. Every answer is stored under `<cache>/github`, so a second load
//! asks GitHub nothing and a stopped one resumes.
//!
//! ```yaml
//! source:
//!   kind: github
//!   repos: [pallets/click]
//!   since: 2026-06-01        # merged on or after (UTC)
//!   until: 2026-08-31        # on or before; today when left out
//!   min_comments: 2          # review threads opened by a person
//!   max_changed_lines: 1000  # added + deleted
//!   languages: [Python]      # the repository's primary language
//! ```
//!
//! Tokens come from `GITHUB_TOKEN` (several, comma separated); the endpoint is
//! `https://api.github.com/graphql` unless `api:` or `CURATE_GITHUB_API` says another.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Deserialize;
use serde_yaml::Mapping;

use super::{Ingest, Source, SourceContext};
use crate::engine::errors::Problem;
use crate::engine::spec::parse_config;
use crate::errors::{ConfigError, SourceError};
use crate::github::{self, Client, Date, Filters, GithubError, Plan, Settings};
use crate::repo::Mirrors;

const DEFAULT_API: &str = "https://api.github.com/graphql";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    repos: Vec<String>,
    since: String,
    #[serde(default)]
    until: Option<String>,
    #[serde(default = "default_min_comments")]
    min_comments: usize,
    #[serde(default)]
    max_changed_lines: Option<u64>,
    #[serde(default)]
    languages: Vec<String>,
    #[serde(default = "yes")]
    skip_bots: bool,
    /// The GraphQL endpoint (an Enterprise server's `https://HOST/api/graphql`).
    #[serde(default)]
    api: Option<String>,
    #[serde(default = "default_page_size")]
    page_size: u32,
    /// The first wait before a request that failed (5xx, timeout) is sent again; it doubles.
    #[serde(default = "default_backoff_ms")]
    backoff_ms: u64,
}

fn default_min_comments() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn default_page_size() -> u32 {
    20
}
fn default_backoff_ms() -> u64 {
    1000
}

pub fn build(ctx: &SourceContext, config: &Mapping) -> Result<Box<dyn Source>, ConfigError> {
    let config: Config = parse_config(config)?;
    if config.repos.is_empty() {
        return Err(ConfigError::new("repos", "names no repository; give `owner/name` entries"));
    }
    for (i, repo) in config.repos.iter().enumerate() {
        if ctx.mirrors.path_for(repo).is_err() {
            return Err(ConfigError::new(
                format!("repos[{i}]"),
                format!("`{repo}` is not of the form owner/name"),
            ));
        }
    }
    let date = |key: &str, text: &str| {
        Date::parse(text)
            .ok_or_else(|| ConfigError::new(key, format!("`{text}` is not a date of the form YYYY-MM-DD")))
    };
    let since = date("since", &config.since)?;
    let until = config.until.as_deref().map(|u| date("until", u)).transpose()?;
    if until.is_some_and(|u| u < since) {
        return Err(ConfigError::new("until", "is before `since`"));
    }
    if !(1..=100).contains(&config.page_size) {
        return Err(ConfigError::new("page_size", "must be from 1 to 100 (GitHub's largest page)"));
    }
    let api = config
        .api
        .clone()
        .or_else(|| std::env::var("CURATE_GITHUB_API").ok().filter(|a| !a.is_empty()))
        .unwrap_or_else(|| DEFAULT_API.to_string());
    let filters = Filters {
        min_comments: config.min_comments,
        max_changed_lines: config.max_changed_lines,
        languages: config.languages.clone(),
        skip_bots: config.skip_bots,
    };
    Ok(Box::new(GithubSource {
        repos: config.repos,
        since,
        until,
        filters,
        page_size: config.page_size,
        api,
        backoff: Duration::from_millis(config.backoff_ms),
        cache: ctx.cache.join("github"),
        mirrors: ctx.mirrors.clone(),
    }))
}

struct GithubSource {
    repos: Vec<String>,
    since: Date,
    /// Today when the pipeline leaves it out, read when the source is loaded.
    until: Option<Date>,
    filters: Filters,
    page_size: u32,
    api: String,
    backoff: Duration,
    cache: PathBuf,
    mirrors: Arc<Mirrors>,
}

impl Source for GithubSource {
    fn load(&self) -> Result<Ingest, SourceError> {
        let failed = |error: GithubError| SourceError::Collect { kind: "github", error: Box::new(error) };
        // The collection runs on a thread and runtime of its own: a source is loaded from
        // synchronous code that may already be inside a runtime.
        let collected = std::thread::scope(|s| s.spawn(|| self.collect()).join());
        let (lines, skipped) = match collected {
            Ok(result) => result.map_err(failed)?,
            Err(_) => {
                return Err(failed(GithubError::Body {
                    api: self.api.clone(),
                    error: "the collection panicked".into(),
                }));
            }
        };
        let label = Path::new("github");
        let mut ingest = super::swe_care::parse(label, lines.as_bytes());
        ingest.problems.extend(skipped.into_iter().map(|s| Problem {
            file: label.to_path_buf(),
            line: 0,
            field: None,
            message: format!("{}: {}", s.instance, s.why),
        }));
        Ok(ingest)
    }
}

impl GithubSource {
    /// The collection as SWE-CARE JSONL, and what had to be skipped.
    fn collect(&self) -> Result<(String, Vec<github::Skipped>), GithubError> {
        let tokens: Vec<String> =
            std::env::var("GITHUB_TOKEN").unwrap_or_default().split(',').map(str::to_string).collect();
        let bar = Bar::new();
        let notify_bar = bar.0.clone();
        let settings = Settings {
            api: self.api.clone(),
            tokens,
            cache: self.cache.clone(),
            backoff: self.backoff,
            tries: 5,
            timeout: Duration::from_secs(60),
        };
        let mut client =
            Client::new(settings, Arc::new(move |text| notify_bar.suspend(|| eprintln!("{text}"))))?;
        let plan = Plan {
            repos: self.repos.clone(),
            since: self.since,
            until: self.until.unwrap_or_else(Date::today),
            filters: self.filters.clone(),
            page_size: self.page_size,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| GithubError::Network { api: self.api.clone(), tries: 0, error: e.to_string() })?;
        let prs = runtime.block_on(github::collect(&mut client, &plan, &bar))?;
        bar.0.finish_and_clear();
        let (instances, skipped) = github::instances(&prs, &self.mirrors)?;
        let counts = client.counts;
        eprintln!(
            "github: {} merged PR(s) kept, {} instance(s); {} request(s) to {}, {} answered from {}",
            prs.len(),
            instances.len(),
            counts.requested,
            self.api,
            counts.replayed,
            self.cache.display()
        );
        let lines: String = instances.iter().map(|i| format!("{i}\n")).collect();
        Ok((lines, skipped))
    }
}

/// The collection's spinner on stderr (hidden when stderr is not a terminal); notices go above it.
struct Bar(ProgressBar);

impl Bar {
    fn new() -> Bar {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Bar(bar)
    }
}

impl github::Progress for Bar {
    fn page(&self, repo: &str, month: &str, page: u32, kept: usize) {
        self.0.set_message(format!("github: {repo}, merged {month}, page {page}; {kept} PR(s) kept"));
    }

    fn notice(&self, text: String) {
        self.0.suspend(|| eprintln!("{text}"));
    }
}
