"""Mat rectangles of the Position-ID space (inclusive corners, mat units) and the fences around a stage."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mat:
    """The coded area of one mat: a cube whose ID sensor is inside reads positions, outside it reads nothing."""
    name: str
    x_min: int
    y_min: int
    x_max: int
    y_max: int

    def __post_init__(self) -> None:
        if not (self.x_min < self.x_max and self.y_min < self.y_max):
            raise ValueError(f'mat {self.name!r}: need x_min < x_max and y_min < y_max, got {self}')

    @property
    def centre(self) -> tuple[float, float]:
        return 0.5 * (self.x_min + self.x_max), 0.5 * (self.y_min + self.y_max)

    @property
    def size(self) -> tuple[int, int]:
        return self.x_max - self.x_min, self.y_max - self.y_min

    def contains(self, x: float, y: float) -> bool:
        return self.x_min <= x <= self.x_max and self.y_min <= y <= self.y_max


def _developer_back(n: int) -> Mat:
    columns = [(34, 339), (340, 644), (645, 949)]
    rows = [(35, 250), (251, 466), (467, 682), (683, 898)]
    (x0, x1), (y0, y1) = columns[(n - 1) // 4], rows[(n - 1) % 4]
    return Mat(f'developer_back_{n}', x0, y0, x1, y1)


MATS: dict[str, Mat] = {m.name: m for m in [
    Mat('collection', 45, 45, 455, 455),                 # toio COLLECTION play mat, sumo-ring side (default)
    Mat('collection_back', 545, 45, 955, 455),           # coloured-tile side
    Mat('simple', 98, 142, 402, 358),                    # simple play mat = developer mat front #1-#6
    Mat('gesundroid', 1050, 45, 1460, 455),
    *[_developer_back(n) for n in range(1, 13)],
]}

DEFAULT_MAT = 'collection'

#: the reference stage's fences stand 0.321 m (~235.6 units) from the centre of the 410-unit collection mat,
#: i.e. ~30.6 units outside its coded area; other mats get the same margin
FENCE_MARGIN_UNITS = 235.6 - 205.0


def get_mat(name: str) -> Mat:
    try:
        return MATS[name]
    except KeyError:
        raise ValueError(f'unknown mat {name!r}; known mats: {", ".join(sorted(MATS))}') from None


def fence_rect(mat: Mat, margin: float = FENCE_MARGIN_UNITS) -> tuple[float, float, float, float]:
    """(x_min, y_min, x_max, y_max) of the fences around a mat."""
    if margin < 0:
        raise ValueError(f'fence margin must be >= 0, got {margin}')
    return mat.x_min - margin, mat.y_min - margin, mat.x_max + margin, mat.y_max + margin
