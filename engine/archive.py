"""What is wrong with a zip archive that Python's ``zipfile`` will not open, in the
user's words: where it was cut off and in which member, so a truncated download
is reported as a damaged zip rather than as "a format Hindsight does not know".

It reads only the archive's local headers (30 bytes each, skipping the data), so
describing a damaged multi-GB export costs a few seeks. It never extracts anything.
"""
from __future__ import annotations

import struct
from typing import IO

LOCAL_HEADER = b"PK\x03\x04"
CENTRAL_HEADER = b"PK\x01\x02"
END_OF_ARCHIVE = b"PK\x05\x06"
_LOCAL = struct.Struct("<4s5H3I2H")  # signature, version, flags, method, time, date, crc, sizes, name/extra lengths
_DATA_DESCRIPTOR = 0x08
#: a member whose sizes follow its data (flag bit 3) is searched for this far
_SCAN = 1 << 20


def looks_like_zip(head: bytes) -> bool:
    """The first bytes of a zip archive (a member or an empty archive's end record)."""
    return head.startswith(LOCAL_HEADER) or head.startswith(END_OF_ARCHIVE)


def damage(fh: IO[bytes], size: int) -> str:
    """Why the zip in ``fh`` (``size`` bytes) cannot be opened, e.g. "truncated at
    byte 1,234,567, inside 'Spotify/endsong_0.json' (3 members before it are whole)"."""
    pos, whole, last = 0, 0, ""
    while True:
        fh.seek(pos)
        header = fh.read(_LOCAL.size)
        if header.startswith(CENTRAL_HEADER):
            return (f"truncated at byte {size:,}, in its table of contents after {whole} whole "
                    f"member{'s' * (whole != 1)}")
        if len(header) < 4 and pos >= size:
            after = f" after '{last}'" if last else ""
            return f"truncated at byte {size:,}{after}: its table of contents is missing"
        if len(header) < _LOCAL.size or not header.startswith(LOCAL_HEADER):
            if len(header) < _LOCAL.size and LOCAL_HEADER.startswith(header[:4]):
                return f"truncated at byte {size:,}, inside the header of member {whole + 1}"
            return f"not readable as a zip: unexpected bytes at byte {pos:,} (after {whole} whole members)"
        _, _, flags, _, _, _, _, csize, _, name_len, extra_len = _LOCAL.unpack(header)
        name = fh.read(name_len).decode("utf-8", "replace")
        data_start = pos + _LOCAL.size + name_len + extra_len
        if data_start > size:
            return f"truncated at byte {size:,}, inside the header of '{name}'"
        if flags & _DATA_DESCRIPTOR and csize == 0:  # the size comes after the data: find the next header
            nxt = _next_header(fh, data_start)
            if nxt is None:
                return f"truncated at byte {size:,}, inside '{name}'{_after(whole)}"
            pos = nxt
        else:
            end = data_start + csize
            if end > size:
                return f"truncated at byte {size:,}, inside '{name}'{_after(whole)}"
            pos = end + (_descriptor_length(fh, end) if flags & _DATA_DESCRIPTOR else 0)
        whole += 1
        last = name


def _after(whole: int) -> str:
    return f", after {whole} whole member{'s' * (whole != 1)}" if whole else ""


def _next_header(fh: IO[bytes], start: int) -> int | None:
    fh.seek(start)
    offset = start
    carry = b""
    while True:
        block = fh.read(_SCAN)
        if not block:
            return None
        data = carry + block
        found = [i for i in (data.find(LOCAL_HEADER), data.find(CENTRAL_HEADER)) if i >= 0]
        if found:
            return offset - len(carry) + min(found)
        carry = data[-3:]
        offset += len(block)


def _descriptor_length(fh: IO[bytes], at: int) -> int:
    fh.seek(at)
    return 16 if fh.read(4) == b"PK\x07\x08" else 12
