//! Container start-to-result time of one sandboxed run in the base image: `cargo bench --bench
//! sandbox`. Prints the median and range over 7 runs of a trivial Python command (network off, all
//! limits on, container created, started, waited, logged and removed).

use std::time::Duration;

use curate::exec::sandbox::{RunSpec, run};

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let docker = match curate::exec::connect().await {
            Ok(d) => d,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let spec = RunSpec::new("curate/base:bookworm", &["python3", "-c", "print('ok')"]);
        let mut times: Vec<Duration> = Vec::new();
        for _ in 0..7 {
            let t0 = std::time::Instant::now();
            match run(&docker, &spec).await {
                Ok(r) if r.exit_code == Some(0) => times.push(t0.elapsed()),
                Ok(r) => panic!("the run failed: {r:?}"),
                Err(e) => {
                    eprintln!("skipped: {e}");
                    return;
                }
            }
        }
        times.sort();
        println!(
            "sandbox run, start to result: median {:.0} ms (min {:.0}, max {:.0}) over {} runs",
            times[times.len() / 2].as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3,
            times[times.len() - 1].as_secs_f64() * 1e3,
            times.len()
        );
    });
}
