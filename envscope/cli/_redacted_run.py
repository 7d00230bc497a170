"""``envscope run --redact``: the command runs as a child, its output masked on the way out.

Without ``--redact``, ``run`` execs the command (it replaces envscope). With
it, the command runs as a child with stdout and stderr on pipes; each stream
goes through its own byte stream of a ``Redactor`` (``envscope.redact``) to
envscope's own stdout and stderr, as it arrives. A stream holds back at most
the longest secret less one byte until more output or the end comes. stdin
is the child's own (inherited). The exit status is the child's (128 + N when
a signal N ended it).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import BinaryIO

from envscope.redact import Redactor

__all__ = ["run_redacted"]

READ = 64 * 1024


def run_redacted(
    cmd: Sequence[str],
    env: Mapping[str, str],
    redactor: Redactor,
    stdout: BinaryIO,
    stderr: BinaryIO,
) -> int:
    """Run ``cmd`` with ``env``, copying its output masked to ``stdout`` and ``stderr``."""
    import selectors

    child = subprocess.Popen(list(cmd), env=dict(env), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)  # fmt: skip
    pipes = (child.stdout, child.stderr)  # both PIPE: never None
    sinks = {
        pipe.fileno(): (redactor.byte_stream(), sink)
        for pipe, sink in zip(pipes, (stdout, stderr), strict=True)
        if pipe is not None
    }
    with selectors.DefaultSelector() as selector:
        for fd in sinks:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                stream, sink = sinks[key.fd]
                data = os.read(key.fd, READ)
                out = stream.feed(data) if data else stream.close()
                if not data:
                    selector.unregister(key.fd)
                if out:
                    sink.write(out)
                    sink.flush()
    for pipe in pipes:
        if pipe is not None:
            pipe.close()
    code = child.wait()
    return code if code >= 0 else 128 - code
