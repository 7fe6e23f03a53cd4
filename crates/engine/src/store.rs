//! The checkpoint store: one SQLite database (WAL) per state directory, holding every task's outcome,
//! output, reason or error, attempts and timings, keyed by [`TaskKey`].
//!
//! Writes go through one writer thread that commits whatever has queued up in one transaction (group
//! commit), so a task's result is durable a moment after it ends without a transaction per task. Tasks
//! with side effects are recorded as `running` before they start, and the caller waits for that; so
//! after a `kill -9` the store says which tasks were in flight.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags, params};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::errors::StoreError;
use crate::item::Outcome;
use crate::key::TaskKey;
use crate::stage::Usage;

const SCHEMA_VERSION: i64 = 1;
pub(crate) const DB_FILE: &str = "state.db";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// Started and not finished: in flight now, or in flight when a run died.
    Running,
    Kept,
    Rejected,
    Errored,
    /// Stopped by the user before it finished.
    Interrupted,
}

impl RecordState {
    fn as_str(self) -> &'static str {
        match self {
            RecordState::Running => "running",
            RecordState::Kept => "kept",
            RecordState::Rejected => "rejected",
            RecordState::Errored => "errored",
            RecordState::Interrupted => "interrupted",
        }
    }

    fn parse(s: &str) -> Option<RecordState> {
        [
            RecordState::Running,
            RecordState::Kept,
            RecordState::Rejected,
            RecordState::Errored,
            RecordState::Interrupted,
        ]
        .into_iter()
        .find(|r| r.as_str() == s)
    }

    /// A result that is never recomputed.
    pub fn is_final(self) -> bool {
        matches!(self, RecordState::Kept | RecordState::Rejected)
    }
}

/// One task's row.
#[derive(Debug, Clone)]
pub struct Record {
    pub stage: String,
    pub item: String,
    pub state: RecordState,
    pub output: Option<Arc<Value>>,
    /// The rejection reason, or the error.
    pub message: Option<String>,
    pub attempts: i64,
    pub duration_ms: Option<i64>,
    pub usage: Usage,
}

/// What a finished task reports.
#[derive(Debug)]
pub struct Finish {
    pub key: TaskKey,
    pub stage: Arc<str>,
    pub item: String,
    /// `None`: interrupted by the user.
    pub outcome: Option<Outcome>,
    /// Whether a `running` row was written when it started (then the attempt is already counted).
    pub started: bool,
    pub duration: Duration,
    /// Model tokens the task used.
    pub usage: Usage,
}

enum Msg {
    Start { key: TaskKey, stage: Arc<str>, item: String, ack: oneshot::Sender<Result<(), StoreError>> },
    Finish(Finish),
    Flush(oneshot::Sender<Result<(), StoreError>>),
}

