"""The model card (README.md in an export): the hub's YAML front matter, what the folder records (recipe, data,
hyperparameters, prompt version), serve commands for judge-serve and plain vLLM, and evaluation figures from a
scored run; ``judge-train card`` writes it; every export gets one.

The tests of this subject that start heavy components are in tests/integration/training/test_model_card.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judge
from judge.checkpoints import write_manifest
from train.cli import main as train_main
from train.model_card import render_card
from tests.support.model_card import front_matter


def _fake_export(root: Path, mode: str = "seq2seq", with_result: bool = True) -> Path:
    """An export folder as judge-train leaves it (manifest, config.json, run.json), without weights."""
    run_dir = root / "t-lite-judge"
    export = run_dir / "export"
    export.mkdir(parents=True)
    write_manifest(export, mode, generator="." if mode == "seq2seq" else "generator",
                   score_head=None if mode == "seq2seq" else "score")
    architecture = "Qwen2ForCausalLM" if mode == "seq2seq" else "Qwen2ForSequenceClassification"
    (export / "config.json").write_text(json.dumps({"architectures": [architecture], "problem_type": "regression"}))
    run = {
        "config": {"recipe": mode, "model_name_or_path": "t-tech/T-lite-it-1.0", "output_dir": str(run_dir),
                   "data": "pollux-train.jsonl", "zero_shot": "drop", "learning_rate": 1e-05, "global_batch_size": 256,
                   "num_train_epochs": 3.0, "max_length": 4096, "seed": 42, "lora": False, "lora_r": 64},
        "prompt_version": judge.PROMPT_VERSION,
        "data": {"n_records": 1000, "n_verdicts": 2900, "n_rows": 2850, "dropped": {"no_feedback": 50},
                 "n_train": 2800, "n_eval": 50},
        "launch": {"world_size": 8, "per_device_train_batch_size": 4, "gradient_accumulation_steps": 8,
                   "global_batch_size": 256, "base_model": "t-tech/T-lite-it-1.0", "host": "node-1",
                   "started_utc": "2026-11-23T10:00:00+00:00"},
        "git_revision": "abc123", "git_dirty": False,
        "packages": {"transformers": "4.57.0", "trl": "0.24.0"},
    }
    if with_result:
        run["result"] = {"global_step": 33, "log_history": [{"loss": 2.5, "step": 1}, {"loss": 0.75, "step": 33}]}
    (export / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return export


def _metrics(folder: Path) -> Path:
    folder.mkdir(parents=True)
    overall = {"n": 400, "n_failed": 3, "n_no_unique_mode": 12, "mae": 0.4125, "mae_ci": [0.38, 0.445],
               "spearman": 0.6512, "spearman_ci": [0.61, 0.69], "vc_judge": 0.71, "vc_experts": 0.74}
    split = {"overall": overall, "by_model": {}, "by_task_type": {}, "by_criterion": {}, "failures": {}}
    metrics = {"judge": "t-lite-judge", "target": "mode", "data": "pollux-test.jsonl",
               "settings": {"n_boot": 1000, "seed": 0, "vc_repeats": 100, "ci_level": 0.95},
               "splits": {"zero_shot": split, "all": split}}
    (folder / "metrics.json").write_text(json.dumps(metrics), encoding="utf-8")
    return folder


@pytest.mark.parametrize("mode, pipeline", [("seq2seq", "text-generation"), ("regression", "text-classification")])
def test_front_matter_has_the_hub_fields(tmp_path, mode, pipeline):
    """The YAML front matter names the base model, Russian, transformers, the pipeline, tags and the license."""
    front = front_matter(render_card(_fake_export(tmp_path, mode), license="apache-2.0"))
    assert front["base_model"] == "t-tech/T-lite-it-1.0"
    assert front["language"] == ["ru"] and front["library_name"] == "transformers"
    assert front["pipeline_tag"] == pipeline and front["license"] == "apache-2.0"
    assert {"pollux", "llm-as-a-judge", mode} <= set(front["tags"])


@pytest.mark.parametrize("base", ["folder", "path", "unrecorded", "not_a_hub_name"])
def test_front_matter_names_a_base_model_only_by_its_hub_id(tmp_path, base):
    """The hub's ``base_model`` is a model id on the hub: a local base (a folder here, the built tiny model, an SFT
    export a GRPO run starts from), an ``owner/name`` the hub's own rule refuses (``--`` in it) or no recorded base
    is left out of the front matter, and the body says it."""
    export = _fake_export(tmp_path)
    run = json.loads((export / "run.json").read_text(encoding="utf-8"))
    folder = tmp_path / "bases" / "T-lite"
    folder.mkdir(parents=True)
    given = {"folder": str(folder), "path": "runs/sft/export", "unrecorded": None, "not_a_hub_name": "a--b/c"}[base]
    run["config"]["model_name_or_path"] = run["launch"]["base_model"] = given
    (export / "run.json").write_text(json.dumps(run), encoding="utf-8")
    card = render_card(export)
    assert "base_model" not in front_matter(card)
    assert f"- base model: `{given or 'not recorded'}`" in card


def test_front_matter_names_a_hub_base_whose_owner_is_no_folder_here(tmp_path, monkeypatch):
    """An ``owner/name`` base is a hub id unless it is a folder here."""
    monkeypatch.chdir(tmp_path)
    export = _fake_export(tmp_path)
    assert front_matter(render_card(export))["base_model"] == "t-tech/T-lite-it-1.0"
    (tmp_path / "t-tech" / "T-lite-it-1.0").mkdir(parents=True)  # the same words name a local folder now
    assert "base_model" not in front_matter(render_card(export))


def test_card_body_says_what_the_run_recorded(tmp_path):
    """Recipe, prompt version, data size, hyperparameters, launch, steps and losses come from run.json."""
    card = render_card(_fake_export(tmp_path))
    assert f"prompt version: `{judge.PROMPT_VERSION}`" in card
    assert "2800 training rows, 50 validation rows (from 1000 records, 2900 expert verdicts)" in card
    assert "dropped while building the rows: no_feedback 50" in card
    assert "| learning_rate | `1e-05` |" in card and "| global_batch_size | `256` |" in card
    assert "| lora | `False` |" in card and "lora_r" not in card  # LoRA's settings only when it was used
    assert "8 process(es) x 4 rows per device x 8 accumulation steps = global batch 256" in card
    assert "optimizer steps: 33; training loss 2.5000 → 0.7500" in card
    assert "pollux-judge commit `abc123`" in card


def test_serve_commands_match_the_mode(tmp_path):
    """A seq2seq card serves one folder; a regression card serves generator/ and the pooling engine."""
    seq2seq = render_card(_fake_export(tmp_path / "a", "seq2seq"))
    regression = render_card(_fake_export(tmp_path / "b", "regression"))
    for card in (seq2seq, regression):
        assert "judge-serve --model PATH/TO/THIS/FOLDER --served-model-name t-lite-judge" in card
    assert "vllm serve PATH/TO/THIS/FOLDER --served-model-name t-lite-judge --port 8000" in seq2seq
    assert "vllm serve PATH/TO/THIS/FOLDER/generator" in regression and "--runner pooling" in regression
    assert "--runner pooling" not in seq2seq


def test_evaluation_figures_from_a_scored_run(tmp_path):
    """``--run`` adds the overall figures of each split with their intervals; without it the card says how."""
    export = _fake_export(tmp_path)
    card = render_card(export, eval_run=_metrics(tmp_path / "eval"))
    assert "| Zero-Shot test | 400 | 3 | 12 | 0.412 [0.380, 0.445] | 0.651 [0.610, 0.690] | 0.710 / 0.740 |" in card
    assert "Standard test |" not in card  # a split the metrics do not have is not invented
    assert "Not evaluated yet" in render_card(export)


def test_a_card_before_training_finished_says_what_is_missing(tmp_path):
    """The card written at export time (run.json without a result yet) leaves out steps rather than guessing."""
    card = render_card(_fake_export(tmp_path, with_result=False))
    assert "optimizer steps" not in card and "recipe: `seq2seq`" in card


def test_judge_train_card_writes_readme_and_rejects_a_non_export(tmp_path, capsys):
    """``judge-train card`` writes README.md (exit 0); a folder without pollux_judge.json is exit 2 naming it."""
    export = _fake_export(tmp_path)
    assert train_main(["card", "--export", str(export), "--run", str(_metrics(tmp_path / "eval"))]) == 0
    assert "0.412 [0.380, 0.445]" in (export / "README.md").read_text(encoding="utf-8")
    assert train_main(["card", "--export", str(tmp_path)]) == 2
    assert "pollux_judge.json" in capsys.readouterr().err
    # a mistyped path was "no pollux_judge.json; not a judge-train export", as if the folder were there
    assert train_main(["card", "--export", str(tmp_path / "expor")]) == 2
    assert capsys.readouterr().err == f"judge-train card: error: {tmp_path / 'expor'}: no such folder\n"
    assert train_main(["card", "--export", str(export / "pollux_judge.json")]) == 2
    assert capsys.readouterr().err == (f"judge-train card: error: {export / 'pollux_judge.json'}: a file, not a "
                                       "folder; give the export folder (holding pollux_judge.json)\n")
    assert train_main(["card", "--export", str(export), "--run", str(tmp_path / "nowhere")]) == 2
    # read through metrics.json's types (judge.metrics_json): a file that is not one is refused, naming what it lacks
    partial = tmp_path / "partial" / "metrics.json"
    partial.parent.mkdir()
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text(encoding="utf-8"))
    partial.write_text(json.dumps({**metrics, "settings": {"ci_level": 0.95}}), encoding="utf-8")
    capsys.readouterr()
    assert train_main(["card", "--export", str(export), "--run", str(partial.parent)]) == 2
    assert f"{partial}: not a metrics.json of judge-eval score (metrics.json: Settings has no 'n_boot')" in (
        capsys.readouterr().err)


def test_a_regression_card_says_its_generator_writes_no_score(tmp_path):
    """The regression generator is trained on ``[FEEDBACK] rationale [END]`` and the head gives the score: its card
    says so, and names no ``[RESULT]``, which only the seq2seq judge writes."""
    regression = render_card(_fake_export(tmp_path / "a", "regression"))
    seq2seq = render_card(_fake_export(tmp_path / "b", "seq2seq"))
    assert "writes a rationale, `[FEEDBACK] ... [END]`, and its score head scores it." in regression
    assert "[RESULT]" not in regression
    assert "writes a rationale and a score: `[FEEDBACK] ... [RESULT] <score> [END]`." in seq2seq


def test_a_grpo_card_counts_the_experts_verdicts_not_its_items(tmp_path):
    """The GRPO recipe's report counts items in n_verdicts (one prompt per item) and the experts' scores in
    n_expert_scores: the card's "expert verdicts" are the latter (5 items with 12 scores, not "5 expert verdicts")."""
    folder = _fake_export(tmp_path)
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    run["data"].update({"n_records": 5, "n_verdicts": 5, "n_expert_scores": 12})
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    assert "(from 5 records, 12 expert verdicts)" in render_card(folder)


