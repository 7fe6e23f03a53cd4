//! Where items come from. A source turns some dataset format into items; the engine only reads them.

use crate::errors::{Problem, SourceError};
use crate::item::Item;

/// What a source read: the good items, and each bad record it skipped.
#[derive(Debug, Default)]
pub struct Ingest {
    pub items: Vec<Item>,
    pub problems: Vec<Problem>,
}

pub trait Source: Send + Sync {
    /// Reads every item. Bad records are returned as problems, not errors; an error means the
    /// source could not be read at all.
    fn load(&self) -> Result<Ingest, SourceError>;
}
