"""An image the agent may view this turn (a figure run_python drew, an image file).

Its own module so that the tool context (tools/registry.py) can hold the turn's images typed
without importing the image tools, which import the registry.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from ..core.history import ImagePart
from .media import image_dimensions


@dataclass
class CapturedImage:
    """An image the agent may view: its bytes and where it came from."""

    name: str
    data: bytes
    media_type: str
    origin: str
    """Shown to the model: "figure drawn by run_python", a file path, a notebook cell."""

    def size_text(self) -> str:
        """`PNG 640×480, 21 KB`: what the model reads before it decides to look."""
        kind = self.media_type.split("/")[-1].upper()
        dimensions = image_dimensions(self.data)
        shape = f" {dimensions[0]}×{dimensions[1]}" if dimensions else ""
        return f"{kind}{shape}, {max(1, len(self.data) // 1024)} KB"

    def part(self) -> ImagePart:
        return ImagePart(media_type=self.media_type, data_base64=base64.b64encode(self.data).decode("ascii"))
