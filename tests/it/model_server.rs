//! scripts/model-server against a port that another program holds: a server that answers
//! `/health` but is not the model's must not be taken for it.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::process::Command;

use crate::common::root;

#[test]
fn a_stranger_answering_health_on_the_port_is_not_taken_for_the_model_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let body = if first.contains("/v1/models") {
                r#"{"object": "list", "data": [{"id": "someone-elses-model"}]}"#
            } else {
                r#"{"status": "ok"}"#
            };
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let home = tempfile::tempdir().unwrap();
    let out = Command::new("bash")
        .arg(root().join("scripts/model-server"))
        .arg("start")
        .env("CURATE_LLM_PORT", port.to_string())
        .env("CURATE_HOME", home.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("someone-elses-model") && err.contains("CURATE_LLM_PORT"), "{err}");
    assert!(!err.contains("server healthy"), "{err}");
}
