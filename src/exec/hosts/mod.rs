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

mod counts;
mod spec;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bollard::Docker;
use futures_util::StreamExt;
use tokio::sync::{Notify, OnceCell, OwnedSemaphorePermit, Semaphore};

pub use super::docker::TlsFiles;
use super::docker::{ExecError, image_exists};
use super::sandbox::{self, RunResult, RunSpec};
pub use counts::{COUNTS_FILE, HostCounts, describe};
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

struct Host {
    url: String,
    builds: Arc<Semaphore>,
    tls: Option<TlsFiles>,
    docker: OnceCell<Docker>,
    runs: Arc<Semaphore>,
    down: AtomicBool,
    /// Images known to be here.
    images: Mutex<HashSet<String>>,
    /// One transfer of an image to this host at a time; later askers wait for it.
    transfers: tokio::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    counts: Mutex<HostCounts>,
}

impl Host {
    async fn docker(&self) -> Result<Docker, ExecError> {
        match &self.tls {
            None => self.docker.get_or_try_init(|| super::docker::connect_to(&self.url)).await.cloned(),
            Some(tls) => {
                self.docker.get_or_try_init(|| super::docker::connect_tls(&self.url, tls)).await.cloned()
            }
        }
    }

    fn holds(&self, image: &str) -> bool {
        self.images.lock().is_ok_and(|i| i.contains(image))
    }

    fn note_image(&self, image: &str) {
        if let Ok(mut i) = self.images.lock() {
            i.insert(image.to_string());
        }
    }

    /// `image` is here now, brought from elsewhere in the time since `t0`.
    fn brought(&self, image: &str, t0: Instant) {
        self.note_image(image);
        self.count(|c| {
            c.transfers += 1;
            c.transfer_secs += t0.elapsed().as_secs_f64();
        });
    }

    fn count(&self, f: impl FnOnce(&mut HostCounts)) {
        if let Ok(mut c) = self.counts.lock() {
            f(&mut c);
        }
    }

    /// Whether the daemon answers a ping within a few seconds.
    async fn answers(&self) -> bool {
        let Some(docker) = self.docker.get() else { return false };
        matches!(tokio::time::timeout(Duration::from_secs(5), docker.ping()).await, Ok(Ok(_)))
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
}

/// A host chosen for a build, and one of its build slots, held until dropped.
pub struct BuildPlace<'a> {
    pub index: usize,
    pub docker: Docker,
    _slot: Slot<'a>,
}

/// A run slot on a host; the waiting runs are told when it frees.
struct Slot<'a> {
    _permit: OwnedSemaphorePermit,
    hosts: &'a Hosts,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.hosts.changed.notify_waiters();
    }
}