/// The writing side of the store, owned by a run.
pub struct Store {
    db: PathBuf,
    tx: Option<mpsc::Sender<Msg>>,
    writer: Option<std::thread::JoinHandle<()>>,
    failure: Arc<Mutex<Option<Arc<rusqlite::Error>>>>,
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

fn open_connection(db: &Path, flags: OpenFlags) -> Result<Connection, StoreError> {
    // SQLite takes a 0-byte file for a new database, and the run would silently start over.
    if std::fs::metadata(db).is_ok_and(|m| m.is_file() && m.len() == 0) {
        return Err(StoreError::Empty { db: db.to_path_buf() });
    }
    let sqlite = |error| StoreError::sqlite(db, error);
    let conn = Connection::open_with_flags(db, flags).map_err(sqlite)?;
    conn.busy_timeout(Duration::from_secs(10)).map_err(sqlite)?;
    Ok(conn)
}

impl Store {
    /// Opens (creating if needed) the store in `dir` for writing.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir)
            .map_err(|error| StoreError::CreateDir { dir: dir.to_path_buf(), error })?;
        let db = dir.join(DB_FILE);
        let conn = open_connection(&db, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE)?;
        let sqlite = |error| StoreError::sqlite(&db, error);
        // A damaged file is found now, with the way out, not halfway through a run.
        let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(sqlite)?;
        if check != "ok" {
            return Err(StoreError::Corrupt { db, detail: check });
        }
        // WAL with synchronous=NORMAL: a committed transaction survives the process dying at any
        // point; only a power cut can lose the last few, and never corrupts the file.
        conn.pragma_update(None, "journal_mode", "WAL").map_err(sqlite)?;
        conn.pragma_update(None, "synchronous", "NORMAL").map_err(sqlite)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS tasks (
                 key BLOB PRIMARY KEY,
                 stage TEXT NOT NULL,
                 item TEXT NOT NULL,
                 state TEXT NOT NULL,
                 output TEXT,
                 message TEXT,
                 attempts INTEGER NOT NULL DEFAULT 0,
                 started_at REAL,
                 finished_at REAL,
                 duration_ms INTEGER,
                 prompt_tokens INTEGER NOT NULL DEFAULT 0,
                 completion_tokens INTEGER NOT NULL DEFAULT 0
             ) WITHOUT ROWID;",
        )
        .map_err(sqlite)?;
        let found: Option<String> =
            conn.query_row("SELECT v FROM meta WHERE k = 'schema'", [], |r| r.get(0)).ok();
        match found.and_then(|v| v.parse::<i64>().ok()) {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(StoreError::Schema { db, found: v, known: SCHEMA_VERSION });
            }
            Some(_) => {}
            None => {
                conn.execute(
                    "INSERT OR REPLACE INTO meta (k, v) VALUES ('schema', ?1)",
                    [SCHEMA_VERSION.to_string()],
                )
                .map_err(sqlite)?;
            }
        }
        let (tx, rx) = mpsc::channel();
        let failure = Arc::new(Mutex::new(None));
        let writer = {
            let failure = failure.clone();
            std::thread::Builder::new()
                .name("curate-store".into())
                .spawn(move || write_loop(conn, rx, failure))
                .map_err(|e| StoreError::WriterGone(e.to_string()))?
        };
        Ok(Store { db, tx: Some(tx), writer: Some(writer), failure })
    }

    pub fn path(&self) -> &Path {
        &self.db
    }

    fn send(&self, msg: Msg) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(msg).is_ok())
    }

    /// Records that a task is starting; resolves once that is committed.
    pub fn start(
        &self,
        key: TaskKey,
        stage: Arc<str>,
        item: String,
    ) -> oneshot::Receiver<Result<(), StoreError>> {
        let (ack, rx) = oneshot::channel();
        if !self.send(Msg::Start { key, stage, item, ack }) {
            let (ack, rx) = oneshot::channel();
            let _ = ack.send(Err(StoreError::Stopped));
            return rx;
        }
        rx
    }

    /// Records a task's end. Committed shortly after, in the next group.
    pub fn finish(&self, finish: Finish) {
        self.send(Msg::Finish(finish));
    }

    /// Waits until everything sent so far is committed.
    pub async fn flush(&self) -> Result<(), StoreError> {
        let (ack, rx) = oneshot::channel();
        if !self.send(Msg::Flush(ack)) {
            return Err(StoreError::WriterGone(self.failure().unwrap_or_default()));
        }
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(StoreError::WriterGone(e.to_string())),
            Err(_) => Err(StoreError::WriterGone(self.failure().unwrap_or_default())),
        }
    }

    /// The first write error, if any: the run must stop, its results can no longer be kept.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().ok().and_then(|f| f.as_ref().map(|e| e.to_string()))
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

