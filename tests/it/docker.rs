//! The sandbox against the real Docker daemon and the base image made by `curate images bootstrap`:
//! exit codes and output, files in, the timeout, network off, memory and process limits, a clean
//! environment, and containers always removed.
//!
//! With no daemon these tests skip loudly; with CURATE_REQUIRE_DOCKER=1 (CI) they fail instead.

use std::time::Duration;

use bollard::Docker;
use curate::exec::sandbox::{RunSpec, run};

const BASE: &str = "curate/base:bookworm";

/// The daemon, or `None` after the one skip helper has said so (and listed the test for
/// scripts/test); under CURATE_REQUIRE_DOCKER=1 a missing daemon fails instead.
async fn docker(what: &str) -> Option<Docker> {
    if !crate::common::docker_or_skip(what) {
        return None;
    }
    let d = curate::exec::connect().await.expect("`docker info` answers, but the API does not");
    assert!(
        curate::exec::docker::image_exists(&d, BASE).await.unwrap(),
        "{BASE} is missing: run `curate images bootstrap` (scripts/test does)"
    );
    Some(d)
}

async fn gone(docker: &Docker, name: &str) -> bool {
    docker.inspect_container(name, None::<bollard::query_parameters::InspectContainerOptions>).await.is_err()
}

#[tokio::test]
async fn exit_codes_output_and_files() {
    let Some(d) = docker("the sandbox test: exit codes output and files").await else { return };
    let mut spec = RunSpec::new(BASE, &["python3", "/work/check.py"]);
    spec.files
        .push(("/work/check.py".into(), b"import sys\nprint('hello from', sys.version_info[:2])\n".to_vec()));
    let ok = run(&d, &spec).await.unwrap();
    assert_eq!(ok.exit_code, Some(0), "{}", ok.output);
    assert!(ok.output.contains("hello from (3, 11)"), "{}", ok.output);
    assert!(gone(&d, &ok.container).await, "container removed");

    let failing =
        run(&d, &RunSpec::new(BASE, &["python3", "-c", "assert 1 == 2, 'numbers differ'"])).await.unwrap();
    assert_eq!(failing.exit_code, Some(1));
    assert!(failing.output.contains("AssertionError: numbers differ"), "{}", failing.output);
    assert!(gone(&d, &failing.container).await);
}

/// A run's files come in on its standard input: more of them than a pipe holds arrive whole,
/// before the command starts, and a file that cannot be written is the run's error, not the
/// command's exit code.
#[tokio::test]
async fn files_larger_than_a_pipe_arrive_whole_and_a_failed_unpack_is_an_error() {
    let Some(d) = docker("the sandbox test: large files arrive whole").await else { return };
    let big: Vec<u8> = (0..6u32 << 20).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let check = "import hashlib\nprint(hashlib.sha256(open('/data/big.bin','rb').read()).hexdigest())\n\
                 print(open('/data/deep/a/b/small.txt').read())\n";
    let mut spec = RunSpec::new(BASE, &["python3", "/data/check.py"]);
    spec.files.push(("/data/big.bin".into(), big.clone()));
    spec.files.push(("/data/deep/a/b/small.txt".into(), b"small".to_vec()));
    spec.files.push(("/data/check.py".into(), check.as_bytes().to_vec()));
    let r = run(&d, &spec).await.unwrap();
    assert_eq!(r.exit_code, Some(0), "{}", r.output);
    let want = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&big))
    };
    assert!(r.output.contains(&want) && r.output.contains("small"), "{}", r.output);

    // /proc is not a place a file can be made: the run errs and says so.
    let mut spec = RunSpec::new(BASE, &["true"]);
    spec.files.push(("/proc/curate-nope".into(), b"x".to_vec()));
    match run(&d, &spec).await {
        Err(e) => assert!(e.to_string().contains("did not unpack"), "{e}"),
        Ok(r) => panic!("a run whose files did not unpack ran: {:?} {}", r.exit_code, r.output),
    }
}

