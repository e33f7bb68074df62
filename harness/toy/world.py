"""The toy world's drawing vocabulary: canvas, grid, colours, shapes, and how objects are drawn.

A scene is a 64×64 RGB image on a grey canvas (the CLIP pixel mean: a white canvas does not
train), divided into a 4×4 grid of 16-px cells, i.e. exactly the vision tower's patches. Each
object fills one cell, inset by 2 px, so an object's evidence is exactly one image token.
Document pages also carry "text" decoys (three dark lines in a cell). Torch-free (PIL, stdlib).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL.Image import Image

__all__ = [
    "IMAGE_SIZE",
    "GRID",
    "CELL",
    "INSET",
    "CANVAS_RGB",
    "TEXT_RGB",
    "COLORS",
    "SHAPES",
    "TEXT",
    "Box",
    "SceneObject",
    "cell_box",
    "box_cell",
    "normalised_box_text",
    "render",
]

IMAGE_SIZE = 64
GRID = 4
CELL = IMAGE_SIZE // GRID
INSET = 2
# CLIP's pixel mean (0.481, 0.458, 0.408) × 255: the normalised canvas is ~0.
CANVAS_RGB = (123, 117, 104)
TEXT_RGB = (70, 70, 70)
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 170, 40),
    "blue": (30, 60, 225),
    "yellow": (235, 215, 30),
    "white": (250, 250, 250),
    "black": (10, 10, 10),
}
SHAPES = ("circle", "square", "triangle")
TEXT = "text"  # shape name of a document's text decoy (colour "grey")

Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class SceneObject:
    """One drawn thing: a coloured shape, or a text decoy (shape ``"text"``).

    Attributes:
        color: Colour name (key of ``COLORS``; ``"grey"`` for text decoys).
        shape: One of ``SHAPES`` or ``"text"``.
        cell: (row, col) in the 4×4 grid; the object's one vision token is ``row * 4 + col``.
    """

    color: str
    shape: str
    cell: tuple[int, int]

    @property
    def name(self) -> str:
        """Words naming the object, e.g. ``"red circle"``."""
        return f"{self.color} {self.shape}"

    @property
    def box(self) -> Box:
        """Pixel box xyxy (x2/y2 exclusive) the object is drawn in."""
        return cell_box(*self.cell)


def cell_box(row: int, col: int) -> Box:
    """Pixel box (x2/y2 exclusive) of the object drawn in grid cell (row, col)."""
    return (
        col * CELL + INSET,
        row * CELL + INSET,
        (col + 1) * CELL - INSET,
        (row + 1) * CELL - INSET,
    )


def box_cell(box: Box) -> tuple[int, int]:
    """Grid cell (row, col) of an object box drawn by :func:`cell_box` (its inverse)."""
    return box[1] // CELL, box[0] // CELL


def normalised_box_text(box: Box, size: int = IMAGE_SIZE) -> str:
    """The toy convention for a box in text: ``"[x1, y1, x2, y2]"`` in [0, 1], two decimals."""
    return "[" + ", ".join(f"{v / size:.2f}" for v in box) + "]"


def render(objects: tuple[SceneObject, ...]) -> Image:
    """Draw one 64×64 image of ``objects`` on the grey canvas."""
    from PIL import Image as PILImage
    from PIL import ImageDraw

    img = PILImage.new("RGB", (IMAGE_SIZE, IMAGE_SIZE), CANVAS_RGB)
    draw = ImageDraw.Draw(img)
    for obj in objects:
        x1, y1, x2, y2 = obj.box
        # PIL's shape boxes are inclusive: the last drawn pixel is x2 - 1.
        x2, y2 = x2 - 1, y2 - 1
        if obj.shape == "circle":
            draw.ellipse((x1, y1, x2, y2), fill=COLORS[obj.color])
        elif obj.shape == "square":
            draw.rectangle((x1, y1, x2, y2), fill=COLORS[obj.color])
        elif obj.shape == "triangle":
            draw.polygon([(x1, y2), (x2, y2), ((x1 + x2) / 2, y1)], fill=COLORS[obj.color])
        elif obj.shape == TEXT:
            for y in (y1 + 1, y1 + 5, y1 + 9):
                draw.line((x1, y, x2 - (y % 3), y), fill=TEXT_RGB, width=1)
        else:
            raise ValueError(f"unknown shape {obj.shape!r}")
    return img
