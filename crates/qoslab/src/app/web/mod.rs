//! WWW traffic in the style of ns-2's web traffic generator (PagePool/WebTraf), as P3
//! §V.D uses it: sessions of pages, pages of objects, every object fetched over its own
//! HTTP/1.0 TCP connection (handshake, one request, the object; see [`WebConn`]).
//!
//! The model (ns-2 semantics): session i + 1 starts an inter-session time after session
//! i; a session's first page starts with the session; a page draws its number of objects
//! and launches its first object at once, each further one an inter-object time after
//! the previous launch (without waiting for it); a page is done when all its objects are
//! delivered, and the next page of the session starts an inter-page time after that
//! (ns-2's default `interPageOption` 1). Counts and sizes are the ceiling of the drawn
//! value, at least 1; object and request sizes are in packets of `mss` bytes, as ns-2's
//! `advanceby` counts packets. The defaults are ns-2's example values (ns manual §"Web
//! traffic generation", `tcl/ex/web-traffic.tcl`, `large-scale-web-traffic.tcl`).
//!
//! This module decides *when* objects are requested and records their response times;
//! the world moves the packets.

mod conn;

pub use conn::{WebConn, WebEnd};

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::config::ScenarioError;
use crate::rng::RngStream;
use crate::time::{Dur, SimTime};

/// A random variable of the web model, as written in `{ kind = "…", … }`.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Dist {
    /// Always `value` (ns-2 `RandomVariable/Constant`).
    Constant {
        /// The value.
        value: f64,
    },
    /// Exponential with mean `mean` (ns-2 `RandomVariable/Exponential`, `avg_`).
    Exponential {
        /// The mean.
        mean: f64,
    },
    /// Pareto of the second kind (Lomax) with mean `mean` and shape `shape` > 1:
    /// scale·(U^(−1/shape) − 1) with scale = mean·(shape − 1) (ns-2
    /// `RandomVariable/ParetoII`, `avg_`, `shape_`).
    Pareto2 {
        /// The mean.
        mean: f64,
        /// The shape (tail index), > 1.
        shape: f64,
    },
    /// Uniform in [min, max].
    Uniform {
        /// Lower end.
        min: f64,
        /// Upper end.
        max: f64,
    },
}

impl Dist {
    /// One draw.
    pub fn sample(&self, rng: &mut RngStream) -> f64 {
        match *self {
            Dist::Constant { value } => value,
            Dist::Exponential { mean } => rng.exponential(mean),
            Dist::Pareto2 { mean, shape } => {
                let u = 1.0 - rng.uniform(); // (0, 1]
                mean * (shape - 1.0) * (u.powf(-1.0 / shape) - 1.0)
            }
            Dist::Uniform { min, max } => min + (max - min) * rng.uniform(),
        }
    }

    /// The distribution function P(X ≤ x) (for tests of the generated values).
    pub fn cdf(&self, x: f64) -> f64 {
        match *self {
            Dist::Constant { value } => f64::from(u8::from(x >= value)),
            Dist::Exponential { mean } => (1.0 - (-x / mean).exp()).max(0.0),
            Dist::Pareto2 { mean, shape } => {
                let scale = mean * (shape - 1.0);
                if x <= 0.0 {
                    0.0
                } else {
                    1.0 - (1.0 + x / scale).powf(-shape)
                }
            }
            Dist::Uniform { min, max } => ((x - min) / (max - min)).clamp(0.0, 1.0),
        }
    }

    /// Checks the parameters; `positive`: the values must be > 0 (counts, sizes).
    fn validate(&self, key: &str, positive: bool) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::new(key, m));
        let ok = |v: f64| v.is_finite() && (v > 0.0 || (!positive && v >= 0.0));
        match *self {
            Dist::Constant { value } if !ok(value) => bad(format!(
                "expected a {} value, found {value}",
                want(positive)
            )),
            Dist::Exponential { mean } if !(mean.is_finite() && mean > 0.0) => {
                bad(format!("expected a positive mean, found {mean}"))
            }
            Dist::Pareto2 { mean, .. } if !(mean.is_finite() && mean > 0.0) => {
                bad(format!("expected a positive mean, found {mean}"))
            }
            Dist::Pareto2 { shape, .. } if !(shape.is_finite() && shape > 1.0) => bad(format!(
                "expected a shape above 1 (a finite mean), found {shape}"
            )),
            Dist::Uniform { min, max }
                if !(min.is_finite() && min >= 0.0 && ok(max) && max >= min) =>
            {
                bad(format!(
                    "expected 0 ≤ min ≤ max with a {} max, found [{min}, {max}]",
                    want(positive)
                ))
            }
            _ => Ok(()),
        }
    }
}

fn want(positive: bool) -> &'static str {
    if positive {
        "positive"
    } else {
        "non-negative"
    }
}

