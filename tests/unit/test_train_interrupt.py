"""Ctrl+C (SIGINT) during ``judge-train run``: the first stops at the end of the step with a checkpoint (or, during
a save, at that checkpoint), a second stops at once; the run exits 130 with one line naming the checkpoint kept and
``--resume``, no traceback, its run folder's lock released (train/preemption.py ``SaveAndStopOnSignal``,
train/cli.py ``_interrupted``): never Python's KeyboardInterrupt wherever it lands, which would mean a traceback,
the steps since the last save lost, and a save it cut left as a checkpoint folder without its state.

The signals are real (``os.kill`` of this process) and sent at a known point: from a callback at a given step, or
from inside the trainer's save."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import types
from datetime import timedelta
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_launcher(monkeypatch, python_sigint_handler):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)


@contextlib.contextmanager
def _not_raised_out():
    """Fails the test where a KeyboardInterrupt comes out of the block, instead of letting it end the test session
    (what Ctrl+C did before it was handled)."""
    try:
        yield
    except KeyboardInterrupt:
        pytest.fail("Ctrl+C came out as KeyboardInterrupt")


def _trainer(run, output_dir: Path, *, save_steps: int = 100, callbacks=()):
    """transformers' Trainer of the two-weight regressor for 6 steps, the stopper first among its callbacks."""
    from transformers import Trainer, TrainingArguments

    from tests.support.tiny_regressor import regressor, regressor_rows

    args = TrainingArguments(str(output_dir), per_device_train_batch_size=2, max_steps=6, learning_rate=0.0,
                             save_strategy="steps", save_steps=save_steps, use_cpu=True, report_to=[],
                             disable_tqdm=True)  # fmt: skip
    return Trainer(model=regressor(), args=args, train_dataset=regressor_rows(12),
                   callbacks=[run.stopper, *callbacks])


def _ctrl_c_at_step(step: int):
    """A callback that presses Ctrl+C as optimizer step ``step`` begins."""
    from transformers import TrainerCallback

    class CtrlC(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == step - 1:
                os.kill(os.getpid(), signal.SIGINT)

    return CtrlC()


def _ctrl_c_inside_the_save(monkeypatch, signum: int = signal.SIGINT) -> None:
    """Ctrl+C (or ``signum``) inside the trainer's next checkpoint save, once the weights are written and before
    the optimizer, the RNG state and trainer_state.json are."""
    from transformers import Trainer

    save = Trainer._save_optimizer_and_scheduler

    def interrupted(self, output_dir):
        os.kill(os.getpid(), signum)
        return save(self, output_dir)

    monkeypatch.setattr(Trainer, "_save_optimizer_and_scheduler", interrupted)


def _checkpoints(folder: Path) -> list[tuple[str, str | None]]:
    from train.output_folder import survey_checkpoints

    return [(path.name, why) for path, why in survey_checkpoints(folder)]


def test_the_first_ctrl_c_finishes_the_step_saves_it_and_stops(tmp_path, capfd):
    """Pressed as step 3 of 6 begins: step 3 is trained and saved (checkpoint-3, whole), training stops there, the
    run's status is 130, and Python's handler is back afterwards. One line said at once what would happen."""
    from tests.support.tiny_regressor import prepared_run
    from train.exit_status import stop_exit_code

    run = prepared_run(tmp_path, export_under_stopper=False)
    with _not_raised_out():
        result = run.train(_trainer(run, tmp_path, callbacks=[_ctrl_c_at_step(3)]))
    assert (result.global_step, run.stopper.stopped_at_step, result.stopped_by_signal) == (3, 3, signal.SIGINT)
    assert _checkpoints(tmp_path) == [("checkpoint-3", None)]
    assert result.requeued is False and stop_exit_code(result) == 130
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert ("judge-train: Ctrl+C: stopping at the end of this step, with a checkpoint; Ctrl+C again stops at once, "
            "without it") in capfd.readouterr().err


@pytest.mark.parametrize("overwrite", [True, False], ids=["overwrite-output-dir", "resume"])
def test_ctrl_c_while_the_trainer_sets_up_stops_before_training_and_keeps_the_earlier_run(overwrite, tmp_path,
                                                                                          monkeypatch, capfd):
    """Pressed while ``trainer.train()`` sets up (the optimizer, DeepSpeed, a checkpoint's load: minutes for a large
    model), with the stopper already installed: nothing of this launch is trained, so it stops at once, before the
    first step, as a press while the run is built does; and an ``--overwrite-output-dir`` launch has not deleted the
    earlier run, which a user may be pressing Ctrl+C to keep: that run is not deleted at ``on_train_begin`` with a
    step trained and saved before the launch stops."""
    from transformers import Trainer

    from tests.support.tiny_regressor import prepared_run

    prepare = Trainer._prepare_for_training

    def interrupted(self, *args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return prepare(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "_prepare_for_training", interrupted)
    earlier = tmp_path / "checkpoint-3"
    _a_whole_checkpoint(tmp_path, 3)
    config = types.SimpleNamespace(overwrite_output_dir=overwrite, resume=not overwrite, output_dir=str(tmp_path))
    run = prepared_run(tmp_path, config=config, export_under_stopper=False)
    with pytest.raises(KeyboardInterrupt):
        run.train(_trainer(run, tmp_path))
    assert _checkpoints(tmp_path) == [("checkpoint-3", None)] and (earlier / "optimizer.pt").is_file()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert "judge-train: Ctrl+C: stopping before the first step, nothing trained" in capfd.readouterr().err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGUSR1], ids=["ctrl-c", "pre-timeout"])
