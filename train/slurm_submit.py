"""``judge-train submit``: render ``slurm/train.sbatch`` for N nodes x G GPUs and submit it with ``sbatch``.

Usage::

    judge-train submit --config configs/train/t-lite/seq2seq.yaml --nodes 8 --gpus-per-node 8 --dry-run
    judge-train submit --config configs/train/t-pro/seq2seq.yaml --nodes 8 --gpus-per-node 8 \\
        --partition gpu --account my-project --time 48:00:00 --output-dir /shared/runs/t-pro-seq2seq

Python reads the recipe YAML (through ``train.config.load_config``, so a bad config fails here, before the job
queues); bash never does. What ``judge-train run`` in the job would refuse is refused here too: its data and base
model (``train.cli.check_training_data``, a hub id looked up in the job's cache, never downloaded), its
trainer arguments, the run folder's refusals (``train.output_folder.check_output_dir``, resuming as the job will;
left to the job when it waits for another), and a DeepSpeed JSON's fixed accumulation against the one planned
here. The rendered script is ``slurm/train.sbatch`` with its ``#SBATCH`` header set to the requested values and a
block of ``export JUDGE_...`` lines after it, including the gradient accumulation that keeps the global batch (256
in the POLLUX paper) on N x G ranks::

    global_batch_size = per_device_train_batch_size x gradient_accumulation x nodes x ranks_per_node

A GRPO config with ``use_vllm: true`` and ``vllm_mode: server`` renders the same script with the vLLM server on the
first node (``trl vllm-serve``, ``JUDGE_VLLM_SERVE_*``) and training on the other nodes, whose ranks alone count in
the batch arithmetic; its tensor-parallel size is checked against the model's attention heads when the model's
config.json is here (a folder, or the job's HF cache). Colocated GRPO (vLLM inside each training rank) is an
ordinary job.

Every ``JUDGE_*`` variable the template reads is rendered: exported with its value, or unset when submit has none
for it, so that a value left in the submitting shell (``sbatch`` hands the job the caller's environment) never
reaches the job: a leftover ``JUDGE_OVERWRITE_OUTPUT_DIR=1`` would delete the run a resubmission meant to resume.
Each such variable set in the shell is named on stderr with the flag that sets it.

``--dry-run`` prints that script and submits nothing; otherwise it is written to
``<output_dir>/slurm/train-<UTC time>.sbatch`` (the run folder keeps what was submitted; removed again when sbatch
refuses it) and passed to ``sbatch``, whose job log goes to ``<output_dir>/slurm/<job name>-<job id>.out``. A
run folder that a live job of the same user already trains in (``squeue``: its batch script is one kept there) or
that a live process holds (``run.lock``) is refused, as that job's judge-train would refuse this one's. A job Slurm
accepts but keeps pending for a reason it cannot start under as submitted (more nodes or time than the partition
gives) is named on stderr, with what to do.
``--gpus-per-node 0`` requests no GPUs and runs one CPU rank per node (``--cpu-ranks-per-node``, refused beside
GPUs): the tiny CPU configs and the Slurm tests use it.

Why one module of ~1,150 lines: every check here guards the one rendered script, against the same parsed flags and
config, so that a bad submission fails before it queues; split, each part would re-derive what the others read.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import logging
import math
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from judge.plumbing.json_reading import counted

#: The template: the sbatch script inside the train package, so that an installed wheel has it as a clone does
#: (package data); the repository's ``slurm/train.sbatch`` is a link to it.
DEFAULT_SCRIPT = Path(__file__).resolve().parent / "sbatch" / "train.sbatch"

#: Every variable ``slurm/train.sbatch`` reads from its environment (not those it sets itself, ``JUDGE_NNODES``):
#: the rendered script sets each one or unsets it, so that the kept script is exactly what runs.
TRAIN_SCRIPT_VARIABLES = (
    "JUDGE_CONFIG", "JUDGE_OUTPUT_DIR", "JUDGE_GRAD_ACCUM", "JUDGE_PROCS_PER_NODE", "JUDGE_OVERWRITE_OUTPUT_DIR",
    "JUDGE_VLLM_SERVE_MODEL", "JUDGE_VLLM_SERVE_PORT", "JUDGE_VLLM_GROUP_PORT", "JUDGE_VLLM_SERVE_TP",
    "JUDGE_VLLM_SERVE_MAX_LEN", "JUDGE_CACHE_DIR", "JUDGE_WANDB_DIR", "JUDGE_ENV_SCRIPT", "JUDGE_SRUN_ARGS",
    "JUDGE_MASTER_PORT", "JUDGE_SHUTDOWN_TIMEOUT_S",
)


class SubmitError(ValueError):
    """A submission that cannot be rendered: a batch that does not divide, a bad value, a missing template."""


@dataclass(frozen=True)
class BatchPlan:
    """How the global batch splits over the allocation.

    Attributes:
        global_batch_size: Rows per optimizer step over all ranks.
        per_device_batch_size: Rows per forward pass on one rank.
        nodes: Nodes in the allocation.
        ranks_per_node: Training processes per node (GPUs, or CPU ranks).
        gradient_accumulation: Forward passes per optimizer step on each rank.
    """

    global_batch_size: int
    per_device_batch_size: int
    nodes: int
    ranks_per_node: int
    gradient_accumulation: int

    @property
    def world_size(self) -> int:
        return self.nodes * self.ranks_per_node

    def ranks(self) -> str:
        """``64 ranks (8 nodes x 8)``, ``2 ranks (1 node x 2)``."""
        return f"{counted(self.world_size, 'rank')} ({counted(self.nodes, 'node')} x {self.ranks_per_node})"

    def describe(self) -> str:
        """``256 = 4 per device x 1 accumulation x 64 ranks (8 nodes x 8)``."""
        return (
            f"{self.global_batch_size} = {self.per_device_batch_size} per device x {self.gradient_accumulation} "
            f"accumulation x {self.ranks()}"
        )


FITS_SHOWN = 12  # the per-device batch sizes an error names: the smallest ones, then how many there are
FITS_SCAN = 10**6  # the divisor search stops here: a tenth of a second of Python


def _batch_sizes_that_fit(quotient: int) -> tuple[list[int], bool]:
    """The per-device batch sizes b with b x ranks = a divisor of the batch (the divisors of ``quotient``, the batch
    over the ranks), ascending, and whether the list is whole. Divisors come in pairs around the square root: a scan
    of every b up to the batch stalled the submit for minutes on a batch of 10^9; past a square root of
    ``FITS_SCAN`` (a batch that size is a typo) only the smallest are found, which are the ones that fit a GPU."""
    small, large = [], []
    root = math.isqrt(quotient)
    for b in range(1, min(root, FITS_SCAN) + 1):
        if quotient % b == 0:
            small.append(b)
            if b != quotient // b:
                large.append(quotient // b)
    return (small + large[::-1], True) if root <= FITS_SCAN else (small, False)


def plan_batch(global_batch_size: int, per_device_batch_size: int, nodes: int, ranks_per_node: int) -> BatchPlan:
    """Derive the gradient accumulation that keeps ``global_batch_size`` on ``nodes x ranks_per_node`` ranks.

    Args:
        global_batch_size: Rows per optimizer step (the config's ``global_batch_size``).
        per_device_batch_size: The config's ``per_device_train_batch_size``.
        nodes: Nodes requested.
        ranks_per_node: Ranks on each node.

    Returns:
        The :class:`BatchPlan`.

    Raises:
        SubmitError: When a count is not positive or the global batch does not divide evenly (the message names
            the per-device batch sizes that would divide).
    """
    for name, value in (
        ("global_batch_size", global_batch_size),
        ("per_device_train_batch_size", per_device_batch_size),
        ("nodes", nodes),
        ("ranks per node", ranks_per_node),
    ):
        if value <= 0:
            raise SubmitError(f"{name} must be positive, got {value}")
    per_step = per_device_batch_size * nodes * ranks_per_node
    if global_batch_size % per_step:
        ranks = nodes * ranks_per_node
        fits, complete = ([], True) if global_batch_size % ranks else _batch_sizes_that_fit(global_batch_size // ranks)
        shown = ", ".join(map(str, fits[:FITS_SHOWN]))
        if len(fits) > FITS_SHOWN or not complete:
            shown += ", ..." + (f" ({len(fits)} in all)" if complete else "")
        hint = (
            f"or set per_device_train_batch_size to one of [{shown}]"
            if fits
            else "no per-device batch size fits this many ranks"
        )
        raise SubmitError(
            f"global batch {global_batch_size} does not divide into per-device batch {per_device_batch_size} x "
            f"{counted(nodes, 'node')} x {counted(ranks_per_node, 'rank')} = {per_step} rows per pass; choose "
            f"nodes x GPUs that divide it ({hint})"
        )
    return BatchPlan(global_batch_size, per_device_batch_size, nodes, ranks_per_node, global_batch_size // per_step)


def render_script(template: str, *, sbatch: dict[str, str | None], exports: dict[str, str], notes: Sequence[str],
                  judge_args: Sequence[str] = (), unset: Sequence[str] = ()) -> str:  # fmt: skip
    """Set ``#SBATCH`` options in a script and insert an ``export`` block after its header.

    Args:
        template: The sbatch script text.
        sbatch: Long option name (``nodes``, ``partition``) -> value; ``""`` for a flag without a value (``requeue``),
            ``None`` to remove the option. Options the template lacks are added at the end of the header.
        exports: Environment variables the script reads, exported in order.
        notes: Comment lines explaining the rendered values.
        judge_args: Extra ``judge-train`` arguments, baked in with ``set --`` (the script passes ``"$@"`` on).
        unset: Variables the script reads that have no value here: unset, so that the submitting shell's do not
            reach the job (sbatch passes its environment on) and the script's own defaults apply.

    Returns:
        The rendered script.

    Raises:
        SubmitError: a value holding a control character (a newline would start a command line in the script).
    """
    _refuse_control({**{f"#SBATCH --{k}": v for k, v in sbatch.items() if v is not None},
                     **{f"export {k}": v for k, v in exports.items()},
                     **{f"note {n}": note for n, note in enumerate(notes)},
                     **{f"judge-train argument {a + 1}": arg for a, arg in enumerate(judge_args)}})
    lines = template.splitlines()
    header_end = max((i for i, line in enumerate(lines) if line.startswith("#SBATCH")), default=-1)
    if header_end < 0:
        raise SubmitError("the template has no #SBATCH header")
    remaining = dict(sbatch)
    out: list[str] = []
    for i, line in enumerate(lines):
        key = line[len("#SBATCH --"):].split("=", 1)[0].split()[0] if line.startswith("#SBATCH --") else None
        if key in remaining:
            value = remaining.pop(key)
            if value is not None:
                out.append(_sbatch_line(key, value))
        else:
            out.append(line)
        if i == header_end:
            out.extend(_sbatch_line(k, v) for k, v in remaining.items() if v is not None)
            out.append("#")
            out.append("# --- rendered by `judge-train submit`; the usage below describes the template ---")
            out.extend(f"# {note}" for note in notes)
            out.extend(f"export {name}={shlex.quote(value)}" for name, value in exports.items())
            if unset:
                out.append("unset " + " ".join(unset) + "  # not given to submit: the defaults, not the shell's")
            if judge_args:
                out.append("set -- " + " ".join(shlex.quote(a) for a in judge_args) + ' "$@"')
            out.append("# --- end of rendered values ---")
    return "\n".join(out) + "\n"


def _refuse_control(values: dict[str, object]) -> None:
    """SubmitError naming the first setting whose value holds a control character (``judge.plumbing.config_files``)."""
    from judge.plumbing.config_files import ConfigError, refuse_control_characters

    try:
        for setting, value in values.items():
            refuse_control_characters(setting, value)
    except ConfigError as err:
        raise SubmitError(str(err)) from None


def _deepspeed_note(config: Any) -> str:
    """The rendered notes' line for the DeepSpeed JSON the job trains with (the config's, or the one after --) and
    its ZeRO stage and offloads: what the sharding and the resume rule (a ZeRO checkpoint loads only on the ranks
    that wrote it) depend on, which a dry run otherwise showed nowhere. As the config read it at load
    (``TrainConfig.deepspeed_settings``), the reading its checks took."""
    deepspeed = config.deepspeed
    if deepspeed is None:
        return "deepspeed: none (plain DDP: every rank holds the whole model and optimizer)"
    from train.config import zero_stage

    settings = config.deepspeed_settings()
    zero = settings.get("zero_optimization")
    zero = zero if isinstance(zero, dict) else {}
    offloads = [f"{part} to {zero[key].get('device')}" for part, key in (("optimizer", "offload_optimizer"),
                                                                        ("weights", "offload_param"))
                if isinstance(zero.get(key), dict) and zero[key].get("device") not in (None, "none")]
    return f"deepspeed {deepspeed}: ZeRO stage {zero_stage(settings)}" + (
        f", offloaded: {', '.join(offloads)}" if offloads else "")


def unsplittable_heads(model: str, tp: int, most: int, cache_dir: str | None = None) -> tuple[str, str] | None:
    """``judge.plumbing.tensor_parallel.unsplittable_heads``, the model looked up in the job's Hugging Face cache
    (``_job_hub_cache``; nothing is downloaded)."""
    from judge.plumbing.tensor_parallel import unsplittable_heads as refused_split

    with _job_hub_cache(cache_dir):
        return refused_split(model, tp, most)


def _refuse_blank_names(args: argparse.Namespace) -> None:
    """SubmitError for a blank --partition, --account or --job-name, or a partition or account with a space in it.

    An empty value (``--partition "$PARTITION"`` with the variable unset) rendered a bare ``#SBATCH --partition``,
    which sbatch reads as the option without its value; a blank job name names the job log `` -<id>.out``. Slurm's
    partition and account names hold no whitespace (slurm.conf(5) splits its lines at it), so one with a space is a
    name sbatch cannot find, found at submit instead of in the queue."""
    leave_out = {"--partition": "leave --partition out for the cluster's default partition",
                 "--account": "leave --account out to charge your default account",
                 "--job-name": "leave --job-name out for judge-train-<config folder>-<config file stem>"}
    for flag, value in (("--partition", args.partition), ("--account", args.account), ("--job-name", args.job_name)):
        if value is None:
            continue
        if not value.strip():
            raise SubmitError(f"{flag} {value!r} is blank: give a name, or {leave_out[flag]}")
        if flag != "--job-name" and any(c.isspace() for c in value):
            raise SubmitError(f"{flag} {value!r} holds whitespace, which no Slurm {flag[2:]} name does: give the "
                              f"name alone (several partitions: comma-separated, no spaces), or {leave_out[flag]}")


def _refuse_quoted_srun_args(srun_args: str | None) -> None:
    """SubmitError for a quote, backslash or ``$`` in ``--srun-args``. The script splits JUDGE_SRUN_ARGS at whitespace
    into srun's words with no quoting (bash's ``read -a``; parsing quotes would take ``eval``), so such a character
    would reach srun as written, e.g. a quoted container image path with a space cut into two words, and srun or the
    container plugin would fail once the job left the queue."""
    found = sorted({c for c in srun_args or "" if c in "'\"\\$"})
    if found:
        raise SubmitError(f"--srun-args {srun_args!r}: holds {' '.join(found)}, but the job splits the value at "
                          "whitespace into srun's words with no quoting, so it would reach srun as written; give "
                          "whitespace-separated words without quotes, backslashes or $ (paths without spaces)")


def _sbatch_line(key: str, value: str) -> str:
    """One header line. sbatch splits a directive at whitespace and refuses the leftover word ("Invalid directive
    found in batch script"), and an unpaired quote ("Unmatched `'`"), but keeps a quoted value whole: a value with a
    space or a quote (a run folder, a job name) is quoted with the quote it does not hold; one holding both kinds
    cannot be written and is refused."""
    if value == "":
        return f"#SBATCH --{key}"
    if any(c.isspace() or c in "'\"" for c in value):
        quote = next((q for q in "\"'" if q not in value), None)
        if quote is None:
            raise SubmitError(f"#SBATCH --{key}: a value with both a single and a double quote cannot be written in "
                              f"an #SBATCH line: {value!r}")
        value = f"{quote}{value}{quote}"
    return f"#SBATCH --{key}={value}"


#: ``#SBATCH`` options the rendered script holds and the job depends on -> what to use instead of ``--sbatch-arg``
#: (refused there: a later value would silently win over the planned one, e.g. ``--gpus-per-node=1`` beside
#: ``JUDGE_PROCS_PER_NODE=2``, or ``--signal=B:USR1@60``, which signals only the batch shell, which has no USR1 trap,
#: so bash dies and training is never asked to save).
PLANNED_SBATCH_OPTIONS = {
    "job-name": "use --job-name",
    "nodes": "use --nodes",
    "gpus-per-node": "use --gpus-per-node (the ranks per node follow it)",
    "cpus-per-task": "use --cpus-per-task",
    "time": "use --time",
    "partition": "use --partition",
    "account": "use --account",
    "signal": "use --signal-before-s (the job needs SIGUSR1 at its training steps, not at the batch shell)",
    "output": "use --output-dir (the job log goes to <output dir>/slurm/)",
    "ntasks-per-node": "one task per node runs torchrun, which starts the ranks: use --gpus-per-node or "
                       "--cpu-ranks-per-node",
    "requeue": "the job requeues itself after saving on a signal",
    "no-requeue": "the job must be requeueable: it requeues itself after saving on a signal",
    "open-mode": "a requeued job appends to its log (--open-mode=append)",
}


def _check_one_option_name(option: str, key: str) -> None:
    """SubmitError unless ``key``, the part of an ``--sbatch-arg`` before its ``=``, is one option name as sbatch
    reads it. The key is rendered as written (only a value is quoted), and sbatch reads every word of an #SBATCH line
    as an argument, in order: ``--exclusive --signal=B:USR1@60`` would render a second option that no check saw,
    and the later --signal wins over the planned one. sbatch also drops quotes and backslashes from a directive, so
    ``--si"gnal"=B:USR1@60`` would be --signal under a name the planned check does not know."""
    words = key.split()
    if len(words) > 1:
        rest = option.split(None, 1)[1]
        raise SubmitError(f"--sbatch-arg={option}: one option per --sbatch-arg (sbatch would read {rest} as more "
                          f"arguments of its own, unchecked); give a value after =, e.g. "
                          f"--sbatch-arg=--{words[0]}=VALUE, and each further option in its own --sbatch-arg")
    if not all(c.isascii() and (c.isalnum() or c == "-") for c in key):
        raise SubmitError(f"--sbatch-arg={option}: an option's name is letters, digits and hyphens (sbatch drops the "
                          f"quotes and backslashes of an #SBATCH line, so --{key} would be another option than the "
                          "one checked)")


def _planned_option(name: str) -> str | None:
    """The planned option (``PLANNED_SBATCH_OPTIONS``) that the long option ``--name`` is, or may be read as by
    sbatch's getopt_long (a beginning of its name); None for any other option. Short options (-N, -n, -J ...) are
    refused before, as ``--sbatch-arg`` takes long options only."""
    if name in PLANNED_SBATCH_OPTIONS:
        return name
    return next((planned for planned in PLANNED_SBATCH_OPTIONS if planned.startswith(name)), None)


def _is_dependency(option: str) -> bool:
    """Whether the long option ``option`` is sbatch's ``--dependency``, or a beginning of its name getopt_long reads
    as it (``--dep`` and longer: ``--de`` is also ``--deadline``'s and ``--delay-boot``'s)."""
    name = (option[2:].partition("=")[0].split() or [""])[0] if option.startswith("--") else ""
    return len(name) >= 3 and "dependency".startswith(name)


def slurm_time_s(limit: str | None) -> int | None:
    """Seconds in a Slurm time limit (sbatch(1), --time: "minutes", "minutes:seconds", "hours:minutes:seconds",
    "days-hours", "days-hours:minutes", "days-hours:minutes:seconds"); None when there is none or it does not parse
    (sbatch says why), 0 for no limit."""
    if not limit:
        return None
    if limit.strip().lower() in ("infinite", "unlimited"):
        return 0
    days, dash, rest = limit.strip().rpartition("-") if "-" in limit else ("", "", limit.strip())
    parts = rest.split(":")
    # ASCII digits: str.isdigit also takes superscripts ("9²"), which int() refuses
    if not all(p.isascii() and p.isdigit() for p in parts) or (dash and not (days.isascii() and days.isdigit())) \
            or len(parts) > 3:
        return None
    try:  # past 4,300 digits int() refuses a decimal string
        numbers = [int(p) for p in parts]
        whole_days = int(days) if dash else 0
    except ValueError:
        return None
    if dash:  # days-hours[:minutes[:seconds]]
        hours, minutes, seconds = (numbers + [0, 0])[:3]
        return ((whole_days * 24 + hours) * 60 + minutes) * 60 + seconds
    if len(numbers) == 3:
        return (numbers[0] * 60 + numbers[1]) * 60 + numbers[2]
    minutes, seconds = (numbers + [0])[:2]
    return minutes * 60 + seconds


#: The forms of a time limit ``slurm_time_s`` reads, as sbatch(1) names them under --time.
TIME_FORMS = ("minutes (90), minutes:seconds (90:00), hours:minutes:seconds (48:00:00), days-hours (2-0), "
              "days-hours:minutes (2-00:00) or days-hours:minutes:seconds (2-00:00:00)")


def _template_option(script_path: Path, key: str) -> str | None:
    """The value of ``#SBATCH --key=value`` in the template (None without one)."""
    for line in script_path.read_text().splitlines():
        if line.startswith(f"#SBATCH --{key}="):
            return line.split("=", 1)[1].strip()
    return None


def build_parser() -> argparse.ArgumentParser:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(
        prog="judge-train submit",
        description="Render slurm/train.sbatch for N nodes x G GPUs (gradient accumulation keeps the config's global "
        "batch) and submit it with sbatch; --dry-run prints the script instead.",
        epilog="example: judge-train submit --config configs/train/t-lite/seq2seq.yaml --nodes 8 --gpus-per-node 8 "
        "--partition gpu --dry-run -- --data TRAIN.jsonl --eval-data VAL.jsonl. Arguments after `--` go to "
        "judge-train in the job (without them, the data are the config's data and eval_data). Exit codes: 0 submitted (or "
        "printed, with --dry-run); 2 a usage or configuration error found before rendering (a pass-through argument "
        "the config does not take, a missing file, a data or eval_data file with no training rows left or with "
        "held-out rows, a base model the recipe cannot train from, a DeepSpeed config whose fixed accumulation or bf16 "
        "this allocation does not give; in the run folder, unless the job waits for another: a resume of an edited "
        "config, of a checkpoint without optimizer.pt or scheduler.pt, of a DeepSpeed ZeRO checkpoint written by "
        "another number of ranks, of checkpoints all cut off mid-save (with -- --resume), or of a folder whose last "
        "--overwrite-output-dir launch stopped before it deleted the earlier run; a fresh run over a finished "
        "export/) or a run folder it cannot write; a run folder a live process holds (its run.lock) or a queued "
        "or running job of yours trains in (squeue: a script submit kept in its slurm/ folder), unless the job waits "
        "for another; a --time Slurm would not read; 127 no sbatch on PATH; sbatch's "
        "own status when it refuses the job (1 if it gives none; the script kept for it is removed). A run already "
        "finished is submitted with a "
        "warning on stderr (its job exits 0 at once), as is each cut-off checkpoint the job will set aside.",
    )
    parser.add_argument("--config", required=True, help="Recipe YAML (configs/train/...).")
    parser.add_argument("--nodes", type=int, required=True, help="Nodes to allocate.")
    parser.add_argument("--gpus-per-node", type=int, required=True, help="GPUs (= ranks) per node; 0 for CPU ranks.")
    parser.add_argument("--cpu-ranks-per-node", type=int,
                        help="Ranks per node when --gpus-per-node is 0 (default 1); refused beside GPUs, where each "
                             "node runs one rank per GPU.")
    parser.add_argument("--dry-run", action="store_true", help="Print the rendered script; submit nothing.")
    parser.add_argument("--inputs-from-earlier-job", action="store_true",
                        help="The data or the base model is written by a job this one waits for (e.g. GRPO after its "
                             "trace SFT, --sbatch-arg=--dependency=afterok:ID): they and the run folder are not "
                             "checked now, the job checks them. An --sbatch-arg=--dependency=... alone leaves the run "
                             "folder to the job as well.")
    parser.add_argument("--partition", help="Slurm partition (#SBATCH --partition).")
    parser.add_argument("--account", help="Slurm account to charge (#SBATCH --account).")
    parser.add_argument("--time", help="Time limit, e.g. 48:00:00 (default: the template's 24:00:00).")
    parser.add_argument("--job-name", help="Job name (default: judge-train-<config folder>-<config file stem>).")
    parser.add_argument("--cpus-per-task", type=int, help="CPUs per node task (default: the template's 16).")
    parser.add_argument("--signal-before-s", type=int, default=600,
                        help="Seconds before the time limit at which SIGUSR1 asks the trainer to checkpoint and "
                        "requeue (below the --time limit; default: %(default)s).")
    parser.add_argument("--output-dir", help="Run folder on shared storage (default: the config's output_dir).")
    parser.add_argument("--cache-dir", help="JUDGE_CACHE_DIR: HF, torch-extension and Triton caches.")
    parser.add_argument("--wandb-dir", help="JUDGE_WANDB_DIR (default: the run folder).")
    parser.add_argument("--env-script", help="JUDGE_ENV_SCRIPT: sourced in the job (module load ..., venv activation).")
    parser.add_argument("--srun-args", help='JUDGE_SRUN_ARGS: extra srun flags, e.g. "--container-image=IMG" '
                        "(split at whitespace, with no quoting: no quotes, backslashes or $).")
    parser.add_argument("--master-port", type=int,
                        help="JUDGE_MASTER_PORT: rendezvous port (default: one the kernel finds free on the first "
                             "training host when the job starts; one given is checked free then, and the job stops "
                             "when it is taken).")
    parser.add_argument("--vllm-server-port", type=int,
                        help="JUDGE_VLLM_SERVE_PORT, GRPO in vLLM server mode: the port of `trl vllm-serve` on the "
                             "first node (default: one the kernel finds free there when the job starts; one given "
                             "is checked free then, and the job stops when it is taken).")
    parser.add_argument("--vllm-group-port", type=int,
                        help="JUDGE_VLLM_GROUP_PORT, GRPO in vLLM server mode: the port of the trainer's weight-sync "
                             "group on the first training host (trl's vllm_group_port; default: one found free there "
                             "when the job starts; one given is checked free then).")
    parser.add_argument("--shutdown-timeout-s", type=int,
                        help="JUDGE_SHUTDOWN_TIMEOUT_S: seconds torchrun lets the ranks finish a save after SIGTERM "
                             "before it kills them (default: the template's 900).")
    parser.add_argument("--sbatch-arg", action="append", default=[], metavar="OPTION",
                        help="Another #SBATCH option, one per flag with its value after =, repeatable: "
                        "--sbatch-arg=--exclusive --sbatch-arg=--mem=0. "
                        "Options submit sets itself (--nodes, --time, --signal, ...) are refused: use their flags.")
    parser.add_argument("--script", default=str(DEFAULT_SCRIPT), help="The sbatch template (default: %(default)s).")
    return parser  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Render and submit (or print) the training job. Returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    judge_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, judge_args = argv[:cut], argv[cut + 1:]
    args = (parser := build_parser()).parse_args(_srun_args_joined(argv, parser))
    try:
        script, output_dir, job_name = _render(args, judge_args)
    except SubmitError as err:
        print(f"judge-train submit: {err}", file=sys.stderr)
        return 2
    if args.dry_run:
        _warn_of_sbatch_variables()  # what a submit would leave out, said before it is run
        sys.stdout.write(script)
        return 0
    slurm_dir = output_dir / "slurm"
    path = slurm_dir / f"train-{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}.sbatch"
    made = [folder for folder in (output_dir, slurm_dir) if not folder.exists()]  # removed again if left empty
    try:
        slurm_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(script)
    except OSError as err:
        print(f"judge-train submit: cannot keep the job script in {slurm_dir}: {err}", file=sys.stderr)
        return 2
    # A second submission into a folder a queued job of the same user will train in: its job would stop at the
    # folder's lock once both run, FAILED (an afterok chain broken). Asked of Slurm here, with the script kept,
    # so that this one is told from it; --dry-run asks Slurm nothing.
    holder = None if _waits_for_another(args) else _queued_writer(slurm_dir, path)
    if holder is not None:
        _drop_kept_script(path, made)
        print(f"judge-train submit: job {holder} already trains in {output_dir}; this job would stop at its lock: "
              f"wait for it, scancel {holder.split()[0]}, or give another --output-dir", file=sys.stderr)
        return 2
    try:
        proc = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True, env=_sbatch_env())
    except FileNotFoundError:
        print(f"judge-train submit: no sbatch on PATH; run on a Slurm login node, or --dry-run ({path} kept)",
              file=sys.stderr)
        return 127
    if proc.returncode != 0:
        # Nothing was submitted: a script kept beside the job scripts of the run would read as one that ran.
        _drop_kept_script(path, made)
        print(f"judge-train submit: sbatch refused the job ({proc.returncode}): {proc.stderr.strip()} (nothing "
              f"submitted; {path} removed)", file=sys.stderr)
        return proc.returncode or 1
    job_id = proc.stdout.strip().split(";")[0]
    log_path = slurm_dir / f"{job_name}-{job_id}.out"
    print(f"submitted job {job_id}: {path}")
    print(f"follow it: squeue -j {job_id}   tail -f {shlex.quote(str(log_path))}")
    print(f"log: {log_path}")
    _warn_if_it_cannot_start(job_id)
    return 0


