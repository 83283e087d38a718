"""The regression judge's joint loss (train/joint_loss.py) on a tiny real model, against the formula computed by hand."""

from __future__ import annotations

from datetime import timedelta

import pytest
import torch

#: Weights other than the shipped 1.0 / 1.0, so a swapped or dropped weight changes the loss.
LM_WEIGHT, SCORE_WEIGHT = 0.3, 2.0

# A rank that dies before joining leaves the other in the store's C++ wait, which pytest-timeout cannot interrupt:
# the join gives up after this (torch's default is 30 minutes).
_JOIN_TIMEOUT = timedelta(seconds=60)


@pytest.fixture()
def model():
    """A randomly initialised tiny Qwen2 with the score head (train.tiny_models' architecture), seed 0."""
    from train.tiny_models import tiny_qwen2_config
    from train.score_head import Qwen2ForRationaleAndScore

    torch.manual_seed(0)
    config = tiny_qwen2_config("causal")
    config.pad_token_id = 0
    return Qwen2ForRationaleAndScore(config).float()


@pytest.fixture()
def trainer(model, tmp_path):
    from transformers import TrainingArguments

    from train.joint_loss import JointLossTrainer

    args = TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True, disable_tqdm=True)
    return JointLossTrainer(model=model, args=args, lm_loss_weight=LM_WEIGHT, score_loss_weight=SCORE_WEIGHT)


def tiny_batch() -> dict[str, torch.Tensor]:
    """Two right-padded rows: a prompt (label -100), then labelled rationale tokens; float score labels."""
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(1, 1000, (2, 7), generator=generator)
    attention_mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0, 0]])
    input_ids[1, 5:] = 0  # padding
    labels = input_ids.clone()
    labels[:, :3] = -100  # the prompt
    labels[1, 5:] = -100  # the padding
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels,
            "score_labels": torch.tensor([2.0, 0.5])}  # fmt: skip


def by_hand(model, batch: dict[str, torch.Tensor]) -> tuple[float, float]:
    """(cross-entropy of the labelled next tokens, MSE of the score head), from the model's full logits and the head
    applied to the backbone's hidden states at the last real tokens."""
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    log_probs = torch.log_softmax(out.logits[:, :-1].double(), dim=-1)
    targets = batch["labels"][:, 1:]
    picked = [-log_probs[b, t, targets[b, t]] for b in range(2) for t in range(targets.shape[1]) if targets[b, t] != -100]
    assert len(picked) == 4 + 2  # row 0 predicts tokens 3..6, row 1 tokens 3..4
    ce = float(sum(picked) / len(picked))
    # The score head reads the last real token: position 6 of row 0, position 4 of row 1 (taken here from the
    # backbone's hidden states, not the model's own choice, so a head read at a wrong position fails).
    with torch.no_grad():
        hidden = model.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
        scores = model.score(hidden[[0, 1], [6, 4]]).squeeze(-1)
    mse = float(((scores.double() - batch["score_labels"].double()) ** 2).mean())
    return ce, mse


def test_the_loss_is_the_weighted_sum_of_cross_entropy_and_score_mse(trainer, model):
    """compute_loss = lm_loss_weight * CE(labelled rationale tokens) + score_loss_weight * MSE(scores, score labels)."""
    ce, mse = by_hand(model, tiny_batch())
    model.eval()
    with torch.no_grad():
        loss, outputs = trainer.compute_loss(model, tiny_batch(), return_outputs=True)
    assert float(outputs.loss) == pytest.approx(ce, rel=1e-5)
    assert float(loss) == pytest.approx(LM_WEIGHT * ce + SCORE_WEIGHT * mse, rel=1e-5)
    assert mse > 0.01 and ce > 0.01  # both parts weigh in: neither is a vanishing term that would hide a dropped one


def test_training_logs_carry_the_two_parts_averaged_since_the_last_log(trainer, model):
    """In training mode each batch's CE and MSE are kept and logged (averaged) beside `loss`, then forgotten;
    an evaluation batch adds nothing to them."""
    batch = tiny_batch()
    ce, mse = by_hand(model, batch)
    shifted = {**batch, "score_labels": batch["score_labels"] + 1.0}
    ce2, mse2 = by_hand(model, shifted)
    model.train()  # dropout is 0 in the tiny config: training mode computes the same values
    trainer.compute_loss(model, dict(batch))
    trainer.compute_loss(model, dict(shifted))
    model.eval()
    trainer.compute_loss(model, {**batch, "score_labels": batch["score_labels"] + 10.0})  # not training: not kept
    trainer.log({"loss": 1.0})
    logged = trainer.state.log_history[-1]
    assert logged["lm_loss"] == pytest.approx((ce + ce2) / 2, abs=1e-5)
    assert logged["score_loss"] == pytest.approx((mse + mse2) / 2, abs=1e-5)
    trainer.log({"loss": 1.0})
    assert "lm_loss" not in trainer.state.log_history[-1]  # nothing trained since: no stale parts


