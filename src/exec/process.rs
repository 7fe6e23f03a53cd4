//! Commands run on this machine rather than in a container (an `exec` stage, a command-line coding
//! agent or review tool): each in its own process group, so that on a timeout the whole group goes,
//! not only the shell that started it; and each with a [`Tag`] in its environment, so that what it
//! left running in a session of its own (`setsid`, a daemon) goes too when it ends.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Kills process group `pgid` with SIGKILL. Best effort: the group may be gone already.
pub fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The variable a host command is started with, holding its [`Tag`]; its descendants inherit it.
const TAG_VAR: &str = "CURATE_HOST_COMMAND";

/// A token of one host command's own, put in its environment: whatever process still carries it
/// when the command has ended was left running by it, whichever session or group it moved to.
pub struct Tag(String);

impl Tag {
    pub fn new() -> Tag {
        Tag(format!("{}-{:016x}", std::process::id(), rand::random::<u64>()))
    }

    /// Starts `cmd` with the tag in its environment.
    pub fn apply<'c>(&self, cmd: &'c mut tokio::process::Command) -> &'c mut tokio::process::Command {
        cmd.env(TAG_VAR, &self.0)
    }

    /// The processes that carry the tag (read from /proc; none where there is no /proc).
    pub fn holders(&self) -> Vec<i32> {
        let wanted = format!("{TAG_VAR}={}", self.0);
        let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                // Gone, or not ours to read: not one of the command's.
                std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
            })
            .collect()
    }

    /// Kills every process that carries the tag, a few rounds over (one may fork in between).
    pub fn reap(&self) {
        for _ in 0..5 {
            let holders = self.holders();
            if holders.is_empty() {
                return;
            }
            for pid in holders {
                // SAFETY: kill(2) takes any pid; one that has gone since it was read is ESRCH.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Default for Tag {
    fn default() -> Tag {
        Tag::new()
    }
}

/// A command whose caller is dropped mid-way (a second Ctrl-C ends the run, a task is cancelled)
/// leaves nothing running either.
impl Drop for Tag {
    fn drop(&mut self) {
        self.reap();
    }
}

/// How a host command ended.
pub struct HostOutput {
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot start `{command}`: {error}")]
    Start { command: String, error: std::io::Error },
    #[error("`{command}` ran past its {secs} s limit and was killed")]
    Timeout { command: String, secs: u64 },
    #[error("`{command}` printed more than {} MiB on {stream} and was killed", limit >> 20)]
    TooMuch { command: String, stream: &'static str, limit: usize },
}

/// The most a host command may print on each of stdout and stderr.
pub const OUTPUT_LIMIT: usize = 16 << 20;
/// How long the pipes are read after the command has exited: a process it started in a session of
/// its own (`setsid`) may hold them open for as long as it lives.
const DRAIN: Duration = Duration::from_secs(2);

/// What a finished command printed, each stream up to [`OUTPUT_LIMIT`].
pub struct Captured {
    pub exit_code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why [`capture`] has no output to give.
#[derive(Debug)]
pub enum CaptureError {
    Timeout,
    TooMuch(&'static str),
    Wait(std::io::Error),
}

type Buffer = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

/// Reads `pipe` into `buffer` until its end, or until it holds more than `limit`, which is said on
/// `over`.
fn read_into(
    pipe: Option<impl tokio::io::AsyncRead + Unpin + Send + 'static>,
    buffer: Buffer,
    limit: usize,
    over: tokio::sync::mpsc::Sender<&'static str>,
    stream: &'static str,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let Some(mut pipe) = pipe else { return };
        let mut chunk = vec![0u8; 64 << 10];
        while let Ok(n) = pipe.read(&mut chunk).await {
            if n == 0 {
                return;
            }
            let mut held = buffer.lock().unwrap_or_else(|e| e.into_inner());
            held.extend_from_slice(&chunk[..n]);
            if held.len() > limit {
                held.truncate(limit);
                let _ = over.try_send(stream);
                return;
            }
        }
    })
}

/// Waits for `child` (started in a process group of its own with `tag` applied, stdout and stderr
/// piped) with its input written from `stdin`: killed with its group past `timeout` or once a
/// stream passes `limit`. However it ends, every process that carries `tag` is killed, and its
/// pipes are then read for [`DRAIN`] more at most, so nothing it started outlives it or holds the
/// caller.
pub async fn capture(
    mut child: tokio::process::Child,
    tag: &Tag,
    stdin: Option<Vec<u8>>,
    timeout: Option<Duration>,
    limit: usize,
) -> Result<Captured, CaptureError> {
    if let (Some(mut pipe), Some(bytes)) = (child.stdin.take(), stdin) {
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            // A command that does not read its input closes the pipe early; that is fine.
            let _ = pipe.write_all(&bytes).await;
        });
    }
    let (out, err) = (Buffer::default(), Buffer::default());
    let (over_tx, mut over) = tokio::sync::mpsc::channel(2);
    let readers = [
        read_into(child.stdout.take(), out.clone(), limit, over_tx.clone(), "stdout"),
        read_into(child.stderr.take(), err.clone(), limit, over_tx, "stderr"),
    ];
    let pgid = child.id();
    let kill = || {
        if let Some(pgid) = pgid {
            kill_group(pgid);
        }
        tag.reap();
    };
    let deadline = async {
        match timeout {
            Some(t) => tokio::time::sleep(t).await,
            None => std::future::pending().await,
        }
    };
    let status = tokio::select! {
        status = child.wait() => status.map_err(CaptureError::Wait)?,
        Some(stream) = over.recv() => {
            kill();
            return Err(CaptureError::TooMuch(stream));
        }
        () = deadline => {
            kill();
            return Err(CaptureError::Timeout);
        }
    };
    tag.reap();
    for reader in readers {
        let abort = reader.abort_handle();
        if tokio::time::timeout(DRAIN, reader).await.is_err() {
            abort.abort();
        }
    }
    if let Ok(stream) = over.try_recv() {
        return Err(CaptureError::TooMuch(stream));
    }
    let take = |b: &Buffer| std::mem::take(&mut *b.lock().unwrap_or_else(|e| e.into_inner()));
    Ok(Captured { exit_code: status.code(), stdout: take(&out), stderr: take(&err) })
}

/// Runs `command` with `sh -c` in `dir`, with `env` added, killing its group after `timeout`.
pub async fn run_shell(
    command: &str,
    dir: &Path,
    env: &[(&str, &Path)],
    timeout: Duration,
) -> Result<HostOutput, HostError> {
    let tag = Tag::new();
    let mut cmd = tokio::process::Command::new("sh");
    tag.apply(&mut cmd)
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().map_err(|error| HostError::Start { command: command.into(), error })?;
    match capture(child, &tag, None, Some(timeout), OUTPUT_LIMIT).await {
        Ok(out) => Ok(HostOutput {
            exit_code: out.exit_code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }),
        Err(CaptureError::Wait(error)) => Err(HostError::Start { command: command.into(), error }),
        Err(CaptureError::Timeout) => {
            Err(HostError::Timeout { command: command.into(), secs: timeout.as_secs() })
        }
        Err(CaptureError::TooMuch(stream)) => {
            Err(HostError::TooMuch { command: command.into(), stream, limit: OUTPUT_LIMIT })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn shell(command: &str, tag: &Tag) -> tokio::process::Child {
        tag.apply(&mut tokio::process::Command::new("sh"))
            .args(["-c", command])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .unwrap()
    }

    #[tokio::test]
    async fn endless_output_is_cut_at_the_limit_and_the_command_killed() {
        let started = Instant::now();
        let tag = Tag::new();
        let got = capture(shell("yes curate", &tag), &tag, None, None, 1 << 20).await;
        assert!(matches!(got, Err(CaptureError::TooMuch("stdout"))), "{:?}", got.err());
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_detached_descendant_holding_the_pipes_does_not_hold_the_caller() {
        let started = Instant::now();
        let tag = Tag::new();
        let child = shell("setsid sleep 20 & echo '{\"ok\": 1}'", &tag);
        let got = capture(child, &tag, None, None, 1 << 20).await.unwrap();
        assert_eq!(String::from_utf8_lossy(&got.stdout), "{\"ok\": 1}\n");
        assert_eq!(got.exit_code, Some(0));
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn nothing_a_command_started_outlives_it() {
        // A daemon in a session of its own, one in the background of a subshell, and one still
        // running when the command is killed at its time limit.
        let tag = Tag::new();
        let child = shell("setsid sleep 30 & (nohup sleep 31 >/dev/null 2>&1 &); echo started", &tag);
        let got = capture(child, &tag, None, None, 1 << 20).await.unwrap();
        assert_eq!(got.stdout, b"started\n");
        assert_eq!(tag.holders(), Vec::<i32>::new(), "left running after the command ended");

        let slow = Tag::new();
        let child = shell("setsid sleep 32 & sleep 20", &slow);
        let got = capture(child, &slow, None, Some(Duration::from_millis(300)), 100).await;
        assert!(matches!(got, Err(CaptureError::Timeout)));
        assert_eq!(slow.holders(), Vec::<i32>::new(), "left running after the time limit");
    }

    #[tokio::test]
    async fn a_command_whose_caller_is_dropped_leaves_nothing_running() {
        let dir = tempfile::tempdir().unwrap();
        let script = "setsid sleep 33 & echo $CURATE_HOST_COMMAND > token; sleep 20";
        let command = run_shell(script, dir.path(), &[], Duration::from_secs(60));
        assert!(tokio::time::timeout(Duration::from_millis(500), command).await.is_err());
        let token = std::fs::read_to_string(dir.path().join("token")).unwrap();
        let tag = Tag(token.trim().to_string());
        assert!(!tag.0.is_empty());
        assert_eq!(tag.holders(), Vec::<i32>::new(), "left running after its caller was dropped");
    }

    #[tokio::test]
    async fn input_goes_in_and_a_slow_command_times_out() {
        let tag = Tag::new();
        let got =
            capture(shell("cat; echo err >&2", &tag), &tag, Some(b"in".to_vec()), None, 100).await.unwrap();
        assert_eq!((got.stdout.as_slice(), got.stderr.as_slice()), (&b"in"[..], &b"err\n"[..]));
        let slow = capture(shell("sleep 20", &tag), &tag, None, Some(Duration::from_millis(200)), 100).await;
        assert!(matches!(slow, Err(CaptureError::Timeout)));
    }
}
