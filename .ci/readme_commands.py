"""Print the README's two set-up commands, one per line, exactly as written.

    python3 .ci/readme_commands.py

``.ci/run`` runs what this prints before anything else, so CI's first two steps are the
newcomer's two commands word for word: the README and CI cannot drift apart. The
commands are the non-comment lines of the first ``bash`` block under ``## Set-up`` that
follows the line mentioning "two commands"; anything else there is an error.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def readme_commands(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8")
    setup = text.split("\n## Set-up", 1)[1].split("\n## ", 1)[0]
    after = setup.split("two commands", 1)[1]
    block = re.search(r"```bash\n(.*?)```", after, re.S)
    if block is None:
        raise SystemExit("README.md: no ```bash block after 'two commands' under '## Set-up'")
    cmds = [ln for ln in block.group(1).splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(cmds) != 2:
        raise SystemExit(f"README.md: the set-up block holds {len(cmds)} commands; CI runs exactly two")
    return cmds


if __name__ == "__main__":
    print("\n".join(readme_commands(Path(__file__).resolve().parent.parent / "README.md")))
    sys.exit(0)
