//! Engine speed on the reference scenarios: simulated events and packet-hops per wall
//! second, and heap allocations per packet-hop in the steady state (counted by a
//! wrapping global allocator, so "no allocation per packet" is measured, not assumed).
//!
//! Run: `cargo bench -p qoslab --bench engine` (or `benches/run.sh`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use qoslab::scenario::{self, Format};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// `n` CBR flows of `rate` each over a dumbbell with a `bottleneck` link.
fn cbr_dumbbell(n: usize, bottleneck: &str, access: &str, rate: &str, secs: u32) -> String {
    let mut s = format!("name = \"cbr-dumbbell-{n}\"\nduration = \"{secs}s\"\n");
    s += "[[node]]\nname = \"r1\"\nkind = \"router\"\n[[node]]\nname = \"r2\"\nkind = \"router\"\n";
    for i in 0..n {
        s += &format!("[[node]]\nname = \"s{i}\"\n[[node]]\nname = \"d{i}\"\n");
        s += &format!(
            "[[link]]\na = \"s{i}\"\nb = \"r1\"\nrate = \"{access}\"\ndelay = \"{}ms\"\n",
            1 + i % 4
        );
        s += &format!("[[link]]\na = \"r2\"\nb = \"d{i}\"\nrate = \"{access}\"\ndelay = \"1ms\"\n");
        s += &format!(
            "[[flow]]\nname = \"f{i}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\ncbr = {{ rate = \"{rate}\", size = 1000, jitter = 0.2 }}\n"
        );
    }
    s += &format!(
        "[[link]]\na = \"r1\"\nb = \"r2\"\nrate = \"{bottleneck}\"\ndelay = \"10ms\"\nqueue = {{ kind = \"droptail\", limit = 200 }}\n"
    );
    s
}

fn bench(label: &str, text: &str) {
    let sc = scenario::parse(text, Format::Toml).expect("valid bench scenario");
    let mut w = scenario::build(&sc).expect("valid bench scenario");
    // Run the first tenth (event slab and queues reach their steady size), then measure.
    let end = w.end;
    w.end = qoslab::time::SimTime::from_nanos(end.as_nanos() / 10);
    w.run().unwrap();
    let (ev0, hops0, a0) = (w.events(), w.hops, ALLOCS.load(Ordering::Relaxed));
    w.end = end;
    let t0 = Instant::now();
    w.resume().unwrap();
    let wall = t0.elapsed().as_secs_f64();
    let (ev, hops, allocs) = (
        w.events() - ev0,
        w.hops - hops0,
        ALLOCS.load(Ordering::Relaxed) - a0,
    );
    println!(
        "{label:<36} wall {wall:>7.3} s  events/s {:>6.2} M  packet-hops/s {:>6.2} M  allocs/hop {:.6}",
        ev as f64 / wall / 1e6,
        hops as f64 / wall / 1e6,
        allocs as f64 / hops as f64
    );
}

fn main() {
    println!(
        "qoslab engine benchmark (release build; one run each, measured after a 10 % warm-up)"
    );
    bench(
        "20 CBR, 100 Mb/s dumbbell, 60 s",
        &cbr_dumbbell(20, "100Mbps", "100Mbps", "5.5Mbps", 60),
    );
}
