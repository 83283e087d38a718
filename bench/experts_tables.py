"""Time `judge-eval experts` at the size of the full POLLUX test: ~160,000 items, ~470,000 expert estimates.

    .venv/bin/python bench/experts_tables.py
    .venv/bin/python bench/experts_tables.py --items 40000        # example override

The data is bench/eval_metrics.py's seeded synthetic table written as POLLUX-format JSONL (2-5 experts per item, the
taxonomy's 35 task types and 60 criterion names, 11 evaluated models). One process: it prints the wall and CPU time
of loading the records as `judge-eval experts` loads them (``judge.load_record_columns``; ``--objects``: as
``JudgeRecord`` objects, ``judge.load_records``, what other stages such as `judge-eval run` read), of
``eval.experts.tables.expert_tables`` and of writing experts_tables.csv and experts.md.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=160_000, help="items (default: the full POLLUX test)")
    parser.add_argument("--objects", action="store_true", help="load JudgeRecord objects (judge.load_records)")
    args = parser.parse_args(argv)

    import judge
    from bench.eval_metrics import synthetic_table, write_files
    from eval.experts.tables import expert_tables, summary_line, write_expert_tables

    with tempfile.TemporaryDirectory() as tmp:
        data, _ = write_files(synthetic_table(args.items), Path(tmp))
        stages = {}
        load = (lambda: judge.load_records(data)) if args.objects or not hasattr(judge, "load_record_columns") \
            else (lambda: judge.load_record_columns(data)[0])
        for name, step in (("load records", load),
                           ("expert_tables", lambda: expert_tables(records)),
                           ("write csv + md", lambda: write_expert_tables(result, Path(tmp) / "out"))):
            wall, cpu = time.perf_counter(), time.process_time()
            value = step()
            stages[name] = (time.perf_counter() - wall, time.process_time() - cpu)
            if name == "load records":
                records = value
            elif name == "expert_tables":
                result = value
        print(f"{args.items} items: {summary_line(result)}")
        for name, (wall, cpu) in stages.items():
            print(f"{name:>16}: {wall:6.2f} s wall, {cpu:6.2f} s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
