"""Synthetic judge-training data, the way the POLLUX judges' data was built (paper §3.1, App. C.3, M.1).

Five resumable stages, each a ``judge-train data <stage>`` command reading the previous stage's folder:

    judge-train data instructions --config configs/data/instructions.yaml --output runs/data/instructions
    judge-train data dedup        --config configs/data/dedup.yaml        --input runs/data/instructions --output runs/data/dedup
    judge-train data answers      --config configs/data/answers.yaml      --input runs/data/dedup        --output runs/data/answers
    judge-train data annotate     --config configs/data/annotate.yaml     --input runs/data/answers      --output runs/data/annotate
    judge-train data split        --config configs/data/split.yaml        --input runs/data/annotate     --output runs/data/split

Modules by role: ``config`` (dataclasses mirrored by ``configs/data/*.yaml``), ``client`` (OpenAI-compatible
endpoints with retries, backoff and concurrency), ``journal`` (resumable job journal and stage outputs),
``generation``, ``dedup``, ``answers``, ``annotate``, ``splitting`` (one per stage) and ``cli``.
"""