def test_the_logged_parts_are_averaged_over_every_rank_as_loss_is(trainer, model, monkeypatch):
    """`loss` is the mean over all ranks (the Trainer gathers it); the parts were rank 0's micro-batches alone. Now
    each training log all-reduces this rank's two running sums and the optimizer steps they cover (1 / the step's
    micro-batches per micro-batch; 1 each here, without accumulation): here the other ranks of a world (the
    all-reduce stood in for) add sums 7.0 and 0.5 over 3 steps, so the logged means are (this rank's two + theirs)
    / 5. A log without `loss` (an evaluation's) reduces nothing."""
    import torch.distributed as dist

    batch = tiny_batch()
    ce, mse = by_hand(model, batch)
    shifted = {**batch, "score_labels": batch["score_labels"] + 1.0}
    ce2, mse2 = by_hand(model, shifted)
    reduced = []

    def all_reduce(tensor, op=dist.ReduceOp.SUM):
        assert op == dist.ReduceOp.SUM and tensor.dtype == torch.float64
        reduced.append(tensor.clone())
        tensor += torch.tensor([7.0, 0.5, 3.0], dtype=torch.float64)  # the other ranks' sums and optimizer steps

    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "all_reduce", all_reduce)
    model.train()
    trainer.compute_loss(model, dict(batch))
    trainer.compute_loss(model, dict(shifted))
    trainer.log({"loss": 1.0})
    assert len(reduced) == 1
    assert reduced[0].tolist() == pytest.approx([ce + ce2, mse + mse2, 2.0], abs=1e-5)
    logged = trainer.state.log_history[-1]
    assert logged["lm_loss"] == pytest.approx((ce + ce2 + 7.0) / 5, abs=1e-5)
    assert logged["score_loss"] == pytest.approx((mse + mse2 + 0.5) / 5, abs=1e-5)
    trainer.log({"eval_loss": 1.0})
    assert len(reduced) == 1
    # A training log after no micro-batch of this rank still joins the all-reduce (the other ranks wait in it).
    trainer.log({"loss": 1.0})
    assert reduced[1].tolist() == [0.0, 0.0, 0.0]
    assert trainer.state.log_history[-1]["lm_loss"] == pytest.approx(7.0 / 3, abs=1e-6)


#: What the second rank of the gloo test brings to the all-reduce: its running sums of lm_loss and score_loss and
#: the optimizer steps they cover.
OTHER_RANK = (7.0, 0.5, 3.0)


def _second_rank(store: str) -> None:
    """Rank 1 of a gloo group of two: joins the log's all-reduce with OTHER_RANK, exits 1 on a wrong sum."""
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{store}", rank=1, world_size=2, timeout=_JOIN_TIMEOUT)
    try:
        totals = torch.tensor(OTHER_RANK, dtype=torch.float64)
        dist.all_reduce(totals, op=dist.ReduceOp.SUM)
        ok = totals[2].item() == OTHER_RANK[2] + 1  # rank 0 logged after one step of one micro-batch
    finally:
        dist.destroy_process_group()
    raise SystemExit(0 if ok else 1)


def test_the_logged_parts_all_reduce_with_a_second_rank_through_gloo(trainer, model, tmp_path):
    """A real gloo process group of two ranks (torch.distributed initialised, as under a launcher): this process is
    rank 0, with the trainer and one micro-batch; a forked rank 1 adds sums 7.0 and 0.5 over 3 optimizer steps. The
    logged means are (this rank's part + the other's) / 4, which a log of this rank's alone (ce, mse) would miss."""
    import multiprocessing

    import torch.distributed as dist

    batch = tiny_batch()
    ce, mse = by_hand(model, batch)
    store = tmp_path / "store"
    # fork: the child has torch already imported (a spawned one would import it again); it runs no torch kernels
    # but the all-reduce.
    other = multiprocessing.get_context("fork").Process(target=_second_rank, args=(str(store),))
    other.start()
    try:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=2, timeout=_JOIN_TIMEOUT)
        try:
            model.train()
            trainer.compute_loss(model, dict(batch))
            trainer.log({"loss": 1.0})
        finally:
            dist.destroy_process_group()
        other.join(60)
    finally:
        if other.is_alive():  # rank 0 never joined the all-reduce: do not leave rank 1 waiting in it
            other.kill()
            other.join()
    logged = trainer.state.log_history[-1]
    assert logged["lm_loss"] == pytest.approx((ce + OTHER_RANK[0]) / 4, abs=1e-5)
    assert logged["score_loss"] == pytest.approx((mse + OTHER_RANK[1]) / 4, abs=1e-5)
    assert other.exitcode == 0