/// The storage driver has no quota: the writable layer is measured while a run goes on, and a run
/// that writes past its allowance is killed long before its time limit, while one that stays
/// under it (its own files not counted) runs to its end.
#[tokio::test]
async fn a_run_that_fills_the_disk_is_killed_and_says_so() {
    let Some(d) = docker("the sandbox test: a run that fills the disk is killed").await else { return };
    let writer = |mib: u32| {
        let mut spec = RunSpec::new(
            BASE,
            &[
                "sh",
                "-c",
                &format!(
                    "dd if=/dev/urandom of=/root/fill bs=1M count={mib} 2>/dev/null; sleep 4; echo done"
                ),
            ],
        );
        spec.timeout = Duration::from_secs(60);
        spec.disk_bytes = Some(64 << 20);
        // 40 MiB of its own files, which the allowance does not count.
        spec.files.push(("/work/own.bin".into(), vec![7u8; 40 << 20]));
        spec
    };
    let t0 = std::time::Instant::now();
    let filled = run(&d, &writer(400)).await.unwrap();
    assert!(filled.disk_full, "{:?} {}", filled.exit_code, filled.output);
    assert!(!filled.timed_out && filled.exit_code.is_none() && !filled.output.contains("done"));
    assert!(t0.elapsed() < Duration::from_secs(30), "killed at {:?}", t0.elapsed());
    assert!(gone(&d, &filled.container).await);

    let small = run(&d, &writer(16)).await.unwrap();
    assert!(!small.disk_full && small.exit_code == Some(0), "{}", small.output);
    assert!(small.output.contains("done"), "{}", small.output);
}

#[tokio::test]
async fn a_runaway_loop_is_killed_at_the_timeout() {
    let Some(d) = docker("the sandbox test: a runaway loop is killed at the timeout").await else { return };
    let mut spec = RunSpec::new(BASE, &["python3", "-c", "while True: pass"]);
    spec.timeout = Duration::from_secs(2);
    let r = run(&d, &spec).await.unwrap();
    assert!(r.timed_out);
    assert_eq!(r.exit_code, None);
    assert!(r.duration < Duration::from_secs(10), "{:?}", r.duration);
    assert!(gone(&d, &r.container).await);
}

#[tokio::test]
async fn the_network_is_off_and_no_credentials_leak_in() {
    let Some(d) = docker("the sandbox test: the network is off and no credentials leak in").await else {
        return;
    };
    let probe = "import socket\ntry:\n    socket.create_connection(('1.1.1.1', 53), 3)\n    print('CONNECTED')\nexcept OSError as e:\n    print('NO NETWORK', e)\nimport os\nprint(sorted(os.environ))\n";
    // Nothing of the test process's environment (keys, DOCKER_HOST, CARGO_*) may reach the container.
    let r = run(&d, &RunSpec::new(BASE, &["python3", "-c", probe])).await.unwrap();
    assert!(r.output.contains("NO NETWORK"), "{}", r.output);
    assert!(!r.output.contains("CONNECTED"));
    // Only what the sandbox sets, the image's own SSL_CERT_FILE, and HOME and HOSTNAME from Docker.
    assert!(
        r.output.contains("['HOME', 'HOSTNAME', 'LANG', 'PATH', 'PYTHONDONTWRITEBYTECODE', 'SSL_CERT_FILE']"),
        "unexpected environment: {}",
        r.output
    );
}

#[tokio::test]
async fn memory_and_process_limits_contain_a_hog_and_a_fork_bomb() {
    let Some(d) = docker("the sandbox test: memory and process limits contain a hog and a fork bomb").await
    else {
        return;
    };
    let mut hog = RunSpec::new(BASE, &["python3", "-c", "b = bytearray(10 * 1024**3); print('ALLOCATED')"]);
    hog.memory_bytes = 256 << 20;
    let r = run(&d, &hog).await.unwrap();
    assert!(!r.output.contains("ALLOCATED"), "{}", r.output);
    assert_ne!(r.exit_code, Some(0));
    assert!(r.oom_killed || r.output.contains("MemoryError"), "{r:?}");

    let bomb = "import os, time\nn = 0\nwhile True:\n    try:\n        os.fork(); n += 1\n    except OSError:\n        print('FORK REFUSED'); break\ntime.sleep(1)\n";
    let mut spec = RunSpec::new(BASE, &["python3", "-c", bomb]);
    spec.pids = 32;
    spec.timeout = Duration::from_secs(20);
    let r = run(&d, &spec).await.unwrap();
    assert!(r.output.contains("FORK REFUSED") || r.timed_out, "{}", r.output);
    assert!(gone(&d, &r.container).await);
}

