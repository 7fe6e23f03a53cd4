//! The workflow engine. Each file holds one concept:
//!
//! - [`spec`]: the pipeline YAML, parsed and checked, with errors located by [`locate`];
//! - [`graph`]: the stage DAG (petgraph): order, cycles, ancestors;
//! - [`item`]: PR and comment items, and the three outcomes of a task;
//! - [`key`]: content hashing of tasks;
//! - [`flow`]: which upstream tasks a task waits on and what it receives from them;
//! - [`store`] and [`lock`]: the SQLite checkpoint store in a state directory, one writer at a time;
//! - [`scheduler`]: runs ready tasks under per-resource limits and emits [`events`];
//! - [`walk`]: the same flow, read-only over the store, for `status` and `report`.

pub mod events;
pub mod flow;
pub mod graph;
pub mod item;
pub mod key;
pub mod locate;
pub mod lock;
pub mod pipeline;
pub mod resources;
pub mod scheduler;
pub mod spec;
pub mod store;
pub mod walk;
