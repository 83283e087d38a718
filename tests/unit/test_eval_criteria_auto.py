"""judge-eval run --criteria auto: (instruction, answer) pairs are judged on the criteria a task classifier chose."""

from __future__ import annotations

import json

import pytest

import judge
from eval.cli import main
from eval.judging.predictions import read_predictions
from judge.checkpoints import NEUTRAL_SAMPLING
from judge.criteria_auto import load_labelled, training_path
from tests.unit.test_eval_cli import ScriptedServer, _run_args


def test_run_criteria_auto_expands_pairs_and_records_the_choice(tmp_path):
    """With no classifier argument the shipped one chooses: each pair becomes one judged item per chosen criterion
    (ids pair::criterion); the choices are written beside the predictions, and run.json names the expanded items
    so `score` reads them."""
    pairs, _ = load_labelled([training_path()])
    data = tmp_path / "pairs.jsonl"
    data.write_text(
        json.dumps({"id": "p1", "instruction": pairs[0]["instruction"], "answer": "Ответ."}, ensure_ascii=False) + "\n"
        + json.dumps({"id": "p2", "instruction": pairs[1]["instruction"], "answer": "Ещё."}, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "run"
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, out, "--criteria", "auto")) == 0
    choices = [json.loads(line) for line in (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["id"] for c in choices] == ["p1", "p2"] and all(c["method"] == "tfidf" for c in choices)
    expected = {f"{c['id']}::{cid}" for c in choices for cid in c["criteria"]}
    assert all(c["level"] in ("leaf", "task_type", "fallback") for c in choices)
    assert {row["id"] for row in read_predictions(out / "predictions.jsonl")} == expected
    run_info = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert run_info["config"]["data"] == str(out / "auto_items.jsonl")
    # How sure the classifier was, row by level, in the run's record too.
    levels = [c["level"] for c in choices]
    assert run_info["task_choice_levels"] == {"leaf": levels.count("leaf"), "leaf_untested": 0,
                                              "task_type": levels.count("task_type"),
                                              "fallback": levels.count("fallback"), "failed": 0, "given": 0}
    # The rows judged on a Zero-Shot task, counted apart from the levels, as each choice record flags them.
    assert run_info["task_choice_zero_shot"] == sum(c["zero_shot"] for c in choices)
    records = judge.load_records(out / "auto_items.jsonl")
    assert {r.extra["task_choice"]["label"] for r in records} == {c["label"] for c in choices}


def test_run_criteria_auto_with_an_llm_classifier_needs_its_url(tmp_path, capsys):
    """--criteria auto with the llm method but no URL is a config error (exit 2), not a silent plain run."""
    assert main(["run", "--judge", "http://127.0.0.1:9/v1", "--out", str(tmp_path), "--criteria", "auto",
                 "--criteria-classifier", "llm"]) == 2
    assert capsys.readouterr().err == ("judge-eval run: error: criteria_classifier_path: required with "
                                       "--criteria-classifier llm (artefact folder or llm URL)\n")


def _pairs_file(tmp_path):
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (
        {"id": "p1", "instruction": "Дай совет, как выспаться", "answer": "Ложитесь раньше."},
        {"id": "p2", "instruction": "Посоветуй, что почитать", "answer": "Чехова."})), encoding="utf-8")
    return data


def _advice_endpoint(down):
    """An llm classifier's endpoint answering Advice (sure), or 503 for the instructions while ``down()`` says so."""
    from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

    def respond(path, body):
        if down(body["messages"][1]["content"]):
            return 503, {"error": {"message": "overloaded"}}
        answer = chat_completion("Advice", "clf")
        answer["choices"][0]["logprobs"] = {"content": [{"token": "Advice", "logprob": -0.01}]}
        return 200, answer

    return ScriptedEndpoint(respond, model="clf")


def _llm_args(url):
    return ["--criteria", "auto", "--criteria-classifier", "llm", "--criteria-classifier-path", url,
            "--criteria-classifier-model", "clf"]


