//! The agents: one per host, started inside its namespace with its configuration file,
//! told `go` and `stop` on stdin, and read for `ready` and their results line.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::live_err;
use super::netns::Created;
use crate::live::protocol::{self, AgentResults};
use crate::Error;

/// A running agent: its stdin and the lines it prints.
pub(super) struct Agent {
    /// The host it runs in.
    host: String,
    /// Where `go` and `stop` are written.
    stdin: ChildStdin,
    /// The lines it printed, as they come.
    lines: mpsc::Receiver<String>,
}

impl Agent {
    /// The first line the agent prints that starts with `what`, or an error naming the
    /// host when none comes within `timeout`.
    fn expect(&self, what: &str, timeout: Duration) -> Result<String, Error> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) if l.starts_with(what) => return Ok(l),
                Ok(_) => continue,
                Err(_) => {
                    return Err(live_err(format!(
                    "the agent in host {} did not say {what:?} within {timeout:?} (see its log)",
                    self.host
                )))
                }
            }
        }
    }

    /// Writes one word (`go`, `stop`) to the agent's stdin; a gone agent is found out
    /// when its results are read.
    fn say(&mut self, word: &str) {
        let _ = self.stdin.write_all(format!("{word}\n").as_bytes());
        let _ = self.stdin.flush();
    }
}

/// One agent per host (`hosts`: (name, namespace, config)), each with its config file
/// and log in `work`, all ready before this returns; each is recorded in `created`.
pub(super) fn start(
    argv: &[String],
    hosts: &[(&str, &str, serde_json::Value)],
    work: &Path,
    created: &mut Created,
) -> Result<Vec<Agent>, Error> {
    let mut agents = Vec::new();
    for (name, ns, cfg) in hosts {
        agents.push(spawn(argv, name, ns, cfg, work, created)?);
    }
    for a in &agents {
        a.expect("ready", Duration::from_secs(30))?;
    }
    Ok(agents)
}

/// Starts the agent of host `name` in namespace `ns` with config `cfg`, writing the
/// config to `agent-<name>.json` and its stderr to `agent-<name>.log` in `work`.
fn spawn(
    argv: &[String],
    name: &str,
    ns: &str,
    cfg: &serde_json::Value,
    work: &Path,
    created: &mut Created,
) -> Result<Agent, Error> {
    let path = work.join(format!("agent-{name}.json"));
    std::fs::write(&path, cfg.to_string())
        .map_err(|e| live_err(format!("{}: {e}", path.display())))?;
    let log = std::fs::File::create(work.join(format!("agent-{name}.log")))
        .map_err(|e| live_err(format!("agent log: {e}")))?;
    if argv.is_empty() {
        return Err(live_err("no agent program given"));
    }
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns])
        .args(argv)
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log);
    // SAFETY: prctl only, between fork and exec: the agent dies with this thread.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
            Ok(())
        });
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| live_err(format!("cannot start the agent: {e}")))?;
    let stdin = child.stdin.take().expect("piped");
    let lines = read_lines(child.stdout.take().expect("piped"));
    created.agents.push(child);
    Ok(Agent {
        host: name.to_string(),
        stdin,
        lines,
    })
}

/// The lines of `out`, read on a thread of their own as they come.
fn read_lines(out: std::process::ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Tells every agent `word` (`go`, `stop`).
pub(super) fn say_all(agents: &mut [Agent], word: &str) {
    for a in agents {
        a.say(word);
    }
}

/// Each agent's results line (after `stop`), typed; an error names the host that sent
/// none, or the host and the key of a line that does not fit.
pub(super) fn results(agents: &[Agent]) -> Result<Vec<AgentResults>, Error> {
    let mut out = Vec::new();
    for a in agents {
        let line = a.expect("{", Duration::from_secs(10))?;
        let v: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| live_err(format!("agent in {}: bad result line: {e}", a.host)))?;
        out.push(protocol::parse(&a.host, &v).map_err(live_err)?);
    }
    Ok(out)
}
