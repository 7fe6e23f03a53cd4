//! A workflow engine for pipelines over two-level items (pull requests and their review comments):
//! stages declared in YAML form a DAG, every task is keyed by a hash of its inputs, and outcomes
//! are checkpointed in SQLite so a run can stop at any time and resume. It knows nothing of what
//! its stages do: the application plugs in its source and stage kinds through [`plugins::Plugins`].
//!
//! Each file holds one concept:
//!
//! - [`spec`]: the pipeline YAML, parsed and checked, with errors located by [`locate`];
//! - [`pipeline`]: a checked pipeline: stages built through [`plugins`], `needs` and contracts resolved;
//! - [`graph`]: the stage DAG (petgraph): order, cycles, ancestors;
//! - [`item`]: PR and comment items, and the three outcomes of a task;
//! - [`stage`] and [`source`]: what a stage and a source are to the engine;
//! - [`key`]: content hashing of tasks;
//! - [`flow`]: which upstream tasks a task waits on and what it receives from them;
//! - [`store`] and [`lock`]: the SQLite checkpoint store in a state directory, one writer at a time;
//!   [`repair`] checks it and rebuilds a damaged one from the rows it can still read;
//! - [`scheduler`]: runs ready tasks under per-resource limits and emits [`events`];
//! - [`walk`]: the same flow, read-only over the store, for `status` and `report`;
//! - [`errors`]: every error the engine reports, each naming the file, key or item;
//! - [`files`]: the files a pipeline names read only when regular, and only up to a size.

pub mod errors;
pub mod events;
pub mod files;
pub mod flow;
pub mod graph;
pub mod item;
pub mod key;
pub mod locate;
pub mod lock;
pub mod pipeline;
pub mod plugins;
pub mod repair;
pub mod resources;
pub mod scheduler;
pub mod source;
pub mod spec;
pub mod stage;
pub mod store;
pub mod walk;

#[cfg(test)]
mod testkit;
