"""serve: judge-serve, an OpenAI-compatible POLLUX judge endpoint on vLLM.

``judge-serve --model CKPT`` (``serve.cli``) starts vLLM engines for a judge checkpoint (``serve.layout``,
``serve.launch``) and serves, on one port (``serve.app``), vLLM's OpenAI routes (its model list with judge-serve's
limits) plus ``POST /v1/judge`` and ``POST /get_reward`` (``serve.rewards``). ``serve.schema`` validates a judging
request, ``serve.jobs`` renders and tokenizes its prompts with ``judge``, ``serve.judging`` runs them on the engines
through ``serve.engine_client`` and reads the verdicts with ``serve.score_reading``. Settings:
``serve.config.ServeConfig`` and ``configs/serve/*.yaml``.
"""
