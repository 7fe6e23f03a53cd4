//! Several Docker hosts behind one executor. Images are built on the first host (the home); a
//! container run goes to the host with a free run slot that already holds its image, else to the
//! least busy one, which first gets the image from a host that has it: through the registry the
//! pipeline names (pushed once, pulled by each host that needs it), or else streamed from daemon to
//! daemon (export and import through the API). A host that stops answering is marked down for the rest
//! of the run, and a run it cut off starts again on another host; nothing the run has finished
//! depends on where it ran, so the results are the same on one host or many.
//!
//! Builds go to the first host, or, when a registry keeps what they make, to the host a repository's
//! builds went to before (its PRs share their dependency layer) or the one with the most free build
//! slots; a build whose host is lost starts again on another.
//!
//! The hosts come from `defaults.docker.hosts` in the pipeline, or `CURATE_DOCKER_HOSTS`
//! (`URL[=RUNS],…`), or else `DOCKER_HOST` / the local socket as the one host; the registry from
//! `defaults.docker.registry` or `CURATE_DOCKER_REGISTRY` (`host:port`).
//!
//! This file holds [`Hosts`], everything the rest of the program calls on it, and its
//! [`Executor`]; the parts behind them, one concept a file:
//! - `spec.rs`: which hosts and registry, from the pipeline and the environment, and the login;
//! - `placement.rs`: each host's state, and which host a run or a build goes to;
//! - `transfer.rs`: bringing an image to a host that lacks it;
//! - `failover.rs`: what happens when a host stops answering;
//! - `counts.rs`: what each host did, for the end of `curate run` and `curate status`.

mod counts;
mod failover;
mod placement;
mod spec;
mod transfer;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use bollard::Docker;
use tokio::sync::Notify;

use super::docker::ExecError;
pub use super::docker::TlsFiles;
use super::sandbox::{self, RunResult, RunSpec};
pub use counts::{COUNTS_FILE, HostCounts, describe};
use placement::{Host, Slot};
pub use spec::{DockerSpec, HostSpec, host_specs, registry, registry_login};

/// Runs a container; what test runs are given, so one host or many (or, later, another kind of
/// executor) serve alike.
pub trait Executor: Send + Sync {
    fn run(&self, spec: &RunSpec) -> impl Future<Output = Result<RunResult, ExecError>> + Send;
}

impl Executor for Docker {
    async fn run(&self, spec: &RunSpec) -> Result<RunResult, ExecError> {
        sandbox::run(self, spec).await
    }
}

/// The Docker hosts of one pipeline, shared by its stages.
pub struct Hosts {
    hosts: Vec<Host>,
    /// The registry's login, if it asks for one.
    login: Option<bollard::auth::DockerCredentials>,
    /// The host each repository's builds went to in this run.
    repos: Mutex<HashMap<String, usize>>,
    registry: Option<String>,
    /// Images pushed to the registry in this run.
    pushed: tokio::sync::Mutex<HashSet<String>>,
    /// Woken when a run slot frees or a host goes down.
    changed: Notify,
    /// Where what happens to the hosts is told (the run's reporter); standard error until set.
    notice: Mutex<Option<crate::engine::events::Notice>>,
}

/// A host chosen for a build, and one of its build slots, held until dropped.
pub struct BuildPlace<'a> {
    pub index: usize,
    pub docker: Docker,
    _slot: Slot<'a>,
}

impl Hosts {
    pub fn new(specs: Vec<HostSpec>, registry: Option<String>) -> Hosts {
        Hosts {
            hosts: specs.into_iter().map(Host::new).collect(),
            login: None,
            repos: Mutex::new(HashMap::new()),
            registry,
            pushed: tokio::sync::Mutex::new(HashSet::new()),
            changed: Notify::new(),
            notice: Mutex::new(None),
        }
    }

    /// What happens to the hosts from now on is told through `notice` (the run's reporter).
    pub fn tell_through(&self, notice: crate::engine::events::Notice) {
        if let Ok(mut slot) = self.notice.lock() {
            *slot = Some(notice);
        }
    }

    /// One line about the hosts, for the person at the terminal.
    fn tell(&self, line: &str) {
        match self.notice.lock().ok().and_then(|n| n.clone()) {
            Some(notice) => notice(line),
            None => eprintln!("{line}"),
        }
    }

    /// The same hosts, logging in to the registry with `login`.
    pub fn with_login(mut self, login: Option<bollard::auth::DockerCredentials>) -> Hosts {
        self.login = login;
        self
    }

    /// The one host of `DOCKER_HOST` or the local socket.
    pub fn local() -> Hosts {
        Hosts::new(host_specs(&DockerSpec::default(), Path::new(".")).unwrap_or_default(), None)
    }

    /// The first host, which builds images: connected on first use.
    pub async fn home(&self) -> Result<Docker, ExecError> {
        let home =
            self.hosts.first().ok_or_else(|| ExecError::Other("no Docker host is configured".into()))?;
        home.docker().await
    }

