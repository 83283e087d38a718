"""``judge-eval``'s exit codes, per subcommand: what each code means, printed at the end of the subcommand's
``--help`` (``eval.cli.build_parser``) and returned by ``eval.cli.main``. ``mera`` lists its own
(``eval.mera.cli``)."""

__all__ = ["EXIT_CODES", "EXIT_INTERRUPTED"]

from judge.plumbing.closed_stdout import EXIT_STDOUT_CLOSED

_USAGE_ERROR = "a usage, configuration or input error, named on stderr (a missing or empty file, an unknown key)"
_UNUSABLE = ("the server cannot be used (unreachable, no or wrong key, wrong URL or path, still unavailable after "
             "--connect-timeout-s, or its first requests were all refused alike: nothing more was sent; or its "
             "requests kept failing after their retries: those are failed rows, the rest unsent, a rerun resumes)")
#: ``main`` answers Ctrl+C (KeyboardInterrupt) in every subcommand with one line and this code.
EXIT_INTERRUPTED = 130
_INTERRUPTED = "interrupted (Ctrl+C)"
_INTERRUPTED_RESUMABLE = _INTERRUPTED + ": the rows written are kept, a rerun resumes"
EXIT_CODES: dict[str, dict[int, str]] = {
    "run": {0: "every item judged", 2: _USAGE_ERROR + "; or the judge's first 5 answers stopped it: they read only in "
                                                   "the other verdict format than the one guessed, or in neither (no "
                                                   "judge), the flags to set named",
            3: "some requests failed (each a row of predictions.jsonl with its reason; rerunning retries them)",
            4: _UNUSABLE, EXIT_INTERRUPTED: _INTERRUPTED_RESUMABLE},
    "score": {0: "scored", 2: _USAGE_ERROR + "; or no predictions to score", EXIT_INTERRUPTED: _INTERRUPTED},
    "compare": {0: "compared", 2: _USAGE_ERROR + "; or a run folder that is not there or not scored",
                EXIT_INTERRUPTED: _INTERRUPTED},
    "rank": {0: "every answer and verdict written", 2: _USAGE_ERROR,
              3: "some answers or verdicts failed (counted in the summary; rerunning retries them)", 4: _UNUSABLE,
              EXIT_INTERRUPTED: _INTERRUPTED_RESUMABLE},
    "convert": {0: "written", 2: _USAGE_ERROR + "; or a source with no records", EXIT_INTERRUPTED: _INTERRUPTED},
    "experts": {0: "written", 2: _USAGE_ERROR + "; or a source with no records, or none with an expert score",
                EXIT_INTERRUPTED: _INTERRUPTED},
    "merge": {0: "merged", 2: _USAGE_ERROR + "; or shards judged with different settings (the first differing key "
                              "named), a shard with predictions and no run.json, a bad or torn row, an id in two "
                              "shards, an eval array's shard not given (without --allow-missing-shards; each "
                              "named), shards of two arrays or cut from other data, or a shard running or "
                              "unfinished", EXIT_INTERRUPTED: _INTERRUPTED},
}
#: Every subcommand: stdout's reader gone (``judge-eval ... | head -1``), ``main``'s one answer to it.
for _codes in EXIT_CODES.values():
    _codes[EXIT_STDOUT_CLOSED] = "stdout's reader went away (`| head`): the rest of the printout dropped, no traceback"
del _codes
