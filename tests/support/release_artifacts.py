"""The released POLLUX benchmark (dataset ``ai-forever/POLLUX``) rebuilt in miniature, for tests.

Same column names, Arrow types and folder layout as the hub's copy (the ``ai-forever/POLLUX`` dataset): three Parquet
shards ``data/test-0000k-of-00003.parquet``, no ``id`` column, the experts in ``annotations`` as
``list<struct<comment: string, score: double>>`` with ``-1`` for an abstention, Russian task-type names, ``""`` (never
null) for a missing reference answer or task level.

    from tests.support.release_artifacts import write_released_dataset
    folder = write_released_dataset(tmp_path / "POLLUX")      # -> folder; judge.load_records(folder) reads it

The default rows (``released_rows()``) use real taxonomy criteria and task types, 1-5 experts, some abstentions, one
row whose experts all abstained, one exact duplicate, code answers that end in "\\n" and fields with leading and
trailing spaces and newlines. Tests that need other rows pass their own (``released_row`` builds one).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from judge import load_taxonomy

__all__ = ["RELEASED_SCHEMA", "N_SHARDS", "released_row", "released_rows", "write_released_dataset"]

#: The released dataset's columns, in its order, with their Arrow types.
RELEASED_SCHEMA = pa.schema([
    ("instruction", pa.string()),
    ("reference_answer", pa.string()),
    ("answer", pa.string()),
    ("model_id", pa.string()),
    ("task_type", pa.string()),
    ("task_subtype", pa.string()),
    ("task_subsubtype", pa.string()),
    ("difficulty", pa.string()),
    ("domain", pa.string()),
    ("is_provocative", pa.bool_()),
    ("criteria_name", pa.string()),
    ("criteria_description", pa.string()),
    ("rubrics", pa.string()),
    ("rubrics_example", pa.string()),
    ("annotations", pa.list_(pa.struct([("comment", pa.string()), ("score", pa.float64())]))),
    ("criteria_score", pa.float64()),
])
N_SHARDS = 3
#: The abstention comment of a public row of the released dataset.
NOT_APPLICABLE = "Запрос не предполагает дальнейшего продолжения диалога"


def released_row(
    task_path: tuple[str, ...],
    criterion_id: str,
    annotations: list[tuple[float, str]],
    *,
    instruction: str,
    answer: str,
    reference_answer: str = "",
    model_id: str = "gpt4",
    difficulty: str = "Medium",
    domain: str = "Общий",
    is_provocative: bool = False,
    rubrics_example: str = "",
    criteria_score: float | None = None,
) -> dict[str, Any]:
    """One row in the released layout.

    Args:
        task_path: English names along a taxonomy leaf (``("Code creation", "Python")``); the row carries the leaf's
            Russian names, ``""`` for absent levels, as the release does.
        criterion_id: a taxonomy criterion id; the row carries its Russian name, description and rubric text.
        annotations: (score, comment) per expert, ``-1`` for an abstention.
        criteria_score: the released aggregate (default: the mean over non-abstaining experts, ``-1`` if none).
    """
    taxonomy = load_taxonomy()
    (leaf,) = [t for t in taxonomy.tasks if t.path == task_path]
    names = list(leaf.names_ru[1:]) + ["", ""]
    crit = taxonomy.criteria[criterion_id]
    if criterion_id not in leaf.criteria:
        raise ValueError(f"{criterion_id} is not a criterion of {task_path}")
    scores = [s for s, _ in annotations if s != -1]
    if criteria_score is None:
        criteria_score = sum(scores) / len(scores) if scores else -1.0
    return {
        "instruction": instruction,
        "reference_answer": reference_answer,
        "answer": answer,
        "model_id": model_id,
        "task_type": names[0],
        "task_subtype": names[1],
        "task_subsubtype": names[2],
        "difficulty": difficulty,
        "domain": domain,
        "is_provocative": is_provocative,
        "criteria_name": crit.name["ru"],
        "criteria_description": crit.description["ru"],
        "rubrics": crit.rubric("ru"),
        "rubrics_example": rubrics_example,
        "annotations": [{"comment": comment, "score": float(score)} for score, comment in annotations],
        "criteria_score": float(criteria_score),
    }


def released_rows() -> list[dict[str, Any]]:
    """Nine rows: eight items and, last, an exact duplicate of the first."""
    code = "def total(xs):\n    return sum(xs)\n"
    rows = [
        # The publicly dumped row's shape: three experts, the second abstains, criteria_score 0.0.
        released_row(("Creative brainstorming", "Literary brainstorming"), "proactivity",
                     [(0, "Модель не предлагает продолжить работу."), (-1, NOT_APPLICABLE),
                      (0, "Нет уточняющих вопросов и предложений.")],
                     instruction="Придумай три сюжета для рассказа о маяке.",
                     answer="1. Смотритель находит письмо.\n2. Маяк гаснет в шторм.\n3. Девочка учится азбуке Морзе.",
                     domain="Художественный", criteria_score=0.0),
        # Technical Problems items have a single annotator; code answers end in "\n".
        released_row(("Code creation", "Python"), "operability__5", [(1, "Код запускается и работает верно.")],
                     instruction="Напиши функцию на Python, которая суммирует список.\n",
                     answer="```python\n" + code + "```\n", reference_answer=code, model_id="llama",
                     difficulty="Easy"),
        released_row(("Code modification", "Python"), "correct_answer__28", [(0, "Функция по-прежнему падает на пустом списке.")],
                     instruction="Исправь ошибку:\n\n" + code.replace("sum(xs)", "xs[0] + sum(xs[1:])"),
                     answer=code, reference_answer=code, model_id="gigachat", difficulty="Hard"),
        # Five experts, one abstaining, on a Zero-Shot criterion; fields with leading/trailing spaces and newlines.
        released_row(("Literary text", "Poetry"), "rhyme_quality__3",
                     [(2, "Рифмы точные."), (1, "Одна рифма глагольная."), (-1, "Не могу оценить."),
                      (2, "Рифмовка выдержана."), (1, "Есть неточные рифмы.")],
                     instruction="  Напиши четверостишие про осень.  ",
                     answer="\n\nЛиства летит, шурша, с ветвей,\nИ дождь стучит всё веселей.\n  ",
                     domain="Художественный", rubrics_example="2: «ветвей — веселей»"),
        # Every expert abstained: kept, unlabelled for metrics; the release's aggregate is -1 here.
        released_row(("Formal setting", "Expert interview"), "character", [(-1, NOT_APPLICABLE), (-1, "Неприменимо.")],
                     instruction="Ты — историк. Ответь на вопрос журналиста о Петре I.",
                     answer="Пётр I провёл реформы армии и флота.", is_provocative=True),
        released_row(("Formal setting", "Expert interview"), "grammar",
                     [(2, "Ошибок нет."), (2, "Текст грамотный.")],
                     instruction="Ты — историк. Ответь на вопрос журналиста о Петре I.",
                     answer="Пётр I провёл реформы армии и флота.", is_provocative=True),
        released_row(("Editing",), "repeats", [(1, "Повторов нет."), (1, "Всё хорошо."), (0, "Повторяется слово «очень».")],
                     instruction="Отредактируй текст: «Очень очень хороший день».",
                     answer="Очень хороший день.", model_id="yandexgpt", difficulty="Easy"),
        released_row(("Editing",), "proactivity", [(0, "Не предлагает вариантов.")],
                     instruction="Отредактируй текст: «Очень очень хороший день».",
                     answer="Очень хороший день.", model_id="yandexgpt", difficulty="Easy"),
    ]
    rows.append(dict(rows[0]))  # an exact duplicate row, as a crawl of a large table can hold
    return rows


def write_released_dataset(folder: str | Path, rows: list[dict[str, Any]] | None = None, n_shards: int = N_SHARDS) -> Path:
    """Write rows as the hub lays the dataset out: ``<folder>/data/test-0000k-of-0000n.parquet``.

    Rows are spread over the shards in order, as evenly as possible (a shard may be empty when there are fewer rows
    than shards). Returns ``folder``.
    """
    folder = Path(folder)
    rows = released_rows() if rows is None else rows
    (folder / "data").mkdir(parents=True, exist_ok=True)
    per_shard = -(-len(rows) // n_shards) if rows else 0
    for k in range(n_shards):
        chunk = rows[k * per_shard:(k + 1) * per_shard]
        table = pa.Table.from_pylist(chunk, schema=RELEASED_SCHEMA)
        pq.write_table(table, folder / "data" / f"test-{k:05d}-of-{n_shards:05d}.parquet")
    return folder


#: Items in ``released_rows()``: the last row is an exact duplicate of the first.
N_ITEMS = len(released_rows()) - 1


def judge_and_score(server, data: Path, out: Path, monkeypatch) -> dict:
    """`judge-eval run` against a served judge (format forced by structured outputs: a random tiny model rarely
    finishes a verdict otherwise), then `judge-eval score`; returns metrics.json."""
    from eval.cli import main
    from eval.judging.predictions import read_predictions

    monkeypatch.setenv("TEST_JUDGE_KEY", server.api_key)
    assert main(["run", "--judge", server.base_url, "--api-key-env", "TEST_JUDGE_KEY", "--data", str(data),
                 "--out", str(out), "--no-progress", "--max-tokens", "48", "--extra-body", '{"constrained": true}']) == 0
    assert len(read_predictions(out)) == N_ITEMS
    assert main(["score", "--predictions", str(out), "--n-boot", "50", "--no-plots"]) == 0
    return json.loads((out / "metrics.json").read_text(encoding="utf-8"))


def assert_paper_and_pollux_figures(metrics: dict, *, regression: bool = False) -> dict | None:
    """Non-empty paper metrics over the released items, the all-abstained item reported, POLLUX's figures beside;
    ``regression``: a head's scores, which POLLUX's evaluator cannot read (no section: None)."""
    overall = metrics["splits"]["all"]["overall"]
    assert overall["n"] == N_ITEMS and overall["n_request_failed"] == 0
    assert overall["n_scored"] > 0 and math.isfinite(overall["mae"])
    assert overall["n_all_abstained"] == 1  # "every expert abstained": unlabelled, counted, never an error
    if regression:
        assert "pollux_official" not in metrics
        return None
    official = metrics["pollux_official"]["splits"]["all"]
    # the all-abstained item has no criteria_score (the release's -1 aggregate) and no expert score: POLLUX's
    # evaluator cannot compare it, so it is left out and counted
    assert (official["n"], official["n_no_reference"]) == (N_ITEMS - 1, 1)
    assert 0.0 <= official["format_acc"] <= 1.0 and math.isfinite(official["mse"])
    return official
