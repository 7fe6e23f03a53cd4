//! What each host did in a run, as plain data: printed at the end of `curate run`, kept in the
//! state directory, and read back by `curate status` without any daemon.

use serde::{Deserialize, Serialize};

/// Where `curate run` keeps the last run's [`HostCounts`] in the state directory.
pub const COUNTS_FILE: &str = "hosts.json";

/// What one host did in a run: for `curate status` and the end of `curate run`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct HostCounts {
    pub url: String,
    /// Run slots.
    pub slots: usize,
    /// Container runs finished here.
    pub runs: u64,
    /// Images built here.
    #[serde(default)]
    pub builds: u64,
    /// Runs cut off by this host failing, and started again elsewhere.
    pub lost: u64,
    /// Images brought to this host (streamed, or pulled from the registry), and the seconds that took.
    pub transfers: u64,
    pub transfer_secs: f64,
    /// Why the host was marked down, if it was.
    pub down: Option<String>,
}

/// One line per host: its slots, runs, images streamed to it, and whether it went down.
pub fn describe(counts: &[HostCounts]) -> Vec<String> {
    counts
        .iter()
        .map(|c| {
            let mut line = format!(
                "{}: {} slot(s), {} run(s), {} image(s) built, {} brought in ({:.1} s)",
                c.url, c.slots, c.runs, c.builds, c.transfers, c.transfer_secs
            );
            if c.lost > 0 {
                line.push_str(&format!(", {} run(s) cut off and run again elsewhere", c.lost));
            }
            if let Some(why) = &c.down {
                line.push_str(&format!("; DOWN: {why}"));
            }
            line
        })
        .collect()
}