def test_ctrl_c_during_a_save_stops_at_that_checkpoint_without_training_another_step(signum, tmp_path, monkeypatch):
    """Pressed while checkpoint-2 is being written (save_steps 2): the save finishes whole and training stops at
    step 2: the save is not cut (KeyboardInterrupt), and Slurm's SIGUSR1 there does not train step 3 and save again,
    which its time limit may not leave time for."""
    from tests.support.tiny_regressor import prepared_run

    _ctrl_c_inside_the_save(monkeypatch, signum)
    run = prepared_run(tmp_path, export_under_stopper=False)
    with _not_raised_out():
        result = run.train(_trainer(run, tmp_path, save_steps=2))
    assert (result.global_step, run.stopper.stopped_at_step, result.stopped_by_signal) == (2, 2, signum)
    assert _checkpoints(tmp_path) == [("checkpoint-2", None)]


def test_a_second_ctrl_c_stops_at_once_and_the_save_it_cut_is_not_taken_for_a_checkpoint(tmp_path, monkeypatch):
    """The first press as step 2 begins; the second while checkpoint-2, the save the first asked for, is being
    written: KeyboardInterrupt at once, in the middle of the save. checkpoint-2 holds weights and no trainer state:
    ``--resume`` passes it over, and Python's handler is back."""
    from tests.support.tiny_regressor import prepared_run
    from train.output_folder import latest_checkpoint

    _ctrl_c_inside_the_save(monkeypatch)
    run = prepared_run(tmp_path, export_under_stopper=False)
    with pytest.raises(KeyboardInterrupt):
        run.train(_trainer(run, tmp_path, callbacks=[_ctrl_c_at_step(2)]))
    assert run.stopper.interrupts == 2
    assert _checkpoints(tmp_path) == [("checkpoint-2", "no trainer_state.json")]
    assert any((tmp_path / "checkpoint-2").glob("*.safetensors"))  # the save had begun
    assert latest_checkpoint(tmp_path) is None
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_under_torchrun_a_second_ctrl_c_relayed_as_sigterm_stops_at_once(tmp_path, monkeypatch):
    """Under torchrun the terminal's Ctrl+C reaches torchrun alone (its workers run in sessions of their own). It
    sends each worker the first as SIGINT; a second, pressed while it waits for them, cuts that wait, and its
    shutdown then sends them SIGTERM (torch/distributed/elastic/agent/server/api.py, ``SimpleElasticAgent.run``,
    its ``finally``) and waits ``--shutdown-timeout`` again. A worker takes that SIGTERM as the second press: stops
    at once, in the save the first asked for, not merely setting the flag again while the save goes on."""
    from tests.support.tiny_regressor import prepared_run

    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")  # what torchrun sets in its workers' environment
    _ctrl_c_inside_the_save(monkeypatch, signal.SIGTERM)
    run = prepared_run(tmp_path, export_under_stopper=False)
    with pytest.raises(KeyboardInterrupt):
        run.train(_trainer(run, tmp_path, callbacks=[_ctrl_c_at_step(2)]))
    assert (run.stopper.received, run.stopper.interrupts) == (signal.SIGINT, 2)
    assert _checkpoints(tmp_path) == [("checkpoint-2", "no trainer_state.json")]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("torchrun", [False, True], ids=["one process", "torchrun"])
