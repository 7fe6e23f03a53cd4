//! The integration tests, one binary with a module per area: each runs the real `curate` binary
//! on real inputs (git, SQLite, Docker), with a scripted model or GitHub server where a test needs
//! one. One binary links once, where fifteen linked the library fifteen times.

mod common;

mod docker;
mod engine;
mod environment;
mod extending;
mod filter;
mod github;
mod hosts;
mod llm;
mod main_job;
mod model_server;
mod probe;
mod sample;
mod synthesis;
mod testrun;
mod validation;
