"""The model card: ``README.md`` in an export folder, in the Hugging Face hub's format (YAML front matter + Markdown).

    judge-train card --export runs/t-lite-seq2seq/export
    judge-train card --export runs/t-lite-seq2seq/export --run runs/eval/t-lite-seq2seq --license apache-2.0

Every export gets one (``train.export.export_after_training`` writes it); ``judge-train card`` rewrites it later,
e.g. with the evaluation figures of a run scored by ``judge-eval score`` (its ``metrics.json``).

What the card says comes from the folder itself: ``pollux_judge.json`` (mode, prompt version, where the generator
and the score head are), ``run.json`` (the resolved training config, data counts, base model, launch, git revision,
package versions, and once training has finished, the steps taken and the logged losses) and ``config.json``
(architecture). Nothing is invented: a field the folder does not record is written as "not recorded".

``--run`` must be a run of this export: a run whose ``run.json`` records judge-serve's weights fingerprint of other
weights files than the export's (``judge.checkpoints.export_weights_fingerprint``: another judge, this folder
retrained since, or the export served with a generating model of its own, ``judge.checkpoints.generator_model_named``)
is refused; a run that records none (an older run, a server other than judge-serve) or asked an endpoint URL cannot be
checked, and the card is written with a warning saying so. A fingerprint by the export's recorded content digests
(``weights_sha256.json``) or by its files' names, sizes and modification times (a judge-serve that did not read that
record) both match, and the card says which did.

The hub's model-card fields (https://huggingface.co/docs/hub/model-cards): ``base_model``, ``language``,
``library_name``, ``pipeline_tag``, ``tags``, ``license``. ``base_model`` is a model id on the hub, so it is
written only for a base given as one; a local base (a folder, an SFT export a GRPO run started from) is named in
the body. The base model's license is not recorded anywhere in a
run, so ``license`` is an option (default ``other``: check the base model's terms before publishing). With ``other``
the hub's card metadata also wants ``license_name`` (an id) and ``license_link`` (a URL, or ``LICENSE`` for a file
of that name in the repository; huggingface/hub-docs ``modelcard.md``): ``--license-name`` and ``--license-link``,
else the base model's: ``<owner>-<name>-license`` linked to the base's hub page, where its terms are, for a base given
as a hub id, which names no licence, so the card's body says to check the base's terms and set the licence before
publishing; for a local base ``not-recorded`` linked to ``LICENSE``, and the card's body says to put the base
model's licence there before publishing.

Why one module of ~612 lines: each section of the card reads the same three records (manifest, run.json,
config.json) and the evaluation part checks a run against the same export; split, a record's reading would be
spelled in several places.
"""

from __future__ import annotations

import logging
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from judge.checkpoints import (BY_DIGESTS, EXPORT_MANIFEST, GENERATOR_SUBDIR, export_fingerprint_formula,
                               export_weights_fingerprint, generator_model_named, is_hub_model_id, read_manifest)
from judge.metrics_json.metrics import Metrics
from judge.plumbing.atomic_write import write_atomically
from judge.plumbing.config_files import read_json_object
from judge.splits import SPLIT_TITLES, STANDARD, ZERO_SHOT

__all__ = ["render_card", "write_card", "main", "CARD_NAME", "DEFAULT_LICENSE", "UNKNOWN_LICENSE", "evaluation_section",
           "license_fields"]

logger = logging.getLogger(__name__)

CARD_NAME = "README.md"
DEFAULT_LICENSE = "other"
NOT_RECORDED = "not recorded"
#: ``license_name`` of a card whose base model's licence is not known (a local base, no ``--license-name``).
UNKNOWN_LICENSE = "not-recorded"
# What the evaluation section says of a run whose recorded weights fingerprint is this export's, by which formula.
MATCHED_BY_DIGESTS = ("The run's judge-serve served these weights: its weights fingerprint is this folder's, by the "
                      "weights files' content digests (`weights_sha256.json`).")
MATCHED_BY_METADATA = ("The run's judge-serve served these weights: its weights fingerprint is this folder's, by the "
                       "weights files' names, sizes and modification times (a judge-serve that did not read "
                       "`weights_sha256.json`, or a folder without one).")
