//! One object's HTTP/1.0 connection: the client opens it (SYN, SYN-ACK), sends the
//! request and closes its side (FIN); when the whole request has arrived the server
//! sends the object on the same connection, already established, so it starts with its
//! initial window at once.
//!
//! Each direction's data is one of the engine's one-way TCP halves: the request half
//! (sender at the client, with the handshake) and the response half (sender at the
//! server, no handshake of its own). Their segments carry `subflow` 0 and 1, which is
//! how the host tells them apart ([`WebConn::at_server`], [`WebConn::at_client`]).

use crate::packet::{tcp_flags, TcpHeader};
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender};
use crate::time::SimTime;

/// One of a connection's four TCP endpoints (for timers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebEnd {
    /// The client sending the request.
    ClientRequest = 0,
    /// The server receiving the request.
    ServerRequest = 1,
    /// The server sending the object.
    ServerResponse = 2,
    /// The client receiving the object.
    ClientResponse = 3,
}

impl WebEnd {
    /// All four, in timer-slot order.
    pub const ALL: [WebEnd; 4] = [
        WebEnd::ClientRequest,
        WebEnd::ServerRequest,
        WebEnd::ServerResponse,
        WebEnd::ClientResponse,
    ];
}

/// The subflow of the response half's segments.
const RESPONSE: u8 = 1;

/// One object's connection between a client and a server.
#[derive(Debug)]
pub struct WebConn {
    /// The object it fetches (index into [`super::Web::objects`]).
    pub object: usize,
    cfg: TcpConfig,
    size: u64,
    request: u64,
    req_snd: TcpSender,
    req_rcv: TcpReceiver,
    resp_snd: Option<TcpSender>,
    resp_rcv: TcpReceiver,
    got_request: u64,
    got_object: u64,
    /// SYNs the client sent.
    pub syns: u32,
    /// Time of each end's pending timer event (NEVER if none), by [`WebEnd`].
    pub armed: [SimTime; 4],
}

impl WebConn {
    /// A connection fetching `size` bytes with a request of `request` bytes; `cfg`
    /// describes both ends (its `handshake` is ignored: the request half has one, the
    /// response half none).
    pub fn new(object: usize, cfg: &TcpConfig, request: u64, size: u64) -> Self {
        let req_cfg = TcpConfig {
            handshake: true,
            ..cfg.clone()
        };
        let resp_cfg = TcpConfig {
            handshake: false,
            ..cfg.clone()
        };
        WebConn {
            object,
            cfg: resp_cfg.clone(),
            size,
            request,
            req_snd: TcpSender::new(&req_cfg, Some(request)),
            req_rcv: TcpReceiver::new(&req_cfg),
            resp_snd: None,
            resp_rcv: TcpReceiver::new(&resp_cfg),
            got_request: 0,
            got_object: 0,
            syns: 0,
            armed: [SimTime::NEVER; 4],
        }
    }

    fn count_syns(&mut self, out: &[TcpHeader]) {
        self.syns += out.iter().filter(|h| h.flags & tcp_flags::SYN != 0).count() as u32;
    }

    /// The client opens the connection: its SYN goes onto `to_server`.
    pub fn open(&mut self, now: SimTime, to_server: &mut Vec<TcpHeader>) {
        let n = to_server.len();
        self.req_snd.start(now, to_server);
        self.count_syns(&to_server[n..]);
    }

    /// A segment arrived at the server; what it sends goes onto `to_client`.
    pub fn at_server(
        &mut self,
        now: SimTime,
        h: &TcpHeader,
        ce: bool,
        to_client: &mut Vec<TcpHeader>,
    ) {
        if h.subflow == RESPONSE {
            if let Some(s) = &mut self.resp_snd {
                let n = to_client.len();
                s.on_ack(now, h, to_client);
                mark_response(&mut to_client[n..]);
            }
            return;
        }
        self.got_request += self.req_rcv.on_segment(now, h, ce, to_client);
        if self.got_request >= self.request && self.resp_snd.is_none() {
            let mut s = TcpSender::new(&self.cfg, Some(self.size));
            let n = to_client.len();
            s.start(now, to_client);
            mark_response(&mut to_client[n..]);
            self.resp_snd = Some(s);
        }
    }

