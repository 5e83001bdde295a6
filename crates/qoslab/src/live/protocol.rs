//! What a host's agent (`python/qoslab/live_agent.py`) reports at the end of a live run,
//! as types: a key the agent renames or drops is an error naming it, not a column of
//! zeros, and an error names the host and the path to it (`telnet.2.writes[1]`). Fields
//! the kernel may not give (a socket's `TCP_INFO` after it closed, a ping that got no
//! answer) and times of what did not happen by the end (a web object's last byte, a
//! program's exit) are `Option`s, shown as NaN or 0 where the tables need a number.

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
    /// The user's programs run on this host (`[[live.program]]`).
    pub programs: Vec<Program>,
    /// Per Telnet flow this host sends: its writes.
    pub telnet: BTreeMap<String, TelnetWrites>,
    /// Per Telnet flow this host sinks: `(t [s, monotonic], cumulative bytes read)` at
    /// every read.
    pub arrivals: BTreeMap<String, Vec<(f64, u64)>>,
    /// Per web flow this host is the client of: its objects and pages.
    pub web: BTreeMap<String, Web>,
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
    /// The socket's `TCP_INFO` sampled each interval, when traced.
    pub trace: Vec<TraceSample>,
}

/// One `TCP_INFO` sample of a traced sender (`[t, cwnd, ssthresh, srtt, rto,
/// total_retrans]`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TraceSample {
    /// When [s from the agent's start].
    pub t: f64,
    /// Congestion window [segments].
    pub cwnd: i64,
    /// Slow-start threshold [segments].
    pub ssthresh: i64,
    /// Smoothed RTT [s].
    pub srtt: f64,
    /// Retransmission timeout [s].
    pub rto: f64,
    /// Segments retransmitted so far.
    pub total_retrans: i64,
}

/// A user's program as the agent ran it (`programs[i]`); what did not happen (it did not
/// start, or had not ended) is absent.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// Its index in `[[live.program]]`.
    pub index: usize,
    /// Its process id, once started.
    pub pid: Option<i64>,
    /// When it started [s from the agent's start].
    pub started: Option<f64>,
    /// When it ended [s from the agent's start].
    pub ended: Option<f64>,
    /// Its exit status as a shell gives it (128 + the signal when killed by one; 127
    /// when it could not start).
    pub exit_code: Option<i64>,
    /// The signal that killed it (0: none).
    pub signal: Option<i64>,
    /// Whether the agent stopped it (its stop time, or the run's end).
    #[serde(default)]
    pub stopped: bool,
    /// Why it could not start.
    pub error: Option<String>,
}

/// A Telnet sender's writes (`telnet[flow]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelnetWrites {
    /// The agent's start on the machine's monotonic clock [s].
    pub t0: f64,
    /// Each write, in order.
    pub writes: Vec<TelnetWrite>,
}

/// One Telnet write (`[session, t, size, end]`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TelnetWrite {
    /// The session it belongs to.
    pub session: i64,
    /// When it was written [s, monotonic].
    pub at: f64,
    /// Bytes written.
    pub size: i64,
    /// The connection's byte offset just past it.
    pub end: u64,
}

/// A web client's objects and pages (`web[flow]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Web {
    /// Each object fetched or launched.
    pub objects: Vec<WebObject>,
    /// Each page started.
    pub pages: Vec<WebPage>,
}

/// One web object (`[session, page, bytes, requested, first, done, received, syns]`);
/// times [s from the agent's start] are absent for what did not happen by the end.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebObject {
    /// Its session.
    pub session: u64,
    /// Its page.
    pub page: u64,
    /// Its size [B].
    pub bytes: u64,
    /// When its connection was opened (the SYN).
    pub requested: Option<f64>,
    /// When its first byte was read.
    pub first: Option<f64>,
    /// When its last byte was read.
    pub done: Option<f64>,
    /// Bytes of it read.
    pub received: u64,
    /// SYNs sent for it.
    pub syns: u64,
}

/// One web page (`[session, objects, start, done]`); times as [`WebObject`]'s.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebPage {
    /// Its session.
    pub session: u64,
    /// Its objects.
    pub objects: u64,
    /// When its first object was requested.
    pub start: Option<f64>,
    /// When its last object was complete.
    pub done: Option<f64>,
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