def test_a_grpo_card_says_how_many_verdicts_failed_to_parse_as_the_rewards_moved(tmp_path):
    """Both rewards pay 0 for a verdict that fails to parse, and trl logs the share as verdicts/failed_share: the card
    said only that the rewards' means rose (0.25 -> 0.75), which a policy that fails more often can show too. It says
    the failed share at the first and the last logged step, and that it was not logged when it was not."""
    folder = _fake_export(tmp_path)
    run = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    run["config"].update({"recipe": "grpo", "rewards": {"format_reward": 1.0, "agreement_reward": 0.5},
                          "num_generations": 8, "no_unique_mode": "drop"})
    run["result"]["log_history"] = [
        {"rewards/format_reward/mean": 0.25, "rewards/agreement_reward/mean": 0.5, "verdicts/failed_share": 0.625,
         "step": 1},
        {"rewards/format_reward/mean": 0.75, "rewards/agreement_reward/mean": 0.625, "verdicts/failed_share": 0.125,
         "step": 2},
        {"train_runtime": 9.5, "step": 2}]  # trl's closing entry: no reward in it
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    (line,) = [line for line in render_card(folder).splitlines() if line.startswith("- rewards (GRPO")]
    assert line == ("- rewards (GRPO, trl GRPOTrainer): `format_reward` x 1.0 (mean 0.250 → 0.750), "
                    "`agreement_reward` x 0.5 (mean 0.500 → 0.625); verdicts that failed to parse (both rewards pay 0 "
                    "for them): 0.625 → 0.125 of the completions (verdicts/failed_share); groups of 8 completions; "
                    "experts without a unique mode: `drop`")
    run["config"]["rewards"] = {"agreement_reward": 1.0}  # one reward: no "both"
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    (line,) = [line for line in render_card(folder).splitlines() if line.startswith("- rewards (GRPO")]
    assert "; verdicts that failed to parse (the reward pays 0 for them): 0.625 → 0.125 of the completions" in line
    for entry in run["result"]["log_history"]:
        entry.pop("verdicts/failed_share", None)
    (folder / "run.json").write_text(json.dumps(run), encoding="utf-8")
    (line,) = [line for line in render_card(folder).splitlines() if line.startswith("- rewards (GRPO")]
    assert "; verdicts that failed to parse: not recorded (no verdicts/failed_share logged); groups of 8" in line


