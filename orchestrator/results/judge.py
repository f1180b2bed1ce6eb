"""The judge: the one rule by which every "A differs from B" of this project is decided.

The report's crowns, `bench compare`'s regressions, the network report's "overtakes", the resource
tables and the capacity summary all call `lead` on the repeats of two cells (each repeat a fresh JVM).

The rule is Welch's t on the logarithms of the repeats. Logarithms, because run-to-run noise is a
proportion of the figure (a CV) and a lead is a ratio; Welch, because two frameworks need not be
equally noisy, and with equal noise its interval is a little conservative at 2-3 repeats, which is
the side to err on. A bootstrap of the median (the rule before) takes three values with 2 repeats,
so two ranges that did not overlap were crowned: 31.5 % false crowns at 2 + 2 repeats and 10 % at
3 + 3 between identical targets. This rule's rates, simulated through `analysis.leaders` and
`compare.compare_runs` (tests/results/test_judge.py), stay under 5 % at 2, 3 and 5 repeats a side.

Noise lives where it was measured. A side with OWN_NOISE or more repeats is judged by its own spread
alone. With fewer, the machine's noise floor (`bench noise`) may widen it, never narrow it, and only
a floor measured on the same scenario and metric (`Floor`); the degrees of freedom stay the side's
own, so that a floor that understates the cell's noise cannot buy a crown. A single repeat is
judged by such a floor alone, or not at all.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from orchestrator import lazy

np = lazy.module("numpy")
pd = lazy.module("pandas")

ALPHA = 0.05       # two-sided: a 95 % interval
POWER = 0.8        # the minimum detectable effect is found 8 times in 10
OWN_NOISE = 3      # repeats from which a side's noise is its own alone
TYPICAL_CV = 0.10  # a fresh JVM's run-to-run CV on a shared machine, for a plan not yet measured
MAX_REPEATS = 100


@dataclass(frozen=True)
class Floor:
    """The noise floor of one scenario and metric on one machine: the CV of n A/A repeats."""
    cv: float
    n: int
    what: str = ""   # where it was measured, in words

    @property
    def var(self) -> float:
        """The variance of log values with this CV (log-normal)."""
        return math.log1p(self.cv ** 2)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-14:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_p_value(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with df degrees of freedom (no scipy here)."""
    if math.isinf(t):
        return 0.0
    return _betai(df / 2, 0.5, df / (df + t * t))


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The t with P(|T| > t) = p: the two-sided critical value. Newton's method on log p from the
    normal quantile (Cornish-Fisher), kept inside a bracket that halves when a step leaves it."""
    z = _z(p)
    x = z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
    lo, hi = 0.0, math.inf
    for _ in range(60):
        q = t_p_value(x, df)
        if abs(q - p) <= 1e-12 * p:
            break
        lo, hi = (x, hi) if q > p else (lo, x)
        density = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
                           - (df + 1) / 2 * math.log1p(x * x / df))
        step = x + (math.log(q) - math.log(p)) * q / (2 * density)
        x = step if lo < step < hi else (lo + hi) / 2 if hi < math.inf else 2 * x
    return x


@functools.lru_cache(maxsize=256)
def _z(p: float) -> float:
    """The two-sided normal critical value: P(|Z| > z) = p, by bisection on erfc."""
    lo, hi = 0.0, 40.0
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if math.erfc(mid / math.sqrt(2)) > p else (lo, mid)
    return hi


def _side(values, floor: Floor | None) -> tuple[float, float, float]:
    """(mean of logs, variance of logs, degrees of freedom) of one side; variance NaN when unknown."""
    logs = np.log(values)
    n = len(logs)
    own = float(logs.var(ddof=1)) if n >= 2 else math.nan
    if n >= OWN_NOISE or floor is None:
        return float(logs.mean()), own, n - 1.0
    if n == 2:
        return float(logs.mean()), max(own, floor.var), 1.0   # the floor widens, the df stay the side's
    return float(logs.mean()), floor.var, max(floor.n - 1.0, 1.0)


@dataclass(frozen=True)
class Lead:
    """How a compares with b: the geometric means' ratio a / b, its (1 - alpha) interval and p."""
    n_a: int
    n_b: int
    ratio: float = math.nan
    low: float = math.nan
    high: float = math.nan
    p: float = math.nan
    se: float = math.nan   # standard error of log(ratio)
    df: float = math.nan
    sigma: float = math.nan   # the noisier side's noise per repeat (sd of logs)
    why: str = ""          # why there is no interval ('' when there is one)

    @property
    def beyond_noise(self) -> bool:
        """The interval excludes a tie."""
        return self.low > 1 or self.high < 1

    def mde_pct(self, alpha: float = ALPHA) -> float:
        """The smallest lead, in %, that repeats as many and as noisy as these find 8 times in 10."""
        return mde_pct(self.se, self.df, alpha)

    def repeats_for(self, effect_pct: float, alpha: float = ALPHA) -> int:
        """Repeats a side with which a lead of effect_pct % is found 8 times in 10, both sides as noisy
        as the noisier one here; more than these when they did not find it (they are the evidence)."""
        found = self.beyond_noise and abs(100 * (self.ratio - 1)) >= effect_pct
        least = 2 if found else max(self.n_a, self.n_b) + 1
        return max(least, repeats_needed(effect_pct, math.sqrt(math.expm1(self.sigma ** 2)), alpha))


