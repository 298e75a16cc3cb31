"""The ``with`` protocol of the environments that hold something (a shell, a container)."""

from __future__ import annotations

from typing import Self


class ClosedOnExit:
    """``with env:`` gives the environment and calls its ``close()`` at the block's end."""

    __slots__ = ()

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
