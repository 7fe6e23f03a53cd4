//! Live progress of a run: indicatif bars per stage on a terminal, plain log lines otherwise.

use std::io::Write;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::engine::events::{Event, Reporter};
use crate::engine::flow::TaskState;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Bars on a terminal, plain lines otherwise.
    Auto,
    Bars,
    Plain,
    /// Nothing but errors and the final summary.
    Quiet,
}

pub fn reporter(mode: Mode) -> Box<dyn Reporter> {
    use std::io::IsTerminal;
    let mode = match mode {
        Mode::Auto if std::io::stdout().is_terminal() && std::io::stderr().is_terminal() => Mode::Bars,
        Mode::Auto => Mode::Plain,
        m => m,
    };
    match mode {
        Mode::Bars => Box::new(Bars::default()),
        _ => Box::new(Plain::new(mode == Mode::Quiet)),
    }
}

#[derive(Debug, Default, Clone)]
struct Counts {
    id: String,
    total: usize,
    kept: usize,
    rejected: usize,
    errored: usize,
    skipped: usize,
    cached: usize,
}

impl Counts {
    fn done(&self) -> usize {
        self.kept + self.rejected + self.errored + self.skipped
    }

    fn add(&mut self, state: &TaskState, cached: bool) {
        match state {
            TaskState::Kept { .. } => self.kept += 1,
            TaskState::Rejected { .. } => self.rejected += 1,
            TaskState::Errored { .. } => self.errored += 1,
            _ => self.skipped += 1,
        }
        self.cached += usize::from(cached);
    }

    fn summary(&self) -> String {
        format!(
            "kept {} · rejected {} · errored {} · skipped {} · from store {}",
            self.kept, self.rejected, self.errored, self.skipped, self.cached
        )
    }
}

fn counts_of(stages: &[crate::engine::events::StageInfo]) -> Vec<Counts> {
    stages.iter().map(|s| Counts { id: s.id.to_string(), total: s.total, ..Counts::default() }).collect()
}

fn short(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > 160 {
        format!("{}…", line.chars().take(160).collect::<String>())
    } else {
        line.to_string()
    }
}

#[derive(Default)]
struct Bars {
    multi: Option<MultiProgress>,
    /// The bars, once drawn, for lines printed above them from other threads.
    shared: std::sync::Arc<std::sync::Mutex<Option<MultiProgress>>>,
    bars: Vec<ProgressBar>,
    counts: Vec<Counts>,
}

impl Reporter for Bars {
    fn notice(&self) -> crate::engine::events::Notice {
        let shared = self.shared.clone();
        std::sync::Arc::new(move |line| match shared.lock().ok().and_then(|m| m.clone()) {
            Some(multi) => {
                let _ = multi.println(line);
            }
            None => eprintln!("{line}"),
        })
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Plan { stages } => {
                let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10));
                let style = ProgressStyle::with_template(
                    "{prefix:<18.bold} [{bar:28.cyan/blue}] {pos:>6}/{len:<6} {rate:>8} eta {eta:<4} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key("rate", |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0}/s", state.per_sec());
                })
                .progress_chars("=> ");
                self.counts = counts_of(&stages);
                self.bars = stages
                    .iter()
                    .map(|s| {
                        let bar = multi.add(ProgressBar::new(s.total as u64));
                        bar.set_style(style.clone());
                        bar.set_prefix(s.id.to_string());
                        bar
                    })
                    .collect();
                if let Ok(mut shared) = self.shared.lock() {
                    *shared = Some(multi.clone());
                }
                self.multi = Some(multi);
            }
            Event::Settled { stage, item, state, cached } => {
                let (Some(c), Some(bar)) = (self.counts.get_mut(stage), self.bars.get(stage)) else { return };
                c.add(state, cached);
                if let TaskState::Errored { error, .. } = state {
                    bar.println(format!("error: {} {item}: {}", c.id, short(error)));
                }
                bar.set_position(c.done() as u64);
                bar.set_message(format!("✓{} ✗{} !{} ↷{}", c.kept, c.rejected, c.errored, c.skipped));
            }
            Event::Stopping { in_flight } => {
                if let Some(m) = &self.multi {
                    let _ = m.println(format!(
                        "stopping: waiting for {in_flight} running task(s) to finish; press Ctrl-C again to cut them off"
                    ));
                }
            }
            Event::Aborting { in_flight } => {
                if let Some(m) = &self.multi {
                    let _ = m.println(format!(
                        "cutting off {in_flight} running task(s); they will run again next time"
                    ));
                }
            }
            Event::Finished => {
                for bar in &self.bars {
                    bar.finish();
                }
            }
        }
    }
}

struct Plain {
    quiet: bool,
    counts: Vec<Counts>,
    printed: Vec<usize>,
    started: Instant,
    last: Instant,
}

impl Plain {
    fn new(quiet: bool) -> Plain {
        Plain {
            quiet,
            counts: Vec::new(),
            printed: Vec::new(),
            started: Instant::now(),
            last: Instant::now(),
        }
    }

    fn print_changed(&mut self) {
        let mut out = std::io::stdout().lock();
        for (c, printed) in self.counts.iter().zip(self.printed.iter_mut()) {
            if c.done() != *printed {
                *printed = c.done();
                let _ = writeln!(
                    out,
                    "[{:>7.1}s] {}: {}/{} done ({})",
                    self.started.elapsed().as_secs_f64(),
                    c.id,
                    c.done(),
                    c.total,
                    c.summary()
                );
            }
        }
    }
}

impl Reporter for Plain {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Plan { stages } => {
                self.counts = counts_of(&stages);
                self.printed = vec![usize::MAX; self.counts.len()];
            }
            Event::Settled { stage, item, state, cached } => {
                let Some(c) = self.counts.get_mut(stage) else { return };
                c.add(state, cached);
                if let TaskState::Errored { error, .. } = state {
                    eprintln!("error: {} {item}: {}", c.id, short(error));
                }
                if !self.quiet && self.last.elapsed() >= Duration::from_secs(2) {
                    self.last = Instant::now();
                    self.print_changed();
                }
            }
            Event::Stopping { in_flight } => eprintln!(
                "stopping: waiting for {in_flight} running task(s) to finish; send the signal again to cut them off"
            ),
            Event::Aborting { in_flight } => {
                eprintln!("cutting off {in_flight} running task(s); they will run again next time")
            }
            Event::Finished => {
                if !self.quiet {
                    self.print_changed();
                }
            }
        }
    }
}