def test_rewriting_a_card_without_run_keeps_its_figures(tmp_path, capsys):
    """``judge-train card`` again to change --license (no --run) keeps the figures the first --run wrote, as they
    were (the same weights: no resume note), and takes the new license."""
    export = _fake_export(tmp_path)
    assert train_main(["card", "--export", str(export), "--run", str(_metrics(tmp_path / "eval"))]) == 0
    assert train_main(["card", "--export", str(export), "--license", "apache-2.0"]) == 0
    card = (export / "README.md").read_text(encoding="utf-8")
    assert "| Zero-Shot test | 400 | 3 | 12 | 0.412 [0.380, 0.445] | 0.651 [0.610, 0.690] | 0.710 / 0.740 |" in card
    assert "Not evaluated yet" not in card and "--resume` exported it again" not in card
    assert front_matter(card)["license"] == "apache-2.0"
    assert card.count("## Evaluation") == 1 and card.count("## Provenance") == 1


def test_a_resumed_export_keeps_one_note_under_kept_figures(tmp_path):
    """Each --resume re-export keeps the figures with the note saying they predate it: once, however many times."""
    from train.model_card import RESUME_NOTE, evaluation_section, write_card

    export = _fake_export(tmp_path)
    write_card(export, eval_run=_metrics(tmp_path / "eval"))
    for _ in range(2):
        write_card(export, kept_evaluation=evaluation_section(export))
    card = (export / "README.md").read_text(encoding="utf-8")
    assert card.count(RESUME_NOTE) == 1 and "0.412 [0.380, 0.445]" in card


