"""Stand-ins for the commands a Slurm script calls (srun, squeue, judge-eval, ...), put at the front of its PATH."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def write_executables(bin_dir: Path, scripts: Mapping[str, str]) -> Path:
    """``bin_dir`` (made if missing) holding one executable per name: its text as given when it starts with a
    shebang, else a bash script with that body. Returns ``bin_dir``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, body in scripts.items():
        (bin_dir / name).write_text(body if body.startswith("#!") else "#!/bin/bash\n" + body)
        (bin_dir / name).chmod(0o755)
    return bin_dir
