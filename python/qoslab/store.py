"""Results on disk: one folder per run, written so that nothing is lost or half-written.

A run folder holds one Parquet file per table (``flows.parquet``, ``series.parquet``,
…), ``scenario.json`` (the resolved scenario the engine ran), ``summary.json`` (engine
summary plus scenario hash, seed, versions, engine build, wall time, events), ``pcap/``
for ``[[capture]]`` files, and ``manifest.json``: each file's size and SHA-256, written
last. A folder with a ``manifest.json`` is a finished run; :func:`verify_run` checks the
files against it.

qoslab keeps everything of its own that is not a result in the folder ``.qoslab/`` of
each output folder: a note of what the folder is (``owner.json``), a sweep's lock and the
staging folders where a run is written before it is moved into place. It writes only into
a folder that is missing, empty, or holds an earlier qoslab output of the same kind, and
deletes only files it wrote (those listed in its manifest) and its own staging folders.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import shutil
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from qoslab.exceptions import OutputError, ResultsError, scenario_error

__all__ = [
    "TABLES",
    "Result",
    "is_complete",
    "load",
    "output_kind",
    "prepare_file",
    "prepare_output",
    "remove_run",
    "safe_name",
    "save_run",
    "verify_run",
    "write_run",
]

#: The tables a run produces, in the engine's words (see ``stats/table.rs``).
TABLES = ("flows", "series", "drops", "queues", "queue_samples", "traces")
#: The folder qoslab owns inside every output folder.
OWN = ".qoslab"
MANIFEST = "manifest.json"
#: Longest name accepted for a results folder (file systems allow 255 bytes).
MAX_NAME = 100


_NAME_CHARS = "-_.+=,@"


def safe_name(name: str, *, file: str | None = None, key: str = "name") -> str:
    """``name`` if it is safe as one folder name (the default results folder is
    ``results/<name>``); else a :class:`~qoslab.ScenarioError` naming ``key``."""
    why = None
    if not isinstance(name, str) or not name:
        why = "is empty"
    elif not all(c.isalnum() or c in _NAME_CHARS for c in name):
        bad = next(c for c in name if not (c.isalnum() or c in _NAME_CHARS))
        why = f"contains {bad!r}"
    elif name.startswith("."):
        why = "starts with a dot"
    elif len(name) > MAX_NAME:
        why = f"is {len(name)} characters long (at most {MAX_NAME})"
    if why is None:
        return name
    raise scenario_error(
        file,
        key,
        f"{name!r} {why}; a name is used as a folder name (results/<name>), so it must be "
        f"one folder name made of letters, digits and {' '.join(_NAME_CHARS)}, not starting "
        f"with a dot, at most {MAX_NAME} characters",
    )


def os_error(path: Path | str, e: OSError) -> OutputError:
    """An :class:`OutputError` saying in plain words why ``path`` could not be written."""
    where = e.filename or path
    hint = {
        errno.EACCES: "check its permissions or choose another folder with -o",
        errno.EPERM: "check its permissions or choose another folder with -o",
        errno.EROFS: "the file system is read-only; choose another folder with -o",
        errno.ENAMETOOLONG: "choose a shorter name",
        errno.ENOSPC: "the disk is full",
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.EEXIST: "something is already there",
    }.get(e.errno or 0, "")
    return OutputError(f"cannot write {where}: {e.strerror or e}" + (f"; {hint}" if hint else ""))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def output_kind(d: str | Path) -> str | None:
    """``"run"`` or ``"sweep"`` if the folder ``d`` holds a qoslab output of that kind
    (finished or not), else ``None``."""
    d = Path(d)
    owner = _read_json(d / OWN / "owner.json")
    if isinstance(owner, dict) and owner.get("kind") in ("run", "sweep"):
        return owner["kind"]
    # Folders written by versions of qoslab that kept no .qoslab/ folder.
    s = _read_json(d / "summary.json")
    if isinstance(s, dict) and "qoslab_version" in s and isinstance(s.get("tables"), list):
        return "run"
    s = _read_json(d / "sweep.json")
    if isinstance(s, dict) and isinstance(s.get("runs"), list) and "spec" in s:
        return "sweep"
    return None


def prepare_output(dest: str | Path, kind: str) -> Path:
    """Checks that the folder ``dest`` may receive a qoslab ``kind`` (``"run"`` or
    ``"sweep"``) and creates it with its ``.qoslab/`` folder.

    Allowed: a missing or empty folder, or one holding an earlier qoslab output of the
    same kind. Anything else raises :class:`~qoslab.OutputError` saying why: qoslab never
    replaces a file or a folder it did not write.
    """
    dest = Path(dest)
    try:
        if dest.exists() or dest.is_symlink():
            if not dest.is_dir():
                raise OutputError(
                    f"{dest} is a file, not a folder; qoslab never replaces a file: "
                    "choose a folder (-o DIR)"
                )
            entries = sorted(p.name for p in dest.iterdir())
            found = output_kind(dest) if entries else kind
            if found is None:
                shown = ", ".join(entries[:3]) + (", …" if len(entries) > 3 else "")
                raise OutputError(
                    f"{dest} is not empty ({shown}) and does not hold a qoslab {kind}; qoslab "
                    f"writes only into a missing or empty folder or over an earlier qoslab "
                    f"{kind}, so that it never deletes your files: choose another folder "
                    "(-o DIR) or empty this one yourself"
                )
            if found != kind:
                raise OutputError(
                    f"{dest} holds a qoslab {found}, not a {kind}; choose another folder (-o DIR)"
                )
        own = dest / OWN
        own.mkdir(parents=True, exist_ok=True)
        owner = own / "owner.json"
        if not owner.is_file():
            info = {"kind": kind, "created": time.time(), "note": "written by qoslab"}
            atomic_write_text(owner, json.dumps(info, indent=2), own)
    except OSError as e:
        raise os_error(dest, e) from None
    return dest


#: The first bytes of each kind of file qoslab writes on its own (``qoslab draw``,
#: ``qoslab plot``, ``qoslab report -o``), by suffix.
FILE_MAGIC = {
    "svg": (b"<?xml", b"<svg"),
    "png": (b"\x89PNG",),
    "pdf": (b"%PDF",),
    "html": (b"<!doctype html",),
}


def prepare_file(dest: str | Path, kinds: tuple[str, ...]) -> str:
    """The kind (of ``kinds``, by ``dest``'s suffix) of the single file qoslab is about
    to write at ``dest``, after checking that it may: ``dest`` is missing, or is a file
    qoslab wrote (that kind's first bytes and "qoslab" in it). Anything else raises
    :class:`~qoslab.OutputError` naming the file: qoslab never replaces a file it did
    not write (a scenario, a results table, a user's figure)."""
    dest = Path(dest)
    kind = dest.suffix.lstrip(".").lower()
    if kind not in kinds:
        raise OutputError(
            f"{dest}: the file name must end in {', '.join('.' + k for k in kinds)} (the "
            "format is the suffix's)"
        )
    if not (dest.exists() or dest.is_symlink()):
        return kind
    if not dest.is_file():
        raise OutputError(f"{dest} is a folder; name a file (-o FILE.{kind})")
    try:
        data = dest.read_bytes()
    except OSError as e:
        raise os_error(dest, e) from None
    head = data[:64].lstrip().lower()
    if not any(head.startswith(m.lower()) for m in FILE_MAGIC[kind]) or b"qoslab" not in data:
        raise OutputError(
            f"{dest} exists and was not written by qoslab; qoslab never replaces a file it "
            "did not write: choose another name (-o FILE) or remove it yourself"
        )
    return kind


def undo_prepare(dest: str | Path, *, remove_dest: bool) -> None:
    """Removes what :func:`prepare_output` made in a folder that was missing or empty,
    after a run that failed before writing anything: ``.qoslab/`` and, with
    ``remove_dest`` (qoslab created it), ``dest`` itself if it is still empty."""
    dest = Path(dest)
    own = dest / OWN
    with contextlib.suppress(OSError):
        (own / "owner.json").unlink(missing_ok=True)
        for d in (own / "stage", own, *([dest] if remove_dest else [])):
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()


def atomic_write_text(path: Path, text: str, tmp_dir: Path) -> None:
    """Writes ``path`` through a temporary file in ``tmp_dir`` (a folder qoslab owns, on
    the same file system) so that readers never see half of it."""
    tmp = Path(tmp_dir) / f"{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


#: The file in a staging folder that names the process writing it.
STAGE_OWNER = ".owner.json"


def proc_start(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, Linux), to tell a reused
    pid from the process that wrote a lock or a staging folder; ``None`` where /proc is
    not available."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def pid_alive(pid: int, started: Any = None) -> bool:
    """Whether process ``pid`` of this host runs (and, given ``started`` from
    :func:`proc_start`, is the same process, not a later one with its pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = proc_start(pid)
    return not (isinstance(started, int) and now is not None and now != started)


def new_stage(own: Path, label: str) -> Path:
    """A fresh staging folder under ``own/stage/`` (``own`` is an output's ``.qoslab``).

    It names its process (pid, host, start time) in ``.owner.json``; the staging folders
    of processes of this host that no longer run (killed with SIGKILL, or a machine that
    lost power) are removed here first, so their pcap files do not pile up."""
    root = Path(own) / "stage"
    clean_stale_stages(root)
    stage = root / f"{label}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    stage.mkdir(parents=True)
    me = {"pid": os.getpid(), "host": socket.gethostname(), "proc_start": proc_start(os.getpid())}
    (stage / STAGE_OWNER).write_text(json.dumps(me))
    return stage


def clean_stale_stages(root: Path) -> list[Path]:
    """Removes the staging folders under ``root`` whose owner (``.owner.json``) is a
    process of this host that no longer runs; returns them. Folders of other hosts (a
    shared file system) and of running processes are left alone."""
    removed = []
    try:
        entries = list(Path(root).iterdir())
    except OSError:
        return removed
    host = socket.gethostname()
    for p in entries:
        try:
            info = json.loads((p / STAGE_OWNER).read_text())
        except (OSError, ValueError):
            continue
        if (
            isinstance(info, dict)
            and info.get("host") == host
            and isinstance(info.get("pid"), int)
            and not pid_alive(info["pid"], info.get("proc_start"))
        ):
            remove_stage(p)
            removed.append(p)
    return removed


def remove_stage(stage: Path) -> None:
    """Removes a staging folder; refuses anything that is not one (a guard: qoslab
    deletes only what it created)."""
    stage = Path(stage)
    if stage.parent.name != "stage" or stage.parent.parent.name != OWN:
        raise AssertionError(f"{stage} is not a qoslab staging folder")
    shutil.rmtree(stage, ignore_errors=True)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _safe_rel(rel: str) -> bool:
    p = Path(rel)
    return (
        bool(rel)
        and not p.is_absolute()
        and ".." not in p.parts
        and p.parts[0] != OWN
        and rel == p.as_posix()
    )


def goodput_by_class(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Goodput summed per DiffServ class from a run's ``flows`` and ``flow_classes``
    tables: columns ``class``, ``flows`` (how many), ``goodput_bps``, in class order."""
    fc = tables.get("flow_classes")
    flows = tables.get("flows")
    if fc is None or flows is None or fc.is_empty():
        return pl.DataFrame()
    return (
        flows.select("flow", "goodput_bps")
        .join(fc.select("flow", "class"), on="flow")
        .group_by("class")
        .agg(pl.len().alias("flows"), pl.col("goodput_bps").sum())
        .sort("class")
    )


def flows_by_group(flows: pl.DataFrame | None) -> pl.DataFrame:
    """A ``flows`` table summed per ``group`` (see :meth:`Result.by_group`)."""
    if flows is None or "group" not in flows.columns or flows.is_empty():
        return pl.DataFrame()
    total = flows["goodput_bps"].sum() if "goodput_bps" in flows.columns else 0
    aggs = [pl.len().alias("flows")]
    for c in ("goodput_bps", "goodput_bytes", "drops", "retransmits"):
        if c in flows.columns:
            aggs.append(pl.col(c).sum())
    if "mean_delay_s" in flows.columns:
        aggs.append(pl.col("mean_delay_s").mean())
    g = flows.filter(pl.col("group") != "").group_by("group", maintain_order=True).agg(aggs)
    if "goodput_bps" in g.columns:
        g = g.with_columns((pl.col("goodput_bps") / (total or float("nan"))).alias("share"))
    return g


#: The delay quantiles per flow group (``delay_p50`` …), as in the ``delays`` table.
GROUP_DELAY_QUANTILES = {"delay_p50": 0.5, "delay_p95": 0.95, "delay_p99": 0.99}


def group_delays(tables: Mapping[str, pl.DataFrame], by: Sequence[str] = ()) -> pl.DataFrame:
    """Per flow group (and per value of the columns ``by``, e.g. ``run``): the one-way
    delay of the group's data packets after the warm-up (``record.delays = true``):
    ``delay_packets``, ``delay_mean``, ``delay_p50``, ``delay_p95``, ``delay_p99`` and
    ``delay_max`` [s]. The percentiles are those of all the group's packets together:
    its flows' ``delay_histogram`` buckets summed, read by the rule of the per-flow
    ``delays`` table (the upper edge of the 1 %-wide bucket where the running count
    reaches ⌈q·n⌉, capped at the largest delay: at most 1 % above the exact value).
    Empty without groups or without recorded delays."""
    hist, delays, flows = (tables.get(t) for t in ("delay_histogram", "delays", "flows"))
    if hist is None or delays is None or flows is None or hist.is_empty():
        return pl.DataFrame()
    if "group" not in flows.columns:
        return pl.DataFrame()
    by = list(by)
    gmap = flows.select([*by, "name", "group"]).filter(pl.col("group") != "")
    h = (
        hist.join(gmap, on=[*by, "name"])
        .group_by([*by, "group", "bucket"])
        .agg(pl.col("upper").first(), pl.col("packets").sum())
    )
    d = (
        delays.join(gmap, on=[*by, "name"])
        .filter(pl.col("packets") > 0)
        .group_by([*by, "group"], maintain_order=True)
        .agg(
            pl.col("packets").sum().alias("delay_packets"),
            ((pl.col("mean") * pl.col("packets")).sum() / pl.col("packets").sum()).alias(
                "delay_mean"
            ),
            pl.col("max").max().alias("delay_max"),
        )
    )
    h = h.sort([*by, "group", "bucket"]).with_columns(
        pl.col("packets").cum_sum().over([*by, "group"]).alias("_seen")
    )
    h = h.join(d.select([*by, "group", "delay_packets", "delay_max"]), on=[*by, "group"])
    qs = []
    for col, q in GROUP_DELAY_QUANTILES.items():
        rank = (pl.col("delay_packets").cast(pl.Float64) * q).ceil().clip(lower_bound=1)
        qs.append(
            h.filter(pl.col("_seen") >= rank)
            .group_by([*by, "group"])
            .agg(pl.min_horizontal(pl.col("upper").first(), pl.col("delay_max").first()).alias(col))
        )
    out = d
    for q in qs:
        out = out.join(q, on=[*by, "group"], how="left")
    return out.select([*by, "group", "delay_packets", "delay_mean", *GROUP_DELAY_QUANTILES,
                       "delay_max"])  # fmt: skip


class Result:
    """What a run produced: ``summary`` (dict), ``tables`` (polars DataFrames) and the
    resolved ``scenario`` it ran. ``to_arrow(name)`` gives a pyarrow table,
    ``r.flows.to_pandas()`` a pandas one; in a notebook a Result shows itself as HTML.

    Args:
      summary: engine summary plus scenario hash, seed, versions and wall time.
      tables: table name → polars DataFrame (``flows``, ``series``, ``drops``, …).
      scenario: the resolved scenario (dict) the engine ran, if known.
      path: the run folder it was loaded from or saved to, if any.
    """

    def __init__(
        self,
        summary: dict[str, Any],
        tables: dict[str, pl.DataFrame],
        scenario: dict[str, Any] | None = None,
        path: Path | None = None,
    ) -> None:
        self.summary = summary
        self.tables = tables
        self.scenario = scenario
        self.path = path
        #: A live run's simulated twin (``qoslab.api.live(..., twin=True)``), else None.
        self.twin: Result | None = None
        #: Folder holding the run's ``[[capture]]`` pcap files, if any (a temporary
        #: folder removed with this object, or ``pcap/`` of a saved run).
        self.pcap_dir: Path | None = None
        #: pcap files as bytes by name (how they travel back from a Ray worker).
        self.pcap_files: dict[str, bytes] | None = None
        #: Removes a temporary ``pcap_dir`` now (otherwise done when the result is freed).
        self.pcap_cleanup: Callable[[], Any] | None = None

    @classmethod
    def from_engine(cls, raw: Mapping[str, Any], scenario: dict[str, Any] | None) -> Result:
        """From the dict ``qoslab._core.run`` returns."""
        tables = {
            name: pl.DataFrame(
                [_column(n, c) for n, c in zip(t["names"], t["columns"], strict=True)]
            )
            for name, t in raw["tables"].items()
        }
        return cls(dict(raw["summary"]), tables, scenario)

    def add_groups(self, groups: Mapping[str, str]) -> None:
        """Adds a ``group`` column (flow name → group; ``""`` for a flow in none) to
        every table that names flows (``flows``, ``series``, ``colours``, …), after its
        ``name`` column, or after its ``flow`` column (an index or a name)."""
        names = {}
        flows = self.tables.get("flows")
        if flows is not None and {"flow", "name"} <= set(flows.columns):
            names = dict(zip(flows["flow"].to_list(), flows["name"].to_list(), strict=True))
        by_index = {i: groups.get(n, "") for i, n in names.items()}
        for t, df in self.tables.items():
            if "group" in df.columns:
                continue
            if "name" in df.columns and df["name"].dtype == pl.String:
                after, mapping = "name", dict(groups)
            elif "flow" in df.columns and df["flow"].dtype == pl.String:
                after, mapping = "flow", dict(groups)
            elif "flow" in df.columns and df["flow"].dtype.is_integer() and by_index:
                after, mapping = "flow", by_index
            else:
                continue
            col = (
                pl.col(after)
                .replace_strict(mapping, default="", return_dtype=pl.String)
                .alias("group")
            )
            cols = list(df.columns)
            cols.insert(cols.index(after) + 1, "group")
            self.tables[t] = df.with_columns(col).select(cols)

    def add_extra_delays(self, extra: Mapping[str, float]) -> None:
        """Adds an ``extra_delay`` column [s] to ``flows`` (flow name → the delay its
        sender added to its data, ``extra_delay`` on the ``[[flow]]``; 0 for others)."""
        flows = self.tables.get("flows")
        if flows is None or "name" not in flows.columns or "extra_delay" in flows.columns:
            return
        col = (
            pl.col("name")
            .replace_strict(dict(extra), default=0.0, return_dtype=pl.Float64)
            .alias("extra_delay")
        )
        cols = list(flows.columns)
        cols.insert(cols.index("group") + 1 if "group" in cols else cols.index("name") + 1,
                    "extra_delay")  # fmt: skip
        self.tables["flows"] = flows.with_columns(col).select(cols)

    def by_group(self) -> pl.DataFrame:
        """Per flow group (``count``/``group`` flows): ``flows``, goodput summed
        [bit/s], its share of all goodput, drops and retransmissions summed, and the
        mean of the flows' mean delay where the run has one; with ``record.delays``
        the one-way delay of the group's data packets together (``delay_packets``,
        ``delay_mean``, ``delay_p50``/``p95``/``p99``, ``delay_max`` [s], see
        :func:`group_delays`); empty without groups."""
        g = flows_by_group(self.tables.get("flows"))
        d = group_delays(self.tables)
        if g.is_empty() or d.is_empty():
            return g
        return g.join(d, on="group", how="left", maintain_order="left")

    def table(self, name: str) -> pl.DataFrame:
        """The table called ``name``; an empty frame if this run did not produce it."""
        return self.tables.get(name, pl.DataFrame())

    flows = property(lambda self: self.table("flows"), doc="One row per flow.")
    series = property(lambda self: self.table("series"), doc="Goodput per flow and interval.")
    drops = property(lambda self: self.table("drops"), doc="Drops by place and cause.")
    queues = property(lambda self: self.table("queues"), doc="Per-interface queue totals.")
    queue_samples = property(lambda self: self.table("queue_samples"), doc="Queue occupancy.")
    traces = property(lambda self: self.table("traces"), doc="cwnd, ssthresh, srtt, … traces.")
    colours = property(
        lambda self: self.table("colours"),
        doc="Packets and bytes each meter coloured green, yellow, red, per flow.",
    )
    colour_drops = property(
        lambda self: self.table("colour_drops"),
        doc="Queue drops by colour at RIO-C/D, WRED, ERED and per-class queues.",
    )
    queue_colour_samples = property(
        lambda self: self.table("queue_colour_samples"),
        doc="Per-colour averages of sampled RIO-C, RIO-D and WRED queues.",
    )
    flow_classes = property(
        lambda self: self.table("flow_classes"),
        doc="DiffServ class of each flow's delivered data (runs with DSCPs other than 0).",
    )
    drop_events = property(
        lambda self: self.table("drop_events"),
        doc="One row per packet dropped or CE-marked (runs with record.drop_events).",
    )

    def goodput_by_class(self) -> pl.DataFrame:
        """Goodput summed per DiffServ class (``class``, ``flows``, ``goodput_bps``):
        each flow counts in the class of the DSCPs its data arrived with (table
        ``flow_classes``); empty when the run has no such table."""
        return goodput_by_class(self.tables)

    def to_arrow(self, name: str):
        """The table ``name`` as a ``pyarrow.Table``."""
        return self.table(name).to_arrow()

    def save(self, dest: str | Path, **extra: Any) -> Path:
        """Writes this result into the folder ``dest`` and returns it.

        ``dest`` must be missing, empty, or hold an earlier qoslab run (which is
        replaced; only the files that run wrote are removed); anything else raises
        :class:`~qoslab.OutputError`. ``extra`` entries go into ``summary.json``.
        """
        return save_run(Path(dest), self, extra=extra)

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}={v.height}" for k, v in self.tables.items())
        name, seed = self.summary.get("name", ""), self.summary.get("seed")
        return f"<qoslab.Result {name!r} seed={seed} {shapes}>"

    def _repr_html_(self) -> str:
        """A summary and the flows table as HTML, for notebooks."""
        from qoslab.pages import result_html

        return result_html(self)


# numpy's int64/float64 arrays become polars' Int64/Float64 as they are; passing the
# dtype as well makes polars check and cast every column (twice the time per run).
_DTYPES = {"i64": np.int64, "f64": np.float64}


def _column(name: str, col: Any) -> pl.Series:
    """One engine column: ``(dtype, raw bytes)`` for numbers, ``("str", distinct values,
    u32 codes as bytes)`` for strings (see ``crates/qoslab-py/src/convert.rs``)."""
    if col[0] == "str":
        codes = pl.Series(np.frombuffer(col[2], dtype=np.uint32))
        return pl.Series(name, col[1], dtype=pl.String).gather(codes)
    return pl.Series(name, np.frombuffer(col[1], dtype=_DTYPES[col[0]]))


def _write_files(stage: Path, result: Result, extra: Mapping[str, Any] | None) -> dict:
    """Writes ``result`` into ``stage``, ``manifest.json`` last; returns the manifest."""
    # Each file is made in memory, hashed there and written once: the manifest needs no
    # second read of the run's files.
    written: dict[str, dict[str, Any]] = {}

    def put(rel: str, data: bytes) -> None:
        (stage / rel).write_bytes(data)
        written[rel] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}

    names = []
    for name, df in result.tables.items():
        buf = io.BytesIO()
        df.write_parquet(buf)
        put(f"{name}.parquet", buf.getvalue())
        names.append(name)
    summary = dict(result.summary)
    summary.update(extra or {})
    summary["tables"] = names
    summary.setdefault("written_at", time.time())
    if result.scenario is not None:
        put("scenario.json", json.dumps(result.scenario, indent=2, default=str).encode())
    pcap = stage / "pcap"
    src = result.pcap_dir
    if src is not None and Path(src).is_dir() and Path(src).resolve() != pcap.resolve():
        for f in sorted(Path(src).rglob("*")):
            if f.is_file():
                target = pcap / f.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)
    for rel, data in (result.pcap_files or {}).items():
        if not _safe_rel(rel):
            raise ResultsError(f"capture file name {rel!r} is not a relative path")
        target = pcap / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    put("summary.json", json.dumps(summary, indent=2, default=str).encode())
    files = dict(written)
    if pcap.is_dir():
        for f in pcap.rglob("*"):
            if f.is_file():
                files[f.relative_to(stage).as_posix()] = {
                    "size": f.stat().st_size,
                    "sha256": _sha256(f),
                }
    files = dict(sorted(files.items()))
    manifest = {
        "kind": "run",
        "engine_build": summary.get("engine_build"),
        "written_at": summary["written_at"],
        "files": files,
    }
    # The manifest last: its presence is what "finished" means.
    (stage / MANIFEST).write_text(json.dumps(manifest, indent=2))
    return manifest


def write_run(
    dest: Path, result: Result, stage: Path, *, extra: Mapping[str, Any] | None = None
) -> Path:
    """Writes ``result`` into the staging folder ``stage`` and renames it to ``dest``, a
    run folder inside an output qoslab owns (a sweep's ``runs/<key>``); an earlier run
    there (damaged or stale) is replaced. ``stage`` is gone afterwards in every case."""
    dest = Path(dest)
    try:
        _write_files(stage, result, extra)
        (stage / STAGE_OWNER).unlink(missing_ok=True)  # the folder becomes the run
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            old = stage.parent / f"{stage.name}-replaced"
            os.rename(dest, old)
            os.rename(stage, dest)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(stage, dest)
    except OSError as e:
        raise os_error(dest, e) from None
    finally:
        if stage.exists():
            remove_stage(stage)
    return dest


def _owned_files(d: Path) -> set[str]:
    """The files of the run in ``d`` that qoslab wrote (from its manifest, or for a run
    written before manifests, from its summary)."""
    m = _read_json(d / MANIFEST)
    if isinstance(m, dict) and isinstance(m.get("files"), dict):
        return {f for f in m["files"] if _safe_rel(f)} | {MANIFEST}
    s = _read_json(d / "summary.json")
    if isinstance(s, dict) and isinstance(s.get("tables"), list) and "qoslab_version" in s:
        files = {f"{t}.parquet" for t in s["tables"] if isinstance(t, str) and "/" not in t}
        files |= {"summary.json", "scenario.json"}
        if (d / "pcap").is_dir():
            files |= {f.relative_to(d).as_posix() for f in (d / "pcap").rglob("*") if f.is_file()}
        return {f for f in files if _safe_rel(f)}
    return set()


def remove_run(d: Path) -> bool:
    """Removes the run in the folder ``d``: only the files qoslab wrote there (its
    manifest lists them), then the folders they leave empty; anything else stays.
    True if ``d`` is gone."""
    d = Path(d)
    owned = sorted(_owned_files(d), key=lambda r: r != MANIFEST)  # the manifest first
    parents: set[Path] = set()
    for rel in owned:
        (d / rel).unlink(missing_ok=True)
        parents.update(p for p in (d / rel).parents if p != d and d in p.parents)
    if not owned:
        return False
    for sub in [*sorted(parents, key=lambda p: -len(p.parts)), d]:
        with contextlib.suppress(OSError):
            sub.rmdir()  # only if empty
    return not d.exists()


def save_run(
    dest: Path, result: Result, *, extra: Mapping[str, Any] | None = None, stage: Path | None = None
) -> Path:
    """Writes ``result`` into the folder ``dest`` (see :meth:`Result.save`); ``stage`` is
    a staging folder made by :func:`new_stage` under ``dest/.qoslab`` that may already
    hold ``pcap/``. An earlier run in ``dest`` is replaced file by file: its files are
    removed only if its manifest lists them."""
    dest = Path(dest)
    if stage is None:
        prepare_output(dest, "run")
    try:
        if stage is None:
            stage = new_stage(dest / OWN, "run")
        manifest = _write_files(stage, result, extra)
        old = _owned_files(dest)
        (dest / MANIFEST).unlink(missing_ok=True)  # from here on, not a finished run
        for rel in sorted(old - set(manifest["files"]) - {MANIFEST}):
            (dest / rel).unlink(missing_ok=True)
            parent = (dest / rel).parent
            while parent != dest and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        for rel in manifest["files"]:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / rel, target)
        os.replace(stage / MANIFEST, dest / MANIFEST)
    except OSError as e:
        raise os_error(dest, e) from None
    finally:
        if stage is not None and stage.exists():
            remove_stage(stage)
    return dest


