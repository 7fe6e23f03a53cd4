//! Building an image from a Dockerfile and a build context through bollard.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use bollard::Docker;
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;

use super::docker::ExecError;

/// A build that ran and failed: the Dockerfile step or the command inside it.
/// Lines of a failed build's log kept for reading its error: all of it, for the installer names
/// the package that failed above the thousands of lines its build printed (cut in the middle past
/// this many bytes).
const LOG_BYTES: usize = 2_000_000;

#[derive(Debug, Clone)]
pub struct BuildFailure {
    pub message: String,
    /// The last lines of the build's output.
    pub log_tail: String,
}

/// One build of a tag at a time in this process; a second asker waits, then finds it built.
pub async fn build_lock(tag: &str) -> tokio::sync::OwnedMutexGuard<()> {
    static LOCKS: OnceLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> = OnceLock::new();
    let lock = {
        let mut map = LOCKS.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
        map.entry(tag.to_string()).or_default().clone()
    };
    lock.lock_owned().await
}

/// The Dockerfile, `files` (path in the context, contents) and a directory `tree` (copied whole
/// under its path in the context) as a tar archive.
fn context_tar(
    dockerfile: &str,
    files: &[(&str, &[u8])],
    tree: Option<(&str, &Path)>,
) -> Result<Vec<u8>, ExecError> {
    let pack = |e: std::io::Error| ExecError::Other(format!("cannot pack the build context: {e}"));
    let mut b = tar::Builder::new(Vec::new());
    b.follow_symlinks(false);
    let add = |b: &mut tar::Builder<Vec<u8>>, path: &str, bytes: &[u8]| {
        let mut h = tar::Header::new_gnu();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_cksum();
        b.append_data(&mut h, path, bytes)
    };
    add(&mut b, "Dockerfile", dockerfile.as_bytes()).map_err(pack)?;
    for (path, bytes) in files {
        add(&mut b, path, bytes).map_err(pack)?;
    }
    if let Some((path, dir)) = tree {
        b.append_dir_all(path, dir).map_err(pack)?;
    }
    b.into_inner().map_err(pack)
}

