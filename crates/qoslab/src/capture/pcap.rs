//! Classic libpcap files with nanosecond timestamps (magic `0xa1b23c4d`), Ethernet link
//! type, written little-endian through any `Write`.

use std::io::{self, Write};

use crate::time::SimTime;

/// Magic number of a nanosecond-resolution libpcap file.
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// LINKTYPE_RAW: each record is an IP packet (live mode's datapath captures).
pub const LINKTYPE_RAW: u32 = 101;
/// Size of the global header that starts a file [bytes].
pub const HEADER_BYTES: u64 = 24;
/// Size of the header before each packet's bytes [bytes].
pub const RECORD_HEADER_BYTES: u64 = 16;

static ZEROS: [u8; 4096] = [0; 4096];

/// A libpcap file being written: the global header, then one record per packet.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header (`snaplen` [bytes]) and returns the writer.
    pub fn new(out: W, snaplen: u32) -> io::Result<Self> {
        Self::with_linktype(out, snaplen, LINKTYPE_ETHERNET)
    }

    /// As [`PcapWriter::new`], with another link type (e.g. [`LINKTYPE_RAW`]).
    pub fn with_linktype(mut out: W, snaplen: u32, linktype: u32) -> io::Result<Self> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone = 0, sigfigs = 0.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&linktype.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// Writes one record at time `t`: `hdr` followed by zero bytes up to `frame_len`,
    /// the whole cut to `snaplen` bytes stored (the record keeps `frame_len` as its
    /// original length).
    pub fn record(
        &mut self,
        t: SimTime,
        hdr: &[u8],
        frame_len: u32,
        snaplen: u32,
    ) -> io::Result<()> {
        let ns = t.as_nanos();
        let incl = frame_len.min(snaplen);
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
        r[4..8].copy_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
        r[8..12].copy_from_slice(&incl.to_le_bytes());
        r[12..16].copy_from_slice(&frame_len.to_le_bytes());
        self.out.write_all(&r)?;
        let from_hdr = (incl as usize).min(hdr.len());
        self.out.write_all(&hdr[..from_hdr])?;
        let mut zeros = incl as usize - from_hdr;
        while zeros > 0 {
            let n = zeros.min(ZEROS.len());
            self.out.write_all(&ZEROS[..n])?;
            zeros -= n;
        }
        Ok(())
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_record_layout() {
        let mut w = PcapWriter::new(Vec::new(), 96).unwrap();
        let hdr = [0xAAu8; 54];
        w.record(SimTime::from_nanos(3_000_000_123), &hdr, 1514, 96)
            .unwrap();
        w.record(SimTime::from_nanos(7), &hdr[..10], 20, 96)
            .unwrap();
        let b = w.finish().unwrap();
        assert_eq!(&b[0..4], &[0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!(&b[4..8], &[2, 0, 4, 0]);
        assert_eq!(&b[16..20], &96u32.to_le_bytes());
        assert_eq!(&b[20..24], &1u32.to_le_bytes());
        let r = &b[24..];
        assert_eq!(&r[0..4], &3u32.to_le_bytes());
        assert_eq!(&r[4..8], &123u32.to_le_bytes());
        assert_eq!(&r[8..12], &96u32.to_le_bytes());
        assert_eq!(&r[12..16], &1514u32.to_le_bytes());
        assert!(r[16..16 + 54].iter().all(|&x| x == 0xAA));
        assert!(r[16 + 54..16 + 96].iter().all(|&x| x == 0));
        let r2 = &r[16 + 96..];
        assert_eq!(&r2[8..16], &[20, 0, 0, 0, 20, 0, 0, 0]);
        assert_eq!(r2.len(), 16 + 20);
        assert!(r2[26..].iter().all(|&x| x == 0));
    }
}
