"""Causal epistemic consistency, the metrics of one ranking and of many: Kendall tau within the
defeaters, the supporters and all ten, cross-group position (CGP), intra-group clustering (IGC:
silhouette, or the reference's density), their summaries over pairs, and the confusion matrix.

A ranking is ``ranks[i]``: the position (0 = least likely) the judge gave to the intermediate of
intended position ``i`` (0-4 defeaters, 5-9 supporters). The protocol and the run are in
``evaluation.judging.consistency``.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Iterable, Sequence

from causalkg.core.errors import ConfigError


N_ITEMS = 10
INTENDED_LABELS = ("SD2", "SD1", "OD", "WD1", "WD2", "WS2", "WS1", "OS", "SS1", "SS2")
DEFEATERS = tuple(range(0, 5))
SUPPORTERS = tuple(range(5, 10))
LETTERS = "ABCDEFGHIJ"
METRICS = ("tau_supporters", "tau_defeaters", "tau_all", "cgp", "igc")
IGC_VARIANTS = ("silhouette", "density")
DEFAULT_CONJUNCTIONS = ("so", "therefore", "thus", "hence", "because", "since", "as")
DELTA_CAUSAL_COLUMNS = ("ID", "cause", "long_term_effect", "defeater", "supporter")
COMBINED = "combined"

# --- metrics on one ranking ------------------------------------------------------------------


def check_ranks(ranks: Sequence[int], n: int = N_ITEMS) -> list[int]:
    """``ranks`` as a list of ints, checked to be a permutation of 0..n-1 (ValueError if not)."""
    r = [int(x) for x in ranks]
    if sorted(r) != list(range(n)):
        raise ValueError(f"a ranking must be a permutation of 0..{n - 1}, got {list(ranks)}")
    return r


def ranks_from_order(order: Sequence[int]) -> list[int]:
    """From an ordering (``order[p]`` = intended index of the item put at position p) to ranks."""
    ranks = [0] * len(order)
    for position, item in enumerate(order):
        ranks[item] = position
    return check_ranks(ranks, len(order))


def order_from_ranks(ranks: Sequence[int]) -> list[int]:
    """The inverse of ``ranks_from_order``: the intended indices in ranked order."""
    r = check_ranks(ranks, len(ranks))
    order = [0] * len(r)
    for item, position in enumerate(r):
        order[position] = item
    return order


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-a of two sequences without ties: (concordant - discordant) / (n choose 2)."""
    n = len(x)
    if n != len(y) or n < 2:
        raise ValueError("kendall_tau needs two sequences of the same length, at least 2")
    score = 0
    for i in range(n):
        for j in range(i + 1, n):
            s = (x[i] - x[j]) * (y[i] - y[j])
            score += (s > 0) - (s < 0)
    return score / (n * (n - 1) / 2)


def cross_group_position(ranks: Sequence[int], defeaters: Sequence[int] = DEFEATERS,
                         supporters: Sequence[int] = SUPPORTERS) -> float:
    """CGP = 1 - #{(s, d): s ranked below d} / (|S| |D|): 1 when every supporter is ranked above
    every defeater, 0 when every supporter is ranked below every defeater."""
    worst = len(defeaters) * len(supporters)
    if worst == 0:
        return 1.0
    violations = sum(1 for s in supporters for d in defeaters if ranks[s] < ranks[d])
    return 1.0 - violations / worst


def polarity_sequence(ranks: Sequence[int], defeaters: Sequence[int] = DEFEATERS) -> list[int]:
    """The polarity (0 = defeater, 1 = supporter) of the item at each ranked position."""
    d = set(defeaters)
    return [0 if item in d else 1 for item in order_from_ranks(ranks)]


def polarity_change_distance(labels: Sequence[int]) -> list[list[float]]:
    """d(i, j) for positions i < j: the number of polarity changes on the way from i to j that
    go to a polarity other than that of i (changes back to i's polarity do not count); made
    symmetric from the earlier position, as in the reference ``metrics/clustering.py``."""
    n = len(labels)
    dist = [[0.0] * n for _ in range(n)]
    for i in range(n):
        changes = 0
        for j in range(i + 1, n):
            if labels[j] != labels[j - 1] and labels[j] != labels[i]:
                changes += 1
            dist[i][j] = dist[j][i] = float(changes)
    return dist