/// Builds `tag`. `Ok(Err(..))` is a build that failed on its own terms (a step's command);
/// `Err(..)` is the daemon failing.
pub async fn build(
    docker: &Docker,
    tag: &str,
    dockerfile: &str,
    files: &[(&str, &[u8])],
    tree: Option<(&str, &Path)>,
) -> Result<Result<(), BuildFailure>, ExecError> {
    let tar = context_tar(dockerfile, files, tree)?;
    let options =
        BuildImageOptionsBuilder::default().dockerfile("Dockerfile").t(tag).rm(true).forcerm(true).build();
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(tar.into())));
    let mut log = String::new();
    while let Some(step) = stream.next().await {
        match step {
            Ok(info) => {
                if let Some(s) = info.stream {
                    log.push_str(&s);
                }
                if let Some(e) = info.error_detail.and_then(|d| d.message) {
                    return Ok(Err(BuildFailure { message: e, log_tail: build_log(&log) }));
                }
            }
            Err(bollard::errors::Error::DockerStreamError { error }) => {
                return Ok(Err(BuildFailure { message: error, log_tail: build_log(&log) }));
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Ok(()))
}

/// Removes terminal colour codes (`ESC [ ... m`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// What the build's commands printed, without Docker's own bookkeeping, its middle cut past
/// [`LOG_BYTES`].
fn build_log(text: &str) -> String {
    crate::text::keep_ends(&tail_lines(text, usize::MAX), LOG_BYTES)
}

/// The last `n` lines the build's commands printed, without Docker's own bookkeeping.
fn tail_lines(text: &str, n: usize) -> String {
    let docker_own = ["Removing intermediate container", "--->", "Step ", "Successfully "];
    let lines: Vec<String> = text
        .lines()
        .map(|l| strip_ansi(l).trim().to_string())
        .filter(|l| !l.is_empty() && !docker_own.iter().any(|p| l.starts_with(p)))
        .collect();
    crate::text::last_lines(&lines.join("\n"), n)
}

/// Makes `tag` from `from` in one layer: a tree copied to `dest` (a directory in the container),
/// then `command` run there with the network on, and the container committed. Cheaper than a
/// Dockerfile's COPY and RUN, which cost a layer commit each; on a slow storage driver that commit
/// is most of the time.
pub async fn commit_layer(
    docker: &Docker,
    from: &str,
    tag: &str,
    tree: &Path,
    dest: &str,
    command: &str,
) -> Result<Result<(), BuildFailure>, ExecError> {
    use bollard::models::{ContainerConfig, ContainerCreateBody};
    use bollard::query_parameters::{
        CommitContainerOptionsBuilder, RemoveContainerOptionsBuilder, UploadToContainerOptionsBuilder,
        WaitContainerOptionsBuilder,
    };

    let pack = |e: std::io::Error| ExecError::Other(format!("cannot pack {}: {e}", tree.display()));
    let mut b = tar::Builder::new(Vec::new());
    b.follow_symlinks(false);
    // The files only: a checkout's `.git` borrows its objects from a mirror on this machine and
    // would be a broken repository in the container (the version comes from the recipe instead).
    let under = dest.trim_start_matches('/');
    for rel in crate::repo::working_files(tree).map_err(pack)? {
        b.append_path_with_name(tree.join(&rel), format!("{under}/{rel}")).map_err(pack)?;
    }
    let tar = b.into_inner().map_err(pack)?;
    let body = ContainerCreateBody {
        image: Some(from.to_string()),
        cmd: Some(vec!["sh".into(), "-c".into(), command.to_string()]),
        working_dir: Some(dest.to_string()),
        labels: Some([(super::sandbox::LABEL.to_string(), "build".to_string())].into()),
        ..ContainerCreateBody::default()
    };
    let id =
        docker.create_container(None::<bollard::query_parameters::CreateContainerOptions>, body).await?.id;
    let result = async {
        let options = UploadToContainerOptionsBuilder::default().path("/").build();
        docker.upload_to_container(&id, Some(options), bollard::body_full(tar.into())).await?;
        docker.start_container(&id, None::<bollard::query_parameters::StartContainerOptions>).await?;
        let mut wait = docker.wait_container(&id, Some(WaitContainerOptionsBuilder::default().build()));
        let code = match wait.next().await {
            Some(Ok(r)) => r.status_code,
            Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
            Some(Err(e)) => return Err(ExecError::from(e)),
            None => -1,
        };
        if code != 0 {
            let mut logs = docker.logs(
                &id,
                Some(
                    bollard::query_parameters::LogsOptionsBuilder::default()
                        .stdout(true)
                        .stderr(true)
                        .build(),
                ),
            );
            let mut log = String::new();
            while let Some(Ok(chunk)) = logs.next().await {
                log.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
            }
            let message = format!("`{command}` exited with {code}");
            return Ok(Err(BuildFailure { message, log_tail: build_log(&log) }));
        }
        let (repo, t) = tag.rsplit_once(':').unwrap_or((tag, "latest"));
        let options = CommitContainerOptionsBuilder::default().container(&id).repo(repo).tag(t).build();
        // The committed image keeps the base's command, not the install's.
        let config = ContainerConfig {
            cmd: Some(vec!["/bin/bash".into()]),
            working_dir: Some(dest.to_string()),
            ..ContainerConfig::default()
        };
        docker.commit_container(options, config).await?;
        Ok(Ok(()))
    }
    .await;
    let remove = RemoveContainerOptionsBuilder::default().force(true).v(true).build();
    let removed = docker.remove_container(&id, Some(remove)).await;
    let result = result?;
    removed?;
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_is_what_the_command_said() {
        let log = "Step 3/3 : RUN uv pip install\n ---> Running in 1a2b\n  × No solution found\n  ╰─▶ no-such-pkg was not found\n\u{1b}[0mRemoving intermediate container 1a2b\n";
        assert_eq!(tail_lines(log, 1), "╰─▶ no-such-pkg was not found");
        assert_eq!(strip_ansi("\u{1b}[31mred\u{1b}[0m"), "red");
    }
}
