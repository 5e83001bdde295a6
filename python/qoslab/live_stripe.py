"""Application striping over w Linux TCP sockets (P4 §2, §3.2; Hsieh, Kim and Sivakumar,
IWQoS 2003, docs/bibliography.md): one application stripes a transfer over w ordinary
TCP sockets and the receiving application puts the blocks back in order, so a socket
stalled by a loss or a timeout holds the whole transfer back (head-of-line blocking).

The live counterpart of the simulator's ``stripe = { connections, block, policy,
send_buffer }`` (crates/qoslab/src/app/stripe.rs), as a program to run in live mode's
namespaces (``[[live.program]]``, docs/live.md) or anywhere else::

    python -m qoslab.live_stripe recv --port 6000 --connections 4
    python -m qoslab.live_stripe send --to b --port 6000 --connections 4 --block 8KB

The sender cuts the stream into blocks, each behind a 12-byte header (its offset in the
stream and its length), and writes each block to the socket its policy picks, as the
simulator's writer does: a socket has room for a block while the bytes written to it and
not yet acknowledged (``TIOCOUTQ``) plus the block fit in ``--send-buffer``;
``round_robin`` sends block k to socket k mod w and waits for that socket's room,
``write_until_block`` fills one socket until it has no room, then moves to the next with
room. The receiver reads every socket's next header; a block that is next in the stream
is delivered as it arrives, any other is held in the reassembly buffer — up to
``--hold`` bytes (default unlimited); beyond that only the socket carrying the next block
is read, so the others' kernel buffers fill and their windows close; ``--hold 0`` is the
simulator's receiver (and P4's, which keeps no resequencing buffer of its own), reading
only the connection holding the next block.

Each side prints ONE JSON line on stdout when it ends (all sockets closed, ``--bytes``
or ``--duration`` reached, or SIGTERM/SIGINT, as live mode stops programs at the run's
end). Stdlib only, so the file also runs as a script (``python3
python/qoslab/live_stripe.py …``) with an interpreter that has no qoslab installed.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import select
import signal
import socket
import struct
import sys
import termios
import time
import zlib

#: A block's header: its offset in the stream (u64) and its payload length (u32).
HEADER = struct.Struct("!QI")
#: A connection's first bytes: its index among the w sockets (u32).
HELLO = struct.Struct("!I")
#: The payload byte at stream offset o is PATTERN[o % 251] (251 is prime, so a block
#: delivered at the wrong offset does not match).
PATTERN = bytes(range(251))
#: Head-of-line stalls longer than this are counted apart [s].
LONG_STALL = 0.2
#: The writer policies, as the simulator names them (``stripe.policy``).
POLICIES = ("round_robin", "write_until_block")
#: The scheduler's bound on one wait [s], so a signal or the end is noticed.
MAX_WAIT = 0.05

_UNITS = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "KIB": 1024, "MIB": 1024**2}


def parse_size(text: str) -> int:
    """Bytes from ``"8KB"``, ``"64KiB"``, ``"1000"`` (SI units as the scenario files)."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 8KB, 64KiB, 1000)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def payload(offset: int, length: int) -> bytes:
    """The payload bytes of the stream from ``offset`` on (the known pattern)."""
    reps = (offset % 251 + length) // 251 + 1
    start = offset % 251
    return (PATTERN * reps)[start : start + length]


def resolve(to: str) -> str:
    """An address for ``--to``: a host name of live mode (``QOSLAB_ADDR_<host>``) or an
    address as it is."""
    return os.environ.get(f"QOSLAB_ADDR_{to}", to)


#: ``struct tcp_info``'s size up to ``tcpi_total_rto_time`` (Linux 6.7 and later), and
#: the offset of ``tcpi_total_rto`` (u16) in it.
TCP_INFO_RTO_SIZE = 248
TCP_INFO_RTO_AT = 240