def is_complete(path: Path) -> bool:
    """True if ``path`` is a finished run folder (it has its manifest)."""
    return (Path(path) / MANIFEST).is_file()


def verify_run(path: Path) -> str | None:
    """``None`` if every file of the run in ``path`` has the size and hash its manifest
    lists; else what is wrong, in a few words (``"flows.parquet missing"``)."""
    d = Path(path)
    m = _read_json(d / MANIFEST)
    if m is None:
        return "manifest.json missing" if not (d / MANIFEST).exists() else "manifest.json corrupt"
    if not isinstance(m, dict) or not isinstance(m.get("files"), dict):
        return "manifest.json corrupt"
    for rel, info in m["files"].items():
        if not _safe_rel(rel) or not isinstance(info, dict):
            return "manifest.json corrupt"
        f = d / rel
        try:
            size = f.stat().st_size
        except OSError:
            return f"{rel} missing"
        if size != info.get("size"):
            return f"{rel} has {size} bytes, not {info.get('size')}"
        if _sha256(f) != info.get("sha256"):
            return f"{rel} changed since it was written"
    return None


def load(results_dir: str | Path) -> Result:
    """Reads a run directory back as a :class:`Result`.

    Args:
      results_dir: a run's folder as ``Result.save`` or ``qoslab run -o`` wrote it
        (``summary.json``, ``scenario.json`` and one Parquet file per table).

    Raises:
      ResultsError: a missing or corrupt file; the message names it.
    """
    d = Path(results_dir)
    sfile = d / "summary.json"
    if not sfile.is_file():
        raise ResultsError(f"{sfile}: not found; {d} is not a finished qoslab run directory")
    try:
        summary = json.loads(sfile.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ResultsError(f"{sfile}: corrupt (not valid JSON: {e})") from None
    if not isinstance(summary, dict):
        raise ResultsError(f"{sfile}: corrupt (expected a JSON object)")
    tables = {}
    for name in summary.get("tables", []):
        f = d / f"{name}.parquet"
        try:
            tables[name] = pl.read_parquet(f)
        except FileNotFoundError:
            raise ResultsError(f"{f}: missing (listed in {sfile})") from None
        except Exception as e:  # polars raises several types for damaged files
            raise ResultsError(f"{f}: corrupt or not a Parquet file ({e})") from None
    scenario = None
    scfile = d / "scenario.json"
    if scfile.is_file():
        try:
            scenario = json.loads(scfile.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ResultsError(f"{scfile}: corrupt (not valid JSON: {e})") from None
    res = Result(summary, tables, scenario, d)
    if (d / "pcap").is_dir():
        res.pcap_dir = d / "pcap"  # so that saving a loaded run keeps its captures
    return res
