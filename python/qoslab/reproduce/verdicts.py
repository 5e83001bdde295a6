"""The verdict model of qoslab's reproductions (pure: no runs, no files): comparisons
against the paper's values, intervals, bounds and orders; explanations with their
counterfactuals; ablation twins; open readings; calibrations; an experiment's
:class:`Outcome`; and the counts and statuses the report shows. See the package's
docstring (:mod:`qoslab.reproduce`) for the rules these carry out."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from qoslab.tables import t_quantile

VERDICTS = ("within", "outside-explained", "tie", "outside", "not-judged", "info")
"""Every verdict a comparison can get, best first (``tie``: a claimed strict order whose
seed-paired interval straddles zero; ``not-judged``: not judged in quick mode, which does
not run what the claim ``needs``; ``info``: nothing to compare against)."""

NOT_JUDGED = "not-judged"
"""The verdict of a comparison or ablation in a mode that does not give it what it
``needs`` (seeds, duration, points): "not judged in quick mode", neither within nor
outside, whatever its value (quick mode may judge less, never differently)."""


def not_judged_text(needs: str) -> str:
    """How a comparison that was not judged says so beside its reference."""
    return f"not judged in quick mode (needs {needs})"


Values = Sequence[float] | Mapping[Any, float]
"""Per-seed values: a sequence (paired by position) or a mapping seed → value (paired by
seed)."""

#: The fewest seeds a strict-order claim is decided on; with fewer it is a tie.
MIN_ORDER_SEEDS = 3


def _by_seed(a: Values, b: Values | None) -> tuple[list[float], list[float] | None]:
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        if not (isinstance(a, Mapping) and (b is None or isinstance(b, Mapping))):
            raise ValueError("give both sides as seed → value mappings, or neither")
        if b is not None and set(a) != set(b):
            raise ValueError(f"paired values need the same seeds: {sorted(set(a) ^ set(b))}")
        keys = sorted(a)
        return [float(a[k]) for k in keys], None if b is None else [float(b[k]) for k in keys]
    return [float(x) for x in a], None if b is None else [float(y) for y in b]


def paired_interval(
    a: Values, b: Values | None = None, *, paired: bool = True
) -> tuple[float, float, float, int]:
    """Mean of A − B and its 95 % interval, with the number of values: (mean, low, high, n).

    Paired (default): A and B are per-seed values of the same seeds (sequences paired by
    position, or mappings seed → value paired by seed), and the interval is Student's t
    over the differences. Unpaired: Welch's interval. ``b=None``: the interval of the mean
    of ``a`` itself. NaN values (a seed that produced nothing) are refused. Differences
    without spread give a zero-width interval: the seeds did not change the outcome."""
    xs, ys0 = _by_seed(a, b)
    if b is None:
        ds = xs
    elif paired:
        ys = ys0 or []
        if len(xs) != len(ys):
            raise ValueError(f"paired values need the same seeds: {len(xs)} vs {len(ys)} values")
        ds = [x - y for x, y in zip(xs, ys, strict=True)]
    else:
        ys = ys0 or []
        if len(xs) < 2 or len(ys) < 2:
            raise ValueError("an unpaired interval needs at least two values on each side")
        if any(math.isnan(v) for v in xs + ys):
            raise ValueError("NaN among the values of an interval")
        ma, mb = sum(xs) / len(xs), sum(ys) / len(ys)
        va = sum((x - ma) ** 2 for x in xs) / (len(xs) - 1) / len(xs)
        vb = sum((y - mb) ** 2 for y in ys) / (len(ys) - 1) / len(ys)
        se = math.sqrt(va + vb)
        if se == 0:
            return ma - mb, ma - mb, ma - mb, min(len(xs), len(ys))
        df = (va + vb) ** 2 / (va**2 / (len(xs) - 1) + vb**2 / (len(ys) - 1))
        h = t_quantile(0.975, df) * se
        return ma - mb, ma - mb - h, ma - mb + h, min(len(xs), len(ys))
    if any(math.isnan(d) for d in ds):
        raise ValueError("NaN among the values of an interval")
    n = len(ds)
    if n < 2:
        raise ValueError("an interval needs at least two values (seeds)")
    m = sum(ds) / n
    sd = math.sqrt(sum((d - m) ** 2 for d in ds) / (n - 1))
    h = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    return m, m - h, m + h, n


def mean_interval(xs: Sequence[float]) -> tuple[float, float, float, int]:
    """The mean of per-run values with its 95 % interval (:func:`paired_interval`), or for
    a single run (quick mode) the value itself as a zero-width interval."""
    if len(xs) > 1:
        return paired_interval(xs)
    return xs[0], xs[0], xs[0], 1


@dataclass(frozen=True)
class Counterfactual:
    """The run that removes an explanation's cause: what it changes (``change``, e.g.
    "F3's RTO pinned to 200 ms"), the value the comparison's quantity takes there
    (``value``; None when it was not run, e.g. skipped in quick mode) and the command
    that reruns it (``command``). The explanation holds only if ``value`` lands in the
    comparison's own accepted band."""

    change: str
    value: float | None = None
    command: str = ""
    #: ``cause`` (the run removes the named cause and nothing the paper states), or
    #: ``reading`` (it is another reading of a choice the paper leaves open) or
    #: ``off-paper`` (it changes something the paper states). Only a ``cause`` run can
    #: confirm an explanation: the others show under which setting the claim holds.
    kind: str = "cause"

    def __post_init__(self) -> None:
        if self.kind not in COUNTERFACTUAL_KINDS:
            raise ValueError(
                f"counterfactual {self.change!r}: kind must be one of {COUNTERFACTUAL_KINDS}"
            )

    def to_dict(self) -> dict[str, Any]:
        """As stored in ``reproduce.json``."""
        return {
            "change": self.change,
            "value": self.value,
            "command": self.command,
            "kind": self.kind,
        }


COUNTERFACTUAL_KINDS = ("cause", "reading", "off-paper")
"""What a counterfactual run changes (see :class:`Counterfactual`)."""