    /// Connects to every host: the home must answer; another that does not is marked down, and
    /// named in the returned warnings.
    pub async fn connect_all(&self) -> Result<Vec<String>, ExecError> {
        self.home().await?;
        let mut warnings = Vec::new();
        for (i, host) in self.hosts.iter().enumerate().skip(1) {
            if let Err(e) = host.docker().await {
                self.mark_down(i, &e.to_string());
                warnings.push(format!("Docker host {} is left out: {e}", host.url));
            }
        }
        Ok(warnings)
    }

    /// Removes the containers a killed run of `state_dir` left on every host that answers.
    pub async fn sweep(&self, state_dir: &Path) -> Result<Vec<String>, ExecError> {
        let mut removed = Vec::new();
        for (_, host) in self.up() {
            let Ok(docker) = host.docker().await else { continue };
            removed.extend(sandbox::sweep(&docker, state_dir).await?);
        }
        Ok(removed)
    }

    pub fn counts(&self) -> Vec<HostCounts> {
        self.hosts.iter().filter_map(|h| h.counts.lock().ok().map(|c| c.clone())).collect()
    }

    /// Brings `image` to host `i` from wherever it is; `false` when no host (nor the registry) has it.
    pub async fn bring(&self, i: usize, docker: &Docker, image: &str) -> Result<bool, ExecError> {
        match self.ensure_image(i, docker, image).await {
            Ok(()) => Ok(true),
            Err(ExecError::MissingImage(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Notes that host `i` built `image`; with a registry, pushes it there at once, so it outlives
    /// the host.
    pub async fn built(&self, i: usize, docker: &Docker, image: &str) -> Result<(), ExecError> {
        self.hosts[i].note_image(image);
        self.hosts[i].count(|c| c.builds += 1);
        match &self.registry {
            Some(registry) => self.push(docker, image, registry).await,
            None => Ok(()),
        }
    }

    /// Where a build for repository `repo` goes, holding one of that host's build slots. Without a
    /// registry, always the first host (an image built elsewhere would be lost with its host).
    /// With one: the host this run gave the repository before, while it is up, so its PRs share
    /// their dependency layer; else the up host with the most free build slots.
    pub async fn build_place(&self, repo: &str) -> Result<BuildPlace<'_>, ExecError> {
        let (index, slot) = self.build_slot(repo, false).await?;
        let docker = self.hosts[index].docker().await?;
        Ok(BuildPlace { index, docker, _slot: slot })
    }

    /// A build slot on the first host, whatever the registry: where a build that failed elsewhere
    /// is tried again, so that no result depends on another host's set-up (its network, its
    /// mirrors) rather than on the project.
    /// The repository's later builds go there too.
    pub async fn home_build_place(&self, repo: &str) -> Result<BuildPlace<'_>, ExecError> {
        let (index, slot) = self.build_slot(repo, true).await?;
        let docker = self.hosts[index].docker().await?;
        Ok(BuildPlace { index, docker, _slot: slot })
    }

    /// After a failure on host `i`: whether the host is lost (it does not answer, and another is
    /// up), in which case it is marked down and the work should go elsewhere.
    pub async fn lost(&self, i: usize, why: &str) -> bool {
        let others_up = self.up().any(|(j, _)| j != i);
        if !others_up || self.hosts[i].answers().await {
            return false;
        }
        self.hosts[i].count(|c| c.lost += 1);
        self.mark_down(i, why);
        true
    }
}

impl Executor for Hosts {
    /// Runs `spec` on a placed host. A failure on a host that then does not answer a ping, while
    /// another host is up, marks it down and starts the run again elsewhere; any other failure is
    /// the run's.
    async fn run(&self, spec: &RunSpec) -> Result<RunResult, ExecError> {
        loop {
            let (i, slot) = self.place(&spec.image).await?;
            let host = &self.hosts[i];
            let outcome = async {
                let docker = host.docker().await?;
                self.ensure_image(i, &docker, &spec.image).await?;
                sandbox::run(&docker, spec).await
            }
            .await;
            drop(slot);
            let error = match outcome {
                Ok(result) => {
                    host.count(|c| c.runs += 1);
                    return Ok(result);
                }
                Err(e) => e,
            };
            if !self.lost(i, &error.to_string()).await {
                return Err(error);
            }
        }
    }
}

/// Two hosts of `runs` run slots and one build slot each, without a registry: for the tests of
/// placement and failover.
#[cfg(test)]
fn two(runs: usize) -> Hosts {
    Hosts::new(
        vec![
            HostSpec { url: "unix:///a.sock".into(), runs, builds: 1, tls: None },
            HostSpec { url: "unix:///b.sock".into(), runs, builds: 1, tls: None },
        ],
        None,
    )
}
