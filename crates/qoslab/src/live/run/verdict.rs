//! The run's timing verdict (`live_timing_ok`, `live_timing_cause`): the lateness
//! bounds, how busy the datapath thread was, and whether every backlogged host link
//! carried its rate; each warning with the advice that fits its cause.

use super::datapath::TunIo;
use crate::live::sys;
use crate::stats::{Column, RunResult};
use crate::time::{Dur, SimTime};
use crate::world::World;

/// p99 lateness above this flags the run (the bound).
pub(super) const P99_BOUND: Dur = Dur::from_micros(100);
/// p99.9 lateness above this flags the run.
pub(super) const P999_BOUND: Dur = Dur::from_millis(2);
/// A loop busy (not idle) more than this share of the run was behind or CPU-bound.
const BUSY_BOUND: f64 = 0.9;
/// A thread using at least this share of a core while busy was CPU-bound (less: other
/// processes had the core).
const CPU_BOUND: f64 = 0.7;
/// A host's TUN backlogged (a full batch left waiting) more than this share of the run
/// is a standing queue in front of its link … (a tenth: with the TUN writer thread the
/// loop drains a host more often, and a 20 Gb/s link carrying 17 % of its rate behind a
/// TUN backlogged a fifth of the run passed a bound of a quarter)
const BACKLOG_BOUND: f64 = 0.10;
/// … and its link short of the rate when it carried less than this share of it.
const RATE_SHORT: f64 = 0.9;
/// Cores left idle over the run below which the machine was saturated: a thread woken
/// late there waited for a core, and spinning would take one from the hosts' TCP (one
/// Linux flow forced past the budget on 2 cores, `qoslab live fast.toml --set
/// live.max_pps=1e8` as in docs/live.md, was 0.906–0.972 busy over 14 runs:
/// `live_machine_busy`, 0.06–0.19 of a core idle).
const SPARE_CORES: f64 = 0.25;

/// How hard the datapath thread worked during the run.
pub(super) struct Load {
    /// Wall time of the run [ns].
    pub(super) wall_ns: u64,
    /// CPU time the datapath thread used [ns].
    pub(super) cpu_ns: u64,
    /// Wall time the loop had nothing due [ns].
    pub(super) idle_ns: u64,
    /// `[live] spin`.
    pub(super) spin: Dur,
    /// The packet budget the run was checked against.
    pub(super) max_pps: f64,
    /// The share of all cores' time the machine was busy during the run.
    pub(super) machine_busy: Option<f64>,
}

/// What the verdict's causes are told apart by.
struct Measures {
    /// Share of the run the loop was not idle.
    busy: f64,
    /// Cores the thread used over the run.
    cpu: f64,
    /// Packets per second read from the hosts.
    pps: f64,
    /// p99 of how late the thread woke from its sleeps [ns].
    wake_p99: u64,
    /// Share of all cores' time the machine was busy (NaN: unknown).
    machine: f64,
    /// The machine's cores.
    cores: usize,
}

impl Measures {
    /// Cores left idle over the run (infinite when the machine's load is unknown).
    fn spare_cores(&self) -> f64 {
        if self.machine.is_nan() {
            f64::INFINITY
        } else {
            self.cores as f64 * (1.0 - self.machine)
        }
    }
}

