"""`judge-eval run --help` says what the verdict-format guess does on a chat run, pointwise and pairwise alike,
including the punctuation case: an answer that is an integer once the punctuation or markdown after it is dropped
("2.", "**2**") counts toward the stop under a guessed tagged format, and the integer reader still refuses it (a
counted no_score). The help said nothing of the check or of that case; each clause is pinned to the code's rule."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from eval.cli import main
from eval.judging.format_choice import N_FIRST_MISREAD, FormatWatch
from judge.verdicts import VerdictError, parse_integer_verdict, parse_verdict


def _help(capsys) -> str:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_the_verdict_format_help_names_the_stop_and_the_punctuation_case(capsys):
    text = _help(capsys)
    assert (f"A chat run with auto whose first {N_FIRST_MISREAD} answers all fail in the guessed format and all read "
            "in the other (pointwise with --prompt ru, and pairwise) stops with exit 2 naming this flag; under a "
            "guessed tagged, an answer that is an integer once the punctuation or markdown after it is dropped "
            "(\"2.\", \"**2**\") counts toward that stop, but the integer reader does not take it (a counted "
            "no_score under integer too, as POLLUX's own client reads).") in text


def _row(output: str):
    verdict = parse_verdict(output)
    return SimpleNamespace(raw_output=output, parse_ok=verdict.ok, error=verdict.error, finish_reason="stop",
                           judge="j")


@pytest.mark.parametrize("answer", ["Рассуждение. Итог: 2.", "**2**"])
def test_what_the_help_says_is_what_the_code_does(answer):
    """Under a guessed tagged format such answers stop the run after N_FIRST_MISREAD, and under integer each is a
    no_score failure."""
    watch = FormatWatch("tagged")
    assert watch.offer([_row(answer)] * N_FIRST_MISREAD) is not None
    assert "with punctuation or markdown after the integer" in watch.misread
    verdict = parse_integer_verdict(answer, "рассуждение")
    assert (verdict.ok, verdict.error) == (False, VerdictError.NO_SCORE)
