//! Everything that runs in Docker, through bollard: the daemon connection, making base images
//! without a registry, running untrusted code in a locked-down container, and spreading those runs
//! over several daemons ([`hosts`]). Stages use this module's types only, and test runs go through
//! the [`hosts::Executor`] trait, so another executor (later Kubernetes) fits behind them.
//! [`process`] is the one exception: process-group handling for the commands run on this machine.

pub mod bootstrap;
pub mod build;
pub mod docker;
pub mod hosts;
pub mod probe;
pub mod process;
pub mod sandbox;
pub mod testrun;

pub use docker::{ExecError, connect};
pub use sandbox::{RunResult, RunSpec};
