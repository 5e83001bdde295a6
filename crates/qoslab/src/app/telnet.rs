//! Telnet-like interactive application over TCP (P3 §V.D): sessions of small writes
//! with exponential interarrival times, an exponential idle time between sessions, and
//! the delay of every write measured from the application's write until its last byte
//! is delivered in order at the receiver.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::config::ScenarioError;
use crate::rng::RngStream;
use crate::time::{Dur, SimTime};

/// Configuration of a Telnet source, as written in `telnet = {…}` on a TCP flow.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TelnetConfig {
    /// Mean time between writes within a session (exponential); default 100 ms.
    #[serde(default = "default_interval")]
    pub mean_interval: Dur,
    /// Smallest payload of a write [bytes]; default 40.
    #[serde(default = "default_size_min")]
    pub size_min: u32,
    /// Largest payload of a write [bytes]; default 100 (uniform in between).
    #[serde(default = "default_size_max")]
    pub size_max: u32,
    /// Fewest writes in a session; default 5 (P3: "less than 10").
    #[serde(default = "default_packets_min")]
    pub packets_min: u32,
    /// Most writes in a session; default 35 (P3: "more than 30"; uniform in between).
    #[serde(default = "default_packets_max")]
    pub packets_max: u32,
    /// Mean idle time between a session's last write and the next session's first
    /// (exponential); default 1 s.
    #[serde(default = "default_idle")]
    pub mean_idle: Dur,
    /// Number of sessions, after which the connection is closed; default: unlimited.
    #[serde(default)]
    pub sessions: Option<u32>,
}

fn default_interval() -> Dur {
    Dur::from_millis(100)
}
fn default_size_min() -> u32 {
    40
}
fn default_size_max() -> u32 {
    100
}
fn default_packets_min() -> u32 {
    5
}
fn default_packets_max() -> u32 {
    35
}
fn default_idle() -> Dur {
    Dur::from_secs(1)
}

impl TelnetConfig {
    /// Checks the values; the error key is relative to the `telnet` table.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.mean_interval == Dur::ZERO {
            return Err(ScenarioError::new(
                "mean_interval",
                "expected a positive mean time between writes, found 0",
            ));
        }
        if self.size_min == 0 {
            return Err(ScenarioError::new(
                "size_min",
                "expected a positive payload size, found 0",
            ));
        }
        if self.size_max < self.size_min {
            return Err(ScenarioError::new(
                "size_max",
                format!(
                    "expected at least size_min ({}), found {}",
                    self.size_min, self.size_max
                ),
            ));
        }
        if self.packets_min == 0 {
            return Err(ScenarioError::new(
                "packets_min",
                "expected at least 1 write per session, found 0",
            ));
        }
        if self.packets_max < self.packets_min {
            return Err(ScenarioError::new(
                "packets_max",
                format!(
                    "expected at least packets_min ({}), found {}",
                    self.packets_min, self.packets_max
                ),
            ));
        }
        if self.sessions == Some(0) {
            return Err(ScenarioError::new(
                "sessions",
                "expected at least 1 session, found 0",
            ));
        }
        Ok(())
    }
}

/// One write: its session, when the application made it, its size and (once its last
/// byte arrived in order) its delay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TelnetWrite {
    /// Session number (from 0).
    pub session: u32,
    /// Time of the application's write.
    pub at: SimTime,
    /// Payload bytes.
    pub size: u32,
    /// Write-to-delivery delay; `None` while not delivered.
    pub delay: Option<Dur>,
}

/// What the application does at one of its timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TelnetStep {
    /// Bytes to write now.
    pub write: u32,
    /// When to call `on_timer` next; `None`: the last session is over (close).
    pub next: Option<SimTime>,
}

/// A Telnet source and its delay bookkeeping at the receiver.
#[derive(Clone, Debug)]
pub struct Telnet {
    cfg: TelnetConfig,
    rng: RngStream,
    /// Current session number and writes left in it (0: between sessions).
    session: u32,
    left: u32,
    /// Bytes written so far (the end offset of the last write).
    written: u64,
    /// Bytes delivered in order at the receiver.
    delivered: u64,
    /// Writes not yet delivered: (end offset, index into `writes`).
    pending: VecDeque<(u64, usize)>,
    /// Every write so far.
    pub writes: Vec<TelnetWrite>,
}

impl Telnet {
    /// A source whose first session starts at its first timer.
    pub fn new(cfg: &TelnetConfig, rng: RngStream) -> Self {
        Telnet {
            cfg: cfg.clone(),
            rng,
            session: 0,
            left: 0,
            written: 0,
            delivered: 0,
            pending: VecDeque::new(),
            writes: Vec::new(),
        }
    }

    fn uniform_u32(&mut self, lo: u32, hi: u32) -> u32 {
        lo + self.rng.below((hi - lo) as u64 + 1) as u32
    }

