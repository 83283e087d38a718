"""The model card's hyperparameter table says what training made of the config, not only what the config said:
``bf16: auto`` resolved (run.json's launch records it), the epochs a max_steps run actually trained, and the
trainer_args that went to transformers."""

from __future__ import annotations

import json

import judge
from judge.checkpoints import write_manifest


def test_the_card_shows_resolved_bf16_the_epochs_trained_and_trainer_args(tmp_path, monkeypatch):
    from train.config import Seq2SeqConfig
    from train.model_card import render_card
    from train.recipe_steps import PreparedRun
    from train.training_arguments import Launch, use_bf16

    monkeypatch.delenv("RANK", raising=False)
    run_dir = tmp_path / "tiny-judge"
    config = Seq2SeqConfig(output_dir=str(run_dir), bf16="auto", max_steps=2, num_train_epochs=3.0,
                           trainer_args={"adam_beta2": 0.95})  # fmt: skip
    run = PreparedRun(config=config, launch=Launch(1, 1, 2, 2), resume_from=None, base_model="unused",
                      tokenizer=None, dtype=None, stopper=None)  # fmt: skip
    run.record_data({"n_rows": 1}, train_rows=[{"id": "a", "prompt": "p", "completion": "c"}])
    record = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    resolved = use_bf16(config)
    assert record["launch"]["bf16"] is resolved
    # the export of that run: max_steps 2 ended it half-way through the first of 3 epochs
    record["result"] = {"global_step": 2, "log_history": [{"loss": 2.0, "epoch": 0.25, "step": 1},
                                                          {"loss": 1.0, "epoch": 0.5, "step": 2}]}  # fmt: skip
    export = run_dir / "export"
    export.mkdir()
    write_manifest(export, "seq2seq", generator=".", score_head=None)
    (export / "run.json").write_text(json.dumps(record), encoding="utf-8")
    card = render_card(export)
    assert f"| bf16 | `auto` (resolved: `{str(resolved).lower()}`) |" in card
    assert "| num_train_epochs | `3.0` (max_steps 2 ended training at epoch 0.50) |" in card
    assert '| trainer_args | `{"adam_beta2": 0.95}` |' in card
    assert judge.PROMPT_VERSION in card