def test_run_criteria_auto_refuses_when_the_classifier_failed_on_every_row(tmp_path, capsys):
    """The llm classifier's endpoint down for the whole run: one sentence and exit 2 (no traceback), and no
    expanded items that a later run would take for choices."""
    data, out = _pairs_file(tmp_path), tmp_path / "run"
    with ScriptedServer() as server, _advice_endpoint(lambda text: True) as clf:
        assert main(_run_args(server.base_url, data, out, *_llm_args(clf.base_url))) == 2
    err = capsys.readouterr().err
    assert "judge-eval run: error: " in err and "failed on all 2 rows" in err and "Traceback" not in err
    assert not (out / "auto_items.jsonl").exists() and not (out / "task_choices.jsonl").exists()


def test_run_criteria_auto_resume_classifies_the_failed_rows_again(tmp_path, caplog):
    """A transient outage of the llm classifier on one row: the run goes on (that row on the fallback criteria, a
    warning counting it); the resumed run asks the classifier again for that row only, judges it on its chosen
    task, and keeps the other row's choice and verdicts."""
    import logging

    from judge.criteria_auto import fallback_criteria, leaf_of

    data, out = _pairs_file(tmp_path), tmp_path / "run"
    outage = {"on": True}

    def levels() -> dict[str, int]:  # the choices counted by level in run.json
        return json.loads((out / "run.json").read_text(encoding="utf-8"))["task_choice_levels"]

    with ScriptedServer() as server, _advice_endpoint(lambda text: outage["on"] and "выспаться" in text) as clf:
        with caplog.at_level(logging.WARNING):
            assert main(_run_args(server.base_url, data, out, *_llm_args(clf.base_url))) == 0
        assert "failed on 1 of 2 rows" in caplog.text
        first = [json.loads(line) for line in (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()]
        assert [c["label"] for c in first] == ["", "Advice"]
        assert levels()["failed"] == 1 and sum(levels().values()) == 2
        outage["on"] = False
        n_asked, n_judged = len(clf.requests), len(server.bodies("/v1/chat/completions"))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
            assert main(_run_args(server.base_url, data, out, *_llm_args(clf.base_url))) == 0
        assert "reused the recorded task choice of 1 rows, classified 1 anew" in caplog.text
        assert len(clf.requests) == n_asked + 1 and "выспаться" in clf.requests[-1][1]["messages"][1]["content"]
        # The resume counted the choices it made; a resume with none failed reuses them and counts the same.
        after = levels()
        assert after["failed"] == 0 and sum(after.values()) == 2
        assert main(_run_args(server.base_url, data, out, *_llm_args(clf.base_url))) == 0
        assert len(clf.requests) == n_asked + 1 and levels() == after
        # judged again: p1's new criteria only (a criterion of both sets keeps its verdict: same prompt), none of p2
        new = set(leaf_of("Advice").criteria) - set(fallback_criteria())
        assert len(server.bodies("/v1/chat/completions")) - n_judged == len(new) > 0
    again = [json.loads(line) for line in (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["label"] for c in again] == ["Advice", "Advice"] and again[1] == first[1]
    expected = {f"{p}::{cid}" for p in ("p1", "p2") for cid in leaf_of("Advice").criteria}
    assert {row["id"] for row in read_predictions(out / "predictions.jsonl")} == expected


def test_run_criteria_auto_goes_on_when_the_only_row_asked_about_fails_among_explicit_ones(tmp_path, caplog):
    """A file of rows with criteria_name and one (instruction, answer) row, the llm classifier's endpoint down: the
    one row asked about failing is a warning and that row's fallback (exit 0, every row judged), not a refusal of the
    whole run, which only data whose every row is a failed choice gets."""
    import logging

    from judge.criteria_auto import fallback_criteria

    explicit = [json.loads(line) for line in judge.sample_data_path().read_text(encoding="utf-8").splitlines()[:3]]
    data, out = tmp_path / "mixed.jsonl", tmp_path / "run"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (
        *explicit, {"id": "p1", "instruction": "Дай совет, как выспаться", "answer": "Ложитесь раньше."})),
        encoding="utf-8")  # fmt: skip
    with ScriptedServer() as server, _advice_endpoint(lambda text: True) as clf:
        with caplog.at_level(logging.WARNING):
            assert main(_run_args(server.base_url, data, out, *_llm_args(clf.base_url))) == 0
    assert "failed on 1 of 1 rows" in caplog.text
    (choice,) = [json.loads(line) for line in (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()]
    assert (choice["id"], choice["label"]) == ("p1", "")
    expected = {r["id"] for r in explicit} | {f"p1::{cid}" for cid in fallback_criteria()}
    assert {row["id"] for row in read_predictions(out / "predictions.jsonl")} == expected


def test_expansion_counts_its_rows_by_level_and_says_how_many_the_classifier_was_unsure_of(tmp_path, caplog):
    """Rows the shipped classifier is unsure of ("?", an instruction in Chinese: no n-gram it knows) are judged on
    the fallback set: the expansion counts its rows by level (``choice_levels``, from its choice records or the
    task_choices.jsonl it wrote) and says how many fell back in one warning, where before only each row's own
    record in task_choices.jsonl said so. A failed choice counts as failed (not as doubt), a row naming its task as
    given, and a row naming its criterion not at all."""
    import logging

    from judge.criteria_auto import TfidfClassifier, expand_file, expand_rows
    from judge.criteria_auto.expansion import choice_levels

    clf = TfidfClassifier.load()
    rows = [{"instruction": "?", "answer": "a"}, {"instruction": "写一首关于春天的诗 2024", "answer": "a"},
            {"instruction": "Напиши стихотворение о весне", "answer": "a"}]
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        _, choices = expand_rows(rows, clf)
    assert [c["level"] for c in choices] == ["fallback", "fallback", "leaf"]
    assert choice_levels(choices) == {"leaf": 1, "leaf_untested": 0, "task_type": 0, "fallback": 2, "failed": 0,
                                      "given": 0}
    (line,) = [r for r in caplog.records if "by level" in r.getMessage()]
    assert line.levelno == logging.WARNING
    assert line.getMessage().startswith("criteria auto: 2 of 3 rows judged on the fallback set: the classifier was "
                                        "unsure (the 13 criteria for any text; rows by level: leaf 1, "
                                        "leaf_untested 0, task_type 0, fallback 2, failed 0, given 0;")

    class Down:  # the classifier failing on one row
        name = "down"

        def choose(self, instruction, answer=""):
            if "совет" in instruction:
                raise ConnectionError("endpoint down")
            return clf.choose(instruction, answer)

    explicit = json.loads(judge.sample_data_path().read_text(encoding="utf-8").splitlines()[0])
    data = tmp_path / "mixed.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (
        explicit, rows[2], {"instruction": "Дай совет, как выспаться", "answer": "Ложитесь раньше."},
        {"instruction": "Что подарить маме?", "answer": "Цветы.", "task_type": "Advice"})), encoding="utf-8")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        expand_file(data, tmp_path / "out", Down())
    assert choice_levels(tmp_path / "out" / "task_choices.jsonl") == {
        "leaf": 1, "leaf_untested": 0, "task_type": 0, "fallback": 0, "failed": 1, "given": 1}
    (line,) = [r for r in caplog.records if "by level" in r.getMessage()]
    assert (line.levelno, line.getMessage()) == (
        logging.INFO, "criteria auto: 3 rows, by level: leaf 1, leaf_untested 0, task_type 0, fallback 0, failed 1, "
                      "given 1")