/// Configuration of a web flow, as written in `web = {…}` on a TCP flow: the flow's
/// source is the server, its destination the client. Defaults: ns-2's example values.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// Number of sessions; default 1.
    #[serde(default = "default_sessions")]
    pub sessions: u32,
    /// Time between session starts [s]; default exponential, mean 1 s.
    #[serde(default = "default_inter_session")]
    pub inter_session: Dist,
    /// Pages per session; default constant 10.
    #[serde(default = "default_pages")]
    pub pages: Dist,
    /// Time from the end of a page to the start of the next [s]; default exponential,
    /// mean 1 s.
    #[serde(default = "default_inter_page")]
    pub inter_page: Dist,
    /// Objects per page; default constant 1.
    #[serde(default = "default_objects")]
    pub objects: Dist,
    /// Time between the launches of a page's objects [s]; default exponential, mean
    /// 0.01 s.
    #[serde(default = "default_inter_object")]
    pub inter_object: Dist,
    /// Object size [packets of `mss` bytes]; default Pareto II, mean 10, shape 1.2.
    #[serde(default = "default_object_size")]
    pub object_size: Dist,
    /// Request size [packets of `mss` bytes]; default 1 (ns-2 sends one packet).
    #[serde(default = "default_request")]
    pub request: u32,
}

fn default_sessions() -> u32 {
    1
}
fn default_inter_session() -> Dist {
    Dist::Exponential { mean: 1.0 }
}
fn default_pages() -> Dist {
    Dist::Constant { value: 10.0 }
}
fn default_inter_page() -> Dist {
    Dist::Exponential { mean: 1.0 }
}
fn default_objects() -> Dist {
    Dist::Constant { value: 1.0 }
}
fn default_inter_object() -> Dist {
    Dist::Exponential { mean: 0.01 }
}
fn default_object_size() -> Dist {
    Dist::Pareto2 {
        mean: 10.0,
        shape: 1.2,
    }
}
fn default_request() -> u32 {
    1
}

impl Default for WebConfig {
    fn default() -> Self {
        WebConfig {
            sessions: default_sessions(),
            inter_session: default_inter_session(),
            pages: default_pages(),
            inter_page: default_inter_page(),
            objects: default_objects(),
            inter_object: default_inter_object(),
            object_size: default_object_size(),
            request: default_request(),
        }
    }
}

impl WebConfig {
    /// Checks the values; the error key is relative to the `web` table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.sessions == 0 {
            return Err(ScenarioError::new(
                "sessions",
                "expected at least 1 session, found 0",
            ));
        }
        if self.request == 0 {
            return Err(ScenarioError::new(
                "request",
                "expected a request of at least 1 packet, found 0",
            ));
        }
        self.inter_session.validate("inter_session", false)?;
        self.pages.validate("pages", true)?;
        self.inter_page.validate("inter_page", false)?;
        self.objects.validate("objects", true)?;
        self.inter_object.validate("inter_object", false)?;
        self.object_size.validate("object_size", true)
    }
}

/// One object: which page it belongs to, its size and its response times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WebObject {
    /// Session number (from 0).
    pub session: u32,
    /// Page number within the run (index into [`Web::pages`]).
    pub page: u32,
    /// Size [bytes].
    pub bytes: u64,
    /// When the client opened the connection (sent the SYN).
    pub requested: SimTime,
    /// When the first byte of the object arrived in order at the client.
    pub first: Option<SimTime>,
    /// When the last byte arrived.
    pub done: Option<SimTime>,
    /// Bytes delivered in order at the client.
    pub received: u64,
    /// SYNs the client sent (1 without loss).
    pub syns: u32,
}

/// One page.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WebPage {
    /// Session number (from 0).
    pub session: u32,
    /// Objects it has.
    pub objects: u32,
    /// When its first object was requested.
    pub started: SimTime,
    /// When its last object was complete.
    pub done: Option<SimTime>,
    launched: u32,
    left: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    Session,
    Page(u32),
    Object(u32),
}

#[derive(Clone, Copy, Debug)]
struct Session {
    pages: u32,
    started: u32,
}

/// The web model of one flow (one client–server pair): its timers, objects and pages.
#[derive(Clone, Debug)]
pub struct Web {
    cfg: WebConfig,
    mss: u64,
    rng: RngStream,
    sessions: Vec<Session>,
    timers: BinaryHeap<Reverse<(SimTime, u64, Action)>>,
    seq: u64,
    /// Every object requested so far.
    pub objects: Vec<WebObject>,
    /// Every page started so far.
    pub pages: Vec<WebPage>,
}

fn count(d: &Dist, rng: &mut RngStream) -> u32 {
    let v = d.sample(rng).ceil();
    if v >= u32::MAX as f64 {
        u32::MAX
    } else {
        (v as u32).max(1)
    }
}

impl Web {
    /// A model whose first session starts at its first timer (the flow's start);
    /// sizes in packets become `mss` bytes each.
    pub fn new(cfg: &WebConfig, mss: u32, rng: RngStream) -> Self {
        let mut w = Web {
            cfg: cfg.clone(),
            mss: mss as u64,
            rng,
            sessions: Vec::new(),
            timers: BinaryHeap::new(),
            seq: 0,
            objects: Vec::new(),
            pages: Vec::new(),
        };
        w.at(SimTime::ZERO, Action::Session);
        w
    }

