"""Ctrl-C and SIGTERM: both stop a command the same way (cleanly, temporary files removed,
finished sweep points kept), and the exit status says which: 130 or 143, as a shell reports
a process killed by SIGINT or SIGTERM."""
from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator

EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt (a batch system or `kill`
    ending the job): every handler of KeyboardInterrupt cleans up for it too."""


_received_sigterm = False


def _raise_terminated(signum, frame):
    global _received_sigterm
    _received_sigterm = True
    raise Terminated


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (in the main thread)."""
    try:
        old = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def interrupted_status(e: BaseException | None) -> int:
    """The exit status of a command stopped by ``e``, or (None) by an interrupt caught
    elsewhere: 143 after SIGTERM, else 130."""
    return EXIT_TERMINATED if isinstance(e, Terminated) or _received_sigterm else EXIT_INTERRUPTED