def test_a_resumed_run_follows_edits_to_its_data(tmp_path, caplog):
    """A resumed run read its data only when a recorded choice had failed: an instruction edited (or a row added)
    since was judged as it first read. Now the data is expanded every time: the edited row is classified anew and
    judged on its new text, the unchanged row keeps its recorded choice, and the log says how many of each."""
    import logging

    from judge.criteria_auto import leaf_of

    data, out = tmp_path / "pairs.jsonl", tmp_path / "run"
    rows = [{"id": "p1", "instruction": "Дай совет, как выспаться", "answer": "Ложитесь раньше."},
            {"id": "p2", "instruction": "Посоветуй, что почитать", "answer": "Чехова."}]

    def write(rows):
        data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")

    def choices():
        return [json.loads(line) for line in (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines()]

    write(rows)
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, out, "--criteria", "auto")) == 0
        first = choices()
        rows[1] = {**rows[1], "instruction": "Переведи на английский язык: «Привет, как дела?»"}
        write([*rows, {"id": "p3", "instruction": "Напиши стихотворение о весне", "answer": "Весна пришла."}])
        with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
            assert main(_run_args(server.base_url, data, out, "--criteria", "auto")) == 0
    assert "reused the recorded task choice of 1 rows, classified 2 anew" in caplog.text
    again = choices()
    assert [c["id"] for c in again] == ["p1", "p2", "p3"] and again[0] == first[0]
    assert again[1]["task_type"] == "Translation, English-Russian language pair" != first[1]["task_type"]
    items = [json.loads(line) for line in (out / "auto_items.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {i["instruction"] for i in items if i["id"].startswith("p2::")} == {rows[1]["instruction"]}
    expected = {f"{c['id']}::{cid}" for c in again for cid in c["criteria"]}
    assert {row["id"] for row in read_predictions(out / "predictions.jsonl")} == expected
    assert leaf_of(again[1]["label"]).task_type == again[1]["task_type"]


def test_a_bad_task_column_is_one_sentence_not_a_traceback(tmp_path, capsys):
    """A task_subtype that is a number raised AttributeError in the taxonomy lookup: a traceback. Now the row is
    refused naming file, row and field (exit 2), and the run with the row fixed goes ahead in the same folder."""
    data, out = tmp_path / "pairs.jsonl", tmp_path / "run"
    row = {"instruction": "Напиши стихотворение", "answer": "Весна.", "task_type": "Literary text", "task_subtype": 5}
    data.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, out, "--criteria", "auto")) == 2
        err = capsys.readouterr().err
        assert f"{data}: line 1: field 'task_subtype' must be text, got an integer" in err and "Traceback" not in err
        data.write_text(json.dumps({**row, "task_subtype": "Poetry"}, ensure_ascii=False) + "\n", encoding="utf-8")
        assert main(_run_args(server.base_url, data, out, "--criteria", "auto")) == 0