/// Parses one agent's results, naming the host and where (the path of keys and
/// positions) the line does not fit.
pub fn parse(host: &str, v: &serde_json::Value) -> Result<AgentResults, String> {
    serde_path_to_error::deserialize(v).map_err(|e| format!("agent in {host}: results: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results as `live_agent.py` writes them: one of each part, a traced sender, a
    /// program that ran and one that did not start, Telnet and web flows.
    fn sample() -> serde_json::Value {
        serde_json::json!({
            "sinks": {"0": {"goodput_bytes": 1448, "series": [[1.0, 1448]]}},
            "senders": {"0": {"rto": 0.204, "srtt": 0.0401, "ssthresh": 20, "cwnd": 31,
                               "total_retrans": 2, "min_rtt": 0.04, "cc": "cubic",
                               "trace": [[0.1, 10, 2147483647, 0.0401, 0.204, 0]]},
                        "1": {"cc": "reno", "trace": []}},
            "ping": [{"to": "b", "rtts": [0.02, null]}],
            "programs": [{"index": 0, "pid": 42, "started": 0.5, "ended": 1.5,
                          "exit_code": 143, "signal": 15, "stopped": true},
                         {"index": 1, "error": "No such file", "exit_code": 127}],
            "telnet": {"2": {"t0": 100.0, "writes": [[0, 100.5, 12, 12], [0, 100.7, 3, 15]]}},
            "arrivals": {"2": [[100.51, 12], [100.72, 15]]},
            "web": {"3": {"objects": [[0, 0, 1460, 0.1, 0.15, 0.2, 1460, 1],
                                      [0, 0, 2920, 0.3, null, null, 0, 1]],
                          "pages": [[0, 2, 0.1, null]]}}
        })
    }

    /// The error of parsing `v` after `edit`, asserted to name the host and `what`.
    fn error_naming(edit: impl FnOnce(&mut serde_json::Value), what: &str) -> String {
        let mut v = sample();
        edit(&mut v);
        let e = parse("h1", &v).unwrap_err();
        assert!(e.contains("agent in h1") && e.contains(what), "{what}: {e}");
        e
    }

    /// Renames key `from` to `to` in object `v`.
    fn rename(v: &mut serde_json::Value, from: &str, to: &str) {
        let o = v.as_object_mut().unwrap();
        let x = o.remove(from).unwrap();
        o.insert(to.into(), x);
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
    fn the_applications_parts_parse_with_what_did_not_happen_as_none() {
        let r = parse("a", &sample()).unwrap();
        let t = r.senders["0"].trace[0];
        assert_eq!((t.t, t.cwnd, t.ssthresh), (0.1, 10, 2_147_483_647));
        assert_eq!((t.srtt, t.rto, t.total_retrans), (0.0401, 0.204, 0));
        let (ran, failed) = (&r.programs[0], &r.programs[1]);
        assert_eq!(
            (ran.index, ran.exit_code, ran.signal),
            (0, Some(143), Some(15))
        );
        assert!(ran.stopped && ran.error.is_none());
        assert_eq!((failed.index, failed.exit_code), (1, Some(127)));
        assert!(!failed.stopped && failed.started.is_none());
        assert_eq!(failed.error.as_deref(), Some("No such file"));
        let tn = &r.telnet["2"];
        assert_eq!(tn.t0, 100.0);
        assert_eq!(tn.writes[1].at, 100.7);
        assert_eq!(
            (tn.writes[1].session, tn.writes[1].size, tn.writes[1].end),
            (0, 3, 15)
        );
        assert_eq!(r.arrivals["2"], vec![(100.51, 12), (100.72, 15)]);
        let web = &r.web["3"];
        assert_eq!(web.objects[0].done, Some(0.2));
        assert_eq!((web.objects[1].first, web.objects[1].received), (None, 0));
        assert_eq!((web.pages[0].objects, web.pages[0].done), (2, None));
    }

    #[test]
    fn a_renamed_or_missing_key_is_an_error_naming_it() {
        error_naming(
            |v| rename(&mut v["sinks"]["0"], "goodput_bytes", "goodput"),
            "goodput",
        );
        error_naming(|v| rename(v, "senders", "sender"), "senders");
        let mut v = sample();
        v["senders"]["0"]["cwnd"] = serde_json::json!("many");
        assert!(parse("c", &v).is_err());
    }

    #[test]
    fn a_program_with_a_renamed_or_missing_key_is_an_error_naming_it() {
        let e = error_naming(
            |v| rename(&mut v["programs"][0], "exit_code", "status"),
            "status",
        );
        assert!(e.contains("programs[0]"), "{e}");
        error_naming(
            |v| {
                v["programs"][1].as_object_mut().unwrap().remove("index");
            },
            "index",
        );
        error_naming(
            |v| v["programs"][0]["stopped"] = "yes".into(),
            "programs[0].stopped",
        );
    }

    #[test]
    fn telnet_writes_and_arrivals_that_do_not_fit_are_errors_naming_them() {
        error_naming(
            |v| rename(&mut v["telnet"]["2"], "writes", "sent"),
            "writes",
        );
        error_naming(|v| rename(&mut v["telnet"]["2"], "t0", "start"), "t0");
        // A write of three fields (one dropped): its place is named.
        error_naming(
            |v| v["telnet"]["2"]["writes"][1] = serde_json::json!([0, 100.7, 3]),
            "telnet.2.writes[1]",
        );
        error_naming(
            |v| v["arrivals"]["2"][0] = serde_json::json!([100.51, "12"]),
            "arrivals.2[0]",
        );
    }

    #[test]
    fn web_objects_and_pages_that_do_not_fit_are_errors_naming_them() {
        error_naming(
            |v| rename(&mut v["web"]["3"], "pages", "page_list"),
            "pages",
        );
        error_naming(
            |v| {
                v["web"]["3"].as_object_mut().unwrap().remove("objects");
            },
            "objects",
        );
        // An object with a ninth field, and a page whose count is a string.
        error_naming(
            |v| {
                let o = v["web"]["3"]["objects"][0].as_array_mut().unwrap();
                o.push(0.into());
            },
            "web.3.objects[0]",
        );
        error_naming(
            |v| v["web"]["3"]["pages"][0][1] = "two".into(),
            "web.3.pages[0]",
        );
    }

    #[test]
    fn a_trace_sample_that_does_not_fit_is_an_error_naming_it() {
        error_naming(
            |v| v["senders"]["0"]["trace"][0] = serde_json::json!([0.1, 10, 20, 0.04, 0.2]),
            "senders.0.trace[0]",
        );
        error_naming(
            |v| v["senders"]["0"]["trace"][0][1] = serde_json::json!(null),
            "senders.0.trace[0]",
        );
    }
}