    /// Makes one write (starting a session if none is running) and says when the next
    /// write is due.
    pub fn on_timer(&mut self, now: SimTime) -> TelnetStep {
        if self.left == 0 {
            self.left = self.uniform_u32(self.cfg.packets_min, self.cfg.packets_max);
        }
        let size = self.uniform_u32(self.cfg.size_min, self.cfg.size_max);
        self.written += size as u64;
        self.pending.push_back((self.written, self.writes.len()));
        self.writes.push(TelnetWrite {
            session: self.session,
            at: now,
            size,
            delay: None,
        });
        self.left -= 1;
        let gap = if self.left > 0 {
            self.rng.exponential(self.cfg.mean_interval.as_secs_f64())
        } else {
            self.session += 1;
            if self.cfg.sessions.is_some_and(|n| self.session >= n) {
                return TelnetStep {
                    write: size,
                    next: None,
                };
            }
            self.rng.exponential(self.cfg.mean_idle.as_secs_f64())
        };
        TelnetStep {
            write: size,
            next: Some(now + Dur::from_secs_f64(gap)),
        }
    }

    /// The receiver got `new` more bytes in order at `now`: every write they complete
    /// gets its delay.
    pub fn on_delivered(&mut self, now: SimTime, new: u64) {
        self.delivered += new;
        while let Some(&(end, i)) = self.pending.front() {
            if end > self.delivered {
                break;
            }
            self.pending.pop_front();
            let w = &mut self.writes[i];
            w.delay = Some(now - w.at);
        }
    }

    /// Bytes written by the application so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Bytes delivered in order at the receiver so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> TelnetConfig {
        TelnetConfig {
            mean_interval: Dur::from_millis(200),
            size_min: 40,
            size_max: 100,
            packets_min: 5,
            packets_max: 35,
            mean_idle: Dur::from_secs(2),
            sessions: Some(400),
        }
    }

    fn run(c: &TelnetConfig) -> Telnet {
        let mut t = Telnet::new(c, RngStream::from_seed(7));
        let mut now = SimTime::ZERO;
        while let Some(n) = t.on_timer(now).next {
            now = n;
        }
        t
    }

    #[test]
    fn interarrival_times_match_their_means() {
        let t = run(&cfg());
        let (mut within, mut idle) = (Vec::new(), Vec::new());
        for p in t.writes.windows(2) {
            let gap = (p[1].at - p[0].at).as_secs_f64();
            if p[1].session == p[0].session {
                within.push(gap);
            } else {
                idle.push(gap);
            }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        // Exponential: std = mean, so the sample mean is within 4 σ/√n at any seed
        // with overwhelming probability.
        let (m, n) = (mean(&within), within.len() as f64);
        assert!((m - 0.2).abs() < 4.0 * 0.2 / n.sqrt(), "{m} over {n}");
        let (m, n) = (mean(&idle), idle.len() as f64);
        assert_eq!(idle.len(), 399);
        assert!((m - 2.0).abs() < 4.0 * 2.0 / n.sqrt(), "{m} over {n}");
    }

    #[test]
    fn sessions_and_sizes_stay_in_their_ranges() {
        let t = run(&cfg());
        assert_eq!(t.writes.last().unwrap().session, 399);
        let mut per = vec![0u32; 400];
        for w in &t.writes {
            assert!((40..=100).contains(&w.size), "{}", w.size);
            per[w.session as usize] += 1;
        }
        assert!(per.iter().all(|&n| (5..=35).contains(&n)));
        // Both ends of the uniform ranges occur.
        assert!(per.contains(&5) && per.contains(&35));
        assert!(t.writes.iter().any(|w| w.size == 40) && t.writes.iter().any(|w| w.size == 100));
    }

    #[test]
    fn a_write_is_delivered_when_its_last_byte_arrives() {
        let mut t = Telnet::new(&cfg(), RngStream::from_seed(1));
        let a = t.on_timer(SimTime::ZERO);
        let b = t.on_timer(SimTime::from_millis(10));
        t.on_delivered(SimTime::from_millis(50), a.write as u64 + 1);
        assert_eq!(t.writes[0].delay, Some(Dur::from_millis(50)));
        assert_eq!(t.writes[1].delay, None);
        t.on_delivered(SimTime::from_millis(70), b.write as u64 - 1);
        assert_eq!(t.writes[1].delay, Some(Dur::from_millis(60)));
    }

    #[test]
    fn bad_values_name_their_key() {
        let mut c = cfg();
        c.size_max = 10;
        assert_eq!(c.validate().unwrap_err().key, "size_max");
        let mut c = cfg();
        c.mean_interval = Dur::ZERO;
        assert_eq!(c.validate().unwrap_err().key, "mean_interval");
        let mut c = cfg();
        c.packets_max = 1;
        assert_eq!(c.validate().unwrap_err().key, "packets_max");
    }
}
