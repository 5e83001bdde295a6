"""What live runs killed with SIGKILL leave behind, and its removal.

A live run's namespaces (``qlab<pid>-<node>``, with their TUN devices and agents) are
removed by the run itself on exit, Ctrl-C and SIGTERM; after a SIGKILL they stay, and so
does the run's staging folder (its agents' configs and logs, a pcap being written). So a
live run registers the folders it stages in, under :data:`REGISTRY` (one JSON file per
run: pid, the process's start time, the folders), and :func:`sweep` — called when a live
run starts — removes the namespaces of runs whose process is gone and those runs'
registered folders. A folder is removed only if it is one qoslab made for that very
process: a staging folder (``.qoslab/stage/…``) or a ``qoslab-live-*`` temporary folder
whose ``.owner.json`` names the dead process. Folders of running processes, of other
hosts, and anything else are left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qoslab.store import OWN, STAGE_OWNER, pid_alive, proc_start, remove_stage

__all__ = ["REGISTRY", "owner_marker", "registered", "sweep", "sweep_text"]

#: Where live runs register their staging folders (root-only, like live mode).
REGISTRY = Path("/run/qoslab/live")
#: The prefix of the temporary work folders a live run makes when given none.
TMP_PREFIX = "qoslab-live-"


def owner_marker(folder: str | Path) -> None:
    """Writes ``.owner.json`` (this process: pid, host, start time) into ``folder``, the
    mark :func:`sweep` needs before it removes the folder of a dead run."""
    me = {"pid": os.getpid(), "host": socket.gethostname(), "proc_start": proc_start(os.getpid())}
    (Path(folder) / STAGE_OWNER).write_text(json.dumps(me))


@contextlib.contextmanager
def registered(folders: list[str | Path]) -> Iterator[Path | None]:
    """Registers ``folders`` as this live run's staging for as long as the block runs
    (the record is removed on the way out; after a SIGKILL it stays for :func:`sweep`).
    Yields the record's path, or ``None`` where it could not be written (the run goes
    on; only its cleanup after a SIGKILL is lost)."""
    rec = REGISTRY / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "proc_start": proc_start(os.getpid()),
        "folders": [str(Path(f).absolute()) for f in folders],
    }
    try:
        REGISTRY.mkdir(parents=True, exist_ok=True)
        rec.write_text(json.dumps(info))
    except OSError:
        rec = None
    try:
        yield rec
    finally:
        if rec is not None:
            with contextlib.suppress(OSError):
                rec.unlink()


def _made_for(folder: Path, info: dict[str, Any]) -> bool:
    """Whether ``folder`` is qoslab's staging of the dead process ``info`` names."""
    try:
        owner = json.loads((folder / STAGE_OWNER).read_text())
    except (OSError, ValueError):
        return False
    same = isinstance(owner, dict) and all(
        owner.get(k) == info.get(k) for k in ("pid", "host", "proc_start")
    )
    staging = folder.parent.name == "stage" and folder.parent.parent.name == OWN
    temporary = folder.name.startswith(TMP_PREFIX) and folder.parent == Path(tempfile.gettempdir())
    return same and (staging or temporary)


def _sweep_namespaces() -> list[str]:
    """The engine's sweep of namespaces whose owner is gone (their names)."""
    from qoslab import _core

    return list(_core.live_sweep())


def sweep() -> dict[str, list[str]]:
    """Removes what live runs whose process is gone left: their namespaces (and the
    processes in them) and their registered staging folders. Returns what it removed:
    ``{"namespaces": [...], "staging": [...]}``."""
    namespaces = sorted(_sweep_namespaces())
    staging: list[str] = []
    try:
        records = sorted(REGISTRY.glob("*.json"))
    except OSError:
        records = []
    host = socket.gethostname()
    for rec in records:
        try:
            info = json.loads(rec.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict) or info.get("host") != host:
            continue
        pid = info.get("pid")
        if not isinstance(pid, int) or pid_alive(pid, info.get("proc_start")):
            continue
        for f in info.get("folders") or []:
            folder = Path(f)
            if not folder.is_dir() or not _made_for(folder, info):
                continue
            if folder.parent.name == "stage":
                remove_stage(folder)
            else:
                shutil.rmtree(folder, ignore_errors=True)
            if not folder.exists():
                staging.append(str(folder))
        with contextlib.suppress(OSError):
            rec.unlink()
    return {"namespaces": namespaces, "staging": staging}


def sweep_text(swept: dict[str, list[str]]) -> list[str]:
    """Lines saying what :func:`sweep` removed (none when it removed nothing)."""
    out = []
    if swept.get("namespaces"):
        out.append(
            "removed the namespaces of live runs whose process is gone (killed?): "
            + ", ".join(swept["namespaces"])
        )
    if swept.get("staging"):
        out.append(
            "removed the staging folders of live runs whose process is gone: "
            + ", ".join(swept["staging"])
        )
    return out