def _warn_if_it_cannot_start(job_id: str) -> None:
    """Say on stderr when Slurm keeps the job just submitted pending for a reason it cannot start under as submitted
    (``judge.plumbing.slurm_requeue.CANNOT_START_REASONS``: 3 nodes asked of a 2-node partition, a --time past the
    partition's): sbatch accepts such a job and it waits in the queue without a word, possibly for good. Asked of
    squeue once; a squeue that cannot answer, or any other state, says nothing (the job was submitted either way)."""
    from judge.plumbing.slurm_requeue import CANNOT_START_REASONS, run_query

    try:
        proc = run_query(["squeue", "--noheader", "--jobs", job_id, "--format", "%T %r"], 20)
    except (OSError, subprocess.TimeoutExpired):
        return
    state, _, reason = proc.stdout.strip().partition(" ")
    if proc.returncode != 0 or state != "PENDING" or reason not in CANNOT_START_REASONS:
        return
    meaning, remedy = CANNOT_START_REASONS[reason]
    print(f"judge-train submit: warning: job {job_id} is pending with reason {reason}: {meaning}; it may never "
          f"start as it stands. `scontrol show job {job_id}` says what it asks; {remedy.format(job=job_id)}",
          file=sys.stderr)


def _drop_kept_script(path: Path, made: Sequence[Path]) -> None:
    """Remove the script kept for a job that was not submitted, and the folders submit made for it if that left
    them empty (innermost first)."""
    with contextlib.suppress(OSError):
        path.unlink()
    for folder in reversed(made):
        with contextlib.suppress(OSError):  # not empty: something else is there now
            folder.rmdir()


