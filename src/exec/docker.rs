//! The Docker daemon: one connection, checked once before any work starts.

use std::path::Path;
use std::time::Duration;

use bollard::Docker;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("cannot reach the Docker daemon ({host}): {error}; start it, or point DOCKER_HOST at one")]
    Unreachable { host: String, error: String },
    #[error(
        "image {0} is missing; make it with `curate images bootstrap` (or name a base image your registry serves)"
    )]
    MissingImage(String),
    #[error("docker: {0}")]
    Docker(#[from] bollard::errors::Error),
    #[error(
        "the Docker daemon did not answer `{call}` within {secs} s; it may be frozen or overloaded \
         (CURATE_DOCKER_CALL_SECS sets this limit)"
    )]
    Unresponsive { call: &'static str, secs: u64 },
    #[error("{0}")]
    Other(String),
}

/// The daemon `DOCKER_HOST` names, or the local socket.
pub fn host() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unix:///var/run/docker.sock".into())
}

/// Connects to the daemon named by `DOCKER_HOST` (or the local socket) and checks that it answers.
pub async fn connect() -> Result<Docker, ExecError> {
    connect_to(&host()).await
}

/// Connects to the daemon at `url` (`unix://`, `tcp://`, `http://`) and checks that it answers.
pub async fn connect_to(url: &str) -> Result<Docker, ExecError> {
    let docker = Docker::connect_with_host(url)
        .map_err(|e| ExecError::Unreachable { host: url.to_string(), error: e.to_string() })?;
    answering(docker, url).await
}

/// PEM files: the CA that signed the daemon's certificate, and this client's certificate and key.
#[derive(Debug, Clone, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlsFiles {
    pub ca: std::path::PathBuf,
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
}

impl TlsFiles {
    /// `DOCKER_CERT_PATH`'s `ca.pem`, `cert.pem` and `key.pem`, as the docker CLI reads them.
    pub(crate) fn from_cert_path() -> Option<TlsFiles> {
        let dir = std::path::PathBuf::from(std::env::var_os("DOCKER_CERT_PATH")?);
        Some(TlsFiles { ca: dir.join("ca.pem"), cert: dir.join("cert.pem"), key: dir.join("key.pem") })
    }

    /// The same files with relative paths taken from `dir`.
    pub fn under(&self, dir: &Path) -> TlsFiles {
        TlsFiles { ca: dir.join(&self.ca), cert: dir.join(&self.cert), key: dir.join(&self.key) }
    }
}

/// Connects to the daemon at `url` (`tcp://` or `https://`) with a client certificate, verifying
/// the daemon's against `tls.ca`, and checks that it answers.
pub async fn connect_tls(url: &str, tls: &TlsFiles) -> Result<Docker, ExecError> {
    let docker =
        Docker::connect_with_ssl(url, &tls.key, &tls.cert, &tls.ca, 120, bollard::API_DEFAULT_VERSION)
            .map_err(|e| ExecError::Unreachable { host: url.to_string(), error: e.to_string() })?;
    answering(docker, url).await
}

async fn answering(docker: Docker, url: &str) -> Result<Docker, ExecError> {
    let unreachable = |error: String| ExecError::Unreachable { host: url.to_string(), error };
    match tokio::time::timeout(Duration::from_secs(10), docker.ping()).await {
        Ok(Ok(_)) => Ok(docker),
        Ok(Err(e)) => Err(unreachable(e.to_string())),
        Err(_) => Err(unreachable("no answer within 10 s".into())),
    }
}

pub async fn image_exists(docker: &Docker, tag: &str) -> Result<bool, ExecError> {
    match docker.inspect_image(tag).await {
        Ok(_) => Ok(true),
        Err(bollard::errors::Error::DockerResponseServerError { status_code: 404, .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Docker failing is the infrastructure failing: the task errors and runs again.
impl From<ExecError> for crate::engine::stage::TaskError {
    fn from(e: ExecError) -> Self {
        crate::engine::stage::TaskError::Infra(Box::new(e))
    }
}
