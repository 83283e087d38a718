"""bench/criteria_auto.py: a failed choice is counted as failed (a miss in the accuracies, out of the criteria-set
means, its count stated), not as a fallback scored 0; a failed request is one row's failure; the ``--train`` rows
are read as ``judge-train criteria-classifier`` reads them; bad input is one line and exit status 2."""

from __future__ import annotations

import json

import pytest

from bench.criteria_auto import evaluate, main, summarise
from judge.criteria_auto import choose_from_scores
from judge.criteria_auto.policy import TaskChoice
from judge.splits import STANDARD
from tests.support.scripted_endpoint import ScriptedEndpoint

ROWS = [{"id": "1", "instruction": "совет", "label": "Advice", "split": STANDARD},
        {"id": "2", "instruction": "факт", "label": "Fact checking", "split": STANDARD},
        {"id": "3", "instruction": "сеть", "label": "Fact checking", "split": STANDARD}]  # fmt: skip


class _FailsSome:
    """Advice at 0.9 for "совет"; a failed choice (an answer off the taxonomy) for "факт"; a raised error (a failed
    request) for anything else."""

    name = "fake"
    threshold = 0.5

    def choose(self, instruction, answer=None, top_k=3):
        if instruction == "совет":
            return choose_from_scores({"Advice": 0.9}, self.name, self.threshold, top_k)
        if instruction == "факт":
            return TaskChoice.failed("llm answered 'Кулинария' at level 0, outside the taxonomy's options", self.name)
        raise ConnectionError("connection refused")


def test_failed_choices_are_counted_and_left_out_of_the_set_means():
    """Three rows: one Advice hit (Jaccard 1 by either reading), two failures, neither scored as a fallback against
    the gold set nor ending the bench when raised: failed 2 of 3, fallback 0, leaf top-1 1/3 (a failure is a miss),
    set means over the one scored row (1.0), n_scored 1."""
    results = evaluate(_FailsSome(), ROWS)
    assert [(r["failed"], r["fallback"], r["level"]) for r in results] == [
        (False, False, "leaf"), (True, False, "failed"), (True, False, "failed")]
    assert results[2]["reason"] == "ConnectionError: connection refused"
    assert results[1]["set_exact"] is None and results[1]["set_no_fallback_base"] is None
    s = summarise(results)
    assert (s["n"], s["n_failed"], s["n_scored"], s["fallback"]) == (3, 2, 1, 0.0)
    assert s["failed"] == pytest.approx(2 / 3) and s["leaf_top1"] == pytest.approx(1 / 3)
    assert s["set_exact_jaccard"] == s["set_base_jaccard"] == s["set_no_fallback_exact_jaccard"] == 1.0


def test_every_choice_failed_leaves_the_set_means_empty():
    s = summarise(evaluate(_FailsSome(), ROWS[1:]))
    assert (s["n_failed"], s["n_scored"], s["set_exact_jaccard"]) == (2, 0, None)


