//! UDP sink: counts what arrives, the sequence gaps and the one-way delay.

use crate::packet::Packet;
use crate::time::{Dur, SimTime};

/// Counters of a UDP sink.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UdpSink {
    /// Datagrams received.
    pub packets: u64,
    /// Payload bytes received.
    pub bytes: u64,
    /// Highest sequence number seen + 1.
    pub next_seq: u64,
    /// Datagrams that arrived below `next_seq` (late or duplicated).
    pub out_of_order: u64,
    /// Sum of one-way delays [ns].
    pub delay_sum_ns: u128,
    /// Smallest one-way delay seen.
    pub delay_min: Option<Dur>,
    /// Largest one-way delay seen.
    pub delay_max: Dur,
}

impl UdpSink {
    /// Records an arriving datagram of sequence `seq`; returns its payload bytes.
    pub fn on_packet(&mut self, now: SimTime, pkt: &Packet, seq: u64) -> u64 {
        let d = now - pkt.created;
        self.packets += 1;
        let payload = pkt.payload() as u64;
        self.bytes += payload;
        if seq >= self.next_seq {
            self.next_seq = seq + 1;
        } else {
            self.out_of_order += 1;
        }
        self.delay_sum_ns += d.as_nanos() as u128;
        self.delay_min = Some(self.delay_min.map_or(d, |m| m.min(d)));
        self.delay_max = self.delay_max.max(d);
        payload
    }

    /// Mean one-way delay [s], if anything arrived.
    pub fn mean_delay(&self) -> Option<f64> {
        (self.packets > 0).then(|| self.delay_sum_ns as f64 / self.packets as f64 / 1e9)
    }
}