def test_a_sigterm_without_ctrl_c_is_slurms_stop_under_torchrun_too(torchrun, monkeypatch):
    """Only a SIGTERM after a Ctrl+C is torchrun's relay of a second press: one alone (Slurm's preemption or
    ``scontrol requeue``, which torchrun passes on) stays a stop at the end of the step, with a checkpoint."""
    from train.preemption import SaveAndStopOnSignal

    if torchrun:
        monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")
    stopper = SaveAndStopOnSignal()
    with _not_raised_out():
        stopper._on_signal(signal.SIGTERM, None)  # what its handler does
        stopper._on_signal(signal.SIGTERM, None)  # Slurm's and torchrun's both reach a worker
    assert (stopper.received, stopper.interrupts) == (signal.SIGTERM, 0)


@pytest.mark.parametrize("inherited", [signal.default_int_handler, signal.SIG_IGN], ids=["handled", "ignored"])
def test_the_stopper_takes_ctrl_c_unless_the_process_inherited_it_ignored(inherited):
    """A background job of a shell script starts with SIGINT ignored, so that the script's Ctrl+C is not its: the
    stopper leaves that as it is. Otherwise it takes SIGINT while installed and puts back what it found."""
    from train import preemption

    signal.signal(signal.SIGINT, inherited)
    stopper = preemption.SaveAndStopOnSignal()
    stopper.install()
    try:
        installed = signal.getsignal(signal.SIGINT)
    finally:
        stopper.uninstall()
    assert (installed == stopper._on_signal) is (inherited is not signal.SIG_IGN)
    assert signal.getsignal(signal.SIGINT) is inherited


@pytest.mark.parametrize("rank", ["0", "1"])
def test_a_ctrl_c_stop_exits_130_on_every_rank_and_is_never_requeued(rank, monkeypatch):
    """Under Slurm the ranks other than 0 exit 0 after Slurm's signals (rank 0's status is the job's); Ctrl+C is the
    user's stop on every rank, and nothing requeues it."""
    from train.exit_status import stop_exit_code
    from train.preemption import SaveAndStopOnSignal, requeue_slurm_job

    monkeypatch.setenv("SLURM_JOB_ID", "7")
    monkeypatch.setenv("RANK", rank)
    stopper = SaveAndStopOnSignal()
    stopper.received = signal.SIGINT
    assert requeue_slurm_job(stopper) is False  # returns before any scontrol call
    assert stop_exit_code(types.SimpleNamespace(stopped_by_signal=signal.SIGINT, requeued=False)) == 130


# ------------------------------------------------------------------------------------------------------ two ranks

_JOIN_TIMEOUT = timedelta(seconds=60)