@dataclass(frozen=True)
class Explanation:
    """Why a comparison may lie outside its reference: one sentence (``why``), the docs
    paragraph that says so (``doc``: a repository path with an ``#anchor``, e.g.
    ``docs/papers/p1.md#t1-queueing``), the command that shows it (``script``) and the
    :class:`Counterfactual` that tests it. A paper module may keep the text as a
    constant and attach the measured counterfactual at run time with :meth:`tested`."""

    why: str
    doc: str
    script: str = ""
    counterfactual: Counterfactual | None = None

    def tested(
        self, change: str, value: float | None, command: str = "", kind: str = "cause"
    ) -> Explanation:
        """This explanation with its counterfactual run attached (``kind``: see
        :class:`Counterfactual`)."""
        from dataclasses import replace

        return replace(self, counterfactual=Counterfactual(change, value, command, kind))

    def untested(self, reason: str = "no run of qoslab removes this cause yet") -> Explanation:
        """This explanation, saying that no run tests it (``reason``): its comparison stays
        outside, with the explanation shown beside it."""
        return self.tested(f"none: {reason}", None)


def _num(x: float) -> str:
    return f"{x:.6g}"


def _float(what: str, x: Any) -> float:
    """``x`` as a float, or a ValueError naming ``what`` it is (None is not a number)."""
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, not {x!r}") from None


class _Reference:
    """What every reference of a :class:`Comparison` does; the band references (a value,
    an interval, a bound) share the reference text, the verdict and the stored columns
    written here, and :class:`Order` overrides them."""

    #: What ``ours`` is compared against, as stored (``kind`` of ``reproduce.json``).
    kind: ClassVar[str] = ""
    #: What the reference stands for, shown beside it (e.g. "the request").
    against: str = ""

    def limits(self) -> tuple[float | None, float | None]:
        """The reference range before tolerance: (low, high), None = unbounded."""
        raise NotImplementedError

    def text(self) -> str:
        """The reference range as text, before tolerance (e.g. ``≥ 1``)."""
        raise NotImplementedError

    def columns(self) -> dict[str, Any]:
        """The reference's own columns of ``reproduce.json`` among ``paper``,
        ``interval``, ``at_least``, ``at_most`` and ``against`` (the others stay empty)."""
        raise NotImplementedError

    def claim_fields(self) -> dict[str, Any]:
        """The columns a claim of this kind adds at the end of ``reproduce.json``'s entry
        (an order's claim, interval, seeds and names); none for a band."""
        return {}

    def describe(self, c: Comparison) -> str:
        """The reference as ``c`` shows it: the range, its tolerance, what it stands for
        and where the claim comes from, and a vacuous claim's note."""
        ref = self.text()
        tol = []
        if c.rtol:
            tol.append(f"{_num(c.rtol * 100)} %")
        if c.atol:
            tol.append(_num(c.atol))
        if tol:
            ref += " ± " + " or ".join(tol)
        said = [x for x in (self.against, c._cite()) if x]
        if said:
            ref += f" ({', '.join(said)})"
        if c.vacuous:
            what, n = c.acted  # type: ignore[misc]
            ref += f"; vacuous: {what} = {_num(float(n))}"
        return ref

    def judge(self, c: Comparison) -> str:
        """The verdict of a judged, non-vacuous ``c``: ``within`` its accepted band,
        ``outside-explained`` when its explanation's counterfactual lands there, else
        ``outside``."""
        if c.inside(c.ours):
            return "within"
        if c.confirmed and not math.isnan(c.ours):
            return "outside-explained"
        return "outside"


@dataclass(frozen=True)
class Value(_Reference):
    """The paper's value ``x`` (``against``: what it stands for)."""

    x: float
    against: str = ""
    kind: ClassVar[str] = "value"

    def __post_init__(self) -> None:
        _float("a paper's value", self.x)

    def limits(self) -> tuple[float | None, float | None]:
        """The value itself at both ends."""
        return float(self.x), float(self.x)

    def text(self) -> str:
        """The value, e.g. ``0.95``."""
        return _num(self.x)

    def columns(self) -> dict[str, Any]:
        """``paper`` and ``against``."""
        return {"paper": self.x, "against": self.against}


@dataclass(frozen=True)
class Interval(_Reference):
    """The paper's range from ``lo`` to ``hi`` (e.g. its min and max over its runs)."""

    lo: float
    hi: float
    against: str = ""
    kind: ClassVar[str] = "interval"

    def __post_init__(self) -> None:
        lo, hi = _float("an interval's low end", self.lo), _float("its high end", self.hi)
        if lo > hi:
            raise ValueError(f"an interval's low end {lo:g} lies above its high end {hi:g}")
        object.__setattr__(self, "lo", lo)
        object.__setattr__(self, "hi", hi)

    def limits(self) -> tuple[float | None, float | None]:
        """``lo`` and ``hi``."""
        return self.lo, self.hi

    def text(self) -> str:
        """``lo–hi``, or one number when they are equal."""
        return f"{_num(self.lo)}–{_num(self.hi)}" if self.lo != self.hi else _num(self.lo)

    def columns(self) -> dict[str, Any]:
        """``interval`` and ``against``."""
        return {"interval": [self.lo, self.hi], "against": self.against}


@dataclass(frozen=True)
class Bound(_Reference):
    """A claimed bound: ``at_least`` and/or ``at_most`` (e.g. "≥ the request", "≤ 1.03 ×
    the model"), ``against`` saying what it stands for."""

    at_least: float | None = None
    at_most: float | None = None
    against: str = ""
    kind: ClassVar[str] = "bound"

    def __post_init__(self) -> None:
        if self.at_least is None and self.at_most is None:
            raise ValueError(f"a bound needs at_least or at_most ({self.against!r})")
        lo = None if self.at_least is None else _float("a bound's at_least", self.at_least)
        hi = None if self.at_most is None else _float("a bound's at_most", self.at_most)
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"a bound's at_least {lo:g} lies above its at_most {hi:g}")

    def limits(self) -> tuple[float | None, float | None]:
        """``at_least`` and ``at_most`` (None: that side is open)."""
        return self.at_least, self.at_most

    def text(self) -> str:
        """``lo–hi``, ``≥ lo`` or ``≤ hi``."""
        if self.at_least is not None and self.at_most is not None:
            return f"{_num(self.at_least)}–{_num(self.at_most)}"
        if self.at_least is not None:
            return f"≥ {_num(self.at_least)}"
        return f"≤ {_num(self.at_most)}"  # type: ignore[arg-type]

    def columns(self) -> dict[str, Any]:
        """``at_least``, ``at_most`` and ``against``."""
        return {"at_least": self.at_least, "at_most": self.at_most, "against": self.against}