impl Hosts {
    pub fn new(specs: Vec<HostSpec>, registry: Option<String>) -> Hosts {
        let hosts = specs
            .into_iter()
            .map(|s| Host {
                counts: Mutex::new(HostCounts { url: s.url.clone(), slots: s.runs, ..HostCounts::default() }),
                url: s.url,
                builds: Arc::new(Semaphore::new(s.builds.clamp(1, Semaphore::MAX_PERMITS))),
                tls: s.tls,
                docker: OnceCell::new(),
                runs: Arc::new(Semaphore::new(s.runs.min(Semaphore::MAX_PERMITS))),
                down: AtomicBool::new(false),
                images: Mutex::new(HashSet::new()),
                transfers: tokio::sync::Mutex::new(HashMap::new()),
            })
            .collect();
        Hosts {
            hosts,
            login: None,
            repos: Mutex::new(HashMap::new()),
            registry,
            pushed: tokio::sync::Mutex::new(HashSet::new()),
            changed: Notify::new(),
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
        for host in self.hosts.iter().filter(|h| !h.down.load(Ordering::SeqCst)) {
            let Ok(docker) = host.docker().await else { continue };
            removed.extend(sandbox::sweep(&docker, state_dir).await?);
        }
        Ok(removed)
    }

    pub fn counts(&self) -> Vec<HostCounts> {
        self.hosts.iter().filter_map(|h| h.counts.lock().ok().map(|c| c.clone())).collect()
    }

    fn up(&self) -> impl Iterator<Item = (usize, &Host)> {
        self.hosts.iter().enumerate().filter(|(_, h)| !h.down.load(Ordering::SeqCst))
    }

    fn mark_down(&self, i: usize, why: &str) {
        let host = &self.hosts[i];
        if !host.down.swap(true, Ordering::SeqCst) {
            eprintln!("Docker host {} stopped answering ({why}); its runs go to the other hosts", host.url);
            host.count(|c| c.down = Some(why.to_string()));
        }
        self.changed.notify_waiters();
    }

    /// A run slot for `image`: on an up host that holds it if one has a free slot, else on the up
    /// host with the most free slots; waits while every slot is taken.
    async fn place(&self, image: &str) -> Result<(usize, Slot<'_>), ExecError> {
        loop {
            let changed = self.changed.notified();
            let mut order: Vec<(usize, &Host)> = self.up().collect();
            if order.is_empty() {
                return Err(self.all_down());
            }
            order.sort_by_key(|(i, h)| (!h.holds(image), std::cmp::Reverse(h.runs.available_permits()), *i));
            for (i, host) in order {
                if let Ok(permit) = host.runs.clone().try_acquire_owned() {
                    return Ok((i, Slot { _permit: permit, hosts: self }));
                }
            }
            changed.await;
        }
    }

    /// Makes sure host `i` holds `image`, streaming it from another host that does if needed.
    async fn ensure_image(&self, i: usize, docker: &Docker, image: &str) -> Result<(), ExecError> {
        let host = &self.hosts[i];
        if host.holds(image) {
            return Ok(());
        }
        let lock = host.transfers.lock().await.entry(image.to_string()).or_default().clone();
        let _one_at_a_time = lock.lock().await;
        if host.holds(image) {
            return Ok(());
        }
        if image_exists(docker, image).await? {
            host.note_image(image);
            return Ok(());
        }
        for (j, source) in self.up().filter(|(j, _)| *j != i) {
            let Ok(from) = source.docker().await else { continue };
            if !image_exists(&from, image).await.unwrap_or(false) {
                continue;
            }
            source.note_image(image);
            let t0 = Instant::now();
            let how = match &self.registry {
                Some(registry) => match self.push(&from, image, registry).await {
                    Ok(()) => self.pull(docker, image, registry).await,
                    Err(e) => Err(e),
                },
                None => stream_image(&from, docker, image).await,
            };
            how.map_err(|e| {
                let via = self.registry.as_deref().map_or(String::new(), |r| format!(" through {r}"));
                ExecError::Other(format!(
                    "bringing {image} from {} to {}{via}: {e}",
                    self.hosts[j].url, host.url
                ))
            })?;
            host.brought(image, t0);
            return Ok(());
        }
        // No host that answers has it: one that went down may have pushed it.
        if let Some(registry) = &self.registry
            && self.pushed.lock().await.contains(image)
        {
            let t0 = Instant::now();
            self.pull(docker, image, registry).await?;
            host.brought(image, t0);
            return Ok(());
        }
        Err(ExecError::MissingImage(image.to_string()))
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

    /// The host and build slot of [`Self::build_place`] (of the first host, with `home`).
    async fn build_slot(&self, repo: &str, home: bool) -> Result<(usize, Slot<'_>), ExecError> {
        loop {
            let changed = self.changed.notified();
            let candidates: Vec<usize> = if self.registry.is_none() || home {
                vec![0]
            } else {
                let given = self.repos.lock().ok().and_then(|r| r.get(repo).copied());
                let mut up: Vec<(usize, &Host)> = self.up().collect();
                up.sort_by_key(|(i, h)| {
                    (Some(*i) != given, std::cmp::Reverse(h.builds.available_permits()), *i)
                });
                up.into_iter().map(|(i, _)| i).collect()
            };
            if candidates.is_empty() {
                return Err(self.all_down());
            }
            // The repository waits for its own host while that host is up.
            let first = candidates[0];
            let given = self.repos.lock().ok().and_then(|r| r.get(repo).copied());
            let tries = if given == Some(first) { &candidates[..1] } else { &candidates[..] };
            for &i in tries {
                if let Ok(permit) = self.hosts[i].builds.clone().try_acquire_owned() {
                    if let Ok(mut r) = self.repos.lock() {
                        r.insert(repo.to_string(), i);
                    }
                    return Ok((i, Slot { _permit: permit, hosts: self }));
                }
            }
            changed.await;
        }
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

    fn all_down(&self) -> ExecError {
        ExecError::Unreachable {
            host: self.hosts.iter().map(|h| h.url.as_str()).collect::<Vec<_>>().join(", "),
            error: "every Docker host is down".into(),
        }
    }
}

impl Hosts {
    fn login_for(&self, registry: &str) -> Option<bollard::auth::DockerCredentials> {
        self.login.clone().map(|login| bollard::auth::DockerCredentials {
            serveraddress: Some(registry.to_string()),
            ..login
        })
    }

    /// Pushes `image` from `from` to the registry (tagged with the registry's name), once a run.
    async fn push(&self, from: &Docker, image: &str, registry: &str) -> Result<(), ExecError> {
        let mut pushed = self.pushed.lock().await;
        if pushed.contains(image) {
            return Ok(());
        }
        let remote = format!("{registry}/{image}");
        let (remote_repo, tag) = split_tag(&remote);
        let options =
            bollard::query_parameters::TagImageOptionsBuilder::default().repo(remote_repo).tag(tag).build();
        from.tag_image(image, Some(options)).await?;
        let options = bollard::query_parameters::PushImageOptionsBuilder::default().tag(tag).build();
        let mut pushing = from.push_image(remote_repo, Some(options), self.login_for(registry));
        while let Some(step) = pushing.next().await {
            let step = step.map_err(|e| ExecError::Other(format!("push to {registry}: {e}")))?;
            if let Some(message) = step.error_detail.and_then(|e| e.message) {
                return Err(ExecError::Other(format!("push to {registry}: {message}")));
            }
        }
        pushed.insert(image.to_string());
        Ok(())
    }

    /// Pulls `image` from the registry onto `to` and tags it with its own name.
    async fn pull(&self, to: &Docker, image: &str, registry: &str) -> Result<(), ExecError> {
        let remote = format!("{registry}/{image}");
        let (remote_repo, tag) = split_tag(&remote);
        let options = bollard::query_parameters::CreateImageOptionsBuilder::default()
            .from_image(remote_repo)
            .tag(tag)
            .build();
        let mut pulling = to.create_image(Some(options), None, self.login_for(registry));
        while let Some(step) = pulling.next().await {
            let step = step.map_err(|e| ExecError::Other(format!("pull from {registry}: {e}")))?;
            if let Some(message) = step.error_detail.and_then(|e| e.message) {
                return Err(ExecError::Other(format!("pull from {registry}: {message}")));
            }
        }
        let (repo, tag) = split_tag(image);
        let options =
            bollard::query_parameters::TagImageOptionsBuilder::default().repo(repo).tag(tag).build();
        to.tag_image(&remote, Some(options)).await?;
        Ok(())
    }
}

/// `repo[:tag]` split at the tag's colon (not a registry port's): the tag defaults to `latest`.
fn split_tag(image: &str) -> (&str, &str) {
    let name_start = image.rfind('/').map_or(0, |i| i + 1);
    match image[name_start..].rfind(':') {
        Some(i) => (&image[..name_start + i], &image[name_start + i + 1..]),
        None => (image, "latest"),
    }
}

/// Copies `image` from one daemon to another: its `docker save` tarball fed to `docker load` as it
/// is read, never whole in memory.
async fn stream_image(from: &Docker, to: &Docker, image: &str) -> Result<(), ExecError> {
    let tarball = from.export_image(image);
    let options = bollard::query_parameters::ImportImageOptionsBuilder::default().quiet(true).build();
    let mut loading = to.import_image_stream(options, tarball, None);
    while let Some(step) = loading.next().await {
        step?;
    }
    if image_exists(to, image).await? {
        Ok(())
    } else {
        Err(ExecError::Other(format!("the daemon loaded the stream but has no {image}")))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn two(runs: usize) -> Hosts {
        Hosts::new(
            vec![
                HostSpec { url: "unix:///a.sock".into(), runs, builds: 1, tls: None },
                HostSpec { url: "unix:///b.sock".into(), runs, builds: 1, tls: None },
            ],
            None,
        )
    }

    #[test]
    fn a_tag_is_split_from_its_name_but_not_from_a_registry_port() {
        assert_eq!(split_tag("curate-deps/x:96da"), ("curate-deps/x", "96da"));
        assert_eq!(split_tag("127.0.0.1:5000/curate-deps/x:96da"), ("127.0.0.1:5000/curate-deps/x", "96da"));
        assert_eq!(split_tag("127.0.0.1:5000/base"), ("127.0.0.1:5000/base", "latest"));
    }

    #[tokio::test]
    async fn a_run_goes_where_its_image_is_while_that_host_has_room_then_to_the_freest() {
        let hosts = two(2);
        hosts.hosts[1].note_image("img");
        let (first, _a) = hosts.place("img").await.unwrap();
        let (second, _b) = hosts.place("img").await.unwrap();
        assert_eq!((first, second), (1, 1), "both slots of the host that holds the image");
        let (third, _c) = hosts.place("img").await.unwrap();
        assert_eq!(third, 0, "then the other host");
        let (other, _d) = hosts.place("another").await.unwrap();
        assert_eq!(other, 0);
        // Every slot taken: a fifth run waits for one to free.
        let waiting = hosts.place("img");
        tokio::pin!(waiting);
        assert!(tokio::time::timeout(Duration::from_millis(50), &mut waiting).await.is_err());
        drop(_a);
        let (freed, _e) = tokio::time::timeout(Duration::from_secs(1), waiting).await.unwrap().unwrap();
        assert_eq!(freed, 1);
    }

    #[tokio::test]
    async fn builds_stay_home_without_a_registry_and_spread_by_repository_with_one() {
        let home_only = two(1);
        let (a, _a) = home_only.build_slot("o/a", false).await.unwrap();
        assert_eq!(a, 0);
        let waiting = home_only.build_slot("o/b", false);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut waiting).await.is_err(),
            "waits for home"
        );

        let spread = Hosts::new(
            two(1)
                .hosts
                .into_iter()
                .map(|h| HostSpec { url: h.url, runs: 1, builds: 1, tls: None })
                .collect(),
            Some("127.0.0.1:5000".into()),
        );
        let (a, slot_a) = spread.build_slot("o/a", false).await.unwrap();
        let (b, slot_b) = spread.build_slot("o/b", false).await.unwrap();
        assert_eq!((a, b), (0, 1), "the second repository goes to the free host");
        // A's next build waits for A's host rather than taking another.
        let again = spread.build_slot("o/a", false);
        tokio::pin!(again);
        assert!(tokio::time::timeout(Duration::from_millis(50), &mut again).await.is_err());
        drop(slot_a);
        let (a2, _) = tokio::time::timeout(Duration::from_secs(1), again).await.unwrap().unwrap();
        assert_eq!(a2, 0);
        // Its host down, the repository moves.
        drop(slot_b);
        spread.mark_down(0, "gone");
        let (moved, _) = tokio::time::timeout(Duration::from_secs(1), spread.build_slot("o/a", false))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(moved, 1);
    }

    #[tokio::test]
    async fn a_host_marked_down_gets_no_runs_and_with_none_up_a_run_errors() {
        let hosts = two(1);
        hosts.hosts[0].note_image("img");
        hosts.mark_down(0, "gone");
        let (i, slot) = hosts.place("img").await.unwrap();
        assert_eq!(i, 1);
        drop(slot);
        hosts.mark_down(1, "gone too");
        let err = hosts.place("img").await.err().unwrap().to_string();
        assert!(err.contains("every Docker host is down"), "{err}");
        assert_eq!(hosts.counts()[0].down.as_deref(), Some("gone"));
    }
}
