"""The export after training: rank 0 exports on every core the process may use, and puts its thread count back."""

from __future__ import annotations

from types import SimpleNamespace


def test_rank_zero_exports_on_every_core_and_puts_its_thread_count_back(monkeypatch, tmp_path):
    """Under OMP_NUM_THREADS=1 (torchrun's default, train.sbatch's) rank 0 loaded, wrote and probed the export on one
    thread while the other ranks waited in a barrier bounded by ddp_timeout."""
    import os

    import torch

    from train import export

    seen = {}

    def export_on_rank_zero(trainer, watch, **kwargs):
        seen["threads"] = torch.get_num_threads()
        return {"checked": True}

    monkeypatch.setattr(export, "probe_batch", lambda tokenizer, texts: None)
    monkeypatch.setattr(export, "live_outputs", lambda model, batch: None)
    monkeypatch.setattr(export, "_export_on_rank_zero", export_on_rank_zero)
    trainer = SimpleNamespace(is_world_process_zero=lambda: True, model=None, save_model=lambda folder: None,
                              args=SimpleNamespace(output_dir=str(tmp_path)),
                              accelerator=SimpleNamespace(wait_for_everyone=lambda: None))  # fmt: skip
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})  # more cores than the 1 set: a change
    try:
        report = export.export_after_training(trainer, stopper=None, result=SimpleNamespace(), mode="seq2seq",
                                              model_cls=None, tokenizer=None, probe_texts=[], base_model="unused",
                                              dtype=torch.float32, export_dir=tmp_path / "export")  # fmt: skip
        after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    assert report == {"checked": True}
    assert seen["threads"] == 4 and after == 1