@dataclass(frozen=True)
class Order(_Reference):
    """A strict order "A < B" or "A > B" (``claim``) over seeds, with the 95 % interval
    ``ci`` of the difference A − B over ``n`` seeds; build it with
    :meth:`Comparison.order`."""

    claim: str
    ci: tuple[float, float]
    n: int
    a_name: str = "A"
    b_name: str = "B"
    kind: ClassVar[str] = "order"

    def __post_init__(self) -> None:
        if self.claim not in ("<", ">"):
            raise ValueError(f"an order's claim must be '<' or '>', not {self.claim!r}")
        lo, hi = self.ci
        if lo > hi:
            raise ValueError(f"an order's interval {lo:g} … {hi:g} is empty")

    def limits(self) -> tuple[float | None, float | None]:
        """The difference claimed below zero ("<") or above it (">")."""
        return (None, 0.0) if self.claim == "<" else (0.0, None)

    def text(self) -> str:
        """The claim with its interval and its number of seeds."""
        lo, hi = self.ci
        return (
            f"{self.a_name} {self.claim} {self.b_name} (95 % CI of the paired difference "
            f"over {self.n} seeds: {_num(lo)} … {_num(hi)})"
        )

    def columns(self) -> dict[str, Any]:
        """None: an order is stored in its own columns (:meth:`claim_fields`)."""
        return {}

    def claim_fields(self) -> dict[str, Any]:
        """``claim``, ``ci``, ``n``, ``a_name`` and ``b_name``."""
        return {"claim": self.claim, "ci": list(self.ci), "n": self.n,
                "a_name": self.a_name, "b_name": self.b_name}  # fmt: skip

    def describe(self, c: Comparison) -> str:
        """The claim and where it comes from."""
        return f"{self.text()}; {c._cite()}" if c._cite() else self.text()

    def judge(self, c: Comparison) -> str:
        """``within`` when the interval excludes zero on the claimed side, ``outside``
        when it excludes it on the other side (or is NaN), ``tie`` when it straddles it."""
        lo, hi = self.ci
        if math.isnan(lo) or math.isnan(hi):
            return "outside"
        good, bad = (hi < 0, lo > 0) if self.claim == "<" else (lo > 0, hi < 0)
        return "within" if good else "outside" if bad else "tie"


Reference = Value | Interval | Bound | Order
"""What a :class:`Comparison` judges ``ours`` against (None: nothing, an ``info`` row)."""