def test_score_labels_stay_float32_where_deepspeed_casts_the_batch(trainer, model, monkeypatch):
    """Under DeepSpeed, Trainer._prepare_input casts every floating tensor of a batch to DeepSpeed's dtype
    (transformers' trainer.py: `self.is_deepspeed_enabled` and `accelerator.state.deepspeed_plugin.hf_ds_config
    .dtype()`, bf16 for the shipped configs). That exact condition is set here, without a DeepSpeed engine: another
    float tensor is cast to bf16, but a mean of experts' 2, 2, 1 stays 5/3 in float32 (bf16 would make it
    1.6640625), and the MSE is taken against that label in float32."""
    from types import SimpleNamespace

    import torch.nn.functional as F

    plugin = SimpleNamespace(hf_ds_config=SimpleNamespace(dtype=lambda: torch.bfloat16))
    monkeypatch.setattr(trainer, "is_deepspeed_enabled", True)
    monkeypatch.setattr(trainer, "accelerator", SimpleNamespace(state=SimpleNamespace(deepspeed_plugin=plugin)))
    label = torch.tensor([5 / 3, 5 / 3], dtype=torch.float32)
    batch = {**tiny_batch(), "score_labels": label.clone(), "other_floats": torch.tensor([5 / 3])}
    prepared = trainer._prepare_inputs(batch)
    assert prepared["other_floats"].dtype == torch.bfloat16 and prepared["other_floats"].item() == 1.6640625
    assert prepared["score_labels"].dtype == torch.float32
    assert torch.equal(prepared["score_labels"], label) and prepared["score_labels"][0].item() == float(label[0])
    assert prepared["input_ids"].dtype == torch.long  # integer inputs are never cast
    del prepared["other_floats"]
    model.eval()
    with torch.no_grad():
        loss, outputs = trainer.compute_loss(model, prepared, return_outputs=True)
    assert float(loss) == float(LM_WEIGHT * outputs.loss + SCORE_WEIGHT * F.mse_loss(outputs.scores.float(), label))


@pytest.mark.parametrize("across_devices, ranks_scale", [(True, 2), (False, 1)], ids=["across-devices", "per-rank"])
def test_with_tokens_counted_over_every_rank_the_cross_entropy_is_scaled_by_the_ranks(trainer, model, monkeypatch,
                                                                                      across_devices, ranks_scale):
    """With average_tokens_across_devices, num_items_in_batch counts every rank's labelled tokens (here the batch's 6
    and another rank's 4) and DDP averages the ranks' gradients: the cross-entropy is scaled back by the 2 ranks, so
    each token weighs 1/10 of the step's gradient, as in Trainer.compute_loss. Without it the count is this rank's
    own and nothing is scaled (a count of 10 then stands for tokens of this rank alone)."""
    batch = tiny_batch()
    ce, mse = by_hand(model, batch)
    ce_sum = 6 * ce  # by_hand's mean is over the batch's 6 labelled next tokens
    monkeypatch.setattr(type(trainer.accelerator), "num_processes", property(lambda self: 2))
    monkeypatch.setattr(trainer.args, "average_tokens_across_devices", across_devices)
    model.train()  # dropout is 0 in the tiny config
    trainer.current_gradient_accumulation_steps = 1
    with torch.no_grad():
        loss = trainer.compute_loss(model, dict(batch), num_items_in_batch=torch.tensor(6 + 4))
    assert float(loss) == pytest.approx(LM_WEIGHT * ranks_scale * ce_sum / 10 + SCORE_WEIGHT * mse, rel=1e-5)


def _micro_batch(length: int, labelled: int, score: float, seed: int) -> dict[str, torch.Tensor]:
    """One row of ``length`` tokens whose last ``labelled`` next tokens are the rationale (label -100 before)."""
    input_ids = torch.randint(1, 1000, (1, length), generator=torch.Generator().manual_seed(seed))
    labels = input_ids.clone()
    labels[:, : length - labelled] = -100
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids), "labels": labels,
            "score_labels": torch.tensor([score])}  # fmt: skip


