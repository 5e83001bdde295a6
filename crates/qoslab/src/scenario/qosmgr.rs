//! Builds the `[[qosmgr]]` entries of a scenario: binds each manager to the TCP flows of
//! its host that its filter matches and splits its bucket (P0 §4.2).

use super::model::Scenario;
use super::trc::{path, rtt_net};
use crate::cond::PolicyAction;
use crate::config::ScenarioError;
use crate::net::NodeKind;
use crate::packet::{FlowId, Header, NodeId, Packet, TcpHeader};
use crate::qosmgr::{DepthSplit, Order, QosManager, Scheme, SharingName, TokenShare};
use crate::time::{Dur, Rate};
use crate::world::{FlowApp, QosSet, World};

/// Builds every manager of `sc` into `w` (after flows and routes).
pub fn build(
    sc: &Scenario,
    w: &mut World,
    resolve: &dyn Fn(&str) -> Option<NodeId>,
) -> Result<(), ScenarioError> {
    if sc.qosmgr.is_empty() {
        return Ok(());
    }
    let mut owner: Vec<Option<usize>> = vec![None; w.flows.len()];
    let mut managers = Vec::new();
    for (i, m) in sc.qosmgr.iter().enumerate() {
        let key = |k: &str| format!("qosmgr[{i}].{k}");
        let err = |k: &str, msg: String| ScenarioError::new(key(k), msg);
        let host = resolve(&m.at).ok_or_else(|| err("at", format!("no node named {:?}", m.at)))?;
        if w.nodes[host.0 as usize].kind != NodeKind::Host {
            return Err(err(
                "at",
                format!("expected a host, found router {:?}", m.at),
            ));
        }
        let filter = m.filter.build(&key("filter"), resolve)?;
        let p = &m.profile;
        if p.rate == Rate::from_bps(0) {
            return Err(err(
                "profile.rate",
                "expected a positive rate, found 0".into(),
            ));
        }
        if p.peak == Some(Rate::from_bps(0)) {
            return Err(err(
                "profile.peak",
                "expected a positive rate, found 0".into(),
            ));
        }
        if m.action == PolicyAction::Police {
            return Err(err(
                "action",
                "a QoS manager shapes or polices and marks: expected \"shape\" or \"police_and_mark\"".into(),
            ));
        }
        if m.period == Dur::ZERO {
            return Err(err("period", "expected a positive period, found 0".into()));
        }
        let scheme = match m.sharing {
            SharingName::Partitioned => Scheme::Partitioned,
            SharingName::Common => Scheme::Common,
            SharingName::Logical => Scheme::Logical,
        };
        if scheme != Scheme::Common && m.order.is_some() {
            return Err(err(
                "order",
                "the service order applies to sharing = \"common\" only".into(),
            ));
        }
        if scheme == Scheme::Common && m.depth.is_some() {
            return Err(err(
                "depth",
                "a common bucket is not split: leave depth out".into(),
            ));
        }
        // The host's TCP flows the filter takes, seen as their first data packet.
        let mut flows = Vec::new();
        for (j, f) in w.flows.iter().enumerate() {
            let FlowApp::Tcp(_) = f.app else { continue };
            let probe = Packet {
                flow: FlowId(j as u32),
                src: f.src,
                dst: f.dst,
                src_port: f.src_port,
                dst_port: f.dst_port,
                hdr: Header::Tcp(TcpHeader::default()),
                ..Default::default()
            };
            if f.src != host || !filter.matches(&probe) {
                continue;
            }
            if let Some(other) = owner[j] {
                return Err(err(
                    "filter",
                    format!("flow {:?} is already bound to qosmgr[{other}]", f.name),
                ));
            }
            owner[j] = Some(i);
            let mss = sc.flow[j].tcp().map_or(1000, |t| t.mss);
            let back = path(w, f.dst, f.src);
            let fwd = path(w, f.src, f.dst);
            flows.push((FlowId(j as u32), rtt_net(w, &fwd, &back, mss)));
        }
        if flows.is_empty() {
            return Err(err(
                "filter",
                format!("matches no TCP flow sent by {:?}", m.at),
            ));
        }
        let split = m.depth.unwrap_or(match scheme {
            Scheme::Logical => DepthSplit::Rtt,
            _ => DepthSplit::Equal,
        });
        let weights: Vec<f64> = flows
            .iter()
            .map(|(_, rtt)| match split {
                DepthSplit::Equal => 1.0,
                DepthSplit::Rtt => rtt.as_secs_f64(),
            })
            .collect();
        // Every connection's bucket must hold one packet (L_m): its depth share is
        // raised to L_m where needed (the others give up the difference).
        let parts = if scheme == Scheme::Common {
            1
        } else {
            flows.len() as u64
        };
        if p.burst.0 < parts * p.mtu.0 {
            return Err(err(
                "profile.burst",
                format!(
                    "a burst of {} B cannot give each of the {parts} bucket(s) one packet (mtu {} B); increase the burst to at least {} B",
                    p.burst.0,
                    p.mtu.0,
                    parts * p.mtu.0
                ),
            ));
        }
        let share = TokenShare::with_min_depth(
            scheme,
            p.rate,
            p.burst.0,
            &weights,
            p.peak.map(|r| (r, p.mtu.0)),
            p.mtu.0,
        );
        managers.push(QosManager::new(
            m.name.clone().unwrap_or_else(|| format!("qosmgr{i}")),
            m.action,
            share,
            m.order.unwrap_or(Order::Fcfs),
            m.period,
            &m.triggers,
            m.active_from,
            &flows,
        ));
    }
    w.qos = Some(Box::new(QosSet::new(managers, w.flows.len())));
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::{build, parse, Format};

    /// The P0 topology, short: server → router (1 Mb/s) → two clients (500 kb/s), RTTs
    /// 50 and 300 ms, two NewReno transfers, and `mgr` appended.
    fn scenario(mgr: &str) -> String {
        format!(
            r#"
            duration = "20s"
            [[node]]
            name = "s"
            [[node]]
            name = "r"
            kind = "router"
            [[node]]
            name = "c1"
            [[node]]
            name = "c2"
            [[link]]
            a = "s"
            b = "r"
            rate = "1Mbps"
            delay = "5ms"
            [[link]]
            a = "r"
            b = "c1"
            rate = "500kbps"
            delay = "20ms"
            [[link]]
            a = "r"
            b = "c2"
            rate = "500kbps"
            delay = "145ms"
            [[flow]]
            name = "a"
            from = "s"
            to = "c1"
            tcp = {{ mss = 1000, delayed_ack = false }}
            [[flow]]
            name = "b"
            from = "s"
            to = "c2"
            tcp = {{ mss = 1000, delayed_ack = false }}
            {mgr}
            "#
        )
    }

    fn err(mgr: &str) -> (String, String) {
        let sc = parse(&scenario(mgr), Format::Toml).unwrap();
        let e = build(&sc).unwrap_err();
        (e.key, e.message)
    }

    const HEAD: &str = "[[qosmgr]]\nat = \"s\"\n";

    #[test]
    fn mistakes_are_named_by_key() {
        let p = "profile = { rate = \"320kbps\", burst = \"20KB\" }\n";
        let (k, m) = err(&format!(
            "{HEAD}{p}filter = {{ dst = \"c9\" }}\naction = \"shape\"\nsharing = \"common\""
        ));
        assert_eq!(k, "qosmgr[0].filter.dst");
        assert!(m.contains("c9"), "{m}");
        let (k, m) = err(&format!(
            "{HEAD}{p}filter = {{ src = \"c1\" }}\naction = \"shape\"\nsharing = \"common\""
        ));
        assert_eq!(k, "qosmgr[0].filter");
        assert!(m.contains("no TCP flow"), "{m}");
        let (k, _) = err(&format!(
            "{HEAD}{p}action = \"shape\"\nsharing = \"logical\"\norder = \"lru\""
        ));
        assert_eq!(k, "qosmgr[0].order");
        let (k, _) = err(&format!(
            "{HEAD}{p}action = \"police\"\nsharing = \"common\""
        ));
        assert_eq!(k, "qosmgr[0].action");
        // 2 kB cannot give two buckets one 1 500 B packet each.
        let (k, m) = err(&format!(
            "{HEAD}profile = {{ rate = \"320kbps\", burst = \"2KB\" }}\naction = \"shape\"\nsharing = \"logical\""
        ));
        assert_eq!(k, "qosmgr[0].profile.burst");
        assert!(m.contains("3000 B"), "{m}");
        let (k, _) = err(&format!(
            "{HEAD}{p}action = \"shape\"\nsharing = \"common\"\n[[qosmgr]]\nat = \"s\"\n{p}action = \"shape\"\nsharing = \"common\""
        ));
        assert_eq!(k, "qosmgr[1].filter");
    }

    #[test]
    fn a_protocol_filter_sees_the_flows_as_tcp() {
        // The manager's filter is tried on each flow's first data segment: a TCP one.
        let p = "profile = { rate = \"320kbps\", burst = \"20KB\" }\naction = \"shape\"\nsharing = \"common\"\n";
        let text = scenario(&format!("{HEAD}{p}filter = {{ proto = \"tcp\" }}"));
        let w = build(&parse(&text, Format::Toml).unwrap()).unwrap();
        assert_eq!(w.qos.as_deref().unwrap().managers[0].conns.len(), 2);
        let (k, m) = err(&format!("{HEAD}{p}filter = {{ proto = \"udp\" }}"));
        assert_eq!(k, "qosmgr[0].filter");
        assert!(m.contains("no TCP flow"), "{m}");
    }

    #[test]
    fn a_shaped_aggregate_gets_its_rate_and_marking_marks_within_it() {
        // 320 kb/s = 40 000 B/s for two connections on a 1 Mb/s link: shaped, the
        // delivered packets (1 040 B each) over 20 s stay within b + r·T and reach
        // ≥ 90 % of r·T; police-and-mark sends more but marks at most b + r·T.
        let run = |action: &str| {
            let text = scenario(&format!(
                "{HEAD}profile = {{ rate = \"320kbps\", burst = \"20KB\" }}\naction = \"{action}\"\nsharing = \"logical\""
            ));
            let mut w = build(&parse(&text, Format::Toml).unwrap()).unwrap();
            w.run().unwrap();
            let wire: f64 = w
                .flows
                .iter()
                .map(|f| f.counters.goodput_bytes as f64 * 1.04)
                .sum();
            let q = w.qos.as_deref().unwrap();
            let marked: u64 = q.managers[0]
                .conns
                .iter()
                .map(|c| c.counters.marked_bytes)
                .sum();
            let ticks = q.managers[0].ticks;
            (wire, marked as f64, ticks)
        };
        let (shaped, _, ticks) = run("shape");
        assert!(shaped <= 20_000.0 + 40_000.0 * 20.0, "{shaped}");
        assert!(shaped >= 0.9 * 40_000.0 * 20.0, "{shaped}");
        assert!(ticks > 0);
        let (total, marked, ticks) = run("police_and_mark");
        assert!(total > 1.2 * 40_000.0 * 20.0, "{total}");
        assert!(marked <= 20_000.0 + 40_000.0 * 20.0, "{marked}");
        assert!(marked >= 0.9 * 40_000.0 * 20.0, "{marked}");
        assert_eq!(ticks, 0, "marking never waits");
    }

    #[test]
    fn window_closed_writes_and_new_connections_trigger_within_the_profile() {
        // The two bulk connections plus an application writing 3 kB every 20 ms on a
        // third (faster than its share: its window fills with packets held by the
        // manager) and five 20 kB transfers opening at 2, 4, …, 10 s, all in one LRU
        // common bucket of 320 kb/s, 20 kB. With the two triggers on, each releases
        // packets; off, neither does; either way the aggregate stays within b + r·T and
        // every short transfer completes.
        let mut extra = String::from(
            "[[flow]]\nname = \"w\"\nfrom = \"s\"\nto = \"c1\"\ntcp = { mss = 1000, delayed_ack = false }\nwrites = { size = \"3KB\", every = \"20ms\" }\n",
        );
        for k in 1..=5 {
            extra.push_str(&format!(
                "[[flow]]\nname = \"short{k}\"\nfrom = \"s\"\nto = \"c2\"\nstart = \"{}s\"\nbytes = \"20KB\"\ntcp = {{ mss = 1000, delayed_ack = false }}\n",
                2 * k
            ));
        }
        let run = |triggers: &str| {
            let text = scenario(&format!(
                "{extra}{HEAD}profile = {{ rate = \"320kbps\", burst = \"20KB\" }}\naction = \"shape\"\nsharing = \"common\"\norder = \"lru\"\ntriggers = {triggers}"
            ));
            let mut w = build(&parse(&text, Format::Toml).unwrap()).unwrap();
            w.run().unwrap();
            let res = crate::stats::collect(&w, "t", 1, 0.0);
            let q = res.tables.get("qosmgr").unwrap();
            let sum = |c: &str| -> i64 {
                match q.get(c).unwrap() {
                    crate::stats::Column::Int(v) => v.iter().sum(),
                    _ => panic!("{c}"),
                }
            };
            let wire: f64 = w
                .flows
                .iter()
                .map(|f| f.counters.goodput_bytes as f64 * 1.04)
                .sum();
            let tr = res.tables.get("transfers").unwrap();
            let crate::stats::Column::Float(fct) = tr.get("completion").unwrap() else {
                panic!("completion")
            };
            assert_eq!(fct.len(), 5);
            assert!(fct.iter().all(|x| x.is_finite() && *x > 0.0), "{fct:?}");
            (sum("released_closed_send"), sum("released_new_conn"), wire)
        };
        let (cs, nc, wire) = run("[\"send\", \"ack\", \"closed_send\", \"new_conn\"]");
        assert!(cs > 0 && nc > 0, "closed_send {cs}, new_conn {nc}");
        assert!(wire <= 20_000.0 + 40_000.0 * 20.0, "{wire}");
        let (cs, nc, wire) = run("[\"send\", \"ack\"]");
        assert_eq!((cs, nc), (0, 0));
        assert!(wire <= 20_000.0 + 40_000.0 * 20.0, "{wire}");
    }
}