def _srun_args_joined(argv: Sequence[str], parser: argparse.ArgumentParser) -> list[str]:
    """``--srun-args "--container-image=IMG"`` as ``--srun-args=--container-image=IMG``: argparse takes a lone word
    starting with ``-`` for an option, so the help's spelling would fail. The next word is the value unless it is one
    of submit's own options (a forgotten value is still reported)."""
    own, out, i = set(parser._option_string_actions), [], 0
    while i < len(argv):
        word = argv[i]
        if word in ("--srun-args", "--srun_args") and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and argv[i + 1].split("=", 1)[0] not in own:
            word, i = f"--srun-args={argv[i + 1]}", i + 1
        out.append(word)
        i += 1
    return out


#: How a submission sets what a variable of ``TRAIN_SCRIPT_VARIABLES`` would have set from the shell.
_SHELL_VARIABLE_FLAGS = {
    "JUDGE_CACHE_DIR": "--cache-dir", "JUDGE_WANDB_DIR": "--wandb-dir", "JUDGE_ENV_SCRIPT": "--env-script",
    "JUDGE_SRUN_ARGS": "--srun-args", "JUDGE_MASTER_PORT": "--master-port",
    "JUDGE_VLLM_SERVE_PORT": "--vllm-server-port", "JUDGE_VLLM_GROUP_PORT": "--vllm-group-port",
    "JUDGE_SHUTDOWN_TIMEOUT_S": "--shutdown-timeout-s",
    "JUDGE_OVERWRITE_OUTPUT_DIR": "overwrite_output_dir in the config, or -- --overwrite-output-dir",
}


