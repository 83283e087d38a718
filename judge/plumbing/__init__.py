"""The plumbing every stage shares, beneath the contract: one home per mechanism.

- ``processes``: starting, waiting for and stopping server processes; ``supervisor``: the stdlib-only process every
  command runs under, so that no process outlives its owner;
- ``journal``: append-only JSONL (predictions, MERA progress, synthetic jobs): one strict reader, one torn-tail rule;
- ``atomic_write``: one way to replace a file whole (written aside, fsynced, renamed over it);
- ``retry``: one retry policy for every HTTP client, never sooner than the server's ``Retry-After``; its default
  bound on one request's waits is ``retry_bounds``, apart from the HTTP stack;
- ``failing_streak``: one rule for stopping a run whose endpoint keeps failing after every retry (exit code 4);
- ``config_files``: the config layer (defaults, then YAML, then flags; unknown keys are errors);
- ``provenance``: ``run.json``, one schema written by every console script into its run folder.
  It is also the one redaction of secrets for every file a run writes about itself;
- ``api_keys``: one way to give a key to every command (from the environment; a typed key warned about);
- ``run_folder``: one writer per run folder (an ``flock`` naming the holder) and one resume guard (``run_key.json``).
- ``console_logging``: the one logging set-up of every console script (HTTP request lines at debug only), and
  ``visible``, the one way a server's words go into a console message (control characters escaped, length bounded);
- ``message_content``: a chat answer's ``content`` (a string, null or typed parts) read as text, one way for every
  client;
- ``json_reading``: what ``json.loads`` and Arrow's JSON reader cannot read, said in one wording, and a value's kind
  named in JSON's words;
- ``endpoint_unusable``: the failure of an endpoint that cannot be used and its exit code, apart from the HTTP stack;
- ``slurm_requeue``: the Slurm clients (``scontrol``, ``squeue``) and whether a SIGTERM'd job goes back in the queue;
- ``wandb_login``: whether this process could log in to W&B without asking for a key, looked up before work.
- ``openmp``: idle OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE`` unless set), first thing in every console
  script, before torch loads.

Nothing here knows what a judge is; the contract (``judge``) and the stages (``train``, ``serve``, ``eval``) build on
it.
"""
