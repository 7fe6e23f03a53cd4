//! The Docker daemon: one connection, checked once before any work starts.

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
    #[error("{0}")]
    Other(String),
}

fn host() -> String {
    std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".into())
}

/// Connects to the daemon named by `DOCKER_HOST` (or the local socket) and checks that it answers.
pub async fn connect() -> Result<Docker, ExecError> {
    let unreachable = |error: String| ExecError::Unreachable { host: host(), error };
    let docker = Docker::connect_with_defaults().map_err(|e| unreachable(e.to_string()))?;
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

/// A connection to the daemon made on first use and shared after: stages build one when the
/// pipeline loads (no daemon needed to check a pipeline) and connect when a task first needs it.
#[derive(Debug, Default)]
pub struct LazyDocker(tokio::sync::OnceCell<Docker>);

impl LazyDocker {
    pub async fn get(&self) -> Result<Docker, ExecError> {
        self.0.get_or_try_init(connect).await.cloned()
    }
}

/// Docker failing is the infrastructure failing: the task errors and runs again.
impl From<ExecError> for crate::engine::stage::TaskError {
    fn from(e: ExecError) -> Self {
        crate::engine::stage::TaskError::Infra(Box::new(e))
    }
}