class _StepThenSave:
    """What ``PreparedRun.train`` drives of a Trainer, for step 1 of 6 and its save: every callback's
    ``on_step_end``, then the save, during which ``signal_during_save`` reaches this rank (None: not this one), then
    every callback's ``on_save``, as transformers' loop does."""

    def __init__(self, callbacks, signal_during_save: int | None):
        from transformers import TrainerControl, TrainerState

        self.callbacks, self.signal_during_save = list(callbacks), signal_during_save
        self.state, self.control = TrainerState(max_steps=6), TrainerControl()
        self.lr_scheduler = types.SimpleNamespace(get_last_lr=lambda: [0.0])

    def add_callback(self, callback):
        self.callbacks.append(callback)

    def train(self, resume_from_checkpoint=None):
        self.state.global_step = 1
        for callback in self.callbacks:
            callback.on_step_end(None, self.state, self.control)
        if self.signal_during_save is not None:
            self.callbacks[0]._on_signal(self.signal_during_save, None)  # what its handler does
        for callback in self.callbacks:
            callback.on_save(None, self.state, self.control)


def _on_two_ranks(tmp_path: Path, monkeypatch, target, extra: tuple[tuple, tuple] = ((), ())) -> list[dict]:
    """``target(rank, store, output_dir, seen, *extra[rank])`` as rank 0 here and rank 1 forked, joined through the
    file store ``tmp_path/store``, each in its own ``tmp_path/rank<r>``; returns what each wrote to its ``seen`` file.
    fork: the child has torch and transformers imported already (a spawned one would import them again)."""
    monkeypatch.setenv("RANK", "0")  # the target sets it: put back after
    store = tmp_path / "store"
    seen = [tmp_path / "rank0.json", tmp_path / "rank1.json"]
    other = multiprocessing.get_context("fork").Process(
        target=target, args=(1, str(store), str(tmp_path / "rank1"), str(seen[1]), *extra[1]))
    other.start()
    try:
        target(0, str(store), str(tmp_path / "rank0"), str(seen[0]), *extra[0])
        other.join(60)
    finally:
        if other.is_alive():  # rank 0 never joined a collective: do not leave rank 1 waiting in it
            other.kill()
            other.join()
    assert other.exitcode == 0
    return [json.loads(path.read_text()) for path in seen]


def _one_rank(rank: int, store: str, output_dir: str, seen: str, signal_during_save: int | None) -> None:
    import torch.distributed as dist

    from tests.support.tiny_regressor import prepared_run
    from train.exit_status import stop_exit_code

    os.environ["RANK"] = str(rank)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2, timeout=_JOIN_TIMEOUT)
    try:
        run = prepared_run(output_dir, export_under_stopper=False)
        trainer = _StepThenSave([run.stopper], signal_during_save)
        result = run.train(trainer)
    finally:
        dist.destroy_process_group()
    Path(seen).write_text(json.dumps({"stopped_at_step": run.stopper.stopped_at_step,
                                      "training_stops": trainer.control.should_training_stop,
                                      "stopped_by_signal": result.stopped_by_signal,
                                      "requeued": result.requeued, "exit_status": stop_exit_code(result)}))


def test_ranks_agree_on_a_ctrl_c_that_reached_one_of_them_during_a_save(tmp_path, monkeypatch):
    """Rank 1 alone is interrupted, during checkpoint-1's save: through the stopper's all-reduce in ``on_save`` both
    ranks stop at step 1, both know it was Ctrl+C, and both exit 130 (under Slurm too). Rank 1 runs forked."""
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    expected = {"stopped_at_step": 1, "training_stops": True, "stopped_by_signal": int(signal.SIGINT),
                "requeued": False, "exit_status": 130}
    assert _on_two_ranks(tmp_path, monkeypatch, _one_rank, ((None,), (signal.SIGINT,))) == [expected, expected]