# Training settings shown in the hyperparameter table, in this order (config keys; absent ones are left out).
_HYPERPARAMETERS = ("learning_rate", "lr_scheduler_type", "warmup_steps", "num_train_epochs", "max_steps",
                    "global_batch_size", "per_device_train_batch_size", "max_length", "weight_decay", "max_grad_norm",
                    "optim", "bf16", "gradient_checkpointing", "deepspeed", "lora", "lora_r", "lora_alpha",
                    "lora_dropout", "lora_target_modules", "packing", "score_target", "score_loss_weight",
                    "lm_loss_weight", "verdict_format", "num_generations", "beta", "loss_type",
                    "max_completion_length", "temperature", "no_unique_mode", "use_vllm", "vllm_mode", "seed",
                    "trainer_args")
# The evaluation table's rows, in this order; the "unknown" split (task types the taxonomy does not know) stays in
# judge-eval's own report.
_CARD_SPLITS = (ZERO_SHOT, STANDARD, "all")


def _failed_verdicts(history: list[dict[str, Any]], n_rewards: int) -> str:
    """The GRPO card's share of completions whose verdict failed to parse, at the first and the last logged step
    (``train.grpo_rewards`` logs it as ``verdicts/failed_share``): each reward (the run's ``n_rewards``) pays 0 for
    such a verdict, so their means can rise while the policy fails as often, or more."""
    shares = [entry["verdicts/failed_share"] for entry in history if "verdicts/failed_share" in entry]
    if not shares:
        return f"; verdicts that failed to parse: {NOT_RECORDED} (no verdicts/failed_share logged)"
    pay = "the reward pays" if n_rewards == 1 else "both rewards pay"
    return (f"; verdicts that failed to parse ({pay} 0 for them): {_num(shares[0])} → {_num(shares[-1])} of the "
            "completions (verdicts/failed_share)")


def _expert_scores(data: dict[str, Any]) -> Any:
    """The experts' verdicts a run's data held: ``n_expert_scores`` where the recipe counts items in ``n_verdicts``
    (GRPO: one prompt per item), else ``n_verdicts`` (the SFT recipes: a row per verdict)."""
    return data["n_expert_scores"] if data.get("n_expert_scores") is not None else data.get("n_verdicts")


#: What each ``zero_shot`` setting did with the held-out rows (train.config's ``zero_shot``).
_ZERO_SHOT_DONE = {"refuse": "none of their rows trained (`zero_shot: refuse`)",
                   "drop": "their rows left out of training (`zero_shot: drop`)",
                   "allow": "**trained on** (`zero_shot: allow`): the Zero-Shot test is not zero-shot for this judge"}


def _held_out(config: dict[str, Any], data: dict[str, Any]) -> str | None:
    """The card's line naming the held-out (Zero-Shot) task types of the split the run used (its ``split_file``, else
    the packaged one: arXiv 2505.24616v3, Appendix D.2) and what ``zero_shot`` did with their rows; None for a
    config without ``zero_shot``. The types run.json's ``data`` recorded at training (``train.provenance``'s
    ``held_out_split``), with the split's sha256: the file may have changed since. A run.json without them gets the
    split as it reads now, said to be so; one that cannot be read now is said to be so, never stood in for."""
    from judge import load_split_spec

    if not config.get("zero_shot"):
        return None
    split_file = config.get("split_file") or ""
    where = (f"split file `{split_file}`" if split_file else
             "the packaged split `judge/data/zero_shot.yaml` (arXiv 2505.24616v3, Appendix D.2)")
    done = _ZERO_SHOT_DONE.get(config["zero_shot"], f"`zero_shot: {config['zero_shot']}`")
    types, n_criteria = data.get("held_out_task_types"), data.get("held_out_criteria")
    if isinstance(types, list) and isinstance(n_criteria, int):
        return (f"- held-out (Zero-Shot) task types, from {where} as recorded at training (sha256 "
                f"`{data.get('split_sha256') or NOT_RECORDED}`): {', '.join(map(str, types)) or 'none'}, and "
                f"{n_criteria} held-out criteria; {done}")
    try:
        spec = load_split_spec(split_file or None)
    except (OSError, ValueError) as err:
        return f"- held-out (Zero-Shot) task types: {NOT_RECORDED} ({where} cannot be read now: {err}); {done}"
    return (f"- held-out (Zero-Shot) task types, from {where} as the split reads now; not recorded at training: "
            f"{', '.join(sorted(spec.task_types)) or 'none'}, and {len(spec.criteria)} held-out criteria; {done}")


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def _with_ci(value: Any, ci: tuple[float, float] | None) -> str:
    if ci is not None and all(math.isfinite(v) for v in ci):
        return f"{_num(value)} [{_num(ci[0])}, {_num(ci[1])}]"
    return _num(value)


