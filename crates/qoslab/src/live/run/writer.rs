//! The TUN writer: a second thread that writes the packets the network delivered to their
//! hosts' TUN devices. A TUN write runs the receiving host's kernel — its TCP, the ACK it
//! sends, the wake-up of its application, and on an ACK the sender's next segments — in
//! the writing thread, 4–6 µs per packet at 1 Gb/s on the 2-vCPU development VM: half the
//! event loop's wall time when it did them itself. On a machine with a second CPU the loop
//! hands the bytes over instead and the writer does the writes there, in order.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::{Lateness, WallClock};
use crate::live::sys;
use crate::time::SimTime;

/// Bytes a fresh buffer holds without growing: the TUN's MTU (1500) and room to spare.
const BUF: usize = 2048;

/// A packet for the writer: its host's index, its bytes and when the network delivered
/// it (on `clock`, to measure how late the write began).
struct Outgoing {
    /// Index of the destination host's TUN in the writer's descriptors.
    host: usize,
    /// The packet as it goes to the TUN.
    bytes: Vec<u8>,
    /// The delivery's scheduled time.
    due: SimTime,
    /// The run's clock, once the loop has one.
    clock: Option<WallClock>,
}

/// What the event loop and the writer share.
#[derive(Default)]
struct Shared {
    /// Packets handed to the writer, oldest first.
    queue: Mutex<Vec<Outgoing>>,
    /// Buffers the writer is done with, for the loop to reuse.
    free: Mutex<Vec<Vec<u8>>>,
    /// Set when the run ends: the writer writes what is queued and returns.
    done: AtomicBool,
}

/// What the writer counted, handed back when it ends.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Per host: packets written.
    pub(super) tx: Vec<u64>,
    /// Per host: bytes written.
    pub(super) tx_bytes: Vec<u64>,
    /// Per host: writes the device refused.
    pub(super) tx_failed: Vec<u64>,
    /// How late each write began behind its delivery's scheduled time.
    pub(super) late: Lateness,
    /// CPU time the writer thread used [ns].
    pub(super) cpu_ns: u64,
}

/// The writer thread and the loop's end of its queue.
pub(super) struct Writer {
    /// The queue and the free buffers.
    shared: Arc<Shared>,
    /// The thread, until it is joined.
    thread: Option<JoinHandle<Tally>>,
    /// Buffers taken from `shared.free` in one go, used before taking more.
    spare: Vec<Vec<u8>>,
}

/// Locks `m`, whether or not a thread panicked holding it (the data stay usable).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Writer {
    /// Starts the writer over the hosts' TUN descriptors `fds` (which must stay open
    /// until [`Writer::finish`] or the drop), allowed to run only on `cpus` (none: any);
    /// it inherits the calling thread's scheduling policy and timer slack. `None` if the
    /// thread could not start.
    pub(super) fn start(fds: Vec<RawFd>, cpus: Vec<usize>) -> Option<Writer> {
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("qoslab-tun-writer".into())
            .spawn(move || write_loop(&s, &fds, &cpus))
            .ok()?;
        Some(Writer {
            shared,
            thread: Some(thread),
            spare: Vec::new(),
        })
    }

    /// Hands a copy of `bytes`, delivered to host `host` at `due`, to the writer and
    /// wakes it if it sleeps (a futex wake only then; otherwise an atomic swap).
    pub(super) fn send(
        &mut self,
        host: usize,
        bytes: &[u8],
        due: SimTime,
        clock: Option<WallClock>,
    ) {
        if self.spare.is_empty() {
            std::mem::swap(&mut self.spare, &mut *lock(&self.shared.free));
        }
        let mut buf = self.spare.pop().unwrap_or_else(|| Vec::with_capacity(BUF));
        buf.clear();
        buf.extend_from_slice(bytes);
        lock(&self.shared.queue).push(Outgoing {
            host,
            bytes: buf,
            due,
            clock,
        });
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }

    /// Ends the writer once it has written everything handed to it; what it counted.
    pub(super) fn finish(mut self) -> Tally {
        self.stop().unwrap_or_default()
    }

    /// Tells the writer to end and joins it: its tally, unless it panicked or was
    /// already joined.
    fn stop(&mut self) -> Option<Tally> {
        let t = self.thread.take()?;
        self.shared.done.store(true, Ordering::Release);
        t.thread().unpark();
        t.join().ok()
    }
}

impl Drop for Writer {
    /// Joins the thread: the descriptors it writes to must outlive it.
    fn drop(&mut self) {
        self.stop();
    }
}

/// The writer thread: takes every queued packet in one go and writes each to its host's
/// TUN in order, sleeping (parked) while the queue is empty; returns when `done` is set
/// and the queue drained.
fn write_loop(shared: &Shared, fds: &[RawFd], cpus: &[usize]) -> Tally {
    if !cpus.is_empty() {
        // Best effort: on the loop's CPU it would only wait for the loop to sleep.
        let _ = sys::set_affinity(cpus);
    }
    let n = fds.len();
    let mut t = Tally {
        tx: vec![0; n],
        tx_bytes: vec![0; n],
        tx_failed: vec![0; n],
        ..Tally::default()
    };
    let cpu0 = sys::thread_cpu_ns();
    let (mut batch, mut used) = (Vec::new(), Vec::new());
    loop {
        // `done` first: every packet handed over before it was set is in the queue now.
        let done = shared.done.load(Ordering::Acquire);
        std::mem::swap(&mut batch, &mut *lock(&shared.queue));
        if batch.is_empty() {
            if done {
                break;
            }
            // It sleeps at once: polling its queue for 5 µs first (a packet handed over
            // meanwhile costs no futex wake-up) kept the CPU the hosts' programs share
            // with it busy, and their goodput fell (8 flows: 740 against 917 Mb/s;
            // benches/live_datapath.txt).
            // The loop unparks after each packet it queues: a packet queued since the
            // swap makes this return at once. The timeout only bounds a lost wake-up.
            std::thread::park_timeout(Duration::from_millis(50));
            continue;
        }
        for o in batch.drain(..) {
            if let Some(c) = o.clock {
                t.late.record(c.now().saturating_since(o.due));
            }
            if sys::write_packet(fds[o.host], &o.bytes) {
                t.tx[o.host] += 1;
                t.tx_bytes[o.host] += o.bytes.len() as u64;
            } else {
                t.tx_failed[o.host] += 1;
            }
            used.push(o.bytes);
        }
        lock(&shared.free).append(&mut used);
    }
    t.cpu_ns = sys::thread_cpu_ns().saturating_sub(cpu0);
    t
}