def test_a_run_json_given_that_is_not_there_is_refused_naming_it(tmp_path, capsys):
    """--run-json with a typo is exit 2 naming the path, and no card is written; the default lookup finding no
    run.json still writes a card that says "not recorded"."""
    export = _fake_export(tmp_path)
    typo = tmp_path / "t-lite-judge" / "rnu.json"
    assert train_main(["card", "--export", str(export), "--run-json", str(typo)]) == 2
    assert capsys.readouterr().err == f"judge-train card: error: {typo}: not found\n"
    assert not (export / "README.md").exists()
    (export / "run.json").unlink()
    assert train_main(["card", "--export", str(export)]) == 0
    assert "pollux-judge commit `not recorded`" in (export / "README.md").read_text(encoding="utf-8")


def _with_run(export: Path, **changes) -> Path:
    """``export`` with its run.json's top-level sections updated (``data`` and ``config`` merged key by key)."""
    run = json.loads((export / "run.json").read_text(encoding="utf-8"))
    for key, value in changes.items():
        run[key] = {**run[key], **value} if isinstance(value, dict) and isinstance(run.get(key), dict) else value
    (export / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return export


def test_the_card_names_the_trained_rows_fingerprint_and_the_held_out_task_types(tmp_path):
    """What the judge was trained on: run.json's fingerprint of the trained rows (two data files at one path differ
    by it alone), and the task types of the split the run held out, with what ``zero_shot`` did with them."""
    from judge import load_split_spec

    export = _with_run(_fake_export(tmp_path), data={"train_fingerprint": "f00d" * 16})
    card = render_card(export)
    assert "training rows' fingerprint `" + "f00d" * 16 + "`" in card
    held_out = next(line for line in card.splitlines() if line.startswith("- held-out (Zero-Shot) task types"))
    spec = load_split_spec()
    assert all(task_type in held_out for task_type in spec.task_types), held_out
    assert "judge/data/zero_shot.yaml" in held_out and "left out of training" in held_out
    assert f"{len(spec.criteria)} held-out criteria" in held_out
    allowed = render_card(_with_run(export, config={"zero_shot": "allow"}))
    assert "**trained on**" in allowed
    unrecorded = render_card(_with_run(export, data={"train_fingerprint": None}))
    assert "training rows' fingerprint: not recorded" in unrecorded


def test_a_split_file_the_run_named_is_the_one_the_card_reads(tmp_path):
    """A run that held out a split of its own (``split_file``) gets that file's task types; one that cannot be
    read now is said to be so, never replaced by the packaged split."""
    split = tmp_path / "split.yaml"
    split.write_text("task_types: [Recommendations]\ncriteria: []\n", encoding="utf-8")
    export = _with_run(_fake_export(tmp_path), config={"split_file": str(split)})
    held_out = next(line for line in render_card(export).splitlines() if line.startswith("- held-out"))
    assert "Recommendations" in held_out and "Literary text" not in held_out and str(split) in held_out
    gone = tmp_path / "moved-since.yaml"
    export = _with_run(export, config={"split_file": str(gone)})
    held_out = next(line for line in render_card(export).splitlines() if line.startswith("- held-out"))
    assert "not recorded" in held_out and str(gone) in held_out and "Literary text" not in held_out


def test_the_card_points_at_the_record_it_was_written_from(tmp_path):
    """"The full record: run.json in this folder" was said whatever file the card read: a --run-json elsewhere, the
    run folder's run.json, or none at all. It names the export's own run.json only when that is the record read."""
    export = _fake_export(tmp_path)
    assert "- the full record: `run.json` in this folder" in render_card(export)
    elsewhere = tmp_path / "elsewhere.json"
    (export / "run.json").rename(elsewhere)
    card = render_card(export, run_json=elsewhere)
    assert "in this folder" not in card
    assert f"- the full record: `{elsewhere}`, not in this export" in card
    card = render_card(export)  # no run.json in the export nor beside it
    assert "- the full record: not recorded" in card


def test_a_card_rewrite_cut_by_a_full_disk_leaves_the_earlier_card(tmp_path):
    """``judge-train card`` rewrites a published export's README.md: written in place, a full disk (here a file-size
    limit, in a child process) left a cut card, whose cut evaluation section a later --resume's export then kept."""
    import subprocess
    import sys

    export = _fake_export(tmp_path)
    (export / "README.md").write_text("# the earlier card\n", encoding="utf-8")
    child = ("import resource, signal, sys\n"
             "from train.model_card import write_card\n"
             "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
             "resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))\n"
             "try:\n"
             "    write_card(sys.argv[1])\n"
             "except OSError as err:\n"
             "    print('refused', err.errno)\n")
    done = subprocess.run([sys.executable, "-c", child, str(export)], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.startswith("refused"), done.stdout + done.stderr
    assert (export / "README.md").read_text(encoding="utf-8") == "# the earlier card\n"
    assert sorted(p.name for p in export.iterdir()) == ["README.md", "config.json", "pollux_judge.json", "run.json"]


def test_the_card_names_the_split_recorded_at_training_not_the_file_as_it_reads_now(tmp_path):
    """A card rewritten after the split file changed (or a newer package's split) names the task types run.json
    recorded at training, with the split's sha256; a run.json without them falls back to the file, saying so."""
    from judge import splits

    split = tmp_path / "split.yaml"
    split.write_text("task_types: [Literary text]\ncriteria: []\n", encoding="utf-8")
    splits._load_split_spec.cache_clear()  # a fresh process reads the file as it is now
    export = _with_run(_fake_export(tmp_path), config={"split_file": str(split)},
                       data={"held_out_task_types": ["Recommendations"], "held_out_criteria": 0,
                             "split_sha256": "ab" * 32})
    held_out = next(line for line in render_card(export).splitlines() if line.startswith("- held-out"))
    assert "Recommendations" in held_out and "Literary text" not in held_out, held_out
    assert "ab" * 32 in held_out and "recorded at training" in held_out and "0 held-out criteria" in held_out
    unrecorded = _with_run(export, data={"held_out_task_types": None, "held_out_criteria": None,
                                         "split_sha256": None})
    held_out = next(line for line in render_card(unrecorded).splitlines() if line.startswith("- held-out"))
    assert "Literary text" in held_out and "as the split reads now; not recorded at training" in held_out


def test_license_other_comes_with_the_hubs_license_name_and_link(tmp_path, capsys):
    """The hub's card metadata wants ``license_name`` and ``license_link`` beside ``license: other``
    (huggingface/hub-docs modelcard.md): the base model's by default (its hub page for a hub id; ``LICENSE``, said
    in the body, for a local base), the options' when given, none with a listed licence, and the options refused
    with a listed licence (exit 2, the card left as it was)."""
    export = _fake_export(tmp_path / "hub")
    front = front_matter(render_card(export))
    assert front["license"] == "other"
    assert front["license_name"] == "t-tech-t-lite-it-1.0-license"
    assert front["license_link"] == "https://huggingface.co/t-tech/T-lite-it-1.0"

    assert train_main(["card", "--export", str(export), "--license-name", "t-lite-license",
                       "--license-link", "LICENSE"]) == 0
    card = (export / "README.md").read_text(encoding="utf-8")
    assert (front_matter(card)["license_name"], front_matter(card)["license_link"]) == ("t-lite-license", "LICENSE")

    listed = front_matter(render_card(export, license="apache-2.0"))
    assert "license_name" not in listed and "license_link" not in listed
    capsys.readouterr()
    assert train_main(["card", "--export", str(export), "--license", "apache-2.0", "--license-name", "x"]) == 2
    assert "--license-name and --license-link go with --license other only" in capsys.readouterr().err
    assert (export / "README.md").read_text(encoding="utf-8") == card

    local = _fake_export(tmp_path / "local")
    run = json.loads((local / "run.json").read_text(encoding="utf-8"))
    base = str(tmp_path / "base-model")
    run["config"]["model_name_or_path"] = run["launch"]["base_model"] = base
    (local / "run.json").write_text(json.dumps(run), encoding="utf-8")
    text = render_card(local)
    assert (front_matter(text)["license_name"], front_matter(text)["license_link"]) == ("not-recorded", "LICENSE")
    assert f"- licence: the base model's ({base}) is not recorded; put it in `LICENSE` before publishing" in text


def test_a_hub_bases_defaulted_licence_name_is_said_to_be_no_licence_id(tmp_path):
    """The default ``license_name`` of a hub base is made from its id and names no licence, and its link is the base's
    model page, not a licence file (the hub reads them as the licence's id and file): the body tells the publisher to
    check the base's terms and set the licence before publishing, and says nothing of it once they are given."""
    export = _fake_export(tmp_path / "hub")
    note = "- licence: `license_name` is named after the base model (`t-tech/T-lite-it-1.0`), not a licence"
    assert note in render_card(export)
    assert "https://huggingface.co/t-tech/T-lite-it-1.0" in next(line for line in render_card(export).splitlines()
                                                                 if line.startswith(note))
    assert "- licence:" not in render_card(export, license_name="t-lite-license", license_link="LICENSE")
    assert "- licence:" not in render_card(export, license="apache-2.0")