def test_rows_whose_leaf_was_taken_untested_are_counted_apart_and_warned_of(tmp_path, caplog):
    """The llm method on an endpoint that gives no logprobs takes the answered leaf without the threshold and
    leaf-share tests; its rows were counted as "leaf", like rows whose leaf passed them. They are counted as
    "leaf_untested" in run.json, with a warning; the endpoint was asked for the logprobs (exact body on the wire)."""
    import logging

    from judge import load_taxonomy
    from judge.criteria_auto.llm import SYSTEM_PROMPT, render_level_prompt
    from tests.support.scripted_endpoint import ScriptedEndpoint, chat_completion

    def advice_without_logprobs(path, body):
        return 200, chat_completion("Advice", "clf")

    data, out = _pairs_file(tmp_path), tmp_path / "run"
    with ScriptedServer() as server, ScriptedEndpoint(advice_without_logprobs, model="clf") as clf:
        with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
            assert main(_run_args(server.base_url, data, out, *_llm_args(clf.base_url))) == 0
        bodies = clf.bodies("/v1/chat/completions")
    tax = load_taxonomy()
    types = [(t, next(x.names_ru[1] for x in tax.tasks if x.task_type == t)) for t in tax.task_types]
    assert len(bodies) == 2 and bodies[0] == {
        "model": "clf",
        "messages": [{"role": "system", "content": SYSTEM_PROMPT},
                     {"role": "user", "content": render_level_prompt("Дай совет, как выспаться", 0, [], types)}],
        "temperature": 0.0, **NEUTRAL_SAMPLING, "max_tokens": 32, "logprobs": True,
        "structured_outputs": {"choice": tax.task_types},
    }  # fmt: skip
    levels = json.loads((out / "run.json").read_text(encoding="utf-8"))["task_choice_levels"]
    assert levels == {"leaf": 0, "leaf_untested": 2, "task_type": 0, "fallback": 0, "failed": 0, "given": 0}
    (line,) = [r for r in caplog.records if "untested" in r.getMessage() and "by level" not in r.getMessage()]
    assert line.levelno == logging.WARNING
    assert line.getMessage().startswith("criteria auto: 2 of 2 rows judged at a leaf taken untested: the classifier "
                                        "gave no probability (no logprobs)")