def _scontrol_recorded(tmp_path: Path, monkeypatch) -> Path:
    """A stand-in ``scontrol`` first on PATH that records each call's arguments, a line a call, in the file returned
    (absent: never called), and answers as for a job Slurm is preempting, so a requeue asked would be made."""
    from tests.support.fake_commands import write_executables

    calls = tmp_path / "scontrol_calls"
    bin_dir = write_executables(tmp_path / "bin", {"scontrol": (
        f'echo "$*" >>{calls}\n'
        'if [[ $1 == show ]]; then echo "JobId=$3 JobState=RUNNING PreemptTime=2026-01-01T00:00:00 Restarts=0"; fi\n')})
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return calls


@pytest.mark.parametrize("signals", [(signal.SIGTERM, signal.SIGINT), (signal.SIGINT, signal.SIGUSR1)],
                         ids=["sigterm-and-ctrl-c", "ctrl-c-and-sigusr1"])
def test_ranks_that_got_ctrl_c_and_slurms_signal_both_stop_as_interrupted(signals, tmp_path, monkeypatch):
    """Rank 0 and rank 1 get different signals during checkpoint-1's save, one of them Ctrl+C: both stop there as
    interrupted (SIGINT, exit 130, no requeue asked), as one rank that gets both does (``_on_signal``: the user's stop
    stays one). The all-reduce does not take the highest signal number, SIGTERM (15) or SIGUSR1 (10) over SIGINT (2):
    both ranks would stop as for Slurm (exit 75), and under Slurm rank 0 would ask for a requeue the user had not. Run
    under Slurm here (SLURM_JOB_ID set, an scontrol that would requeue the job): rank 0 calls no scontrol."""
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    calls = _scontrol_recorded(tmp_path, monkeypatch)
    expected = {"stopped_at_step": 1, "training_stops": True, "stopped_by_signal": int(signal.SIGINT),
                "requeued": False, "exit_status": 130}
    assert _on_two_ranks(tmp_path, monkeypatch, _one_rank, ((signals[0],), (signals[1],))) == [expected, expected]
    assert not calls.exists()


def test_the_stopper_ranks_slurms_signals_below_ctrl_c_and_sigterm_above_sigusr1():
    """What each rank puts into the all-reduce (the highest wins): Ctrl+C over any Slurm signal; SIGTERM (``scancel``,
    preemption: requeued only when preempted) over SIGUSR1 (the time limit's warning: always requeued), so that a
    cancelled job is not brought back by a warning that came with the cancel; any signal over none."""
    from train.preemption import _from_all_reduced, _to_all_reduce

    ordered = [None, signal.SIGUSR1, signal.SIGTERM, signal.SIGINT]
    values = [_to_all_reduce(signum) for signum in ordered]
    assert values == sorted(values) and len(set(values)) == 4 and values[0] == 0
    assert [_from_all_reduced(value) for value in values] == [0, *ordered[1:]]


@pytest.mark.parametrize("order", [(signal.SIGTERM, signal.SIGUSR1), (signal.SIGUSR1, signal.SIGTERM)],
                         ids=["sigterm-then-sigusr1", "sigusr1-then-sigterm"])
def test_one_rank_that_gets_sigterm_and_sigusr1_stops_for_sigterm_in_either_order(order):
    """The ranks' precedence holds on one rank too: a ``scancel``'s SIGTERM followed by the time limit's SIGUSR1
    within one step stops for the SIGTERM, whose requeue rule reads the job's record (cancelled: not requeued).
    The later signal does not replace the earlier one on a rank: that rank would stop for SIGUSR1, which always
    requeues, and a cancelled job would come back, where a rank that got only the SIGTERM keeps it out."""
    from train.preemption import SaveAndStopOnSignal

    stopper = SaveAndStopOnSignal()
    with _not_raised_out():
        for signum in order:
            stopper._on_signal(signum, None)  # what its handler does
    assert (stopper.received, stopper.interrupts) == (signal.SIGTERM, 0)


