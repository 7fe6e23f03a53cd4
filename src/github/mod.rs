//! Collecting merged, review-commented pull requests from GitHub's GraphQL API (github.com or an
//! Enterprise server): [`collect`] pages through a plan's repositories and window with a
//! [`Client`] that stores every answer, so a collection resumes where it stopped and replays
//! offline; [`instances`] turns what it kept into the SWE-CARE records the `swe-care` source reads,
//! with the diffs from the repositories' mirrors. The `github` source and `curate collect` are
//! built on these.

mod client;
mod collect;
mod error;
mod instance;

pub use crate::dates::Date;
pub use client::{Client, Counts, Notify, Settings};
pub use collect::{Filters, MergedPr, Plan, Progress, collect};
pub use error::GithubError;
pub use instance::{Skipped, instances};
