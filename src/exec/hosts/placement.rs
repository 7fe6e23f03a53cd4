//! Each host's state (its connection, slots, the images it holds, its counts) and where work goes:
//! a run to an up host that holds its image while that host has a free slot, else to the up host
//! with the most free slots; a build to the first host, or, with a registry, to the host its
//! repository's builds went to, else to the one with the most free build slots.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bollard::Docker;
use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore};

use super::{HostCounts, HostSpec, Hosts, TlsFiles};
use crate::exec::docker::{ExecError, connect_tls, connect_to};

pub(super) struct Host {
    pub(super) url: String,
    builds: Arc<Semaphore>,
    tls: Option<TlsFiles>,
    pub(super) docker: OnceCell<Docker>,
    runs: Arc<Semaphore>,
    pub(super) down: AtomicBool,
    /// Images known to be here.
    images: Mutex<HashSet<String>>,
    /// One transfer of an image to this host at a time; later askers wait for it.
    pub(super) transfers: tokio::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    pub(super) counts: Mutex<HostCounts>,
}

impl Host {
    pub(super) fn new(s: HostSpec) -> Host {
        Host {
            counts: Mutex::new(HostCounts { url: s.url.clone(), slots: s.runs, ..HostCounts::default() }),
            url: s.url,
            builds: Arc::new(Semaphore::new(s.builds.clamp(1, Semaphore::MAX_PERMITS))),
            tls: s.tls,
            docker: OnceCell::new(),
            runs: Arc::new(Semaphore::new(s.runs.min(Semaphore::MAX_PERMITS))),
            down: AtomicBool::new(false),
            images: Mutex::new(HashSet::new()),
            transfers: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    pub(super) async fn docker(&self) -> Result<Docker, ExecError> {
        match &self.tls {
            None => self.docker.get_or_try_init(|| connect_to(&self.url)).await.cloned(),
            Some(tls) => self.docker.get_or_try_init(|| connect_tls(&self.url, tls)).await.cloned(),
        }
    }

    pub(super) fn holds(&self, image: &str) -> bool {
        self.images.lock().is_ok_and(|i| i.contains(image))
    }

    pub(super) fn note_image(&self, image: &str) {
        if let Ok(mut i) = self.images.lock() {
            i.insert(image.to_string());
        }
    }

    /// `image` is here now, brought from elsewhere in the time since `t0`.
    pub(super) fn brought(&self, image: &str, t0: Instant) {
        self.note_image(image);
        self.count(|c| {
            c.transfers += 1;
            c.transfer_secs += t0.elapsed().as_secs_f64();
        });
    }

    pub(super) fn count(&self, f: impl FnOnce(&mut HostCounts)) {
        if let Ok(mut c) = self.counts.lock() {
            f(&mut c);
        }
    }
}

/// A run slot on a host; the waiting runs are told when it frees.
pub(super) struct Slot<'a> {
    _permit: OwnedSemaphorePermit,
    hosts: &'a Hosts,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.hosts.changed.notify_waiters();
    }
}

impl Hosts {
    pub(super) fn up(&self) -> impl Iterator<Item = (usize, &Host)> {
        self.hosts.iter().enumerate().filter(|(_, h)| !h.down.load(Ordering::SeqCst))
    }

    /// A run slot for `image`: on an up host that holds it if one has a free slot, else on the up
    /// host with the most free slots; waits while every slot is taken.
    pub(super) async fn place(&self, image: &str) -> Result<(usize, Slot<'_>), ExecError> {
        loop {
            let changed = self.changed.notified();
            let mut order: Vec<(usize, &Host)> = self.up().collect();
            if order.is_empty() {
                return Err(self.all_down());
            }
            order.sort_by_key(|(i, h)| (!h.holds(image), std::cmp::Reverse(h.runs.available_permits()), *i));
            for (i, host) in order {
                if let Ok(permit) = host.runs.clone().try_acquire_owned() {
                    return Ok((i, Slot { _permit: permit, hosts: self }));
                }
            }
            changed.await;
        }
    }