    fn at(&mut self, t: SimTime, a: Action) {
        self.seq += 1;
        self.timers.push(Reverse((t, self.seq, a)));
    }

    fn after(&mut self, now: SimTime, d: Dist) -> SimTime {
        now + Dur::from_secs_f64(d.sample(&mut self.rng).max(0.0))
    }

    /// When the model next wants `on_timer`; `None`: nothing is scheduled.
    pub fn next_timer(&self) -> Option<SimTime> {
        self.timers.peek().map(|r| r.0 .0)
    }

    /// Runs everything due at `now`; pushes the objects to request now (indices into
    /// [`Web::objects`]) onto `launch`.
    pub fn on_timer(&mut self, now: SimTime, launch: &mut Vec<usize>) {
        while let Some(&Reverse((t, _, a))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            match a {
                Action::Session => {
                    let pages = count(&self.cfg.pages, &mut self.rng);
                    let s = self.sessions.len() as u32;
                    self.sessions.push(Session { pages, started: 0 });
                    self.start_page(now, s, launch);
                    if self.sessions.len() < self.cfg.sessions as usize {
                        let next = self.after(now, self.cfg.inter_session);
                        self.at(next, Action::Session);
                    }
                }
                Action::Page(s) => self.start_page(now, s, launch),
                Action::Object(p) => self.launch_object(now, p, launch),
            }
        }
    }

    fn start_page(&mut self, now: SimTime, session: u32, launch: &mut Vec<usize>) {
        self.sessions[session as usize].started += 1;
        let n = count(&self.cfg.objects, &mut self.rng);
        self.pages.push(WebPage {
            session,
            objects: n,
            started: now,
            done: None,
            launched: 0,
            left: n,
        });
        self.launch_object(now, self.pages.len() as u32 - 1, launch);
    }

    fn launch_object(&mut self, now: SimTime, page: u32, launch: &mut Vec<usize>) {
        let bytes = count(&self.cfg.object_size, &mut self.rng) as u64 * self.mss;
        let p = &mut self.pages[page as usize];
        p.launched += 1;
        let more = p.launched < p.objects;
        let session = p.session;
        self.objects.push(WebObject {
            session,
            page,
            bytes,
            requested: now,
            first: None,
            done: None,
            received: 0,
            syns: 0,
        });
        launch.push(self.objects.len() - 1);
        if more {
            let next = self.after(now, self.cfg.inter_object);
            self.at(next, Action::Object(page));
        }
    }

    /// Request size [bytes].
    pub fn request_bytes(&self) -> u64 {
        self.cfg.request as u64 * self.mss
    }

    /// The client received `new` more bytes of object `obj` in order at `now`; when the object is complete its page may be done and the
    /// session's next page scheduled.
    pub fn on_received(&mut self, now: SimTime, obj: usize, new: u64) {
        let o = &mut self.objects[obj];
        if new == 0 || o.done.is_some() {
            return;
        }
        o.received += new;
        o.first.get_or_insert(now);
        if o.received < o.bytes {
            return;
        }
        o.done = Some(now);
        let page = o.page as usize;
        let p = &mut self.pages[page];
        p.left -= 1;
        if p.left > 0 {
            return;
        }
        p.done = Some(now);
        let s = p.session as usize;
        if self.sessions[s].started < self.sessions[s].pages {
            let next = self.after(now, self.cfg.inter_page);
            self.at(next, Action::Page(s as u32));
        }
    }
}

/// A web flow in a run: the model, the TCP configuration of its connections and the
/// connections open now, by the client's port.
#[derive(Debug)]
pub struct WebFlow {
    /// The sessions, pages and objects.
    pub model: Web,
    /// Configuration of every connection.
    pub tcp: crate::tcp::TcpConfig,
    /// Open connections by the client's port.
    pub conns: std::collections::BTreeMap<u16, WebConn>,
    /// Time of the model's pending timer event (NEVER if none).
    pub armed: SimTime,
    next_port: u16,
}

/// The first client port; connections take the ports above it in turn.
const FIRST_PORT: u16 = 1024;

impl WebFlow {
    /// A web flow with no connection yet.
    pub fn new(cfg: &WebConfig, tcp: &crate::tcp::TcpConfig, rng: RngStream) -> Self {
        WebFlow {
            model: Web::new(cfg, tcp.mss, rng),
            tcp: tcp.clone(),
            conns: Default::default(),
            armed: SimTime::NEVER,
            next_port: FIRST_PORT,
        }
    }

    /// A client port no open connection uses.
    pub fn new_port(&mut self) -> u16 {
        loop {
            let p = self.next_port;
            self.next_port = if p == u16::MAX { FIRST_PORT } else { p + 1 };
            if !self.conns.contains_key(&p) {
                return p;
            }
        }
    }
}

#[cfg(test)]
mod tests;
