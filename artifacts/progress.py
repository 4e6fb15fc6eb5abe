"""A byte-progress bar on stderr that many transfer threads can feed at once."""

from __future__ import annotations

import sys
import threading
from types import TracebackType

from tqdm import tqdm


class Progress:
    """``tqdm`` in bytes; ``enabled=False`` makes every call a no-op so callers never branch."""

    def __init__(self, description: str, total: int, *, enabled: bool) -> None:
        self._lock = threading.Lock()
        self._bar = tqdm(
            total=total,
            desc=description,
            unit="B",
            unit_scale=True,
            unit_divisor=1024,
            file=sys.stderr,
            disable=not enabled,
            dynamic_ncols=True,
            leave=False,
        )

    def __call__(self, n: int) -> None:
        # s3transfer calls back from its worker threads; tqdm's counters are not atomic.
        with self._lock:
            self._bar.update(n)

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bar.close()
