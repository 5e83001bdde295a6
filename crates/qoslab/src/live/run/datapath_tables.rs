//! What the datapath measured: the `live_timing`, `live_hosts`, `live_sysctl` and
//! `live_conns` tables, and the lateness summary the timing verdict starts from.

use super::addr_str;
use super::datapath::{ConnKey, ConnStats, TunIo};
use super::verdict::{P999_BOUND, P99_BOUND};
use crate::engine::Lateness;
use crate::live::ipv4::{PROTO_ICMP, PROTO_TCP, PROTO_UDP};
use crate::packet::NodeId;
use crate::stats::{Column, RunResult, Table};
use crate::time::SimTime;
use crate::world::World;

/// The `live_timing` table (lateness per link, of the other events, the TUN writes, the
/// wake-ups and all events) and the summary's `live_lateness_*`, `live_timing_ok` (the
/// lateness bounds alone), `live_ring_lost` and `live_injected`.
pub(super) fn timing(r: &mut RunResult, w: &World, io: &TunIo) {
    let ws = w.wall.as_ref().expect("a wall run");
    let mut rows: Vec<(String, &Lateness)> = w
        .ifaces
        .iter()
        .zip(&ws.by_iface)
        .map(|(f, l)| {
            let name = format!(
                "{}->{}",
                w.nodes[f.node.0 as usize].name, w.nodes[f.peer.0 as usize].name
            );
            (name, l)
        })
        .collect();
    let mut all = Lateness::default();
    for l in &ws.by_iface {
        all.merge(l);
    }
    all.merge(&ws.other);
    rows.push(("(other events)".into(), &ws.other));
    rows.push(("(tun writes)".into(), &io.write_late));
    // Sleeps that ran to their timeout: how late the thread woke (not an event).
    rows.push(("(wake-ups)".into(), &io.wake_late));
    rows.push(("(all events)".into(), &all));
    r.tables.insert("live_timing".into(), timing_table(&rows));
    let p99 = all.quantile(0.99).unwrap_or(0);
    let p999 = all.quantile(0.999).unwrap_or(0);
    let ok = p99 <= P99_BOUND.as_nanos() && p999 <= P999_BOUND.as_nanos();
    r.summary
        .insert("live_lateness_p99_us".into(), (p99 as f64 / 1e3).into());
    r.summary
        .insert("live_lateness_p999_us".into(), (p999 as f64 / 1e3).into());
    r.summary.insert("live_timing_ok".into(), ok.into());
    r.summary
        .insert("live_ring_lost".into(), io.ring_lost.into());
    r.summary.insert("live_injected".into(), ws.injected.into());
}

/// The `live_timing` table of `rows` (place, lateness): events, mean, quantiles [µs]
/// and the events later than each bound.
fn timing_table(rows: &[(String, &Lateness)]) -> Table {
    let us = |l: &Lateness, q: f64| l.quantile(q).map_or(f64::NAN, |ns| ns as f64 / 1e3);
    let mut t = Table::default();
    t.push(
        "place",
        Column::Str(rows.iter().map(|x| x.0.clone()).collect()),
    );
    t.push(
        "events",
        Column::Int(rows.iter().map(|x| x.1.count() as i64).collect()),
    );
    t.push(
        "mean_us",
        Column::Float(rows.iter().map(|x| x.1.mean() / 1e3).collect()),
    );
    for (name, q) in [
        ("p50_us", 0.5),
        ("p99_us", 0.99),
        ("p999_us", 0.999),
        ("max_us", 1.0),
    ] {
        t.push(
            name,
            Column::Float(rows.iter().map(|x| us(x.1, q)).collect()),
        );
    }
    t.push(
        "late_100us",
        Column::Int(rows.iter().map(|x| x.1.over(P99_BOUND) as i64).collect()),
    );
    t.push(
        "late_2ms",
        Column::Int(rows.iter().map(|x| x.1.over(P999_BOUND) as i64).collect()),
    );
    t
}