fn write_loop(
    mut conn: Connection,
    rx: mpsc::Receiver<Msg>,
    failure: Arc<Mutex<Option<Arc<rusqlite::Error>>>>,
) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < 8192 {
            match rx.try_recv() {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        let already_failed = failure.lock().ok().and_then(|f| f.clone());
        let result = match already_failed {
            Some(e) => Err(e),
            None => apply(&mut conn, &batch).map_err(Arc::new),
        };
        if let Err(e) = &result
            && let Ok(mut f) = failure.lock()
            && f.is_none()
        {
            *f = Some(e.clone());
        }
        for msg in batch {
            match msg {
                Msg::Start { ack, .. } | Msg::Flush(ack) => {
                    let _ = ack.send(result.clone().map_err(StoreError::Write));
                }
                Msg::Finish(_) => {}
            }
        }
    }
}

fn apply(conn: &mut Connection, batch: &[Msg]) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    {
        let mut start = tx.prepare_cached(
            "INSERT INTO tasks (key, stage, item, state, attempts, started_at) VALUES (?1, ?2, ?3, 'running', 1, ?4)
             ON CONFLICT(key) DO UPDATE SET state = 'running', attempts = attempts + 1,
                 started_at = excluded.started_at, finished_at = NULL, duration_ms = NULL",
        )?;
        let mut finish = tx.prepare_cached(
            "INSERT INTO tasks (key, stage, item, state, output, message, attempts, started_at, finished_at,
                 duration_ms, prompt_tokens, completion_tokens)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8, ?9, ?11, ?12)
             ON CONFLICT(key) DO UPDATE SET state = excluded.state, output = excluded.output,
                 message = excluded.message, finished_at = excluded.finished_at,
                 duration_ms = excluded.duration_ms,
                 prompt_tokens = prompt_tokens + excluded.prompt_tokens,
                 completion_tokens = completion_tokens + excluded.completion_tokens,
                 attempts = attempts + ?10",
        )?;
        let now = now();
        for msg in batch {
            match msg {
                Msg::Start { key, stage, item, .. } => {
                    start.execute(params![&key.0[..], &**stage, item, now])?;
                }
                Msg::Finish(f) => {
                    let (state, output, message) = match &f.outcome {
                        Some(Outcome::Kept { output }) => {
                            let text = (!output.is_null()).then(|| output.to_string());
                            (RecordState::Kept, text, None)
                        }
                        Some(Outcome::Rejected { reason, detail }) => {
                            let text = (!detail.is_null()).then(|| detail.to_string());
                            (RecordState::Rejected, text, Some(reason.as_str()))
                        }
                        Some(Outcome::Errored { error }) => {
                            (RecordState::Errored, None, Some(error.as_str()))
                        }
                        None => (RecordState::Interrupted, None, Some("interrupted by the user")),
                    };
                    let ms = f.duration.as_millis() as i64;
                    finish.execute(params![
                        &f.key.0[..],
                        &*f.stage,
                        f.item,
                        state.as_str(),
                        output,
                        message,
                        now - f.duration.as_secs_f64(),
                        now,
                        ms,
                        if f.started { 0 } else { 1 },
                        f.usage.prompt_tokens as i64,
                        f.usage.completion_tokens as i64,
                    ])?;
                }
                Msg::Flush(_) => {}
            }
        }
    }
    tx.commit()
}

