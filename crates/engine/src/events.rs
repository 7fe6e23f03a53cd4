//! What the scheduler tells the outside world. It never draws progress bars itself: a [`Reporter`]
//! turns these into whatever the person at the terminal (or the log) should see.

use crate::flow::TaskState;

pub struct StageInfo<'a> {
    pub id: &'a str,
    pub title: &'a str,
    /// Tasks the stage has in this dataset (some may be skipped).
    pub total: usize,
}

pub enum Event<'a> {
    /// Before any task: the stages in pipeline order.
    Plan {
        stages: Vec<StageInfo<'a>>,
    },
    /// A task has a result, taken from the store (`cached`) or just computed, or will not run.
    /// `stage` is an index into the `Plan` list.
    Settled {
        stage: usize,
        item: &'a str,
        state: &'a TaskState,
        cached: bool,
    },
    /// The user asked to stop: no new tasks start, running ones finish.
    Stopping {
        in_flight: usize,
    },
    /// The user asked again: running tasks are cut off and recorded as interrupted.
    Aborting {
        in_flight: usize,
    },
    Finished,
}

/// Prints one line for the person at the terminal from outside the scheduler (a Docker host that
/// stopped answering, say), without breaking what the reporter draws.
pub type Notice = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

pub trait Reporter {
    fn event(&mut self, event: Event<'_>);

    /// Where lines from outside the scheduler go; by default, standard error.
    fn notice(&self) -> Notice {
        std::sync::Arc::new(|line| eprintln!("{line}"))
    }
}

/// Discards every event.
pub struct Silent;

impl Reporter for Silent {
    fn event(&mut self, _event: Event<'_>) {}
}
