"""Bytes from a serial port -> frames (lines), whatever the line did to them.

A serial line delivers bytes in arbitrary chunks: a line can arrive in pieces, two lines in one read, and
a cable plugged in mid-line or electrical noise leaves bytes that are not text. The framer keeps the
partial tail between reads, ends a frame at any of CR, LF or CRLF (instruments differ) or at ETX for
STX/ETX-framed answers, and marks a frame as damaged when it held bytes outside printable ASCII or grew
past ``max_length`` without a terminator (then it is cut and the rest of that run is skipped). A damaged
frame is reported, never parsed into a value: a reading is only ever made from a clean frame.
"""
from __future__ import annotations

from dataclasses import dataclass

STX, ETX = 0x02, 0x03
CR, LF = 0x0D, 0x0A


@dataclass(frozen=True)
class Frame:
    text: str
    damaged: bool = False
    why: str = ""


class LineFramer:
    def __init__(self, *, max_length: int = 128, stx_etx: bool = False) -> None:
        self.max_length = max_length
        self.stx_etx = stx_etx          # frames are STX ... ETX (Hanna's answers); CR/LF are then noise
        self._buf = bytearray()
        self._skipping = False          # after an overlong run, drop bytes up to the next terminator
        self.garbage_bytes = 0

    def reset(self) -> None:
        """Forget a partial frame (after a reconnect the old tail belongs to nothing)."""
        self._buf.clear()
        self._skipping = False

    def feed(self, data: bytes) -> list[Frame]:
        frames: list[Frame] = []
        for byte in data:
            if self._is_end(byte):
                if self._skipping:
                    self._skipping = False
                    self._buf.clear()
                    continue
                if self._buf:
                    frames.append(self._finish())
                continue
            if self.stx_etx and byte == STX:
                if self._buf:   # a new frame starts before the old one ended: the old one is a fragment
                    frames.append(Frame(self._buf.decode("latin-1"), True, "frame cut by STX"))
                    self.garbage_bytes += len(self._buf)
                    self._buf.clear()
                self._skipping = False
                continue
            if self.stx_etx and byte in (CR, LF) and not self._buf:
                continue        # line ends some meters add between ETX and the next STX
            if self._skipping:
                self.garbage_bytes += 1
                continue
            self._buf.append(byte)
            if len(self._buf) > self.max_length:
                frames.append(Frame(self._buf[:40].decode("latin-1") + "...", True,
                                    f"no line end within {self.max_length} bytes"))
                self.garbage_bytes += len(self._buf)
                self._buf.clear()
                self._skipping = True
        return frames

    def _is_end(self, byte: int) -> bool:
        return byte == ETX if self.stx_etx else byte in (CR, LF)

    def _finish(self) -> Frame:
        raw = bytes(self._buf)
        self._buf.clear()
        if self.stx_etx:
            raw = raw.strip(b"\r\n")
        bad = [b for b in raw if not 0x20 <= b < 0x7F]
        text = raw.decode("latin-1")
        if bad:
            self.garbage_bytes += len(bad)
            return Frame(text, True, f"{len(bad)} non-text byte(s) in the line")
        return Frame(text)
