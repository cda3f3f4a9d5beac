"""Progress bars (tqdm) for long waits and batch claims; silent unless enabled."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from ._base import in_notebook

__all__ = ["CountBar", "WaitBar"]

#: A wait bar appears only when the wait lasts longer than this (warm claims never show it).
WAIT_BAR_DELAY = 0.75


def _tqdm(**kwargs: Any) -> Any:
    # tqdm.auto picks the notebook widget, which needs ipywidgets; without it,
    # fall back to the text bar instead of warning on every claim.
    try:
        import ipywidgets  # noqa: F401
        from tqdm.auto import tqdm
    except ImportError:
        from tqdm.std import tqdm

    return tqdm(**kwargs)


class WaitBar:
    """Shows the elapsed time of a wait (e.g. a cold start), after a short delay."""

    def __init__(self, enabled: bool, desc: str) -> None:
        self._bar: Any = None
        if enabled:
            self._bar = _tqdm(
                total=None,
                desc=desc,
                bar_format="{desc}: {elapsed}",
                delay=WAIT_BAR_DELAY,
                leave=False,
            )

    def tick(self) -> None:
        if self._bar is not None:
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> WaitBar:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class CountBar:
    """Counts finished items out of a known total (claim_many).

    A notebook keeps the finished bar, as a record of the batch in the cell's output
    (``32/32 [00:03<00:00]``); a terminal gets its line back.
    """

    def __init__(self, enabled: bool, total: int, desc: str, unit: str = "sandbox") -> None:
        self._bar: Any = None
        if enabled:
            self._bar = _tqdm(total=total, desc=desc, unit=unit, leave=in_notebook())

    def update(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
