//! Running untrusted code: a command in a throwaway container with the network off, memory, CPU and
//! process limits, a wall-clock timeout that kills it, a clean environment (no credentials), output
//! captured and truncated, and the container always removed.
//!
//! Nothing may outlive its run: the time limit is also enforced inside the container (its command
//! runs under `timeout -s KILL`, a little longer than the host's timer, so a container whose curate
//! died stops by itself); a run whose task is dropped removes its container in the background; and
//! every container is labelled with the state directory of the run that made it, so the next
//! `curate run` of that state (or `curate clean`) removes what a killed one left.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, CreateContainerOptionsBuilder, KillContainerOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::StreamExt;

use super::docker::{ExecError, image_exists};

/// How a run's files get in: a tar archive on the command's standard input, unpacked before the
/// command starts (in place of an upload to the created container, which on a FUSE storage driver
/// mounts and unmounts its file system once more per run). A failure to unpack is not the
/// command's: it exits with [`UNPACK_FAILED`].
const UNPACK: &str = "tar -x -f - -C / --no-same-owner --no-same-permissions 2>&1 \
    || { echo curate-unpack-failed; exit 125; }; exec \"$@\" </dev/null";
/// What [`UNPACK`] prints, and its exit code, when the files did not unpack.
const UNPACK_FAILED: (&str, i64) = ("curate-unpack-failed", 125);

/// Output kept from a run; the rest is cut from the middle.
pub const OUTPUT_LIMIT: usize = 64 * 1024;

/// Every container curate makes carries this label, so leftovers can be found.
pub const LABEL: &str = "dev.curate.sandbox";
/// And this one, naming the state directory of the run that made it (when a run set one).
pub const OWNER_LABEL: &str = "dev.curate.state";
/// Seconds the in-container limit allows past the host's timer, which should always fire first.
const INSIDE_GRACE_SECS: u64 = 10;
/// Seconds one call to the daemon (the container's run aside) may take before the run errors: a
/// frozen daemon must not hold a task far past its test's own limit. Every call curate makes here
/// answers in well under a second on a working daemon; an upload gets a second more per MiB.
const CALL_SECS: u64 = 60;

/// The limit of one call to the daemon: [`CALL_SECS`], or `CURATE_DOCKER_CALL_SECS`.
fn call_limit() -> Duration {
    let secs = std::env::var("CURATE_DOCKER_CALL_SECS").ok().and_then(|s| s.parse().ok());
    Duration::from_secs(secs.unwrap_or(CALL_SECS).max(1))
}

