//! The datapath's capture file (`[live] pcap`): every delivered packet's bytes, stamped
//! with its delivery time.

use super::live_err;
use crate::time::SimTime;
use crate::Error;

/// The datapath's capture file (`[live] pcap`).
pub(super) struct LivePcap {
    /// The pcap file (raw IPv4 link type).
    pub(super) writer: crate::capture::pcap::PcapWriter<std::io::BufWriter<std::fs::File>>,
    /// Bytes kept of each packet.
    snaplen: u32,
    /// Packets recorded.
    pub(super) packets: u64,
    /// The first write error, which stopped the capture.
    pub(super) error: Option<String>,
}

impl LivePcap {
    /// Creates the capture file at `path` (and its folder), keeping `snaplen` bytes of each packet.
    pub(super) fn open(path: &std::path::Path, snaplen: u32) -> Result<LivePcap, Error> {
        let err = |e: std::io::Error| live_err(format!("{}: {e}", path.display()));
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(err)?;
        }
        let f = std::fs::File::create(path).map_err(err)?;
        let writer = crate::capture::pcap::PcapWriter::with_linktype(
            std::io::BufWriter::with_capacity(1 << 20, f),
            snaplen,
            crate::capture::pcap::LINKTYPE_RAW,
        )
        .map_err(err)?;
        Ok(LivePcap {
            writer,
            snaplen,
            packets: 0,
            error: None,
        })
    }

    /// Records one delivered packet; the first write error stops the capture.
    pub(super) fn record(&mut self, t: SimTime, bytes: &[u8]) {
        if self.error.is_some() {
            return;
        }
        match self
            .writer
            .record(t, bytes, bytes.len() as u32, self.snaplen)
        {
            Ok(()) => self.packets += 1,
            Err(e) => self.error = Some(e.to_string()),
        }
    }
}
