"""``judge-serve --check-labels``: a prompt dataset's labels checked as ``POST /get_reward`` checks them, before
training, with no engine; a label that would be refused is otherwise found at the step that first draws its row,
which OpenRLHF answers by failing the step. A label naming one criterion twice is refused on the route too."""

from __future__ import annotations

import json

from serve.cli import SHOWN_LABEL_PROBLEMS
from serve.cli import main as serve_main
from serve.config import ServeConfig
from serve.rewards import label_problems
from tests.support.deep_json import nested_arrays

LABEL = {"instruction": "Напиши стих о весне.", "criteria": ["Креативность"]}


def _model(tmp_path):
    """A checkpoint folder as judge-serve reads its kind (config.json): no weights, no engine starts."""
    folder = tmp_path / "judge"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"]}), encoding="utf-8")
    return folder


def test_every_refused_label_is_named_by_its_line_and_counted(tmp_path, capsys):
    rows = [json.dumps({"prompt": "p", "label": LABEL}, ensure_ascii=False),
            json.dumps({"prompt": "p", "label": {**LABEL, "criteria": ["Креативность", "creativity"]}}),
            json.dumps({"prompt": "p", "label": {**LABEL, "criteria": ["Нет такого"]}}, ensure_ascii=False),
            json.dumps({"prompt": "p"}), "", "not json", "[1]",
            json.dumps({"prompt": "p", "label": json.dumps({**LABEL, "criteria": "auto"})}),
            json.dumps({"prompt": "p", "label": {**LABEL, "criterias": ["Креативность"]}}, ensure_ascii=False)]
    data = tmp_path / "prompts.jsonl"
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert serve_main(["--model", str(_model(tmp_path)), "--check-labels", str(data)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[:2] == [
        f"{data}:2: label: criteria[1]: names the criterion of criteria[0] (Креативность) again: it would be judged "
        "twice and weigh twice in the reward",
        f"{data}:3: label: criteria[0]: unknown criterion 'Нет такого'"]
    assert lines[2:5] == [f"{data}:4: no 'label' field (--label-key)",
                          f"{data}:6: invalid JSON (Expecting value at column 1)",
                          f"{data}:7: expected a JSON object, got a list"]
    assert lines[5].startswith(f"{data}:9: label: unknown field(s) ['criterias']; a label has ")
    # line 8's "auto" passes: the default settings have a task classifier (tfidf); blank line 5 is no row
    assert lines[6:] == [f"judge-serve: --check-labels: 8 rows of {data}, 6 labels refused"]


def test_clean_labels_pass_and_many_refusals_are_counted_past_the_shown_ones(tmp_path, capsys):
    model = _model(tmp_path)
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text(json.dumps({"q": 1, "answer_label": LABEL}) + "\n", encoding="utf-8")
    assert serve_main(["--model", str(model), "--check-labels", str(good), "--label-key", "answer_label"]) == 0
    assert capsys.readouterr().err == f"judge-serve: --check-labels: 1 rows of {good}, 0 labels refused\n"
    bad.write_text(json.dumps({"label": {"instruction": "Q"}}) + "\n" * 1 + "\n".join(
        json.dumps({"label": {**LABEL, "criteria": []}}) for _ in range(SHOWN_LABEL_PROBLEMS + 2)) + "\n")
    assert serve_main(["--model", str(model), "--check-labels", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == SHOWN_LABEL_PROBLEMS + 1
    assert err[-1] == (f"judge-serve: --check-labels: {SHOWN_LABEL_PROBLEMS + 3} rows of {bad}, "
                       f"{SHOWN_LABEL_PROBLEMS + 3} labels refused (3 more not shown)")
    assert serve_main(["--model", str(model), "--check-labels", str(tmp_path / "missing.jsonl")]) == 2
    assert capsys.readouterr().err.startswith(f"judge-serve: error: --check-labels: {tmp_path / 'missing.jsonl'}: ")


def test_the_checks_follow_the_servers_settings():
    """"auto" needs a task classifier: refused on a server without one, as /get_reward would refuse it."""
    auto = [("row 1", {**LABEL, "criteria": "auto"})]
    assert list(label_problems(auto, ServeConfig(model="m"))) == []
    assert [line.split(": ", 2)[:2] for line in label_problems(auto, ServeConfig(model="m", criteria_classifier=""))
            ] == [["row 1", "criteria"]]
    # the remedy: the shipped tfidf classifier needs no path, only the flag that turned it off left out
    (line,) = label_problems(auto, ServeConfig(model="m", criteria_classifier=""))
    assert "started without (--criteria-classifier '')" in line and "shipped tfidf classifier" in line, line


def test_the_route_refuses_a_label_naming_one_criterion_twice_by_its_sample():
    """On POST /get_reward the same check names the sample's label (labels[1]), as every label refusal does: one
    taxonomy criterion by two of its names, or one custom criterion given twice; two custom criteria of one name and
    other rubrics are two criteria."""
    import pytest

    from serve.rewards import RewardRoute
    from serve.schema import RequestError

    prompt = "<|im_start|>user\nНапиши стих<|im_end|>\n<|im_start|>assistant\n"
    brevity = {"name": "Краткость", "rubrics": "0: длинно\n\n1: кратко"}
    route = RewardRoute(ServeConfig(model="x"), error=lambda *a, **k: None)
    for twice, named in ((["Креативность", "creativity"], "Креативность"), ([brevity, brevity], "Краткость")):
        body = {"query": [prompt + "Весна.", prompt + "Осень."], "prompts": [prompt] * 2,
                "labels": [LABEL, {**LABEL, "criteria": twice}]}
        with pytest.raises(RequestError) as refused:
            route._read(json.dumps(body, ensure_ascii=False).encode(), sample_of := [])
        assert refused.value.param == "items[1].criteria[1]"
        assert refused.value.message == (f"items[1].criteria[1]: names the criterion of criteria[0] ({named}) again: "
                                         "it would be judged twice and weigh twice in the reward")
        assert sample_of == [0, 1]  # the route's refusal names items[1] as labels[1]
    other = {**brevity, "rubrics": "0: длинно\n\n1: средне\n\n2: кратко"}
    body = {"query": [prompt + "Весна."], "prompts": [prompt], "labels": [{**LABEL, "criteria": [brevity, other]}]}
    _, _, parsed, _ = route._read(json.dumps(body, ensure_ascii=False).encode(), [])
    assert len(parsed.items[0].criteria) == 2


def test_a_string_label_that_is_no_json_object_says_why_the_decoder_refused_it(tmp_path):
    """A label given as a JSON string was told only that it must hold an object, whatever the decoder refused: NaN,
    text that is no JSON and nesting too deep to decode now each add the decoder's own cause."""
    config = ServeConfig(model=str(_model(tmp_path)))
    deep = nested_arrays(100_000)
    said = list(label_problems([("a", "NaN"), ("b", "{not json"), ("c", deep), ("d", "[1]")], config))
    prefix = "a string label must hold a JSON object (instruction, criteria, ...); "
    assert said[0] == f"a: {prefix}NaN is not JSON (RFC 8259 has no NaN or Infinity)"
    assert said[1].startswith(f"b: {prefix}not valid JSON (Expecting property name")
    assert said[2].startswith(f"c: {prefix}JSON nested too deeply to decode (more than about ")
    assert said[3] == "d: expected a JSON object with instruction and criteria"  # JSON, but no object


def test_a_dataset_with_no_row_is_refused_not_passed(tmp_path, capsys):
    """An empty file (or blank lines only: a wrong path to a file being written, a filter that kept nothing) passed
    the check, "0 rows, 0 labels refused", exit 0: nothing was checked, and training would then find no prompt."""
    model = _model(tmp_path)
    for text in ("", "\n  \n\t\n"):
        data = tmp_path / "prompts.jsonl"
        data.write_text(text, encoding="utf-8")
        assert serve_main(["--model", str(model), "--check-labels", str(data)]) == 2
        assert capsys.readouterr().err == (f"judge-serve: error: --check-labels: {data}: no rows (an empty file, or "
                                           "blank lines only)\n")


def test_a_byte_order_mark_is_skipped_at_the_start_and_a_line_not_utf8_is_named_by_its_line(tmp_path, capsys):
    """A file saved with a UTF-8 byte order mark had its first label refused as invalid JSON, where every other
    reader skips one at a file's start (judge.plumbing.json_reading.UTF8_BOM); a line in another encoding
    (cp1251) stopped the check with Python's decoder message naming no line. Now the mark is skipped, and a line
    that is not UTF-8 is one refusal naming its line and byte, the others still checked."""
    model = _model(tmp_path)
    row = json.dumps({"prompt": "p", "label": LABEL}, ensure_ascii=False)
    data = tmp_path / "prompts.jsonl"
    data.write_bytes(b"\xef\xbb\xbf" + f"{row}\r\n{row}\r\n".encode("utf-8"))
    assert serve_main(["--model", str(model), "--check-labels", str(data)]) == 0
    assert capsys.readouterr().err == f"judge-serve: --check-labels: 2 rows of {data}, 0 labels refused\n"
    data.write_bytes(f"{row}\n".encode("utf-8") + f"{row}\n".encode("cp1251") + b"\xef\xbb\xbf" + f"{row}\n".encode())
    assert serve_main(["--model", str(model), "--check-labels", str(data)]) == 2
    lines = capsys.readouterr().err.splitlines()
    column = len('{"prompt": "p", "label": {"instruction": "') + 1  # the first byte of the Russian text
    assert lines[0] == f"{data}:2: not UTF-8 text (byte 0xcd at column {column})"
    assert lines[1].startswith(f"{data}:3: invalid JSON (Unexpected UTF-8 BOM")  # only the file's start may hold one
    assert lines[2:] == [f"judge-serve: --check-labels: 3 rows of {data}, 2 labels refused"]
