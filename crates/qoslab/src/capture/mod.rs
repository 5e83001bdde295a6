//! Packet capture: any interface (and optionally one flow) written to a libpcap file
//! that Wireshark and tshark read, with real headers ([`wire`]) and the simulated time
//! as nanosecond timestamps ([`pcap`]).
//!
//! ```text
//!   scenario [[capture]] ──► resolve (build time, names → ids, no I/O) ──► World::capture_plan
//!   run_with(pcap_dir)   ──► Capturer::open (files created) ──► World::capture
//!   world: start_tx ─► on_tx      arrive ─► on_rx      (one `Option` check when off)
//!          queue drop, link loss ─► on_drop
//!   end of run           ──► Capturer::finish (flush; first I/O error reported)
//! ```
//!
//! A capture is an observer: it never changes a packet or the course of the run, so a
//! run with captures is the same run as without (same events, same results).

pub mod pcap;
pub mod wire;

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use crate::config::ScenarioError;
use crate::flow::{Flow, FlowApp};
use crate::net::{Iface, IfaceId, Routes};
use crate::packet::{FlowId, NodeId, Packet, Proto};
use crate::stats::{Column, Table};
use crate::time::{Dur, SimTime};

pub use pcap::PcapWriter;
use wire::{FlowInfo, Hop, MAX_HDR, TTL};

/// Which packets of an interface a capture point sees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Packets as they start transmission on the interface (lost ones included).
    #[default]
    Tx,
    /// Packets as they arrive at the node at the far end.
    Rx,
    /// Both of the above (each packet appears twice, at its two times).
    Both,
    /// Packets the interface drops: its queue's drops (as dropped, a CE mark
    /// included) and random loss on its link, at the time of the drop.
    Drop,
}

impl Direction {
    fn name(self) -> &'static str {
        match self {
            Direction::Tx => "tx",
            Direction::Rx => "rx",
            Direction::Both => "both",
            Direction::Drop => "drop",
        }
    }
}

fn default_snaplen() -> u32 {
    65_535
}

/// The default size limit of a capture file [bytes]: 1 GiB. A long run capturing a
/// busy link fills a disk otherwise (a 70 GB file was seen); raise it with `max_bytes`.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

fn default_max_bytes() -> u64 {
    DEFAULT_MAX_BYTES
}

/// A `[[capture]]` table of a scenario.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureSpec {
    /// The interface, `"a->b"`.
    pub iface: String,
    /// `"tx"` (default), `"rx"` or `"both"`.
    #[serde(default)]
    pub direction: Direction,
    /// Only this flow's packets (its data, ACKs and source quenches); default all.
    #[serde(default)]
    pub flow: Option<String>,
    /// Bytes stored per packet [bytes]; the record keeps the full length.
    #[serde(default = "default_snaplen")]
    pub snaplen: u32,
    /// File name in the output directory; default from the interface name.
    #[serde(default)]
    pub file: Option<String>,
    /// Capture packets from this simulated time on [s]; default from the start.
    #[serde(default)]
    pub start: Option<Dur>,
    /// Capture packets before this simulated time only [s]; default to the end.
    #[serde(default)]
    pub stop: Option<Dur>,
    /// The most bytes the file may hold [bytes] (headers included): packets that would
    /// take it past this are not written (counted in the `captures` table's `skipped`).
    #[serde(default = "default_max_bytes")]
    pub max_bytes: u64,
}

/// A validated capture point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapturePoint {
    /// The interface captured.
    pub iface: IfaceId,
    /// Its name, `"a->b"`.
    pub iface_name: String,
    /// Which packets.
    pub direction: Direction,
    /// Flow filter.
    pub flow: Option<FlowId>,
    /// Bytes stored per packet [bytes].
    pub snaplen: u32,
    /// File name (no directory part); points sharing a name share the file.
    pub file: String,
    /// First simulated time captured.
    pub start: SimTime,
    /// Simulated time from which nothing is captured.
    pub stop: SimTime,
    /// Size limit of the file this point writes to [bytes].
    pub max_bytes: u64,
}

fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Checks `[[capture]]` tables against the built network (no files are touched).
pub fn resolve(
    specs: &[CaptureSpec],
    ifaces: &[Iface],
    flows: &[Flow],
) -> Result<Vec<CapturePoint>, ScenarioError> {
    let mut out: Vec<CapturePoint> = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        let key = |k: &str| format!("capture[{i}].{k}");
        let iface = ifaces
            .iter()
            .position(|f| f.name == s.iface)
            .ok_or_else(|| {
                let known: Vec<&str> = ifaces.iter().map(|f| f.name.as_str()).collect();
                ScenarioError::new(
                    key("iface"),
                    format!(
                        "no interface named {:?} (interfaces: {})",
                        s.iface,
                        known.join(", ")
                    ),
                )
            })?;
        let flow = match &s.flow {
            None => None,
            Some(n) => Some(
                flows
                    .iter()
                    .position(|f| &f.name == n)
                    .map(|p| FlowId(p as u32))
                    .ok_or_else(|| {
                        ScenarioError::new(key("flow"), format!("no flow named {n:?}"))
                    })?,
            ),
        };
        if s.snaplen < 64 {
            return Err(ScenarioError::new(
                key("snaplen"),
                format!(
                    "expected at least 64 bytes (Ethernet + IPv4 + TCP headers), found {}",
                    s.snaplen
                ),
            ));
        }
        let start = SimTime::from_nanos(s.start.map_or(0, Dur::as_nanos));
        let stop = s
            .stop
            .map_or(SimTime::NEVER, |d| SimTime::from_nanos(d.as_nanos()));
        if stop <= start {
            return Err(ScenarioError::new(
                key("stop"),
                format!(
                    "expected a stop after the start ({} s), found {} s",
                    start.as_secs_f64(),
                    stop.as_secs_f64()
                ),
            ));
        }
        if s.max_bytes < pcap::HEADER_BYTES {
            return Err(ScenarioError::new(
                key("max_bytes"),
                format!(
                    "expected at least {} bytes (the file header), found {}",
                    pcap::HEADER_BYTES,
                    s.max_bytes
                ),
            ));
        }
        let file = match &s.file {
            Some(f) => {
                if f.is_empty() || f == "." || f == ".." || f.contains(['/', '\\', '\0']) {
                    return Err(ScenarioError::new(
                        key("file"),
                        format!("expected a plain file name (no directory part), found {f:?}"),
                    ));
                }
                f.clone()
            }
            None => {
                let mut f = safe(&s.iface.replace("->", "-"));
                if s.direction != Direction::Tx {
                    f += ".";
                    f += s.direction.name();
                }
                if let Some(n) = &s.flow {
                    f += ".";
                    f += &safe(n);
                }
                f + ".pcap"
            }
        };
        out.push(CapturePoint {
            iface: IfaceId(iface as u32),
            iface_name: s.iface.clone(),
            direction: s.direction,
            flow,
            snaplen: s.snaplen,
            file,
            start,
            stop,
            max_bytes: s.max_bytes,
        });
    }
    Ok(out)
}

/// A capture file could not be created or written.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("capture file {path}: {message}")]
pub struct CaptureError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong (the OS error).
    pub message: String,
}

impl CaptureError {
    fn new(path: &Path, e: std::io::Error) -> Self {
        CaptureError {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }
}

/// What one capture point saw over the whole run (warm-up included, as in the file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointCounts {
    /// Packets written, per flow index.
    pub packets: Vec<u64>,
    /// Packets written, per DSCP value.
    pub dscp: [u64; 64],
    /// Original (uncut) frame bytes written.
    pub bytes: u64,
    /// Packets not written because the file had reached its `max_bytes`, per flow index.
    pub skipped: Vec<u64>,
}

#[derive(Debug)]
struct Point {
    writer: usize,
    flow: Option<FlowId>,
    snaplen: u32,
    start: SimTime,
    stop: SimTime,
    max_bytes: u64,
    counts: PointCounts,
}

/// Which of an interface's capture lists a packet is offered to.
#[derive(Clone, Copy, Debug)]
enum Side {
    Tx,
    Rx,
    Drop,
}

/// The open capture files of a run and the state to fill them.
#[derive(Debug)]
pub struct Capturer {
    files: Vec<(PathBuf, Option<PcapWriter<BufWriter<File>>>)>,
    /// Bytes written to each file so far (its header included).
    sizes: Vec<u64>,
    points: Vec<Point>,
    plan: Vec<CapturePoint>,
    tx: Vec<Vec<u32>>,
    rx: Vec<Vec<u32>>,
    drop: Vec<Vec<u32>>,
    links: Vec<(NodeId, NodeId)>,
    flows: Vec<FlowInfo>,
    /// IPv4 address of each node.
    addrs: Vec<[u8; 4]>,
    buf: [u8; MAX_HDR],
    error: Option<CaptureError>,
}

