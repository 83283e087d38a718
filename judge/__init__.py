"""judge: the contract every pollux-judge stage shares.

Records (``JudgeRecord``, ``load_records``), prompt rendering (``render_prompt``, ``apply_chat``), verdict
rendering and parsing (``render_target``, ``parse_verdict``), rubric scales (``scale_of``), the POLLUX taxonomy
(``load_taxonomy``), the Zero-Shot / Standard split (``split_of``) and the ``/v1/judge`` result on the wire
(``JudgeResult``, ``ScoreSource``). ``train``, ``serve`` and ``eval`` import
this package and never each other.
"""

from judge.prompts import (
    PROMPT_VERSION,
    PROMPT_VERSION_EN,
    JUDGE_CHAT_TEMPLATE_KWARGS,
    apply_chat,
    chat_messages,
    prefix_key,
    prefix_order,
    prompt_fields,
    render_pairwise_prompt,
    render_prompt,
    render_prompt_en,
)
from judge.record_columns import RecordColumns
from judge.record_sources import load_record_columns, load_records, load_records_report, write_jsonl
from judge.records import (
    Annotation,
    JudgeRecord,
    LoadReport,
    RecordError,
    content_id,
    records_from_rows,
)
from judge.sample_data import sample_data_path
from judge.scales import Scale, ScaleError, scale_of
from judge.splits import (
    STANDARD,
    UNKNOWN,
    ZERO_SHOT,
    LeakageError,
    SplitSpec,
    check_no_leakage,
    load_split_spec,
    UnknownTaskTypeError,
    split_of,
)
from judge.taxonomy import Criterion, Task, Taxonomy, TaxonomyError, load_taxonomy, oriented_scale
from judge.verdicts import (
    Verdict,
    VerdictError,
    VerdictFormat,
    format_score,
    parse_integer_verdict,
    parse_judge_output,
    verdict_format_of_model,
    parse_rationale,
    parse_verdict,
    render_rationale_target,
    render_target,
)
from judge.wire import JudgeResult, ScoreSource

__all__ = [
    "PROMPT_VERSION",
    "PROMPT_VERSION_EN",
    "STANDARD",
    "UNKNOWN",
    "ZERO_SHOT",
    "Annotation",
    "Criterion",
    "JudgeRecord",
    "JudgeResult",
    "LeakageError",
    "LoadReport",
    "RecordColumns",
    "RecordError",
    "Scale",
    "ScoreSource",
    "ScaleError",
    "SplitSpec",
    "Task",
    "Taxonomy",
    "TaxonomyError",
    "UnknownTaskTypeError",
    "Verdict",
    "VerdictError",
    "VerdictFormat",
    "render_pairwise_prompt",
    "parse_integer_verdict",
    "parse_judge_output",
    "verdict_format_of_model",
    "apply_chat",
    "JUDGE_CHAT_TEMPLATE_KWARGS",
    "chat_messages",
    "check_no_leakage",
    "content_id",
    "format_score",
    "load_record_columns",
    "load_records",
    "load_records_report",
    "load_split_spec",
    "load_taxonomy",
    "oriented_scale",
    "parse_rationale",
    "parse_verdict",
    "prefix_key",
    "prefix_order",
    "prompt_fields",
    "records_from_rows",
    "render_prompt",
    "render_prompt_en",
    "render_rationale_target",
    "render_target",
    "sample_data_path",
    "scale_of",
    "split_of",
    "write_jsonl",
]