def test_with_accumulation_every_labelled_token_weighs_the_same(model, tmp_path):
    """Two micro-batches of one optimizer step (gradient accumulation 2), with 1 and 5 labelled tokens. Through
    Trainer.training_step with the Trainer's own count of labelled tokens (num_items_in_batch), the accumulated
    gradient is that of lm_weight * (the mean cross-entropy of all 6 tokens) + score_weight * (the mean of the two
    micro-batches' MSE), computed by hand from full logits; a mean per micro-batch (the lone token weighing 1/2, each
    of the five 1/10) gives another gradient. The logged parts are the step's two terms."""
    from transformers import TrainingArguments

    from train.joint_loss import JointLossTrainer

    args = TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True, disable_tqdm=True,
                             gradient_accumulation_steps=2)
    trainer = JointLossTrainer(model=model, args=args, lm_loss_weight=LM_WEIGHT, score_loss_weight=SCORE_WEIGHT)
    batches = [_micro_batch(4, 1, 2.0, seed=1), _micro_batch(8, 5, 0.5, seed=2)]
    assert trainer.model_accepts_loss_kwargs
    # The Trainer counts what forward divides by: the labelled next tokens, labels[..., 1:], as for a causal LM. A
    # row labelled from its first position has 3 labels and 2 predicted tokens.
    assert trainer._loss_shifts_labels
    assert int(trainer._get_num_items_in_batch([{"labels": torch.tensor([[5, 6, 7]])}], torch.device("cpu"))) == 2
    num_items = trainer._get_num_items_in_batch(batches, torch.device("cpu"))
    assert int(num_items) == 1 + 5

    def by_hand(per_micro_batch_mean: bool) -> tuple[dict[str, torch.Tensor], list[float], list[float]]:
        model.zero_grad()
        total, token_ces, mses = 0.0, [], []
        for batch in batches:
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
            log_probs = torch.log_softmax(out.logits[0, :-1].float(), dim=-1)
            targets = batch["labels"][0, 1:]
            ces = [-log_probs[t, targets[t]] for t in range(len(targets)) if targets[t] != -100]
            mse = (out.scores[0] - batch["score_labels"][0]) ** 2  # the head at the last token of a one-row batch
            ce = sum(ces) / len(ces) / 2 if per_micro_batch_mean else sum(ces) / 6
            total = total + LM_WEIGHT * ce + SCORE_WEIGHT * mse / 2
            token_ces += [c.item() for c in ces]
            mses.append(mse.item())
        total.backward()
        return {name: weight.grad.clone() for name, weight in checked().items()}, token_ces, mses

    def checked() -> dict[str, torch.Tensor]:
        """The LM head (tied to the embeddings, as in the small Qwen2.5), the score head and a backbone weight."""
        return {"lm_head": model.lm_head.weight, "score": model.score.weight,
                "up_proj": model.model.layers[0].mlp.up_proj.weight}

    model.train()  # dropout is 0 in the tiny config
    expected, token_ces, mses = by_hand(per_micro_batch_mean=False)
    per_batch_mean, _, _ = by_hand(per_micro_batch_mean=True)
    model.zero_grad()
    trainer.current_gradient_accumulation_steps = 2  # as the training loop sets it for a step of two micro-batches
    for batch in batches:
        trainer.training_step(model, dict(batch), num_items)
    got = {name: weight.grad for name, weight in checked().items()}
    for name in got:
        assert torch.allclose(got[name], expected[name], rtol=1e-4, atol=1e-7), name
    assert not torch.allclose(got["lm_head"], per_batch_mean["lm_head"], rtol=1e-2, atol=1e-6)
    trainer.log({"loss": 1.0})
    logged = trainer.state.log_history[-1]
    assert logged["lm_loss"] == pytest.approx(sum(token_ces) / 6, abs=1e-5)
    assert logged["score_loss"] == pytest.approx(sum(mses) / 2, abs=1e-5)


@pytest.mark.parametrize("input_ids, mask, pad_token_id, expected", [
    ([[0, 0, 7, 8, 9], [5, 6, 7, 8, 0]], [[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]], 0, [4, 4]),
    ([[5, 6, 7, 0, 0], [5, 6, 7, 8, 0]], [[1, 1, 1, 0, 0], [1, 1, 1, 1, 0]], 0, [2, 3]),
    ([[5, 6, 7, 0, 0], [5, 6, 7, 8, 0]], None, 0, [2, 3]),
    ([[5, 6, 7, 0, 0], [5, 6, 7, 8, 0]], None, None, [4, 4]),
], ids=["left-padding-and-a-pad-id-in-the-text", "right-padding", "no-mask-the-pad-id", "no-mask-no-pad-id"])
def test_last_token_index_finds_the_last_real_token(input_ids, mask, pad_token_id, expected):
    """The score head's position for each way a batch says where its text ends: the mask when given (left padding;
    a text whose last token is the pad id's, row 1 of the first case, ends at 4, not 3), else the rightmost token
    that is not the pad id, else the last position."""
    from train.score_head import last_token_index

    attention_mask = None if mask is None else torch.tensor(mask)
    assert last_token_index(torch.tensor(input_ids), attention_mask, pad_token_id).tolist() == expected
