//! A second Docker daemon on this machine, started by a test and gone when it is dropped: its own
//! socket, data root and exec root under a temporary directory, a bridge of its own with no
//! iptables rules (so no way out: sandboxed runs use no network, and its builds fail, which curate
//! then tries on the first host), and an empty config file so the system's daemon.json (which sets
//! the data root) does not clash with the flags. Debian's `docker.io` provides `dockerd`.
//!
//! Not `--bridge none`: a daemon started so deletes the `docker0` interface, which the machine's
//! own daemon needs for every build.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct SecondDaemon {
    dir: PathBuf,
    /// The bridge interface made for it, removed when it is dropped.
    bridge: String,
    child: Option<Child>,
    /// `unix:///…/docker.sock`
    pub url: String,
    /// With [`SecondDaemon::start_tls`]: `tcp://127.0.0.1:PORT`, where it verifies its clients.
    pub tls_url: Option<String>,
}

/// Makes a CA, a server certificate for 127.0.0.1 and a client certificate in `dir` (ca.pem,
/// server-cert.pem, server-key.pem, cert.pem, key.pem), with openssl.
fn make_certificates(dir: &Path) -> Result<(), String> {
    let script = r#"set -e
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 2 -subj /CN=curate-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout server-key.pem -out server.csr -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out server-cert.pem -days 2 -extfile server.ext 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout key.pem -out client.csr -subj /CN=curate-client 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' > client.ext
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -out cert.pem -days 2 -extfile client.ext 2>/dev/null
"#;
    let out = Command::new("sh").args(["-c", script]).current_dir(dir).output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("openssl: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

impl SecondDaemon {
    /// Starts a daemon and waits until it answers; the reason when this machine cannot.
    pub fn start() -> Result<SecondDaemon, String> {
        SecondDaemon::start_with(false)
    }

    /// Starts a daemon that also listens on a 127.0.0.1 port with TLS and verifies its clients
    /// against a CA made for it; [`SecondDaemon::certificates`] holds the client's files.
    pub fn start_tls() -> Result<SecondDaemon, String> {
        SecondDaemon::start_with(true)
    }

    /// The directory holding `ca.pem`, `cert.pem` and `key.pem` (with `start_tls`).
    pub fn certificates(&self) -> PathBuf {
        self.dir.clone()
    }

    fn start_with(tls: bool) -> Result<SecondDaemon, String> {
        let dockerd =
            Command::new("sh").args(["-c", "command -v dockerd"]).output().map_err(|e| e.to_string())?;
        if !dockerd.status.success() {
            return Err("no dockerd on this machine".into());
        }
        // Short: a unix socket's path has a length limit.
        let dir = PathBuf::from(format!("/tmp/cd2-{}-{}", std::process::id(), rand_suffix()));
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("config.json"), "{}").map_err(|e| e.to_string())?;
        let socket = dir.join("docker.sock");
        let log = std::fs::File::create(dir.join("dockerd.log")).map_err(|e| e.to_string())?;
        let bridge = make_bridge()?;
        let mut tls_args: Vec<String> = Vec::new();
        let mut tls_url = None;
        if tls {
            make_certificates(&dir)?;
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map_err(|e| e.to_string())?
                .port();
            let file = |name: &str| dir.join(name).to_string_lossy().into_owned();
            tls_args = vec![
                "--tlsverify".into(),
                "--tlscacert".into(),
                file("ca.pem"),
                "--tlscert".into(),
                file("server-cert.pem"),
                "--tlskey".into(),
                file("server-key.pem"),
                "--host".into(),
                format!("tcp://127.0.0.1:{port}"),
            ];
            tls_url = Some(format!("tcp://127.0.0.1:{port}"));
        }
        let child = Command::new("dockerd")
            .arg("--config-file")
            .arg(dir.join("config.json"))
            .arg("--host")
            .arg(format!("unix://{}", socket.display()))
            .arg("--data-root")
            .arg(dir.join("data"))
            .arg("--exec-root")
            .arg(dir.join("exec"))
            .arg("--pidfile")
            .arg(dir.join("pid"))
            .args([
                "--bridge",
                bridge.as_str(),
                "--iptables=false",
                "--ip-masq=false",
                "--storage-driver",
                "fuse-overlayfs",
            ])
            .args(&tls_args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start dockerd: {e}"))?;
        let url = format!("unix://{}", socket.display());
        let mut daemon = SecondDaemon { dir, bridge, child: Some(child), url, tls_url };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(60) {
            if daemon.docker(&["version", "--format", "{{.Server.Version}}"]).is_ok() {
                return Ok(daemon);
            }
            if let Some(Ok(Some(status))) = daemon.child.as_mut().map(|c| c.try_wait()) {
                let log = std::fs::read_to_string(daemon.dir.join("dockerd.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(5).collect();
                return Err(format!("dockerd exited ({status}): {}", tail.join(" | ")));
            }
            std::thread::sleep(Duration::from_millis(300));
        }
        Err("dockerd did not answer within 60 s".into())
    }

    /// The `docker` command line against this daemon; its stdout, or why it failed.
    pub fn docker(&self, args: &[&str]) -> Result<String, String> {
        let out =
            Command::new("docker").arg("-H").arg(&self.url).args(args).output().map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }

    /// Kills the daemon at once (SIGKILL), as a host that dies would go; its containers go too.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        kill_under(&self.dir);
    }
}

impl Drop for SecondDaemon {
    fn drop(&mut self) {
        self.kill();
        unmount_under(&self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = Command::new("ip").args(["link", "del", &self.bridge]).status();
    }
}

/// A bridge interface with an address of its own (10.231.N.1/24, N unique to this process's
/// daemons), for a daemon's `--bridge`.
fn make_bridge() -> Result<String, String> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = (std::process::id() * 7 + NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) % 250 + 1;
    let name = format!("cd2b{}-{n}", std::process::id() % 10000);
    let ip = |args: &[&str]| -> Result<(), String> {
        let out = Command::new("ip").args(args).output().map_err(|e| format!("ip {args:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("ip {args:?}: {}", String::from_utf8_lossy(&out.stderr)))
        }
    };
    ip(&["link", "add", &name, "type", "bridge"])?;
    ip(&["addr", "add", &format!("10.231.{n}.1/24"), "dev", &name])?;
    ip(&["link", "set", &name, "up"])?;
    Ok(name)
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos())
}

/// Kills every process whose command line names `dir`: the daemon's containerd, its shims and
/// their containers' storage helpers.
fn kill_under(dir: &Path) {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else { return };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
    }
}

/// Lazily unmounts what the daemon mounted under `dir`, deepest first.
fn unmount_under(dir: &Path) {
    let needle = dir.to_string_lossy().into_owned();
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let mut points: Vec<&str> = mounts
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|p| p.starts_with(&needle))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in points {
        let _ = Command::new("umount").args(["-l", p]).status();
    }
}
