//! Everything that runs in Docker, through bollard: the daemon connection, making base images
//! without a registry, and running untrusted code in a locked-down container. Stages use this
//! module's types only, so another executor (a remote daemon, later Kubernetes) fits behind them.
//! [`host`] is the one exception: process-group handling for the commands run on this machine.

pub mod bootstrap;
pub mod build;
pub mod docker;
pub mod host;
pub mod sandbox;
pub mod testrun;

pub use docker::{ExecError, connect};
pub use sandbox::{RunResult, RunSpec};