/// A Unix socket in front of the daemon that passes every byte both ways until a request whose
/// bytes hold `freeze_at` goes by, and from then on passes nothing and answers nothing: a daemon
/// that froze in the middle of a run. `None` when the daemon is not on a Unix socket.
fn freezing_proxy(dir: &std::path::Path, freeze_at: &'static str) -> Option<std::path::PathBuf> {
    use std::io::{Read, Write};
    use std::os::unix::net::{UnixListener, UnixStream};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let upstream = curate::exec::docker::host().strip_prefix("unix://")?.to_string();
    let path = dir.join("frozen.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let frozen = Arc::new(AtomicBool::new(false));
    let pump = move |mut from: UnixStream, mut to: UnixStream, watch: bool, frozen: Arc<AtomicBool>| {
        let mut chunk = vec![0u8; 64 << 10];
        while let Ok(n) = from.read(&mut chunk) {
            if n == 0 {
                break;
            }
            if watch && String::from_utf8_lossy(&chunk[..n]).contains(freeze_at) {
                frozen.store(true, Ordering::SeqCst);
            }
            if !frozen.load(Ordering::SeqCst) && to.write_all(&chunk[..n]).is_err() {
                break;
            }
        }
    };
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let (Ok(client), Ok(server)) = (client, UnixStream::connect(&upstream)) else { continue };
            let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let (f1, f2) = (frozen.clone(), frozen.clone());
            std::thread::spawn(move || pump(client, server, true, f1));
            std::thread::spawn(move || pump(s2, c2, false, f2));
        }
    });
    Some(path)
}

#[tokio::test]
async fn a_daemon_that_freezes_mid_run_ends_the_run_within_its_call_limit() {
    let Some(d) = docker("the sandbox test: a daemon that freezes mid-run").await else { return };
    let dir = tempfile::tempdir().unwrap();
    let Some(socket) = freezing_proxy(dir.path(), "/wait") else {
        eprintln!("skipping the frozen-daemon test: DOCKER_HOST is not a Unix socket");
        return;
    };
    let frozen = curate::exec::docker::connect_to(&format!("unix://{}", socket.display())).await.unwrap();
    let marker = format!("frozen-daemon-{}", std::process::id());
    let mut spec = RunSpec::new(BASE, &["sh", "-c", &format!("sleep 600; echo {marker}")]);
    spec.timeout = Duration::from_secs(2);
    spec.call_limit = Duration::from_secs(3);
    // Without limits of its own on each call, the run waits on bollard's 120 s per call, and the
    // logs' stream for ever.
    let started = std::time::Instant::now();
    let ran = tokio::time::timeout(Duration::from_secs(60), run(&frozen, &spec)).await;
    let elapsed = started.elapsed();

    // What the frozen daemon kept: removed through the real one (it has stopped by its own limit,
    // or is killed here).
    let all = bollard::query_parameters::ListContainersOptionsBuilder::default().all(true).build();
    for c in d.list_containers(Some(all)).await.unwrap() {
        if c.command.as_deref().unwrap_or("").contains(&marker) {
            let force =
                bollard::query_parameters::RemoveContainerOptionsBuilder::default().force(true).build();
            let _ = d.remove_container(c.id.as_deref().unwrap_or(""), Some(force)).await;
        }
    }

    let ran = ran.unwrap_or_else(|_| panic!("the run still waited on the frozen daemon after {elapsed:?}"));
    let error = ran.expect_err("a run on a frozen daemon cannot succeed");
    assert!(
        matches!(error, curate::exec::docker::ExecError::Unresponsive { call: "kill container", secs: 3 }),
        "{error}"
    );
    assert!(error.to_string().contains("did not answer `kill container` within 3 s"), "{error}");
}
