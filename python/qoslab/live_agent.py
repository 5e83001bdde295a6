"""The built-in programs of a live run's host (one process per network namespace).

``python -m qoslab.live_agent CONFIG.json`` is started by the live runner inside a host's
namespace. It opens the listeners of the flows that end at this host, prints ``ready``,
waits for ``go`` on stdin (time zero of the run), then runs the flows that start here:
TCP bulk senders (the kernel's own TCP, congestion control and ECN set per namespace by
the runner), Telnet senders, web clients (the simulator's web model, one connection per
object, to the web server of a flow whose source is another host) and UDP
constant-bit-rate senders, plus ICMP echo probes, and the user's
own programs (``[[live.program]]``) from their start to their stop time. On ``stop`` it
stops the programs still running and prints one line of JSON: per sink flow the goodput
bytes after the warm-up and a cumulative series, per sender the kernel's ``TCP_INFO``
state, per probe the RTTs, per program its exit status.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import math
import os
import queue
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

#: struct tcp_info up to tcpi_total_retrans (8 bytes, 24 × u32), which every kernel has.
TCP_INFO_LEN = 104
#: Where tcpi_min_rtt [µs] sits (after the pacing rates, byte and segment counters: Linux
#: 4.6+); a shorter struct leaves it out.
TCP_INFO_MIN_RTT = 148
#: The bytes asked for: through tcpi_min_rtt.
TCP_INFO_ASK = TCP_INFO_MIN_RTT + 4
#: A bulk sink's SO_RCVLOWAT: what arrives in LOWAT_SPAN seconds at the rate it read over
#: the last LOWAT_EVERY seconds, at most LOWAT_MAX bytes.
LOWAT_SPAN = 0.001
LOWAT_EVERY = 0.01
LOWAT_MAX = 16384


def tcp_info(sock: socket.socket) -> dict | None:
    """cwnd, ssthresh [segments], srtt and rto [s], total retransmits and, where the
    kernel has it, min_rtt [s] (its windowed minimum RTT, ``tcp_min_rtt_wlen``) from
    TCP_INFO."""
    try:
        b = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_ASK)
    except OSError:
        return None
    return parse_tcp_info(b)


def parse_tcp_info(b: bytes) -> dict | None:
    """:func:`tcp_info`'s fields from a ``struct tcp_info`` as the kernel returned it."""
    if len(b) < TCP_INFO_LEN:
        return None
    u = struct.unpack_from("=8B24I", b)
    v = u[8:]
    out = {
        "rto": v[0] / 1e6,
        "srtt": v[15] / 1e6,
        "ssthresh": v[17],
        "cwnd": v[18],
        "total_retrans": v[23],
    }
    if len(b) >= TCP_INFO_ASK:
        out["min_rtt"] = struct.unpack_from("=I", b, TCP_INFO_MIN_RTT)[0] / 1e6
    return out


