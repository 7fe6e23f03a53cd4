//! What happens when a host stops answering: it is marked down for the rest of the run (the runs
//! and builds waiting for a slot are woken to go elsewhere), and when every host is down, work
//! errors rather than waits.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Hosts;
use super::placement::Host;
use crate::exec::docker::ExecError;

impl Host {
    /// Whether the daemon answers a ping within a few seconds.
    pub(super) async fn answers(&self) -> bool {
        let Some(docker) = self.docker.get() else { return false };
        matches!(tokio::time::timeout(Duration::from_secs(5), docker.ping()).await, Ok(Ok(_)))
    }
}

impl Hosts {
    pub(super) fn mark_down(&self, i: usize, why: &str) {
        let host = &self.hosts[i];
        if !host.down.swap(true, Ordering::SeqCst) {
            self.tell(&format!(
                "Docker host {} stopped answering ({why}); its runs go to the other hosts",
                host.url
            ));
            host.count(|c| c.down = Some(why.to_string()));
        }
        self.changed.notify_waiters();
    }

    pub(super) fn all_down(&self) -> ExecError {
        ExecError::Unreachable {
            host: self.hosts.iter().map(|h| h.url.as_str()).collect::<Vec<_>>().join(", "),
            error: "every Docker host is down".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use crate::exec::hosts::two;

    #[test]
    fn a_host_that_goes_down_is_told_once_through_the_runs_notice() {
        let hosts = two(1);
        let told = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = told.clone();
        hosts.tell_through(Arc::new(move |line| sink.lock().unwrap().push(line.to_string())));
        hosts.mark_down(0, "gone");
        hosts.mark_down(0, "still gone");
        let told = told.lock().unwrap();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].contains("stopped answering (gone)"), "{}", told[0]);
    }

    #[tokio::test]
    async fn a_host_marked_down_gets_no_runs_and_with_none_up_a_run_errors() {
        let hosts = two(1);
        hosts.hosts[0].note_image("img");
        hosts.mark_down(0, "gone");
        let (i, slot) = hosts.place("img").await.unwrap();
        assert_eq!(i, 1);
        drop(slot);
        hosts.mark_down(1, "gone too");
        let err = hosts.place("img").await.err().unwrap().to_string();
        assert!(err.contains("every Docker host is down"), "{err}");
        assert_eq!(hosts.counts()[0].down.as_deref(), Some("gone"));
    }
}
