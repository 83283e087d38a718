"""judge-train criteria-classifier's numeric flags are checked before any row is read or fitted."""

from __future__ import annotations

import pytest

import train.criteria_classifier
import train.criteria_tfidf


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        # sklearn's TfidfVectorizer refused a cap of 0 with an InvalidParameterError traceback
        (["--max-char-features", "0"], "--max-char-features must be at least 1, got 0"),
        (["--max-word-features", "-3"], "--max-word-features must be at least 1, got -3"),
        # a threshold is compared with a probability: above 1 every leaf falls back, NaN never does
        (["--threshold", "2"], "--threshold must be a probability in [0, 1], got 2.0"),
        (["--threshold", "-0.1"], "--threshold must be a probability in [0, 1], got -0.1"),
        (["--threshold", "nan"], "--threshold must be a probability in [0, 1], got nan"),
        (["--threshold", "inf"], "--threshold must be a probability in [0, 1], got inf"),
        # 0 or fewer folds skipped the calibration with exit 0 (1 is the documented "no calibration")
        (["--folds", "0"], "--folds must be at least 1 (1: no out-of-fold calibration), got 0"),
        (["--folds", "-3"], "--folds must be at least 1 (1: no out-of-fold calibration), got -3"),
    ],
)
def test_a_bad_number_is_one_line_and_exit_2_before_the_fit(tmp_path, monkeypatch, capsys, flags, message):
    """Each bad value exits 2 with one line naming the flag, before the rows are read or the classifier fitted
    (the threshold's refusal came only after the whole fit, naming a model.json the command had not written)."""

    def never(*_args, **_kwargs):
        raise AssertionError("reached after a bad flag")

    monkeypatch.setattr(train.criteria_classifier, "training_rows", never)
    monkeypatch.setattr(train.criteria_tfidf, "fit_tfidf", never)
    out = tmp_path / "clf"
    assert train.criteria_classifier.main(["--out", str(out), *flags]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"judge-train criteria-classifier: error: {message}\n" and captured.out == ""
    assert not out.exists()


@pytest.mark.parametrize("flags", [["--threshold", "0"], ["--threshold", "1"], ["--max-char-features", "1",
                                                                               "--max-word-features", "1"]])
def test_the_edges_of_the_ranges_reach_the_fit(tmp_path, monkeypatch, flags):
    """0 and 1 are probabilities and 1 a vocabulary: they pass the check and reach the rows and the fit."""
    reached = []

    def rows(*_args, **_kwargs):
        reached.append("rows")
        raise ValueError("stop here")

    monkeypatch.setattr(train.criteria_classifier, "training_rows", rows)
    assert train.criteria_classifier.main(["--out", str(tmp_path / "clf"), *flags]) == 2
    assert reached == ["rows"]


def test_a_missing_data_file_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    """A --data that is not there ended in a FileNotFoundError traceback (only refused rows were caught), though the
    epilog promises one line and exit 2 for refused --data: the file and why, nothing fitted or written."""

    def never(*_args, **_kwargs):
        raise AssertionError("fitted without its --data")

    monkeypatch.setattr(train.criteria_tfidf, "fit_tfidf", never)
    missing, out = tmp_path / "missing.jsonl", tmp_path / "clf"
    assert train.criteria_classifier.main(["--out", str(out), "--data", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.err == (f"judge-train criteria-classifier: error: --data {missing}: No such file or directory\n")
    assert captured.out == "" and not out.exists()


def _never(*_args, **_kwargs):
    raise AssertionError("fitted")


def test_an_out_that_is_no_writable_folder_is_refused_before_the_rows_and_the_fit(tmp_path, monkeypatch, capsys):
    """An --out that is a file (or under one) was a FileExistsError traceback from the save after the whole fit:
    one line, exit 2, before the rows are read."""
    monkeypatch.setattr(train.criteria_classifier, "training_rows", _never)
    monkeypatch.setattr(train.criteria_tfidf, "fit_tfidf", _never)
    afile = tmp_path / "afile"
    afile.write_text("", encoding="utf-8")
    for out, why in ((afile, f"--out {afile}: not a folder"), (afile / "clf", f"--out {afile / 'clf'}: {afile} is "
                                                                              "not a folder")):
        assert train.criteria_classifier.main(["--out", str(out)]) == 2
        assert capsys.readouterr().err == f"judge-train criteria-classifier: error: {why}\n"


def test_more_folds_than_instructions_is_refused_before_the_fit(tmp_path, monkeypatch, capsys):
    """--folds 4 over three instructions (the taxonomy texts are never held out) skipped the calibration with exit 0:
    refused now, saying how many there are; the default five over as few rows still fits, and says so."""
    pairs = [{"instruction": f"Напиши стихотворение номер {k}", "label": "Literary text / Poetry"} for k in range(3)]
    pairs += [{"instruction": "Текст таксономии", "label": "Editing", "source": "taxonomy"}] * 5
    monkeypatch.setattr(train.criteria_classifier, "training_rows", lambda *a, **k: (pairs, {}))
    monkeypatch.setattr(train.criteria_tfidf, "fit_tfidf", _never)
    out = tmp_path / "clf"
    assert train.criteria_classifier.main(["--out", str(out), "--folds", "4"]) == 2
    assert capsys.readouterr().err == (
        "judge-train criteria-classifier: error: --folds 4: only 3 instructions to hold out (the taxonomy texts stay "
        "in every fold); give at most 3, or 1 for no out-of-fold calibration\n")
    assert not out.exists()
    fitted = []
    monkeypatch.setattr(train.criteria_tfidf, "fit_tfidf", lambda _pairs, folds, **_kw: fitted.append(folds) or _never())
    with pytest.raises(AssertionError, match="fitted"):
        train.criteria_classifier.main(["--out", str(out)])
    assert fitted == [5]


_CODE = "Напиши функцию, которая сортирует список чисел по убыванию"


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        # a label that is a number was an AttributeError traceback (label.split)
        (['{"instruction": "Напиши стихотворение", "label": "Literary text / Poetry"}',
          '{"instruction": "Напиши ещё одно", "label": 5}'],
         "line 2: field 'label': must be text, got an integer"),
        # a lone surrogate (JSON can escape one) was fitted on, then a UnicodeEncodeError traceback after the whole
        # fit (the training rows' digest, the save)
        (['{"instruction": "Напиши стихотворение", "label": "Literary text / Poetry"}',
          '{"instruction": "Напиши ещё \\ud800 одно", "label": "Literary text / Poetry"}'],
         "line 2: field 'instruction': is not valid Unicode text: a lone surrogate (U+D800) at character 11"),
        # one instruction under two leaves kept the first label and counted the other as a duplicate: trained on one
        # of two contradicting labels, picked by row order; a repeat under the same label is a counted duplicate
        ([f'{{"instruction": "{_CODE}", "label": "Code creation / Python"}}',
          f'{{"instruction": "{_CODE}", "label": "Code creation / Python"}}',
          f'{{"instruction": "{_CODE} ", "label": "Code creation / C++"}}'],
         "line 3: field 'label': the instruction is labelled 'Code creation / C++' here and 'Code creation / Python' "
         "at {data}: line 1; give it one label"),
    ],
)
def test_a_bad_data_row_is_one_line_naming_the_file_line_and_field(tmp_path, monkeypatch, capsys, lines, said):
    """Refused before the fit: one line, exit 2."""
    monkeypatch.setattr(train.criteria_tfidf, "fit_tfidf", _never)
    data = tmp_path / "lab.jsonl"
    data.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert train.criteria_classifier.main(["--out", str(tmp_path / "clf"), "--data", str(data)]) == 2
    assert capsys.readouterr().err == (f"judge-train criteria-classifier: error: {data}: "
                                       f"{said.format(data=data)}\n")


def test_data_rows_that_repeat_a_bundled_instruction_are_counted_as_left_out(tmp_path):
    """A --data row whose instruction is a bundled one is left out (the bundled row and its label stand), but the
    summary's data counts said it was kept: two rows read, 'kept': 2, one trained on. Counted apart now, the kept
    count the rows added."""
    import json

    from judge.criteria_auto import training_path
    from train.criteria_rows import bundled_rows

    bundled = json.loads(training_path().read_text(encoding="utf-8").splitlines()[0])["instruction"]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (
        {"instruction": bundled, "label": "Advice"},
        {"instruction": "Отредактируй моё письмо начальнику, сделай его вежливее", "label": "Editing"})),
        encoding="utf-8")  # fmt: skip
    pairs, counts = train.criteria_classifier.training_rows([str(data)], bundled=True, include_zero_shot=True)
    assert len(pairs) == len(bundled_rows()[0]) + 1
    assert counts["data"]["rows"] == 2 and counts["data"]["kept"] == 1
    assert counts["data"]["copies_of_bundled_or_taxonomy"] == 1