/// `call` to the daemon, given at most `limit` to answer.
async fn answered<T, E: Into<ExecError>>(
    call: &'static str,
    limit: Duration,
    pending: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, ExecError> {
    match tokio::time::timeout(limit, pending).await {
        Ok(result) => result.map_err(Into::into),
        Err(_) => Err(ExecError::Unresponsive { call, secs: limit.as_secs() }),
    }
}

static OWNER: OnceLock<String> = OnceLock::new();

/// Names the state directory this process's containers belong to (once; later calls are ignored).
pub fn set_owner(state_dir: &std::path::Path) {
    let dir = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
    let _ = OWNER.set(dir.to_string_lossy().into_owned());
}

/// The owner label's value for `state_dir`, as [`set_owner`] writes it.
pub fn owner_of(state_dir: &std::path::Path) -> String {
    std::fs::canonicalize(state_dir)
        .unwrap_or_else(|_| state_dir.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Removes every container (running or not) labelled as made for `state_dir`, and names them. Run
/// while holding the state's lock: no live run of it can own one.
pub async fn sweep(docker: &Docker, state_dir: &std::path::Path) -> Result<Vec<String>, ExecError> {
    let filter = format!("{OWNER_LABEL}={}", owner_of(state_dir));
    let options = bollard::query_parameters::ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&std::collections::HashMap::from([("label".to_string(), vec![filter])]))
        .build();
    let mut removed = Vec::new();
    for container in docker.list_containers(Some(options)).await? {
        let Some(id) = container.id else { continue };
        let name = container.names.and_then(|n| n.first().cloned()).unwrap_or_else(|| id.clone());
        let remove = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
        match docker.remove_container(&id, Some(remove)).await {
            Ok(()) => removed.push(name.trim_start_matches('/').to_string()),
            // Gone, or going, by another removal (a dropped task's own) since it was listed.
            Err(bollard::errors::Error::DockerResponseServerError { status_code: 404 | 409, .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    removed.sort();
    Ok(removed)
}

/// Removes its container when dropped before [`Remover::done`]: a task dropped mid-run (a second
/// Ctrl-C, a panic elsewhere) leaves nothing running.
struct Remover {
    docker: Docker,
    id: Option<String>,
}

impl Remover {
    fn done(mut self) {
        self.id = None;
    }
}

impl Drop for Remover {
    fn drop(&mut self) {
        let (Some(id), Ok(handle)) = (self.id.take(), tokio::runtime::Handle::try_current()) else { return };
        let docker = self.docker.clone();
        handle.spawn(async move {
            let remove = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
            let _ = docker.remove_container(&id, Some(remove)).await;
        });
    }
}

#[derive(Debug, Clone)]
pub struct RunSpec {
    pub image: String,
    pub command: Vec<String>,
    pub workdir: String,
    /// Files written into the container before it starts: absolute path, contents.
    pub files: Vec<(String, Vec<u8>)>,
    /// The whole environment of the command (nothing is inherited).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub memory_bytes: i64,
    pub cpus: f64,
    pub pids: i64,
    /// `/tmp` as a memory-backed file system of this many bytes, counted in the memory limit:
    /// what a test writes there never reaches the host's disk, and past it a write fails with
    /// "No space left on device". `None`: the image's own `/tmp`.
    pub tmp_bytes: Option<i64>,
    /// How long one call to the daemon may take (see [`CALL_SECS`]).
    pub call_limit: Duration,
    /// What the run may write to disk beyond its files, in bytes: past it the run is killed and
    /// [`RunResult::disk_full`] set. The storage drivers seen here (fuse-overlayfs, overlay2 on
    /// ext4) have no quota, so the container's writable layer is measured while it runs, every
    /// [`DISK_CHECK`], where this process can read it (a daemon on this machine). `None`: no check.
    pub disk_bytes: Option<u64>,
}

impl RunSpec {
    pub fn new(image: &str, command: &[&str]) -> RunSpec {
        RunSpec {
            image: image.into(),
            command: command.iter().map(|s| s.to_string()).collect(),
            workdir: "/".into(),
            files: Vec::new(),
            env: vec![
                ("PATH".into(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()),
                ("LANG".into(), "C.UTF-8".into()),
                ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
            ],
            timeout: Duration::from_secs(120),
            memory_bytes: 1 << 30,
            cpus: 1.0,
            pids: 256,
            tmp_bytes: None,
            call_limit: call_limit(),
            disk_bytes: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct RunResult {
    /// `None` when the command was killed for running too long.
    pub exit_code: Option<i64>,
    pub timed_out: bool,
    /// The kernel killed it for using more memory than allowed.
    pub oom_killed: bool,
    /// Killed for writing more to disk than [`RunSpec::disk_bytes`] allows.
    pub disk_full: bool,
    /// stdout and stderr interleaved, truncated in the middle past 64 KiB.
    pub output: String,
    pub duration: Duration,
    /// The container's name; it no longer exists when `run` returns.
    pub container: String,
}

fn tar_of(files: &[(String, Vec<u8>)]) -> Result<Vec<u8>, ExecError> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_cksum();
        builder
            .append_data(&mut header, path.trim_start_matches('/'), bytes.as_slice())
            .map_err(|e| ExecError::Other(format!("cannot pack {path}: {e}")))?;
    }
    builder.into_inner().map_err(|e| ExecError::Other(format!("cannot pack files: {e}")))
}

/// Runs `spec` and removes the container whatever happens.
pub async fn run(docker: &Docker, spec: &RunSpec) -> Result<RunResult, ExecError> {
    let calls = spec.call_limit;
    if !answered("inspect image", calls, image_exists(docker, &spec.image)).await? {
        return Err(ExecError::MissingImage(spec.image.clone()));
    }
    // The limit inside the container too: if this process dies, the container still stops.
    let limit = (spec.timeout.as_secs() + INSIDE_GRACE_SECS).to_string();
    let unpack: &[&str] = if spec.files.is_empty() { &[] } else { &["sh", "-c", UNPACK, "curate-unpack"] };
    let command: Vec<String> = ["timeout", "-s", "KILL", &limit]
        .iter()
        .chain(unpack)
        .map(|s| s.to_string())
        .chain(spec.command.iter().cloned())
        .collect();
    let mut labels = std::collections::HashMap::from([(LABEL.to_string(), "1".to_string())]);
    if let Some(owner) = OWNER.get() {
        labels.insert(OWNER_LABEL.to_string(), owner.clone());
    }
    let body = ContainerCreateBody {
        image: Some(spec.image.clone()),
        cmd: Some(command),
        working_dir: Some(spec.workdir.clone()),
        env: Some(spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
        network_disabled: Some(true),
        // The run's files come in on its standard input (see [`UNPACK`]).
        open_stdin: Some(!spec.files.is_empty()),
        stdin_once: Some(!spec.files.is_empty()),
        attach_stdin: Some(!spec.files.is_empty()),
        // The same name on every run: not the container's id, which a test or a log could print
        // and make two runs of the same check differ.
        hostname: Some("sandbox".into()),
        labels: Some(labels),
        host_config: Some(HostConfig {
            network_mode: Some("none".into()),
            memory: Some(spec.memory_bytes),
            memory_swap: Some(spec.memory_bytes),
            nano_cpus: Some((spec.cpus * 1e9) as i64),
            pids_limit: Some(spec.pids),
            // Programs may be built and run from it (a C extension a test compiles), not set-uid.
            tmpfs: spec.tmp_bytes.map(|bytes| {
                std::collections::HashMap::from([(
                    "/tmp".to_string(),
                    format!("rw,exec,nosuid,nodev,size={bytes}"),
                )])
            }),
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            ..HostConfig::default()
        }),
        ..ContainerCreateBody::default()
    };
    let name = format!("curate-run-{}-{}", std::process::id(), rand::random::<u64>());
    let options = CreateContainerOptionsBuilder::default().name(&name).build();
    let id = answered("create container", calls, docker.create_container(Some(options), body)).await?.id;
    let guard = Remover { docker: docker.clone(), id: Some(id.clone()) };
    let result = run_in(docker, &id, spec, calls).await.map(|r| RunResult { container: name.clone(), ..r });
    if let Err(e @ ExecError::Unresponsive { .. }) = result {
        // The removal would wait as long again: the guard leaves it to the background, and the
        // container stops by its own limit.
        return Err(e);
    }
    let remove = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
    let removed = answered("remove container", calls, docker.remove_container(&id, Some(remove))).await;
    guard.done();
    let result = result?;
    removed?;
    Ok(result)
}

/// Runs the created container `id`: started with its files on its standard input, waited for up to
/// the spec's timeout (then killed), its OOM flag and output read. Each call to the daemon is given
/// `limit`.
async fn run_in(docker: &Docker, id: &str, spec: &RunSpec, limit: Duration) -> Result<RunResult, ExecError> {
    // Written while the container starts and reads it: a tree larger than the pipe's buffer would
    // otherwise wait for a reader that has not started.
    let files = if spec.files.is_empty() {
        None
    } else {
        let tar = tar_of(&spec.files)?;
        let options = AttachContainerOptionsBuilder::default().stdin(true).stream(true).build();
        let mut input =
            answered("attach to container", limit, docker.attach_container(id, Some(options))).await?.input;
        let upload_limit = limit + Duration::from_secs((tar.len() >> 20) as u64);
        let writing = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            input.write_all(&tar).await?;
            input.shutdown().await
        });
        Some((upload_limit, writing))
    };
    let t0 = Instant::now();
    let start = docker.start_container(id, None::<bollard::query_parameters::StartContainerOptions>);
    answered("start container", limit, start).await?;
    if let Some((upload_limit, writing)) = files {
        let written =
            async { writing.await.map_err(|e| ExecError::Other(format!("the upload stopped: {e}"))) };
        answered("upload files", upload_limit, written)
            .await?
            .map_err(|e| ExecError::Other(format!("cannot send the run's files: {e}")))?;
    }
    let mut wait = docker.wait_container(id, Some(WaitContainerOptionsBuilder::default().build()));
    let allowed =
        spec.disk_bytes.map(|bytes| bytes + spec.files.iter().map(|(_, b)| b.len() as u64).sum::<u64>());
    let watched = async {
        tokio::select! {
            exited = wait.next() => Some(exited),
            () = disk_overrun(docker, id, allowed, limit) => None,
        }
    };
    let kill = || async {
        let kill = KillContainerOptionsBuilder::default().signal("KILL").build();
        // Gone already is fine; no answer at all is not.
        match answered("kill container", limit, docker.kill_container(id, Some(kill))).await {
            Err(e @ ExecError::Unresponsive { .. }) => Err(e),
            _ => Ok(()),
        }
    };
    let (exit_code, timed_out, disk_full) = match tokio::time::timeout(spec.timeout, watched).await {
        Ok(Some(Some(Ok(r)))) => (Some(r.status_code), false, false),
        // A non-zero exit comes back as an error carrying the code.
        Ok(Some(Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })))) => {
            (Some(code), false, false)
        }
        Ok(Some(Some(Err(e)))) => return Err(e.into()),
        Ok(Some(None)) => (None, false, false),
        Ok(None) => {
            kill().await?;
            (None, false, true)
        }
        Err(_) => {
            kill().await?;
            (None, true, false)
        }
    };
    let duration = t0.elapsed();
    let inspect = docker.inspect_container(id, None::<bollard::query_parameters::InspectContainerOptions>);
    let oom_killed = match answered("inspect container", limit, inspect).await {
        Ok(c) => c.state.and_then(|s| s.oom_killed).unwrap_or(false),
        Err(e @ ExecError::Unresponsive { .. }) => return Err(e),
        Err(_) => false,
    };
    let read_logs = async {
        let mut logs = docker.logs(id, Some(LogsOptionsBuilder::default().stdout(true).stderr(true).build()));
        let mut output = Vec::new();
        while let Some(chunk) = logs.next().await {
            match chunk {
                Ok(c) => {
                    output.extend_from_slice(&c.into_bytes());
                    // Keep reading past the limit only to the point of keeping a tail.
                    if output.len() > 8 * OUTPUT_LIMIT {
                        output.drain(OUTPUT_LIMIT / 4..output.len() - OUTPUT_LIMIT);
                    }
                }
                Err(_) => break,
            }
        }
        Ok::<_, ExecError>(output)
    };
    let output = answered("read logs", limit, read_logs).await?;
    let output = crate::text::keep_ends(&String::from_utf8_lossy(&output), OUTPUT_LIMIT);
    if !spec.files.is_empty() && exit_code == Some(UNPACK_FAILED.1) && output.contains(UNPACK_FAILED.0) {
        let said = output.replace(UNPACK_FAILED.0, "");
        return Err(ExecError::Other(format!("the run's files did not unpack: {}", said.trim())));
    }
    Ok(RunResult {
        exit_code: if timed_out { None } else { exit_code },
        timed_out,
        oom_killed,
        disk_full,
        output,
        duration,
        container: String::new(),
    })
}

/// How often a run's writable layer is measured against [`RunSpec::disk_bytes`]. A run that ends
/// sooner (most test runs) is never measured.
pub const DISK_CHECK: Duration = Duration::from_secs(1);

/// Resolves once the container `id` holds more than `allowed` bytes in its writable layer; never
/// when there is no limit or the layer is not a directory this process can read (a daemon on
/// another machine, a driver that names none).
async fn disk_overrun(docker: &Docker, id: &str, allowed: Option<u64>, limit: Duration) {
    let Some(allowed) = allowed else { return std::future::pending().await };
    tokio::time::sleep(DISK_CHECK).await;
    let inspect = docker.inspect_container(id, None::<bollard::query_parameters::InspectContainerOptions>);
    let upper = match answered("inspect container", limit, inspect).await {
        Ok(c) => c.graph_driver.and_then(|g| g.data.get("UpperDir").cloned()),
        Err(_) => None,
    };
    let Some(upper) = upper.map(std::path::PathBuf::from).filter(|d| d.is_dir()) else {
        return std::future::pending().await;
    };
    loop {
        let dir = upper.clone();
        let used = tokio::task::spawn_blocking(move || disk_used(&dir)).await.unwrap_or(0);
        if used > allowed {
            return;
        }
        tokio::time::sleep(DISK_CHECK).await;
    }
}

/// The bytes of disk the files under `dir` take (their allocated blocks: a sparse file counts what
/// it holds, not its length), symbolic links not followed.
fn disk_used(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => m.blocks() * 512 + disk_used(&e.path()),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_packed_as_a_tar() {
        let tar = tar_of(&[("/work/t.py".into(), b"print(1)".to_vec())]).unwrap();
        let mut archive = tar::Archive::new(tar.as_slice());
        let names: Vec<String> = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["work/t.py"]);
    }
}
