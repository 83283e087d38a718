"""MERA tasks for evaluating checkpoints through any OpenAI-compatible endpoint.

``judge-eval mera ruhumaneval|rutie --endpoint URL --model NAME --data FILE --out DIR`` (``eval.mera.cli``).

- ``humaneval``: ruHumanEval / HumanEval data, prompts, code extraction and the unbiased pass@k.
- ``sandbox``: runs untrusted completions (bubblewrap, rlimits, one process group per sample);
  ``sandbox_child`` is the stdlib-only program that runs inside it.
- ``rutie``: ruTiE dialogues with the model's own earlier answers in context; resumable.
- ``client``: a small OpenAI-compatible client (chat/completion, n or seeds, client-side stops, retries).
- ``progress``: append-only, fsynced progress files and the guard against resuming with other settings.

Nothing is imported here: importing a submodule costs only what that submodule needs.
"""
