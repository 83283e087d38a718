"""What tests/unit/test_eval_ranking.py and tests/integration/test_eval_ranking.py share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.release_instructions import instruction_row, write_instructions_dataset

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


def _rows(answer_prefix: str = "") -> list[dict]:
    return [instruction_row(pid, f"Инструкция {pid}: напиши текст.", meta,
                            [(c, RUBRICS[c]) for c in criteria], reference_answer=None if pid == 3 else f"Эталон {pid}")
            for pid, (meta, criteria, _, _) in CASES.items()]


def _verdict(score: int | None) -> str:
    return "[FEEDBACK] Обоснование. [END]" if score is None else f"[FEEDBACK] Обоснование. [RESULT] {score} [END]"


def _rank_argv(candidate: str, judge: str, data: Path, out: Path, *extra: str) -> list[str]:
    return ["rank", "--model", candidate, "--judge", judge, "--data", str(data), "--out", str(out), "--no-progress",
            "--n-boot", "200", "--max-retries", "0", *extra]


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return write_instructions_dataset(tmp_path / "POLLUX-instructions", _rows())

