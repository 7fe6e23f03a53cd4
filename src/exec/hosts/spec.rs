//! Which hosts and which registry: `defaults.docker` in the pipeline, or the environment over it
//! (`CURATE_DOCKER_HOSTS`, `CURATE_DOCKER_REGISTRY`), and the registry's login, which only the
//! environment gives.

use std::path::Path;

use serde::Deserialize;

use super::TlsFiles;

/// `defaults.docker` as written in the pipeline.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DockerSpec {
    /// The daemons to use, the first one building the images; none: `CURATE_DOCKER_HOSTS`, else
    /// `DOCKER_HOST` or the local socket.
    #[serde(default)]
    pub hosts: Vec<HostSpec>,
    /// A registry (`host:port`) through which images go to the hosts that lack them; none: they
    /// are streamed from daemon to daemon.
    pub registry: Option<String>,
}

/// One daemon.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostSpec {
    /// `unix:///path/docker.sock`, `tcp://host:port`, `http://host:port` or `https://host:port`.
    pub url: String,
    /// Container runs at once on this host (default 2).
    #[serde(default = "default_runs")]
    pub runs: usize,
    /// Image builds at once on this host (default 1). Hosts other than the first build only when
    /// the pipeline names a registry, which keeps what they build.
    #[serde(default = "default_builds")]
    pub builds: usize,
    /// Client certificate for a daemon that verifies its clients (`dockerd --tlsverify`); files
    /// relative to the pipeline file. Only their paths are kept anywhere.
    #[serde(default)]
    pub tls: Option<TlsFiles>,
}

fn default_runs() -> usize {
    2
}

fn default_builds() -> usize {
    1
}

/// What is wrong with the Docker hosts or the registry login the pipeline or the environment names.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    #[error("host {0}: `runs` must be at least 1")]
    NoRuns(String),
    #[error("host {0}: the URL must start with unix://, tcp://, http:// or https://")]
    Scheme(String),
    #[error("host {0}: an https:// host needs `tls:` files or DOCKER_CERT_PATH")]
    NoTls(String),
    #[error("CURATE_DOCKER_HOSTS: `{0}`: the run count after `=` is not a number")]
    RunCount(String),
    #[error("CURATE_DOCKER_REGISTRY_PASSWORD_FILE {file}: {source}")]
    PasswordFile {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "CURATE_DOCKER_REGISTRY_USER is set but neither CURATE_DOCKER_REGISTRY_PASSWORD nor _PASSWORD_FILE is"
    )]
    NoPassword,
}

/// The hosts of `spec`, or of `CURATE_DOCKER_HOSTS` (`URL[=RUNS]`, comma-separated; an
/// `https://` one uses `DOCKER_CERT_PATH`'s certificates), or the one host of `DOCKER_HOST`.
/// Relative certificate paths are taken from `dir`, the pipeline's directory.
pub fn host_specs(spec: &DockerSpec, dir: &Path) -> Result<Vec<HostSpec>, HostsError> {
    let from_env = std::env::var("CURATE_DOCKER_HOSTS").ok().filter(|v| !v.trim().is_empty());
    let hosts = match (&from_env, spec.hosts.is_empty()) {
        (Some(list), _) => parse_host_list(list)?,
        (None, false) => spec.hosts.clone(),
        (None, true) => vec![HostSpec {
            url: crate::exec::docker::host(),
            runs: usize::MAX >> 1,
            builds: usize::MAX >> 1,
            tls: None,
        }],
    };
    let mut resolved = Vec::new();
    for mut h in hosts {
        if h.runs == 0 {
            return Err(HostsError::NoRuns(h.url));
        }
        if !["unix://", "tcp://", "http://", "https://"].iter().any(|s| h.url.starts_with(s)) {
            return Err(HostsError::Scheme(h.url));
        }
        if h.tls.is_none() && h.url.starts_with("https://") {
            h.tls = TlsFiles::from_cert_path();
            if h.tls.is_none() {
                return Err(HostsError::NoTls(h.url));
            }
        }
        h.tls = h.tls.map(|t| t.under(dir));
        resolved.push(h);
    }
    Ok(resolved)
}

