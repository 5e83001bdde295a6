//! Warnings for values that are valid but almost certainly not what the user meant: a
//! rate below 1 kb/s (`rate = 10` is 10 bit/s, not 10 Mb/s) and a link delay as long as
//! the run. They go into the run's summary warnings; the scenario still runs.

use crate::time::Rate;

use super::Scenario;

/// The slowest rate that does not look like a missing unit [bit/s].
pub const MIN_PLAUSIBLE_BPS: u64 = 1_000;

/// One warning per rate below [`MIN_PLAUSIBLE_BPS`] (link rates, CBR and Pareto
/// sources) and per link whose delay is at least the run's duration.
pub fn warnings(sc: &Scenario) -> Vec<String> {
    let mut out = Vec::new();
    let mut rate = |key: String, r: Rate, what: &str| {
        if r.bps() < MIN_PLAUSIBLE_BPS {
            out.push(format!(
                "`{key}` = {} bit/s is below 1 kb/s, implausibly slow for {what} (a number \
                 without a unit is bit/s: write \"{}Mbps\" for {} Mb/s)",
                r.bps(),
                r.bps(),
                r.bps()
            ));
        }
    };
    for (i, l) in sc.link.iter().enumerate() {
        rate(format!("link[{i}].rate"), l.rate, "a link");
        if let Some(r) = l.rate_b_to_a {
            rate(format!("link[{i}].rate_b_to_a"), r, "a link");
        }
    }
    for (i, f) in sc.flow.iter().enumerate() {
        if let Some(c) = f.cbr() {
            rate(format!("flow[{i}].cbr.rate"), c.rate, "a CBR source");
        }
        if let Some(p) = f.pareto() {
            rate(format!("flow[{i}].pareto.rate"), p.rate, "a Pareto source");
        }
    }
    for (i, l) in sc.link.iter().enumerate() {
        if l.delay >= sc.duration {
            out.push(format!(
                "`link[{i}].delay` = {} is not shorter than the run (duration = {}): no \
                 packet crosses the link {} - {} before the end (a number without a unit \
                 is seconds: write \"{}ms\" for milliseconds)",
                l.delay,
                sc.duration,
                l.a,
                l.b,
                trim(l.delay.as_secs_f64()),
            ));
        }
    }
    out
}

/// `x` without a trailing `.0`.
fn trim(x: f64) -> String {
    let s = format!("{x}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{parse, Format};

    fn sc(link: &str, flow: &str) -> Scenario {
        let text = format!(
            "duration = \"10s\"\n[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
             [[link]]\na = \"a\"\nb = \"b\"\n{link}\n[[flow]]\nname = \"f\"\nfrom = \"a\"\n\
             to = \"b\"\n{flow}\n"
        );
        parse(&text, Format::Toml).unwrap()
    }

    #[test]
    fn a_rate_without_unit_warns_with_its_key() {
        let w = warnings(&sc("rate = 10\ndelay = \"10ms\"", "cbr = { rate = 5 }"));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with("`link[0].rate` = 10 bit/s is below 1 kb/s"),
            "{w:?}"
        );
        assert!(w[0].contains("\"10Mbps\""), "{w:?}");
        assert!(w[1].starts_with("`flow[0].cbr.rate` = 5 bit/s"), "{w:?}");
    }

    #[test]
    fn plausible_rates_and_delays_do_not_warn() {
        let w = warnings(&sc(
            "rate = 1000\nrate_b_to_a = \"1Mbps\"\ndelay = \"9.9s\"",
            "cbr = { rate = \"64kbps\" }",
        ));
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn a_delay_as_long_as_the_run_warns() {
        let w = warnings(&sc(
            "rate = \"1Mbps\"\ndelay = 10",
            "cbr = { rate = \"1Mbps\" }",
        ));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("`link[0].delay` = 10s is not shorter than the run"),
            "{w:?}"
        );
        assert!(w[0].contains("\"10ms\""), "{w:?}");
    }
}