class Agent:
    """One host's senders, sinks and probes."""

    def __init__(self, cfg: dict) -> None:
        self.cfg = cfg
        self.t0 = 0.0
        self.lock = threading.Lock()
        self.received: dict[int, int] = {}
        self.at_warmup: dict[int, int] = {}
        self.series: dict[int, list] = {}
        self.senders: dict[int, dict] = {}
        self.sender_socks: dict[int, socket.socket] = {}
        self.traces: dict[int, list] = {}
        self.pings: list[dict] = []
        self.programs: dict[int, dict] = {}
        self.procs: dict[int, subprocess.Popen] = {}
        self.listeners: list[socket.socket] = []
        self.peer_flow: dict[tuple, int] = {}
        #: Telnet sinks: (monotonic time, cumulative bytes read) at every read.
        self.arrivals: dict[int, list] = {}
        #: Telnet senders: (session, monotonic time, size, end offset) of every write.
        self.telnet_writes: dict[int, list] = {}
        #: Web clients: their models (objects and pages as the run's tables want them).
        self.web: dict[int, WebModel] = {}
        for c in cfg.get("web_clients", []):
            self.received[c["flow"]] = 0
            self.series[c["flow"]] = []
        for lst in cfg["listen"]:
            for p in lst["peers"]:
                self.peer_flow[(lst["proto"], p["peer"], p["peer_port"])] = p["flow"]
                if p.get("arrivals"):
                    self.arrivals[p["flow"]] = []
                self.received[p["flow"]] = 0
                self.series[p["flow"]] = []

    def now(self) -> float:
        return time.monotonic() - self.t0

    def open_listeners(self) -> None:
        for lst in self.cfg["listen"]:
            if lst["proto"] == "tcp":
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                self.set_cc(s)
                s.bind((self.cfg["addr"], lst["port"]))
                s.listen(64)
                threading.Thread(target=self.accept_loop, args=(s,), daemon=True).start()
            else:
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
                s.bind((self.cfg["addr"], lst["port"]))
                threading.Thread(target=self.udp_loop, args=(s,), daemon=True).start()
            self.listeners.append(s)
        for w in self.cfg.get("web_servers", []):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.set_cc(s)
            if w["dscp"]:
                # Accepted connections inherit it, and the SYN-ACK carries it too.
                s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, w["dscp"] << 2)
            s.bind((self.cfg["addr"], w["port"]))
            s.listen(1024)
            threading.Thread(target=self.web_accept, args=(s, w), daemon=True).start()
            self.listeners.append(s)

    def web_accept(self, s: socket.socket, w: dict) -> None:
        while True:
            c, (addr, _) = s.accept()
            if addr != w["client"]:
                c.close()
                continue
            threading.Thread(target=self.web_serve, args=(c, w), daemon=True).start()

    def web_serve(self, c: socket.socket, w: dict) -> None:
        """One object's connection at the server: once the whole request has arrived
        (its first 8 bytes name the object's size), the object, then FIN."""
        got = b""
        with c:
            while len(got) < w["request"]:
                try:
                    d = c.recv(1 << 16)
                except OSError:
                    return
                if not d:
                    break
                got += d
            if len(got) < 8:
                return
            left = struct.unpack_from("!Q", got)[0]
            buf = b"\0" * (1 << 16)
            try:
                while left > 0:
                    n = c.send(buf[: min(left, len(buf))])
                    left -= n
                c.shutdown(socket.SHUT_WR)
                # Until the client has read it all and closed (no RST on unread data).
                while c.recv(1 << 16):
                    pass
            except OSError:
                return

    def web_client(self, f: dict) -> None:
        """The client of a web flow: the simulator's model (sessions, pages, objects;
        its stream's state from the runner), one connection per object."""
        m = WebModel(f)
        self.web[f["flow"]] = m
        done: queue.Queue = queue.Queue()
        end = self.cfg["duration"]
        while True:
            t = m.next_timer()
            wait = min(t, end) - self.now()
            try:
                k, at = done.get(timeout=max(wait, 0.0)) if wait > 0 else done.get_nowait()
            except queue.Empty:
                if t > end or self.now() >= end:
                    return
                for k in m.on_timer(self.now()):
                    threading.Thread(
                        target=self.web_object, args=(f, m, k, done), daemon=True
                    ).start()
                continue
            m.on_done(k, at)

    def web_object(self, f: dict, m: WebModel, k: int, done: queue.Queue) -> None:
        """Object `k` over its own connection: SYN, the request (its first 8 bytes the
        object's size) and FIN, then the object until the server's FIN."""
        o = m.objects[k]
        size = o["bytes"]
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.set_cc(s)
        s.bind((f["addr"], 0))
        o["requested"] = self.now()
        try:
            s.connect((f["server"], f["sport"]))
        except OSError:
            s.close()
            return
        # Before the request leaves, the only retransmissions are of the SYN.
        o["syns"] = 1 + (tcp_info(s) or {}).get("total_retrans", 0)
        req = struct.pack("!Q", size).ljust(max(f["request"], 8), b"q")
        got = 0
        with s:
            try:
                s.sendall(req)
                s.shutdown(socket.SHUT_WR)
                while True:
                    d = s.recv(1 << 16)
                    if not d:
                        return
                    at = self.now()
                    if got == 0:
                        o["first"] = at
                    got += len(d)
                    o["received"] = min(got, size)
                    self.count(f["flow"], len(d))
                    if got >= size and o["done"] is None:
                        o["done"] = at
                        done.put((k, at))
            except OSError:
                return

    def set_cc(self, s: socket.socket) -> None:
        """The run's congestion control on this socket (accepted sockets inherit it)."""
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.cfg["cc"].encode())

    def count(self, flow: int, n: int) -> None:
        with self.lock:
            self.received[flow] += n

    def accept_loop(self, s: socket.socket) -> None:
        while True:
            c, (addr, port) = s.accept()
            flow = self.peer_flow.get(("tcp", addr, port))
            if flow is None:
                c.close()
                continue
            threading.Thread(target=self.tcp_sink, args=(c, flow), daemon=True).start()

    def tcp_sink(self, c: socket.socket, flow: int) -> None:
        arrivals = self.arrivals.get(flow)
        total = 0
        # Without per-read times to keep, the sink reads in chunks of what arrives in
        # about 1 ms at its current rate (SO_RCVLOWAT; at most 16 KB and a quarter of the
        # receive buffer, so the kernel never enlarges the buffer for it): its kernel
        # wakes it once per chunk, not once per segment. At 1 Gb/s that is one wake-up
        # per 11 segments instead of one per segment, each of which cost the datapath
        # thread an interprocessor interrupt inside its TUN write (docs/live.md, "The
        # datapath's budget"). Bytes wait at most that chunk's time before they are read.
        adapt = arrivals is None
        cap = min(LOWAT_MAX, c.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 4)
        lowat, since, got = 1, time.monotonic(), 0
        while True:
            d = c.recv(1 << 16)
            if not d:
                return
            self.count(flow, len(d))
            if arrivals is not None:
                total += len(d)
                arrivals.append([time.monotonic(), total])
            if adapt:
                got += len(d)
                now = time.monotonic()
                if now - since >= LOWAT_EVERY:
                    new = max(1, min(cap, int(got * LOWAT_SPAN / (now - since))))
                    if new != lowat:
                        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, new)
                        lowat = new
                    since, got = now, 0

    def udp_loop(self, s: socket.socket) -> None:
        while True:
            d, (addr, port) = s.recvfrom(1 << 16)
            flow = self.peer_flow.get(("udp", addr, port))
            if flow is not None:
                self.count(flow, len(d))

    def sleep_until(self, t: float) -> None:
        d = t - self.now()
        if d > 0:
            time.sleep(d)

    def tcp_sender(self, f: dict) -> None:
        self.sleep_until(f["start"])
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.set_cc(s)
        if f["dscp"]:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, f["dscp"] << 2)
        s.bind((f["src"], f["sport"]))
        s.connect((f["dst"], f["dport"]))
        self.sender_socks[f["flow"]] = s
        if f.get("telnet"):
            self.telnet_sender(s, f)
            return
        buf = b"\0" * (1 << 16)
        left = f["bytes"]
        stop = f["stop"]
        s.settimeout(0.2)
        while left is None or left > 0:
            if stop is not None and self.now() >= stop:
                break
            n = len(buf) if left is None else min(len(buf), left)
            try:
                sent = s.send(buf[:n])
            except TimeoutError:
                continue
            except OSError:
                break
            if left is not None:
                left -= sent
        if left is not None and left <= 0:
            s.shutdown(socket.SHUT_WR)

    def telnet_sender(self, s: socket.socket, f: dict) -> None:
        """P3's Telnet source on a connected socket: sessions of a uniform number of
        writes of uniform size, exponential gaps within a session and exponential idle
        times between them (the simulator's laws), each write sent at once (no Nagle)."""
        tn = f["telnet"]
        rng = random.Random(tn["seed"])
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stop = f["stop"] if f["stop"] is not None else self.cfg["duration"]
        writes = self.telnet_writes.setdefault(f["flow"], [])
        t, session, written = f["start"], 0, 0
        while tn["sessions"] is None or session < tn["sessions"]:
            left = rng.randint(tn["packets_min"], tn["packets_max"])
            while left > 0:
                if t >= stop:
                    return
                self.sleep_until(t)
                size = rng.randint(tn["size_min"], tn["size_max"])
                at = time.monotonic()
                try:
                    s.sendall(b"t" * size)
                except OSError:
                    return
                written += size
                writes.append([session, at, size, written])
                left -= 1
                mean = tn["mean_interval"] if left > 0 else tn["mean_idle"]
                t += rng.expovariate(1.0 / mean)
            session += 1

    def udp_sender(self, f: dict) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if f["dscp"]:
            s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, f["dscp"] << 2)
        s.bind((f["src"], f["sport"]))
        s.connect((f["dst"], f["dport"]))
        payload = b"\0" * max(f["size"] - 28, 1)
        gap = f["size"] * 8 / f["rate"]
        t = f["start"]
        stop = f["stop"] if f["stop"] is not None else self.cfg["duration"]
        onoff = f.get("onoff")
        periods = pareto_periods(onoff) if onoff else None
        on_until = math.inf
        if periods is not None:
            on_until = t + next(periods)
        while t < stop:
            if t >= on_until:
                # The on period is over: off for a Pareto draw, then on again.
                t = on_until + next(periods)
                on_until = t + next(periods)
                continue
            self.sleep_until(t)
            try:
                s.send(payload)
            except OSError:
                pass
            t += gap

    def ping(self, p: dict) -> None:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        s.settimeout(1.0)
        ident = os.getpid() & 0xFFFF
        rtts = []
        for seq in range(p["count"]):
            self.sleep_until(p["start"] + seq * p["interval"])
            hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
            body = b"qoslab-live-ping"
            csum = checksum(hdr + body)
            pkt = struct.pack("!BBHHH", 8, 0, csum, ident, seq) + body
            sent = time.monotonic()
            s.sendto(pkt, (p["dst"], 0))
            rtt = None
            while True:
                try:
                    d = s.recv(2048)
                except TimeoutError:
                    break
                ihl = (d[0] & 15) * 4
                typ, _, _, rid, rseq = struct.unpack_from("!BBHHH", d, ihl)
                if typ == 0 and rid == ident and rseq == seq:
                    rtt = time.monotonic() - sent
                    break
            rtts.append(rtt)
        self.pings.append({"to": p["to"], "rtts": rtts})

    def sampler(self) -> None:
        iv = self.cfg["interval"]
        warm = self.cfg["warmup"]
        k = 1
        warm_done = warm <= 0
        if warm_done:
            self.at_warmup = dict(self.received)
        while True:
            nxt = k * iv
            if not warm_done and warm <= nxt:
                self.sleep_until(warm)
                with self.lock:
                    self.at_warmup = dict(self.received)
                warm_done = True
            self.sleep_until(nxt)
            with self.lock:
                for f, n in self.received.items():
                    self.series[f].append([round(nxt, 9), n])
            for f, s in list(self.sender_socks.items()):
                i = tcp_info(s)
                if i is not None and self.traces.get(f) is not None:
                    self.traces[f].append(
                        [nxt, i["cwnd"], i["ssthresh"], i["srtt"], i["rto"], i["total_retrans"]]
                    )
            k += 1

    def start(self) -> None:
        self.t0 = time.monotonic()
        threading.Thread(target=self.sampler, daemon=True).start()
        for f in self.cfg.get("web_clients", []):
            threading.Thread(target=self.web_client, args=(f,), daemon=True).start()
        for f in self.cfg["send"]:
            if f["trace"]:
                self.traces[f["flow"]] = []
            target = self.tcp_sender if f["proto"] == "tcp" else self.udp_sender
            threading.Thread(target=target, args=(f,), daemon=True).start()
        for p in self.cfg["ping"]:
            threading.Thread(target=self.ping, args=(p,), daemon=True).start()
        for p in self.cfg.get("programs", []):
            threading.Thread(target=self.program, args=(p,), daemon=True).start()

    def program(self, p: dict) -> None:
        """Runs a user's program from its start time until it exits or its stop time
        (then SIGTERM, and SIGKILL a second later), its output into its files."""
        i = p["index"]
        with self.lock:
            self.programs[i] = {"index": i}
        self.sleep_until(p["start"])
        env = {**os.environ, **p["env"]}
        try:
            with open(p["out"], "wb") as out, open(p["err"], "wb") as err:
                proc = subprocess.Popen(
                    p["argv"],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    env=env,
                    start_new_session=True,
                )
        except OSError as e:
            with self.lock:
                self.programs[i].update({"error": str(e), "exit_code": 127})
            return
        with self.lock:
            self.procs[i] = proc
            self.programs[i].update({"pid": proc.pid, "started": self.now()})
        stop = p["stop"]
        try:
            proc.wait(timeout=None if stop is None else max(0.0, stop - self.now()))
        except subprocess.TimeoutExpired:
            self.stop_programs([i])
        self.finished(i)

    def stop_programs(self, which: list[int]) -> None:
        """SIGTERM to the running programs' process groups (all at once), SIGKILL to
        those still there a second later."""
        with self.lock:
            procs = [self.procs[i] for i in which if i in self.procs]
            procs = [p for p in procs if p.poll() is None]
            for i in which:
                if i in self.procs and self.procs[i] in procs:
                    self.programs[i]["stopped"] = True
        for sig, grace in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
            for p in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, sig)
            deadline = time.monotonic() + grace
            for p in procs:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=max(0.0, deadline - time.monotonic()))
            procs = [p for p in procs if p.poll() is None]
            if not procs:
                break

    def finished(self, i: int) -> None:
        """Records a program's exit: its status as a shell gives it (128 + the signal
        for a program killed by one) and the signal."""
        with self.lock:
            proc = self.procs.get(i)
            info = self.programs[i]
            if proc is None or proc.returncode is None or "ended" in info:
                return
            rc = proc.returncode
            info.update(
                {
                    "ended": self.now(),
                    "exit_code": 128 - rc if rc < 0 else rc,
                    "signal": -rc if rc < 0 else 0,
                }
            )

    def results(self) -> dict:
        running = list(self.procs)
        self.stop_programs(running)
        for i in running:
            self.finished(i)
        with self.lock:
            sinks = {
                str(f): {
                    "goodput_bytes": n - self.at_warmup.get(f, 0),
                    "series": self.series[f],
                }
                for f, n in self.received.items()
            }
        senders = {}
        for f, s in self.sender_socks.items():
            i = tcp_info(s) or {}
            senders[str(f)] = {**i, "cc": self.cc_of(s), "trace": self.traces.get(f, [])}
        with self.lock:
            programs = [dict(v) for _, v in sorted(self.programs.items())]
        telnet = {str(f): {"t0": self.t0, "writes": list(w)} for f, w in self.telnet_writes.items()}
        arrivals = {str(f): list(a) for f, a in self.arrivals.items()}
        web = {str(f): m.table() for f, m in self.web.items()}
        return {
            "sinks": sinks,
            "senders": senders,
            "ping": self.pings,
            "programs": programs,
            "telnet": telnet,
            "arrivals": arrivals,
            "web": web,
        }

    def cc_of(self, s: socket.socket) -> str:
        """The congestion control a socket runs."""
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()