def _warn_of_shell_variables(exports: dict[str, str]) -> None:
    """Name on stderr each ``JUDGE_*`` variable of the submitting shell that the rendered script sets otherwise or
    unsets (sbatch would have handed it to the job): a container image in ``JUDGE_SRUN_ARGS`` or a venv in
    ``JUDGE_ENV_SCRIPT`` exported for an older submit would otherwise be dropped without a word."""
    overridden = [name for name in TRAIN_SCRIPT_VARIABLES
                  if name in os.environ and os.environ[name] != exports.get(name)]
    for name in overridden:
        how = _SHELL_VARIABLE_FLAGS.get(name, "submit's flags and the config")
        print(f"judge-train submit: warning: {name} in this shell does not reach the job (the kept script "
              f"{'sets it to ' + repr(exports[name]) if name in exports else 'unsets it'}); give it with {how}",
              file=sys.stderr)


def _sbatch_env() -> dict[str, str]:
    """The caller's environment without its ``SBATCH_*`` variables, naming them on stderr. sbatch reads them as its
    options, over the script's ``#SBATCH`` lines (sbatch(1), INPUT ENVIRONMENT VARIABLES): ``SBATCH_TIMELIMIT`` would
    undo the check of --signal-before-s against --time, ``SBATCH_NO_REQUEUE`` the requeue the job relies on. The job
    gets exactly the script kept in the run folder; other options go through the flags or --sbatch-arg."""
    _warn_of_sbatch_variables()
    return {name: value for name, value in os.environ.items() if not name.startswith("SBATCH_")}