@dataclass
class Comparison:
    """One number of ours beside what it is compared against, and its verdict.

    ``ref`` is the reference: a :class:`Value` of the paper's, an :class:`Interval` (the
    paper's min and max over its runs), a :class:`Bound` (a claim such as "≥ the
    request" or "≤ 1.03 × the model") or an :class:`Order` (a strict order over seeds,
    built by :meth:`order`); None gives the verdict ``info``. ``rtol`` widens the
    reference by that fraction of its magnitude, ``atol`` by an absolute amount (the
    larger of the two applies). ``explanation`` turns ``outside`` into
    ``outside-explained`` when its counterfactual lands in this comparison's band.
    ``unit`` and ``note`` are shown beside the numbers.
    """

    quantity: str
    ours: float
    ref: Reference | None = None
    unit: str = ""
    note: str = ""
    rtol: float = 0.0
    atol: float = 0.0
    explanation: Explanation | None = None
    #: The vacuous guard of a claim that needs its mechanism to act (e.g. "ERUF adds no
    #: drop to TCP" needs regulators that drop or delay TCP): (what the mechanism did, how
    #: much, over the runs judged). When it did nothing (≤ 0 or NaN) the claim could not
    #: have failed through the mechanism: it is ``vacuous``, judged ``outside`` whatever
    #: ``ours`` is, and its reference says so.
    acted: tuple[str, float] | None = None
    #: What judging this claim needs that quick mode does not run (e.g. "seeds 1–10",
    #: "the 750 kb/s point", "300 s runs"): found by running it both ways, where quick
    #: mode's verdict differed from full mode's. Empty: quick mode judges it as full does.
    needs: str = ""
    #: Set by :func:`run_experiments`: whether the run that produced ``ours`` was in quick
    #: mode. With ``needs`` it makes the verdict ``not-judged``.
    quick: bool = False
    #: A claim taken from a sentence of the paper that the paper's own numbers contradict
    #: (e.g. its table gives the other order): what they give instead. Such a claim is
    #: shown, never judged (``info``), and its reference says so; :meth:`order` sets it
    #: from the paper's own values of A and B (``paper_ab``).
    contradicted: str = ""
    #: The calibrated parameter (a :class:`Calibration`'s ``parameter``) that ``ours``
    #: rests on: the :class:`Outcome` refuses the comparison unless a calibration of that
    #: parameter shows this claim at each of its values, and the reference counts them.
    calibrated: str = ""
    #: Where the paper makes this claim, for a judged claim that is not one of the paper's
    #: values: its section, figure, table or equation, or its quoted words (e.g. "P0
    #: §4.2.3", "read from Fig. 10", "P2 §4.1: 'almost all undelivered packets'"); shown in
    #: the reference. See :func:`require_sources`.
    source: str = ""
    #: Why this judged claim is qoslab's own validity check, not a claim of the paper
    #: (e.g. "the regulators must act for the claim to be tested"); shown in the reference
    #: as "qoslab's check: …". See :func:`require_sources`.
    own: str = ""
    #: Set by :class:`Outcome`: this claim at each value of its calibration, (value, claim).
    shown_at: list[tuple[str, Comparison]] | None = field(default=None, repr=False,
                                                          compare=False)  # fmt: skip

    @property
    def judged(self) -> bool:
        """False when the run lacks what the claim ``needs`` (quick mode): ``not-judged``."""
        return not (self.quick and self.needs)

    @classmethod
    def order(
        cls,
        quantity: str,
        a: Sequence[float],
        b: Sequence[float],
        *,
        claim: str = "<",
        paired: bool = True,
        unit: str = "",
        note: str = "",
        a_name: str = "A",
        b_name: str = "B",
        needs: str = "",
        paper_ab: tuple[float, float] | None = None,
        paper_source: str = "the paper's table",
        calibrated: str = "",
        source: str = "",
        own: str = "",
    ) -> Comparison:
        """The claim "A < B" (``claim="<"``) or "A > B" over per-seed values: ``ours`` is the
        mean of A − B; ``within`` when its 95 % interval (seed-paired by default) excludes
        zero on the claimed side, ``outside`` when it excludes zero on the other side, and
        ``tie`` when it straddles zero. ``paper_ab``: the paper's own values of A and B
        where it prints them (``paper_source``, e.g. "Table I"); when they do not stand in
        the claimed order the claim is :attr:`contradicted` (shown, not judged).
        ``source`` / ``own``: where the paper claims the order, or why it is qoslab's own
        check (:func:`require_sources`)."""
        if claim not in ("<", ">"):
            raise ValueError(f"comparison {quantity!r}: claim must be '<' or '>', not {claim!r}")
        m, lo, hi, n = paired_interval(a, b, paired=paired)
        if n < MIN_ORDER_SEEDS:  # too few seeds to decide an order: a tie, whatever the mean
            lo, hi = -math.inf, math.inf
        return cls(
            quantity, m, ref=Order(claim, (lo, hi), n, a_name, b_name), unit=unit, note=note,
            needs=needs, calibrated=calibrated, source=source, own=own,
            contradicted=contradiction(claim, paper_ab, a_name, b_name, paper_source),
        )  # fmt: skip

    def __post_init__(self) -> None:
        if isinstance(self.ref, Order):
            lo, hi = self.ref.ci
            if not math.isnan(float(self.ours)) and not lo <= float(self.ours) <= hi:
                raise ValueError(
                    f"comparison {self.quantity!r}: the mean difference lies outside its own "
                    "interval (build an order with .order())"
                )
        elif self.ref is not None and not isinstance(self.ref, (Value, Interval, Bound)):
            raise ValueError(
                f"comparison {self.quantity!r}: ref must be a Value, Interval, Bound or "
                f"Order, not {self.ref!r}"
            )
        if self.explanation is not None and self.explanation.counterfactual is None:
            raise ValueError(
                f"comparison {self.quantity!r}: its explanation ({self.explanation.why!r}) has "
                "no counterfactual: attach the run that removes the cause "
                "(Explanation.tested(change, value, command)), or say that none tests it "
                "(Explanation.untested(reason)), which leaves the comparison outside"
            )
        if not (math.isfinite(self.rtol) and math.isfinite(self.atol)):
            raise ValueError(f"comparison {self.quantity!r}: tolerances must be finite")
        if self.rtol < 0 or self.atol < 0:
            raise ValueError(f"comparison {self.quantity!r}: tolerances must be ≥ 0")
        if self.source and self.own:
            raise ValueError(
                f"comparison {self.quantity!r}: a claim is the paper's (source=) or qoslab's "
                "own check (own=), not both"
            )
        self.ours = float(self.ours)

    @property
    def cited(self) -> str:
        """Where the claim comes from: its ``source``, its ``own`` reason ("qoslab's
        check: …"), else a source its quantity, ``against`` or ``note`` names (§, Fig.,
        Table, Eq., quoted words); "" when none. Only a judged claim that is not one of the
        paper's values needs one (:meth:`needs_source`)."""
        if self.source:
            return self.source
        if self.own:
            return f"qoslab's check: {self.own}"
        for text in (self.quantity, getattr(self.ref, "against", ""), self.note):
            if SOURCE_IN_TEXT.search(text):
                return text
        return ""

    @property
    def needs_source(self) -> bool:
        """Whether the claim is judged against something other than a value or interval
        of the paper (a bound or an order), so that it must say where the paper makes it
        or why it is qoslab's own check (:func:`require_sources`)."""
        return self.kind in ("bound", "order") and not self.contradicted

    @property
    def kind(self) -> str:
        """``value``, ``interval``, ``bound``, ``order`` or ``none``: what ``ours`` is
        compared against."""
        return "none" if self.ref is None else self.ref.kind

    def limits(self) -> tuple[float | None, float | None]:
        """The reference range before tolerance: (low, high), None = unbounded (an order
        claims the difference below or above zero)."""
        return (None, None) if self.ref is None else self.ref.limits()

    def accepted(self) -> tuple[float | None, float | None]:
        """The range ``ours`` must lie in: :meth:`limits` widened by the tolerance."""
        lo, hi = self.limits()

        def slack(x: float) -> float:
            return max(self.atol, self.rtol * abs(x))

        return (
            None if lo is None else lo - slack(lo),
            None if hi is None else hi + slack(hi),
        )

    def inside(self, x: float) -> bool:
        """Whether the value ``x`` lies in this comparison's accepted band."""
        lo, hi = self.accepted()
        return not math.isnan(x) and (lo is None or x >= lo) and (hi is None or x <= hi)

    @property
    def confirmed(self) -> bool | None:
        """Whether the explanation's counterfactual landed in this comparison's band
        (None: no explanation, or its counterfactual was not run)."""
        if self.explanation is None or self.explanation.counterfactual is None:
            return None
        cf = self.explanation.counterfactual
        if cf.value is None:
            return None
        return cf.kind == "cause" and self.inside(float(cf.value))

    @property
    def vacuous(self) -> bool:
        """Whether the claim's mechanism did nothing in the runs judged (see ``acted``)."""
        return self.acted is not None and not float(self.acted[1]) > 0

    @property
    def verdict(self) -> str:
        """``within``, ``outside-explained``, ``tie``, ``outside``, ``not-judged`` or
        ``info`` (see the class and :meth:`order`); ``outside`` when :attr:`vacuous`,
        ``not-judged`` when the run lacks what the claim ``needs``."""
        if self.ref is None or self.contradicted:
            return "info"
        if not self.judged:
            return NOT_JUDGED
        if self.vacuous:
            return "outside"
        return self.ref.judge(self)  # type: ignore[union-attr]

    @property
    def deviation(self) -> float | None:
        """Signed relative distance of ``ours`` outside the reference range (0 inside
        it); None without a reference or against a limit of 0."""
        lo, hi = self.limits()
        x = self.ours
        if lo is not None and x < lo:
            return (x - lo) / abs(lo) if lo != 0 else None
        if hi is not None and x > hi:
            return (x - hi) / abs(hi) if hi != 0 else None
        return None if self.kind in ("none", "order") else 0.0

    @property
    def reference(self) -> str:
        """The reference as text, e.g. ``53.2–53.3 ± 3 %``, ``≥ 1 (the request)``,
        ``A < B (95 % CI of A − B over 10 seeds: −0.3…−0.1)``."""
        if self.ref is None:
            return ""
        return self._qualified(self.ref.describe(self))

    def _cite(self) -> str:
        """The ``source`` or ``own`` reason as the reference shows it ("" without)."""
        return self.source or (f"qoslab's check: {self.own}" if self.own else "")

    def _qualified(self, ref: str) -> str:
        """``ref`` with what qualifies it: a contradicted claim, a calibrated parameter it
        rests on (within at how many of the values shown), not judged in quick mode."""
        if self.contradicted:
            ref += f"; the paper's text only, not judged: {self.contradicted}"
        if self.calibrated:
            ref += f"; rests on the calibrated {self.calibrated}"
            vs = [c.verdict for _, c in self.shown_at or []]
            if vs and not self.contradicted:
                skipped = vs.count(NOT_JUDGED)
                ref += f" (within at {vs.count('within')} of its {len(vs)} values shown"
                ref += f"; {skipped} not judged in quick mode)" if skipped else ")"
        if not self.judged:
            ref += f"; {not_judged_text(self.needs)}"
        return ref

    def to_dict(self) -> dict[str, Any]:
        """The comparison with its verdict, as stored in ``reproduce.json``."""
        d = {
            "quantity": self.quantity,
            "ours": self.ours,
            "paper": None,
            "unit": self.unit,
            "note": self.note,
            "kind": self.kind,
            "interval": None,
            "at_least": None,
            "at_most": None,
            "against": "",
            "rtol": self.rtol,
            "atol": self.atol,
            "reference": self.reference,
            "deviation": self.deviation,
            "verdict": self.verdict,
            "explanation": None,
        }
        if self.ref is not None:
            d.update(self.ref.columns())
        if self.acted is not None:
            d.update(acted=[self.acted[0], float(self.acted[1])], vacuous=self.vacuous)
        if self.needs:
            d.update(needs=self.needs, judged=self.judged)
        if self.contradicted:
            d["contradicted"] = self.contradicted
        if self.source:
            d["source"] = self.source
        if self.own:
            d["own"] = self.own
        if self.calibrated:
            d["calibrated"] = self.calibrated
            if self.shown_at:
                d["calibration_verdicts"] = [[v, c.verdict] for v, c in self.shown_at]
        if self.ref is not None:
            d.update(self.ref.claim_fields())
        if self.explanation is not None:
            e = self.explanation
            cf = e.counterfactual
            d["explanation"] = {
                "why": e.why,
                "doc": e.doc,
                "script": e.script,
                "counterfactual": cf.to_dict() if cf else None,
                "confirmed": self.confirmed,
                "moved": None if not cf or cf.value is None else cf.value != self.ours,
            }
        return d


