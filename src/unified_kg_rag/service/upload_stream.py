"""Reading a ``multipart/form-data`` upload as it streams in, into an `UploadBatch`.

The request body is fed to python-multipart's push parser chunk by chunk: each file part is
written to the batch's staging folder as its bytes arrive, so the limits
(``service.max_upload_*``) refuse an oversize upload at the first byte past them, and no
upload is ever held in memory whole. Form fields other than files are small (``index``,
``confirm``: at most 1 KiB each).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request
from python_multipart.multipart import MultipartParser, parse_options_header

from unified_kg_rag.ingestion.uploads import UploadBatch
from unified_kg_rag.util.errors import PayloadTooLargeError, UsageError

__all__ = ["read_upload"]

_MAX_FIELD_BYTES = 1024


@dataclass
class _Part:
    headers: dict[bytes, bytes] = field(default_factory=dict)
    header_name: bytes = b""
    header_value: bytes = b""
    field_name: str | None = None
    value: bytearray = field(default_factory=bytearray)
    is_file: bool = False


class _Receiver:
    """Callbacks of the push parser: files into the batch, fields into `fields`."""

    def __init__(self, batch: UploadBatch) -> None:
        self.batch = batch
        self.fields: dict[str, str] = {}
        self.part = _Part()
        self.ended = False  # the closing boundary was read

    def on_end(self) -> None:
        self.ended = True

    def on_part_begin(self) -> None:
        self.part = _Part()

    def on_header_field(self, data: bytes, start: int, end: int) -> None:
        self.part.header_name += data[start:end]

    def on_header_value(self, data: bytes, start: int, end: int) -> None:
        self.part.header_value += data[start:end]

    def on_header_end(self) -> None:
        part = self.part
        part.headers[part.header_name.lower()] = part.header_value
        part.header_name, part.header_value = b"", b""

    def on_headers_finished(self) -> None:
        part = self.part
        _, options = parse_options_header(part.headers.get(b"content-disposition", b""))
        name = options.get(b"name", b"").decode("utf-8", "replace")
        part.field_name = name
        if b"filename" in options:
            part.is_file = True
            self.batch.open(options[b"filename"].decode("utf-8", "replace"))

    def on_part_data(self, data: bytes, start: int, end: int) -> None:
        part = self.part
        if part.is_file:
            self.batch.write(data[start:end])
            return
        part.value += data[start:end]
        if len(part.value) > _MAX_FIELD_BYTES:
            raise PayloadTooLargeError(f"form field {part.field_name!r} is longer than "
                                       f"{_MAX_FIELD_BYTES} bytes", field=part.field_name)

    def on_part_end(self) -> None:
        part = self.part
        if part.is_file:
            self.batch.close()
        elif part.field_name:
            self.fields[part.field_name] = part.value.decode("utf-8", "replace")


async def read_upload(request: Request, batch: UploadBatch) -> dict[str, str]:
    """Stream ``request``'s multipart body into ``batch``; return its other form fields.

    A ``Content-Length`` over the total limit (plus 64 KiB for the multipart framing) is
    refused before any byte is read.

    Raises:
        UsageError: not ``multipart/form-data``, a malformed body, or a refused file name.
        PayloadTooLargeError: a file, the file count or the total is over its limit.
    """
    kind, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if kind != b"multipart/form-data" or not boundary:
        raise UsageError("send the files as multipart/form-data (curl -F files=@FILE)",
                         field="content-type")  # fmt: skip
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > batch.limits.total_bytes + 65_536:
        raise PayloadTooLargeError(
            f"the upload is larger than {batch.limits.total_bytes:,} bytes in all "
            "(service.max_upload_total_bytes)", field="files")  # fmt: skip
    receiver = _Receiver(batch)
    parser = MultipartParser(boundary, {
        "on_part_begin": receiver.on_part_begin, "on_part_data": receiver.on_part_data,
        "on_part_end": receiver.on_part_end, "on_header_field": receiver.on_header_field,
        "on_header_value": receiver.on_header_value, "on_header_end": receiver.on_header_end,
        "on_headers_finished": receiver.on_headers_finished, "on_end": receiver.on_end,
    })  # fmt: skip
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except (UsageError, PayloadTooLargeError):
        raise
    except Exception as exc:  # python-multipart's parse errors
        raise UsageError(f"malformed multipart body: {exc}", field="files") from exc
    if not receiver.ended:  # a cut body: its last file would be kept half written
        raise UsageError("malformed multipart body: it ends before its closing boundary "
                         "(cut short?); nothing was kept", field="files")  # fmt: skip
    return receiver.fields
