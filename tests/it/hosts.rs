//! The main job over two Docker daemons: this machine's and a second one the test starts
//! (tests/it/common/dockerd.rs). Images are built on the first and go to the second when a run is
//! placed there, through a registry the test starts (tests/it/common/registry.rs) or streamed from
//! daemon to daemon; the report must be the one-daemon report byte for byte, also when the second
//! daemon is killed in the middle of the run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::dockerd::SecondDaemon;
use crate::common::registry::Registry;
use crate::common::{build_sample_mirrors, curate_cmd, docker_or_skip, root, stderr, stdout};
use curate::exec::hosts::{Executor, HostCounts, HostSpec, Hosts, TlsFiles};
use curate::exec::sandbox::RunSpec;

const NOWHERE: &str = "http://127.0.0.1:9/v1";
const LOCAL: &str = "unix:///var/run/docker.sock";

/// What a test needs that this machine may not give: skipped with the reason, or a failure under
/// `CURATE_REQUIRE_DOCKER=1` (CI).
fn needed<T>(what: &str, made: Result<T, String>) -> Option<T> {
    match made {
        Ok(t) => Some(t),
        Err(why) if std::env::var("CURATE_REQUIRE_DOCKER").as_deref() == Ok("1") => {
            panic!("CURATE_REQUIRE_DOCKER=1 but {what} cannot start: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED: {what} cannot start here: {why}");
            None
        }
    }
}

/// Whether this machine has the `docker0` interface its own daemon builds through.
fn has_docker0() -> bool {
    Command::new("ip").args(["link", "show", "docker0"]).output().is_ok_and(|o| o.status.success())
}

fn run_command(state: &str, hosts: &str) -> Command {
    let mut cmd = curate_cmd(
        &root(),
        &[
            "run",
            "pipelines/ccrab.yaml",
            "--state",
            state,
            "--concurrency",
            "docker=2",
            "--progress",
            "plain",
        ],
    );
    cmd.env("CURATE_LLM_CACHE", "replay").env("OPENAI_BASE_URL", NOWHERE).env("CURATE_DOCKER_HOSTS", hosts);
    cmd
}