def contradiction(
    claim: str,
    paper_ab: tuple[float, float] | None,
    a_name: str = "A",
    b_name: str = "B",
    source: str = "the paper's table",
) -> str:
    """What the paper's own values of A and B (``paper_ab``, from ``source``) say against
    the order ``claim`` ("<" or ">") taken from its text, or "" when they agree (or are
    not given): a claim its own numbers contradict is shown, never judged."""
    if paper_ab is None:
        return ""
    a, b = (float(x) for x in paper_ab)
    if (a < b) if claim == "<" else (a > b):
        return ""
    return (f"{source} gives {a_name} {_num(a)}, {b_name} {_num(b)}, not {a_name} {claim} "
            f"{b_name}")  # fmt: skip


def _fall_ci(
    ci: tuple[float, float] | list[float] | None, effect_with: float, fall: float | None
) -> tuple[float, float] | None:
    """The interval of an ablation's fall from the paired interval ``ci`` of with − without
    (None without seeds or without an effect to fall)."""
    if ci is None or fall is None:
        return None
    return ci[0] / effect_with, ci[1] / effect_with


def ablation_verdict(
    fall: float | None,
    effect_without: float,
    falls_by: float,
    fall_ci: tuple[float, float] | list[float] | None = None,
) -> str:
    """An ablation's verdict from its fall (None: no effect with the mechanism) and, with
    seeds, the fall's 95 % interval: ``within`` when the fall (all of its interval) is at
    least ``falls_by``, ``outside`` when it (all of its interval) is below, ``tie`` when
    the interval straddles ``falls_by``."""
    eps = 1e-12
    if fall is None or math.isnan(effect_without) or math.isnan(fall):
        return "outside"
    if fall_ci is None:
        return "within" if fall >= falls_by - eps else "outside"
    lo, hi = fall_ci
    if lo >= falls_by - eps:
        return "within"
    if hi < falls_by - eps:
        return "outside"
    return "tie"