MASK64 = (1 << 64) - 1


class Xoshiro:
    """xoshiro256++, the simulator's generator (``rng.rs``'s ``RngStream``), from a
    state the runner gives: the same state draws the same sequence, bit for bit."""

    def __init__(self, state: list) -> None:
        self.s = [int(x) for x in state]

    def next_u64(self) -> int:
        s = self.s
        r = (((s[0] + s[3]) & MASK64) << 23 | ((s[0] + s[3]) & MASK64) >> 41) & MASK64
        r = (r + s[0]) & MASK64
        t = (s[1] << 17) & MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = ((s[3] << 45) | (s[3] >> 19)) & MASK64
        return r

    def uniform(self) -> float:
        """Uniform in [0, 1) with 53 bits, as ``RngStream::uniform``."""
        return (self.next_u64() >> 11) * (1.0 / (1 << 53))

    def sample(self, d: dict) -> float:
        """One draw of a web model's random variable (``app::web::Dist::sample``)."""
        k = d["kind"]
        if k == "constant":
            return d["value"]
        if k == "exponential":
            return -d["mean"] * math.log(1.0 - self.uniform())
        if k == "pareto2":
            u = 1.0 - self.uniform()
            return d["mean"] * (d["shape"] - 1.0) * (u ** (-1.0 / d["shape"]) - 1.0)
        return d["min"] + (d["max"] - d["min"]) * self.uniform()


