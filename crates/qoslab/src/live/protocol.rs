//! What a host's agent (`python/qoslab/live_agent.py`) reports at the end of a live run,
//! as types: a key the agent renames or drops is an error naming it, not a column of
//! zeros. Fields the kernel may not give (a socket's `TCP_INFO` after it closed, a ping
//! that got no answer) are `Option`s, shown as NaN or 0 where the tables need a number.

use std::collections::BTreeMap;

use serde::Deserialize;

/// One agent's results line (`results()` in the agent).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentResults {
    /// Per flow index (as a string): what the flow's sink on this host received.
    pub sinks: BTreeMap<String, Sink>,
    /// Per flow index: the flow's sending socket on this host, as `TCP_INFO` saw it last.
    pub senders: BTreeMap<String, Sender>,
    /// The pings this host sent.
    pub ping: Vec<Ping>,
    /// The user's programs run on this host (`[[live.program]]`), read by their table.
    pub programs: Vec<serde_json::Value>,
    /// Telnet writes per flow, read by the Telnet tables.
    pub telnet: BTreeMap<String, serde_json::Value>,
    /// Telnet arrivals per flow at the receiving host.
    pub arrivals: BTreeMap<String, serde_json::Value>,
    /// WWW objects per flow, read by the web tables.
    pub web: BTreeMap<String, serde_json::Value>,
}

/// A sink's count (`sinks[flow]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sink {
    /// Payload bytes received after the warm-up.
    pub goodput_bytes: i64,
    /// `(t [s], cumulative bytes)` samples.
    pub series: Vec<(f64, i64)>,
}

/// A sending socket's last `TCP_INFO` (`senders[flow]`); the kernel's fields are absent
/// when the socket had closed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sender {
    /// Retransmission timeout [s].
    pub rto: Option<f64>,
    /// Smoothed RTT [s].
    pub srtt: Option<f64>,
    /// Slow-start threshold [segments].
    pub ssthresh: Option<i64>,
    /// Congestion window [segments].
    pub cwnd: Option<i64>,
    /// Segments retransmitted over the connection's life.
    pub total_retrans: Option<i64>,
    /// The smallest RTT the kernel saw [s] (kernels that report it).
    pub min_rtt: Option<f64>,
    /// The socket's congestion control (`TCP_CONGESTION`).
    pub cc: String,
    /// `[seq, cwnd, ssthresh, srtt, rto, total_retrans]` samples, when traced.
    pub trace: Vec<serde_json::Value>,
}

/// One ping target's round trips (`ping[i]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ping {
    /// The host pinged.
    pub to: String,
    /// Each probe's round trip [s], or null when none came back.
    pub rtts: Vec<Option<f64>>,
}

/// Parses one agent's results, naming the host and the key that does not fit.
pub fn parse(host: &str, v: &serde_json::Value) -> Result<AgentResults, String> {
    AgentResults::deserialize(v).map_err(|e| format!("agent in {host}: results: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> serde_json::Value {
        serde_json::json!({
            "sinks": {"0": {"goodput_bytes": 1448, "series": [[1.0, 1448]]}},
            "senders": {"0": {"rto": 0.204, "srtt": 0.0401, "ssthresh": 20, "cwnd": 31,
                               "total_retrans": 2, "min_rtt": 0.04, "cc": "cubic",
                               "trace": []},
                        "1": {"cc": "reno", "trace": []}},
            "ping": [{"to": "b", "rtts": [0.02, null]}],
            "programs": [], "telnet": {}, "arrivals": {}, "web": {}
        })
    }

    #[test]
    fn an_agents_results_parse_with_what_the_kernel_left_out_as_none() {
        let r = parse("a", &sample()).unwrap();
        assert_eq!(r.sinks["0"].goodput_bytes, 1448);
        assert_eq!(r.sinks["0"].series, vec![(1.0, 1448)]);
        assert_eq!(r.senders["0"].cwnd, Some(31));
        assert_eq!(r.senders["1"].srtt, None);
        assert_eq!(r.senders["1"].cc, "reno");
        assert_eq!(r.ping[0].rtts, vec![Some(0.02), None]);
    }

    #[test]
    fn a_renamed_or_missing_key_is_an_error_naming_it() {
        let mut v = sample();
        let s = v["sinks"]["0"].as_object_mut().unwrap();
        let g = s.remove("goodput_bytes").unwrap();
        s.insert("goodput".into(), g);
        let e = parse("a", &v).unwrap_err();
        assert!(e.contains("agent in a") && e.contains("goodput"), "{e}");
        let mut v = sample();
        v.as_object_mut().unwrap().remove("senders");
        let e = parse("b", &v).unwrap_err();
        assert!(e.contains("agent in b") && e.contains("senders"), "{e}");
        let mut v = sample();
        v["senders"]["0"]["cwnd"] = serde_json::json!("many");
        assert!(parse("c", &v).is_err());
    }
}