fn report(state: &str) -> String {
    let out = curate_cmd(&root(), &["report", "pipelines/ccrab.yaml", "--state", state]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

fn host_counts(state: &str) -> Vec<HostCounts> {
    let path = std::path::Path::new(state).join("hosts.json");
    serde_json::from_slice(&std::fs::read(&path).expect("hosts.json")).unwrap()
}

#[test]
fn the_sample_curated_over_two_daemons_through_a_registry_reports_what_one_daemon_does() {
    if !docker_or_skip("the two-daemon test") {
        return;
    }
    let docker0 = has_docker0();
    let Some(second) = needed("a second Docker daemon", SecondDaemon::start()) else { return };
    // A second daemon must leave the first one's network alone (`--bridge none` deletes docker0).
    assert_eq!(has_docker0(), docker0, "the second daemon took docker0 away");
    let Some(registry) = needed("a registry", Registry::start()) else { return };
    build_sample_mirrors();
    let expected = std::fs::read_to_string(root().join("docs/sample-report.md")).unwrap();

    // One slot on each: the two sides of every test run go to both daemons at once.
    let hosts = format!("{LOCAL}=1,{}=1", second.url);
    let state = tempfile::tempdir().unwrap();
    let state = state.path().to_str().unwrap();
    let out = run_command(state, &hosts).env("CURATE_DOCKER_REGISTRY", &registry.address).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(report(state), expected, "two daemons differ from one (docs/sample-report.md)");
    assert!(
        registry.catalog().contains("curate-deps/"),
        "pushed through the registry: {}",
        registry.catalog()
    );
    let counts = host_counts(state);
    assert_eq!(counts.len(), 2);
    assert!(counts[1].runs > 0 && counts[1].transfers > 0, "the second daemon worked: {counts:?}");
    assert!(counts.iter().all(|c| c.down.is_none()), "{counts:?}");
    let images = second.docker(&["images", "--format", "{{.Repository}}"]).unwrap();
    assert!(images.contains("curate-deps/"), "the PR images were pulled: {images}");
    let status = curate_cmd(&root(), &["status", "pipelines/ccrab.yaml", "--state", state]).output().unwrap();
    assert!(stdout(&status).contains(&format!("{}: 1 slot(s)", second.url)), "{}", stdout(&status));
}

#[test]
fn a_daemon_killed_in_the_middle_of_the_run_loses_nothing() {
    if !docker_or_skip("the daemon-loss test") {
        return;
    }
    let Some(mut second) = needed("a second Docker daemon", SecondDaemon::start()) else { return };
    build_sample_mirrors();
    let expected = std::fs::read_to_string(root().join("docs/sample-report.md")).unwrap();

    let hosts = format!("{LOCAL}=1,{}=1", second.url);
    let state = tempfile::tempdir().unwrap();
    let state = state.path().to_str().unwrap();
    let mut child = run_command(state, &hosts).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    // Kill the second daemon while it runs a test.
    let t0 = Instant::now();
    let mut killed = false;
    while t0.elapsed() < Duration::from_secs(600) && child.try_wait().unwrap().is_none() {
        let running =
            second.docker(&["ps", "-q", "--filter", "label=dev.curate.sandbox"]).unwrap_or_default();
        if !running.trim().is_empty() {
            second.kill();
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(killed, "the second daemon never ran a test");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("stopped answering"), "{err}");
    assert_eq!(report(state), expected, "a lost daemon changed the result");
    let counts = host_counts(state);
    assert!(counts[1].down.is_some() && counts[1].lost >= 1, "{counts:?}");
    assert!(counts[1].transfers >= 1, "the image was streamed to the second daemon first: {counts:?}");
    assert!(counts[0].runs > 0, "{counts:?}");
}

#[tokio::test]
async fn a_daemon_that_verifies_its_clients_takes_runs_from_a_client_with_its_certificate() {
    if !docker_or_skip("the TLS host test") {
        return;
    }
    let Some(daemon) = needed("a TLS Docker daemon", SecondDaemon::start_tls()) else { return };
    let tcp = daemon.tls_url.clone().unwrap();
    let certs = daemon.certificates();
    let tls = TlsFiles { ca: certs.join("ca.pem"), cert: certs.join("cert.pem"), key: certs.join("key.pem") };
    let hosts = Hosts::new(
        vec![
            HostSpec { url: LOCAL.into(), runs: 1, builds: 1, tls: None },
            HostSpec { url: tcp.clone(), runs: 1, builds: 1, tls: Some(tls) },
        ],
        None,
    );
    assert!(hosts.connect_all().await.unwrap().is_empty(), "the TLS host answers");
    // Two runs at once, one slot on each host: one of them goes over TLS, with the base image
    // streamed there first.
    let spec = RunSpec::new("curate/base:bookworm", &["python3", "-c", "print('over tls')"]);
    let (a, b) = tokio::join!(hosts.run(&spec), hosts.run(&spec));
    for run in [a.unwrap(), b.unwrap()] {
        assert_eq!(run.exit_code, Some(0), "{}", run.output);
        assert!(run.output.contains("over tls"));
    }
    let counts = hosts.counts();
    assert_eq!((counts[0].runs, counts[1].runs), (1, 1), "{counts:?}");
    assert_eq!(counts[1].transfers, 1, "{counts:?}");

    // Without a client certificate the daemon does not answer, and the host is left out.
    let bare = Hosts::new(
        vec![
            HostSpec { url: LOCAL.into(), runs: 1, builds: 1, tls: None },
            HostSpec { url: tcp.clone(), runs: 1, builds: 1, tls: None },
        ],
        None,
    );
    let warnings = bare.connect_all().await.unwrap();
    assert!(warnings.len() == 1 && warnings[0].contains(&tcp), "{warnings:?}");
}

#[tokio::test]
async fn a_registry_that_asks_for_a_login_gets_the_one_from_the_environment() {
    if !docker_or_skip("the registry login test") {
        return;
    }
    let Some(second) = needed("a second Docker daemon", SecondDaemon::start()) else { return };
    let Some(registry) = needed("a registry with a login", Registry::start_with_login("curator", "s3cret"))
    else {
        return;
    };
    let hosts = |login| {
        Hosts::new(
            vec![
                HostSpec { url: LOCAL.into(), runs: 1, builds: 1, tls: None },
                HostSpec { url: second.url.clone(), runs: 1, builds: 1, tls: None },
            ],
            Some(registry.address.clone()),
        )
        .with_login(login)
    };
    let spec = RunSpec::new("curate/base:bookworm", &["true"]);

    // No login: the push is refused, and the run that needed it fails saying so.
    let anonymous = hosts(None);
    let (a, b) = tokio::join!(anonymous.run(&spec), anonymous.run(&spec));
    let refused = [a, b].into_iter().find_map(Result::err).expect("one run needed the registry");
    assert!(refused.to_string().contains("push"), "{refused}");

    // With the login: pushed, pulled, run.
    let login = bollard::auth::DockerCredentials {
        username: Some("curator".into()),
        password: Some("s3cret".into()),
        ..Default::default()
    };
    let logged_in = hosts(Some(login));
    let (a, b) = tokio::join!(logged_in.run(&spec), logged_in.run(&spec));
    assert_eq!((a.unwrap().exit_code, b.unwrap().exit_code), (Some(0), Some(0)));
    assert_eq!(logged_in.counts()[1].transfers, 1, "{:?}", logged_in.counts());
}