class _ExportingTrainer:
    """What ``train.export.export_after_training`` asks of a trainer on rank ``rank`` of two: its barrier is the
    process group's."""

    def __init__(self, output_dir: str, rank: int):
        import torch.distributed as dist

        self.rank = rank
        self.args = types.SimpleNamespace(output_dir=output_dir)
        self.accelerator = types.SimpleNamespace(wait_for_everyone=dist.barrier)
        self.model = None

    def save_model(self, folder):
        os.makedirs(folder, exist_ok=True)

    def is_world_process_zero(self):
        return self.rank == 0


def _export_on_one_rank(rank: int, store: str, output_dir: str, seen: str) -> None:
    """Rank ``rank``'s export after training, its stopper installed as training leaves it; rank 0's is interrupted
    (Ctrl+C, as torchrun relays it) while it loads the trained weights. What the rank ended with goes to ``seen``."""
    import torch.distributed as dist

    from train import export, preemption
    from train.provenance import RunResult

    os.environ["RANK"] = str(rank)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2, timeout=_JOIN_TIMEOUT)
    stopper = preemption.SaveAndStopOnSignal()
    stopper.install()  # what PreparedRun.train leaves installed for the export
    result = RunResult(output_dir=output_dir, export_dir=None, global_step=6, final_learning_rate=0.0)
    try:
        export.export_after_training(_ExportingTrainer(output_dir, rank), stopper=stopper, result=result,
                                     mode="seq2seq", model_cls=None, tokenizer=None, probe_texts=[], base_model="b",
                                     dtype=None, export_dir=Path(output_dir) / "export")
        outcome = {"exported": result.export_dir}
    except preemption.ExportAbandoned as abandoned:
        outcome = {"abandoned": abandoned.code, "stopped_by_signal": result.stopped_by_signal,
                   "export_dir": result.export_dir}
    except Exception as err:  # what the rank would have shown as a traceback
        outcome = {"error": f"{type(err).__name__}: {err}"[:200]}
    finally:
        dist.destroy_process_group()
    Path(seen).write_text(json.dumps(outcome))


