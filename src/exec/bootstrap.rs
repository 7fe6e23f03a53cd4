//! Base images without a registry: a Debian root filesystem made by `debootstrap` from Debian's
//! package mirror, with Python 3, venv, pip and git, imported into the daemon as an image. Where a
//! registry is reachable a pipeline can name any base image instead.

use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use bollard::Docker;
use bollard::query_parameters::CreateImageOptionsBuilder;
use futures_util::StreamExt;
use tokio::process::Command;
use tokio_util::io::ReaderStream;

use super::docker::{ExecError, image_exists};

pub struct Bootstrap {
    /// Debian suite: bookworm has Python 3.11, bullseye 3.9, trixie 3.13.
    pub suite: String,
    pub tag: String,
    pub mirror: String,
    /// Packages on top of minbase.
    pub packages: Vec<String>,
    /// Make it even if the tag exists.
    pub force: bool,
}

impl Bootstrap {
    pub fn new(suite: &str) -> Bootstrap {
        Bootstrap {
            suite: suite.into(),
            tag: format!("curate/base:{suite}"),
            mirror: "http://deb.debian.org/debian".into(),
            packages: [
                "python3",
                "python3-venv",
                "python3-pip",
                "python3-dev",
                "git",
                "ca-certificates",
                "gcc",
                "libc6-dev",
            ]
            .map(String::from)
            .to_vec(),
            force: false,
        }
    }
}

pub enum Outcome {
    AlreadyThere,
    Made { seconds: f64, rootfs_bytes: u64 },
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Makes the base image unless it exists. Needs root and `debootstrap` on the host.
pub async fn bootstrap(docker: &Docker, b: &Bootstrap, say: impl Fn(&str)) -> Result<Outcome, ExecError> {
    if !b.force && image_exists(docker, &b.tag).await? {
        return Ok(Outcome::AlreadyThere);
    }
    let t0 = Instant::now();
    let work = tempfile::Builder::new()
        .prefix("curate-rootfs-")
        .tempdir_in(std::env::temp_dir())
        .map_err(|e| ExecError::Other(format!("cannot make a work directory: {e}")))?;
    let root = work.path().join("rootfs");
    say(&format!("debootstrap {} into {} (a few minutes)", b.suite, root.display()));
    let out = Command::new("debootstrap")
        .arg("--variant=minbase")
        .arg(format!("--include={}", b.packages.join(",")))
        .arg(&b.suite)
        .arg(&root)
        .arg(&b.mirror)
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| {
            ExecError::Other(format!(
                "cannot run debootstrap ({e}); install it with `apt-get install debootstrap`"
            ))
        })?;
    if !out.status.success() {
        let log = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = log.lines().rev().take(5).collect();
        return Err(ExecError::Other(format!(
            "debootstrap failed: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )));
    }
    // Trust what the host trusts: behind a TLS-inspecting proxy, package downloads during image
    // builds fail without the proxy's CA. The host's bundle is a superset of Debian's.
    let host_bundle = Path::new("/etc/ssl/certs/ca-certificates.crt");
    if host_bundle.is_file() {
        std::fs::copy(host_bundle, root.join("etc/ssl/certs/ca-certificates.crt"))
            .map_err(|e| ExecError::Other(format!("cannot copy the host's CA bundle: {e}")))?;
    }
    // Package caches are not needed in the image.
    let _ = std::fs::remove_dir_all(root.join("var/cache/apt/archives"));
    let _ = std::fs::create_dir_all(root.join("var/cache/apt/archives/partial"));
    let rootfs_bytes = dir_size(&root);
    say(&format!("importing {} MB as {}", rootfs_bytes / 1_000_000, b.tag));
    let mut tar = Command::new("tar")
        .arg("-C")
        .arg(&root)
        .args(["--numeric-owner", "-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| ExecError::Other(format!("cannot run tar: {e}")))?;
    let stdout = tar.stdout.take().ok_or_else(|| ExecError::Other("tar has no stdout".into()))?;
    let (repo, tag) = b.tag.rsplit_once(':').unwrap_or((&b.tag, "latest"));
    let options = CreateImageOptionsBuilder::default()
        .from_src("-")
        .repo(repo)
        .tag(tag)
        .changes(vec![
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into(),
            "ENV LANG=C.UTF-8".into(),
            "ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt".into(),
            "CMD [\"/bin/bash\"]".into(),
        ])
        .build();
    let body = bollard::body_try_stream(ReaderStream::new(stdout));
    let mut progress = docker.create_image(Some(options), Some(body), None);
    while let Some(step) = progress.next().await {
        step?;
    }
    let status = tar.wait().await.map_err(|e| ExecError::Other(format!("tar: {e}")))?;
    if !status.success() {
        return Err(ExecError::Other(format!("tar of the root filesystem failed: {status}")));
    }
    if !image_exists(docker, &b.tag).await? {
        return Err(ExecError::Other(format!("the import finished but {} is not there", b.tag)));
    }
    Ok(Outcome::Made { seconds: t0.elapsed().as_secs_f64(), rootfs_bytes })
}
