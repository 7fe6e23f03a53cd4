//! Content hashing. A task's key is SHA-256 over canonical JSON of everything its result depends on:
//! the stage's fingerprint (kind, implementation version, config, contents of the files the config
//! names), the item's identity (id and record) and the keys of the upstream tasks it consumed.
//! Same key, same result: a finished key is never run again.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskKey(pub [u8; 32]);

impl TaskKey {
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The first 12 hex digits, enough to tell keys apart in messages.
    pub fn short(&self) -> String {
        hex::encode(&self.0[..6])
    }
}

impl fmt::Debug for TaskKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskKey({})", self.short())
    }
}

impl fmt::Display for TaskKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Canonical JSON: serde_json's map is ordered by key, and a value's `Display` writes no whitespace,
/// so equal values always give equal bytes. Writing a `Value` cannot fail, so no two different
/// documents can fall back to the same bytes.
fn canonical(value: &Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

/// The part of every task key that comes from the stage itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageFingerprint(pub [u8; 32]);

impl StageFingerprint {
    pub fn new(
        kind: &str,
        version: u32,
        config: &Value,
        files: &BTreeMap<String, Vec<u8>>,
    ) -> StageFingerprint {
        let files: BTreeMap<&str, String> =
            files.iter().map(|(name, bytes)| (name.as_str(), hex::encode(sha256(bytes)))).collect();
        let doc = serde_json::json!({
            "kind": kind,
            "version": version,
            "config": config,
            "files": files,
        });
        StageFingerprint(sha256(&canonical(&doc)))
    }
}

/// An item's identity: its id and a hash of its record, so an edited record is new work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemIdentity(pub [u8; 32]);

impl ItemIdentity {
    pub fn new(id: &str, data: &Value) -> ItemIdentity {
        let doc = serde_json::json!({ "id": id, "data": hex::encode(sha256(&canonical(data))) });
        ItemIdentity(sha256(&canonical(&doc)))
    }

    /// This identity combined with its parent's (a comment's PR).
    pub fn within(self, parent: ItemIdentity) -> ItemIdentity {
        let doc = serde_json::json!({ "item": hex::encode(self.0), "parent": hex::encode(parent.0) });
        ItemIdentity(sha256(&canonical(&doc)))
    }
}

/// The key of one task. `upstream` pairs each consumed upstream stage id with the keys of the tasks
/// consumed from it, in a stable order.
pub fn task_key(stage: StageFingerprint, item: ItemIdentity, upstream: &[(&str, Vec<TaskKey>)]) -> TaskKey {
    let upstream: Vec<Value> = upstream
        .iter()
        .map(|(s, keys)| serde_json::json!([s, keys.iter().map(TaskKey::hex).collect::<Vec<_>>()]))
        .collect();
    // Fields in this order, not sorted: the order keys have always been hashed in.
    let doc = format!(
        "{{\"stage\":{},\"item\":{},\"upstream\":{}}}",
        Value::String(hex::encode(stage.0)),
        Value::String(hex::encode(item.0)),
        Value::Array(upstream)
    );
    TaskKey(sha256(doc.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fp(config: Value, prompt: &str) -> StageFingerprint {
        let files = BTreeMap::from([("prompt".to_string(), prompt.as_bytes().to_vec())]);
        StageFingerprint::new("exec", 1, &config, &files)
    }

    /// Keys written by earlier versions must still be found: these were computed before keys were
    /// hashed from `Value`s instead of serialized structs.
    #[test]
    fn keys_are_the_ones_earlier_versions_wrote() {
        let files = BTreeMap::from([("p".to_string(), b"x".to_vec())]);
        let fp = StageFingerprint::new("exec", 3, &json!({"a": [1, "b"], "c": null}), &files);
        let item = ItemIdentity::new("i1", &json!({"t": 1})).within(ItemIdentity::new("p", &json!(null)));
        let up = task_key(fp, item, &[]);
        let k = task_key(fp, item, &[("s1", vec![up]), ("s2", vec![up, up])]);
        assert_eq!(hex::encode(fp.0), "b2f93e16cd3c0dd46753b0bbed47604d0c1c57b3d24930f02ea1d8928b5fe51d");
        assert_eq!(hex::encode(item.0), "9ee74c5c8ea2d35def9a8367fd53c59cf5199be66e2c4bea7ec49c20a91bb768");
        assert_eq!(up.hex(), "83e6f9ac64b33770b78bd8aabec4847ce6c5dc56a4b9502ecd7eb078dd7b0348");
        assert_eq!(k.hex(), "2942d5e254ffd97d4c75cd90522fe1675e7f45289293fff72190578edb79f69a");
    }

    #[test]
    fn config_key_order_does_not_matter() {
        let a: Value = serde_json::from_str(r#"{"a": 1, "b": {"x": 2, "y": 3}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b": {"y": 3, "x": 2}, "a": 1}"#).unwrap();
        assert_eq!(fp(a, "p"), fp(b, "p"));
    }

    #[test]
    fn every_input_changes_the_key() {
        let base = fp(json!({"a": 1}), "prompt");
        assert_ne!(base, fp(json!({"a": 2}), "prompt"), "config");
        assert_ne!(base, fp(json!({"a": 1}), "prompt!"), "file contents");
        let v2 = StageFingerprint::new("exec", 2, &json!({"a": 1}), &BTreeMap::new());
        let v1 = StageFingerprint::new("exec", 1, &json!({"a": 1}), &BTreeMap::new());
        assert_ne!(v1, v2, "implementation version");

        let item = ItemIdentity::new("i1", &json!({"t": 1}));
        assert_ne!(item, ItemIdentity::new("i2", &json!({"t": 1})), "id");
        assert_ne!(item, ItemIdentity::new("i1", &json!({"t": 2})), "record");

        let k = task_key(base, item, &[]);
        assert_eq!(k, task_key(base, item, &[]), "deterministic");
        let up = task_key(base, ItemIdentity::new("x", &json!(null)), &[]);
        assert_ne!(k, task_key(base, item, &[("s1", vec![up])]), "upstream keys");
        assert_ne!(
            task_key(base, item, &[("s1", vec![up])]),
            task_key(base, item, &[("s2", vec![up])]),
            "upstream stage"
        );
    }
}