def tcp_info(sock: socket.socket) -> dict:
    """The kernel's retransmissions, smoothed RTT [ms] and cwnd of ``sock``
    (``TCP_INFO``), and its retransmission timeouts (``timeouts``, ``tcpi_total_rto``)
    where the kernel has them (6.7 and later); empty where it cannot be read."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_RTO_SIZE)
    except OSError:
        return {}
    if len(raw) < 104:
        return {}
    u32 = struct.unpack_from("=24I", raw, 8)
    out = {"retransmits": u32[23], "srtt_ms": u32[15] / 1000, "cwnd": u32[18]}
    if len(raw) >= TCP_INFO_RTO_SIZE:
        out["timeouts"] = struct.unpack_from("=H", raw, TCP_INFO_RTO_AT)[0]
    return out


class Stalls:
    """Head-of-line stalls: spans during which data waited but the in-order point did
    not move."""

    def __init__(self) -> None:
        """No stall yet."""
        self.since: float | None = None
        self.longest = 0.0
        self.total = 0.0
        self.count = 0
        self.long = 0

    def waiting(self, now: float) -> None:
        """Data waits behind the in-order point at ``now`` (a stall starts if none runs)."""
        if self.since is None:
            self.since = now

    def moved(self, now: float) -> None:
        """The in-order point moved at ``now``: a running stall ends."""
        if self.since is None:
            return
        d = now - self.since
        self.since = None
        self.count += 1
        self.total += d
        self.longest = max(self.longest, d)
        self.long += d > LONG_STALL

    def report(self, now: float) -> dict:
        """The stall figures, a stall still running at ``now`` included."""
        if self.since is not None:
            self.moved(now)
        return {
            "hol_stalls": self.count,
            "hol_stall_max_s": round(self.longest, 6),
            "hol_stall_total_s": round(self.total, 6),
            "hol_stalls_over_200ms": self.long,
        }


class Reassembly:
    """The receiving application's in-order delivery of blocks from any socket: a block
    at the in-order point is delivered as its bytes arrive, any other is held until the
    blocks before it are delivered. No sockets: it is fed by :meth:`header` and
    :meth:`data`, so it runs without a network."""

    def __init__(self, connections: int, hold: int | None = None) -> None:
        """Reassembly of ``connections`` sockets' blocks, holding at most ``hold`` bytes
        out of order (``None``: unlimited; see :meth:`want`)."""
        self.hold = hold
        #: Per socket: its current block [offset, length, bytes read], or None.
        self.cur: list[list[int] | None] = [None] * connections
        self.sock_bytes = [0] * connections
        self.sock_blocks = [0] * connections
        #: Offset of the block at the in-order point.
        self.head = 0
        #: The in-order point: bytes delivered to the application.
        self.delivered = 0
        self.delivered_blocks = 0
        #: Blocks not at the in-order point: offset -> [length, bytes so far].
        self.held: dict[int, list] = {}
        self.held_bytes = 0
        self.peak_bytes = 0
        self.peak_blocks = 0
        self.crc = 0
        self.mismatched = 0
        self.stalls = Stalls()
        self.first: float | None = None
        self.last: float | None = None
        #: Sockets that closed inside a header or a block.
        self.truncated = 0

    def header(self, i: int, offset: int, length: int, now: float) -> None:
        """Socket ``i``'s next block starts at stream ``offset`` and holds ``length``
        bytes (its header arrived at ``now``)."""
        if self.cur[i] is not None:
            raise ValueError(f"socket {i}: a header inside a block")
        self.cur[i] = [offset, length, 0]
        if offset != self.head:
            self.held[offset] = [length, bytearray()]
            self.peak_blocks = max(self.peak_blocks, len(self.held))
            self.stalls.waiting(now)

    def want(self, i: int) -> int:
        """Payload bytes socket ``i`` may be read for now: the rest of its current
        block if that block is at the in-order point or nothing limits the hold, else
        what still fits in ``hold`` (0: leave the bytes in the kernel, whose window then
        closes); 0 with no current block (read its header)."""
        c = self.cur[i]
        if c is None:
            return 0
        rest = c[1] - c[2]
        if c[0] == self.head or self.hold is None:
            return rest
        return max(0, min(rest, self.hold - self.held_bytes))

    def data(self, i: int, chunk: bytes, now: float) -> None:
        """``chunk`` of socket ``i``'s current block arrived at ``now``."""
        c = self.cur[i]
        if c is None or c[2] + len(chunk) > c[1]:
            raise ValueError(f"socket {i}: {len(chunk)} bytes outside its block")
        if self.first is None:
            self.first = now
        at = c[0] + c[2]
        c[2] += len(chunk)
        self.sock_bytes[i] += len(chunk)
        if c[0] == self.head:
            self._deliver(at, chunk, now)
        else:
            self.held[c[0]][1].extend(chunk)
            self.held_bytes += len(chunk)
            self.peak_bytes = max(self.peak_bytes, self.held_bytes)
            self.stalls.waiting(now)
        if c[2] == c[1]:
            self.sock_blocks[i] += 1
            self.cur[i] = None
            if c[0] == self.head:
                self._advance(c[1], now)

    def _deliver(self, at: int, chunk: bytes, now: float) -> None:
        """Bytes at stream offset ``at`` reach the application at ``now`` (checked
        against the pattern, added to the CRC)."""
        want = payload(at, len(chunk))
        if chunk != want:
            self.mismatched += sum(a != b for a, b in zip(chunk, want, strict=True))
        self.crc = zlib.crc32(chunk, self.crc)
        self.delivered += len(chunk)
        self.last = now
        self.stalls.moved(now)

    def _advance(self, length: int, now: float) -> None:
        """The block at the in-order point (``length`` bytes) is complete: deliver the
        held blocks that follow it, a partly arrived one as far as it came."""
        self.delivered_blocks += 1
        self.head += length
        while self.head in self.held:
            size, buf = self.held.pop(self.head)
            self.held_bytes -= len(buf)
            if buf:
                self._deliver(self.head, bytes(buf), now)
            if len(buf) < size:
                return  # its socket is still reading it: the rest is delivered on arrival
            self.delivered_blocks += 1
            self.head += size
        if self.held:
            self.stalls.waiting(now)

    def report(self, now: float) -> dict:
        """The receiver's figures at ``now`` (a running stall ends there)."""
        return {
            "delivered_bytes": self.delivered,
            "delivered_blocks": self.delivered_blocks,
            "held_peak_bytes": self.peak_bytes,
            "held_peak_blocks": self.peak_blocks,
            "held_at_end_bytes": self.held_bytes,
            "truncated_sockets": self.truncated,
            "crc32": self.crc,
            "mismatched_bytes": self.mismatched,
            **self.stalls.report(now),
        }