class WebModel:
    """The simulator's web model (``app/web/mod.rs``, ns-2's PagePool/WebTraf) in real
    time: session i + 1 starts an inter-session time after session i; a page draws its
    objects, launches the first at once and each further one an inter-object time after
    the previous launch; when all its objects are complete the session's next page starts
    an inter-page time later. Draws are made in the simulator's order from its stream."""

    def __init__(self, f: dict) -> None:
        self.f = f
        self.rng = Xoshiro(f["state"])
        self.timers: list = []
        self.seq = 0
        #: [pages, pages started] per session.
        self.sessions: list[list[int]] = []
        self.objects: list[dict] = []
        self.pages: list[dict] = []
        self.at(f["start"], ("session", 0))

    def at(self, t: float, action: tuple) -> None:
        self.seq += 1
        heapq.heappush(self.timers, (t, self.seq, action))

    def after(self, now: float, key: str) -> float:
        return now + max(self.rng.sample(self.f[key]), 0.0)

    def count(self, key: str) -> int:
        """A count or size: the ceiling of a draw, at least 1 (``app::web::count``)."""
        v = self.rng.sample(self.f[key])
        if math.isnan(v):
            return 1
        if v >= 0xFFFF_FFFF:
            return 0xFFFF_FFFF
        return max(math.ceil(v), 1)

    def next_timer(self) -> float:
        return self.timers[0][0] if self.timers else math.inf

    def on_timer(self, now: float) -> list[int]:
        """Runs every timer due by `now`, each at its own time; the objects to fetch."""
        launch: list[int] = []
        while self.timers and self.timers[0][0] <= now:
            t, _, (kind, x) = heapq.heappop(self.timers)
            if kind == "session":
                pages = self.count("pages")
                s = len(self.sessions)
                self.sessions.append([pages, 0])
                self.start_page(t, s, launch)
                if len(self.sessions) < self.f["sessions"]:
                    self.at(self.after(t, "inter_session"), ("session", 0))
            elif kind == "page":
                self.start_page(t, x, launch)
            else:
                self.launch_object(t, x, launch)
        return launch

    def start_page(self, t: float, session: int, launch: list[int]) -> None:
        self.sessions[session][1] += 1
        n = self.count("objects")
        self.pages.append(
            {
                "session": session,
                "objects": n,
                "start": t,
                "done": None,
                "launched": 0,
                "left": n,
                "first_object": len(self.objects),
            }
        )
        self.launch_object(t, len(self.pages) - 1, launch)

    def launch_object(self, t: float, page: int, launch: list[int]) -> None:
        size = self.count("object_size") * self.f["mss"]
        p = self.pages[page]
        p["launched"] += 1
        self.objects.append(
            {
                "session": p["session"],
                "page": page,
                "bytes": size,
                "requested": None,
                "first": None,
                "done": None,
                "received": 0,
                "syns": 0,
            }
        )
        launch.append(len(self.objects) - 1)
        if p["launched"] < p["objects"]:
            self.at(self.after(t, "inter_object"), ("object", page))

    def on_done(self, k: int, at: float) -> None:
        """Object `k` was complete at `at`: its page may be, and the next page due."""
        p = self.pages[self.objects[k]["page"]]
        p["left"] -= 1
        if p["left"] > 0:
            return
        p["done"] = at
        s = self.sessions[p["session"]]
        if s[1] < s[0]:
            self.at(self.after(at, "inter_page"), ("page", p["session"]))

    def table(self) -> dict:
        """Objects (session, page, bytes, requested, first, done, received, syns) and
        pages (session, objects, start, done), times [s] from the run's start, None
        for what did not happen by the end."""
        objs = [
            [
                o["session"],
                o["page"],
                o["bytes"],
                o["requested"],
                o["first"],
                o["done"],
                o["received"],
                o["syns"],
            ]
            for o in self.objects
        ]
        # A page starts when its first object was requested (its SYN), as in the
        # simulator, where that is the page's timer.
        pages = [
            [p["session"], p["objects"], self.objects[p["first_object"]]["requested"], p["done"]]
            for p in self.pages
        ]
        return {"objects": objs, "pages": pages}


def pareto_periods(onoff: dict):
    """On, off, on, … period lengths [s] of a Pareto on/off source: Pareto draws of
    the given means and shape (scale = mean·(shape − 1)/shape), as the simulator's
    ``ParetoOnOff`` draws them, from a stream seeded by the run's seed and the flow."""
    rng = random.Random(onoff["seed"])
    k = onoff["shape"]
    means = (onoff["mean_on"], onoff["mean_off"])
    i = 0
    while True:
        scale = means[i % 2] * (k - 1) / k
        yield scale / (1.0 - rng.random()) ** (1.0 / k)
        i += 1


def checksum(b: bytes) -> int:
    """The Internet checksum of `b`."""
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def main() -> None:
    """Runs one host's agent from its config file (argv[1])."""
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    a = Agent(cfg)
    a.open_listeners()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "go":
            a.start()
        elif line.strip() == "stop":
            break
    print(json.dumps(a.results()), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