fn parse_host_list(list: &str) -> Result<Vec<HostSpec>, HostsError> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|entry| match entry.rsplit_once('=') {
            Some((url, runs)) => runs
                .parse()
                .map(|runs| HostSpec { url: url.into(), runs, builds: default_builds(), tls: None })
                .map_err(|_| HostsError::RunCount(entry.to_string())),
            None => {
                Ok(HostSpec { url: entry.into(), runs: default_runs(), builds: default_builds(), tls: None })
            }
        })
        .collect()
}

/// The registry's login, from `CURATE_DOCKER_REGISTRY_USER` and `CURATE_DOCKER_REGISTRY_PASSWORD`
/// (or `CURATE_DOCKER_REGISTRY_PASSWORD_FILE`, a file holding it). Kept in memory only: never in
/// the pipeline, the state or an export.
pub fn registry_login() -> Result<Option<bollard::auth::DockerCredentials>, HostsError> {
    let Some(user) = std::env::var("CURATE_DOCKER_REGISTRY_USER").ok().filter(|u| !u.is_empty()) else {
        return Ok(None);
    };
    let password = match std::env::var("CURATE_DOCKER_REGISTRY_PASSWORD_FILE").ok().filter(|f| !f.is_empty())
    {
        Some(file) => std::fs::read_to_string(&file)
            .map_err(|source| HostsError::PasswordFile { file: file.clone(), source })?
            .trim_end_matches(['\r', '\n'])
            .to_string(),
        None => std::env::var("CURATE_DOCKER_REGISTRY_PASSWORD").map_err(|_| HostsError::NoPassword)?,
    };
    Ok(Some(bollard::auth::DockerCredentials {
        username: Some(user),
        password: Some(password),
        ..Default::default()
    }))
}

/// The registry of `spec`, or of `CURATE_DOCKER_REGISTRY`.
pub fn registry(spec: &DockerSpec) -> Option<String> {
    std::env::var("CURATE_DOCKER_REGISTRY")
        .ok()
        .filter(|r| !r.trim().is_empty())
        .or_else(|| spec.registry.clone())
        .map(|r| r.trim().trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_come_from_the_environment_list_with_their_run_counts() {
        let hosts = parse_host_list("unix:///a.sock=3, tcp://10.0.0.5:2375").unwrap();
        assert_eq!(hosts[0], HostSpec { url: "unix:///a.sock".into(), runs: 3, builds: 1, tls: None });
        assert_eq!(hosts[1], HostSpec { url: "tcp://10.0.0.5:2375".into(), runs: 2, builds: 1, tls: None });
        assert!(parse_host_list("unix:///a.sock=many").unwrap_err().to_string().contains("not a number"));
    }

    #[test]
    fn a_host_needs_a_known_scheme_and_a_slot() {
        let spec = |url: &str, runs| DockerSpec {
            hosts: vec![HostSpec { url: url.into(), runs, builds: default_builds(), tls: None }],
            registry: None,
        };
        let here = Path::new("/p");
        assert!(host_specs(&spec("ssh://box", 1), here).unwrap_err().to_string().contains("must start with"));
        assert!(host_specs(&spec("unix:///x.sock", 0), here).unwrap_err().to_string().contains("at least 1"));
        let files =
            TlsFiles { ca: "certs/ca.pem".into(), cert: "certs/cert.pem".into(), key: "/abs/key.pem".into() };
        let mut with_tls = spec("tcp://10.0.0.5:2376", 1);
        with_tls.hosts[0].tls = Some(files);
        let resolved = host_specs(&with_tls, here).unwrap().remove(0).tls.unwrap();
        assert_eq!(resolved.ca, Path::new("/p/certs/ca.pem"));
        assert_eq!(resolved.key, Path::new("/abs/key.pem"), "an absolute path stays");
    }
}
