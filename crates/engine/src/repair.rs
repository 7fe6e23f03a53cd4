//! A damaged state database: found by SQLite's own integrity check, and repaired by moving the file
//! aside and starting a new one with every task row that can still be read. What was lost runs
//! again on the next `curate run`; nothing read back is trusted less than before, since each row is
//! a whole task's result, committed by itself.

use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags};

use crate::errors::StoreError;
use crate::store::{DB_FILE, Store};

/// The columns of a task row, in the order they are copied.
const COLUMNS: &str = "key, stage, item, state, output, message, attempts, started_at, finished_at, \
                       duration_ms, prompt_tokens, completion_tokens";

/// What `check` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Health {
    /// No state database in the directory.
    Missing,
    Sound,
    /// SQLite's words for each problem.
    Damaged(Vec<String>),
}

/// What `repair` did.
#[derive(Debug)]
pub struct Repaired {
    /// Task rows copied into the new database.
    pub kept: usize,
    /// Task rows the damaged file said it had, where it could still say (`None`: unreadable).
    pub recorded: Option<usize>,
    /// Where the damaged file (and its write-ahead log) now is.
    pub moved_to: PathBuf,
}

/// SQLite's full integrity check of the state database in `dir`.
pub fn check(dir: &Path) -> Result<Health, StoreError> {
    let db = dir.join(DB_FILE);
    if !db.exists() {
        return Ok(Health::Missing);
    }
    if std::fs::metadata(&db).is_ok_and(|m| m.len() == 0) {
        return Ok(Health::Damaged(vec!["the file is empty (0 bytes)".into()]));
    }
    let conn = match Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_WRITE) {
        Ok(c) => c,
        Err(e) => return Ok(Health::Damaged(vec![e.to_string()])),
    };
    let problems: Result<Vec<String>, rusqlite::Error> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut stmt| stmt.query_map([], |r| r.get::<_, String>(0))?.collect());
    Ok(match problems {
        Ok(p) if p == ["ok"] => match undecodable_rows(&conn) {
            Ok(0) => Health::Sound,
            Ok(n) => Health::Damaged(vec![format!(
                "{n} task row(s) hold text that is not UTF-8 (damage inside a row, which SQLite's check does not read)"
            )]),
            Err(e) => Health::Damaged(vec![e.to_string()]),
        },
        // A row may hold several problems, a line each.
        Ok(p) => Health::Damaged(p.iter().flat_map(|r| r.lines()).map(String::from).collect()),
        Err(e) => Health::Damaged(vec![e.to_string()]),
    })
}

/// The task rows a command would fail to read: a text value that is not UTF-8.
fn undecodable_rows(conn: &Connection) -> Result<usize, rusqlite::Error> {
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM tasks"))?;
    let mut rows = stmt.query([])?;
    let mut bad = 0;
    while let Some(row) = rows.next()? {
        bad += usize::from(decoded(row).is_none());
    }
    Ok(bad)
}

/// A row's values, or `None` when one of them is text that does not decode (rusqlite's own
/// conversion panics on it).
fn decoded(row: &rusqlite::Row) -> Option<Vec<Value>> {
    use rusqlite::types::ValueRef;
    (0..12)
        .map(|i| match row.get_ref(i).ok()? {
            ValueRef::Null => Some(Value::Null),
            ValueRef::Integer(n) => Some(Value::Integer(n)),
            ValueRef::Real(x) => Some(Value::Real(x)),
            ValueRef::Text(t) => std::str::from_utf8(t).ok().map(|t| Value::Text(t.to_string())),
            ValueRef::Blob(b) => Some(Value::Blob(b.to_vec())),
        })
        .collect()
}