    /// A segment arrived at the client; what it sends goes onto `to_server`. Returns the
    /// object's new in-order bytes.
    pub fn at_client(
        &mut self,
        now: SimTime,
        h: &TcpHeader,
        ce: bool,
        to_server: &mut Vec<TcpHeader>,
    ) -> u64 {
        if h.subflow == RESPONSE {
            let new = self.resp_rcv.on_segment(now, h, ce, to_server);
            self.got_object += new;
            return new;
        }
        let n = to_server.len();
        self.req_snd.on_ack(now, h, to_server);
        self.count_syns(&to_server[n..]);
        0
    }

    /// When `end` next wants its timer.
    pub fn next_timer(&self, end: WebEnd) -> Option<SimTime> {
        match end {
            WebEnd::ClientRequest => self.req_snd.next_timer(),
            WebEnd::ServerRequest => self.req_rcv.next_timer(),
            WebEnd::ServerResponse => self.resp_snd.as_ref().and_then(|s| s.next_timer()),
            WebEnd::ClientResponse => self.resp_rcv.next_timer(),
        }
    }

    /// Runs `end`'s timer; what it sends goes onto `out` (towards the other host).
    pub fn on_timer(&mut self, now: SimTime, end: WebEnd, out: &mut Vec<TcpHeader>) {
        let n = out.len();
        match end {
            WebEnd::ClientRequest => {
                self.req_snd.on_timer(now, out);
                self.count_syns(&out[n..]);
            }
            WebEnd::ServerRequest => self.req_rcv.on_timer(now, out),
            WebEnd::ServerResponse => {
                if let Some(s) = &mut self.resp_snd {
                    s.on_timer(now, out);
                    mark_response(&mut out[n..]);
                }
            }
            WebEnd::ClientResponse => self.resp_rcv.on_timer(now, out),
        }
    }

    /// Which host an end sits at: true for the client.
    pub fn at_client_side(end: WebEnd) -> bool {
        matches!(end, WebEnd::ClientRequest | WebEnd::ClientResponse)
    }

    /// The object is delivered and both senders are done (everything acknowledged).
    pub fn finished(&self) -> bool {
        self.got_object >= self.size
            && self.req_snd.is_done()
            && self.resp_snd.as_ref().is_some_and(|s| s.is_done())
    }

    /// Bytes of the object delivered in order at the client.
    pub fn received(&self) -> u64 {
        self.got_object
    }
}

fn mark_response(hs: &mut [TcpHeader]) {
    for h in hs {
        h.subflow = RESPONSE;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Delivers segments between the two ends without loss until nothing is left to
    /// send; returns the object bytes the client received.
    fn exchange(c: &mut WebConn, now: SimTime) -> u64 {
        let mut up = Vec::new();
        c.open(now, &mut up);
        let mut got = 0;
        for _ in 0..1000 {
            if up.is_empty() {
                return got;
            }
            let mut down = Vec::new();
            for h in up.drain(..) {
                c.at_server(now, &h, false, &mut down);
            }
            for h in down {
                got += c.at_client(now, &h, false, &mut up);
            }
        }
        panic!("the exchange did not end");
    }

    #[test]
    fn the_object_follows_the_handshake_and_the_request() {
        let cfg = TcpConfig {
            mss: 1000,
            ..TcpConfig::default()
        };
        let mut c = WebConn::new(0, &cfg, 1000, 12_000);
        let mut up = Vec::new();
        c.open(SimTime::ZERO, &mut up);
        // First the SYN alone: no request data before the handshake.
        assert_eq!(up.len(), 1);
        assert!(up[0].flags & tcp_flags::SYN != 0 && up[0].len == 0);
        let mut c = WebConn::new(0, &cfg, 1000, 12_000);
        let got = exchange(&mut c, SimTime::ZERO);
        assert_eq!(got, 12_000);
        assert_eq!(c.received(), 12_000);
        assert_eq!(c.syns, 1);
        assert!(c.finished(), "everything acknowledged, FIN included");
    }
}
