"""Write the blocking `SessionaryClient` (`_sync_client.py`) from `AsyncSessionaryClient`.

    .venv/bin/python clients/python/scripts/unasync.py

The asyncio client is the one written by hand. The blocking one is the same code with the async
keywords and names rewritten, as httpcore does with `unasync`, then ruff-formatted: a line that
loses its `await` may now fit where it had to wrap.
"""

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "sessionary_client"
SOURCE = PACKAGE / "_async_client.py"
TARGET = PACKAGE / "_sync_client.py"
COMMAND = ".venv/bin/python clients/python/scripts/unasync.py"

# Replaces the async module's docstring, which speaks of the async file.
HEADER = f'''\
# Generated from _async_client.py by scripts/unasync.py: do not edit. Regenerate with
# `{COMMAND}`, from the repository root.
"""`SessionaryClient`: the blocking twin of `AsyncSessionaryClient`, generated from it."""
'''

# Applied in order, to whole words. An async construct missing here survives into the output,
# where `ruff format` (`async for` in a plain `def` does not parse) or mypy reports it.
REWRITES = [
    (r"\bAsyncSessionaryClient\b", "SessionaryClient"),
    (r"\bAsyncSessionHandle\b", "SessionHandle"),
    (r"\bAsyncArtifactDownload\b", "ArtifactDownload"),
    (r"\bAsyncUploadContent\b", "UploadContent"),
    (r"\bAsyncChunks\b", "Chunks"),
    (r"\bdefault_async_transport\b", "default_transport"),
    (r"\bhttpx\.AsyncBaseTransport\b", "httpx.BaseTransport"),
    (r"\bhttpx\.AsyncClient\b", "httpx.Client"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bimport asyncio\b", "import time"),
    (r"\basyncio\.sleep\b", "time.sleep"),
    # A blocking read needs no thread of its own: `await asyncio.to_thread(f, x)` is `f(x)`.
    (r"\bawait asyncio\.to_thread\(([\w.]+), ", r"\1("),
    # The blocking client takes no async iterables: their branch goes.
    (r"(?m)^( *)elif isinstance\((\w+), AsyncIterable\):\n(?:\1 .*\n)+", ""),
    (r"\bAsyncIterable\b", "Iterable"),
    (r"\basynccontextmanager\b", "contextmanager"),
    (r"\basync def\b", "def"),
    (r"\bawait ", ""),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\baclose\b", "close"),
    (r"\basync (with|for)\b", r"\1"),
    (r"\baread\b", "read"),
    (r"\baiter_lines\b", "iter_lines"),
    (r"\baiter_bytes\b", "iter_bytes"),
    # `yield from` has no async form, so the async source loops to yield a page's items.
    (r"(?m)^( *)for (\w+) in (.+):\n *yield \2$", r"\1yield from \3"),
]

DOCSTRING = re.compile(r'\A""".*?"""\n', re.DOTALL)


def generate() -> str:
    """The blocking client's source, exactly as it should be committed."""
    code = DOCSTRING.sub("", SOURCE.read_text(), count=1)
    for pattern, replacement in REWRITES:
        code = re.sub(pattern, replacement, code)
    code = HEADER + code
    # Imports sorted again (`AsyncIterator, Callable` became `Iterator, Callable`), those
    # only the asyncio code used dropped (`AsyncIterable`), then formatted.
    for fix in (["check", "--select", "I,F401", "--fix", "--quiet"], ["format"]):
        code = subprocess.run(
            [sys.executable, "-m", "ruff", *fix, "--stdin-filename", str(TARGET), "-"],
            input=code,
            stdout=subprocess.PIPE,
            text=True,
            check=True,
        ).stdout
    return code


if __name__ == "__main__":
    TARGET.write_text(generate())
    print(f"wrote {TARGET}")
