//! `curate` builds executable code-review benchmarks the way the c-CRAB method does, as a workflow
//! engine: stages declared in YAML form a DAG over PR and comment items, every task is keyed by a hash
//! of its inputs, and outcomes are checkpointed in SQLite so a run can stop at any time and resume.
//!
//! The crate is the library; `src/main.rs` only parses arguments and calls [`commands`].

pub mod agent;
pub mod commands;
pub mod context;
pub mod curation;
pub mod dates;
pub mod environment;
pub mod exec;

pub mod export;
pub mod github;
pub mod llm;
pub mod record;
pub mod repo;
pub mod report;
pub mod review;
pub mod sources;
pub mod stages;
pub mod synthesis;
pub mod text;

pub use curate_engine as engine;
pub use curate_engine::errors;