def _percent(level: float) -> str:
    return f"{100 * level:g} %" if math.isfinite(level) else "—"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    def cell(text: Any) -> str:
        return str(text).replace("|", "\\|").replace("\n", " ")

    return (["| " + " | ".join(cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows])


def _setting(key: str, config: dict[str, Any], launch: dict[str, Any], result: dict[str, Any]) -> str:
    """A hyperparameter as the config set it, with what training made of it where the two differ.

    ``bf16: auto`` is resolved when the run starts (on where CUDA was; run.json's launch records it); a max_steps
    that ends training before ``num_train_epochs`` leaves the epochs trained at the last logged epoch; trainer_args
    (any TrainingArguments key) are shown as JSON, as the config file spells them.
    """
    import json

    value = config[key]
    if key == "trainer_args":
        return f"`{json.dumps(value, ensure_ascii=False, sort_keys=True)}`"
    if key == "bf16" and isinstance(launch.get("bf16"), bool) and str(value).lower() != str(launch["bf16"]).lower():
        return f"`{value}` (resolved: `{str(launch['bf16']).lower()}`)"
    if key == "num_train_epochs":
        epochs = [e["epoch"] for e in result.get("log_history") or [] if isinstance(e, dict)
                  and isinstance(e.get("epoch"), (int, float))]  # fmt: skip
        max_steps = config.get("max_steps")
        if (epochs and isinstance(max_steps, int) and max_steps > 0 and isinstance(value, (int, float))
                and max(epochs) < value):
            return f"`{value}` (max_steps {max_steps} ended training at epoch {_num(max(epochs), 2)})"
    return f"`{value}`"


def _losses(history: list[dict[str, Any]]) -> tuple[Any, Any]:
    losses = [entry["loss"] for entry in history if isinstance(entry, dict) and "loss" in entry]
    return (losses[0], losses[-1]) if losses else (None, None)


def _read_metrics(path: Path) -> Metrics:
    """The ``metrics.json`` at ``path``, typed (``judge.metrics_json``).

    Raises:
        FileNotFoundError: there is no such file.
        ValueError: it is not a ``metrics.json`` of ``judge-eval score``, naming the file and what it lacks.
    """
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no metrics.json; score the run first (judge-eval score)")
    data = read_json_object(path)  # its errors name the file
    try:
        return Metrics.from_json(data)
    except ValueError as err:
        raise ValueError(f"{path}: not a metrics.json of judge-eval score ({err})") from err


def _short(fingerprint: str | None) -> str:
    return fingerprint[:12] if fingerprint else "none (no weights files)"


def license_fields(license: str, base_model: str, name: str | None = None,  # noqa: A002 - the hub's key
                   link: str | None = None) -> dict[str, str]:
    """The card's ``license_name`` and ``license_link`` (the module's docstring says which): both with ``license``
    ``other``, none with another (the hub's list names its licence).

    Raises:
        ValueError: a name or link given with a licence other than ``other`` (the hub reads them with ``other`` only).
    """
    if license != DEFAULT_LICENSE:
        if name or link:
            raise ValueError(f"--license-name and --license-link go with --license {DEFAULT_LICENSE} only, not with "
                             f"--license {license} (the hub's own licence list names it)")
        return {}
    hub = is_hub_model_id(base_model)
    default_name = re.sub(r"[^a-z0-9.]+", "-", base_model.lower()).strip("-") + "-license" if hub else UNKNOWN_LICENSE
    return {"license_name": name or default_name,
            "license_link": link or (f"https://huggingface.co/{base_model}" if hub else "LICENSE")}


def _check_run_judge(export: Path, metrics_path: Path, metrics: Metrics) -> tuple[str | None, str | None]:
    """Refuse a scored run that judged other weights than ``export``'s: its figures would be another judge's.

    The run's ``run.json`` (beside ``metrics.json``, else beside the predictions it scored) records the judge it
    asked (``config.judge``) and, when judge-serve served it, ``weights_fingerprint``; the export's is computed as
    judge-serve computes it (``judge.checkpoints.export_weights_fingerprint``), so a run of this very folder
    matches. A judge-serve that did not read the export's ``weights_sha256.json`` fingerprinted every file by its
    name, size and modification time: ``judge.checkpoints.export_fingerprint_formula`` matches a recorded
    fingerprint by either formula, and the card says by which the run was matched.

    Returns:
        ``(warning, matched)``: a line to warn with (what could not be checked, and why) or None; and, when the run
        judged these weights, a sentence for the card saying by which fingerprint it was matched, else None.

    Raises:
        ValueError: the run recorded other weights (naming both folders, and what to do).
    """
    candidates = [metrics_path.parent / "run.json"]
    if metrics.predictions:  # `judge-eval score --out` elsewhere: the run folder is the predictions'
        candidates.append(Path(metrics.predictions).parent / "run.json")
    found = next((path for path in candidates if path.is_file()), None)
    if found is None:
        return (f"{metrics_path.parent}: no run.json of judge-eval run, so the run's judge cannot be checked against "
                f"{export}: make sure it judged this export"), None
    run_dir = found.parent
    try:
        record = read_json_object(found)
    except ValueError as err:
        return f"{err}: the run's judge cannot be checked against {export}", None
    config = record.get("config") if isinstance(record.get("config"), dict) else {}
    judge_ref = config.get("judge") if isinstance(config.get("judge"), str) else ""
    recorded = record.get("weights_fingerprint")
    recorded = recorded if isinstance(recorded, str) and recorded else None
    # No judge named: its URL came from an environment variable (base_url_env), an endpoint as well.
    served = not judge_ref or judge_ref.startswith(("http://", "https://"))
    judged = judge_ref or f"the endpoint in ${config.get('base_url_env') or 'base_url_env'}"
    if recorded is None:
        return (f"{run_dir}: the run records no weights fingerprint (judge {judged}; an older judge-eval run, or a "
                f"server other than judge-serve, records none), so its judge cannot be checked against {export}"), None
    try:
        matched = export_fingerprint_formula(recorded, export)
        if matched is not None:
            return None, MATCHED_BY_DIGESTS if matched == BY_DIGESTS else MATCHED_BY_METADATA
        current = export_weights_fingerprint(export)  # only the messages below name it
    except (ValueError, OSError) as err:
        return (f"{export}: its weights fingerprint cannot be computed ({err}), so the run {run_dir} cannot be "
                "checked"), None
    if served:  # the endpoint may serve a copy on another machine: other modification times, the same weights
        return (f"{run_dir}: the run asked an endpoint ({judged}) serving weights with fingerprint {_short(recorded)}, "
                f"not {export}'s ({_short(current)}): its judge cannot be checked; make sure it served this "
                "export"), None
    todo = f"score a run of this export: judge-eval run --judge {export} ..., then judge-eval score"
    server_args = config.get("server_args") if isinstance(config.get("server_args"), list) else []
    if Path(judge_ref).is_absolute() and Path(judge_ref).resolve() == export.resolve():
        named = generator_model_named(server_args)
        if named:  # the fingerprint is of the model given
            raise ValueError(f"{run_dir}: the run's judge-serve was given a generating model of its own (server_args "
                             f"{' '.join(map(str, server_args))}), so the rationales it scored are not {export}'s "
                             f"as served alone: weights fingerprint {_short(recorded)}, not the export's "
                             f"{_short(current)}; {todo}, without --generator-model")
        if named is None:  # its --config is gone: either reason fits, and neither is known
            raise ValueError(f"{run_dir}: the run judged {export} with weights fingerprint {_short(recorded)}, not "
                             f"its {_short(current)} now: it was retrained since, or the run's --config (which cannot "
                             f"be read now) gave judge-serve a generating model of its own; {todo}")
        raise ValueError(f"{run_dir}: the run judged {export}, which was retrained (its weights files rewritten) "
                         f"since: weights fingerprint {_short(recorded)} then, {_short(current)} now; {todo}")
    raise ValueError(f"{run_dir}: the run judged {judge_ref} (weights fingerprint {_short(recorded)}), not {export} "
                     f"({_short(current)}; the fingerprint is of the weights files' names, sizes and modification "
                     f"times, so a copy made without cp -p differs too); {todo}")


def _evaluation(metrics: Metrics, source: str) -> list[str]:
    """The evaluation section from a ``metrics.json`` of ``judge-eval score``."""
    out = ["## Evaluation", "",
           f"`judge-eval score` on `{metrics.data or NOT_RECORDED}` (from `{source}`), against the experts' "
           f"{metrics.target}. Intervals: {_percent(metrics.settings.ci_level)} bootstrap. "
           "A verdict that did not parse is counted in `failed`, never scored.", ""]
    rows = []
    for split in _CARD_SPLITS:
        if split not in metrics.splits:
            continue
        c = metrics.splits[split].overall
        rows.append([SPLIT_TITLES[split], _num(c.n), _num(c.n_failed), _num(c.n_no_unique_mode),
                     _with_ci(c.mae, c.mae_ci), _with_ci(c.spearman, c.spearman_ci),
                     f"{_num(c.vc_judge)} / {_num(c.vc_experts)}"])
    if rows:
        out += _table(["Test", "n", "failed", "no unique mode", "MAE", "Spearman", "VC judge / experts"], rows)
    else:
        out.append("The metrics file holds no split figures.")
    return out + [""]


def render_card(export_dir: str | Path, *, run_json: str | Path | None = None, eval_run: str | Path | None = None,
                license: str = DEFAULT_LICENSE, name: str | None = None,  # noqa: A002 - the hub's key
                warn: Callable[[str], None] | None = None, license_name: str | None = None,
                license_link: str | None = None) -> str:
    """The model card of an export folder.

    Args:
        export_dir: the export (``pollux_judge.json`` required).
        run_json: the training run's ``run.json``, which must exist; default: the export's own, else
            ``<export>/../run.json``, else nothing recorded.
        eval_run: a folder scored by ``judge-eval score`` (or its ``metrics.json``) to report.
        license: the hub's ``license`` field.
        license_name, license_link: the hub's fields of the same names, which go with ``license`` ``other`` only
            (default: the base model's, ``license_fields``).
        name: the model's name in the title and the serve commands; default: the run's folder name.
        warn: called with a line when ``eval_run``'s judge cannot be checked against the export (default: logged).

    Raises:
        FileNotFoundError: the folder has no ``pollux_judge.json`` (not an export of judge-train), or ``eval_run``
            is not there or has no ``metrics.json``.
        ValueError: a ``run_json`` given that is not there, a JSON file that does not parse, one that is not a
            ``metrics.json`` of ``judge-eval score`` (a missing or unreadable field, named), or an ``eval_run``
            whose run.json records judge-serve's fingerprint of other weights than the export's.
    """
    export = Path(export_dir)
    if not export.is_dir():  # "no pollux_judge.json" sent a mistyped path's user looking inside a folder not there
        raise FileNotFoundError(f"{export}: no such folder" if not export.exists() else
                                f"{export}: a file, not a folder; give the export folder (holding {EXPORT_MANIFEST})")
    if not (export / EXPORT_MANIFEST).is_file():
        # a judge-train run folder: its judge is in export/ (judge-serve and judge-eval say the same)
        hint = (f"; its judge is {export / 'export'} (pass that folder)"
                if (export / "export" / EXPORT_MANIFEST).is_file() else "")
        raise FileNotFoundError(f"{export}: no {EXPORT_MANIFEST}; not a judge-train export{hint}")
    manifest = read_manifest(export)
    # A card without a training record says "not recorded"; a run.json the caller named and mistyped is refused.
    missing_ok = run_json is None
    if run_json is None:
        run_json = export / "run.json" if (export / "run.json").is_file() else export.parent / "run.json"
    run = read_json_object(run_json, missing_ok=missing_ok)
    config = run.get("config") or {}
    launch = run.get("launch") or {}
    data = run.get("data") or {}
    result = run.get("result") or {}
    hf_config = read_json_object(export / "config.json", missing_ok=True)
    mode = manifest.get("mode", NOT_RECORDED)
    recipe = config.get("recipe") or mode
    base_model = launch.get("base_model") or config.get("model_name_or_path") or NOT_RECORDED
    name = name or Path(config.get("output_dir") or export.parent).name or export.name
    regression = mode == "regression"
    licence = license_fields(license, base_model, license_name, license_link)

    front = {
        # The hub's base_model is a model id on the hub: a local base (a folder, the built tiny model, an SFT export
        # a GRPO run started from) is no such id, and the body names it as recorded.
        **({"base_model": base_model} if is_hub_model_id(base_model) else {}),
        "language": ["ru"],
        "library_name": "transformers",
        "pipeline_tag": "text-classification" if regression else "text-generation",
        "license": license,
        **licence,
        "tags": ["pollux", "llm-as-a-judge", "judge", "russian", "pollux-judge", mode],
    }
    if config.get("lora"):
        front["tags"].append("lora-merged")
    out = ["---", yaml.safe_dump(front, allow_unicode=True, sort_keys=False).strip(), "---", "",
           f"# {name}: a POLLUX judge ({mode})", "",
           f"An LLM judge for Russian in the format of the POLLUX benchmark, trained with `judge-train` "
           f"(pollux-judge) from `{base_model}`. Given an instruction, an answer, a criterion and its rubric, it "
           + ("thinks (`<think>...</think>`, the chat template's thinking left on) and then answers with a bare "
              "integer from the rubric, as `Pollux-4B-Judge` does (verdict format `integer`)."
              if manifest.get("verdict_format") == "integer"
              # The regression generator is trained on the rationale alone (train.build_data's
              # render_rationale_target): the score comes from the head, never from the generated text.
              else "writes a rationale, `[FEEDBACK] ... [END]`, and its score head scores it." if regression
              else "writes a rationale and a score: `[FEEDBACK] ... [RESULT] <score> [END]`.")]
    if regression:
        out += ["", "This is a **regression** judge: the same trained backbone in two checkpoints. "
                f"`{GENERATOR_SUBDIR}/` (a causal LM) writes the rationale; this folder "
                f"(`{(hf_config.get('architectures') or ['Qwen2ForSequenceClassification'])[0]}`, "
                f"`problem_type: {hf_config.get('problem_type', NOT_RECORDED)}`) reads the prompt plus that "
                f"rationale and its `{manifest.get('score_head') or 'score'}` head returns a real-valued score."]
    out += ["", "## Training", "",
            f"- recipe: `{recipe}` (mode `{mode}`{', LoRA merged into the weights' if config.get('lora') else ''})",
            f"- base model: `{base_model}`",
            f"- prompt version: `{manifest.get('prompt_version') or run.get('prompt_version') or NOT_RECORDED}` "
            "(the judge must be prompted with the same template: judge-serve checks it)",
            f"- data: `{config.get('data', NOT_RECORDED)}`; Zero-Shot rows: `{config.get('zero_shot', NOT_RECORDED)}`"
            # which task types were held out: the packaged split's unless the run named its own
            + (f" (split file `{config['split_file']}`)" if config.get("split_file") else "") + "; "
            f"{_num(data.get('n_train')) if data else NOT_RECORDED} training rows, "
            f"{_num(data.get('n_eval')) if data else NOT_RECORDED} validation rows"
            + (f" (from {_num(data.get('n_records'))} records, {_num(_expert_scores(data))} expert verdicts)"
               if data.get("n_records") is not None else "")
            # the rows, not the path: a data file rewritten at the same path trains another judge
            + (f"; training rows' fingerprint `{data['train_fingerprint']}` (sha256, run.json `data`)"
               if data.get("train_fingerprint") else f"; training rows' fingerprint: {NOT_RECORDED}")]
    held_out = _held_out(config, data)
    if held_out:
        out.append(held_out)
    if config.get("rewards"):
        # The GRPO recipe: which rewards, weighted how, and how they moved (trl logs their means per step).
        history = result.get("log_history") or []
        means = {name: [e[f"rewards/{name}/mean"] for e in history if f"rewards/{name}/mean" in e]
                 for name in config["rewards"]}
        out.append("- rewards (GRPO, trl GRPOTrainer): " + ", ".join(
            f"`{name}` x {weight}" + (f" (mean {_num(means[name][0])} → {_num(means[name][-1])})" if means[name] else "")
            for name, weight in config["rewards"].items())
            + _failed_verdicts(history, len(config["rewards"]))
            + f"; groups of {config.get('num_generations', '?')} completions; experts without a unique mode: "
            f"`{config.get('no_unique_mode', NOT_RECORDED)}`")
    dropped = data.get("dropped") or {}
    if dropped:
        out.append("- dropped while building the rows: " + ", ".join(f"{k} {v}" for k, v in dropped.items()))
    if result:
        first, last = _losses(result.get("log_history") or [])
        out.append(f"- optimizer steps: {_num(result.get('global_step'))}; training loss {_num(first, 4)} → {_num(last, 4)}"
                   + (f"; stopped by signal {result['stopped_by_signal']}" if result.get("stopped_by_signal") else ""))
    world = launch.get("world_size")
    if world:
        out.append(f"- launch: {world} process(es) x {launch.get('per_device_train_batch_size', '?')} rows per device x "
                   f"{launch.get('gradient_accumulation_steps', '?')} accumulation steps = global batch "
                   f"{launch.get('global_batch_size', '?')}"
                   + (f"; Slurm job {launch['slurm_job_id']}" if launch.get("slurm_job_id") else ""))
    out += ["", "### Hyperparameters", ""]
    # LoRA's settings only when LoRA was used (they have defaults either way).
    shown = [k for k in _HYPERPARAMETERS if k in config and (config.get("lora") or not k.startswith("lora_"))]
    rows = [[key, _setting(key, config, launch, result)] for key in shown]
    out += _table(["setting", "value"], rows) if rows else [f"Training config {NOT_RECORDED}."]

    model_path = "PATH/TO/THIS/FOLDER"
    out += ["", "## Serving", "", "With pollux-judge's `judge-serve` (vLLM underneath; one port, OpenAI-compatible "
            "routes plus `/v1/judge`, which renders the POLLUX prompt and parses the verdict):", "", "```bash",
            f"JUDGE_SERVE_API_KEY=$KEY judge-serve --model {model_path} --served-model-name {name} --port 8000", "```", "",
            "```python", "from openai import OpenAI",
            'client = OpenAI(base_url="http://127.0.0.1:8000/v1", api_key=KEY)',
            'result = client.post("/judge", cast_to=object, body={"items": [{"instruction": "...", "answer": "...",',
            '    "reference_answer": "", "criteria": [{"name": "...", "rubrics": "0: ...\\n\\n1: ..."}]}]})',
            "```", "", "With plain vLLM:", ""]
    if regression:
        out += ["```bash",
                f"vllm serve {model_path}/{GENERATOR_SUBDIR} --served-model-name {name}-generator --port 8001",
                f"vllm serve {model_path} --runner pooling --served-model-name {name} --port 8002",
                "```", "",
                "Generate the rationale from the first (chat completion of the POLLUX prompt, stop at `<|im_end|>`), "
                "then POST to the second's `/classify` the text the head was trained on, the rationale re-rendered "
                "as pollux-judge's training and `judge-serve` render it: `judge.apply_chat(tokenizer, prompt, "
                "judge.render_rationale_target(judge.parse_rationale(generated)[0]))`; with "
                "`problem_type: regression` it returns the head's raw value, the score."]
    else:
        out += ["```bash", f"vllm serve {model_path} --served-model-name {name} --port 8000", "```", "",
                "Send the POLLUX prompt (`judge.render_prompt(record)` in pollux-judge) as the user message of a "
                + ("chat completion with thinking on and read the integer after the reasoning "
                   "(`judge.parse_integer_verdict`)." if manifest.get("verdict_format") == "integer" else
                   "chat completion (temperature 0) and parse `[RESULT] <score>` from the reply "
                   "(`judge.parse_verdict`).")]
    out.append("")
    if eval_run is not None:
        metrics_path = Path(eval_run)
        if not metrics_path.exists():  # "no metrics.json; score the run first" sent a mistyped path's user scoring
            raise FileNotFoundError(f"{metrics_path}: no such {'file' if metrics_path.suffix == '.json' else 'folder'}")
        metrics_path = metrics_path / "metrics.json" if metrics_path.is_dir() else metrics_path
        metrics = _read_metrics(metrics_path)
        unchecked, matched = _check_run_judge(export, metrics_path, metrics)
        if unchecked:
            (warn or logger.warning)(unchecked)
        out += _evaluation(metrics, str(metrics_path.parent)) + ([matched, ""] if matched else [])
    else:
        out += ["## Evaluation", "", "Not evaluated yet. Judge and score the POLLUX test, then rewrite this card:",
                "", "```bash", f"judge-eval run --judge {model_path} --data TEST.jsonl --out runs/eval/{name}",
                f"judge-eval score --predictions runs/eval/{name}",
                f"judge-train card --export {model_path} --run runs/eval/{name}", "```", ""]
    packages = run.get("packages") or {}
    out += ["## Provenance", "",
            f"- pollux-judge commit `{run.get('git_revision') or NOT_RECORDED}`" + (" (uncommitted changes)" if run.get("git_dirty") else ""),
            f"- started {launch.get('started_utc', NOT_RECORDED)} on `{launch.get('host', NOT_RECORDED)}`",
            "- packages: " + (", ".join(f"{k} {v}" for k, v in packages.items() if v) or NOT_RECORDED),
            f"- the full record: {_record_source(export, Path(run_json), run)}"]
    if licence.get("license_name") == UNKNOWN_LICENSE:  # a local base: its licence is the publisher's to add
        out.append(f"- licence: the base model's ({base_model}) is not recorded; put it in `LICENSE` before "
                   "publishing (the front matter's `license_link`), or rewrite the card with `judge-train card "
                   "--license-name ... --license-link ...`")
    elif licence and not license_name:  # the hub reads license_name as the licence's id: this one names none
        out.append(f"- licence: `license_name` is named after the base model (`{base_model}`), not a licence; check "
                   f"its terms at {licence['license_link']} and rewrite the card with `judge-train card --license "
                   "<id>` (a licence the hub lists) or `--license-name ... --license-link ...` before publishing")
    out.append("")
    return "\n".join(out)


def _record_source(export: Path, run_json: Path, run: dict[str, Any]) -> str:
    """Where the card's training record is: this folder's run.json only when that is the file read."""
    if not run:
        return NOT_RECORDED
    if run_json.resolve() == (export / "run.json").resolve():
        return "`run.json` in this folder"
    return f"`{run_json}`, not in this export"


#: Said under evaluation figures kept across a ``judge-train run --resume`` that exported the folder again.
RESUME_NOTE = ("_Kept from this folder's card before `judge-train run --resume` exported it again: if training went "
               "on, judge and score the export again and rewrite the card (`judge-train card`)._")


def write_card(export_dir: str | Path, *, kept_evaluation: str | None = None, kept_note: str | None = RESUME_NOTE,
               **kwargs: Any) -> Path:
    """Write ``README.md`` into the export folder (``render_card``'s arguments); returns its path.

    Args:
        kept_evaluation: an evaluation section (``evaluation_section``) to put in place of "Not evaluated yet" when
            ``eval_run`` is not given: the figures ``judge-train card --run`` had written before.
        kept_note: said under the kept figures (once); None for none: ``judge-train card`` rewriting the card of
            the same weights (another ``--license``) keeps them as they were.
    """
    path = Path(export_dir) / CARD_NAME
    text = render_card(export_dir, **kwargs)
    if kept_evaluation and kwargs.get("eval_run") is None:
        start, end = _section_span(text, "## Evaluation")
        if start is not None:
            kept = kept_evaluation.rstrip("\n") + "\n\n"
            if kept_note and kept_note not in kept:  # a second --resume keeps one note, not two
                kept += kept_note + "\n\n"
            text = text[:start] + kept + text[end:]
    # a later --resume keeps its evaluation section (evaluation_section): replaced whole, never left cut
    return write_atomically(path, text.encode("utf-8"))


def _section_span(text: str, heading: str) -> tuple[int | None, int]:
    """Where the ``heading`` section of a card starts and ends (at the next ``## `` heading, or the end)."""
    start = text.find("\n" + heading + "\n")
    if start < 0:
        return None, len(text)
    start += 1
    end = text.find("\n## ", start + len(heading))
    return start, (len(text) if end < 0 else end + 1)


def evaluation_section(export_dir: str | Path) -> str | None:
    """The evaluation section of an export's card when ``judge-train card --run`` filled it with figures; None
    when there is no card or it says "Not evaluated yet"."""
    path = Path(export_dir) / CARD_NAME
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    start, end = _section_span(text, "## Evaluation")
    if start is None or "Not evaluated yet" in text[start:end]:
        return None
    return text[start:end]


def main(argv: list[str] | None = None) -> int:
    """``judge-train card``: (re)write an export's model card; returns the exit status."""
    from judge.plumbing.config_files import ExactArgumentParser  # long options in full, never abbreviated

    parser = ExactArgumentParser(prog="judge-train card", description=__doc__.split("\n\n")[0],
                                     epilog="example: judge-train card --export runs/x/export --run runs/eval/x. "
                                     "Without --run, figures an earlier --run wrote are kept. Exit codes: 0 the card "
                                     "written; 2 a missing or unreadable export, run or run.json, a run that "
                                     "judged other weights, or a card that could not be written (named).")
    parser.add_argument("--export", required=True, help="the export folder (holding pollux_judge.json)")
    parser.add_argument("--run", default=None, help="a folder scored by `judge-eval score` whose figures to include")
    parser.add_argument("--run-json", default=None, help="the training run.json (default: the export's own)")
    parser.add_argument("--license", default=DEFAULT_LICENSE, help="the hub's license field (default: other)")
    parser.add_argument("--license-name", default=None,
                        help="with --license other: the hub's license_name, an id (default: the base model's)")
    parser.add_argument("--license-link", default=None,
                        help="with --license other: the hub's license_link, a URL or LICENSE (default: the base "
                             "model's hub page)")
    parser.add_argument("--name", default=None, help="the model's name (default: the training run's folder)")
    args = parser.parse_args(argv)
    try:
        # Without --run the card keeps the figures an earlier --run wrote into it (they describe the same weights).
        kept = None if args.run else evaluation_section(args.export)
        path = write_card(args.export, run_json=args.run_json, eval_run=args.run, license=args.license, name=args.name,
                          license_name=args.license_name, license_link=args.license_link,
                          kept_evaluation=kept, kept_note=None,
                          warn=lambda line: print(f"judge-train card: warning: {line}", file=sys.stderr))
    except (FileNotFoundError, ValueError) as err:
        print(f"judge-train card: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a card that cannot be written (a full disk, a read-only folder): named, no traceback
        what = f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err)
        print(f"judge-train card: error: {what}; the card is not written", file=sys.stderr)
        return 2
    print(f"judge-train card: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
