"""Flow sets: parallel arrays of source rank, destination rank and message bytes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class Flows:
    src: np.ndarray  # int64 ranks
    dst: np.ndarray
    bytes: np.ndarray  # int64 message sizes

    def __post_init__(self) -> None:
        if not (self.src.shape == self.dst.shape == self.bytes.shape):
            raise ValueError("flow arrays must have one shape")

    def __len__(self) -> int:
        return int(self.src.shape[0])

    @staticmethod
    def uniform(src: np.ndarray, dst: np.ndarray, message_bytes: int) -> "Flows":
        src = np.asarray(src, dtype=np.int64)
        return Flows(src, np.asarray(dst, dtype=np.int64), np.full(src.shape, message_bytes, dtype=np.int64))

    def rows(self) -> list[list[int]]:
        """[[src, dst, bytes], ...] as in the routes file."""
        return np.stack([self.src, self.dst, self.bytes], axis=1).tolist()
