"""Parameter sweeps: a grid of overrides × seeds, run in a local process pool or on Ray.

A sweep is described by a ``[sweep]`` table in the scenario, by CLI flags, or both
(flags win)::

    [sweep]
    seeds = 10                     # 10 seeds from the scenario's seed up, or a list [1, 5, 9]
    [sweep.grid]
    "link.0.rate" = ["5Mbps", "10Mbps"]
    "flow.cbr1.cbr.rate" = ["1Mbps", "2Mbps"]

Every grid point is resolved and checked before any run starts.

Layout of a sweep folder::

    sweep.json          the plan: scenario file, grid, seeds, every run's key and params
    runs/<key>/         one finished run each (see qoslab.store); key = hash(scenario, seed)
    failed/<key>.json   a run that raised: its params, seed, error type and message
    summary.parquet     mean and 95 % CI across seeds, per grid point and flow
    catalog.duckdb      SQL over everything: tables runs and summary; views flows, series,
                        drops, queues, queue_samples, traces over the runs' Parquet files
                        (each with run key, seed and params; paths relative to the folder,
                        open it with :func:`open_catalog`)
    .qoslab/            qoslab's own: owner.json, the lock, staging folders

Resuming (running the same sweep into the same folder) verifies every finished run
against its manifest and reruns the damaged ones and those of another engine build
(each with a one-line warning), skips the others and retries failed ones. A killed
sweep leaves no half-written run behind. Only one sweep at a time writes into a folder.
"""

from __future__ import annotations

from qoslab.sweep.catalog import (  # noqa: F401
    CATALOG_STORAGE,
    SQL_ALIASES,
    build_catalog,
    open_catalog,
    query,
    with_sql_aliases,
)
from qoslab.sweep.driver import (  # noqa: F401
    install_sigterm_handler,
    run_sweep,
    sweep_lock,
)
from qoslab.sweep.pool import (  # noqa: F401
    check_workers,
    plain_main,
    portable,
    worker_context,
)
from qoslab.sweep.spec import (  # noqa: F401
    CASE,
    MAX_SEEDS,
    RunTask,
    SweepOutcome,
    SweepSpec,
    plan,
    value_label,
    value_labels,
)
from qoslab.sweep.summary import (  # noqa: F401
    COLOUR_AVERAGES,
    EXTRA_SUMMARIES,
    GROUP_DELAY_METRICS,
    SUMMARY_METRICS,
    gather,
    load_tasks,
    run_warnings,
    seed_stats,
    summarise,
    t95,
)

__all__ = [
    "RunTask",
    "SweepOutcome",
    "SweepSpec",
    "build_catalog",
    "gather",
    "load_tasks",
    "open_catalog",
    "plain_main",
    "plan",
    "query",
    "run_sweep",
    "summarise",
]
