//! Forwarding a packet allocates nothing once a run is in its steady state: heap
//! allocations are counted by a wrapping global allocator (per thread, so other tests
//! running at the same time do not count) while a TCP dumbbell and a RED dumbbell with
//! CBR cross traffic run after their warm-up. Its own test binary, so the counting
//! allocator does not slow down the other tests.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use qoslab::scenario::{self, Format};
use qoslab::time::SimTime;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // `try_with`: the allocator also runs while thread-locals are torn down.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

/// `n` SACK flows with RTTs 20–160 ms over a 10 Mb/s `queue` bottleneck, plus `cbr`
/// UDP flows, for `secs` seconds.
fn dumbbell(n: usize, cbr: usize, queue: &str, secs: u32) -> String {
    let mut s = format!("duration = \"{secs}s\"\n");
    s += "[[node]]\nname = \"r1\"\nkind = \"router\"\n[[node]]\nname = \"r2\"\nkind = \"router\"\n";
    for i in 0..n + cbr {
        let d = [7, 17, 37, 77][i % 4];
        s += &format!("[[node]]\nname = \"s{i}\"\n[[node]]\nname = \"d{i}\"\n");
        s +=
            &format!("[[link]]\na = \"s{i}\"\nb = \"r1\"\nrate = \"100Mbps\"\ndelay = \"{d}ms\"\n");
        s += &format!("[[link]]\na = \"r2\"\nb = \"d{i}\"\nrate = \"100Mbps\"\ndelay = \"1ms\"\n");
        let app = if i < n {
            "tcp = { variant = \"sack\", initial_window = 10, delayed_ack = true }".to_string()
        } else {
            "cbr = { rate = \"1Mbps\", size = 1000, jitter = 0.2 }".to_string()
        };
        s += &format!(
            "[[flow]]\nname = \"f{i}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\nstart = {}\n{app}\n",
            i as f64 * 0.05
        );
    }
    s += &format!(
        "[[link]]\na = \"r1\"\nb = \"r2\"\nrate = \"10Mbps\"\ndelay = \"2ms\"\nqueue = {queue}\n"
    );
    s
}

/// Allocations per packet-hop between `from` seconds and the end of the run.
fn allocs_per_hop(text: &str, from: u64) -> (u64, u64) {
    let sc = scenario::parse(text, Format::Toml).expect("valid scenario");
    let mut w = scenario::build(&sc).expect("valid scenario");
    let end = w.end;
    w.end = SimTime::from_nanos(from * 1_000_000_000);
    w.run().expect("runs");
    let (a0, h0) = (allocs(), w.hops);
    w.end = end;
    w.resume().expect("runs");
    (allocs() - a0, w.hops - h0)
}

#[test]
fn steady_state_forwarding_allocates_nothing() {
    for queue in [
        "{ kind = \"droptail\", limit = 100 }",
        "{ kind = \"red\", limit = 100, min_th = 5, max_th = 15, max_p = 0.1, w_q = 0.002 }",
    ] {
        let (a, hops) = allocs_per_hop(&dumbbell(8, 2, queue, 30), 10);
        assert!(hops > 50_000, "{queue}: only {hops} hops");
        // A handful is allowed (a queue or the event heap reaching a new peak size);
        // one per packet, or per thousand, is not.
        assert!(a <= 20, "{queue}: {a} allocations in {hops} packet-hops");
    }
}
