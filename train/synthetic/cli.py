"""judge-train data <stage>: build synthetic judge-training data, one resumable stage at a time.

    judge-train data instructions --config configs/data/instructions.yaml --output runs/data/instructions
    judge-train data dedup --config configs/data/dedup.yaml --input runs/data/instructions --output runs/data/dedup
    judge-train data answers --config configs/data/answers.yaml --input runs/data/dedup --output runs/data/answers
    judge-train data annotate --config configs/data/annotate.yaml --input runs/data/answers --output runs/data/annotate
    judge-train data split --config configs/data/split.yaml --input runs/data/annotate --output runs/data/split
    judge-train data traces --config configs/data/traces.yaml --input runs/data/split --output runs/data/traces

Any scalar config key is also a flag, e.g. ``--per-task-level 2`` or ``--block-size 256``; a flag beats the YAML.
Rerunning a stage with the same output folder resumes it: finished requests are read back from ``journal.jsonl``.
A rerun whose requests would differ (other endpoints or sampling, another prompt language or system message, another
seed where the stage assigns jobs by it) or with another ``--input`` is refused, naming what changed, unless ``--overwrite`` discards the journal;
thresholds, tolerances and limits may be retuned on the same journal (``REQUEST_SETTINGS``), and so may the traces
teacher's ``max_tokens``, raised to ask again the traces it cut (``UNKEYED_CAPS``).
Also runnable as ``python -m train.synthetic.cli <stage> ...``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from judge.plumbing.config_files import ConfigError, given_flags
from judge.plumbing.json_reading import counted
from judge.plumbing.provenance import redact
from train.synthetic.config import STAGE_CONFIGS, add_config_flags, load_config, stage_endpoints

__all__ = ["build_parser", "main"]

_HELP = {
    "instructions": "generate instructions for every leaf task and complexity level",
    "dedup": "semantic de-duplication within task types (Algorithm 1)",
    "answers": "answer the instructions with a pool of models",
    "annotate": "teacher verdicts for every (instruction, answer, criterion)",
    "split": "drop Zero-Shot items, split train/validation by instruction",
    "traces": "reasoning traces from a thinking teacher, kept when its score agrees with the experts",
}


#: Every stage's exit codes, as its --help lists them.
EXIT_CODES = (
    "Exit codes: 0 the stage finished (its kept, dropped and failed counts printed; requests the endpoint never "
    "answered are counted, said on stderr, and asked again by a rerun into the same --output); 2 a usage or configuration "
    "error, refused training data (Zero-Shot or released-benchmark rows), a malformed row, or an output folder "
    "another run holds; 4 the stage finished, but an endpoint could not be used and was asked no more: nothing "
    "answering at its address, or still failing, at its first contact, or its requests failing in a row after their "
    "retries (max(3, 2 x --concurrency)); its jobs are journalled as failed and asked again by a rerun into the same "
    "--output; 130 interrupted (Ctrl-C) once the requests in flight were journalled: a rerun into the same --output "
    "asks only for the rest."
)


#: The progress files a rerun resumes from (finished requests), per the stages that ask an endpoint.
JOURNAL_FILES = ("journal.jsonl", "llm_checks.jsonl")
#: Per stage, the settings that shape what one journalled request got: the endpoints (model, sampling; not the
#: variable holding a key), the prompt's language and system message, the seed that assigns jobs to endpoints, and
#: what decides a journalled result (annotate parses and re-asks inside the job). The rest choose which jobs run and
#: what is kept of their answers (thresholds, tolerance, limits, subsets), which a rerun may retune on the same journal.
REQUEST_SETTINGS = {
    "instructions": ("generators", "details_language", "seed"),
    "dedup": ("llm",),
    "answers": ("answer_models", "system_prompt", "seed"),
    # Not annotate's or traces' seed: no job is assigned or shuffled by it (a non-zero one is refused when the config
    # loads); a teacher's samples are seeded by its extra_body seed, which is in the teacher's key.
    "annotate": ("teacher", "criteria_language", "lenient", "max_attempts"),
    "traces": ("teacher", "system_prompt"),
    # split asks nothing: these decide the partition its outputs hold, which a rerun with others would replace
    # (KEYED_OUTPUTS), so that rerun needs --overwrite or a fresh --output.
    "split": ("seed", "validation_fraction", "split_file", "allow_zero_shot"),
}
#: Per stage without a journal, the outputs whose presence means a run's settings are on the folder: compared with
#: its run key as a journal is, and removed by ``--overwrite``. ``summary.json`` among them: it marks a finished set,
#: so an overwrite that then fails must not leave the discarded set's.
KEYED_OUTPUTS = {"split": ("split.jsonl", "summary.json")}
#: Per stage, endpoint settings left out of its run key although they sit in a ``REQUEST_SETTINGS`` endpoint: caps
#: on an answer rather than what shapes it. The traces teacher's ``max_tokens``: an answer that finished under a lower
#: cap is the same answer under a higher one, and the stage asks again the answers a lower cap cut
#: (``train.synthetic.traces.ask_again_for_max_tokens``), so raising it resumes the journal instead of being refused,
#: and every answer paid for stays. Not so for answers and annotate: answers keeps an answer cut at its cap as data
#: (judges must see bad answers), so the cap shapes the rows it keeps; annotate drops a verdict its cap cut
#: (``finish_reason`` length on every attempt) as ``verdict_cut``, a failure a rerun does not ask again (it has no
#: rule like traces' to re-ask what a smaller cap cut), so a rerun under a raised cap would resume with those items
#: still dropped, as if the new cap had been tried on them. Their ``max_tokens`` stays in their key: a raised cap
#: starts a new ``--output`` (or ``--overwrite``).
UNKEYED_CAPS = {"traces": {"teacher": ("max_tokens",)}}
#: Per stage, settings a stored run key held that ``REQUEST_SETTINGS`` no longer keys, since they change no request:
#: forgotten from the stored key (``forget_unkeyed_caps``), so a folder keyed with them resumes.
FORMER_SETTINGS = {"annotate": ("seed",), "traces": ("seed",)}


def stage_run_key(stage: str, config: Any, input_path: str | None) -> dict[str, Any]:
    """What a resumed stage must share with the run that wrote its journal: the stage, its input (resolved) and its
    ``REQUEST_SETTINGS``."""

    def without_key_variable(value: Any) -> Any:
        # An endpoint's address and label may move (a requeued job's teacher comes back on another host) without
        # its answers changing: the model and its sampling are what a journalled answer depends on.
        if isinstance(value, dict):
            return {k: without_key_variable(v) for k, v in value.items() if k not in ("api_key_env", "base_url", "name")}
        if isinstance(value, (list, tuple)):
            return [without_key_variable(v) for v in value]
        return value

    settings = dataclasses.asdict(config)
    key = {"stage": stage, **{name: without_key_variable(settings[name]) for name in REQUEST_SETTINGS[stage]}}
    for name, caps in UNKEYED_CAPS.get(stage, {}).items():
        key[name] = _without(key[name], caps)
    if input_path is not None:
        key["input"] = str(Path(input_path).resolve())
    return key


def _without(value: Any, fields: tuple[str, ...]) -> Any:
    return {k: v for k, v in value.items() if k not in fields} if isinstance(value, dict) else value


def stage_progress_files(stage: str) -> list[str]:
    """What a stage's work writes: the journals of its requests, then its outputs
    (``train.synthetic.journal.write_stage_outputs``, whose first file is ``<stage>.jsonl``)."""
    return [*JOURNAL_FILES, f"{stage}.jsonl", "dropped.jsonl", "summary.json"]


def forget_unkeyed_caps(out_dir: Path, stage: str) -> None:
    """Drop from the folder's stored run key the caps ``UNKEYED_CAPS`` leaves out of it now: a traces folder keyed
    before held its teacher's ``max_tokens``, and would refuse the rerun that raises it, the one that asks its cut
    traces again, unless ``--overwrite`` threw away every answer paid for. So for ``FORMER_SETTINGS``: a traces or
    annotate folder keyed with its ``seed`` would refuse every rerun as another run."""
    from judge.plumbing.provenance import write_private_text
    from judge.plumbing.run_folder import RUN_KEY_FILE

    path = Path(out_dir) / RUN_KEY_FILE
    if (stage not in UNKEYED_CAPS and stage not in FORMER_SETTINGS) or not path.is_file():
        return
    old = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(old, dict):
        return  # claim_run_folder refuses it, naming the file
    new = {**old, **{name: _without(old[name], caps) for name, caps in UNKEYED_CAPS.get(stage, {}).items()
                     if name in old}}
    new = {name: value for name, value in new.items() if name not in FORMER_SETTINGS.get(stage, ())}
    if new != old:
        write_private_text(path, json.dumps(new, ensure_ascii=False, indent=2) + "\n")


#: Per stage, the file its input folder is read through (``journal.read_rows``: ``<name>.jsonl``, else a
#: ``datasets`` folder); traces reads any source ``judge.load_records`` takes (a folder holding ``train.jsonl``,
#: Parquet shards, a ``save_to_disk`` folder, a dataset name).
INPUT_READS = {"dedup": "instructions", "answers": "dedup", "annotate": "answers", "split": "annotate", "traces": None}


def check_input(source: str, reads: str | None, name: str = "--input") -> None:
    """Refuse an input the stage could not read, before its output folder is claimed.

    Args:
        source: the path given.
        reads: the stage file a folder must hold (``INPUT_READS``); None: any existing file or folder, a name
            shaped like a dataset's (``owner/name``, read by ``datasets.load_dataset`` later), or ``sample`` (the
            bundled records).
        name: how the message names the setting (``--input``, ``reference``).

    Raises:
        ConfigError: naming the setting and the path.
    """
    from judge.record_sources import looks_like_dataset_name  # the one rule load_records reads a name by

    from judge.sample_data import SAMPLE_DATA

    path = Path(source)
    if path.is_file():
        _refuse_no_rows(name, path, reads)
        return
    if reads is None and str(source) == SAMPLE_DATA:  # records, as judge-train's data: sample reads them
        return
    if path.is_dir():
        if reads is not None and (path / f"{reads}.jsonl").is_file():  # what read_input reads first
            # no row refused: an earlier stage that kept nothing is a pipeline's outcome, which the stage says
            return
        if reads is None or any((path / marker).is_file() for marker in ("dataset_info.json", "dataset_dict.json")):
            return
        raise ConfigError(f"{name}: {source}: a folder with no {reads}.jsonl and not a datasets folder")
    if reads is None and looks_like_dataset_name(str(source), path):
        return
    raise ConfigError(f"{name}: {source}: no such file or folder")


def _refuse_no_rows(name: str, path: Path, reads: str | None) -> None:
    """Refuse a stage's input file, JSONL or Parquet, that holds no row: the stage would do nothing and exit 0. A
    Parquet file's row count is read from its footer, not its rows. The traces stage (``reads`` None) takes any file
    ``judge.load_records`` reads: only those two kinds are looked at here.

    Raises:
        ConfigError: naming the setting and the file.
    """
    if reads is None and path.suffix not in (".jsonl", ".parquet"):
        return
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            rows = pq.read_metadata(path).num_rows
        except (OSError, pa.ArrowException) as err:
            raise ConfigError(f"{name}: {path}: not a Parquet file ({err})") from err
        if rows == 0:
            raise ConfigError(f"{name}: {path}: no rows (a Parquet table of none)")
        return
    from train.synthetic.journal import holds_no_rows

    if holds_no_rows(path):
        raise ConfigError(f"{name}: {path}: no rows (an empty file, or blank lines only)")


def check_stage(stage: str, config: Any, input_path: str | None) -> None:
    """Everything about a stage's settings and input that can be checked before its output folder is claimed: the
    settings it cannot run without (``check_runnable``, which the stage calls again) and its input's path.

    Raises:
        ValueError: naming the setting (ConfigError for a path).
    """
    config.check_runnable()
    if input_path is not None:
        check_input(input_path, INPUT_READS[stage])
    if stage == "dedup":
        check_input(config.reference, "instructions", "reference")


def build_parser() -> argparse.ArgumentParser:
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(prog="judge-train data", description=__doc__.split("\n\n")[0], epilog=EXIT_CODES)
    stages = parser.add_subparsers(dest="stage", required=True, metavar="<stage>")
    for stage, cls in STAGE_CONFIGS.items():
        sub = stages.add_parser(stage, help=_HELP[stage], description=_HELP[stage], epilog=EXIT_CODES)
        sub.add_argument("--config", help=f"YAML config (configs/data/{stage}.yaml)")
        if stage != "instructions":
            sub.add_argument("--input", required=True, help="the previous stage's output folder, or a JSONL/Parquet file")
        sub.add_argument("--output", required=True, help="this stage's output folder (rerun with it to resume)")
        sub.add_argument("--overwrite", action="store_true",
                         help="discard the output folder's journal (finished requests) instead of resuming it; needed "
                              "when its run had other settings or another --input")
        add_config_flags(sub, cls)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    from judge.plumbing.openmp import idle_threads_sleep

    idle_threads_sleep()  # before the dedup stage's sentence_transformers loads torch (judge.plumbing.openmp)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["data"]:  # called with the whole `judge-train data ...` tail
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    cls = STAGE_CONFIGS[args.stage]
    try:
        config = load_config(cls, args.config, given_flags(args, cls))
        check_stage(args.stage, config, getattr(args, "input", None))  # before any folder is made
    except ValueError as err:  # an unknown key or a value the stage refuses (ConfigError is one): named, no traceback
        print(f"judge-train data {args.stage}: error: {err}", file=sys.stderr)
        return 2
    from judge import LeakageError, RecordError
    from judge.plumbing.endpoint_unusable import EXIT_UNUSABLE
    from judge.plumbing.run_folder import RUN_KEY_FILE, ResumeMismatch, RunFolderBusy, claim_run_folder, hold_run_folder

    try:
        # One writer per folder; a refusal before any request was journalled or any output written (other settings,
        # an input line that is not JSON) leaves the folder as it found it, not holding a lock and a key of its own.
        with hold_run_folder(args.output, f"judge-train data {args.stage}",
                             progress_files=stage_progress_files(args.stage)) as out_dir:
            # A journal resumed under other settings would mix their answers in silently (another answer model's
            # texts under this run's assignment, another teacher's verdicts): the folder is claimed for these.
            unkeyed = any((out_dir / name).exists() for name in JOURNAL_FILES) and not (out_dir / RUN_KEY_FILE).exists()
            forget_unkeyed_caps(out_dir, args.stage)
            run_key = stage_run_key(args.stage, config, getattr(args, "input", None))
            claim_run_folder(out_dir, run_key, [*JOURNAL_FILES, *KEYED_OUTPUTS.get(args.stage, ())],
                             overwrite=args.overwrite, adopt_unkeyed=True, out_flag="--output",
                             # A stage with no journal (dedup without its check) leaves no progress file to compare
                             # keys with: its run.json names it, so another stage cannot write over its outputs.
                             jobs=(f"judge-train data {args.stage}",),
                             # A split folder whose key holds only its stage and input (no split settings) is adopted.
                             earlier_keys=({k: v for k, v in run_key.items() if k in ("stage", "input")},)
                             if args.stage in KEYED_OUTPUTS else ())
            if unkeyed and not args.overwrite:
                print(f"judge-train data {args.stage}: warning: {out_dir} holds a journal from before run keys; "
                      "resuming it under these settings (they are not checked against the run that wrote it)",
                      file=sys.stderr)
            print(f"judge-train data {args.stage}: config {json.dumps(redact(dataclasses.asdict(config)), ensure_ascii=False, default=str)}", file=sys.stderr)

            if args.stage == "instructions":
                from train.synthetic.generation import run_instructions

                summary = run_instructions(config, out_dir)
            elif args.stage == "dedup":
                from train.synthetic.dedup import run_dedup

                summary = run_dedup(config, args.input, out_dir)
            elif args.stage == "answers":
                from train.synthetic.answers import run_answers

                summary = run_answers(config, args.input, out_dir)
            elif args.stage == "annotate":
                from train.synthetic.annotate import run_annotate

                summary = run_annotate(config, args.input, out_dir)
            elif args.stage == "traces":
                from train.synthetic.traces import run_traces

                summary = run_traces(config, args.input, out_dir)
            else:
                from train.synthetic.splitting import run_split

                summary = run_split(config, args.input, out_dir)
    except (RunFolderBusy, ResumeMismatch, ConfigError) as err:  # ConfigError: an --output that is a file
        print(f"judge-train data {args.stage}: error: {err}", file=sys.stderr)
        return 2
    except (LeakageError, RecordError) as err:  # training data refused, or a bad row: named, no traceback
        print(f"judge-train data {args.stage}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C: run_jobs cancelled the jobs not started and waited for those in flight. The journal's rows are
        # counted in the file rather than assumed: a second Ctrl-C may have cut that wait short.
        print(f"judge-train data {args.stage}: interrupted; {_journal_kept(Path(args.output))}", file=sys.stderr)
        return 130
    except (ValueError, FileNotFoundError, NotADirectoryError, PermissionError) as err:
        # What only the run finds: an input line that is not JSON, an embedding model not found, a traces input
        # named like a dataset that cannot be loaded: named, no traceback (the help's exit 2).
        print(f"judge-train data {args.stage}: error: {err}", file=sys.stderr)
        return 2

    def counts(by_reason: dict) -> str:
        return ", ".join(f"{reason} {count}" for reason, count in by_reason.items()) or "none"

    line = f"{args.stage}: kept {summary['kept']}, dropped {summary['dropped']} ({counts(summary['dropped_by_reason'])})"
    if "failed_by_reason" in summary:  # the traces stage: teacher answers that gave no verdict
        line += f", failed {summary['failed']} ({counts(summary['failed_by_reason'])})"
    if summary.get("items_without_a_kept_trace"):
        # Items asked that give SFT no trace: unsaid, the hardest items would vanish from the training data unnoticed.
        line += (f"; items without a kept trace {summary['items_without_a_kept_trace']} of {summary['items']} "
                 f"(every trace failed {summary['items_every_trace_failed']})")
    unclear = summary.get("llm_check", {}).get("unanswered", 0)
    if unclear:  # dedup: checks that confirmed nothing (unreadable, cut, or failed), so their samples stay
        line += f"; borderline checks without a usable answer {unclear} (their samples kept)"
    if summary.get("cut_traces_asked_again"):
        line += f"; cut traces asked again {summary['cut_traces_asked_again']}"
    if summary.get("skipped_items"):
        line += f"; items not asked {summary['skipped_items']} ({counts(summary['skipped_items_by_reason'])})"
    print(f"{line} -> {out_dir}")
    asked = ", ".join(dict.fromkeys(f"{e.name} at {e.base_url}" for e in stage_endpoints(config)))
    warning = unanswered_warning(summary, asked)
    if warning:
        # Exit 0 all the same (the stage finished, as the help's codes say), but an unreachable endpoint made a run
        # that kept nothing look like a finished one: the user is told what is missing and how to get it.
        print(f"judge-train data {args.stage}: warning: {warning}: rerun with the same --output to ask them again",
              file=sys.stderr)
    for stop in summary.get("endpoints_unusable", ()):  # train.synthetic.client.EndpointWatch: asked no more
        print(f"judge-train data {args.stage}: error: {stop}", file=sys.stderr)
    return EXIT_UNUSABLE if summary.get("endpoints_unusable") else 0


def _journal_kept(out_dir: Path) -> str:
    """What an interrupted stage's folder keeps for a rerun: its journal's rows, counted as rows (a request asked
    again, a failure journalled, is a row more: the rerun skips what those rows answered, not one request per row)."""
    for name in JOURNAL_FILES:
        path = out_dir / name
        if path.is_file():
            with path.open(encoding="utf-8", errors="replace") as lines:
                rows = sum(1 for line in lines if line.strip())
            if rows:
                return (f"its journal ({path}) keeps {counted(rows, 'row')}: rerun with the same --output to ask "
                        f"only for what {'it does' if rows == 1 else 'they do'} not answer")
    return "no request was journalled"


def unanswered_warning(summary: dict, asked: str) -> str | None:
    """What a stage summary's unanswered requests leave to do, for stderr (None: every request was answered).
    ``asked``: the stage's endpoints, named for the requests sent and never answered.

    ``requests_failed`` counts the jobs whose request failed, and ``requests_not_sent`` (``unusable_endpoints``) the
    requests a stopped endpoint held back. Both count requests, one per job: a job sends one request at a time and
    ends at the first that fails (annotate asks again only after an answer), a request not sent fails its job as
    ``request_failed`` does, and a run asks each job once. The requests not sent are so among the failed ones, and
    are said apart as not sent. Counts that do not nest that way break that rule: both are said as they stand, and
    neither is cut to fit the other.
    """
    unanswered = requests_failed(summary)
    not_sent = summary.get("requests_not_sent", 0)
    if not_sent > unanswered:
        return (f"{counted(unanswered, 'request')} failed, and {counted(not_sent, 'request')} {_were(not_sent)} not "
                "sent (their endpoint was stopped first: the error below says why); a request not sent fails its job, "
                "so these counts should nest and do not: summary.json's request_failed counts and requests_not_sent "
                "disagree")
    said = []
    if unanswered > not_sent:
        said.append(f"{counted(unanswered - not_sent, 'request')} failed (the endpoint never answered them: {asked}; "
                    "see failed/dropped rows' errors)")
    if not_sent:
        count = str(not_sent) if said else counted(not_sent, 'request')  # "3 requests failed ... and 41 were not sent"
        said.append(f"{count} {_were(not_sent)} not sent (their endpoint was stopped first: the error below says why)")
    return " and ".join(said) or None


def _were(n: int) -> str:
    return "was" if n == 1 else "were"


def requests_failed(summary: dict) -> int:
    """The jobs of a stage's summary whose request failed (``request_failed``: no endpoint answered them, sent or
    not), one failed request each, which a rerun into the same folder asks again: traces' failed traces (one an
    item's sample), the other stages' dropped rows, dedup's checks (one a pair)."""
    return (summary.get("failed_by_reason", {}).get("request_failed", 0)
            + summary.get("dropped_by_reason", {}).get("request_failed", 0)
            + summary.get("llm_check_failed_requests", 0))


if __name__ == "__main__":
    sys.exit(main())
