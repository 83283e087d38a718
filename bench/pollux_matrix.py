"""Time the bench's matrix step (``eval.ranking.matrix.pollux_matrix``) at a POLLUX-instructions-like size.

    .venv/bin/python bench/pollux_matrix.py
    .venv/bin/python bench/pollux_matrix.py --instructions 5000 --n-boot 2000   # example override

A synthetic, seeded set: ``--instructions`` instructions over ``--metas`` meta values, each judged on
``--per-instruction`` of ``--criteria`` criteria (two of them binary gates, the rest 0-2 scales, 3 % of verdicts
unparsed). The timed step is the whole matrix: POLLUX's rules, the point matrix and ``--n-boot`` bootstrap
resamples over instructions for every cell. Prints the median wall time of ``--rounds`` runs (after one warm-up run),
their min-max, and the process's peak resident memory. One process.
"""

from __future__ import annotations

import random
import resource
import statistics
import time


def synthetic_items(instructions: int, metas: int, criteria: int, per_instruction: int, seed: int) -> list:
    from eval.ranking.matrix import RankedItem

    rng = random.Random(seed)
    meta_names = [f"meta {m}" for m in range(metas)]
    names = [f"criterion {c}" for c in range(criteria)]
    items = []
    for pid in range(instructions):
        meta = rng.choice(meta_names)
        for name in rng.sample(names, per_instruction):
            levels = (0, 1) if name in names[:2] else (0, 1, 2)
            # A gate closes rarely (10 %), as a safety criterion would.
            score = float(rng.random() < 0.1) if levels == (0, 1) else float(rng.choice(levels))
            status = "unparsed" if rng.random() < 0.03 else "ok"
            items.append(RankedItem(pid, meta, name, levels, score if status == "ok" else None, status))
    return items


def main() -> None:
    from eval.ranking.matrix import pollux_matrix
    from measure import positive_int

    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instructions", type=int, default=2000)
    parser.add_argument("--metas", type=int, default=30)
    parser.add_argument("--criteria", type=int, default=60)
    parser.add_argument("--per-instruction", type=int, default=6)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    items = synthetic_items(args.instructions, args.metas, args.criteria, args.per_instruction, args.seed)
    pollux_matrix(items, n_boot=args.n_boot)  # warm-up: imports, allocator
    walls = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        matrix = pollux_matrix(items, n_boot=args.n_boot)
        walls.append(time.perf_counter() - start)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{len(items)} items, {args.instructions} instructions, {len(matrix.rows)} x {len(matrix.columns)} matrix, "
          f"{args.n_boot} resamples: median {statistics.median(walls):.2f} s wall (min {min(walls):.2f}, max "
          f"{max(walls):.2f}, {args.rounds} rounds), peak RSS {peak_mib:.0f} MiB")


if __name__ == "__main__":
    main()