def test_every_rank_ends_as_interrupted_when_ctrl_c_gives_rank_0s_export_up(tmp_path, monkeypatch):
    """Under torchrun every rank gets Ctrl+C while rank 0 exports alone and the others wait for it. Rank 0 gives
    the export up; the others, told so, exit 130 as it does, never waiting in a barrier that rank 0 never reaches
    (when it exits, gloo's "Connection closed by peer" traceback, exit 1; under NCCL a hang until torchrun's
    SIGKILL). Rank 1 runs forked."""
    from train import export

    def load_and_be_interrupted(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return "the trained model"

    monkeypatch.setattr(export, "probe_batch", lambda tokenizer, texts: {})
    monkeypatch.setattr(export, "live_outputs", lambda model, batch: {})
    monkeypatch.setattr(export, "load_trained", load_and_be_interrupted)
    for rank in (0, 1):
        (tmp_path / f"rank{rank}").mkdir()
    expected = {"abandoned": 130, "stopped_by_signal": int(signal.SIGINT), "export_dir": None}
    assert _on_two_ranks(tmp_path, monkeypatch, _export_on_one_rank) == [expected, expected]
    assert not (tmp_path / "rank0" / "export").exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


# ------------------------------------------------------------------------------------------------ judge-train run


def _run_with_recipe(tmp_path, monkeypatch, recipe) -> tuple[int, Path]:
    """``judge-train run`` of the tiny seq2seq config into ``tmp_path/run``, its recipe replaced by ``recipe``."""
    from train import cli

    module = types.ModuleType("fake_recipe")
    module.main = recipe
    monkeypatch.setitem(__import__("sys").modules, "fake_recipe", module)
    monkeypatch.setitem(cli.RECIPE_ENTRIES, "seq2seq", ("fake_recipe", "main", "judge"))
    monkeypatch.setattr(cli, "check_training_data", lambda config, **settings: None)
    monkeypatch.setattr("train.training_arguments.check_training_arguments", lambda config: None)
    out = tmp_path / "run"
    with _not_raised_out():
        return cli.run(["--config", str(REPO / "configs/train/tiny/seq2seq.yaml"), "--output-dir", str(out)]), out


def _a_whole_checkpoint(out: Path, step: int) -> None:
    checkpoint = out / f"checkpoint-{step}"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": 12}))
    for name in ("optimizer.pt", "scheduler.pt"):
        (checkpoint / name).write_bytes(b"state")


def test_ctrl_c_before_training_exits_130_with_one_line_and_releases_the_folder(tmp_path, monkeypatch, capsys):
    """Pressed while the recipe builds its run (Python's own handler: nothing trained yet): one line on stderr, no
    traceback, exit 130, and the run folder no longer held."""
    from judge.plumbing.run_folder import run_folder_holder

    def recipe(config):
        os.kill(os.getpid(), signal.SIGINT)  # the data, the arguments or the model are being built
        raise AssertionError("Ctrl+C did not stop the recipe")

    code, out = _run_with_recipe(tmp_path, monkeypatch, recipe)
    assert code == 130
    assert capsys.readouterr().err == (f"judge-train run: interrupted (Ctrl+C); no checkpoint to resume from in "
                                       f"{out}; rerun the same command to start again\n")
    assert run_folder_holder(out) is None


def _build_cut_by(monkeypatch, cut) -> None:
    """The tiny base's build writes its config, then ``cut`` happens to it (a Ctrl+C, a full disk)."""
    from train import tiny_models

    def build(out_dir, **settings):
        (Path(out_dir) / "config.json").write_text("{}")
        cut()
        raise AssertionError("the build went on after it was cut")

    monkeypatch.setattr(tiny_models, "build_tiny_qwen2", build)


def test_ctrl_c_while_the_tiny_base_is_built_leaves_no_scratch_folder(tmp_path, monkeypatch, capsys):
    """The tiny base is built in a scratch folder in the run folder and renamed into place: a Ctrl+C during the
    build stops at once (exit 130, one line) and takes the half-built scratch folder with it: no ``.base-model-*``
    folder of partial weights is left in the run folder."""
    from train.recipe_steps import resolve_base_model

    _build_cut_by(monkeypatch, lambda: os.kill(os.getpid(), signal.SIGINT))
    code, out = _run_with_recipe(tmp_path, monkeypatch, resolve_base_model)
    assert code == 130
    assert "interrupted (Ctrl+C)" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".base-model") or p.name == "base-model") == []


def test_a_tiny_base_build_that_fails_leaves_no_scratch_folder(tmp_path, monkeypatch):
    """A build that raises (a full disk) is raised as it was, its scratch folder removed, no base-model in place."""
    import errno

    from train.config import TINY_MODEL
    from train.recipe_steps import resolve_base_model

    def full():
        raise OSError(errno.ENOSPC, "No space left on device")

    _build_cut_by(monkeypatch, full)
    config = types.SimpleNamespace(model_name_or_path=TINY_MODEL, output_dir=str(tmp_path / "run"), seed=0)
    with pytest.raises(OSError, match="No space left"):
        resolve_base_model(config)
    assert list((tmp_path / "run").iterdir()) == []


@pytest.mark.parametrize("how", ["stopped at a checkpoint", "export given up", "second Ctrl+C"],
                         ids=["stopped", "export", "twice"])
