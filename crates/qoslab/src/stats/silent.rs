//! A warning for a run in which flows delivered nothing at all: usually a rate or a
//! delay in the wrong unit, a route that goes nowhere, or a queue that holds no packet.

use crate::world::World;

/// How many flow names (or runs of numbered names) a warning lists before "and N more".
const SHOWN: usize = 8;

/// One warning naming every flow that delivered no byte during the whole run, or
/// nothing when each delivered some.
pub fn silent_flows_warning(w: &World) -> Option<String> {
    let silent: Vec<&str> = w
        .flows
        .iter()
        .filter(|f| f.counters.goodput_bytes == 0)
        .map(|f| f.name.as_str())
        .collect();
    if silent.is_empty() {
        return None;
    }
    let n = silent.len();
    let all = n == w.flows.len();
    let runs = compact(&silent);
    let shown = runs.len().min(SHOWN);
    let mut list = runs[..shown].join(", ");
    if runs.len() > shown {
        list.push_str(&format!(" and {} more", runs.len() - shown));
    }
    Some(format!(
        "{} delivered nothing during the run: {list}; check the rates and delays along \
         their paths (a number without a unit is bit/s for a rate, seconds for a delay)",
        if all {
            format!("all {n} flow{}", if n == 1 { "" } else { "s" })
        } else {
            format!("{n} of {} flows", w.flows.len())
        }
    ))
}

/// One warning per interface whose queue refused every packet offered to it as overflow
/// over the whole run: with a packet limit (at least 1) an empty queue always admits a
/// packet, so this is a byte limit (`limit_bytes`) smaller than every packet offered.
pub fn overflow_all_warnings(w: &World) -> Vec<String> {
    use crate::drop::DropCause;
    w.ifaces
        .iter()
        .filter(|f| {
            let c = &f.counters;
            c.arrived > 0
                && c.departed == 0
                && c.drops.packets[DropCause::Overflow.index()] == c.arrived
        })
        .map(|f| {
            format!(
                "queue of {} dropped all {} packets offered to it on arrival (overflow): its \
                 byte limit (`limit_bytes`) is smaller than the packets; raise it to at least \
                 the largest packet (1500 bytes for a 1460-byte TCP segment)",
                f.name, f.counters.arrived
            )
        })
        .collect()
}

/// Names with runs of numbered copies (`g-1`, `g-2`, …, `g-10`, as a flow with
/// `count = 10` names them) written as one range, `g-1…g-10`.
fn compact(names: &[&str]) -> Vec<String> {
    let split = |s: &str| -> Option<(String, u64)> {
        let (stem, k) = s.rsplit_once('-')?;
        if k.is_empty() || k.starts_with('0') || !k.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((stem.to_string(), k.parse().ok()?))
    };
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        if let Some((stem, first)) = split(names[i]) {
            let mut last = first;
            while j < names.len() {
                match split(names[j]) {
                    Some((s, k)) if s == stem && k == last + 1 => {
                        last = k;
                        j += 1;
                    }
                    _ => break,
                }
            }
            if last > first {
                out.push(format!("{stem}-{first}…{stem}-{last}"));
                i = j;
                continue;
            }
        }
        out.push(names[i].to_string());
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::compact;

    #[test]
    fn numbered_copies_become_ranges() {
        let names = ["a-1", "a-2", "a-3", "b", "c-1", "c-3", "d-01", "d-02"];
        assert_eq!(
            compact(&names),
            ["a-1…a-3", "b", "c-1", "c-3", "d-01", "d-02"]
        );
    }
}