    /// The host and build slot of [`Self::build_place`] (of the first host, with `home`).
    pub(super) async fn build_slot(&self, repo: &str, home: bool) -> Result<(usize, Slot<'_>), ExecError> {
        loop {
            let changed = self.changed.notified();
            let candidates: Vec<usize> = if self.registry.is_none() || home {
                vec![0]
            } else {
                let given = self.repos.lock().ok().and_then(|r| r.get(repo).copied());
                let mut up: Vec<(usize, &Host)> = self.up().collect();
                up.sort_by_key(|(i, h)| {
                    (Some(*i) != given, std::cmp::Reverse(h.builds.available_permits()), *i)
                });
                up.into_iter().map(|(i, _)| i).collect()
            };
            if candidates.is_empty() {
                return Err(self.all_down());
            }
            // The repository waits for its own host while that host is up.
            let first = candidates[0];
            let given = self.repos.lock().ok().and_then(|r| r.get(repo).copied());
            let tries = if given == Some(first) { &candidates[..1] } else { &candidates[..] };
            for &i in tries {
                if let Ok(permit) = self.hosts[i].builds.clone().try_acquire_owned() {
                    if let Ok(mut r) = self.repos.lock() {
                        r.insert(repo.to_string(), i);
                    }
                    return Ok((i, Slot { _permit: permit, hosts: self }));
                }
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::exec::hosts::two;

    #[tokio::test]
    async fn a_run_goes_where_its_image_is_while_that_host_has_room_then_to_the_freest() {
        let hosts = two(2);
        hosts.hosts[1].note_image("img");
        let (first, _a) = hosts.place("img").await.unwrap();
        let (second, _b) = hosts.place("img").await.unwrap();
        assert_eq!((first, second), (1, 1), "both slots of the host that holds the image");
        let (third, _c) = hosts.place("img").await.unwrap();
        assert_eq!(third, 0, "then the other host");
        let (other, _d) = hosts.place("another").await.unwrap();
        assert_eq!(other, 0);
        // Every slot taken: a fifth run waits for one to free.
        let waiting = hosts.place("img");
        tokio::pin!(waiting);
        assert!(tokio::time::timeout(Duration::from_millis(50), &mut waiting).await.is_err());
        drop(_a);
        let (freed, _e) = tokio::time::timeout(Duration::from_secs(1), waiting).await.unwrap().unwrap();
        assert_eq!(freed, 1);
    }

    #[tokio::test]
    async fn builds_stay_home_without_a_registry_and_spread_by_repository_with_one() {
        let home_only = two(1);
        let (a, _a) = home_only.build_slot("o/a", false).await.unwrap();
        assert_eq!(a, 0);
        let waiting = home_only.build_slot("o/b", false);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut waiting).await.is_err(),
            "waits for home"
        );

        let spread = Hosts::new(
            two(1)
                .hosts
                .into_iter()
                .map(|h| HostSpec { url: h.url, runs: 1, builds: 1, tls: None })
                .collect(),
            Some("127.0.0.1:5000".into()),
        );
        let (a, slot_a) = spread.build_slot("o/a", false).await.unwrap();
        let (b, slot_b) = spread.build_slot("o/b", false).await.unwrap();
        assert_eq!((a, b), (0, 1), "the second repository goes to the free host");
        // A's next build waits for A's host rather than taking another.
        let again = spread.build_slot("o/a", false);
        tokio::pin!(again);
        assert!(tokio::time::timeout(Duration::from_millis(50), &mut again).await.is_err());
        drop(slot_a);
        let (a2, _) = tokio::time::timeout(Duration::from_secs(1), again).await.unwrap().unwrap();
        assert_eq!(a2, 0);
        // Its host down, the repository moves.
        drop(slot_b);
        spread.mark_down(0, "gone");
        let (moved, _) = tokio::time::timeout(Duration::from_secs(1), spread.build_slot("o/a", false))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(moved, 1);
    }
}