def test_a_ctrl_c_stop_names_the_checkpoint_kept_and_resume(how, tmp_path, monkeypatch, capsys):
    """However Ctrl+C ended the recipe (the stopper's checkpoint, the export given up, a second press at once), the
    one line names the newest whole checkpoint and ``--resume``, and a checkpoint the interrupt cut is named as
    passed over, not as kept."""
    from judge.plumbing.run_folder import run_folder_holder
    from train.exit_status import ExportAbandoned

    def recipe(config):
        out = Path(config.output_dir)
        _a_whole_checkpoint(out, 3)
        (out / "checkpoint-4").mkdir()  # cut off before its trainer_state.json
        if how == "export given up":
            raise ExportAbandoned(130)
        if how == "second Ctrl+C":
            raise KeyboardInterrupt
        return types.SimpleNamespace(export_dir=None, global_step=3, stopped_by_signal=signal.SIGINT, requeued=False)

    code, out = _run_with_recipe(tmp_path, monkeypatch, recipe)
    assert code == 130
    assert capsys.readouterr().err == (f"judge-train run: interrupted (Ctrl+C); checkpoint-3 in {out} is kept "
                                       "(checkpoint-4: cut off while saving, passed over); continue with --resume\n")
    assert run_folder_holder(out) is None


def test_a_ctrl_c_during_the_last_save_of_a_run_that_then_exports_whole_exits_0(tmp_path, monkeypatch, capsys):
    """Pressed during the final step's save, Ctrl+C does not stop training (it ends there anyway); a recipe whose
    export runs without the stopper's watch (the task classifier's) then exports in full. The run is finished and
    exported: exit 0 with the export's line, as a ``--resume`` of it says, not 130 saying "interrupted", which
    would keep an ``afterok`` dependant from ever starting on a finished run."""
    from tests.support.tiny_regressor import prepared_run

    _ctrl_c_inside_the_save(monkeypatch)  # the first save of a run saving only at its last step, 6

    def recipe(config):
        run = prepared_run(config.output_dir, export_under_stopper=False)
        result = run.train(_trainer(run, Path(config.output_dir)))
        assert not run.stopped and result.stopped_by_signal == signal.SIGINT  # trained to the end
        result.export_dir = str(Path(config.output_dir) / "export")  # what export_classifier records
        return result

    code, out = _run_with_recipe(tmp_path, monkeypatch, recipe)
    assert (code, capsys.readouterr().out.splitlines()[-1]) == (0, f"judge-train: exported judge to {out / 'export'}")
    assert _checkpoints(out) == [("checkpoint-6", None)]


@pytest.mark.parametrize("rank", ["0", "1"])
@pytest.mark.parametrize("ended", ["exported", "stopped by Slurm"])
def test_the_runs_last_line_is_global_rank_0s_alone(ended, rank, tmp_path, monkeypatch, capsys):
    """Under torchrun or deepspeed every rank returns the recipe's result; the job log's last line (the export, or
    the stop and --resume) is said by global rank 0 alone, as the interrupted and finished lines are, not one
    "exported" line a rank."""
    monkeypatch.setenv("RANK", rank)

    def recipe(config):
        export = str(Path(config.output_dir) / "export") if ended == "exported" else None
        return types.SimpleNamespace(export_dir=export, global_step=3, stopped_by_signal=signal.SIGUSR1,
                                     requeued=False)

    code, out = _run_with_recipe(tmp_path, monkeypatch, recipe)
    said = {"exported": f"judge-train: exported judge to {out / 'export'}",
            "stopped by Slurm": "judge-train: stopped at step 3; continue with --resume"}[ended]
    assert code == (0 if ended == "exported" else 75)
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("judge-train:")] == (
        [said] if rank == "0" else [])


def test_a_sigterm_after_ctrl_c_leaves_it_the_users_stop():
    """A one-process ``accelerate launch`` sends ``judge-train`` SIGTERM after the terminal's Ctrl+C: the run still
    stops as interrupted (130, not requeued), not as a Slurm stop (75), and not at once (outside torchrun that
    SIGTERM is no second press)."""
    from train.preemption import SaveAndStopOnSignal

    stopper = SaveAndStopOnSignal()
    stopper._on_signal(signal.SIGINT, None)  # what its handler does
    stopper._on_signal(signal.SIGTERM, None)
    assert (stopper.received, stopper.interrupts) == (signal.SIGINT, 1)