@dataclass
class Ablation:
    """An ablation twin: the claim "``mechanism`` causes ``quantity``", measured with the
    mechanism (``effect_with``) and in the ``twin`` run without it or with the neutral
    choice in its place (``effect_without``). The effect is signed so that a positive
    value is the claimed effect (e.g. the edge's share of drops minus the share without
    ERUF). ``within`` when the effect is present with the mechanism (> 0) and falls by at
    least ``falls_by`` of it without (``effect_without ≤ (1 − falls_by) · effect_with``);
    ``outside`` when the effect survives its ablation. With per-seed values
    (``with_seeds``/``without_seeds``, the same seeds) the fall has a 95 % interval (the
    paired interval of with − without, over ``effect_with``), and the verdict follows
    it: ``within`` when all of it is at least ``falls_by``, ``outside`` when all of it is
    below, a ``tie`` when it straddles ``falls_by`` (:func:`ablation_verdict`)."""

    claim: str
    mechanism: str
    twin: str
    quantity: str
    effect_with: float
    effect_without: float
    falls_by: float = 0.5
    unit: str = ""
    with_seeds: Values | None = None
    without_seeds: Values | None = None
    command: str = ""
    note: str = ""
    #: The least effect with the mechanism that counts as an effect at all (in the
    #: effect's unit); an effect at or below it makes the claim outside, whatever the twin.
    min_effect: float = 0.0
    #: As :attr:`Comparison.needs`: what judging this claim needs that quick mode does
    #: not run; ``quick`` is set by :func:`run_experiments`.
    needs: str = ""
    quick: bool = False
    #: What the twin's configuration changes against the run with the mechanism, key →
    #: (value with, value in the twin), None for a key not set (:func:`config_changes` of
    #: the two configurations); given with ``mechanism_off``.
    twin_changes: Mapping[str, tuple[Any, Any]] | None = None
    #: What switching the named ``mechanism`` off changes, in the same form: the twin
    #: must change exactly this, nothing more (it is refused otherwise).
    mechanism_off: Mapping[str, tuple[Any, Any]] | None = None

    @property
    def judged(self) -> bool:
        """False when the run lacks what the claim ``needs`` (quick mode): ``not-judged``."""
        return not (self.quick and self.needs)

    def __post_init__(self) -> None:
        if not 0 < self.falls_by <= 1:
            raise ValueError(f"ablation {self.claim!r}: falls_by must be in (0, 1]")
        if (self.twin_changes is None) != (self.mechanism_off is None):
            raise ValueError(
                f"ablation {self.claim!r}: give twin_changes (what the twin changes) and "
                "mechanism_off (what switching the mechanism off changes) together"
            )
        if self.twin_changes is not None and self.mechanism_off is not None:
            twin = {k: tuple(v) for k, v in self.twin_changes.items()}
            off = {k: tuple(v) for k, v in self.mechanism_off.items()}
            more = {k: v for k, v in twin.items() if off.get(k) != v}
            less = sorted(k for k in off if k not in twin)
            if more or less:
                raise ValueError(
                    f"ablation {self.claim!r}: the twin ({self.twin}) must switch off "
                    f"{self.mechanism!r} and nothing else ({off}); it also changes {more}"
                    + (f" and leaves {less} as they are" if less else "")
                )
        if (self.with_seeds is None) != (self.without_seeds is None):
            raise ValueError(f"ablation {self.claim!r}: give per-seed values for both or neither")
        self.effect_with = float(self.effect_with)
        self.effect_without = float(self.effect_without)
        if self.with_seeds is not None:
            xs, ys = _by_seed(self.with_seeds, self.without_seeds)
            for name, vals, eff in (("with", xs, self.effect_with),
                                    ("without", ys or [], self.effect_without)):  # fmt: skip
                mean = sum(vals) / len(vals) if vals else math.nan
                if not math.isclose(mean, eff, rel_tol=1e-6, abs_tol=1e-9):
                    raise ValueError(
                        f"ablation {self.claim!r}: effect_{name} ({eff:g}) is not the mean of "
                        f"its per-seed values ({mean:g})"
                    )

    @property
    def fall(self) -> float | None:
        """The fraction of the effect that vanishes without the mechanism (1 = all of it;
        None when there is no effect to fall)."""
        if math.isnan(self.effect_with) or self.effect_with <= max(0.0, self.min_effect):
            return None
        return (self.effect_with - self.effect_without) / self.effect_with

    @property
    def ci(self) -> tuple[float, float] | None:
        """The 95 % interval of the paired fall (with − without), when seeds are given."""
        if self.with_seeds is None:
            return None
        _, lo, hi, _ = paired_interval(self.with_seeds, self.without_seeds)
        return lo, hi

    @property
    def fall_ci(self) -> tuple[float, float] | None:
        """The 95 % interval of the fall itself (:attr:`ci` over ``effect_with``), when
        seeds are given and there is an effect to fall."""
        return _fall_ci(self.ci, self.effect_with, self.fall)

    @property
    def verdict(self) -> str:
        """``within`` (the effect falls as claimed), ``tie`` or ``outside`` (see the class);
        ``not-judged`` when the run lacks what the claim ``needs``."""
        if not self.judged:
            return NOT_JUDGED
        return ablation_verdict(self.fall, self.effect_without, self.falls_by, self.fall_ci)

    def to_dict(self) -> dict[str, Any]:
        """As stored in ``reproduce.json``."""
        return {
            "claim": self.claim,
            "mechanism": self.mechanism,
            "twin": self.twin,
            "quantity": self.quantity,
            "unit": self.unit,
            "effect_with": self.effect_with,
            "effect_without": self.effect_without,
            "falls_by": self.falls_by,
            "fall": self.fall,
            "ci": list(self.ci) if self.ci else None,
            "fall_ci": list(self.fall_ci) if self.fall_ci else None,
            "n": None if self.with_seeds is None else len(self.with_seeds),
            "command": self.command,
            "note": self.note,
            "min_effect": self.min_effect,
            "verdict": self.verdict,
            **({"needs": self.needs, "judged": self.judged} if self.needs else {}),
            **self._changes_dict(),
        }

    def _changes_dict(self) -> dict[str, Any]:
        """``twin_changes`` as stored (when given): keys that differ only in list indices
        and change alike are stored once, the indices as ``*`` and their count after
        ``×`` (``flow.*.tcp.cc ×172``)."""
        if self.twin_changes is None:
            return {}
        groups: dict[tuple[str, str], list[str]] = {}
        for k, v in self.twin_changes.items():
            pattern = ".".join("*" if p.isdigit() else p for p in k.split("."))
            groups.setdefault((pattern, repr(tuple(v))), []).append(k)
        out: dict[str, list[Any]] = {}
        for (pattern, _), keys in groups.items():
            name = f"{pattern} ×{len(keys)}" if len(keys) > 1 else keys[0]
            out[name] = list(self.twin_changes[keys[0]])
        return {"twin_changes": out}


def config_changes(
    with_cfg: Mapping[str, Any],
    twin_cfg: Mapping[str, Any],
    prefix: str = "",
    *,
    ignore: Sequence[str] = (),
) -> dict[str, tuple[Any, Any]]:
    """What ``twin_cfg`` changes against ``with_cfg`` (nested mappings and lists, e.g.
    scenario or marker dicts): dotted key (list items by index) → (value in ``with_cfg``,
    value in ``twin_cfg``), None for a key (or list item) one of them does not have; an ablation's
    ``twin_changes``. Keys in ``ignore`` (dotted, e.g. ``"name"``: a scenario's label)
    are left out."""
    out: dict[str, tuple[Any, Any]] = {}
    for k in sorted({*with_cfg, *twin_cfg}, key=str):
        a, b = with_cfg.get(k), twin_cfg.get(k)
        key = f"{prefix}{k}"
        if key in ignore:
            continue
        if isinstance(a, list) and isinstance(b, list):
            # item by item; items one list has beyond the other are (None, item)
            a, b = dict(enumerate(a)), dict(enumerate(b))
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            out |= config_changes(a, b, f"{key}.", ignore=ignore)
        elif a != b:
            out[key] = (a, b)
    return out


