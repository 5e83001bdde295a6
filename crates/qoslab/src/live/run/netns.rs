//! The hosts' network namespaces: their set-up (TCP sysctls, TUN device, address and
//! route), their teardown, and the sweep of namespaces a killed run left behind.

use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};

use super::datapath::HostIo;
use super::live_err;
use crate::live::{sys, LiveConfig};
use crate::packet::NodeId;
use crate::world::{FlowApp, World};
use crate::Error;

/// Every namespace live mode creates is called `<NS_PREFIX><owner pid>-<host index>`.
pub const NS_PREFIX: &str = "qlab";
/// The TUN device's name inside a host's namespace.
const TUN: &str = "qtun0";

/// Runs `ip` with `args`; its stderr is the error when it fails.
fn ip(args: &[&str]) -> Result<(), Error> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| live_err(format!("cannot run `ip`: {e}")))?;
    if !out.status.success() {
        return Err(live_err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Removes the namespaces (and the processes in them) of live runs whose owner is
/// gone (a SIGKILLed run); returns their names. Only names of the form
/// `qlab<pid>-<n>` whose pid no longer exists are touched.
pub fn sweep_leftovers() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(dir) = std::fs::read_dir("/run/netns") else {
        return removed;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if pid == std::process::id() as i32 || sys::pid_alive(pid) {
            continue;
        }
        kill_ns_processes(&name);
        if ip(&["netns", "del", &name]).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// The owner pid in a live namespace's name, if it is one.
fn owner_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(NS_PREFIX)?;
    let (pid, host) = rest.split_once('-')?;
    if pid.is_empty() || host.is_empty() || !host.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// SIGKILLs every process inside namespace `ns` (ours: the agents).
fn kill_ns_processes(ns: &str) {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(p) = pid.parse::<i32>() {
                sys::kill(p, libc::SIGKILL);
            }
        }
    }
}

/// What the run created; dropping it removes all of it (agents first, then the
/// namespaces, which takes their TUN devices with them).
#[derive(Default)]
pub(super) struct Created {
    /// The namespaces made so far.
    pub(super) namespaces: Vec<String>,
    /// The agents started so far.
    pub(super) agents: Vec<Child>,
}

impl Drop for Created {
    /// Kills the agents, then every process left in the namespaces, then the namespaces.
    fn drop(&mut self) {
        for c in &mut self.agents {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in &self.namespaces {
            kill_ns_processes(ns);
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// Root and `/dev/net/tun`, or an error saying which is missing.
pub(super) fn preflight() -> Result<(), Error> {
    let mut missing = Vec::new();
    if sys::euid() != 0 {
        missing.push("root (namespaces and TUN devices need CAP_NET_ADMIN and CAP_SYS_ADMIN)");
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        missing.push("/dev/net/tun");
    }
    if Command::new("ip").arg("-V").output().is_err() {
        missing.push("the `ip` command (iproute2)");
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::LiveUnavailable(format!(
            "live mode needs {}",
            missing.join(" and ")
        )))
    }
}

/// Sets sysctls `set` (key, value) inside namespace `ns`, all in one `sysctl` call.
fn set_sysctls(ns: &str, set: &[(&str, String)]) -> Result<(), Error> {
    let args: Vec<String> = set.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sysctl", "-q", "-w"])
        .args(&args)
        .output()
        .map_err(|e| live_err(format!("sysctl: {e}")))?;
    if !out.status.success() {
        return Err(live_err(format!(
            "sysctl in {ns} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// (tx_dropped, tx_packets) of a host's TUN device, from `ip -s`.
pub(super) fn tun_drops(ns: &str) -> (u64, u64) {
    let Ok(out) = Command::new("ip")
        .args(["-n", ns, "-s", "-j", "link", "show", "dev", TUN])
        .output()
    else {
        return (0, 0);
    };
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let tx = &v[0]["stats64"]["tx"];
    (
        tx["dropped"].as_u64().unwrap_or(0),
        tx["packets"].as_u64().unwrap_or(0),
    )
}

/// Hosts at either end of a TCP flow with ECN on.
fn ecn_hosts(w: &World) -> Vec<NodeId> {
    let mut v = Vec::new();
    for f in &w.flows {
        if let FlowApp::Tcp(t) = &f.app {
            if t.ecn {
                v.push(f.src);
                v.push(f.dst);
            }
        }
    }
    v
}

/// The hosts once set up: their TUN devices, where each node's host and namespace are,
/// and the sysctls set in each.
pub(super) struct Hosts {
    /// Each host's TUN and counters, in host order.
    pub(super) io: Vec<HostIo>,
    /// Per node: its index in `io` (hosts only).
    pub(super) host_of_node: Vec<Option<usize>>,
    /// Per node: its namespace (empty for routers).
    pub(super) ns_of_node: Vec<String>,
    /// (host, key, value) of every sysctl set (the `live_sysctl` table).
    pub(super) sysctls: Vec<(String, String, String)>,
}

/// One namespace per host (named with the owner `pid`), with its TCP sysctls and its
/// TUN towards its one link; each namespace is recorded in `created` as it is made.
pub(super) fn set_up(
    w: &World,
    live: &LiveConfig,
    hosts: &[NodeId],
    pid: u32,
    created: &mut Created,
) -> Result<Hosts, Error> {
    let ecn_hosts = ecn_hosts(w);
    let mut up = Hosts {
        io: Vec::new(),
        host_of_node: vec![None; w.nodes.len()],
        ns_of_node: vec![String::new(); w.nodes.len()],
        sysctls: Vec::new(),
    };
    for &h in hosts {
        let node = &w.nodes[h.0 as usize];
        let ns = format!("{NS_PREFIX}{pid}-{}", h.0);
        ip(&["netns", "add", &ns])?;
        created.namespaces.push(ns.clone());
        let ecn = live.ecn.unwrap_or(ecn_hosts.contains(&h));
        for (k, v) in configure_tcp(&ns, live, ecn)? {
            up.sysctls.push((node.name.clone(), k, v));
        }
        let fd = open_tun(&ns, node.addr, live.txqueuelen)?;
        up.host_of_node[h.0 as usize] = Some(up.io.len());
        up.ns_of_node[h.0 as usize] = ns;
        up.io.push(HostIo::new(h, fd));
    }
    Ok(up)
}

/// Sets namespace `ns`'s TCP sysctls (`[live]`: buffers, ECN, SACK, timestamps, RACK/TLP,
/// congestion control); returns (key, value) of each as set.
fn configure_tcp(ns: &str, live: &LiveConfig, ecn: bool) -> Result<Vec<(String, String)>, Error> {
    let (rmem, wmem) = (live.rmem.0, live.wmem.0);
    let mut set: Vec<(&str, String)> = vec![
        ("net.ipv6.conf.all.disable_ipv6", "1".into()),
        ("net.ipv6.conf.default.disable_ipv6", "1".into()),
        ("net.ipv4.tcp_ecn", (ecn as u8).to_string()),
        ("net.ipv4.tcp_sack", (live.sack as u8).to_string()),
        (
            "net.ipv4.tcp_timestamps",
            (live.timestamps as u8).to_string(),
        ),
        ("net.ipv4.tcp_no_metrics_save", "1".into()),
        ("net.ipv4.tcp_rmem", format!("4096 131072 {rmem}")),
        ("net.ipv4.tcp_wmem", format!("4096 16384 {wmem}")),
    ];
    if !live.rack_tlp {
        set.push(("net.ipv4.tcp_recovery", "0".into()));
        set.push(("net.ipv4.tcp_early_retrans", "0".into()));
    }
    set_sysctls(ns, &set)?;
    let mut done: Vec<(String, String)> = set.into_iter().map(|(k, v)| (k.into(), v)).collect();
    // A namespace may only default to a congestion control the host allows
    // (`tcp_allowed_congestion_control`, global; not ours to change): otherwise the
    // agents set it on every socket (TCP_CONGESTION, permitted to root).
    let cc_key = "net.ipv4.tcp_congestion_control";
    let how = match set_sysctls(ns, &[(cc_key, live.cc.name().into())]) {
        Ok(()) => live.cc.name().to_string(),
        Err(_) => format!(
            "(not permitted; TCP_CONGESTION={} on every socket)",
            live.cc.name()
        ),
    };
    done.push((cc_key.to_string(), how));
    Ok(done)
}

/// Opens namespace `ns`'s TUN device and gives it the host's address, the queue length
/// `txqueuelen`, a 1500-byte MTU and the default route.
fn open_tun(ns: &str, addr: [u8; 4], txqueuelen: u32) -> Result<OwnedFd, Error> {
    let fd = sys::in_netns(ns, || sys::open_tun(TUN))
        .map_err(|e| live_err(format!("TUN in {ns}: {e}")))?;
    let a = super::addr_str(addr);
    ip(&["-n", ns, "link", "set", "lo", "up"])?;
    ip(&["-n", ns, "addr", "add", &format!("{a}/32"), "dev", TUN])?;
    let txq = txqueuelen.to_string();
    ip(&[
        "-n",
        ns,
        "link",
        "set",
        TUN,
        "txqueuelen",
        &txq,
        "mtu",
        "1500",
        "up",
    ])?;
    ip(&["-n", ns, "route", "add", "default", "dev", TUN])?;
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_live_names_with_a_pid_are_ours() {
        assert_eq!(owner_pid("qlab123-4"), Some(123));
        assert_eq!(owner_pid("qlab123-"), None);
        assert_eq!(owner_pid("qlab-4"), None);
        assert_eq!(owner_pid("qlab12x-4"), None);
        assert_eq!(owner_pid("qlab12-4a"), None);
        assert_eq!(owner_pid("other123-4"), None);
        assert_eq!(owner_pid("myqlab1-1"), None);
    }
}