def _warn_of_sbatch_variables() -> None:
    """Name on stderr the ``SBATCH_*`` variables of this shell that submit does not pass to sbatch (``_sbatch_env``);
    --dry-run names them too, as what its submission would leave out."""
    dropped = sorted(name for name in os.environ if name.startswith("SBATCH_"))
    if dropped:
        print(f"judge-train submit: warning: not passing {', '.join(dropped)} to sbatch (they would override the "
              "rendered #SBATCH lines); give such options with submit's flags or --sbatch-arg", file=sys.stderr)


def check_judge_args(config_path: Path, judge_args: Sequence[str]) -> Any:
    """Read the arguments after ``--`` as ``judge-train run`` in the job will, over the same config, and refuse what
    it would refuse (an unknown flag, a bad value) now, not once the job has waited in the queue and started.

    Returns:
        The config the job will run (the file's with the arguments applied), or None without arguments.

    Raises:
        SubmitError: naming the argument (with the closest flag, if one is close) or the bad value.
    """
    from judge.plumbing.config_files import closest_option
    from train.cli import build_run_parser
    from train.config import ConfigError, config_from_args

    if not judge_args:
        return None
    given = next((a for a in judge_args if a == "--config" or a.startswith("--config=")), None)
    if given is not None:  # slurm/train.sbatch refuses it (exit 2), after the queue's wait
        raise SubmitError(f"after --: {given} is submit's own --config (the job reads that one); give it once, "
                          "before --")
    parser = build_run_parser(prog="judge-train run (the arguments after --)")
    parser.exit_on_error = False  # an argparse error is raised here, to be said as submit's own
    try:
        namespace, unknown = parser.parse_known_args(["--config", str(config_path), *judge_args])
    except argparse.ArgumentError as err:
        raise SubmitError(f"after --: {err}") from None
    if unknown:
        flags = [s for action in parser._actions for s in action.option_strings if s.startswith("--")]
        hints = []
        # a stray value after an unknown flag is that flag's: name the flags, or the words when there is none
        for arg in [a for a in unknown if a.startswith("-")] or unknown:
            close = closest_option(arg.split("=", 1)[0], flags) if arg.startswith("--") else ""
            hints.append(f"{arg} (did you mean {close}?)" if close else arg)
        raise SubmitError(f"after --: judge-train run does not take {', '.join(hints)}; `judge-train run --help` "
                          "lists its flags")
    try:
        return config_from_args(namespace)
    except ConfigError as err:
        raise SubmitError(f"after --: {err}") from None


@contextlib.contextmanager
def _job_hub_cache(cache_dir: str | None):
    """The Hugging Face cache the job will read, for looking the base model up here: the shell's ``HF_HUB_CACHE`` or
    ``HF_HOME`` (sbatch hands the job this environment), else ``HF_HOME`` = ``<cache dir>/huggingface``, as
    slurm/train.sbatch sets it (``JUDGE_CACHE_DIR``: ``--cache-dir``, by default ``~/.cache/pollux-judge``)."""
    if os.environ.get("HF_HUB_CACHE") or os.environ.get("HF_HOME"):
        yield
        return
    cache = Path(cache_dir).resolve() if cache_dir else Path.home() / ".cache" / "pollux-judge"
    shell = os.environ.get("HF_HOME")  # "" counts as unset, in the script as here
    os.environ["HF_HOME"] = str(cache / "huggingface")
    try:
        yield
    finally:
        if shell is None:
            del os.environ["HF_HOME"]
        else:
            os.environ["HF_HOME"] = shell


def _names_a_missing_input(err: BaseException) -> bool:
    """Whether ``train.cli.check_training_data`` refused a data file or a base model that is not there (rather than
    one it read): the error it turned into its one line (``raise ... from None`` keeps it as ``__context__``) is a
    FileNotFoundError or ``judge.checkpoints.CheckpointNotFound``, but not a hub id refused because the environment
    is offline (the job inherits HF_HUB_OFFLINE: no earlier job makes it downloadable)."""
    from judge.checkpoints import CheckpointNotFound, OfflineNotCached

    return (isinstance(err.__context__, (FileNotFoundError, CheckpointNotFound))
            and not isinstance(err.__context__, OfflineNotCached))


def _own_file_hint(err: BaseException) -> str:
    """For a missing data or eval_data file, how to give one: submit has no --data of its own, and a fresh checkout's
    config names files ``judge-train data split`` writes, so a user with their own records passes them through."""
    field = str(err).split(":", 1)[0]
    flag = {"data": "--data", "eval_data": "--eval-data"}.get(field)
    return f"your own file? pass it after --: `-- {flag} FILE`; or " if flag else ""


def _waits_for_another(args: argparse.Namespace) -> bool:
    """Whether the job waits for another (its inputs, or an ``--sbatch-arg=--dependency=...``): then the run folder
    is the job's to check when it starts, as that other job (one training this run, say) may write in it."""
    return args.inputs_from_earlier_job or any(_is_dependency(option) for option in args.sbatch_arg)


def _refuse_a_held_run_folder(output_dir: Path) -> None:
    """Refuse a run folder a live process holds (``judge.plumbing.run_folder``'s lock, which judge-train's rank 0
    and train.sbatch take): the job would stop at it after the queue's wait, FAILED, and break an afterok chain."""
    from judge.plumbing.run_folder import run_folder_holder

    holder = run_folder_holder(output_dir)
    if holder is not None:
        raise SubmitError(f"{output_dir} is in use by {holder}; its job would stop there: wait for that run to end "
                          "or scancel it, or give another --output-dir")


def _queued_writer(slurm_dir: Path, own_script: Path) -> str | None:
    """A live job of this user (pending, running, completing: squeue's default states) whose batch script is a
    script submit kept in ``slurm_dir`` (``train-*.sbatch``): "<id> (<script>)", or None. squeue's ``%o`` is the
    job's command, for a batch job the script sbatch was given, made absolute by sbatch (its ``search_path``) and
    printed whole when the format gives no width, spaces included; the line is split at its first space only. The
    user is this process's uid, not ``$USER``, which a container or a changed account can leave naming someone
    else. A squeue that cannot answer is said on stderr and counts as none (the lock check covers a running job); no
    squeue at all is left to sbatch's own absence."""
    from judge.plumbing.slurm_requeue import exit_words, run_query

    try:
        proc = run_query(["squeue", "--noheader", "--user", str(os.getuid()), "--format", "%i %o"], 20)
    except FileNotFoundError:
        return None
    except (OSError, subprocess.TimeoutExpired) as err:
        proc = subprocess.CompletedProcess([], 1, "", str(err))
    if proc.returncode != 0:
        said = " ".join(proc.stderr.split())[:300] or exit_words(proc.returncode)
        print(f"judge-train submit: warning: squeue could not say whether a job of yours already writes into "
              f"{slurm_dir.parent} ({said}); not checked", file=sys.stderr)
        return None
    folder = os.path.realpath(slurm_dir)
    for line in proc.stdout.splitlines():
        job_id, _, command = line.strip().partition(" ")
        script = Path(command.strip())
        if (script.name.startswith("train-") and script.suffix == ".sbatch" and script != own_script
                and os.path.realpath(script.parent) == folder):
            return f"{job_id} ({script})"
    return None


