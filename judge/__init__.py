"""judge: the contract every pollux-judge stage shares.

Records (``JudgeRecord``, ``load_records``), prompt rendering (``render_prompt``, ``apply_chat``), verdict
rendering and parsing (``render_target``, ``parse_verdict``), rubric scales (``scale_of``), the POLLUX taxonomy
(``load_taxonomy``), the Zero-Shot / Standard split (``split_of``, ``splits_of``) and the ``/v1/judge`` result on
the wire (``JudgeResult``, ``ScoreSource``). ``train``, ``serve`` and ``eval`` import this package and never each
other.
"""

# The names are imported when first used (PEP 562), so that a console script's `--help` or a refusal of its
# arguments does not import what it never reaches: the records' NumPy and Arrow, the wire's pydantic (`judge-eval
# --help` takes about a third of the CPU without them; measured: docs/performance.md, row "a console script's
# `--help`").
import importlib
import importlib.util

_EXPORTS: dict[str, tuple[str, ...]] = {
    "judge.prompts": ("PROMPT_VERSION", "PROMPT_VERSION_EN", "JUDGE_CHAT_TEMPLATE_KWARGS", "apply_chat",
                      "chat_messages", "prefix_key", "prefix_order", "prompt_fields", "render_pairwise_prompt",
                      "render_prompt", "render_prompt_en"),
    "judge.record_columns": ("RecordColumns",),
    "judge.record_sources": ("load_record_columns", "load_records", "load_records_report", "write_jsonl"),
    "judge.records": ("Annotation", "JudgeRecord", "LoadReport", "RecordError", "content_id", "records_from_rows"),
    "judge.sample_data": ("sample_data_path",),
    "judge.scales": ("Scale", "ScaleError", "scale_of"),
    "judge.splits": ("STANDARD", "UNKNOWN", "ZERO_SHOT", "LeakageError", "SplitSpec", "check_no_leakage",
                     "load_split_spec", "UnknownTaskTypeError", "split_groups", "split_of", "splits_of"),
    "judge.taxonomy": ("Criterion", "Task", "Taxonomy", "TaxonomyError", "load_taxonomy", "oriented_scale"),
    "judge.verdicts": ("Verdict", "VerdictError", "VerdictFormat", "format_score", "parse_integer_verdict",
                       "parse_judge_output", "verdict_format_of_model", "parse_rationale", "parse_verdict",
                       "render_rationale_target", "render_target"),
    "judge.wire": ("JudgeResult", "ScoreSource"),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    """The contract's name ``name`` (from the module ``_EXPORTS`` gives it), or the submodule ``judge.<name>``."""
    module = _MODULE_OF.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value  # the next lookup is a plain attribute
        return value
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