def unknown_noise(n_a: int, n_b: int, where: str = "") -> str:
    """Why a lead has no interval: too few repeats and no floor of its own scenario and metric."""
    return (f"needs {OWN_NOISE} repeats a side ({n_a}+{n_b} here, and no noise floor{where}: "
            f"run `bench noise` or more repeats)")


def lead(a, b, floor: Floor | None = None, alpha: float = ALPHA, where: str = "") -> Lead:
    """The lead of a's repeats over b's (see the module's docstring); `floor` only when measured on
    their scenario and metric; `where` names them in the reason when there is no interval."""
    a, b = (np.asarray(v, dtype=float) for v in (a, b))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if not len(a) or not len(b):
        return Lead(len(a), len(b), why="no repeats on one side")
    if (a <= 0).any() or (b <= 0).any():
        # a ratio to 0 (no GC, no errors) is no proportion: equal only when both are all 0
        same = (a == 0).all() and (b == 0).all()
        return Lead(len(a), len(b), *((1.0, 1.0, 1.0, 1.0) if same else ()), why="" if same else "a figure of 0")
    (ma, va, da), (mb, vb, db) = _side(a, floor), _side(b, floor)
    if math.isnan(va) or math.isnan(vb):
        return Lead(len(a), len(b), ratio=math.exp(ma - mb), why=unknown_noise(len(a), len(b), where))
    wa, wb = va / len(a), vb / len(b)
    se = math.sqrt(wa + wb)
    # Welch-Satterthwaite; identical repeats on both sides leave the df their sum
    df = se ** 4 / (wa ** 2 / da + wb ** 2 / db) if se else da + db
    diff = ma - mb
    t = abs(diff) / se if se else (math.inf if diff else 0.0)
    half = t_quantile(alpha, df) * se
    return Lead(len(a), len(b), math.exp(diff), math.exp(diff - half), math.exp(diff + half),
                t_p_value(t, df), se, df, math.sqrt(max(va, vb)))


def mde_pct(se: float, df: float, alpha: float = ALPHA) -> float:
    """The minimum detectable effect in %: the smallest ratio of two geometric means that a two-sided
    test at alpha finds with POWER, given the standard error of the log ratio and its df."""
    if math.isnan(se) or math.isnan(df):
        return math.nan
    return 100 * math.expm1(min((t_quantile(alpha, df) + t_quantile(2 * (1 - POWER), df)) * se, 700))


def _df(n: int) -> float:
    """The df of n repeats a side of equal noise: Welch's at best."""
    return 2.0 * (n - 1)


def planned_mde_pct(n: int, cv: float = TYPICAL_CV, alpha: float = ALPHA) -> float:
    """The MDE of n repeats a side, each with this CV (NaN for 1 repeat: no spread to judge by)."""
    if n < 2:
        return math.nan
    return mde_pct(math.sqrt(math.log1p(cv ** 2) * 2 / n), _df(n), alpha)


def repeats_needed(effect_pct: float, cv: float = TYPICAL_CV, alpha: float = ALPHA) -> int:
    """The fewest repeats a side (at least 2) with which a lead of effect_pct % at noise cv is found 8
    times in 10; MAX_REPEATS when even that many would not."""
    n = 2
    while n < MAX_REPEATS and not planned_mde_pct(n, cv, alpha) <= effect_pct:
        n += 1
    return n


def plan_notice(repeats: int, comparisons: int = 1, cv: float = TYPICAL_CV, alpha: float = ALPHA,
                effect_pct: float = 10.0) -> str:
    """What a plan of `repeats` a side can tell, in one line, before it measures anything."""
    family = alpha / max(1, comparisons)   # `bench compare` holds the family-wise error (Holm)
    need_crown, need_compare = repeats_needed(effect_pct, cv, alpha), repeats_needed(effect_pct, cv, family)
    needs = (f"a {effect_pct:g} % lead needs {need_crown} repeats a side to be crowned, and {need_compare} "
             f"to be a regression in `bench compare` over its {comparisons} comparisons")
    if repeats < 2:
        return (f"judge: 1 repeat a side crowns nothing and compares nothing without a noise floor of the same "
                f"scenario (`bench noise`); at a typical CV of {100 * cv:g} %, {needs}")
    return (f"judge: with {repeats} repeats a side and a CV of {100 * cv:g} %, the report crowns leads above "
            f"about {planned_mde_pct(repeats, cv, alpha):.0f} % and `bench compare` over {comparisons} comparisons "
            f"calls changes above about {planned_mde_pct(repeats, cv, family):.0f} % (8 times in 10); {needs}")


def holm(p: pd.Series) -> pd.Series:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN): the k-th smallest of m is multiplied by
    m - k + 1, then made monotone, so that p_adjusted < alpha holds the family-wise error at alpha."""
    known = p.dropna().sort_values()
    m = len(known)
    adjusted = (known * np.arange(m, 0, -1)).cummax().clip(upper=1.0)
    return adjusted.reindex(p.index)