/// Reads every record of the store in `dir`. A store that does not exist yet is empty.
pub fn load(dir: &Path) -> Result<HashMap<TaskKey, Record>, StoreError> {
    let db = dir.join(DB_FILE);
    if !db.exists() {
        return Ok(HashMap::new());
    }
    let conn = open_connection(&db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let sqlite = |error| StoreError::sqlite(&db, error);
    let mut stmt = conn
        .prepare(
            "SELECT key, stage, item, state, output, message, attempts, duration_ms, prompt_tokens,
                    completion_tokens FROM tasks",
        )
        .map_err(sqlite)?;
    let rows = stmt
        .query_map([], |r| {
            let key: Vec<u8> = r.get(0)?;
            let state: String = r.get(3)?;
            let output: Option<String> = r.get(4)?;
            Ok((
                key,
                state,
                output,
                Record {
                    stage: r.get(1)?,
                    item: r.get(2)?,
                    state: RecordState::Running,
                    output: None,
                    message: r.get(5)?,
                    attempts: r.get(6)?,
                    duration_ms: r.get(7)?,
                    usage: Usage {
                        prompt_tokens: r.get::<_, i64>(8)? as u64,
                        completion_tokens: r.get::<_, i64>(9)? as u64,
                    },
                },
            ))
        })
        .map_err(sqlite)?;
    let mut out = HashMap::new();
    for row in rows {
        let (key, state, output, mut record) = row.map_err(sqlite)?;
        let (Ok(key), Some(state)) = (<[u8; 32]>::try_from(key.as_slice()), RecordState::parse(&state))
        else {
            continue; // not a row this build wrote; ignoring it means the task runs again
        };
        record.state = state;
        // A kept task's output, or what a rejection kept beside its reason.
        if matches!(state, RecordState::Kept | RecordState::Rejected) {
            let value = match output {
                Some(text) => match serde_json::from_str(&text) {
                    Ok(v) => v,
                    Err(_) if state == RecordState::Kept => continue,
                    Err(_) => Value::Null,
                },
                None => Value::Null,
            };
            record.output = Some(Arc::new(value));
        }
        out.insert(TaskKey(key), record);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(n: u8) -> TaskKey {
        TaskKey([n; 32])
    }

    fn finish(k: TaskKey, outcome: Option<Outcome>, started: bool) -> Finish {
        Finish {
            key: k,
            stage: "s".into(),
            item: "i".into(),
            outcome,
            started,
            duration: Duration::from_millis(5),
            usage: Usage { prompt_tokens: 10, completion_tokens: 2 },
        }
    }

    #[tokio::test]
    async fn records_outcomes_and_counts_attempts() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.finish(finish(key(1), Some(Outcome::Kept { output: json!({"a": 1}) }), false));
        store.finish(finish(key(2), Some(Outcome::rejected("chatty")), false));
        store.finish(finish(key(3), Some(Outcome::Errored { error: "down".into() }), false));
        store.start(key(3), "s".into(), "i".into()).await.unwrap().unwrap();
        store.finish(finish(key(3), Some(Outcome::Errored { error: "down again".into() }), true));
        store.start(key(4), "s".into(), "i".into()).await.unwrap().unwrap();
        let detail = json!({"attempts": [{"verdict": "passed"}]});
        store.finish(finish(
            key(5),
            Some(Outcome::Rejected { reason: "passed on both sides".into(), detail: detail.clone() }),
            false,
        ));
        store.flush().await.unwrap();

        let rows = load(dir.path()).unwrap();
        assert_eq!(rows[&key(1)].state, RecordState::Kept);
        assert_eq!(rows[&key(1)].output.as_deref(), Some(&json!({"a": 1})));
        assert_eq!(rows[&key(2)].message.as_deref(), Some("chatty"));
        assert_eq!(rows[&key(2)].output.as_deref(), Some(&Value::Null));
        assert_eq!(rows[&key(5)].output.as_deref(), Some(&detail), "a rejection keeps its detail");
        assert_eq!(rows[&key(3)].attempts, 2);
        assert_eq!(rows[&key(3)].message.as_deref(), Some("down again"));
        assert_eq!(
            rows[&key(3)].usage,
            Usage { prompt_tokens: 20, completion_tokens: 4 },
            "summed over attempts"
        );
        assert_eq!(rows[&key(4)].state, RecordState::Running, "a start with no end stays visible");
    }

    #[test]
    fn a_missing_store_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(&dir.path().join("nope")).unwrap().is_empty());
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        drop(Store::open(dir.path()).unwrap());
        let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
        conn.execute("UPDATE meta SET v = '99' WHERE k = 'schema'", []).unwrap();
        drop(conn);
        assert!(matches!(Store::open(dir.path()), Err(StoreError::Schema { found: 99, .. })));
    }
}
