"""What kind of file a run of bytes is, from its first bytes: one magic-number table.

A leaf module (it imports nothing of ours) so that `files` (describing binary files),
`images` (view_image) and `notebook` (image outputs) can all use it without importing each
other. Types are sniffed from content, never from a file name: a name can lie, and a model
must not be sent bytes a provider will reject as the wrong image type.
"""

from __future__ import annotations

import mimetypes
import struct

__all__ = ["describe_binary_kind", "image_dimensions", "sniff_media_type"]

_PNG = b"\x89PNG\r\n\x1a\n"
_MAGIC_NUMBERS: tuple[tuple[bytes, str, str | None], ...] = (
    # (first bytes, what a person calls it, the image media type a provider accepts)
    (_PNG, "PNG image", "image/png"),
    (b"\xff\xd8\xff", "JPEG image", "image/jpeg"),
    (b"GIF87a", "GIF image", "image/gif"),
    (b"GIF89a", "GIF image", "image/gif"),
    (b"GIF8", "GIF image", None),
    (b"%PDF", "PDF document", None),
    (b"PK\x03\x04", "ZIP archive (also .xlsx/.docx/.whl)", None),
    (b"\x1f\x8b", "gzip archive", None),
    (b"PAR1", "Parquet file", None),
    (b"SQLite format 3\x00", "SQLite database", None),
    (b"\x7fELF", "ELF executable", None),
    (b"\x93NUMPY", "NumPy .npy array", None),
    (b"\x89HDF\r\n\x1a\n", "HDF5 file", None),
    (b"BZh", "bzip2 archive", None),
    (b"\xfd7zXZ\x00", "xz archive", None),
)


def _is_webp(head: bytes) -> bool:
    return head[:4] == b"RIFF" and head[8:12] == b"WEBP"


def sniff_media_type(data: bytes) -> str | None:
    """The image media type from the first bytes (never from a file name), or None."""
    for magic, _kind, media_type in _MAGIC_NUMBERS:
        if media_type is not None and data.startswith(magic):
            return media_type
    return "image/webp" if _is_webp(data) else None


def describe_binary_kind(name: str, head: bytes) -> str:
    """A person's name for the kind of binary data `head` starts ("PNG image", "Parquet
    file"); the file name's extension is only the last resort."""
    for magic, kind, _media_type in _MAGIC_NUMBERS:
        if head.startswith(magic):
            return kind
    if _is_webp(head):
        return "WebP image"
    mime, _ = mimetypes.guess_type(name)
    return mime or "unknown binary data"


def image_dimensions(data: bytes) -> tuple[int, int] | None:
    """Width and height of a PNG or GIF from its header; None for other types."""
    if data.startswith(_PNG) and len(data) >= 24 and data[12:16] == b"IHDR":
        width, height = struct.unpack(">II", data[16:24])
        return int(width), int(height)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return int(width), int(height)
    return None
