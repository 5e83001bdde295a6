//! Memory per flow and per queued packet, at 1,000 and 10,000 TCP flows: live heap
//! bytes are tracked by a wrapping global allocator (bytes allocated less bytes freed).
//!
//! Per flow: the live bytes of the built world (nodes, links, queues, routes, TCP state),
//! and again in the steady state with the bytes of queued and in-flight packets taken
//! out, divided by the flows. Per queued packet: the live bytes a queue grows by while
//! it fills with 100,000 packets (its storage, capacity slack included), divided by them.
//!
//! Run: `cargo bench -p qoslab --bench memory` (or `benches/run.sh memory`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

use qoslab::queue::Queue;
use qoslab::scenario::{self, Format};
use qoslab::world::World;

struct Tracking;
static LIVE: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as i64, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as i64, Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as i64 - l.size() as i64, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

fn live() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// `n` SACK flows (RTTs 20/40/80/160 ms) over a dumbbell, bottleneck `bn`.
fn tcp_dumbbell(n: usize, bn: &str, access: &str, limit: u32, secs: f64) -> String {
    let mut s = format!("duration = \"{secs}s\"\n");
    s += "[[node]]\nname = \"r1\"\nkind = \"router\"\n[[node]]\nname = \"r2\"\nkind = \"router\"\n";
    for i in 0..n {
        let d = [7, 17, 37, 77][i % 4];
        s += &format!("[[node]]\nname = \"s{i}\"\n[[node]]\nname = \"d{i}\"\n");
        s += &format!("[[link]]\na = \"s{i}\"\nb = \"r1\"\nrate = \"{access}\"\ndelay = \"{d}ms\"\nqueue = {{ kind = \"droptail\", limit = 1000 }}\n");
        s += &format!("[[link]]\na = \"r2\"\nb = \"d{i}\"\nrate = \"{access}\"\ndelay = \"1ms\"\nqueue = {{ kind = \"droptail\", limit = 1000 }}\n");
        s += &format!(
            "[[flow]]\nname = \"f{i}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\nstart = {}\ntcp = {{ variant = \"sack\", initial_window = 10, delayed_ack = true }}\n",
            (i as f64 * 0.618_034).fract()
        );
    }
    s += &format!(
        "[[link]]\na = \"r1\"\nb = \"r2\"\nrate = \"{bn}\"\ndelay = \"2ms\"\nqueue = {{ kind = \"droptail\", limit = {limit} }}\n"
    );
    s
}

/// Packets in queues and on the wire, and the bytes of the links' FIFOs and the packet
/// pool that holds the packets in flight (capacity included).
fn packets_held(w: &World) -> (u64, i64) {
    let mut n = 0u64;
    let mut bytes = w.packet_pool().allocated_bytes() as i64;
    for f in &w.ifaces {
        let q = f.queue.occupancy().packets as u64;
        n += q + f.on_wire.len() as u64;
        bytes += (f.on_wire.capacity()
            * std::mem::size_of::<(qoslab::time::SimTime, qoslab::net::Slot)>())
            as i64;
    }
    (n, bytes)
}

fn per_flow(n: usize, bn: &str, access: &str, limit: u32, secs: f64) {
    let text = tcp_dumbbell(n, bn, access, limit, secs);
    let sc = scenario::parse(&text, Format::Toml).expect("valid bench scenario");
    let before = live();
    let mut w = scenario::build(&sc).expect("valid bench scenario");
    let built = live() - before;
    w.run().expect("runs");
    let (held, wire_bytes) = packets_held(&w);
    let steady = live() - before;
    println!(
        "{n:>6} TCP flows @ {bn:>6}: built {:>7.0} B/flow; after {secs} s {:>7.0} B/flow \
         ({held} packets queued or in flight; wires' and packet pool's storage {:.0} B/flow)",
        built as f64 / n as f64,
        steady as f64 / n as f64,
        wire_bytes as f64 / n as f64,
    );
}

fn per_queued_packet() {
    // One CBR flow at 10× a slow bottleneck fills a 100,000-packet DropTail queue.
    let limit = 100_000;
    let text = format!(
        "duration = \"100s\"\n[[node]]\nname = \"s\"\n[[node]]\nname = \"r\"\n[[node]]\nname = \"d\"\n\
         [[link]]\na = \"s\"\nb = \"r\"\nrate = \"100Mbps\"\ndelay = \"1ms\"\n\
         [[link]]\na = \"r\"\nb = \"d\"\nrate = \"10Mbps\"\ndelay = \"1ms\"\nqueue = {{ kind = \"droptail\", limit = {limit} }}\n\
         [[flow]]\nname = \"f\"\nfrom = \"s\"\nto = \"d\"\ncbr = {{ rate = \"100Mbps\", size = 1000 }}\n"
    );
    let sc = scenario::parse(&text, Format::Toml).expect("valid bench scenario");
    let mut w = scenario::build(&sc).expect("valid bench scenario");
    let before = live();
    w.run().expect("runs");
    let grown = live() - before;
    let queued: u64 = w
        .ifaces
        .iter()
        .map(|f| f.queue.occupancy().packets as u64)
        .sum();
    println!(
        "per queued packet: {:.0} B ({queued} packets queued; Packet is {} B; a queue's \
         storage doubles as it grows)",
        grown as f64 / queued as f64,
        std::mem::size_of::<qoslab::packet::Packet>()
    );
}

fn main() {
    println!("qoslab memory benchmark (live heap bytes)");
    per_flow(1_000, "1Gbps", "10Gbps", 2000, 2.0);
    per_flow(10_000, "10Gbps", "100Gbps", 20000, 1.0);
    per_queued_packet();
}
