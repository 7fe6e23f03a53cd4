//! Repository access through git2: a cache of bare mirrors, reading files and commits from them, and
//! aligning review comments to the code they were made on.

pub mod align;
pub mod hunks;
pub mod mirror;
pub mod workspace;

pub use mirror::{AcrossFix, AcrossFixError, Mirror, Mirrors, PathFate, RepoError, working_files};
