"""Which verdict format and prompt template ``judge-eval run`` asks and reads a judge with, and what an earlier launch
into the run folder recorded of them.

- **The verdict format** (``judge.VerdictFormat``): the one a judge-serve names in its ``GET /v1/models`` entry
  (``judge.wire.ModelLimits.verdict_format``: what its engine writes and its ``/v1/judge`` parses, decided from the
  export manifest and model type, which a URL does not show), else the ``verdict_format`` setting, else the
  checkpoint's (``judge.checkpoints.verdict_format_and_why``, as judge-serve decides), else the model id's
  (``chosen_verdict_format``). A setting that contradicts a served format is refused before any item is asked.
- **The prompt template**: the ``prompt_version`` setting's (one a judge-serve names otherwise is refused), else
  ``resolve_prompt_template``'s (``judge.checkpoints.prompt_template_and_why``).
- **The folder's record** (its ``run.json``: ``earlier_record`` and the readers beside it): a resume is held to the
  model, verdict format, prompt template and ``max_tokens`` of the verdicts already written (``held_model``
  for the model, ``run_verdict_format`` for the format; ``eval.judging.run`` for the others), so that one folder
  never mixes two.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterable

# N_FIRST_MISREAD: how many of a chat run's first answers, all unreadable in the format the run guessed and all
# readable in the other, stop it (FormatWatch); defined beside verdict_format's help, which says it
from eval.judging.config import N_FIRST_MISREAD
from judge.checkpoints import EXPORT_MANIFEST, export_fingerprints, is_hub_id, names_generator_model
from judge.plumbing.config_files import ConfigError
from judge.prompts import PromptTemplate
from judge.verdicts import VerdictFormat, split_at_last_think_close
from judge.wire import root_identity

__all__ = ["RECORDED_SERVED_FORMAT_WHY", "SERVED_FORMAT_WHY", "SETTING_TEMPLATE_WHY", "checkpoint_folder",
           "chosen_verdict_format", "resolve_verdict_format",
           "run_verdict_format", "resolve_prompt_template", "earlier_record", "earlier_prompt_version",
           "earlier_verdict_format", "earlier_max_tokens", "earlier_model", "held_model", "held_root",
           "held_fingerprint", "same_weights", "judged_export",
           "FormatWatch", "N_FIRST_MISREAD", "verdict_shaped"]

log = logging.getLogger("judge_eval.run")


def checkpoint_folder(judge_ref: str) -> Path | None:
    """The folder a judge's weights are read from, as judge-serve reads them: a checkpoint folder, or a hub id's
    snapshot in the Hugging Face cache (the one ``local_server`` serves; never downloaded here). None for a URL, and
    for a hub id the cache lacks (a rerun with nothing to ask starts no server, so fetches nothing)."""
    if judge_ref.startswith(("http://", "https://")):
        return None
    if Path(judge_ref).is_dir():
        return Path(judge_ref)
    if not is_hub_id(judge_ref):
        return None
    from judge.checkpoints import CheckpointNotFound, resolve_checkpoint

    try:
        return resolve_checkpoint(judge_ref, allow_download=False)
    except CheckpointNotFound:
        return None


#: Why a run takes judge-serve's verdict format (logged, and named where a resume is refused).
SERVED_FORMAT_WHY = ("judge-serve says so in its GET /v1/models entry: its judge writes, and its /v1/judge parses, "
                     "that format")
#: The same, for a rerun with nothing to ask: no server was asked, the entry is the one run.json recorded.
RECORDED_SERVED_FORMAT_WHY = ("judge-serve said so in its GET /v1/models entry when the folder's verdicts were asked, "
                              "as run.json's server_limits records")


def chosen_verdict_format(setting: str, judge_ref: str, model: str, served: str | None = None,
                          root: str | None = None) -> tuple[str, str]:
    """The judge's verdict format and why (``resolve_verdict_format`` logs them).

    In order: the format a judge-serve serves (``served``: ``judge.wire.ModelLimits.verdict_format``, decided by
    judge-serve from the export manifest and model type, ``judge.checkpoints.verdict_format_and_why``); ``setting``
    unless ``auto``; a checkpoint folder's, a hub id's cached snapshot included (its export manifest first, as
    judge-serve decides); else the one its hub id, served model id or the checkpoint vLLM names as the served
    model's ``root`` (a served name such as ``judge`` hides it) implies (one naming ``Pollux-4B-Judge``,
    ``judge.checkpoints.names_pollux_4b``, -> ``integer``, anything else ``tagged``).

    Raises:
        ConfigError: ``setting`` names another format than the one served (judge-serve parses every ``/v1/judge``
            verdict in its own, and its engine is launched for it), or the served one is a format this judge-eval
            does not read. Raised before any item is asked.
    """
    if served is not None:
        if served not in VerdictFormat.ALL:
            raise ConfigError(f"verdict_format: judge-serve serves {model!r} in the verdict format {served!r}, which "
                              f"this judge-eval does not read (it reads {', '.join(VerdictFormat.ALL)}): update it")
        if setting not in ("auto", served):
            raise ConfigError(f"verdict_format: --verdict-format {setting}, but judge-serve serves {model!r} in the "
                              f"verdict format {served} ({SERVED_FORMAT_WHY}): drop --verdict-format, or serve the "
                              f"judge with --verdict-format {setting}")
        return served, SERVED_FORMAT_WHY
    if setting != "auto":
        return setting, "--verdict-format is set"
    from judge.checkpoints import names_pollux_4b, verdict_format_and_why

    folder = checkpoint_folder(judge_ref)
    if folder is not None:
        return verdict_format_and_why(folder, model)
    named = next((ref for ref in (model, root or "", judge_ref if is_hub_id(judge_ref) else "")
                  if names_pollux_4b(ref)), "")
    if named:
        return VerdictFormat.INTEGER, f"the model id {named!r} names Pollux-4B-Judge"
    return VerdictFormat.TAGGED, "no model id names Pollux-4B-Judge: the 7B/32B judges' format"


def resolve_verdict_format(setting: str, judge_ref: str, model: str) -> str:
    """The judge's verdict format for a folder with no verdicts yet and a server that says none
    (``run_verdict_format``, logged)."""
    return run_verdict_format(setting, judge_ref, model)[0]


def run_verdict_format(setting: str, judge_ref: str, model: str, served: str | None = None, out: Path | None = None,
                       n_written: int = 0, asking: bool = True, root: str | None = None) -> tuple[str, str]:
    """The run's verdict format and why, logged when this run chose it (``setting`` ``auto``): a wrong one fails every
    judgment, or is scored as another format.

    ``chosen_verdict_format``'s, held to the format the ``n_written`` verdicts already in ``out`` were recorded in
    (``earlier_verdict_format``): the run key holds the setting, and ``auto`` resolves to what the server says now,
    which a judge-serve restarted on another export under the same name changes. A run with nothing to ask
    (``asking`` false: no server was asked, so none said its format) keeps the recorded one.

    Raises:
        ConfigError: as ``chosen_verdict_format``; or a run that would ask the judge reads another format than the
            verdicts already in ``out`` (naming both), before any item is asked.
    """
    fmt, why = chosen_verdict_format(setting, judge_ref, model, served, root)
    if not asking and why == SERVED_FORMAT_WHY:  # the served format read back from run.json, not said now
        why = RECORDED_SERVED_FORMAT_WHY
    recorded = earlier_verdict_format(out) if out is not None and n_written else None
    if recorded is not None and recorded != fmt:
        if asking:
            raise ConfigError(f"verdict_format: the {n_written} verdicts already in {out} are recorded in the verdict "
                              f"format {recorded}, this resume would read {fmt} ({why}): start again with "
                              "--overwrite, or use another --out")
        fmt, why = recorded, "the format of the verdicts already in the folder"
    if setting == "auto":
        log.info("verdict format %s (%s)%s", fmt, why, "" if served else "; --verdict-format overrides it")
    return fmt, why


#: Why a run asks with the template its ``prompt_version`` setting names (logged, and recorded in run.json).
SETTING_TEMPLATE_WHY = "the prompt_version setting names it"


def resolve_prompt_template(verdict_format: str, judge_ref: str, served_version: str | None = None,
                            setting: str = "auto") -> tuple[PromptTemplate, str]:
    """The Russian pointwise template a chat request asks the judge with, and why: the one the ``prompt_version``
    ``setting`` names unless ``auto`` (over the export manifest and the format rule: an integer-format judge trained
    here and served by vLLM learned ``pollux-ru-v2``, which its URL cannot show); else the one a judge-serve names
    (``served_version``, its ``GET /v1/models`` entry's ``prompt_version``, when this toolkit renders it: chat requests
    through its passthrough are then asked as its ``/v1/judge`` asks, with the template it chose from the export
    manifest that a client holding only the URL cannot read); else ``judge.checkpoints.prompt_template_and_why``'s,
    from the verdict format and the export manifest of a checkpoint folder or a hub id's cached snapshot (a judge
    reached by URL shows none: an integer-format one is then the released Pollux-4B-Judge).

    Raises:
        ConfigError: ``setting`` names another version than the one a judge-serve names: it renders its own prompt
            on ``/v1/judge``, the one its judge learned, so asking with the setting's would be another prompt than
            the judge was trained on, on one route or the other. Raised before any item is asked.
    """
    from judge.checkpoints import EXPORT_MANIFEST, prompt_template_and_why, read_manifest
    from judge.prompts import PROMPT_TEMPLATES

    if setting != "auto":
        if served_version and served_version != setting:
            raise ConfigError(f"prompt_version: --prompt-version {setting}, but judge-serve's GET /v1/models names "
                              f"{served_version} for this judge (it renders its own prompt on /v1/judge, the one "
                              f"its export manifest names): drop --prompt-version, or serve a judge that learned "
                              f"{setting}")
        folder = checkpoint_folder(judge_ref)
        named = read_manifest(folder).get("prompt_version") if folder is not None else None
        if named and named != setting:  # the setting wins, but a manifest says what the judge learned: said aloud
            log.warning("prompt_version: asking with %s, the setting, though %s's export manifest %s names %s",
                        setting, folder, EXPORT_MANIFEST, named)
        return PROMPT_TEMPLATES[setting], SETTING_TEMPLATE_WHY
    if served_version in PROMPT_TEMPLATES:
        return PROMPT_TEMPLATES[served_version], "the template judge-serve's GET /v1/models names for this judge"
    folder = checkpoint_folder(judge_ref)
    return prompt_template_and_why(verdict_format, read_manifest(folder) if folder is not None else {})


def earlier_record(out: Path) -> dict[str, Any]:
    """The run.json an earlier launch wrote into ``out``; ``{}`` when there is none or it cannot be read (a torn or
    foreign run.json: nothing to hold the resume to)."""
    from judge.plumbing.provenance import read_provenance

    try:
        return read_provenance(out, missing_ok=True)
    except ValueError:
        return {}


def earlier_prompt_version(out: Path) -> str | None:
    """The prompt template version an earlier launch's requests were rendered with (its run.json's
    ``prompt_version``); None without a readable one (a folder from before run.json said)."""
    version = earlier_record(out).get("prompt_version")
    return version if isinstance(version, str) and version else None


def earlier_model(out: Path) -> str | None:
    """The model an earlier launch asked (its run.json's ``model``); None without a readable one."""
    model = earlier_record(out).get("model")
    return model if isinstance(model, str) and model else None


def held_model(out: Path, n_written: int, model: str | None, judge_ref: str, asking: bool) -> str | None:
    """The model this launch records in run.json, held to the one the ``n_written`` verdicts already in ``out`` were
    asked of (``earlier_model``). The run key leaves a URL judge out (a requeued shard reaches its server at a new
    address), and rows written under ``--name`` carry that name, not the model's: without this, a URL now serving
    another model would add its verdicts to the folder's under one name, and run.json would name only the second.
    A launch with nothing to ask (``asking`` false: no server was asked which model it serves) keeps the recorded one.

    Raises:
        ConfigError: a launch that would ask the judge finds another model served than the recorded one (naming
            both), before any item is asked.
    """
    earlier = earlier_model(out) if n_written else None
    if earlier is None or earlier == model:
        return model
    if not asking:
        return earlier
    raise ConfigError(f"model: the {n_written} verdicts already in {out} were asked of {earlier!r}, but {judge_ref} "
                      f"now serves {model!r}: resume against the judge that started the folder, or start again with "
                      "--overwrite, or use another --out")


def same_weights(recorded: Any, fingerprint: str | None, export: Path | None = None) -> bool:
    """Whether a weights fingerprint a run recorded and the one this launch has name the same weights: equal, or,
    where the launch's weights are those of the judge-train ``export`` on this machine (judge-eval serves it alone),
    each the export's fingerprint now by one formula or another (``judge.checkpoints.export_fingerprints``: a
    judge-serve that did not read the export's ``weights_sha256.json`` recorded its files' names, sizes and
    modification times, one that reads it their content digests). An export that cannot be read tells nothing."""
    if not isinstance(recorded, str) or not recorded or not fingerprint:
        return False
    if recorded == fingerprint:
        return True
    if export is None:
        return False
    try:  # each formula once: both values are compared against all of them
        now = set(export_fingerprints(export).values()) - {None}
    except (OSError, ValueError):
        return False
    return recorded in now and fingerprint in now


def judged_export(judge_ref: Any, server_args: Any, starts_judge_serve: bool = True) -> Path | None:
    """The judge-train export on this machine whose weights a judge's fingerprint is of, for ``same_weights``: the
    judge ``judge_ref`` as an absolute folder holding its manifest (a relative path names a folder only against the
    working directory of the run that recorded it). None for any other judge (a URL, a hub id, a released folder),
    and where the server is judge-serve (``starts_judge_serve``; a run's record cannot tell, so True) and its
    arguments ``server_args`` name a generating model of its own, or cannot say (no list, a ``--config`` that cannot
    be read): judge-serve then fingerprints the export's folder with that model's (``serve.layout.weights_fingerprint``),
    which no formula of ``judge.checkpoints.export_fingerprints`` gives. judge-eval run's resume, the merge of
    shards and the comparison of two runs all ask this one rule."""
    if not isinstance(judge_ref, str) or not judge_ref or judge_ref.startswith(("http://", "https://")):
        return None
    folder = Path(judge_ref)
    if not folder.is_absolute() or not (folder / EXPORT_MANIFEST).is_file():
        return None
    if starts_judge_serve and server_args and (not isinstance(server_args, list)
                                               or names_generator_model(server_args)):
        return None
    return folder


def held_root(out: Path, n_written: int, root: str | None, judge_ref: str, asking: bool,
              fingerprint: str | None = None, export: Path | None = None) -> str | None:
    """The checkpoint this launch records as its server's ``root`` (vLLM's model entry names the weights it loaded;
    run.json's ``server_limits.root``), held to the one the ``n_written`` verdicts already in ``out`` were asked of.
    ``held_model`` compares served names only, and ``vllm serve B --served-model-name judge`` is named as A was: a
    resume against it would add B's verdicts to A's under one name; so would a judge-serve over an attached engine
    (it gives no ``weights_fingerprint``) now serving B. Either side not saying (a server that lists no ``root``, a
    run.json from before it was kept) is no evidence and passes; the recorded one is kept where this launch's
    server says none (nothing to ask: no server was asked).

    Roots are compared through ``judge.wire.root_identity``: judge-serve sends a digest of the path its engine
    loaded, a plain vLLM server the path, and a run.json from an older judge-serve recorded the path; a path and the
    digest of the same path are one folder, two paths one only when equal.

    Raises:
        ConfigError: a launch that would ask the judge finds another folder loaded than the recorded one (naming
            both, with the digest of a path where the other is a digest), before any item is asked.
    """
    record = earlier_record(out) if n_written else {}
    limits = record.get("server_limits")
    earlier = limits.get("root") if isinstance(limits, dict) else None
    if not isinstance(earlier, str) or not earlier or (root and root_identity(earlier) == root_identity(root)):
        return root
    if same_weights(record.get("weights_fingerprint"), fingerprint, export):
        # judge-serve's weights fingerprint (its own engines') is the same: one judge, whatever folder the root
        # named (a regression judge's generator and a released -r judge's derived view were its roots before
        # judge-serve named the checkpoint), so the root names no other weights.
        return root or earlier
    if not asking or not root:
        return earlier
    digests = root_identity(earlier) == earlier or root_identity(root) == root

    def named(one: str) -> str:
        return f"{one!r} ({root_identity(one)})" if digests and root_identity(one) != one else repr(one)

    raise ConfigError(f"judge: the {n_written} verdicts already in {out} were asked of a server that loaded "
                      f"{named(earlier)}, but {judge_ref}, serving the same name, loaded another folder: "
                      f"{named(root)}; resume against the judge that started the folder, or start again with "
                      "--overwrite, or use another --out")


def held_fingerprint(out: Path, n_written: int, fingerprint: str | None, judge_ref: str, asking: bool,
                     held_by: str = "serves", export: Path | None = None) -> str | None:
    """The ``weights_fingerprint`` this launch records in run.json (what a judge-serve's model entry says identifies
    the weights it serves), held to the one the ``n_written`` verdicts already in ``out`` were asked of. A judge
    retrained into the same folder and served again under the same name differs from the first in nothing else:
    ``held_model`` and ``held_root`` compare names and paths. A resume is refused, as one against another model is,
    not re-judged: the run keeps a folder to one judge's verdicts, and which to keep is the user's choice. A server
    that gives none (any OpenAI server; a judge-serve over an attached engine) resumes as before, with a note; a
    folder that recorded none holds nothing to compare. The recorded one is kept where this launch has none.
    ``held_by``: how ``judge_ref`` has the weights, for the message ("serves"; "holds" for a checkpoint folder read
    before any server starts). ``export``: the judge-train export on this machine whose weights ``fingerprint`` is
    of, by which a fingerprint recorded by the other formula still names the same weights (``same_weights``).

    Raises:
        ConfigError: a launch that would ask the judge finds other weights served than the recorded ones (naming
            both fingerprints), before any item is asked.
    """
    earlier = earlier_record(out).get("weights_fingerprint") if n_written else None
    earlier = earlier if isinstance(earlier, str) and earlier else None
    if n_written and asking and fingerprint is None:
        log.warning("note: %s gives no weights_fingerprint in its GET /v1/models entry (only judge-serve does): the %d "
                    "verdicts already in %s are kept without telling whether the weights it serves are the ones that "
                    "judged them", judge_ref, n_written, out)
    if earlier is None or same_weights(earlier, fingerprint, export):
        return fingerprint
    if not asking or fingerprint is None:
        return earlier
    raise ConfigError(f"judge: the {n_written} verdicts already in {out} were asked of weights with fingerprint "
                      f"{earlier}, but {judge_ref} now {held_by} weights with fingerprint {fingerprint} (retrained or "
                      "replaced in place): start again with --overwrite, or use another --out, or resume against the "
                      "weights that started the folder")


def earlier_verdict_format(out: Path) -> str | None:
    """The verdict format an earlier launch recorded for the verdicts it wrote (its run.json's config, written after
    the format was resolved); None without a readable one."""
    fmt = (earlier_record(out).get("config") or {}).get("verdict_format")
    return fmt if fmt in VerdictFormat.ALL else None


def earlier_max_tokens(out: Path) -> tuple[int | None, int | None]:
    """The ``max_tokens`` an earlier launch's requests asked for (its run.json's config, written after the trained
    length was adopted and the value fitted to the server) and its ``max_tokens_adopted``; None without a readable
    run.json."""
    record = earlier_record(out)

    def positive(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    return (positive((record.get("config") or {}).get("max_tokens")),
            positive((record.get("server_limits") or {}).get("max_tokens_adopted")))


#: What may close an answer after the number that ends it: markdown, a full stop, a closing bracket or quote.
_AFTER_A_SCORE = " \t\r\n.,;:!?*_`'\")]}\u00bb"


def verdict_shaped(text: str) -> bool:
    """Whether an answer that no verdict reader took still has a verdict's shape, as a judge's failed answer has: a
    ``[RESULT]`` tag (the tagged format's, its score no number or past any scale: ``no_score``), or a number ending
    it (the integer format's, after a dash the reader takes for no sign, in markdown, before a full stop, or past any
    scale). A chat model that is no judge writes neither (``FormatWatch``'s ``no_verdict``)."""
    from judge.verdicts import VerdictError, parse_verdict

    if parse_verdict(text).error != VerdictError.NO_RESULT:
        return True
    return text.rstrip(_AFTER_A_SCORE)[-1:] in tuple("0123456789")



class FormatWatch:
    """Stops a run whose guessed verdict format is the wrong one, before it writes a parse failure per item.

    A judge behind a plain URL (vLLM, an OpenAI-compatible API) whose model id and ``root`` do not say ``Pollux-4B``
    is read as ``tagged`` (``chosen_verdict_format``): a renamed 4B copy then failed every verdict, final rows a
    rerun never asks again, and the run exited 0. ``offer`` reads each row as it is written; once the first
    ``n_first`` answers all failed in the run's format and all read in the other, ``misread`` is the sentence to stop
    with. For a ``tagged`` run only answers with no ``[RESULT]`` at all count: a tagged verdict cut before its
    ``[END]`` ends with its score, which the integer reader would take. An answer that reads as an integer verdict
    once the punctuation or markdown closing it is dropped ("2.", "**2**") counts too, and the sentence says so: the
    integer reader refuses it, as POLLUX's own client does (``demo/serve_pollux_demo.py`` in ai-forever/POLLUX), and
    is not loosened, but no tagged judge ends so, and ``--verdict-format integer`` is still the flag to set.

    With ``no_verdict``, the first ``n_first`` answers read in neither format, each ended by the model itself
    (``finish_reason`` stop: a verdict ``max_tokens`` cut is a judge's, fixed by that flag) and none with a verdict's
    shape (``verdict_shaped``: a ``[RESULT]`` tag, a number at its end; a judge's answer whose score failed to read is
    a judge's, a counted parse failure), stop it too: ``--judge`` names a chat model that is no judge, whose every
    answer would otherwise be a final parse failure of a run exiting 0. Pointwise runs only: a pairwise row is read
    by its own rules.

    Args:
        verdict_format: the run's.
        n_first: how many alike answers stop it (0: never).
        no_verdict: stop on answers that read in neither format, as above.
    """

    def __init__(self, verdict_format: str, n_first: int = N_FIRST_MISREAD, *, no_verdict: bool = False):
        self.verdict_format, self.n_first, self.seen = verdict_format, n_first, 0
        self.other = VerdictFormat.TAGGED if verdict_format == VerdictFormat.INTEGER else VerdictFormat.INTEGER
        self.misread: str | None = None
        self.closed: list[Any] = []  # the format rule's rows read in the other format only once closing marks dropped
        self.seen_none = 0 if no_verdict else n_first  # as ``seen``, for answers that read in neither format
        self.first_answer: Any = None  # the first row read, quoted when the answers hold no verdict

    def offer(self, rows: list[Any]) -> str | None:
        """``misread`` once a rule holds; None while one may, or after answers that break both."""
        from judge.verdicts import VerdictError, parse_judge_output

        for row in rows:
            if min(self.seen, self.seen_none) >= self.n_first or row.raw_output is None:  # decided, or no answer
                continue
            self.first_answer = self.first_answer or row
            in_other = not row.parse_ok and parse_judge_output(self.other, row.raw_output).ok
            # An integer verdict closed by a full stop or markdown ("2.", "**2**"): the integer reader refuses it, as
            # POLLUX's client does, and is not loosened; but no tagged judge ends so, and --verdict-format integer is
            # still the flag to set (each such answer a counted parse failure there, not every answer one).
            closed = (not row.parse_ok and not in_other and self.other == VerdictFormat.INTEGER
                      and parse_judge_output(self.other, row.raw_output.rstrip(_AFTER_A_SCORE)).ok)
            wrong = (in_other or closed) and (self.verdict_format == VerdictFormat.INTEGER
                                              or row.error == VerdictError.NO_RESULT)
            open_wrong, open_none = self.seen < self.n_first, self.seen_none < self.n_first
            # Read only under no_verdict (a pairwise row has no finish_reason). NO_RESULT and NO_SCORE: a text with
            # no verdict in the run's format, not an empty one (a reasoning model's content) nor one cut off; and
            # no verdict's shape either (verdict_shaped): a judge's answer whose score failed to read is a judge's.
            none = (open_none and not row.parse_ok and not in_other and row.finish_reason == "stop"
                    and row.error in (VerdictError.NO_RESULT, VerdictError.NO_SCORE)
                    and not verdict_shaped(row.raw_output))
            self.seen = self.seen + 1 if wrong and open_wrong else self.n_first
            self.seen_none = self.seen_none + 1 if none and open_none else self.n_first
            if wrong and open_wrong and closed:
                self.closed.append(row)
            if wrong and open_wrong and self.seen == self.n_first:
                self.misread = self._misread_sentence()
            if none and open_none and self.seen_none == self.n_first:
                self.misread = self._no_verdict_sentence()
        return self.misread

    def offer_written(self, rows: Iterable[Any]) -> str | None:
        """``offer`` the rows an earlier launch wrote, in the order written (the caller reads its own file:
        ``eval.judging.predictions.iter_predictions``, ``eval.pairwise.judging.iter_pairwise_rows``), until the rules
        are decided: a folder's first answers are its judge's whichever launch asked them (a resume shares the run
        key, the guessed format with it). A folder of a judge's verdicts is then never stopped by the answers a resume
        asks, and one stopped here stops again before asking. Read as a stream: a rule closes at the first row that
        breaks it."""
        for row in rows:
            if min(self.seen, self.seen_none) >= self.n_first:
                break
            self.offer([row])
        return self.misread

    def _misread_sentence(self) -> str:
        guessed = f"{self.verdict_format} was guessed from the model id: start again with --overwrite --verdict-format"
        if not self.closed:
            return (f"verdict_format: the judge's first {self.n_first} answers do not read as {self.verdict_format} "
                    f"verdicts but do as {self.other} ones; {guessed} {self.other}")
        return (f"verdict_format: the judge's first {self.n_first} answers do not read as {self.verdict_format} "
                f"verdicts but end as {self.other} ones do, {len(self.closed)} of them with punctuation or markdown "
                f"after the integer (the first: {_quoted(self.closed[0].raw_output)}), which the integer reader does "
                f"not take, as POLLUX's own client does not; {guessed} {self.other} (each answer ending so a counted "
                "parse failure there)")

    def _no_verdict_sentence(self) -> str:
        first = self.first_answer
        return (f"judge: the first {self.n_first} answers of {first.judge} hold no verdict, read as tagged ([FEEDBACK] "
                f"... [RESULT] n [END]) or integer (a bare integer last), though each ended on its own; the first: "
                f"{_quoted(first.raw_output)}: is it a POLLUX judge? Start again with --overwrite (this --out "
                f"holds those answers) and --judge at one, or --verdict-format to judge with this one anyway, each "
                f"such answer a counted parse failure")


def _quoted(raw_output: str) -> str:
    """An answer quoted in a stop's sentence: its first 120 characters, or, after a reasoning, those of the text
    after the last ``</think>``, as the integer reader takes it (``judge.verdicts.split_at_last_think_close``). A
    reasoning model's raw output opens with its reasoning (an integer run rebuilds a separated one before the answer,
    ``judge.verdicts.inline_reasoning``), whose first 120 characters would show none of what it answered; with
    nothing after it, the start is quoted, its control characters as escapes (``visible``: the stop is said on the
    console, and an answer is the server's text)."""
    from eval.judging.backends import short
    from judge.plumbing.console_logging import visible

    before_close, after_close = split_at_last_think_close(raw_output)
    answer = after_close.strip() if before_close is not None else ""
    return (f"'{visible(short(answer, 120), 120)}' (its reasoning before </think> left out)" if answer
            else f"'{visible(short(raw_output, 120), 120)}'")
