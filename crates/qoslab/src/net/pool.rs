//! The packets the network is carrying, each written once into a reusable slot.
//!
//! A packet in the network moves from hook to hook, onto a link and off it at the far
//! end, and on to the next link; a packet is 150-odd bytes, and each hand-over by value
//! was a copy (a fifth of the run time went to copying packets). Instead, a packet is
//! put into a slot of the pool when its source hands it to the network and stays there
//! until it is delivered, dropped or enters a queue: links, conditioner FIFOs and
//! events refer to it by its [`Slot`], and every stage reads and changes it in place.
//! Freed slots are reused first (last freed, first reused), so the steady state
//! allocates nothing and the live slots stay few and warm in the cache.

use crate::packet::Packet;

/// Where a packet waits in a [`PacketPool`]: an index, copied instead of the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(pub u32);

/// Reusable slots of packets; see the module doc.
#[derive(Debug, Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    free: Vec<u32>,
}

impl PacketPool {
    /// Stores `pkt` in a free slot (growing the pool only when none is free).
    #[inline(always)]
    pub fn put(&mut self, pkt: Packet) -> Slot {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = pkt;
                Slot(i)
            }
            None => {
                self.slots.push(pkt);
                Slot((self.slots.len() - 1) as u32)
            }
        }
    }

    /// The packet in slot `s`, taken out; the slot is free again.
    #[inline]
    pub fn take(&mut self, s: Slot) -> Packet {
        self.free.push(s.0);
        self.slots[s.0 as usize]
    }

    /// Frees slot `s`, forgetting its packet.
    #[inline]
    pub fn free(&mut self, s: Slot) {
        self.free.push(s.0);
    }

    /// Packets stored now.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Bytes the pool has allocated (slots and free list, capacity included).
    pub fn allocated_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Packet>()
            + self.free.capacity() * std::mem::size_of::<u32>()
    }
}

impl std::ops::Index<Slot> for PacketPool {
    type Output = Packet;
    #[inline]
    fn index(&self, s: Slot) -> &Packet {
        &self.slots[s.0 as usize]
    }
}

impl std::ops::IndexMut<Slot> for PacketPool {
    #[inline]
    fn index_mut(&mut self, s: Slot) -> &mut Packet {
        &mut self.slots[s.0 as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::FlowId;

    #[test]
    fn slots_are_reused_last_freed_first_and_counted() {
        let mut pool = PacketPool::default();
        let pkt = |f: u32| Packet {
            flow: FlowId(f),
            ..Default::default()
        };
        let a = pool.put(pkt(1));
        let b = pool.put(pkt(2));
        assert_ne!(a, b);
        assert_eq!(pool.live(), 2);
        pool[b].size = 77;
        assert_eq!(pool.take(b).size, 77);
        pool.free(a);
        assert_eq!(pool.live(), 0);
        // Last freed, first reused: no growth while packets come and go.
        assert_eq!(pool.put(pkt(3)), a);
        assert_eq!(pool.put(pkt(4)), b);
        assert_eq!(pool[a].flow, FlowId(3));
        assert_eq!(pool[b].flow, FlowId(4));
        assert_eq!(pool.live(), 2);
        assert_eq!(pool.slots.len(), 2);
    }
}