def _check_run_folder(config: Any, output_dir: Path, plan: BatchPlan) -> None:
    """Refuse what the job's ``train.output_folder.check_output_dir`` would refuse on every rank after the queue's
    wait: a resume of an edited config, of a checkpoint without its optimizer or of one written by another number of
    ZeRO ranks, of a folder whose checkpoints are all cut off mid-save (under ``-- --resume``), or of a folder whose
    earlier run was not deleted; a fresh run over a finished export. The job resumes as slurm/train.sbatch decides:
    with the overwrite off, when a whole checkpoint is there (``train.output_folder.survey_checkpoints``, the rule
    the script asks), or under ``-- --resume``; it sets every cut checkpoint aside first.

    What the job would only warn of is said on stderr (standard output stays the script under --dry-run): each
    checkpoint it will not resume from, a config it cannot compare. A finished run is submitted with a warning: its
    job says "already finished" and exits 0 at once, which a requeue after the export meets as well, and
    ``--overwrite-output-dir`` is the way to train it again.

    Raises:
        SubmitError: the job's own message.
    """
    from train.config import ConfigError
    from train.output_folder import RunFinished, check_output_dir, survey_checkpoints

    resume = config.resume or (not config.overwrite_output_dir
                               and any(why is None for _, why in survey_checkpoints(output_dir)))
    job = config.replaced(output_dir=str(output_dir), resume=resume)
    # A logger of this call's own, outside logging's registry: the job's warnings are gathered here without
    # touching the train.output_folder logger a caller may have configured.
    said = _Gathered(logging.WARNING)
    log = logging.Logger("judge-train submit: run folder")
    log.addHandler(said)
    try:
        check_output_dir(job, plan.world_size, launch=f"this submission trains on {plan.ranks()}", log=log)
    except ConfigError as err:
        raise SubmitError(str(err)) from None
    except RunFinished as finished:
        said.lines.append(f"{finished.message}; the job would exit 0 at once")
    for line in said.lines:
        print(f"judge-train submit: warning: {line}", file=sys.stderr)


class _Gathered(logging.Handler):
    """A logging handler that keeps each message's text, for the caller to say."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _refuse_cuda_only_attention(config: Any, config_path: Path, judge_args: Sequence[str]) -> None:
    """SubmitError for a CPU job (``--gpus-per-node 0``) whose ``attn_implementation`` loads on CUDA GPUs only
    (``train.trainer_preflight.attention_kernel_cuda_only``): every CPU rank stopped at the model's load, after the
    queue's wait. The T-lite, T-pro and Qwen3-8B recipes ask for FlashAttention; sdpa is their CPU choice. Named as
    the user gave it: the config's key, or the argument after ``--`` that set it."""
    from train.trainer_preflight import attention_kernel_cuda_only

    cuda_only = attention_kernel_cuda_only(config.attn_implementation)
    if cuda_only is None:
        return
    after = any(a.split("=", 1)[0] in ("--attn-implementation", "--attn_implementation") for a in judge_args)
    given = (f"-- --attn-implementation {config.attn_implementation}" if after
             else f"attn_implementation: {config.attn_implementation} (in {config_path})")
    raise SubmitError(f"--gpus-per-node 0 trains on CPU, where {given} cannot load the model ({cuda_only}): give -- "
                      "--attn-implementation sdpa for a CPU job, or ask for GPUs with --gpus-per-node")


def _refuse_bad_counts(args: argparse.Namespace) -> None:
    """SubmitError for a count or number among submit's flags that no job could run with: nodes, ports, seconds,
    CPUs, GPUs and CPU ranks per node."""
    if args.nodes <= 0:
        raise SubmitError(f"--nodes must be positive, got {args.nodes}")
    for flag in ("--master-port", "--vllm-server-port", "--vllm-group-port"):
        port = getattr(args, flag[2:].replace("-", "_"))
        if port is not None and not 1 <= port <= 65535:
            raise SubmitError(f"{flag} must be a port from 1 to 65535, got {port}")
    if args.shutdown_timeout_s is not None and args.shutdown_timeout_s <= 0:
        raise SubmitError(f"--shutdown-timeout-s must be a positive number of seconds, got {args.shutdown_timeout_s}")
    if args.cpus_per_task is not None and args.cpus_per_task <= 0:
        raise SubmitError(f"--cpus-per-task must be positive, got {args.cpus_per_task}")
    if args.gpus_per_node < 0:
        raise SubmitError(f"--gpus-per-node must be 0 (CPU) or more, got {args.gpus_per_node}")
    if args.gpus_per_node and args.cpu_ranks_per_node is not None:
        # The ranks per node are the GPUs: the flag was dropped without a word, and a user who meant a CPU job (or
        # fewer ranks than GPUs) got a GPU job of another shape.
        raise SubmitError(f"--cpu-ranks-per-node {args.cpu_ranks_per_node} applies to --gpus-per-node 0 (CPU ranks) "
                          f"only; with --gpus-per-node {args.gpus_per_node} each node runs one rank per GPU: leave "
                          "--cpu-ranks-per-node out, or give --gpus-per-node 0 for a CPU job")
    if args.cpu_ranks_per_node is not None and args.cpu_ranks_per_node <= 0:
        raise SubmitError(f"--cpu-ranks-per-node must be positive, got {args.cpu_ranks_per_node}")


#: judge-train's flags for where the vLLM server listens, in both spellings: slurm/train.sbatch sets them itself.
_SERVER_PLACE_FLAGS = ("--vllm-server-host", "--vllm_server_host", "--vllm-server-port", "--vllm_server_port",
                       "--vllm-group-port", "--vllm_group_port")


def _check_vllm_server(config: Any, args: argparse.Namespace, judge_args: Sequence[str]) -> bool:
    """Whether the config is GRPO in vLLM server mode (``trl vllm-serve`` holds the first node, training the
    others), after refusing what its server could not start with: fewer than two GPU nodes, more tensor-parallel
    GPUs than a node has, or a tensor-parallel size the model's attention heads do not split over."""
    if not (getattr(config, "use_vllm", False) and getattr(config, "vllm_mode", None) == "server"):
        given = [flag for flag in ("--vllm-server-port", "--vllm-group-port")
                 if getattr(args, flag[2:].replace("-", "_")) is not None]
        if given:  # the job starts no server: the port would be dropped without a word
            raise SubmitError(f"{' and '.join(given)}: the job starts no vLLM server (the config is not GRPO with "
                              "use_vllm: true and vllm_mode: server); leave them out")
        return False
    if args.nodes < 2 or not args.gpus_per_node:
        raise SubmitError("vllm_mode: server runs `trl vllm-serve` on a GPU node of its own and trains on the others: "
                          f"ask for --nodes 2 or more with GPUs (got --nodes {args.nodes} --gpus-per-node "
                          f"{args.gpus_per_node}), or set vllm_mode: colocate for one node")
    # The job passes the server's address and ports to the trainer before the arguments after --: a later one there
    # wins, and the trainer would look for its server where none of this job's listens (another job's, perhaps).
    placed = sorted({a.split("=", 1)[0] for a in judge_args} & set(_SERVER_PLACE_FLAGS))
    if placed:
        raise SubmitError(f"{', '.join(placed)} after --: the job starts the vLLM server itself and tells the trainer "
                          "where it listens; give its ports with judge-train submit's --vllm-server-port and "
                          "--vllm-group-port")
    # Both bind on the first training host (torchrun's store, trl's weight-sync group): the second fails late, once
    # the model is loaded.
    if args.master_port is not None and args.master_port == args.vllm_group_port:
        raise SubmitError(f"--master-port and --vllm-group-port are both {args.master_port}: the rendezvous and the "
                          "weight-sync group each bind their own port on the first training host; give two, or leave "
                          "one out for one found free when the job starts")
    # trl takes vllm_server_base_url over the host and port (trl/trainer/grpo_config.py): the trainer would never
    # reach the server this job starts.
    if config.trainer_args.get("vllm_server_base_url") is not None:
        raise SubmitError(f"trainer_args.vllm_server_base_url {config.trainer_args['vllm_server_base_url']!r}: trl "
                          "would send the trainer there, not to the vLLM server the job starts (on the first node, "
                          "at a port found free); remove it")
    tp = config.vllm_server_tensor_parallel_size
    if tp > args.gpus_per_node:
        # The server runs on the first node alone (slurm/train.sbatch): vLLM would stop at its start, the other nodes
        # waiting vllm_server_timeout for it, all after the queue's wait.
        raise SubmitError(f"vllm_server_tensor_parallel_size {tp} is more than the "
                          f"{counted(args.gpus_per_node, 'GPU')} of the node `trl vllm-serve` runs on: ask for "
                          f"--gpus-per-node {tp} or more, or give -- --vllm-server-tensor-parallel-size "
                          f"{args.gpus_per_node} or less (one that divides the model's attention heads)")
    split = None if args.inputs_from_earlier_job else (  # an earlier job's base is not there yet
        unsplittable_heads(config.model_name_or_path, tp, args.gpus_per_node, args.cache_dir))
    if split:
        # vLLM refuses the split at the server's start, after the queue's wait, the training nodes waiting
        # vllm_server_timeout for a server that is gone.
        refused, fits = split
        raise SubmitError(f"vllm_server_tensor_parallel_size {tp}: {refused}, and would refuse it at the server's "
                          f"start; give -- --vllm-server-tensor-parallel-size {fits} (the sizes up to --gpus-per-node "
                          f"{args.gpus_per_node} that split them)")
    return True


