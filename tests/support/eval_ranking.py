"""What tests/unit/test_eval_ranking.py and tests/integration/serving/test_eval_ranking.py share."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.ranking.rank import strip_think
from tests.support.release_instructions import instruction_row, write_instructions_dataset
from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

GEN, TECH = "Генерация текста", "Технические проблемы"  # meta values; sorted: Г (U+0413) before Т (U+0422)
# Criteria, sorted as POLLUX's pivot_table sorts them: Б (U+0411) < Г (U+0413) < П (U+041F).
SAFE, LITERACY, FULLNESS = "Безопасность", "Грамотность", "Полнота"
RUBRICS = {
    SAFE: "0: Ответ безопасен.\n\n1: Ответ содержит опасные сведения.",  # levels {0, 1}: binary, a gate
    LITERACY: "0: Много ошибок.\n\n1: Есть ошибки.\n\n2: Ошибок нет.",  # 0..2
    FULLNESS: "1: Задание не выполнено.\n\n2: Выполнено частично.\n\n3: Выполнено полностью.",  # 1..3: min 1
}

# prompt_id -> (meta, criteria, candidate output, {criterion: judge output})
CASES = {
    1: (GEN, [LITERACY, SAFE, FULLNESS], "<think>план ответа</think>\nОтвет один.",
        {LITERACY: 2, SAFE: 0, FULLNESS: 3}),
    2: (GEN, [LITERACY, SAFE, FULLNESS], "Ответ два.", {LITERACY: 1, SAFE: 1, FULLNESS: 2}),  # the gate closes
    3: (TECH, [LITERACY, FULLNESS], "Ответ три.", {LITERACY: 1, FULLNESS: 2}),
    4: (TECH, [LITERACY, SAFE, FULLNESS], "Ответ четыре.", {LITERACY: 0, SAFE: 0, FULLNESS: 5}),  # 5: out of scale
    5: (TECH, [LITERACY, FULLNESS], "Ответ пять.", {LITERACY: None, FULLNESS: 2}),  # None: no [RESULT]
    6: (TECH, [LITERACY, FULLNESS], "<think>рассуждение, обрезанное лимитом", {}),  # empty once stripped
    7: (TECH, [LITERACY], "Ответ семь.", {LITERACY: 1}),
}


def instruction_rows() -> list[dict]:
    return [instruction_row(pid, f"Инструкция {pid}: напиши текст.", meta,
                            [(c, RUBRICS[c]) for c in criteria], reference_answer=None if pid == 3 else f"Эталон {pid}")
            for pid, (meta, criteria, _, _) in CASES.items()]


def tagged_verdict(score: int | None) -> str:
    return "[FEEDBACK] Обоснование. [END]" if score is None else f"[FEEDBACK] Обоснование. [RESULT] {score} [END]"


def rank_argv(candidate: str, judge: str, data: Path, out: Path, *extra: str) -> list[str]:
    return ["rank", "--model", candidate, "--judge", judge, "--data", str(data), "--out", str(out), "--no-progress",
            "--n-boot", "200", "--max-retries", "0", *extra]


def instructions_dataset(root: Path) -> Path:
    """The instructions dataset of :func:`instruction_rows`, written at ``root / "POLLUX-instructions"``."""
    return write_instructions_dataset(root / "POLLUX-instructions", instruction_rows())


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return instructions_dataset(tmp_path)


class Candidate(ScriptedEndpoint):
    """The candidate LLM: answers instruction k with CASES[k]'s output (or ``override``); ``fail`` ids answer 500."""

    def __init__(self, fail: set[int] = frozenset(), override: dict[int, str] | None = None):
        self.fail, self.override = set(fail), override or {}
        # A window answer.py's 4096 tokens fit in (with 4096 the bench would fit max_tokens to it, with a note).
        super().__init__(self._respond, model="cand-model", max_model_len=32768)

    def _respond(self, path: str, body: dict):
        pid = int(body["messages"][0]["content"].split(":")[0].split()[-1])
        if pid in self.fail:
            return 500, {"error": {"message": "engine down"}}
        text = self.override.get(pid, CASES[pid][2])
        return 200, chat_completion(text, body["model"], "length" if pid == 6 else "stop")


class Judge(ScriptedEndpoint):
    """The judge: a chat server (``/v1/judge`` is 404, as on vLLM) scoring by (answer, criterion) from ``table``."""

    def __init__(self, table: dict[tuple[str, str], int | None]):
        self.table = table
        super().__init__(self._respond, model="pollux-judge-7b")

    def _respond(self, path: str, body: dict):
        if path != "/v1/chat/completions":
            return 404, {"detail": "Not Found"}
        prompt = body["messages"][0]["content"]
        answer = prompt.split("### Ответ для оценки:\n")[1].split("\n\n### Критерий оценки:")[0]
        criterion = prompt.split("### Критерий оценки:\n")[1].split("\n\n")[0]
        return 200, chat_completion(tagged_verdict(self.table[(answer, criterion)]), body["model"])


def scores_by_output() -> dict[tuple[str, str], int | None]:
    return {(strip_think(out)[0], c): s for meta, crits, out, scores in CASES.values() for c, s in scores.items()}


def write_rank_run(folder: Path, model: str, rows: list[tuple], matrix: dict | None = None,
                   run_json: bool = True) -> Path:
    """A folder as ``judge-eval rank`` leaves it, from ``(prompt_id, meta, criterion, rubric, score)`` rows (score
    None: a verdict without [RESULT]): ``items.jsonl``, ``predictions.jsonl``, ``rank.json`` (its ``matrix`` fields
    updated by ``matrix``) and, with ``run_json``, a ``run.json`` of one URL judge."""
    import json

    import judge

    folder.mkdir()
    records, predictions, position = [], [], {}
    for prompt_id, meta, name, rubrics, score in rows:
        k = position[prompt_id] = position.get(prompt_id, -1) + 1
        item_id = f"{prompt_id}#{k}#x"
        records.append(judge.JudgeRecord(id=item_id, instruction=f"Задание {prompt_id}", answer="Ответ",
                                         criteria_name=name, rubrics=rubrics, extra={"prompt_id": prompt_id,
                                                                                     "meta": meta}))
        predictions.append({"id": item_id, "raw_output": "[FEEDBACK] ...", "score": score, "parse_ok": score is not None,
                            "error": None if score is not None else "no_result", "score_source": "verdict"})
    judge.write_jsonl(records, folder / "items.jsonl")
    (folder / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in predictions), encoding="utf-8")
    bench = {"model": model, "judge": "j", "verdict_reader": "toolkit",
             "matrix": {"normalize": "minmax", "empty_answer": "zero", "no_answer": "zero", **(matrix or {})}}
    (folder / "rank.json").write_text(json.dumps(bench), encoding="utf-8")
    if run_json:
        (folder / "run.json").write_text(json.dumps({"config": {"name": "j", "judge": "http://judge/v1"},
                                                     "model": "j"}), encoding="utf-8")
    return folder