def silhouette(dist: Sequence[Sequence[float]], labels: Sequence[int]) -> float:
    """Mean silhouette over all samples of a precomputed distance matrix (sklearn's definition:
    s = (b - a) / max(a, b), 0 for a sample alone in its cluster or when a = b = 0)."""
    n = len(labels)
    clusters = sorted(set(labels))
    if len(clusters) < 2:
        raise ValueError("a silhouette needs at least two clusters")
    total = 0.0
    for i in range(n):
        same = [j for j in range(n) if j != i and labels[j] == labels[i]]
        if not same:
            continue  # s = 0
        a = sum(dist[i][j] for j in same) / len(same)
        b = min(
            sum(dist[i][j] for j in range(n) if labels[j] == c) / sum(1 for j in range(n) if labels[j] == c)
            for c in clusters if c != labels[i]
        )
        m = max(a, b)
        total += (b - a) / m if m > 0 else 0.0
    return total / n


def igc_silhouette(ranks: Sequence[int], defeaters: Sequence[int] = DEFEATERS) -> float:
    """IGC: the mean silhouette of the ranked polarity sequence under the polarity-change distance."""
    labels = polarity_sequence(ranks, defeaters)
    return silhouette(polarity_change_distance(labels), labels)


def igc_density(ranks: Sequence[int], defeaters: Sequence[int] = DEFEATERS,
                supporters: Sequence[int] = SUPPORTERS) -> float:
    """The reference's density variant (``calculate_intra_group_clustering``): per group, the
    density n / span of its ranked positions, times (1 - largest gap / span) when there is a gap;
    averaged over the two groups. Positions are those of the group's items in the ranking."""

    def group_score(group: Sequence[int]) -> float:
        positions = sorted(ranks[i] for i in group)
        if len(positions) < 2:
            return 1.0
        max_gap = max(b - a for a, b in zip(positions, positions[1:])) - 1
        span = positions[-1] - positions[0] + 1
        density = len(positions) / span
        return density if max_gap == 0 else density * (1 - max_gap / span)

    return (group_score(defeaters) + group_score(supporters)) / 2


def pair_metrics(ranks: Sequence[int], *, igc: str = "silhouette") -> dict[str, float]:
    """The five figures for one ranking (``ranks[i]`` = position given to intended item i)."""
    r = check_ranks(ranks)
    if igc not in IGC_VARIANTS:
        raise ConfigError(f"unknown IGC variant {igc!r}", hint=f"choose one of: {', '.join(IGC_VARIANTS)}")
    return {
        "tau_supporters": kendall_tau(list(SUPPORTERS), [r[i] for i in SUPPORTERS]),
        "tau_defeaters": kendall_tau(list(DEFEATERS), [r[i] for i in DEFEATERS]),
        "tau_all": kendall_tau(list(range(N_ITEMS)), r),
        "cgp": cross_group_position(r),
        "igc": igc_silhouette(r) if igc == "silhouette" else igc_density(r),
    }


def summarize(per_pair: Sequence[dict[str, float]]) -> dict[str, dict[str, float | None]]:
    """Mean and sample standard deviation of each metric over pairs (std None below two pairs)."""
    out: dict[str, dict[str, float | None]] = {}
    for m in METRICS:
        values = [p[m] for p in per_pair]
        out[m] = {
            "mean": statistics.fmean(values) if values else None,
            "std": statistics.stdev(values) if len(values) >= 2 else None,
        }
    return out


def confusion_matrix(rankings: Iterable[Sequence[int]]) -> list[list[int]]:
    """counts[i][p]: how often the intermediate of intended position i was ranked at position p."""
    counts = [[0] * N_ITEMS for _ in range(N_ITEMS)]
    for ranks in rankings:
        for i, p in enumerate(check_ranks(ranks)):
            counts[i][p] += 1
    return counts


def plot_confusion(counts: Sequence[Sequence[int]], path: str | Path, title: str) -> Path:
    """Draw the confusion matrix (rows: intended position, columns: ranked position) as a PNG."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    try:
        im = ax.imshow(counts, cmap="Blues")
        top = max((max(row) for row in counts), default=0)
        for i, row in enumerate(counts):
            for j, v in enumerate(row):
                ax.text(j, i, str(v), ha="center", va="center", fontsize=8,
                        color="white" if top and v > top / 2 else "black")
        ax.set_xticks(range(N_ITEMS), [str(p) for p in range(N_ITEMS)])
        ax.set_yticks(range(N_ITEMS), list(INTENDED_LABELS))
        ax.set_xlabel("ranked position (0 = makes the effect least likely)")
        ax.set_ylabel("intended position")
        ax.axhline(4.5, color="grey", lw=0.8)
        ax.axvline(4.5, color="grey", lw=0.8)
        ax.set_title(title, fontsize=10)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        fig.tight_layout()
        tmp = path.with_name(f".{path.name}.tmp.png")
        fig.savefig(tmp, dpi=120)
        tmp.replace(path)
    finally:
        plt.close(fig)
    return path
