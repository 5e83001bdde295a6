"""Paper reproductions: a registry of experiments that ``qoslab reproduce`` runs.

Extension point (for the paper issues)
--------------------------------------
Add a module ``python/qoslab/reproduce/pN.py`` (``p0.py`` … ``p4.py``, one per paper of
``docs/reproductions.md``); every module in this package is imported when the registry is first
used, so nothing else needs editing. In it, register each experiment::

    from qoslab.reproduce import Bound, Comparison, Context, Explanation, Interval, Outcome, Value
    from qoslab.reproduce import register

    @register("p1-table3", title="Table 3: goodput of 4 TCP flows", paper="P1 §5.2")
    def table3(ctx: Context) -> Outcome:
        sw = ctx.sweep(ctx.scenario("p1/table3.toml"), seeds=3 if ctx.quick else 30)
        ours = sw.summary.filter(pl.col("name") == "tcp1")["goodput_bps_mean"][0]
        return Outcome(
            comparisons=[
                # the paper's number, accepted within ±2 %
                Comparison("tcp1 goodput", ours / 1e6, ref=Value(2.41), unit="Mbit/s", rtol=0.02),
                # the paper's min–max over its runs
                Comparison("tcp2 goodput", g2, ref=Interval(1.1, 1.2), unit="Mbit/s"),
                # a bound the paper claims, with what it stands for
                Comparison("worst / requested", w, ref=Bound(at_least=1.0, against="the request"),
                           explanation=Explanation(
                               "queueing delay at 2 Mb/s exceeds RTT_dev",
                               doc="docs/papers/p1.md#t1-queueing",
                               script="python3 validation/p1_t1_rtt_dev.py",
                           ).tested("RTT_dev set to the measured queueing delay", w_fixed,
                                    "qoslab run scenarios/p1/t1-2mbps.toml --set …")),
            ],
            sweeps=[sw.out],
        )

- Each :class:`Comparison` is checked against its reference ``ref`` (a :class:`Value`
  of the paper's, an :class:`Interval`, a :class:`Bound` with ``at_least`` and/or
  ``at_most``, or an :class:`Order` built by :meth:`Comparison.order`) widened by
  ``rtol`` (relative to the reference) or ``atol`` (absolute), and gets a verdict: ``within``;
  ``outside-explained`` when it is outside but its :class:`Explanation` (a paragraph of
  the docs, the script that shows why, and a counterfactual run that removes the cause)
  is confirmed: the counterfactual's value lands in the comparison's band; otherwise
  ``outside`` (see "Reproductions that can fail" below). A
  comparison without a reference is ``info``. ``qoslab reproduce`` prints and reports
  the verdicts and exits with 1 when any comparison is ``outside``.
- ``ctx.quick`` is true under ``--quick``: use fewer seeds and shorter durations so
  ``reproduce --all --quick`` stays within minutes on a laptop.
- ``ctx.paper_only`` is true under ``--paper-only``: run only the paper's own
  configurations and skip qoslab's extra runs that explain a difference (P1: the
  tables rerun under the paper's eq. 1).
- ``ctx.run`` / ``ctx.sweep`` save their results under the experiment's directory; the
  report draws figures from those files (throughput over time for runs, goodput vs
  the swept parameter for sweeps) and puts ``comparisons`` (ours beside the paper's)
  and ``tables`` at the top of the experiment's section.
- :func:`figure` registers a function drawing the paper's figure from the experiment's
  saved tables (see its docstring); the report shows it first.
- Raise to fail: the experiment is recorded as failed with its error and the others go on.

Reproductions that can fail
---------------------------
A verdict is only worth something if it could have come out otherwise, so an experiment
also states, beside its comparisons:

- **Explanations are tested predictions.** An :class:`Explanation` of a miss names its
  cause and carries a :class:`Counterfactual`: the run that removes the cause and the
  value the comparison's quantity then takes. The verdict is ``outside-explained`` only
  when that value lands in the comparison's *own* accepted band (reference ± tolerance);
  a counterfactual that was not run (``value=None``) or that misses leaves the verdict
  ``outside``. An explanation without a counterfactual is refused when the comparison is
  built.
- **Orderings are decided by statistics.** :meth:`Comparison.order` takes per-seed values
  of A and B; the claim "A < B" is ``within`` when the 95 % interval of the seed-paired
  difference lies below zero, ``outside`` when it lies above, and a ``tie`` otherwise.
- **Ablation twins.** An :class:`Ablation` states a claim "mechanism M causes effect E",
  the effect with M and in a twin run without M; the claim is ``within`` only when the
  effect falls by the stated fraction (``falls_by``) without M. Every ablation gives
  ``twin_changes`` (:func:`config_changes` of the two runs' configurations) and
  ``mechanism_off`` (:func:`switched_off`): the twin is refused unless it switches off M
  and nothing else, and an experiment whose ablation declares neither fails
  (:func:`require_twins`).
- **A judged claim says where the paper makes it.** A bound or order that is not one of
  the paper's values gives its ``source`` (the paper's section, figure, table, equation
  or quoted words; "read from Fig. N" for qoslab's reading of a figure), or names one in
  its text, or is qoslab's ``own`` validity check and says why; the reference shows
  which. An experiment with a judged claim lacking both fails (:func:`require_sources`).
- **Open readings side by side.** Where the paper leaves a choice open, each reasonable
  :class:`Reading` of it is run (:class:`ReadingResult`); exactly one per knob is the
  headline, argued from the paper's text (``argued``), never from the numbers.
- **Calibrated parameters shown.** A parameter the paper does not give and qoslab chose
  comes with the verdicts at four or more of its values (:class:`Calibration`); a
  comparison that rests on it says so (``calibrated=``) and the :class:`Outcome` refuses
  it unless a calibration of that parameter shows it.
- **The paper's table before its text.** An order its text claims and its own numbers
  give the other way (``Comparison.order(paper_ab=(a, b))``) is shown, not judged.
- **Vacuous guards.** A claim that needs its mechanism to act states what the mechanism
  did in the runs judged (``Comparison(acted=(what, amount))``, e.g. packets the
  regulators dropped); when it did nothing the claim is vacuous and ``outside``, never
  ``within``: a count of the mechanism being *set up* (regulators installed) is no guard.
- **Quick mode may judge less, never differently.** A comparison or ablation whose quick
  verdict differed from full mode's declares what judging it needs
  (``Comparison(needs="seeds 1–10")``, ``Ablation(needs=…)``); in quick mode it is
  ``not-judged`` ("not judged in quick mode"), neither within nor outside, whatever its
  value, and the summary counts it. Where a claim is cheap, quick mode runs what it needs
  instead (and the comparison declares nothing).
"""

