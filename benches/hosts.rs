//! Container runs spread over Docker hosts: `cargo bench --bench hosts`, with a second daemon's
//! URL in `CURATE_BENCH_SECOND_HOST` (`bash bench/hosts.sh` starts one and sets it).
//!
//! 1. Placement overhead: runs of a trivial command one after another, straight through bollard and
//!    through the one-host executor; the difference per run is what placement costs.
//! 2. Spread: `CURATE_BENCH_RUNS` (default 400) runs of a 1-second command, all submitted at once,
//!    on one host with 2 slots and on two hosts with 2 slots each; the wall times and their ratio.

use std::time::{Duration, Instant};

use curate::exec::hosts::{Executor, HostSpec, Hosts};
use curate::exec::sandbox::{RunSpec, run};

const IMAGE: &str = "curate/base:bookworm";
const LOCAL: &str = "unix:///var/run/docker.sock";

fn spec(command: &[&str]) -> RunSpec {
    let mut spec = RunSpec::new(IMAGE, command);
    spec.timeout = Duration::from_secs(60);
    spec
}

async fn spread(hosts: &Hosts, runs: usize) -> Duration {
    let one = spec(&["sleep", "1"]);
    let t0 = Instant::now();
    let all = (0..runs).map(|_| hosts.run(&one));
    for result in futures_util::future::join_all(all).await {
        let r = result.expect("a run");
        assert_eq!(r.exit_code, Some(0), "{}", r.output);
    }
    t0.elapsed()
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let runs: usize = std::env::var("CURATE_BENCH_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(400);
    let second = std::env::var("CURATE_BENCH_SECOND_HOST").ok();
    runtime.block_on(async {
        let docker = match curate::exec::connect().await {
            Ok(d) => d,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        // 1. Placement overhead, one run at a time.
        let trivial = spec(&["true"]);
        let one = Hosts::new(vec![HostSpec { url: LOCAL.into(), runs: 2, builds: 1, tls: None }], None);
        let (mut direct, mut placed) = (Duration::ZERO, Duration::ZERO);
        let n = 30;
        for _ in 0..n {
            let t0 = Instant::now();
            run(&docker, &trivial).await.expect("a direct run");
            direct += t0.elapsed();
            let t0 = Instant::now();
            one.run(&trivial).await.expect("a placed run");
            placed += t0.elapsed();
        }
        println!(
            "one run after another ({n} each): straight {:.0} ms a run, through the executor {:.0} ms a run; placement costs {:+.1} ms a run",
            direct.as_secs_f64() * 1e3 / n as f64,
            placed.as_secs_f64() * 1e3 / n as f64,
            (placed.as_secs_f64() - direct.as_secs_f64()) * 1e3 / n as f64
        );

        // 2. Spread over one host and over two.
        let Some(second) = second else {
            println!("spread: skipped (no CURATE_BENCH_SECOND_HOST; bash bench/hosts.sh starts a second daemon)");
            return;
        };
        let two = Hosts::new(
            vec![HostSpec { url: LOCAL.into(), runs: 2, builds: 1, tls: None }, HostSpec { url: second.clone(), runs: 2, builds: 1, tls: None }],
            None,
        );
        // The base image streamed to the second host before the clock starts.
        let warm = spread(&two, 4).await;
        let counts = two.counts();
        println!("warm-up: {:.1} s, {} image(s) streamed in {:.1} s", warm.as_secs_f64(), counts[1].transfers, counts[1].transfer_secs);
        let t1 = spread(&one, runs).await;
        let t2 = spread(&two, runs).await;
        let counts = two.counts();
        println!(
            "{runs} runs of a 1-second command: one host (2 slots) {:.1} s, two hosts (2 slots each) {:.1} s; ratio {:.2} (runs per host: {} / {})",
            t1.as_secs_f64(),
            t2.as_secs_f64(),
            t2.as_secs_f64() / t1.as_secs_f64(),
            counts[0].runs,
            counts[1].runs
        );
    });
}