def test_a_zero_shot_task_is_flagged_in_its_choice_and_counted(caplog):
    """A chosen (or given) task of a Zero-Shot task type (judge/data/zero_shot.yaml: Literary text) was neither
    flagged nor counted, though its items are in the Zero-Shot test, judged on criteria (rhyme quality, meter) the
    judges were not trained on. Its choice says zero_shot, and the rows are counted. Of four rows, by hand: a poem
    request (the shipped classifier: Literary text / Poetry) and a row naming Literary text / Poetry are; a row
    naming Advice is not, nor an English one (fallen back: its items carry no task type and only Standard
    criteria)."""
    import logging

    from judge.criteria_auto import TaskChoice, TfidfClassifier, expand_rows
    from judge.criteria_auto.expansion import zero_shot_choices

    rows = [{"instruction": "Напиши стихотворение о весне с перекрёстной рифмой, четыре строфы.", "answer": "a"},
            {"instruction": "Что подарить маме?", "answer": "Цветы.", "task_type": "Advice"},
            {"instruction": "Summarize the following article in three sentences.", "answer": "Ok."},
            {"instruction": "Сочини стих", "answer": "a", "task_type": "Literary text", "task_subtype": "Poetry"}]
    with caplog.at_level(logging.INFO, logger="judge.criteria_auto.expansion"):
        items, choices = expand_rows(rows, TfidfClassifier.load())
    assert [(c["label"] if c["level"] != "fallback" else "fallback", c["zero_shot"]) for c in choices] == [
        ("Literary text / Poetry", True), ("Advice", False), ("fallback", False), ("Literary text / Poetry", True)]
    assert zero_shot_choices(choices) == 2
    assert "criteria auto: 2 of 4 rows on a Zero-Shot task type, chosen or given" in caplog.text
    # every item of a flagged row is in the Zero-Shot test, none of the others
    records = judge.records_from_rows(items)
    flagged = {c["id"] for c in choices if c["zero_shot"]}
    assert all((judge.split_of(r, allow_unknown=True) == "zero_shot") == (r.id.split("::")[0] in flagged)
               for r in records)
    # derived from the task and criteria: a record written before choices carried the flag reads back flagged
    old = {k: v for k, v in choices[0].items() if k not in ("row", "id", "instruction_key", "classifier", "zero_shot")}
    assert TaskChoice.from_dict(old).zero_shot is True and zero_shot_choices([old]) == 1
    assert TaskChoice.from_dict({**old, "zero_shot": False}).to_dict()["zero_shot"] is True


def test_a_limit_on_an_auto_run_says_it_counts_items_not_rows(tmp_path, caplog):
    """--limit 3 on two auto rows judged the first row's first 3 criteria, while every row was classified and
    run.json's choice counts covered both: a user reading rows was told nothing. Now the run says so."""
    import logging

    pairs, _ = load_labelled([training_path()])
    data = tmp_path / "pairs.jsonl"
    data.write_text("".join(json.dumps({"id": f"p{k}", "instruction": pairs[k]["instruction"], "answer": "Ответ."},
                                       ensure_ascii=False) + "\n" for k in range(2)), encoding="utf-8")
    out = tmp_path / "run"
    with ScriptedServer() as server, caplog.at_level(logging.WARNING, logger="judge_eval.run"):
        assert main(_run_args(server.base_url, data, out, "--criteria", "auto", "--limit", "3")) == 0
    n_items = sum(1 for _ in (out / "auto_items.jsonl").open(encoding="utf-8"))
    assert len(read_predictions(out / "predictions.jsonl")) == 3
    assert [r.getMessage() for r in caplog.records if r.name == "judge_eval.run"] == [
        f"criteria auto: --limit 3 judges the first 3 of the {n_items} items (an auto row gives one per chosen "
        "criterion), not 3 rows; task_choice_levels and the log's choice counts cover the 2 rows expanded"]


