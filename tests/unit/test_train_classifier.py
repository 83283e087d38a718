"""judge-train classifier: the head recipe learns on the tiny Qwen2, exports in the contract's vocabulary, and
vLLM's pooling runner serves the export with transformers' probabilities.

The tests of this subject that start heavy components are in tests/integration/training/test_train_classifier.py.
"""

from __future__ import annotations

import json

import pytest

from train.config import ConfigError, load_config
from tests.support.train_classifier import TINY_YAML


def test_classifier_config_refuses_lora_and_bad_zero_shot():
    """The classifier recipe trains all weights and knows the three Zero-Shot policies."""
    with pytest.raises(ConfigError, match="lora"):
        load_config(TINY_YAML, {"lora": "true"})
    with pytest.raises(ConfigError, match="zero_shot"):
        load_config(TINY_YAML, {"zero_shot": "keep"})


def test_classifier_rows_refuse_heldout_instructions(tmp_path):
    """Training data that contains a bundled held-out instruction is refused, naming the count."""
    from judge.criteria_auto import heldout_path
    from train.classifier import classifier_rows

    row = json.loads(heldout_path().read_text(encoding="utf-8").splitlines()[0])
    path = tmp_path / "leak.jsonl"
    path.write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    config = load_config(TINY_YAML, {"data": str(path)})
    with pytest.raises(ConfigError, match="1 training instruction is in the bundled held-out set"):
        classifier_rows(config)


@pytest.mark.parametrize("n, counted", [(1, "1 training instruction belongs to a Zero-Shot task type;"),
                                         (2, "2 training instructions belong to Zero-Shot task types;")])
def test_classifier_rows_refuse_zero_shot_rows_when_asked_counting_them(tmp_path, n, counted):
    """zero_shot: refuse names how many rows are of a Zero-Shot task type, in the singular for one."""
    from train.classifier import classifier_rows

    rows = [{"instruction": f"Напиши рекомендацию по выбору книги номер {i}.", "label": "Recommendations"}
            for i in range(n)]
    path = tmp_path / "zero_shot.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    config = load_config(TINY_YAML, {"data": str(path), "zero_shot": "refuse"})
    with pytest.raises(ConfigError, match=counted):
        classifier_rows(config)


def test_classifier_rows_refuse_a_near_copy_of_a_heldout_instruction(tmp_path):
    """A held-out instruction with a clause cut (a near duplicate, not an exact one) is refused too, naming it."""
    from judge.criteria_auto import heldout_path
    from train.classifier import classifier_rows

    row = json.loads(heldout_path().read_text(encoding="utf-8").splitlines()[105])
    path = tmp_path / "leak.jsonl"
    cut = {**row, "instruction": row["instruction"].rsplit(" ", 3)[0]}
    path.write_text(json.dumps(cut, ensure_ascii=False) + "\n", encoding="utf-8")
    config = load_config(TINY_YAML, {"data": str(path)})
    with pytest.raises(ConfigError, match=f"near duplicates of it .* held-out {row['id']}"):
        classifier_rows(config)


def test_classifier_training_refuses_the_released_benchmark(tmp_path, capsys):
    """Both task-classifier recipes refuse --data in the released POLLUX benchmark's schema (a router trained on the
    benchmark's instructions has seen the test `--criteria auto` routes), as build-data does, naming the source;
    the JSONL form and the hub layout alike. --allow-benchmark-rows takes it deliberately."""
    import dataclasses
    import json

    from tests.support.release_artifacts import released_rows, write_released_dataset
    from train.build_data import BenchmarkRowsError
    from train.classifier import classifier_rows
    from train.config import load_config
    from train.criteria_classifier import main as criteria_classifier, training_rows

    folder = write_released_dataset(tmp_path / "POLLUX")
    jsonl = tmp_path / "released.jsonl"
    jsonl.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in released_rows()), encoding="utf-8")
    for source in (folder, jsonl):
        assert criteria_classifier(["--data", str(source), "--out", str(tmp_path / "clf")]) == 2
        assert "released POLLUX benchmark's schema" in capsys.readouterr().err and not (tmp_path / "clf").exists()
    pairs, _ = training_rows([str(jsonl)], False, True, allow_benchmark_rows=True)
    assert pairs  # taken when asked for
    config = dataclasses.replace(load_config("configs/train/tiny/classifier.yaml"), data=str(folder))
    with pytest.raises(BenchmarkRowsError, match="released POLLUX benchmark's schema"):
        classifier_rows(config)


