"""Reading a command's output off its SSH channel: every byte, also those
that arrive together with the end of the stream."""
import threading

from kubernetes_mgmt.remote import ssh


class _LateChannel:
    """A channel whose last output and EOF arrive together, just after
    the reader found its buffers empty (as happens when the transport's
    thread runs between the reader's two checks)."""

    def __init__(self, first: bytes, last: bytes):
        self._out = [first]
        self._last = last
        self._eof = False
        self.exit_status = 0
        self.status_event = threading.Event()
        self.status_event.set()

    def fileno(self) -> int:
        return -1   # never selected on: data is always ready first

    def recv_ready(self) -> bool:
        return bool(self._out)

    def recv(self, size: int) -> bytes:
        return self._out.pop(0)

    def recv_stderr_ready(self) -> bool:
        return False

    @property
    def eof_received(self) -> bool:
        if not self._eof:       # the data and the EOF land now
            self._out.append(self._last)
            self._eof = True
        return True

    def exit_status_ready(self) -> bool:
        return True


def test_output_that_comes_with_the_eof_is_kept():
    chan = _LateChannel(b'a' * 65536, b'b' * 34464)
    status, out, err = ssh._collect(chan, deadline=float('inf'))
    assert (status, len(out), err) == (0, 100000, b'')
    assert out.endswith(b'b' * 34464)
