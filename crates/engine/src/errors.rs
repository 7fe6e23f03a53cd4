//! The library's error types. Each message names the file, the item or the key, and where it helps,
//! the way out.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::locate::{Position, locate, parse_path};

/// A pipeline file that cannot be used: unreadable, malformed, or inconsistent.
#[derive(Debug, thiserror::Error)]
pub struct SpecError {
    pub file: PathBuf,
    pub position: Option<Position>,
    /// The key path the error is about, e.g. `stages[1].needs`.
    pub key: Option<String>,
    pub message: String,
}

impl SpecError {
    /// An error about `key` (a path such as `stages[1].needs`) of the pipeline `text` read from
    /// `file`, placed at the key's line and column.
    pub fn at(file: &std::path::Path, text: &str, key: String, message: String) -> SpecError {
        SpecError {
            file: file.to_path_buf(),
            position: locate(text, &parse_path(&key)),
            key: Some(key),
            message,
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(p) = self.position {
            write!(f, ":{}:{}", p.line, p.column)?;
        }
        write!(f, ": ")?;
        if let Some(key) = &self.key {
            write!(f, "`{key}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// Text refused before it is parsed as a pipeline: the message of a [`SpecError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("the pipeline file is {bytes} bytes, more than a pipeline's {limit}; is it the right file?")]
    TooLarge { bytes: usize, limit: usize },
    #[error(
        "the pipeline is nested more than {limit} levels deep (brackets or indentation); a pipeline needs a handful"
    )]
    TooDeep { limit: usize },
}

/// A stage's or source's own configuration was rejected by its kind. `key` is relative to the stage.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct ConfigError {
    pub key: Option<String>,
    pub message: String,
}

impl ConfigError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError { key: Some(key.into()), message: message.into() }
    }
}

/// One bad record in a source file. Counted and skipped, or fatal with `--strict`.
#[derive(Debug, Clone)]
pub struct Problem {
    pub file: PathBuf,
    pub line: usize,
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: ", self.file.display(), self.line)?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.message)
    }
}

/// A source that cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("cannot read source {file}: {error}")]
    Read { file: PathBuf, error: std::io::Error },
    #[error("{} bad record(s) in the source and --strict is set; first: {first}", .count)]
    Strict { count: usize, first: Problem },
    /// A source that collects its records (from an API) could not.
    #[error("the `{kind}` source: {error}")]
    Collect { kind: &'static str, error: Box<dyn std::error::Error + Send + Sync> },
}

/// The checkpoint store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create state directory {dir}: {error}; choose a writable one with --state DIR")]
    CreateDir { dir: PathBuf, error: std::io::Error },
    #[error("state database {db}: {error}")]
    Sqlite { db: PathBuf, error: rusqlite::Error },
    #[error("state database {db} was written by a newer curate (schema {found}, this build knows {known})")]
    Schema { db: PathBuf, found: i64, known: i64 },
    #[error("the store's writer stopped: {0}")]
    WriterGone(String),
    #[error(
        "state database {} is damaged ({detail}); `curate state repair` keeps every task it can still read and moves the file aside (or move it aside yourself, or use another --state); the next run redoes only what was lost, with model answers replayed from the cache", db.display()
    )]
    Corrupt { db: PathBuf, detail: String },
    #[error(
        "state database {} is empty (0 bytes), so what it recorded is lost; remove it to start over (every task runs again, model answers replay from the cache), or put back a copy", db.display()
    )]
    Empty { db: PathBuf },
    #[error("cannot move {from} to {to}: {error}")]
    Move { from: PathBuf, to: PathBuf, error: std::io::Error },
    /// A group of task rows could not be committed. Every task of the group, and every later one,
    /// is told of the same error, so it is shared.
    #[error(transparent)]
    Write(Arc<rusqlite::Error>),
    /// The writer was gone before it could record a task's start.
    #[error("the store's writer has stopped")]
    Stopped,
}

impl StoreError {
    /// An SQLite error on `db`: a damaged or foreign file is [`StoreError::Corrupt`], with the way out.
    pub fn sqlite(db: &std::path::Path, error: rusqlite::Error) -> StoreError {
        use rusqlite::ErrorCode::{DatabaseCorrupt, NotADatabase};
        // Text that is not UTF-8 in a row curate wrote is damage SQLite's own check does not see
        // (an overflow page's content is not checked).
        let undecodable =
            matches!(error, rusqlite::Error::FromSqlConversionFailure(..) | rusqlite::Error::Utf8Error(_));
        match error.sqlite_error_code() {
            Some(DatabaseCorrupt | NotADatabase) => {
                StoreError::Corrupt { db: db.to_path_buf(), detail: error.to_string() }
            }
            _ if undecodable => StoreError::Corrupt {
                db: db.to_path_buf(),
                detail: format!("a task row does not decode: {error}"),
            },
            _ => StoreError::Sqlite { db: db.to_path_buf(), error },
        }
    }
}

/// Another process holds the state directory.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error(
        "state directory {dir} is in use by another `curate run` ({holder}); wait for it to finish or stop it, or use another --state"
    )]
    Busy { dir: PathBuf, holder: String },
    #[error("cannot lock state directory {dir}: {error}")]
    Io { dir: PathBuf, error: std::io::Error },
}