def test_judge_train_classifier_refuses_benchmark_rows_before_looking_its_base_up(tmp_path, monkeypatch, capsys):
    """Through the command, the base (a hub id here, which a cache without it would download) is not looked up
    before the rows are refused: one line, exit 2, no run folder."""
    import judge.checkpoints
    from tests.support.release_artifacts import write_released_dataset
    from train.cli import main

    def looked_up(*args, **kwargs):
        raise AssertionError("the base model was looked up before the data were refused")

    monkeypatch.setattr(judge.checkpoints, "resolve_checkpoint", looked_up)
    folder = write_released_dataset(tmp_path / "POLLUX")
    out = tmp_path / "run"
    assert main(["classifier", "--config", "configs/train/tiny/classifier.yaml", "--data", str(folder),
                 "--model-name-or-path", "Qwen/Qwen2.5-0.5B", "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("judge-train classifier: error: ") and "released POLLUX benchmark's schema" in err
    assert not out.exists()


def test_the_head_classifier_refuses_benchmark_rows_before_its_base_model(tmp_path, monkeypatch):
    """judge-train's classifier recipe reads its rows before it resolves (for the tiny config, builds) its base
    model: a refusal of the data comes without that wait. The command without a config file is not told of a
    config key."""
    import dataclasses

    from tests.support.release_artifacts import write_released_dataset
    from train import recipe_steps
    from train.build_data import BenchmarkRowsError
    from train.classifier import train_classifier
    from train.config import load_config
    from train.criteria_rows import refuse_benchmark_sources

    def built(*args, **kwargs):
        raise AssertionError("the base model was prepared before the data were refused")

    monkeypatch.setattr(recipe_steps, "prepare", built)
    folder = write_released_dataset(tmp_path / "POLLUX")
    config = dataclasses.replace(load_config("configs/train/tiny/classifier.yaml"), data=str(folder),
                                 output_dir=str(tmp_path / "run"))
    with pytest.raises(BenchmarkRowsError, match=r"allow_benchmark_rows: true\) only"):
        train_classifier(config)
    with pytest.raises(BenchmarkRowsError, match="--allow-benchmark-rows only for") as err:
        refuse_benchmark_sources([folder], False, config_file=False)
    assert "config:" not in str(err.value)


@pytest.mark.parametrize("zero_shot, n_zero_shot_texts", [("drop", 0), ("refuse", 0), ("allow", 190)])
def test_the_taxonomy_texts_of_the_zero_shot_task_types_are_trained_on_only_with_allow(tmp_path, zero_shot,
                                                                                        n_zero_shot_texts):
    """zero_shot: refuse added the taxonomy texts of the 8 Zero-Shot task types (38 leaves, five texts each: 190) as
    allow does, so a run that refuses Zero-Shot data trained on them. Only allow adds them; every policy adds the
    564 texts of the Standard task types (754 in all, docs/criteria-auto.md)."""
    from collections import Counter

    from train.classifier import classifier_rows

    data = tmp_path / "standard.jsonl"
    data.write_text(json.dumps({"instruction": "Дай совет, как выспаться", "label": "Advice"}, ensure_ascii=False)
                    + "\n", encoding="utf-8")
    config = load_config(TINY_YAML, {"data": str(data), "zero_shot": zero_shot, "taxonomy_text": True,
                                     "max_rows": "null"})
    pairs, report = classifier_rows(config)
    texts = Counter(p["split"] for p in pairs if p.get("source") == "taxonomy")
    assert (texts["standard"], texts["zero_shot"]) == (564, n_zero_shot_texts)
    assert report["n_train"] == 1 + 564 + n_zero_shot_texts