/// The run's timing verdict (`live_timing_ok`, `live_timing_cause`) from the lateness
/// bounds, how busy the datapath was and whether every backlogged host link carried
/// its rate; returns the warnings, each with the advice that fits its cause.
pub(super) fn timing_verdict(r: &mut RunResult, w: &World, io: &TunIo, load: &Load) -> Vec<String> {
    let wall = load.wall_ns.max(1) as f64;
    let secs = (w.end - SimTime::ZERO).as_secs_f64().max(1e-9);
    let m = Measures {
        busy: (1.0 - load.idle_ns as f64 / wall).clamp(0.0, 1.0),
        cpu: load.cpu_ns as f64 / wall,
        pps: io.hosts.iter().map(|h| h.rx).sum::<u64>() as f64 / secs,
        wake_p99: io.wake_late.quantile(0.99).unwrap_or(0),
        machine: load.machine_busy.unwrap_or(f64::NAN),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let short = link_use(r, w, io, secs);
    let lateness_ok = r.summary.get("live_timing_ok") == Some(&serde_json::Value::Bool(true));
    let (cause, mut warnings) = cause(&m, load, !short.is_empty(), lateness_ok);
    for s in &short {
        warnings.push(rate_short_warning(s, &m, load));
    }
    let ok = lateness_ok && cause == "ok";
    r.summary.insert("live_timing_ok".into(), ok.into());
    r.summary
        .insert("live_lateness_ok".into(), lateness_ok.into());
    r.summary.insert("live_timing_cause".into(), cause.into());
    summarize(r, io, load, &m);
    r.summary.insert(
        "live_rate_short".into(),
        serde_json::Value::from(short.clone()),
    );
    warnings
}

/// Per host: the share of the run (`secs` long) packets stood in its TUN and what its
/// link carried, as columns of `live_hosts`; returns a line per backlogged link that
/// carried less than its rate.
fn link_use(r: &mut RunResult, w: &World, io: &TunIo, secs: f64) -> Vec<String> {
    let mut short = Vec::new();
    let (mut backlog, mut carried, mut rates, mut links) = (vec![], vec![], vec![], vec![]);
    for h in &io.hosts {
        let frac = h.backlog_ns as f64 / 1e9 / secs;
        let f = w.ifaces.iter().position(|f| f.node == h.node);
        let (out, rate, name) = f.map_or((0.0, 0.0, String::new()), |i| {
            let f = &w.ifaces[i];
            let key = match i % 2 {
                0 => format!("link[{}].rate", i / 2),
                _ => format!("link[{}].rate_b_to_a", i / 2),
            };
            let out = f.counters.departed_bytes as f64 * 8.0 / secs;
            (out, f.rate.bps() as f64, format!("{} ({key})", f.name))
        });
        if frac > BACKLOG_BOUND && rate > 0.0 && out < RATE_SHORT * rate {
            short.push(format!(
                "link {name} carried {:.3} Mb/s, {:.1} % of its {:.3} Mb/s, while packets \
                 waited in host {:?}'s TUN for {:.0} % of the run",
                out / 1e6,
                100.0 * out / rate,
                rate / 1e6,
                w.nodes[h.node.0 as usize].name,
                100.0 * frac
            ));
        }
        backlog.push(frac);
        carried.push(out);
        rates.push(rate);
        links.push(name);
    }
    if let Some(t) = r.tables.get_mut("live_hosts") {
        t.push("link", Column::Str(links));
        t.push("link_rate_bps", Column::Float(rates));
        t.push("link_out_bps", Column::Float(carried));
        t.push("backlog_frac", Column::Float(backlog));
    }
    short
}

/// The cause of the verdict (`ok`, `cpu-bound`, `cpu-starved`, `rate not achieved`,
/// `cpu-saturated`, `wake-up latency`, `cpu-bursts`), first that fits, and its warning.
fn cause(m: &Measures, load: &Load, short: bool, lateness_ok: bool) -> (&'static str, Vec<String>) {
    let (cause, warning) = if m.busy > BUSY_BOUND && m.cpu >= CPU_BOUND {
        ("cpu-bound", Some(cpu_bound_warning(m, load)))
    } else if m.busy > BUSY_BOUND {
        ("cpu-starved", Some(cpu_starved_warning(m)))
    } else if short {
        ("rate not achieved", None)
    } else if lateness_ok {
        ("ok", None)
    } else if m.wake_p99 > P99_BOUND.as_nanos() && m.spare_cores() < SPARE_CORES {
        ("cpu-saturated", Some(cpu_saturated_warning(m)))
    } else if m.wake_p99 > P99_BOUND.as_nanos() {
        ("wake-up latency", Some(wake_up_warning(m, load)))
    } else {
        ("cpu-bursts", Some(cpu_bursts_warning(m)))
    };
    (cause, warning.into_iter().collect())
}

/// The warning of a CPU-bound datapath thread: lower the rates or a faster machine.
fn cpu_bound_warning(m: &Measures, load: &Load) -> String {
    format!(
        "live: the datapath thread was busy {:.0} % of the run on {:.2} of a core \
         ({:.0} packets/s read from the hosts): it is CPU-bound, so the links' \
         rates and delays were not kept; `[live] spin` cannot help a saturated core. \
         Lower the rates to what it carried, or run on a faster machine (the \
         scenario's peak was checked against live.max_pps = {:.0} packets/s; \
         benches/live_datapath.py --budget measures this machine's)",
        100.0 * m.busy,
        m.cpu,
        m.pps,
        load.max_pps
    )
}

/// The warning of a datapath thread other processes took the CPU from.
fn cpu_starved_warning(m: &Measures) -> String {
    format!(
        "live: the datapath thread was behind {:.0} % of the run but got only {:.2} \
         of a core: other processes took its CPU (load average {:.2}); `[live] spin` \
         would take more of it. Run on a quieter machine",
        100.0 * m.busy,
        m.cpu,
        sys::load_average()
    )
}

/// The warning of events late because the thread woke late: `[live] spin` helps.
fn wake_up_warning(m: &Measures, load: &Load) -> String {
    let advice = if load.spin > Dur::ZERO {
        format!(
            "it already spins {} before each event; see validation/live_spin.py",
            load.spin
        )
    } else {
        "`[live] spin = \"100us\"` keeps events on time for some CPU \
         (validation/live_spin.py measures both ways)"
            .to_string()
    };
    format!(
        "live: timing out of bounds (p99 > 100 µs or p99.9 > 2 ms): see live_timing; \
         the thread woke from its sleeps {:.0} µs late (p99), so its events ran late: \
         {advice}",
        m.wake_p99 as f64 / 1e3
    )
}

/// The warning of a thread woken late because every core was busy: `spin` cannot help.
fn cpu_saturated_warning(m: &Measures) -> String {
    format!(
        "live: timing out of bounds (p99 > 100 µs or p99.9 > 2 ms): see live_timing; \
         the thread woke from its sleeps {:.0} µs late (p99) while the machine's {} \
         cores were {:.0} % busy (load average {:.2}): it waited for a core, and \
         `[live] spin` would take one from the hosts' TCP. Lower the rates or the \
         number of flows, or run on a quieter or faster machine",
        m.wake_p99 as f64 / 1e3,
        m.cores,
        100.0 * m.machine,
        sys::load_average()
    )
}

/// The warning of events late in bursts of work although the thread woke on time.
fn cpu_bursts_warning(m: &Measures) -> String {
    // Woken on time, and not behind most of the run: the events came late in bursts
    // of work (rounds of packets, each TUN write running the receiving host's TCP),
    // on a machine whose cores the hosts' TCP and other processes share.
    format!(
        "live: timing out of bounds (p99 > 100 µs or p99.9 > 2 ms): see live_timing; \
         the thread woke on time (p99 {:.0} µs) but fell behind in bursts of work \
         ({:.0} packets/s read from the hosts, {:.2} of a core; the machine's \
         {} cores were {:.0} % busy, load average {:.2}): the datapath and the \
         hosts' TCP need more CPU than they had, which `[live] spin` does not give. \
         Lower the rates or the number of flows, or run on a quieter or faster machine",
        m.wake_p99 as f64 / 1e3,
        m.pps,
        m.cpu,
        m.cores,
        100.0 * m.machine,
        sys::load_average()
    )
}

/// The warning of a backlogged link `s` that carried less than its rate.
fn rate_short_warning(s: &str, m: &Measures, load: &Load) -> String {
    format!(
        "live: a configured rate was not achieved: {s}; the datapath did not keep up \
         (see live_hosts: its thread was busy {:.0} % of the run on {:.2} of a core, \
         the machine's {} cores {:.0} % busy, {:.0} packets/s read from the \
         hosts), which `[live] spin` does not change: lower the rate to what it \
         carried, or run on a quieter or faster machine (the scenario's peak was \
         checked against live.max_pps = {:.0} packets/s; benches/live_datapath.py \
         --budget measures this machine's)",
        100.0 * m.busy,
        m.cpu,
        m.cores,
        100.0 * m.machine,
        m.pps,
        load.max_pps
    )
}

/// The summary's measures of the datapath thread: busy share, CPU, packets/s, wake-up
/// p99, cost per packet, sleeps, polling share and the machine's load.
fn summarize(r: &mut RunResult, io: &TunIo, load: &Load, m: &Measures) {
    let wall = load.wall_ns.max(1) as f64;
    r.summary.insert("live_busy".into(), m.busy.into());
    r.summary.insert("live_cpu".into(), m.cpu.into());
    r.summary.insert("live_pps".into(), m.pps.into());
    r.summary
        .insert("live_wake_p99_us".into(), (m.wake_p99 as f64 / 1e3).into());
    // Per packet read from the hosts: the thread's CPU, and its wall time working (not
    // asleep or polling for its next event; under SCHED_FIFO other processes do not take
    // it, so this is the datapath's cost on a loaded machine too) [µs].
    let read = io.hosts.iter().map(|h| h.rx).sum::<u64>().max(1) as f64;
    let work_ns = load.wall_ns.saturating_sub(load.idle_ns) as f64;
    r.summary.insert(
        "live_cpu_us_per_packet".into(),
        (load.cpu_ns as f64 / read / 1e3).into(),
    );
    r.summary.insert(
        "live_work_us_per_packet".into(),
        (work_ns / read / 1e3).into(),
    );
    r.summary.insert(
        "live_sleep_cost_us".into(),
        (io.sleep_cost_ns as f64 / 1e3).into(),
    );
    r.summary.insert("live_sleeps".into(), io.sleeps.into());
    // The TUN writer thread, when the TUN writes ran apart from the loop: its CPU
    // (cores over the run), beside the loop thread's `live_cpu`.
    r.summary
        .insert("live_tun_writer".into(), io.wrote_apart.into());
    r.summary.insert(
        "live_writer_cpu".into(),
        (io.writer_cpu_ns as f64 / wall).into(),
    );
    r.summary
        .insert("live_polled".into(), (io.polled_ns as f64 / wall).into());
    r.summary
        .insert("live_machine_busy".into(), load.machine_busy.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load() -> Load {
        Load {
            wall_ns: 2_000_000_000,
            cpu_ns: 1_000_000_000,
            idle_ns: 1_000_000_000,
            spin: Dur::ZERO,
            max_pps: 31_250.0,
            machine_busy: None,
        }
    }

    /// A run that only broke the lateness bounds, its thread woken `wake_us` late (p99)
    /// on `cores` cores a share `machine` busy.
    fn late(wake_us: u64, machine: f64, cores: usize) -> Measures {
        Measures {
            busy: 0.5,
            cpu: 0.75,
            pps: 200_000.0,
            wake_p99: wake_us * 1000,
            machine,
            cores,
        }
    }

    #[test]
    fn late_wake_ups_with_cores_to_spare_are_fixed_by_spin() {
        for (machine, cores) in [(0.5, 2), (0.85, 2), (f64::NAN, 2), (0.95, 16)] {
            let (c, w) = cause(&late(150, machine, cores), &load(), false, false);
            assert_eq!(c, "wake-up latency", "{machine} of {cores}");
            assert!(w[0].contains("keeps events on time"), "{}", w[0]);
        }
    }

    #[test]
    fn late_wake_ups_on_a_saturated_machine_never_offer_spin() {
        // One Linux flow forced past the budget on 2 cores: 0.906–0.968 busy.
        for machine in [0.88, 0.906, 0.968, 1.0] {
            let (c, w) = cause(&late(150, machine, 2), &load(), false, false);
            assert_eq!(c, "cpu-saturated", "{machine}");
            assert!(!w[0].contains("keeps events on time"), "{}", w[0]);
            assert!(w[0].contains("150 µs late"), "{}", w[0]);
        }
    }

    #[test]
    fn on_time_wake_ups_are_bursts_and_a_short_rate_comes_first() {
        assert_eq!(
            cause(&late(60, 0.95, 2), &load(), false, false).0,
            "cpu-bursts"
        );
        assert_eq!(
            cause(&late(150, 0.95, 2), &load(), true, false).0,
            "rate not achieved"
        );
        assert_eq!(cause(&late(150, 0.95, 2), &load(), false, true).0, "ok");
    }
}