def test_the_limit_warning_counts_the_items_a_run_can_judge(tmp_path, caplog):
    """The --limit warning counted the lines of auto_items.jsonl and the classified rows only: beside rows naming
    their criterion it said "the first 5 of the 20 items the 1 rows expand to" (a repeated named row counted twice,
    the named rows not at all), under --split it said "the first 24 of the 69 items" of items the split had left
    out, and a limit above the items warned of a cut that did not happen. Counted by hand: 3 named rows (one given
    twice, loaded once) and one Advice row of 16 criteria are 19 items; the Advice row's 16 are the standard split's
    (the named rows are a poem's: Zero-Shot)."""
    import logging

    from judge.criteria_auto import leaf_of

    named = judge.sample_data_path().read_text(encoding="utf-8").splitlines()[:3]
    advice = json.dumps({"id": "a", "instruction": "Дай совет, как выспаться перед экзаменом", "answer": "Спите."},
                        ensure_ascii=False)
    data = tmp_path / "mixed.jsonl"
    data.write_text("\n".join([*named, named[0], advice]) + "\n", encoding="utf-8")
    n_advice = len(leaf_of("Advice").criteria)
    assert n_advice == 16 and {judge.split_of(r) for r in judge.records_from_rows(map(json.loads, named))} == {
        "zero_shot"}

    def warned(*flags) -> list[str]:
        caplog.clear()
        with ScriptedServer() as server, caplog.at_level(logging.WARNING, logger="judge_eval.run"):
            assert main(_run_args(server.base_url, data, tmp_path / "-".join(flags), "--criteria", "auto",
                                  *flags)) == 0
        return [r.getMessage() for r in caplog.records if r.name == "judge_eval.run" and "--limit" in r.getMessage()]

    tail = "(an auto row gives one per chosen criterion), not 5 rows; task_choice_levels and the log's choice counts "
    assert warned("--limit", "5") == [
        f"criteria auto: --limit 5 judges the first 5 of the 19 items {tail}cover the 1 row expanded"]
    assert warned("--limit", "5", "--split", "standard") == [
        f"criteria auto: --limit 5 judges the first 5 of the 16 items in the standard test {tail}cover the 1 row "
        "expanded"]
    assert warned("--limit", "19") == [] and warned("--limit", "20", "--split", "standard") == []


def test_a_row_added_above_rows_without_ids_costs_only_its_own_verdicts(tmp_path):
    """Rows without an id were named by their place: a row added at the top of the data renamed every other row, and
    the resumed run dropped all their verdicts and asked the judge for every item again. Each such row is named by
    its content now: the rerun asks the judge about the added row's items only."""
    data, out = tmp_path / "pairs.jsonl", tmp_path / "run"
    rows = [{"instruction": "Дай совет, как выспаться", "answer": "Ложитесь раньше."},
            {"instruction": "Посоветуй, что почитать", "answer": "Чехова."}]
    added = {"instruction": "Переведи на английский язык: «Привет, как дела?»", "answer": "Hi, how are you?"}
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, out, "--criteria", "auto")) == 0
        before = {row["id"] for row in read_predictions(out / "predictions.jsonl")}
        data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (added, *rows)), encoding="utf-8")
        n_judged = len(server.prompts())
        assert main(_run_args(server.base_url, data, out, "--criteria", "auto")) == 0
        asked_again = server.prompts()[n_judged:]
    (choice,) = [c for c in map(json.loads, (out / "task_choices.jsonl").read_text(encoding="utf-8").splitlines())
                 if c["row"] == 0]
    assert len(asked_again) == len(choice["criteria"]) and all(added["instruction"] in p for p in asked_again)
    assert before < {row["id"] for row in read_predictions(out / "predictions.jsonl")}


@pytest.mark.parametrize("flags", [["--criteria-threshold", "0.3"], ["--criteria-classifier-path", "runs/task-clf"],
                                   ["--criteria-classifier", "head"], ["--criteria-classifier-model", "clf"],
                                   ["--criteria-classifier-api-key-env", "CLASSIFIER_API_KEY"]])
def test_a_classifier_setting_without_criteria_auto_is_refused(flags, tmp_path, capsys):
    """A classifier setting given without --criteria auto was dropped without a word: the data's named rows were
    judged as given, and the user believed the classifier (or threshold) had chosen. Refused, naming the setting,
    before the run folder is made."""
    field = flags[0][2:].replace("-", "_")
    out = tmp_path / "run"
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, judge.sample_data_path(), out, "--limit", "1", *flags)) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"judge-eval run: error: {field}: applies only with --criteria auto (the task classifier that chooses the "
        "criteria of rows without criteria_name); add --criteria auto, or drop it")
    assert not out.exists()


def test_pairs_run_without_criteria_auto_hear_of_it(tmp_path, capsys):
    """(instruction, answer) pairs run without --criteria auto were refused as "field 'criteria_name': is missing",
    which does not say that such rows are what --criteria auto judges. The line names the flag now."""
    data = _pairs_file(tmp_path)
    with ScriptedServer() as server:
        assert main(_run_args(server.base_url, data, tmp_path / "run")) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"judge-eval run: error: {data}: line 1: field 'criteria_name': is missing (a row without a criterion is an "
        "(instruction, answer) pair to judge with --criteria auto, which chooses its criteria)")