def _config_default(config: Any, name: str) -> Any:
    """The default of the config's field ``name`` (its recipe's dataclass)."""
    import dataclasses

    return next(f.default for f in dataclasses.fields(config) if f.name == name)


def _check_signal_before(args: argparse.Namespace, script_path: Path) -> None:
    """SubmitError for a ``--signal-before-s`` sbatch cannot take, or one not below the time limit (``--time``, or
    the template's)."""
    limit = args.time if args.time is not None else _template_option(script_path, "time")
    limit_s = slurm_time_s(limit)
    if limit_s and args.signal_before_s >= limit_s:
        given = f"--time {limit}" if args.time is not None else f"the template's --time={limit}"
        raise SubmitError(f"--signal-before-s {args.signal_before_s} is not below the time limit ({given}: "
                          f"{limit_s} s): SIGUSR1 would come as the job starts, and every start would save, requeue "
                          "and stop again; give fewer seconds than the limit, enough for a step and a full save")
    if not 0 <= args.signal_before_s <= 65535:  # sbatch(1), --signal: sig_time
        raise SubmitError(f"--signal-before-s must be 0 to 65535 seconds, got {args.signal_before_s}")


def _extra_sbatch_options(options: Sequence[str]) -> dict[str, str]:
    """The ``--sbatch-arg`` options as ``#SBATCH`` settings (long name -> value, ``""`` for a flag), in order, a
    later one of a name winning; refused: a short or empty option, one submit sets itself (or a beginning of its
    name), more than one option in one argument, and an ``=`` with nothing after it."""
    extra: dict[str, str] = {}
    for option in options:
        if not option.startswith("--"):
            raise SubmitError(f"--sbatch-arg takes a long option like --exclusive or --mem=0, got {option!r}")
        key, sep, value = option[2:].partition("=")
        name = (key.split() or [""])[0]  # "--nodes 2" names --nodes too
        if not name:
            raise SubmitError(f"--sbatch-arg takes a long option like --exclusive or --mem=0, got {option!r}")
        planned = _planned_option(name)
        if planned is not None:
            # sbatch reads options with getopt_long, which takes any unambiguous beginning of a name for the whole
            # one: --sig=B:USR1@60 is --signal, --gpus-per-n=4 is --gpus-per-node (and --ntasks, --gpus clash with
            # the planned --ntasks-per-node, --gpus-per-node).
            abbreviation = "" if planned == name else f" (--{name} abbreviates it, or clashes with it)"
            raise SubmitError(f"--sbatch-arg={option}: judge-train submit sets #SBATCH --{planned} itself"
                              f"{abbreviation}; {PLANNED_SBATCH_OPTIONS[planned]}")
        if len(name) >= 3 and "export".startswith(name):
            # --export=NONE or a list of names starts the batch shell without the submitting shell's environment,
            # which the job reads (PATH to torchrun and judge-train, HOME for the caches).
            raise SubmitError(f"--sbatch-arg={option}: the job runs in the environment of the shell that submits it "
                              "and hands it to its steps; sbatch's --export would leave it out (PATH to torchrun and "
                              "judge-train, HOME): activate another environment with --env-script instead")
        _check_one_option_name(option, key)
        if sep and not value.strip():
            # Rendered, it was `#SBATCH --qos`: the option without its value, which sbatch refuses or misreads.
            raise SubmitError(f"--sbatch-arg={option}: nothing after the '=': give the value (--{key}=...), or "
                              f"--sbatch-arg=--{key} for an option that takes none")
        extra[key] = value if sep else ""
    return extra