class _Stop:
    """Set by SIGTERM/SIGINT: the main loops end and print their line."""

    flag = False

    @classmethod
    def install(cls) -> None:
        """Catches SIGTERM and SIGINT."""

        def handler(signum: int, frame: object) -> None:
            """Asks the loop to stop."""
            cls.flag = True

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)


class _Series:
    """Samples of cumulative counters every ``every`` seconds."""

    def __init__(self, every: float, t0: float) -> None:
        """An empty series sampled every ``every`` s from ``t0``."""
        self.every = every
        self.t0 = t0
        self.due = t0
        self.t: list[float] = []
        self.v: list[list[int]] = []

    def tick(self, now: float, *values: int) -> None:
        """Records ``values`` if a sample is due at ``now``."""
        if now >= self.due:
            self.sample(now, *values)
            while self.due <= now:
                self.due += self.every

    def sample(self, now: float, *values: int) -> None:
        """Records ``values`` at ``now``."""
        self.t.append(round(now - self.t0, 4))
        self.v.append(list(values))


def _recv_nb(sock: socket.socket, n: int) -> bytes | None:
    """Up to ``n`` bytes from a non-blocking socket; b"" at EOF, None if none ready."""
    try:
        return sock.recv(n)
    except (BlockingIOError, InterruptedError):
        return None


