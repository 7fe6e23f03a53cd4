//! Bringing an image to a host that lacks it, from a host that has it: through the registry the
//! pipeline names (pushed once a run, pulled by each host that needs it), or else streamed from
//! daemon to daemon (export and import through the API).

use std::time::Instant;

use bollard::Docker;
use futures_util::StreamExt;

use super::Hosts;
use crate::exec::docker::{ExecError, image_exists};

impl Hosts {
    /// Makes sure host `i` holds `image`, streaming it from another host that does if needed.
    pub(super) async fn ensure_image(&self, i: usize, docker: &Docker, image: &str) -> Result<(), ExecError> {
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

    fn login_for(&self, registry: &str) -> Option<bollard::auth::DockerCredentials> {
        self.login.clone().map(|login| bollard::auth::DockerCredentials {
            serveraddress: Some(registry.to_string()),
            ..login
        })
    }

    /// Pushes `image` from `from` to the registry (tagged with the registry's name), once a run.
    pub(super) async fn push(&self, from: &Docker, image: &str, registry: &str) -> Result<(), ExecError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_is_split_from_its_name_but_not_from_a_registry_port() {
        assert_eq!(split_tag("curate-deps/x:96da"), ("curate-deps/x", "96da"));
        assert_eq!(split_tag("127.0.0.1:5000/curate-deps/x:96da"), ("127.0.0.1:5000/curate-deps/x", "96da"));
        assert_eq!(split_tag("127.0.0.1:5000/base"), ("127.0.0.1:5000/base", "latest"));
    }
}
