"""Progress display for long jobs: a tqdm bar on a terminal, silence otherwise."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_bar(label: str, *, unit: str = "item", enabled: bool = True) -> Iterator[Callable[..., None] | None]:
    """Yield ``update(done, total, extra="")``, or None when disabled or stderr is not a terminal.

    ``total`` may be 0 when unknown; the bar then counts without an ETA.
    """
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(desc=label, unit=unit, file=sys.stderr, dynamic_ncols=True, leave=True)

    def update(done: int, total: int, extra: str = "") -> None:
        if total and bar.total != total:
            bar.total = total
        bar.update(done - bar.n)
        if extra:
            bar.set_postfix_str(extra, refresh=False)

    try:
        yield update
    finally:
        bar.close()
