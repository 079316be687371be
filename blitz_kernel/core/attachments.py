"""Attachments: context the user points at in a prompt (`@df`, `@cell:3`, `@err`, `@file:x`,
`@fig`), resolved by the front end and carried ahead of the prompt text.

The engine does not know where an attachment came from; it knows its kind and name (shown as
a chip), its text, and, for a figure, its image. Images go first in the user message and only
to models that can see them; a blind model gets a line saying the image was left out.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from .history import ImagePart, TextPart, UserMessage

AttachmentKind = Literal["variable", "cell", "error", "file", "figure"]


class Attachment(BaseModel):
    """One resolved reference."""

    kind: AttachmentKind
    name: str
    """How the prompt named it (`df`, `cell:3`, `err`, `file:data/a.csv`, `fig`)."""
    text: str = ""
    image: ImagePart | None = None

    @property
    def size(self) -> int:
        """Characters of text, or bytes of image, for the chip."""
        if self.image is not None:
            return len(self.image.data_base64) * 3 // 4
        return len(self.text)

    def summary(self) -> AttachmentSummary:
        return AttachmentSummary(kind=self.kind, name=self.name, size=self.size)


class AttachmentSummary(BaseModel):
    """What a front end shows of an attachment: a chip (kind, name, size)."""

    kind: AttachmentKind
    name: str
    size: int


def prompt_with_attachments(prompt: str, attachments: list[Attachment], *, vision: bool) -> UserMessage:
    """Images first, then each text attachment as a marked block, then the prompt."""
    images = [a.image for a in attachments if a.image is not None and vision]
    blocks = []
    for item in attachments:
        if item.image is not None and not vision:
            blocks.append(
                f"[Attachment {item.kind} @{item.name}: an image, left out because this model cannot see images]"
            )
        elif item.text:
            blocks.append(f"[Attachment {item.kind} @{item.name}]\n{item.text}\n[End of @{item.name}]")
    text = "\n\n".join([*blocks, prompt]) if blocks else prompt
    return UserMessage(parts=[*(images), TextPart(text=text)])
