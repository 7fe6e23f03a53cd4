//! A Docker registry on 127.0.0.1, started by a test and stopped when dropped: Debian's
//! `docker-registry` serving a temporary directory, no TLS and no authentication (daemons push to a
//! loopback registry without TLS settings).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Registry {
    _dir: tempfile::TempDir,
    child: Child,
    /// `127.0.0.1:PORT`
    pub address: String,
}

impl Registry {
    pub fn start() -> Result<Registry, String> {
        Registry::start_with(None)
    }

    /// A registry that asks for `user` and `password` (htpasswd, from Debian's apache2-utils).
    pub fn start_with_login(user: &str, password: &str) -> Result<Registry, String> {
        Registry::start_with(Some((user, password)))
    }

    fn start_with(login: Option<(&str, &str)>) -> Result<Registry, String> {
        let port =
            TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let address = format!("127.0.0.1:{port}");
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let mut config = format!(
            "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {address}\n",
            dir.path().join("data").display()
        );
        if let Some((user, password)) = login {
            let file = dir.path().join("htpasswd");
            let out = Command::new("htpasswd")
                .args(["-Bbc", file.to_str().unwrap_or_default(), user, password])
                .output()
                .map_err(|e| format!("cannot run htpasswd (Debian's apache2-utils): {e}"))?;
            if !out.status.success() {
                return Err(format!("htpasswd: {}", String::from_utf8_lossy(&out.stderr)));
            }
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: curate-test\n    path: {}\n",
                file.display()
            ));
        }
        let config_file = dir.path().join("config.yml");
        std::fs::write(&config_file, config).map_err(|e| e.to_string())?;
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start docker-registry (Debian's package docker-registry): {e}"))?;
        let mut registry = Registry { _dir: dir, child, address };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30) {
            if registry.answers() {
                return Ok(registry);
            }
            if let Ok(Some(status)) = registry.child.try_wait() {
                return Err(format!("docker-registry exited: {status}"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        Err("docker-registry did not answer within 30 s".into())
    }

    /// Whether `GET /v2/` answers (200, or 401 when it asks for a login).
    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(&self.address) else { return false };
        let request = format!("GET /v2/ HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.address);
        let mut answer = String::new();
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_to_string(&mut answer).is_ok()
            && (answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 401"))
    }

    /// The repositories the registry holds (its catalog), as JSON text.
    pub fn catalog(&self) -> String {
        let Ok(mut stream) = TcpStream::connect(&self.address) else { return String::new() };
        let request =
            format!("GET /v2/_catalog HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.address);
        let mut answer = String::new();
        let _ = stream.write_all(request.as_bytes());
        let _ = stream.read_to_string(&mut answer);
        answer
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