def receive(args: argparse.Namespace) -> dict:
    """The receiving application: accepts ``--connections`` sockets on ``--port``, reads
    them as :class:`Reassembly` allows, and returns its JSON report."""
    t0 = time.monotonic()
    w = args.connections
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((args.bind or os.environ.get("QOSLAB_ADDR", "0.0.0.0"), args.port))
    ls.listen(w)
    ls.setblocking(False)
    r = Reassembly(w, args.hold)
    series = _Series(args.report_every, t0)
    conns: list[dict] = []  # sock, idx (None until its hello), hbuf, eof
    by_idx: dict[int, dict] = {}
    ended = "signal"
    error = None
    while not _Stop.flag:
        now = time.monotonic()
        series.tick(now, r.delivered)
        if args.duration is not None and now - t0 >= args.duration:
            ended = "duration"
            break
        if len(conns) == w and all(c["eof"] for c in conns):
            ended = "eof"
            break
        rd = [ls] if len(conns) < w else []
        for c in conns:
            if c["eof"]:
                continue
            if c["idx"] is None or r.cur[c["idx"]] is None or r.want(c["idx"]) > 0:
                rd.append(c["sock"])
        ready, _, _ = select.select(rd, [], [], min(MAX_WAIT, args.report_every))
        now = time.monotonic()
        for s in ready:
            if s is ls:
                try:
                    cs, _ = ls.accept()
                except (BlockingIOError, InterruptedError):
                    continue
                cs.setblocking(False)
                if args.rcv_buffer:
                    cs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcv_buffer)
                conns.append({"sock": cs, "idx": None, "hbuf": b"", "eof": False})
                continue
            c = next(x for x in conns if x["sock"] is s)
            try:
                _read_one(c, r, by_idx, w, now)
            except ValueError as e:
                error = str(e)
        if error:
            ended = "error"
            break
    now = time.monotonic()
    series.sample(now, r.delivered)
    out = {"role": "recv", "connections": w, "port": args.port, "ended": ended, "error": error}
    out["hold_limit_bytes"] = args.hold
    out["connected"] = len(conns)
    out["complete"] = (
        ended == "eof" and not r.truncated and not r.held and all(c is None for c in r.cur)
    )
    out.update(r.report(now))
    span = (r.last - r.first) if r.first is not None and r.last is not None else 0.0
    out["goodput_bps"] = round(r.delivered * 8 / span, 1) if span > 0 else 0.0
    out["first_byte_s"] = None if r.first is None else round(r.first - t0, 6)
    out["last_byte_s"] = None if r.last is None else round(r.last - t0, 6)
    out["per_socket"] = [
        {"index": i, "bytes": r.sock_bytes[i], "blocks": r.sock_blocks[i]} for i in range(w)
    ]
    out["t0_monotonic"] = round(t0, 6)
    out["series"] = {"every_s": args.report_every, "t": series.t, "delivered": series.v}
    for c in conns:
        c["sock"].close()
    ls.close()
    return out


def _read_one(c: dict, r: Reassembly, by_idx: dict, w: int, now: float) -> None:
    """One read from connection ``c``: its hello, a block header, or block bytes."""
    s = c["sock"]
    if c["idx"] is None or r.cur[c["idx"]] is None:
        size = HELLO.size if c["idx"] is None else HEADER.size
        got = _recv_nb(s, size - len(c["hbuf"]))
        if got is None:
            return
        if got == b"":
            c["eof"] = True
            r.truncated += bool(c["hbuf"])  # the sender stopped inside a header
            return
        c["hbuf"] += got
        if len(c["hbuf"]) < size:
            return
        if c["idx"] is None:
            (idx,) = HELLO.unpack(c["hbuf"])
            if idx >= w or idx in by_idx:
                raise ValueError(f"connection index {idx} out of 0..{w - 1} or taken")
            c["idx"] = idx
            by_idx[idx] = c
        else:
            off, length = HEADER.unpack(c["hbuf"])
            r.header(c["idx"], off, length, now)
        c["hbuf"] = b""
        return
    n = r.want(c["idx"])
    if n <= 0:
        return
    got = _recv_nb(s, min(n, 1 << 16))
    if got is None:
        return
    if got == b"":
        c["eof"] = True
        r.truncated += 1  # the sender stopped inside a block (stopped by a signal)
        return
    r.data(c["idx"], got, now)