def test_data_rows_that_repeat_a_taxonomy_text_without_the_bundled_rows_are_counted_by_what_they_repeat(tmp_path):
    """With --no-bundled the rows before --data are the taxonomy texts alone: a --data row repeating one was counted
    as a 'bundled_copies' beside an empty 'bundled' count. The count is named for both: the bundled rows or the
    taxonomy texts."""
    import json

    from train.criteria_rows import taxonomy_rows

    text = taxonomy_rows(True)[0]
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"instruction": text["instruction"], "label": text["label"]}, ensure_ascii=False) + "\n",
                    encoding="utf-8")
    _, counts = train.criteria_classifier.training_rows([str(data)], bundled=False, include_zero_shot=True)
    assert counts["bundled"] == {} and counts["data"]["kept"] == 0
    assert counts["data"]["copies_of_bundled_or_taxonomy"] == 1 and "bundled_copies" not in counts["data"]


def test_one_instruction_under_two_labels_in_two_files_is_refused_naming_both(tmp_path):
    """Across the files read together too: the second label was counted as a duplicate of the first file's row."""
    from judge.criteria_auto import load_labelled

    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text('{"instruction": "Переведи текст на английский", "label": "Advice"}\n', encoding="utf-8")
    second.write_text('\n{"instruction": "Переведи текст на английский", "label": "Editing"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{second}: line 2: field 'label': the instruction is labelled 'Editing' "
                                         rf"here and 'Advice' at {first}: line 1; give it one label$"):
        load_labelled([first, second])
    pairs, counts = load_labelled([first, first])
    assert len(pairs) == 1 and counts["duplicates"] == 1 and counts["kept"] == 1