/// Moves the state database of `dir` aside (with its `-wal` and `-shm` files, so the log's commits
/// are read too) and makes a new one holding every task row that can still be read from it. Run
/// while holding the state's lock.
pub fn repair(dir: &Path) -> Result<Repaired, StoreError> {
    let db = dir.join(DB_FILE);
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let moved_to = dir.join(format!("{DB_FILE}.damaged-{stamp}"));
    for suffix in ["", "-wal", "-shm"] {
        let from = PathBuf::from(format!("{}{suffix}", db.display()));
        if from.exists() {
            let to = PathBuf::from(format!("{}{suffix}", moved_to.display()));
            std::fs::rename(&from, &to).map_err(|error| StoreError::Move { from, to, error })?;
        }
    }
    let (rows, recorded) = salvage(&moved_to);
    let store = Store::open(dir)?;
    drop(store);
    let conn = Connection::open(&db).map_err(|e| StoreError::sqlite(&db, e))?;
    let sqlite = |e| StoreError::sqlite(&db, e);
    let tx = conn.unchecked_transaction().map_err(sqlite)?;
    let mut kept = 0;
    {
        let placeholders = ["?"; 12].join(", ");
        let mut insert = tx
            .prepare(&format!("INSERT OR IGNORE INTO tasks ({COLUMNS}) VALUES ({placeholders})"))
            .map_err(sqlite)?;
        for row in &rows {
            // A row whose values the damage changed to the wrong types is not kept.
            if insert.execute(rusqlite::params_from_iter(row.iter())).is_ok_and(|n| n == 1) {
                kept += 1;
            }
        }
    }
    tx.commit().map_err(sqlite)?;
    Ok(Repaired { kept, recorded, moved_to })
}

/// Every task row that can be read from the damaged file at `db`, and how many it says it has. Read
/// from both ends of the key order: a damaged page in the middle stops a scan, and the rows past it
/// are reached from the other side.
fn salvage(db: &Path) -> (Vec<Vec<Value>>, Option<usize>) {
    let Ok(conn) = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_WRITE) else {
        return (Vec::new(), None);
    };
    let recorded =
        conn.query_row("SELECT count(*) FROM tasks", [], |r| r.get::<_, i64>(0)).ok().map(|n| n as usize);
    let mut rows: Vec<Vec<Value>> = Vec::new();
    for order in ["ASC", "DESC"] {
        let Ok(mut stmt) = conn.prepare(&format!("SELECT {COLUMNS} FROM tasks ORDER BY key {order}")) else {
            continue;
        };
        let Ok(mut found) = stmt.query([]) else { continue };
        // Stops at the first row SQLite cannot read; a row whose text does not decode is left out
        // and the scan goes on.
        while let Ok(Some(row)) = found.next() {
            if let Some(values) = decoded(row) {
                rows.push(values);
            }
        }
    }
    (rows, recorded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::load;

    /// A state of three kept tasks whose outputs span overflow pages; the bytes of the middle one's
    /// output, in the file, overwritten with 0xFF (not UTF-8 anywhere), as a damaged overflow page
    /// would be. SQLite's integrity check reads no overflow content, so it says "ok".
    fn damaged_state(dir: &Path) {
        drop(Store::open(dir).unwrap());
        let conn = Connection::open(dir.join(DB_FILE)).unwrap();
        conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
        for (n, fill) in [(1u8, 'a'), (2, 'b'), (3, 'c')] {
            let output = format!("{{\"text\": \"{}\"}}", fill.to_string().repeat(20_000));
            conn.execute(
                "INSERT INTO tasks (key, stage, item, state, output) VALUES (?1, 's', ?2, 'kept', ?3)",
                rusqlite::params![vec![n; 32], format!("i{n}"), output],
            )
            .unwrap();
        }
        drop(conn);
        let db = dir.join(DB_FILE);
        let mut bytes = std::fs::read(&db).unwrap();
        let at = bytes.windows(64).position(|w| w.iter().all(|b| *b == b'b')).unwrap();
        bytes[at..at + 64].fill(0xff);
        std::fs::write(&db, bytes).unwrap();
    }

    #[test]
    fn text_that_does_not_decode_is_damage_check_finds_and_repair_leaves_out() {
        let dir = tempfile::tempdir().unwrap();
        damaged_state(dir.path());
        // Every command reads the store: it names the damage and the way out, not a conversion error.
        let err = load(dir.path()).unwrap_err();
        assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
        assert!(err.to_string().contains("curate state repair"), "{err}");
        let Health::Damaged(problems) = check(dir.path()).unwrap() else { panic!("taken for sound") };
        assert!(problems[0].starts_with("1 task row(s) hold text that is not UTF-8"), "{problems:?}");
        let repaired = repair(dir.path()).unwrap();
        assert_eq!((repaired.kept, repaired.recorded), (2, Some(3)));
        let records = load(dir.path()).unwrap();
        let mut items: Vec<&str> = records.values().map(|r| r.item.as_str()).collect();
        items.sort();
        assert_eq!(items, ["i1", "i3"]);
        assert_eq!(check(dir.path()).unwrap(), Health::Sound);
    }
}
