"""How often the length slope's clustered 95% interval covers a true slope of 0, by the number of answers.

    .venv/bin/python bench/slope_coverage.py    # performance.md
    .venv/bin/python bench/slope_coverage.py --tables 500 --answers 3 30        # example override

The evidence behind ``eval.validity.bias.MIN_SLOPE_ANSWERS``: the length is one value per answer, so the slope's
interval (``eval.validity.bias.cluster_slope``, clustered by answer, t at G - 2 degrees of freedom) has as many
degrees of freedom as answers less two, and over few answers it is too narrow even so. Each simulated table has G
answers of ``--rows`` rows (an answer scored on several criteria), the answer's log length drawn once per answer, a
true slope of 0, the answer's own error of standard deviation 0.5 and each row's of 1. Printed per G: the share of
``--tables`` seeded tables whose interval holds 0, at G - 2 (the toolkit's) and at G - 1 degrees of freedom
(statsmodels' choice: the same standard error, a smaller t quantile). Seeded: the same command prints the same
shares.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ANSWERS = (3, 4, 6, 10, 20, 30, 50)


def coverage(n_answers: int, n_tables: int, rows: int, seed: int) -> tuple[float, float]:
    """The share of ``n_tables`` simulated tables of ``n_answers`` answers whose interval covers the true slope 0, at
    G - 2 and at G - 1 degrees of freedom."""
    import numpy as np
    from scipy.stats import t as student_t

    from eval.validity.bias import cluster_slope

    rng = np.random.default_rng([seed, n_answers])
    clusters = np.repeat(np.arange(n_answers), rows)
    # G - 1's half-width from G - 2's: the same standard error, the other t quantile
    widen = float(student_t.ppf(0.975, n_answers - 1) / student_t.ppf(0.975, n_answers - 2))
    held = held_g1 = 0
    for _ in range(n_tables):
        x = np.repeat(rng.normal(size=n_answers), rows)
        y = np.repeat(rng.normal(scale=0.5, size=n_answers), rows) + rng.normal(size=n_answers * rows)
        found = cluster_slope(x, y, clusters)
        low, high = found["ci"]
        half = (high - low) / 2
        held += abs(found["slope"]) <= half
        held_g1 += abs(found["slope"]) <= half * widen
    return held / n_tables, held_g1 / n_tables


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=2000, help="simulated tables per answer count (default 2000)")
    parser.add_argument("--answers", type=int, nargs="+", default=list(ANSWERS),
                        help=f"answer counts G, each at least 3 (default: {' '.join(map(str, ANSWERS))})")
    parser.add_argument("--rows", type=int, default=10, help="rows (criteria) per answer (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="the simulation's seed (default 0)")
    args = parser.parse_args(argv)
    if min(args.answers) < 3 or args.tables < 1 or args.rows < 1:
        parser.error("--answers must each be at least 3 (G - 2 degrees of freedom), --tables and --rows at least 1")
    print(f"coverage of a true slope of 0 by the 95% interval, {args.tables} tables per row, {args.rows} rows per "
          f"answer, seed {args.seed}")
    print("answers  at G-2 (toolkit)  at G-1")
    for n_answers in args.answers:
        at_g2, at_g1 = coverage(n_answers, args.tables, args.rows, args.seed)
        print(f"{n_answers:>7}  {at_g2:>16.1%}  {at_g1:>6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