impl Capturer {
    /// Creates `dir` if needed and opens one file per distinct file name of `plan`;
    /// `addrs` holds each node's IPv4 address (by node index).
    pub fn open(
        dir: &Path,
        plan: &[CapturePoint],
        ifaces: &[Iface],
        flows: &[Flow],
        addrs: &[[u8; 4]],
    ) -> Result<Capturer, CaptureError> {
        std::fs::create_dir_all(dir).map_err(|e| CaptureError::new(dir, e))?;
        let mut by_name: HashMap<&str, usize> = HashMap::new();
        let mut snap: Vec<u32> = Vec::new();
        let mut points = Vec::with_capacity(plan.len());
        let mut tx = vec![Vec::new(); ifaces.len()];
        let mut rx = vec![Vec::new(); ifaces.len()];
        let mut drop = vec![Vec::new(); ifaces.len()];
        for (i, p) in plan.iter().enumerate() {
            let n = by_name.len();
            let w = *by_name.entry(p.file.as_str()).or_insert(n);
            if w == snap.len() {
                snap.push(p.snaplen);
            }
            snap[w] = snap[w].max(p.snaplen);
            points.push(Point {
                writer: w,
                flow: p.flow,
                snaplen: p.snaplen,
                start: p.start,
                stop: p.stop,
                max_bytes: p.max_bytes,
                counts: PointCounts {
                    packets: vec![0; flows.len()],
                    dscp: [0; 64],
                    bytes: 0,
                    skipped: vec![0; flows.len()],
                },
            });
            let f = p.iface.0 as usize;
            let list = match p.direction {
                Direction::Tx => &mut tx,
                Direction::Rx => &mut rx,
                Direction::Both => {
                    tx[f].push(i as u32);
                    &mut rx
                }
                Direction::Drop => &mut drop,
            };
            list[f].push(i as u32);
        }
        let mut names: Vec<(&str, usize)> = by_name.into_iter().collect();
        names.sort_by_key(|x| x.1);
        let mut files = Vec::with_capacity(names.len());
        for (name, w) in names {
            let path = dir.join(name);
            let file = File::create(&path).map_err(|e| CaptureError::new(&path, e))?;
            let writer = PcapWriter::new(BufWriter::with_capacity(1 << 16, file), snap[w])
                .map_err(|e| CaptureError::new(&path, e))?;
            files.push((path, Some(writer)));
        }
        let flows = flows
            .iter()
            .map(|f| FlowInfo {
                src: f.src,
                src_port: f.src_port,
                dst_port: f.dst_port,
                proto: match f.app {
                    FlowApp::Tcp(_) => Proto::Tcp,
                    _ => Proto::Udp,
                },
            })
            .collect();
        Ok(Capturer {
            sizes: vec![pcap::HEADER_BYTES; files.len()],
            files,
            points,
            plan: plan.to_vec(),
            tx,
            rx,
            drop,
            links: ifaces.iter().map(|f| (f.node, f.peer)).collect(),
            flows,
            addrs: addrs.to_vec(),
            buf: [0; MAX_HDR],
            error: None,
        })
    }

    /// `pkt` starts transmission on `iface` at `now`.
    pub fn on_tx(&mut self, now: SimTime, iface: IfaceId, pkt: &Packet, routes: &Routes) {
        if !self.tx[iface.0 as usize].is_empty() {
            self.capture(now, iface, pkt, routes, Side::Tx);
        }
    }

    /// `pkt`, sent on `iface`, arrives at the far node at `now`.
    pub fn on_rx(&mut self, now: SimTime, iface: IfaceId, pkt: &Packet, routes: &Routes) {
        if !self.rx[iface.0 as usize].is_empty() {
            self.capture(now, iface, pkt, routes, Side::Rx);
        }
    }

    /// `pkt` is dropped at `iface` (its queue or its link) at `now`.
    pub fn on_drop(&mut self, now: SimTime, iface: IfaceId, pkt: &Packet, routes: &Routes) {
        if !self.drop[iface.0 as usize].is_empty() {
            self.capture(now, iface, pkt, routes, Side::Drop);
        }
    }