from __future__ import annotations

from qoslab.reproduce.context import Context, RunJob, scenarios_dir
from qoslab.reproduce.registry import (
    FIGURES,
    LIVE_SPIN,
    REGISTRY,
    Experiment,
    FigureFn,
    Saved,
    SkipExperiment,
    discover,
    figure,
    register,
    require_live,
)
from qoslab.reproduce.runner import mark_mode, run_experiments
from qoslab.reproduce.verdicts import (
    COUNTERFACTUAL_KINDS,
    MIN_ORDER_SEEDS,
    NOT_JUDGED,
    SOURCE_IN_TEXT,
    STATUSES,
    VERDICTS,
    Ablation,
    Bound,
    Calibration,
    Comparison,
    Counterfactual,
    Explanation,
    Interval,
    Order,
    Outcome,
    Reading,
    ReadingResult,
    Reference,
    Value,
    Values,
    ablation_verdict,
    config_changes,
    contradiction,
    count_verdicts,
    counterfactual_outcome,
    experiment_status,
    mean_interval,
    not_judged_text,
    paired_interval,
    require_sources,
    require_twins,
    stored_fall_ci,
    stored_verdict,
    summarize,
    switched_off,
)

__all__ = [
    "COUNTERFACTUAL_KINDS",
    "FIGURES",
    "LIVE_SPIN",
    "MIN_ORDER_SEEDS",
    "NOT_JUDGED",
    "REGISTRY",
    "SOURCE_IN_TEXT",
    "STATUSES",
    "VERDICTS",
    "Ablation",
    "Bound",
    "Calibration",
    "Comparison",
    "Context",
    "Counterfactual",
    "Experiment",
    "Explanation",
    "FigureFn",
    "Interval",
    "Order",
    "Outcome",
    "Reading",
    "ReadingResult",
    "Reference",
    "RunJob",
    "Saved",
    "SkipExperiment",
    "Value",
    "Values",
    "ablation_verdict",
    "config_changes",
    "contradiction",
    "count_verdicts",
    "counterfactual_outcome",
    "discover",
    "experiment_status",
    "figure",
    "mark_mode",
    "mean_interval",
    "not_judged_text",
    "paired_interval",
    "register",
    "require_live",
    "require_sources",
    "require_twins",
    "run_experiments",
    "scenarios_dir",
    "stored_fall_ci",
    "stored_verdict",
    "summarize",
    "switched_off",
]