def _render(args: argparse.Namespace, judge_args: Sequence[str]) -> tuple[str, Path, str]:
    from judge.plumbing.run_folder import refuse_file
    from train.config import ConfigError, load_config

    config_path = Path(args.config).resolve()
    # Every value that reaches the script, named as the user gave it, before anything is rendered: a newline in one
    # would become a command line.
    _refuse_control({"--config (the file's path)": config_path, "--job-name": args.job_name,
                     "--partition": args.partition, "--account": args.account, "--time": args.time,
                     "--output-dir": args.output_dir, "--cache-dir": args.cache_dir, "--wandb-dir": args.wandb_dir,
                     "--env-script": args.env_script, "--srun-args": args.srun_args, "--script": args.script,
                     **{f"--sbatch-arg (number {i + 1})": option for i, option in enumerate(args.sbatch_arg)},
                     **{f"judge-train argument {i + 1} after --": arg for i, arg in enumerate(judge_args)}})
    _refuse_blank_names(args)
    _refuse_quoted_srun_args(args.srun_args)
    if args.time is not None and slurm_time_s(args.time) is None:
        # sbatch would refuse it, after every check here; and unread, the check of --signal-before-s against the
        # limit (below) was skipped.
        raise SubmitError(f"--time {args.time!r} is no Slurm time limit; give {TIME_FORMS}")
    from judge.plumbing.config_files import special_file_kind

    kind = special_file_kind(config_path)
    if kind:  # said in submit's words, naming the recipe's YAML, before load_config says it in its own
        raise SubmitError(f"--config {args.config}: {kind}, not a regular file; give the recipe's YAML file "
                          "(configs/train/...; write a stream to a file first)")
    try:
        config = load_config(config_path)
    except ConfigError as err:
        raise SubmitError(str(err)) from None
    # The job runs the config with the arguments after -- applied: plan the batch, the vLLM server and the exports
    # from that one, or a job planned for the file would wait in the queue and then fail (or train another model).
    config = check_judge_args(config_path, judge_args) or config
    if args.output_dir and any(a.split("=", 1)[0] in ("--output-dir", "--output_dir") for a in judge_args):
        # judge-train takes the later one and trains there, while the job locks, resumes and logs in --output-dir's:
        # a requeue finds no checkpoint, and with overwrite_output_dir deletes the run's progress and starts over.
        raise SubmitError("--output-dir and an --output-dir after --: give the run folder once, with --output-dir")
    _refuse_control({f"model_name_or_path in {config_path}": config.model_name_or_path,
                     f"output_dir in {config_path}": config.output_dir})
    _refuse_bad_counts(args)
    ranks = args.gpus_per_node or args.cpu_ranks_per_node or 1
    server = _check_vllm_server(config, args, judge_args)
    if not args.gpus_per_node:
        _refuse_cuda_only_attention(config, config_path, judge_args)
    training_nodes = args.nodes - 1 if server else args.nodes
    plan = plan_batch(config.global_batch_size, config.per_device_train_batch_size, training_nodes, ranks)
    # The job's prepare compares a DeepSpeed JSON's fixed accumulation (and an 'auto' bf16, which follows CUDA: on
    # with GPUs) with this launch's and refuses it on every rank, after the queue's wait.
    bf16 = config.bf16 == "true" if config.bf16 != "auto" else args.gpus_per_node > 0
    try:
        config.check_deepspeed_launch(plan.gradient_accumulation, bf16)
    except ConfigError as err:
        raise SubmitError(f"{err} (this submission: global batch {plan.describe()})") from None
    output_dir = Path(args.output_dir or config.output_dir).resolve()
    # A folder the job makes or writes in, where a file stands (or stands above it): the job would fail at its start,
    # after the queue's wait (a cache's only when HF or Triton first writes there), and a dry run said nothing.
    for setting, folder in (("--output-dir" if args.output_dir else f"output_dir in {config_path}", output_dir),
                            ("--cache-dir", args.cache_dir), ("--wandb-dir", args.wandb_dir)):  # fmt: skip
        try:
            refuse_file(folder)  # "<the file> is a file, not a folder"
        except ConfigError as err:
            raise SubmitError(f"{setting} {folder}: {err}, so the job could not write there; give a folder") from None
    # A job that waits for another (its inputs, or an --sbatch-arg=--dependency=...) may find the folder changed by
    # it, e.g. a continuation of the run that job trains: the folder is the job's to check once it starts.
    dependency = next((option for option in args.sbatch_arg if _is_dependency(option)), None)
    if _waits_for_another(args):
        given = "--inputs-from-earlier-job" if args.inputs_from_earlier_job else f"--sbatch-arg={dependency}"
        print(f"judge-train submit: warning: {given}: the run folder {output_dir} is not checked now (the job this "
              "one waits for may change it); the job checks it when it starts", file=sys.stderr)
    else:
        _refuse_a_held_run_folder(output_dir)
        _check_run_folder(config, output_dir, plan)
    job_name = args.job_name or f"judge-train-{config_path.parent.name}-{config_path.stem}"
    # The log path (below) goes through Slurm's filename patterns: a backslash turns them off and is dropped, a / in
    # %x (the job name) names a folder no one made. Either way the job fails at launch and leaves no log at all.
    for setting, value, bad in (("--output-dir", str(output_dir), "\\"), ("--job-name", job_name, "/\\")):
        if any(c in value for c in bad):
            raise SubmitError(f"{setting} '{value}': Slurm cannot write the job log <output dir>/slurm/<job name>-"
                              f"<job id>.out with a {' or '.join(bad)} there (the job would fail at launch with no "
                              "log); choose a name without one")
    if args.env_script and not Path(args.env_script).is_file():
        raise SubmitError(f"--env-script {args.env_script} is not a file (the job would stop at its start)")
    script_path = Path(args.script)
    if not script_path.is_file():
        raise SubmitError(f"sbatch template {script_path} not found")

    _check_signal_before(args, script_path)
    sbatch: dict[str, str | None] = {
        "job-name": job_name,
        "nodes": str(args.nodes),
        "gpus-per-node": str(args.gpus_per_node) if args.gpus_per_node else None,
        "signal": f"USR1@{args.signal_before_s}",
        "output": str(output_dir / "slurm").replace("%", "%%") + "/%x-%j.out",  # a % of the folder's is no pattern
    }
    for key in ("partition", "account", "time", "cpus_per_task"):
        value = getattr(args, key)
        if value is not None:
            sbatch[key.replace("_", "-")] = str(value)
    sbatch.update(_extra_sbatch_options(args.sbatch_arg))

    from judge import LeakageError, RecordError
    from train.cli import check_training_data
    from train.training_arguments import check_training_arguments

    try:
        # What the job's judge-train would refuse after waiting in the queue, in its order: the data (a missing or
        # empty file, no rows left, held-out rows; the base model), then the trainer's arguments. Last of the checks:
        # they read the data and import torch, seconds that a mistyped flag should not cost. The job reads the
        # config's relative paths from the submit folder too (slurm/train.sbatch), so these are its files.
        if args.inputs_from_earlier_job:  # they do not exist yet: the job checks them once they do
            print("judge-train submit: warning: --inputs-from-earlier-job: the data and the base model are not "
                  "checked now; the job checks them when it starts", file=sys.stderr)
        else:
            with _job_hub_cache(args.cache_dir):
                try:
                    check_training_data(config, download=False)
                except ConfigError as err:
                    if not _names_a_missing_input(err):
                        raise
                    raise SubmitError(f"{err} ({_own_file_hint(err)}written by a job this one waits for? then "
                                      "add --inputs-from-earlier-job)") from None
                if config.recipe == "grpo":  # a base export of another verdict format: its manifest, a few bytes
                    from train.grpo import check_base_checkpoint

                    check_base_checkpoint(config)
        check_training_arguments(config)
    except (ConfigError, LeakageError, RecordError) as err:
        raise SubmitError(str(err)) from None

    exports = {
        "JUDGE_CONFIG": str(config_path),
        "JUDGE_OUTPUT_DIR": str(output_dir),
        "JUDGE_GRAD_ACCUM": str(plan.gradient_accumulation),
        "JUDGE_PROCS_PER_NODE": str(ranks),
    }
    # The script, not judge-train, applies it: on the job's first start only. A requeue resumes the checkpoints this
    # job saved (judge-train refuses --resume with --overwrite-output-dir, which the arguments still hold). 0 is
    # written too: a 1 left in the submitting shell (docs/slurm.md's manual sbatch) would otherwise reach the job
    # through sbatch and delete the run this submission resumes.
    exports["JUDGE_OVERWRITE_OUTPUT_DIR"] = "1" if config.overwrite_output_dir else "0"
    if server:
        exports["JUDGE_VLLM_SERVE_MODEL"] = config.model_name_or_path
        # The ports are the job's to find free when it starts (slurm/train.sbatch), on the hosts that open them,
        # unless the flags fix them: the config's (trl's defaults 8000 and 51216) were every job's, and two jobs on a
        # shared node met on them. The script passes the ones it uses to the trainer, over the config's.
        for name, flag, field in (("JUDGE_VLLM_SERVE_PORT", "--vllm-server-port", "vllm_server_port"),
                                  ("JUDGE_VLLM_GROUP_PORT", "--vllm-group-port", "vllm_group_port")):
            given = getattr(args, flag[2:].replace("-", "_"))
            if given is not None:
                exports[name] = str(given)
            elif getattr(config, field) != _config_default(config, field):
                print(f"judge-train submit: warning: {field} {getattr(config, field)} in the config is not used by "
                      f"the job: it starts its own vLLM server and takes a port found free when it starts; give "
                      f"{flag} {getattr(config, field)} to fix that one", file=sys.stderr)
        exports["JUDGE_VLLM_SERVE_TP"] = str(config.vllm_server_tensor_parallel_size)
        # The server's context is colocated vLLM's (train.grpo.grpo_arguments: vllm_max_model_length = max_length):
        # left to the model's config it is 40,960 tokens for Qwen3-8B, and vLLM reserves KV cache to hold it.
        exports["JUDGE_VLLM_SERVE_MAX_LEN"] = str(config.max_length)
    for name, value in (("JUDGE_CACHE_DIR", args.cache_dir), ("JUDGE_WANDB_DIR", args.wandb_dir),
                        ("JUDGE_ENV_SCRIPT", args.env_script), ("JUDGE_SRUN_ARGS", args.srun_args)):  # fmt: skip
        if value:
            exports[name] = str(Path(value).resolve()) if name != "JUDGE_SRUN_ARGS" else value
    for name, number in (("JUDGE_MASTER_PORT", args.master_port),
                         ("JUDGE_SHUTDOWN_TIMEOUT_S", args.shutdown_timeout_s)):
        if number is not None:
            exports[name] = str(number)
    unset = [name for name in TRAIN_SCRIPT_VARIABLES if name not in exports]
    _warn_of_shell_variables(exports)
    notes = [
        f"config {config_path} ({config.recipe} recipe, {config.model_name_or_path})",
        f"global batch {plan.describe()}",
        f"{'GPU' if args.gpus_per_node else 'CPU'} ranks: {plan.world_size}",
        _deepspeed_note(config),
    ]
    if config.overwrite_output_dir:
        notes.append(f"--overwrite-output-dir: an earlier run in {output_dir} is deleted on the job's first start; a "
                     "requeue of the job resumes its own checkpoints")
    if server:
        ports = ", ".join(f"{what} {exports[name] if name in exports else 'found free when the job starts'}"
                          for what, name in (("port", "JUDGE_VLLM_SERVE_PORT"),
                                             ("weight-sync group port", "JUDGE_VLLM_GROUP_PORT")))
        notes.append(f"vLLM server mode: `trl vllm-serve` (tensor parallel {config.vllm_server_tensor_parallel_size}, "
                     f"max length {config.max_length}) on the first node, {ports}; training on "
                     f"the other {counted(training_nodes, 'node') if training_nodes > 1 else 'node'}")
    script = render_script(
        script_path.read_text(), sbatch=sbatch, exports=exports, notes=notes, judge_args=judge_args, unset=unset
    )
    return script, output_dir, job_name


if __name__ == "__main__":
    raise SystemExit(main())
