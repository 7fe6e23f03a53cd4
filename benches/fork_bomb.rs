//! How the host fares while a sandboxed test runs a fork bomb: `cargo bench --bench fork_bomb`.
//!
//! For each pair of limits (process count, CPUs) a container runs a fork bomb that never stops
//! forking (a refused fork is retried at once) for 20 s, while this process measures the host every 100 ms:
//! how long starting `/bin/true` takes, how late a 10 ms sleep wakes up, and the load average.
//! A first row without any container is the baseline. Needs the base image (`curate images
//! bootstrap`).

use std::time::{Duration, Instant};

use curate::exec::sandbox::{RunSpec, run};

const IMAGE: &str = "curate/base:bookworm";
const SECONDS: u64 = 20;

/// Forks without end: every child forks too, and a refused fork is tried again at once, so every
/// process the limit allows spins.
const BOMB: &str = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n";

#[derive(Default)]
struct Samples {
    spawn: Vec<Duration>,
    late: Vec<Duration>,
    load: Vec<f64>,
}

fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|l| l.parse().ok()))
        .unwrap_or(f64::NAN)
}

/// Samples the host until `until`.
fn measure(until: Instant) -> Samples {
    let mut s = Samples::default();
    while Instant::now() < until {
        let t0 = Instant::now();
        let _ = std::process::Command::new("/bin/true").status();
        s.spawn.push(t0.elapsed());
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_millis(10));
        s.late.push(t0.elapsed().saturating_sub(Duration::from_millis(10)));
        s.load.push(load_average());
        std::thread::sleep(Duration::from_millis(90));
    }
    s
}

fn quantile(values: &mut [Duration], q: f64) -> f64 {
    values.sort();
    let i = ((values.len() - 1) as f64 * q).round() as usize;
    values[i].as_secs_f64() * 1e3
}

fn print(label: &str, mut s: Samples) {
    let load = s.load.iter().cloned().fold(0.0, f64::max);
    println!(
        "{label:<28} spawn p50 {:>6.1} ms  p99 {:>7.1} ms  max {:>7.1} ms | sleep late p99 {:>6.1} ms  max {:>6.1} ms | load max {load:>6.1}",
        quantile(&mut s.spawn, 0.5),
        quantile(&mut s.spawn, 0.99),
        quantile(&mut s.spawn, 1.0),
        quantile(&mut s.late, 0.99),
        quantile(&mut s.late, 1.0),
    );
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let docker = match runtime.block_on(curate::exec::connect()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    print("no container (baseline)", measure(Instant::now() + Duration::from_secs(10)));
    for (pids, cpus) in [(256, 1.0), (128, 1.0), (64, 1.0), (64, 0.5)] {
        let mut spec = RunSpec::new(IMAGE, &["python3", "-c", BOMB]);
        spec.pids = pids;
        spec.cpus = cpus;
        spec.timeout = Duration::from_secs(SECONDS);
        let bomb = runtime.spawn({
            let docker = docker.clone();
            async move { run(&docker, &spec).await }
        });
        // Give the container a moment to start and fill its process table.
        std::thread::sleep(Duration::from_secs(2));
        let samples = measure(Instant::now() + Duration::from_secs(SECONDS - 4));
        match runtime.block_on(bomb) {
            Ok(Ok(r)) if r.timed_out => {}
            Ok(Ok(r)) => eprintln!("note: the bomb stopped early: {:?}", r.exit_code),
            Ok(Err(e)) => {
                eprintln!("skipped: {e}");
                return;
            }
            Err(e) => panic!("{e}"),
        }
        print(&format!("bomb, pids {pids}, cpus {cpus}"), samples);
    }
}