    /// Routers between the packet's source and `at` on its route (each took one off
    /// the TTL); 0 if `at` is not on the route.
    fn hops_to(&self, pkt: &Packet, at: NodeId, routes: &Routes) -> u8 {
        let mut cur = pkt.src;
        let mut hops = 0u8;
        while cur != at {
            match routes.next_hop(cur, pkt.dst) {
                Some(f) if hops < TTL - 1 => cur = self.links[f.0 as usize].1,
                _ => return 0,
            }
            hops += 1;
        }
        hops
    }

    fn capture(&mut self, now: SimTime, iface: IfaceId, pkt: &Packet, routes: &Routes, side: Side) {
        if self.error.is_some() {
            return;
        }
        let (from, to) = self.links[iface.0 as usize];
        let hop = Hop {
            from,
            to,
            ttl: TTL - self.hops_to(pkt, from, routes),
        };
        let flow = self
            .flows
            .get(pkt.flow.0 as usize)
            .copied()
            .unwrap_or_default();
        let (n, frame) = wire::serialise_with(pkt, hop, &flow, &self.addrs, &mut self.buf);
        let list = match side {
            Side::Tx => &self.tx,
            Side::Rx => &self.rx,
            Side::Drop => &self.drop,
        };
        for &p in &list[iface.0 as usize] {
            let pt = &mut self.points[p as usize];
            if pt.flow.is_some_and(|f| f != pkt.flow) || now < pt.start || now >= pt.stop {
                continue;
            }
            let record = pcap::RECORD_HEADER_BYTES + u64::from(frame.min(pt.snaplen));
            let size = &mut self.sizes[pt.writer];
            if *size + record > pt.max_bytes {
                if let Some(c) = pt.counts.skipped.get_mut(pkt.flow.0 as usize) {
                    *c += 1;
                }
                continue;
            }
            *size += record;
            let (path, w) = &mut self.files[pt.writer];
            let Some(w) = w.as_mut() else { continue };
            if let Err(e) = w.record(now, &self.buf[..n], frame, pt.snaplen) {
                self.error = Some(CaptureError::new(path, e));
                return;
            }
            if let Some(c) = pt.counts.packets.get_mut(pkt.flow.0 as usize) {
                *c += 1;
            }
            pt.counts.dscp[(pkt.dscp & 0x3F) as usize] += 1;
            pt.counts.bytes += frame as u64;
        }
    }

    /// Flushes and closes every file; the first write error of the run, if any.
    pub fn finish(&mut self) -> Result<(), CaptureError> {
        for (path, w) in &mut self.files {
            if let Some(w) = w.take() {
                if let Err(e) = w.finish() {
                    self.error.get_or_insert(CaptureError::new(path, e));
                }
            }
        }
        match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// What each capture point (in scenario order) saw.
    pub fn counts(&self) -> impl Iterator<Item = (&CapturePoint, &PointCounts)> {
        self.plan.iter().zip(self.points.iter().map(|p| &p.counts))
    }

    /// The path written for capture point `i`.
    pub fn path(&self, i: usize) -> &Path {
        &self.files[self.points[i].writer].0
    }

    /// The `captures` result table: one row per (capture point, flow) with packets
    /// written or skipped (`skipped`: not written, the file had reached `max_bytes`).
    pub fn table(&self, flow_names: &[&str]) -> Table {
        let (mut cap, mut file, mut iface, mut dir, mut flow, mut pk) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        let mut skipped = vec![];
        for (i, (p, c)) in self.counts().enumerate() {
            for (f, &n) in c.packets.iter().enumerate() {
                let sk = c.skipped.get(f).copied().unwrap_or(0);
                if n == 0 && sk == 0 {
                    continue;
                }
                skipped.push(sk as i64);
                cap.push(i as i64);
                file.push(self.path(i).display().to_string());
                iface.push(p.iface_name.clone());
                dir.push(p.direction.name().to_string());
                flow.push(flow_names.get(f).copied().unwrap_or("").to_string());
                pk.push(n as i64);
            }
        }
        let mut t = Table::default();
        t.push("capture", Column::Int(cap));
        t.push("file", Column::Str(file));
        t.push("iface", Column::Str(iface));
        t.push("direction", Column::Str(dir));
        t.push("flow", Column::Str(flow));
        t.push("packets", Column::Int(pk));
        t.push("skipped", Column::Int(skipped));
        t
    }
}
