//! Kinds of resource a task occupies while it runs, and how many tasks of each may run at once.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    /// Requests to a model server.
    Llm,
    /// Image builds and container runs.
    Docker,
    /// Local processes and in-process work.
    Cpu,
}

impl Resource {
    pub const ALL: [Resource; 3] = [Resource::Llm, Resource::Docker, Resource::Cpu];

    pub fn name(self) -> &'static str {
        match self {
            Resource::Llm => "llm",
            Resource::Docker => "docker",
            Resource::Cpu => "cpu",
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Resource {
    type Err = ResourceError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Resource::ALL.into_iter().find(|r| r.name() == s).ok_or_else(|| ResourceError::Unknown(s.to_string()))
    }
}

/// A resource name that is none of them, or a `--concurrency` value that is not `RESOURCE=N` with N at
/// least 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    #[error("unknown resource `{0}`; expected one of llm, docker, cpu")]
    Unknown(String),
    #[error("expected RESOURCE=N, got `{0}`")]
    NotAnOverride(String),
    #[error("`{0}` is not a whole number")]
    NotANumber(String),
    #[error("the {0} limit must be at least 1")]
    Zero(Resource),
}

/// Concurrency limits per resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits(BTreeMap<Resource, usize>);

impl Limits {
    /// Defaults for this machine: a few model requests, two Docker jobs, one local job per core.
    pub fn machine_defaults() -> Limits {
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        Limits(BTreeMap::from([(Resource::Llm, 4), (Resource::Docker, 2), (Resource::Cpu, cores)]))
    }

    /// Later values win: defaults, then the pipeline, then the command line.
    pub fn with(mut self, overrides: &BTreeMap<Resource, usize>) -> Limits {
        for (r, n) in overrides {
            self.0.insert(*r, *n);
        }
        self
    }

    pub fn get(&self, r: Resource) -> usize {
        self.0.get(&r).copied().unwrap_or(1).max(1)
    }
}

/// Parses `cpu=4` as given to `--concurrency`.
pub fn parse_override(s: &str) -> Result<(Resource, usize), ResourceError> {
    let (name, n) = s.split_once('=').ok_or_else(|| ResourceError::NotAnOverride(s.to_string()))?;
    let resource: Resource = name.trim().parse()?;
    let n: usize = n.trim().parse().map_err(|_| ResourceError::NotANumber(n.to_string()))?;
    if n == 0 {
        return Err(ResourceError::Zero(resource));
    }
    Ok((resource, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_apply_in_order() {
        let limits = Limits::machine_defaults()
            .with(&BTreeMap::from([(Resource::Llm, 8)]))
            .with(&BTreeMap::from([(Resource::Llm, 2), (Resource::Cpu, 16)]));
        assert_eq!(limits.get(Resource::Llm), 2);
        assert_eq!(limits.get(Resource::Cpu), 16);
        assert_eq!(limits.get(Resource::Docker), 2);
    }

    #[test]
    fn parses_command_line_overrides() {
        assert_eq!(parse_override("docker=3"), Ok((Resource::Docker, 3)));
        assert!(parse_override("gpu=1").unwrap_err().to_string().contains("unknown resource"));
        assert!(parse_override("cpu=0").unwrap_err().to_string().contains("at least 1"));
        assert!(parse_override("cpu").is_err());
    }
}