def _outq(sock: socket.socket) -> int:
    """Bytes written to ``sock`` and not yet acknowledged (``TIOCOUTQ``)."""
    buf = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    return struct.unpack("i", buf)[0]


def _connect(addr: str, port: int, deadline: float) -> socket.socket:
    """A connected socket to ``addr:port``, retrying while refused until ``deadline``."""
    while True:
        try:
            return socket.create_connection((addr, port), timeout=5)
        except (ConnectionRefusedError, TimeoutError, OSError):
            if time.monotonic() > deadline or _Stop.flag:
                raise
            time.sleep(0.05)


def send(args: argparse.Namespace) -> dict:
    """The sending application: opens ``--connections`` sockets, stripes the stream over
    them by ``--policy`` (see the module's docstring) and returns its JSON report."""
    t0 = time.monotonic()
    w = args.connections
    addr = resolve(args.to)
    socks = []
    for i in range(w):
        s = _connect(addr, args.port, t0 + args.connect_timeout)
        s.sendall(HELLO.pack(i))
        s.setblocking(False)
        socks.append(s)
    start = time.monotonic()
    pend: list[memoryview | None] = [None] * w
    sent = [0] * w  # bytes the kernel took, headers included
    blocks = [0] * w
    payload_bytes = [0] * w
    offset = 0
    nxt = 0
    closed = False
    series = _Series(args.report_every, t0)
    waits = Stalls()
    ended = "signal"
    error = None
    crc = 0

    def room(i: int, size: int) -> bool:
        """Socket ``i`` can take a block of ``size`` bytes (nothing pending, and the
        unacknowledged bytes plus the block fit in the send buffer)."""
        return pend[i] is None and _outq(socks[i]) + size <= args.send_buffer

    def push(i: int) -> None:
        """Hands socket ``i``'s pending bytes to the kernel as far as it takes them."""
        nonlocal error
        try:
            n = socks[i].send(pend[i])
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:  # the receiver is gone (reset, broken pipe)
            error = f"socket {i}: {e}"
            return
        sent[i] += n
        pend[i] = pend[i][n:] if n < len(pend[i]) else None

    def more() -> bool:
        """The writer has blocks left to write."""
        if args.bytes is not None and offset >= args.bytes:
            return False
        return args.duration is None or time.monotonic() - start < args.duration

    while not _Stop.flag and error is None:
        now = time.monotonic()
        if now >= series.due:
            series.tick(now, offset, sum(sent[i] - _outq(socks[i]) for i in range(w)))
        for i in range(w):
            if pend[i] is not None:
                push(i)
        wrote = False
        while more() and error is None:
            length = args.block
            if args.bytes is not None:
                length = min(length, args.bytes - offset)
            size = HEADER.size + length
            if args.policy == "round_robin":
                if not room(nxt, size):
                    break
                c = nxt
                nxt = (nxt + 1) % w
            else:
                c = next((k % w for k in range(nxt, nxt + w) if room(k % w, size)), None)
                if c is None:
                    break
                nxt = c
            data = payload(offset, length)
            crc = zlib.crc32(data, crc)
            pend[c] = memoryview(HEADER.pack(offset, length) + data)
            push(c)
            blocks[c] += 1
            payload_bytes[c] += length
            offset += length
            wrote = True
        now = time.monotonic()
        if wrote:
            waits.moved(now)
        if more():
            if not wrote:
                waits.waiting(now)
        elif all(p is None for p in pend):
            if not closed:
                for s in socks:
                    try:
                        s.shutdown(socket.SHUT_WR)
                    except OSError as e:
                        error = f"shutdown: {e}"
                closed = True
            if all(_outq(s) == 0 for s in socks):
                ended = "done"
                break
        busy = [socks[i] for i in range(w) if pend[i] is not None]
        if busy:
            select.select([], busy, [], args.poll)
        else:
            time.sleep(args.poll)
    now = time.monotonic()
    acked = sum(sent[i] - _outq(socks[i]) for i in range(w))
    series.sample(now, offset, acked)
    info = [tcp_info(s) for s in socks]
    out = {"role": "send", "connections": w, "policy": args.policy, "block": args.block}
    out.update({"send_buffer": args.send_buffer, "to": addr, "port": args.port})
    ended = "error" if error else ended
    out.update({"ended": ended, "error": error, "written_bytes": offset})
    out["acked_socket_bytes"] = acked
    out["crc32"] = crc
    span = now - start
    out["written_bps"] = round(offset * 8 / span, 1) if span > 0 else 0.0
    rep = waits.report(now)
    out.update({k.replace("hol_stall", "writer_wait"): v for k, v in rep.items()})
    out["per_socket"] = [
        {"index": i, "bytes": payload_bytes[i], "blocks": blocks[i], **info[i]} for i in range(w)
    ]
    out["t0_monotonic"] = round(t0, 6)
    out["series"] = {"every_s": args.report_every, "t": series.t, "written_acked": series.v}
    for s in socks:
        s.close()
    return out