def switched_off(with_cfg: Mapping[str, Any],
                 neutral: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:  # fmt: skip
    """What switching a mechanism off changes in ``with_cfg``, in the form of
    :func:`config_changes`: ``neutral`` maps the mechanism's dotted keys (``*`` for every
    item of a list or mapping, e.g. ``"node.*.source_quench"``) to the value they take without it
    (None: unset); a key ``with_cfg`` holds at its neutral value already (or does not set,
    for None) changes nothing. An ablation's ``mechanism_off``."""
    out: dict[str, tuple[Any, Any]] = {}

    def walk(cfg: Any, parts: list[str], at: str, off: Any) -> None:
        if not parts:
            if cfg != off:
                out[at] = (cfg, off)
            return
        head, rest = parts[0], parts[1:]
        sub = f"{at}." if at else ""
        if head == "*" and isinstance(cfg, list):
            for i, item in enumerate(cfg):
                walk(item, rest, f"{sub}{i}", off)
        elif head == "*" and isinstance(cfg, Mapping):
            for k, item in cfg.items():
                walk(item, rest, f"{sub}{k}", off)
        elif isinstance(cfg, Mapping):
            walk(cfg.get(head), rest, f"{sub}{head}", off)
        elif isinstance(cfg, list) and head.isdigit() and int(head) < len(cfg):
            walk(cfg[int(head)], rest, f"{sub}{head}", off)
        elif off is not None and head != "*":
            walk(None, rest, f"{sub}{head}", off)

    for key, off in neutral.items():
        walk(with_cfg, key.split("."), "", off)
    return out


def require_twins(experiment: str, outcome: Outcome) -> None:
    """Refuses an outcome with an ablation that does not declare what its twin changes
    (``twin_changes``) and what switching its mechanism off changes (``mechanism_off``):
    without them the rule "the twin switches off the named mechanism and nothing else"
    could be skipped. The error names the experiment and the ablation."""
    for a in outcome.ablations:
        if a.twin_changes is None or a.mechanism_off is None:
            raise ValueError(
                f"experiment {experiment!r}: ablation {a.claim!r} does not declare what its "
                f"twin ({a.twin}) changes: give twin_changes (config_changes of the run with "
                f"{a.mechanism!r} and its twin) and mechanism_off (what switching it off "
                "changes)"
            )


#: A source named in a claim's text: a section, figure, table or equation of the paper, or
#: its quoted words ("…", “…” or '…' opened after a space or bracket).
SOURCE_IN_TEXT = re.compile(
    r"§|\bFig\.|\bFigure\b|\bTable\b|\bEq\.|\"[^\"]+\"|“[^”]+”|(?:^|[\s(])'[^']+'"
)


def require_sources(experiment: str, outcome: Outcome) -> None:
    """Refuses an outcome with a judged claim that is not one of the paper's values (a
    bound or an order) and says neither where the paper makes it (``source``, or a §,
    Fig., Table, Eq. or quoted words in its quantity, ``against`` or ``note``) nor why it
    is qoslab's own check (``own``): without it a bound of ours could pass for the
    paper's claim. Readings' and calibrations' comparisons are held to it too. The error
    names the experiment and the claim."""
    comps = [*outcome.comparisons, *(c for r in outcome.readings for c in r.comparisons)]
    comps += [c for cal in outcome.calibrations for cs in cal.comparisons for c in cs]
    for c in comps:
        if c.needs_source and not c.cited:
            raise ValueError(
                f"experiment {experiment!r}: claim {c.quantity!r} ({c.reference}) says "
                "neither where the paper makes it (source=: its §, Fig., Table, Eq. or "
                "quoted words) nor why it is qoslab's own check (own=)"
            )


@dataclass(frozen=True)
class Reading:
    """One reasonable reading of a choice the paper leaves open: the knob (a scenario key
    or generator parameter, e.g. ``increase``), this reading's value (``name``) and what
    it means (``text``). Exactly one reading per knob is the ``headline``; it carries the
    paper's sentence it is argued from (``argued``)."""

    knob: str
    name: str
    text: str = ""
    headline: bool = False
    argued: str = ""

    def __post_init__(self) -> None:
        if self.headline and not self.argued.strip():
            raise ValueError(
                f"reading {self.knob}={self.name}: a headline reading must quote the "
                "paper's text it is argued from (argued=…)"
            )


@dataclass
class ReadingResult:
    """The comparisons of an experiment's claims under one :class:`Reading`."""

    reading: Reading
    comparisons: list[Comparison]

    def to_dict(self) -> dict[str, Any]:
        """As stored in ``reproduce.json``."""
        r = self.reading
        return {
            "knob": r.knob,
            "reading": r.name,
            "text": r.text,
            "headline": r.headline,
            "argued": r.argued,
            "comparisons": [c.to_dict() for c in self.comparisons],
        }


@dataclass
class Calibration:
    """A parameter the paper does not give and qoslab chose (``chosen``, and ``why``),
    with the comparisons of the claims it touches at each of ``values`` (at least four
    around the chosen one): ``comparisons[i]`` are the claims at ``values[i]``."""

    parameter: str
    chosen: Any
    why: str
    values: list[Any]
    comparisons: list[list[Comparison]]

    def __post_init__(self) -> None:
        if len(self.values) < 4:
            raise ValueError(
                f"calibration {self.parameter!r}: show the verdicts at four or more values "
                f"of the parameter, not {len(self.values)}"
            )
        if len(self.values) != len(self.comparisons):
            raise ValueError(f"calibration {self.parameter!r}: one list of comparisons per value")
        if self.chosen not in self.values:
            raise ValueError(f"calibration {self.parameter!r}: the chosen value is not shown")
        if any(not cs for cs in self.comparisons):
            raise ValueError(f"calibration {self.parameter!r}: every value needs its comparisons")

    def to_dict(self) -> dict[str, Any]:
        """As stored in ``reproduce.json``."""
        return {
            "parameter": self.parameter,
            "chosen": str(self.chosen),
            "why": self.why,
            "values": [str(v) for v in self.values],
            "comparisons": [[c.to_dict() for c in cs] for cs in self.comparisons],
        }


def counterfactual_outcome(explanation: Mapping[str, Any] | None) -> str:
    """What a stored explanation's counterfactual showed, in words: ``lands in the band``,
    ``misses the band``, ``not run``, or that it is another reading / leaves the paper and
    so cannot confirm ("" without a counterfactual)."""
    ex = explanation or {}
    cf = ex.get("counterfactual")
    if not cf:
        return ""
    if cf.get("value") is None:
        return "not run"
    kind = cf.get("kind", "cause")
    if kind == "reading":
        return "another reading of the paper: cannot confirm"
    if kind == "off-paper":
        return "changes what the paper states: cannot confirm"
    return "lands in the band" if ex.get("confirmed") else "misses the band"


def stored_verdict(c: Mapping[str, Any]) -> str:
    """A stored comparison's or ablation's verdict under today's rules: an
    ``outside-explained`` whose explanation was not confirmed by a counterfactual (data
    written before explanations were tested) is ``outside``; an ablation is judged again
    from its stored fall and interval (:func:`ablation_verdict`); one stored as not judged
    (its run lacked what it ``needs``) stays ``not-judged``."""
    v = c.get("verdict", "info")
    if c.get("judged") is False and v != "info":
        return NOT_JUDGED
    if c.get("vacuous") and v != "info":  # a claim whose mechanism never acted
        return "outside"
    if v == "outside-explained" and (c.get("explanation") or {}).get("confirmed") is not True:
        return "outside"
    if "falls_by" in c and "effect_with" in c:
        # An ablation (stored before a tie meant an interval straddling the bound).
        return ablation_verdict(c.get("fall"), c["effect_without"], c["falls_by"],
                                stored_fall_ci(c))  # fmt: skip
    return v


def stored_fall_ci(a: Mapping[str, Any]) -> tuple[float, float] | None:
    """A stored ablation's interval of the fall: as stored, or, in data written before it
    was, from the stored interval of with − without."""
    if a.get("fall_ci"):
        lo, hi = a["fall_ci"]
        return lo, hi
    return _fall_ci(a.get("ci"), a["effect_with"], a.get("fall"))


def count_verdicts(comparisons: list[Mapping[str, Any]]) -> dict[str, int]:
    """Number of comparisons per verdict (every verdict in :data:`VERDICTS` present)."""
    out = dict.fromkeys(VERDICTS, 0)
    for c in comparisons:
        v = stored_verdict(c)
        out[v] = out.get(v, 0) + 1
    return out


STATUSES = ("within", "outside-explained", "tie", "outside", "failed", "skipped")
"""Every status an experiment can get, best first (``skipped``: it could not run here,
e.g. live mode without root; the reason is in the entry)."""


def experiment_status(entry: Mapping[str, Any]) -> str:
    """An experiment's status from its run and its verdicts (comparisons and ablations):
    ``failed``, ``outside`` (some comparison or ablation outside), ``tie`` (a claimed
    order the seeds cannot tell), ``outside-explained`` (misses whose counterfactuals
    landed), or ``within``."""
    if entry.get("status") in ("failed", "skipped"):
        return entry["status"]
    n = count_verdicts([*(entry.get("comparisons") or []), *(entry.get("ablations") or [])])
    for status in ("outside", "tie", "outside-explained"):
        if n.get(status):
            return status
    return "within"


def summarize(index: Mapping[str, Any]) -> dict[str, Any]:
    """Counts over a reproduction (``reproduce.json``): experiments per status,
    comparisons and ablations per verdict; ``ok`` is false when an experiment failed or
    a comparison or ablation is outside or a tie."""
    exps = index.get("experiments", [])
    statuses = dict.fromkeys(STATUSES, 0)
    verdicts = dict.fromkeys(VERDICTS, 0)
    ablations = dict.fromkeys(VERDICTS, 0)
    for e in exps:
        statuses[experiment_status(e)] += 1
        for k, v in count_verdicts(e.get("comparisons") or []).items():
            verdicts[k] = verdicts.get(k, 0) + v
        for k, v in count_verdicts(e.get("ablations") or []).items():
            ablations[k] = ablations.get(k, 0) + v
    ok = (
        statuses["failed"] == 0
        and verdicts["outside"] + verdicts["tie"] == 0
        and ablations["outside"] + ablations["tie"] == 0
    )
    return {"experiments": statuses, "comparisons": verdicts, "ablations": ablations, "ok": ok}


@dataclass
class Outcome:
    """What an experiment returns: comparisons, extra tables, and the run/sweep
    directories it produced (those made through ``ctx`` are added automatically)."""

    comparisons: list[Comparison] = field(default_factory=list)
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    notes: str = ""
    runs: list[Path] = field(default_factory=list)
    sweeps: list[Path] = field(default_factory=list)
    ablations: list[Ablation] = field(default_factory=list)
    readings: list[ReadingResult] = field(default_factory=list)
    calibrations: list[Calibration] = field(default_factory=list)

    def __post_init__(self) -> None:
        knobs: dict[str, list[Reading]] = {}
        for r in self.readings:
            knobs.setdefault(r.reading.knob, []).append(r.reading)
        for knob, rs in knobs.items():
            names = {r.name for r in rs}
            heads = {r.name for r in rs if r.headline}
            if len(names) < 2:
                raise ValueError(f"readings of {knob!r}: run at least two readings side by side")
            if len(heads) != 1:
                raise ValueError(
                    f"readings of {knob!r}: exactly one headline reading, found {sorted(heads)}"
                )
        cals = {c.parameter: c for c in self.calibrations}
        for c in [*self.comparisons, *(x for r in self.readings for x in r.comparisons)]:
            if not c.calibrated:
                continue
            cal = cals.get(c.calibrated)
            shown = cal and [
                (str(v), next((x for x in cs if x.quantity == c.quantity), None))
                for v, cs in zip(cal.values, cal.comparisons, strict=True)
            ]
            if not shown or any(x is None for _, x in shown):
                raise ValueError(
                    f"comparison {c.quantity!r} rests on the calibrated {c.calibrated!r}: "
                    "show it at four or more values of the parameter (a Calibration of "
                    f"{c.calibrated!r} holding this claim at each value)"
                )
            c.shown_at = shown  # type: ignore[assignment]