/// The `live_hosts` table: each host's address and TUN counters (`tun_stats`: the
/// kernel's (tx_dropped, tx_packets) of its TUN).
pub(super) fn hosts(
    r: &mut RunResult,
    w: &World,
    io: &TunIo,
    hosts: &[NodeId],
    tun_stats: &[(u64, u64)],
) {
    let node = |h: &NodeId| &w.nodes[h.0 as usize];
    let count = |f: fn(&super::datapath::HostIo) -> u64| {
        Column::Int(io.hosts.iter().map(|h| f(h) as i64).collect())
    };
    let mut t = Table::default();
    t.push(
        "host",
        Column::Str(hosts.iter().map(|h| node(h).name.clone()).collect()),
    );
    t.push(
        "addr",
        Column::Str(hosts.iter().map(|h| addr_str(node(h).addr)).collect()),
    );
    t.push("tun_read", count(|h| h.rx));
    t.push("tun_written", count(|h| h.tx));
    t.push("tun_write_failed", count(|h| h.tx_failed));
    t.push("rejected", count(|h| h.rejected));
    t.push(
        "tun_tx_dropped",
        Column::Int(tun_stats.iter().map(|x| x.0 as i64).collect()),
    );
    t.push("tun_read_bytes", count(|h| h.rx_bytes));
    t.push("tun_written_bytes", count(|h| h.tx_bytes));
    r.tables.insert("live_hosts".into(), t);
}

/// The `live_sysctl` table: (host, key, value) of every sysctl set.
pub(super) fn sysctls(r: &mut RunResult, sysctls: &[(String, String, String)]) {
    let mut t = Table::default();
    let col = |f: fn(&(String, String, String)) -> &String| {
        Column::Str(sysctls.iter().map(|x| f(x).clone()).collect())
    };
    t.push("host", col(|x| &x.0));
    t.push("key", col(|x| &x.1));
    t.push("value", col(|x| &x.2));
    r.tables.insert("live_sysctl".into(), t);
}

/// The `live_conns` table: traffic that is none of the scenario's flows (the user's
/// programs, pings), per 5-tuple as the datapath saw it, with the hosts at its ends.
pub(super) fn conns(r: &mut RunResult, w: &World, io: &TunIo) {
    let host_name = |a: [u8; 4]| {
        io.map
            .host(a)
            .map_or(String::new(), |n| w.nodes[n.0 as usize].name.clone())
    };
    let secs = (w.end - SimTime::ZERO).as_secs_f64().max(1e-9);
    let rows: Vec<(&ConnKey, &ConnStats)> = io.conns.iter().collect();
    let proto = |p: u8| match p {
        PROTO_TCP => "tcp".to_string(),
        PROTO_UDP => "udp".to_string(),
        PROTO_ICMP => "icmp".to_string(),
        p => p.to_string(),
    };
    let key_str =
        |f: &dyn Fn(&ConnKey) -> String| Column::Str(rows.iter().map(|(k, _)| f(k)).collect());
    let key_int =
        |f: fn(&ConnKey) -> u16| Column::Int(rows.iter().map(|(k, _)| f(k) as i64).collect());
    let int =
        |f: fn(&ConnStats) -> u64| Column::Int(rows.iter().map(|(_, c)| f(c) as i64).collect());
    let mut t = Table::default();
    t.push("proto", key_str(&|k| proto(k.0)));
    t.push("src", key_str(&|k| addr_str(k.1)));
    t.push("sport", key_int(|k| k.2));
    t.push("dst", key_str(&|k| addr_str(k.3)));
    t.push("dport", key_int(|k| k.4));
    t.push("src_host", key_str(&|k| host_name(k.1)));
    t.push("dst_host", key_str(&|k| host_name(k.3)));
    t.push("pkts_sent", int(|c| c.read));
    t.push("bytes_sent", int(|c| c.read_bytes));
    t.push("pkts_delivered", int(|c| c.delivered));
    t.push("bytes_delivered", int(|c| c.delivered_bytes));
    t.push("payload_delivered", int(|c| c.payload_delivered));
    t.push(
        "delivered_bps",
        Column::Float(
            rows.iter()
                .map(|(_, c)| c.delivered_bytes as f64 * 8.0 / secs)
                .collect(),
        ),
    );
    r.tables.insert("live_conns".into(), t);
}