def _heldout(tmp_path, label="Advice"):
    path = tmp_path / "heldout.jsonl"
    path.write_text(json.dumps({"id": "1", "instruction": "Дай совет, как выспаться перед экзаменом",
                                "label": label}, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def test_an_endpoint_that_fails_every_request_is_counted_not_a_traceback(tmp_path, capsys):
    """--methods llm against an endpoint answering 500: each row's request error is that row's failure; the run
    ends with exit 0, the table's failed share 1.000, and a line saying how many failed and why the first did."""
    with ScriptedEndpoint(lambda path, body: (500, {"error": {"message": "down"}})) as ep:
        code = main(["--methods", "llm", "--llm-url", ep.base_url, "--llm-model", "judge",
                     "--heldout", str(_heldout(tmp_path))])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    # the failed column is a share among shares (1 of 1: 1.000); the count is the line after the table
    assert "| at leaf | at type | fallback | failed | P / R / J exact ids |" in out
    assert "| llm | all | 1 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 0.000 | 1.000 | n/a / n/a / n/a |" in out
    assert ("llm: 1 of 1 choices failed (a miss in the accuracies, left out of the P / R / J means); the first, "
            "held-out row 0: HTTPStatusError: Server error '500 Internal Server Error' for url") in out
    assert "Traceback" not in out


def test_training_rows_in_the_benchmark_schema_are_refused_in_one_line(tmp_path, capsys):
    """--train with the released benchmark's rows was taken (the bench built its rows by hand): refused now, as
    judge-train criteria-classifier refuses them, in one line, exit 2, nothing fitted or saved."""
    from tests.support.release_artifacts import released_rows

    release = tmp_path / "released.jsonl"
    release.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in released_rows()), encoding="utf-8")
    code = main(["--train", str(release), "--heldout", str(_heldout(tmp_path)), "--save", str(tmp_path / "clf")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("criteria_auto.py: error: ") and err.count("\n") == 1
    assert "released POLLUX benchmark's schema" in err and not (tmp_path / "clf").exists()


def test_a_heldout_row_with_an_unknown_label_is_one_line_and_exit_2(tmp_path, capsys):
    code = main(["--heldout", str(_heldout(tmp_path, label="Cooking"))])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("criteria_auto.py: error: ") and err.count("\n") == 1
    assert "Cooking" in err and "Traceback" not in err


def test_a_missing_heldout_file_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["--heldout", str(tmp_path / "absent.jsonl")]) == 2
    assert capsys.readouterr().err.startswith("criteria_auto.py: error: ")


def test_the_shipped_classifier_is_not_measured_on_its_own_training_rows(capsys):
    """--heldout naming rows the shipped tfidf classifier was trained on (its training set) read 1.000 everywhere,
    as if held out, while --train refused the same file as overlapping: refused alike, in one line, exit 2."""
    from judge.criteria_auto import training_path

    code = main(["--heldout", str(training_path())])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.startswith("criteria_auto.py: error: ") and captured.err.count("\n") == 1
    assert "shipped tfidf classifier was trained on" in captured.err and str(training_path()) in captured.err
    assert "| tfidf |" not in captured.out  # nothing measured


def test_an_llm_only_bench_is_not_checked_against_the_shipped_classifiers_rows(tmp_path, capsys):
    """The check is the shipped tfidf classifier's: a bench of other methods on the same file is not refused by it
    (what an llm or head was trained on is not known here)."""
    from judge.criteria_auto import training_path

    with ScriptedEndpoint(lambda path, body: (500, {"error": {"message": "down"}})) as ep:
        code = main(["--methods", "llm", "--llm-url", ep.base_url, "--llm-model", "judge",
                     "--heldout", str(training_path())])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize(("flags", "named"), [
    (["--exclude-zero-shot"], "--exclude-zero-shot"),
    (["--save", "SAVE"], "--save"),
    (["--no-taxonomy-text"], "--no-taxonomy-text"),
    (["--allow-benchmark-rows"], "--allow-benchmark-rows"),
])
def test_a_training_flag_without_train_is_refused_naming_it(tmp_path, capsys, flags, named):
    """These flags shape or keep the tfidf fit --train makes; without it the shipped classifier was measured as
    if they had been applied (--exclude-zero-shot printed the shipped Zero-Shot figures where transfer was asked;
    --save wrote nothing), exit 0. Refused in one line naming the flag, nothing measured."""
    flags = [str(tmp_path / "clf") if f == "SAVE" else f for f in flags]
    code = main([*flags, "--heldout", str(_heldout(tmp_path))])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.startswith("criteria_auto.py: error: ") and captured.err.count("\n") == 1
    assert named in captured.err and "--train" in captured.err
    assert "| tfidf |" not in captured.out and not (tmp_path / "clf").exists()


@pytest.mark.parametrize("flags", [["--exclude-zero-shot"], ["--train", "bundled"], ["--save", "SAVE"],
                                   ["--no-taxonomy-text"], ["--allow-benchmark-rows"]])
def test_threshold_readings_with_a_training_flag_is_refused_before_reading(tmp_path, capsys, monkeypatch, flags):
    """--threshold-readings reads the bundled rows the shipped classifier is built from and nothing else: with a
    training flag it printed the all-rows readings (Zero-Shot kept for --exclude-zero-shot, nothing saved for
    --save), exit 0. Refused in one line naming both flags, before any reading."""
    import bench.criteria_auto

    read = []
    monkeypatch.setattr(bench.criteria_auto, "_print_threshold_readings", lambda: read.append(1) or 0)
    flags = [str(tmp_path / "clf") if f == "SAVE" else f for f in flags]
    code = main(["--threshold-readings", *flags])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("criteria_auto.py: error: ") and err.count("\n") == 1
    assert flags[0] in err and "--threshold-readings" in err
    assert read == [] and not (tmp_path / "clf").exists()


@pytest.mark.parametrize("save", [False, True])
def test_training_flags_without_tfidf_in_methods_are_refused(tmp_path, capsys, save):
    """--train (and --save) shape and keep the tfidf fit: with --methods llm the training rows were read and checked,
    then nothing fitted or saved, exit 0. Refused in one line naming the flag and the tfidf method."""
    flags = ["--save", str(tmp_path / "clf")] if save else []
    with ScriptedEndpoint(lambda path, body: (500, {"error": {"message": "down"}})) as ep:
        code = main(["--train", "bundled", "--methods", "llm", "--llm-url", ep.base_url, "--llm-model", "judge",
                     "--heldout", str(_heldout(tmp_path)), *flags])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.startswith("criteria_auto.py: error: ") and captured.err.count("\n") == 1
    assert "--train" in captured.err and "tfidf" in captured.err and "--methods" in captured.err
    assert "| llm |" not in captured.out and not (tmp_path / "clf").exists()


@pytest.mark.parametrize("train", [[], ["--train", "bundled"]])
def test_an_overlapping_heldout_is_refused_naming_its_first_overlapping_row(capsys, train):
    """The overlap refusals, against the shipped classifier's rows or --train's, counted the held-out rows but named
    none: the user had to find 71 by hand. They name the first pair, as the training commands' refusal does."""
    from judge.criteria_auto import training_path

    first = json.loads(training_path().read_text(encoding="utf-8").splitlines()[0])["instruction"]
    code = main([*train, "--heldout", str(training_path())])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("criteria_auto.py: error: ") and err.count("\n") == 1
    assert first[:30] in err and str(training_path()) in err


def test_the_training_flag_named_is_the_first_of_training_flags_whatever_the_command_line_order(tmp_path, capsys):
    """The refusal names one flag: the first given in ``TRAINING_FLAGS``' order (``--train`` first), not the first
    typed; every flag there is one the script reads (each given, alone, is refused by name)."""
    from bench.criteria_auto import TRAINING_FLAGS

    assert TRAINING_FLAGS[0] == "--train"
    code = main(["--threshold-readings", "--allow-benchmark-rows", "--save", str(tmp_path / "clf"), "--train",
                 "bundled"])
    assert code == 2 and "--train does not apply to --threshold-readings" in capsys.readouterr().err
    code = main(["--allow-benchmark-rows", "--no-taxonomy-text", "--heldout", str(_heldout(tmp_path))])
    assert code == 2 and capsys.readouterr().err.startswith("criteria_auto.py: error: --no-taxonomy-text applies")
    for flag in TRAINING_FLAGS:
        given = [flag, "bundled" if flag == "--train" else str(tmp_path / "clf")] if flag in ("--train", "--save") \
            else [flag]
        assert main(["--threshold-readings", *given]) == 2
        assert capsys.readouterr().err.startswith(f"criteria_auto.py: error: {flag} does not apply")