def in_order_bps(report: dict, after: float = 0.0) -> float:
    """The receiver's in-order goodput [b/s] from its ``series``, over the samples at
    ``after`` seconds of its run and later (a warm-up left out); NaN with fewer than two."""
    t = report["series"]["t"]
    v = [x[0] for x in report["series"]["delivered"]]
    i = next((k for k, x in enumerate(t) if x >= after), len(t))
    if len(t) - i < 2 or t[-1] <= t[i]:
        return float("nan")
    return (v[-1] - v[i]) * 8 / (t[-1] - t[i])


def parser() -> argparse.ArgumentParser:
    """The command line: ``recv`` and ``send``."""
    p = argparse.ArgumentParser(
        prog="python -m qoslab.live_stripe", description=__doc__.split("\n\n")[0]
    )
    sub = p.add_subparsers(dest="role", required=True)
    for name in ("recv", "send"):
        q = sub.add_parser(name)
        q.add_argument("--port", type=int, required=True)
        q.add_argument("--connections", type=int, required=True, help="w sockets (1-255)")
        q.add_argument(
            "--block",
            type=parse_size,
            default=parse_size("8KB"),
            help="block size (default 8KB; the receiver reads each block's from its header)",
        )
        q.add_argument("--report-every", type=float, default=0.1, help="series step [s]")
        q.add_argument("--duration", type=float, default=None, help="stop after [s]")
        if name == "recv":
            q.add_argument("--bind", default=None, help="default $QOSLAB_ADDR or 0.0.0.0")
            q.add_argument(
                "--hold",
                type=parse_size,
                default=None,
                help="out-of-order bytes held at most (default unlimited)",
            )
            q.add_argument(
                "--rcv-buffer",
                type=parse_size,
                default=None,
                help="SO_RCVBUF per socket (default: the kernel's autotuning)",
            )
        else:
            q.add_argument("--to", required=True, help="address, or a live host's name")
            q.add_argument("--policy", choices=POLICIES, default="round_robin")
            q.add_argument("--bytes", type=parse_size, default=None, help="transfer size")
            q.add_argument(
                "--send-buffer",
                type=parse_size,
                default=parse_size("64KB"),
                help="unacknowledged bytes per socket at most (default 64KB)",
            )
            q.add_argument(
                "--poll", type=float, default=0.001, help="wait between checks for room [s]"
            )
            q.add_argument("--connect-timeout", type=float, default=10.0)
    return p


def main(argv: list[str] | None = None) -> int:
    """Runs one side and prints its JSON line; 0 on success, 1 on a broken stream."""
    args = parser().parse_args(argv)
    if not 1 <= args.connections <= 255:
        raise SystemExit("--connections: expected 1 to 255")
    if args.role == "send" and args.send_buffer < args.block + HEADER.size:
        raise SystemExit("--send-buffer: must hold one block and its header")
    _Stop.install()
    out = receive(args) if args.role == "recv" else send(args)
    print(json.dumps(out, separators=(",", ":")), flush=True)
    return 1 if out.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())
