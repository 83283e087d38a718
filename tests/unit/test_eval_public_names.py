"""A rule or helper that another module of eval/ or bench/ uses is public under the name it is used by: no module
imports another's ``_private`` name, and no comment cites one as the rule it follows. The helpers made public for
it keep their behaviour: ``md_code`` (report.md's and the pairwise section's code spans), ``write_files`` (the benches'
synthetic data and predictions) and ``streak_failure`` (what every runner's ``FailingStreak`` counts)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
# eval/ and bench/: the two trees whose modules share helpers with each other; judge/ is the contract, apart.
SCANNED = sorted([*(REPO / "eval").rglob("*.py"), *(REPO / "bench").glob("*.py")])
# A dotted module path of this repository ending in an attribute that starts with an underscore.
CITED_PRIVATE = re.compile(r"\b((?:eval|bench|judge|serve|train)(?:\.\w+)+)\.(_[a-z]\w*)")


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def test_no_module_imports_another_modules_private_name():
    """``from other.module import _name`` makes a private helper another module's contract: it is renamed without
    the importer's tests noticing. An alias to a private local name (``import escape as _e``) is not one."""
    found = []
    for path in SCANNED:
        here = _module_of(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module != here and node.level == 0:
                found += [f"{path.relative_to(REPO)}:{node.lineno}: {node.module}.{alias.name}"
                          for alias in node.names if alias.name.startswith("_") and alias.name != "__version__"]
    assert found == []


def test_no_comment_cites_another_modules_private_function_as_its_rule():
    """A comment saying "as ``other.module._helper`` does" points at a name its owner may rename or drop at will:
    a shared rule is public, an explanation cites the public entry point."""
    found = []
    for path in SCANNED:
        here = _module_of(path)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{path.relative_to(REPO)}:{number}: {module}.{name}"
                      for module, name in CITED_PRIVATE.findall(line) if module != here]
    assert found == []


def test_md_code_spans_a_plain_code_and_escapes_any_other():
    """``no_result`` is one plain word: a code span. ``a|b <i>`` is not (a space, a pipe, a tag): as ``md_text``
    writes it, the pipe as ``&#124;`` (no cell of its own) and the tag as entities."""
    from eval.reports.report import md_code

    assert md_code("no_result") == "`no_result`"
    assert md_code("a|b <i>") == "a&#124;b &lt;i&gt;"


def test_write_files_writes_one_record_and_one_prediction_per_item(tmp_path):
    """bench/experts_tables.py times the records bench/eval_metrics.py writes: 7 items, 7 records (each with its
    2-5 expert scores) and 7 predictions with the same ids, in order."""
    from bench.eval_metrics import synthetic_table, write_files

    table = synthetic_table(7)
    data, predictions = write_files(table, tmp_path)
    records = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    rows = [json.loads(line) for line in predictions.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in records] == [r["id"] for r in rows] == [f"item-{i}" for i in range(7)]
    assert all(2 <= len(r["expert_scores"]) <= 5 for r in records)


def _status_error(status: int, should_retry: str | None = None) -> httpx.HTTPStatusError:
    request = httpx.Request("POST", "http://judge.invalid/v1/chat/completions")
    headers = {"x-should-retry": should_retry} if should_retry else {}
    return httpx.HTTPStatusError("failed", request=request, response=httpx.Response(status, headers=headers,
                                                                                    request=request))


def test_streak_failure_counts_what_the_retries_could_not_get_past():
    """A dropped connection and a 503 are transient (retried, then counted); a 429 the server marked
    ``x-should-retry: false`` (an exhausted quota) is given up without retries and still counted; a 400 and a
    ``ValueError`` are the server's answer or this client's bug, never an endpoint's outage."""
    from judge.plumbing.failing_streak import streak_failure
    from judge.plumbing.retry import RetryPolicy

    policy = RetryPolicy()
    gone = httpx.ConnectError("refused")
    down, quota = _status_error(503), _status_error(429, "false")
    assert [streak_failure(err, policy) for err in (gone, down, quota)] == [gone, down, quota]
    assert [streak_failure(err, policy) for err in (_status_error(400), ValueError("bug"))] == [None, None]
