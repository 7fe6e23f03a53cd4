//! Commands run on this machine rather than in a container (an `exec` stage, a command-line coding
//! agent): each in its own process group, so that on a timeout the whole group goes, not only the
//! shell that started it.

/// Kills process group `pgid` with SIGKILL. Best effort: the group may be gone already.
pub fn kill_group(pgid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}
