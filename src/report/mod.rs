//! What people see: the funnel (Table 3), per-stage status, the stage graph, and live progress. All
//! of it reads plain data (task states, the pipeline); none of it runs anything.

pub mod chart;
pub mod evaluation;
pub mod explain;
pub mod funnel;
pub mod graph;
pub mod html;
pub mod progress;
pub mod relevance;
pub mod status;
