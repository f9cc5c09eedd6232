"""The guest's serial console: log it, search it, and talk to the agent.

QEMU connects the guest's ttyS0 to a unix socket we listen on. A reader thread
appends everything to the console log and to an in-memory transcript; waiters
search the transcript with kernel console messages cut out.

The agent (guest-image/agent) turns the tty's echo and its NL -> CR NL output
mapping off, so its output lines end in a bare NL while the kernel's console
driver still ends every line it prints with CR NL. That tells a kernel message
that landed in the middle of a command's output (or of a marker) apart from
the output itself, even for output that looks like dmesg.
"""

import base64
import codecs
import os
import re
import socket
import threading
import time

# A kernel console line: "[   12.345678] text" CR NL (printk.time=1).
KERNEL_LINE = re.compile(r"\[\s*\d+\.\d+\][^\r\n]*\r\n")
READY = re.compile(r"@@PVO-READY (\S+) errors=(\d+) uptime=([\d.]+)@@")
# Lines the harness sends are kept well below the tty's 4 KiB line limit.
CHUNK = 512
# Bigger commands belong in a file on the host: the guest sees the host's /.
MAX_COMMAND = 32 * 1024


class ConsoleError(Exception):
    """The console closed or a wait timed out."""


def strip_kernel_lines(text):
    """Remove kernel console messages from console text."""
    return KERNEL_LINE.sub("", text)


class Console:
    def __init__(self, sock_path, log_path):
        self.log_path = log_path
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(sock_path)
        self._listener.listen(1)
        self._conn = None
        self._log = open(log_path, "wb")
        self._text = ""
        self._closed = False
        self._cond = threading.Condition()
        self._thread = None
        self._seq = 0

    def accept(self, timeout, alive):
        """Wait for QEMU to connect; alive() says whether QEMU still runs."""
        self._listener.settimeout(0.2)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._conn, _ = self._listener.accept()
                break
            except socket.timeout:
                if not alive():
                    raise ConsoleError("QEMU exited before connecting its serial console")
                if time.monotonic() > deadline:
                    raise ConsoleError("QEMU did not connect its serial console within %ds" % timeout)
        self._conn.settimeout(None)
        self._listener.close()
        self._thread = threading.Thread(target=self._read_loop, daemon=True,
                                        name="console-" + os.path.basename(self.log_path))
        self._thread.start()

    def _read_loop(self):
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while True:
            try:
                data = self._conn.recv(65536)
            except OSError:
                data = b""
            with self._cond:
                if data:
                    self._log.write(data)
                    self._log.flush()
                else:
                    self._closed = True
                    self._cond.notify_all()
                    return
                self._text += decoder.decode(data)
                self._cond.notify_all()

    def note(self, msg):
        """Add a harness line to the log (not to the transcript)."""
        with self._cond:
            if self._log.closed:
                return
            self._log.write(("\n[pvo-harness %s] %s\n" % (time.strftime("%H:%M:%S"), msg)).encode())
            self._log.flush()

    def mark(self):
        """Current end of the transcript, for wait(since=...)."""
        with self._cond:
            return len(self._text)

    def text(self, since=0):
        with self._cond:
            return self._text[since:]

    def wait(self, pattern, timeout, since=0, fail=None, alive=None, what=None):
        """Wait until pattern matches the kernel-stripped transcript after
        since. Returns (match, stripped text). fail: a regex that aborts the
        wait when it shows up (e.g. a kernel panic); alive(): False once QEMU
        has exited; what: how to name the wait in a timeout error. Raises
        ConsoleError on timeout, failure or console EOF."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                text = strip_kernel_lines(self._text[since:])
                m = pattern.search(text)
                if m:
                    return m, text
                if fail is not None:
                    f = fail.search(self._text[since:])
                    if f:
                        raise ConsoleError("guest failed: %r" % f.group(0).strip())
                if self._closed:
                    raise ConsoleError("console closed (QEMU exited?)")
                if alive is not None and not alive():
                    raise ConsoleError("QEMU exited")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ConsoleError("timed out after %ds waiting for %s"
                                       % (timeout, what or repr(pattern.pattern)))
                self._cond.wait(min(left, 0.5))

    def send(self, data):
        try:
            self._conn.sendall(data.encode())
        except OSError as err:
            raise ConsoleError("cannot write to the console: %s" % err) from err

    def run(self, cmd, timeout, alive=None):
        """Run cmd (bash script text) in the guest; returns (status, output).

        Output is the command's stdout and stderr with kernel console
        messages removed (they stay in the log)."""
        data = base64.b64encode(cmd.encode()).decode()
        if len(data) > MAX_COMMAND:
            raise ConsoleError("command is %d bytes encoded (limit %d); put it in a file the guest "
                               "can read through the host root instead" % (len(data), MAX_COMMAND))
        self._seq += 1
        token = "%d.%d.%s" % (os.getpid(), self._seq, os.urandom(4).hex())
        begin = "@@PVO-B %s@@\n" % token
        end = re.compile(r"@@PVO-E %s (\d+)@@" % re.escape(token))
        lines = ["@C %s\n" % data[i:i + CHUNK] for i in range(0, len(data), CHUNK)]
        lines.append("@R %s\n" % token)
        since = self.mark()
        self.send("".join(lines))
        m, text = self.wait(end, timeout, since=since, alive=alive,
                            what="the command to finish")
        start = text.find(begin)
        if start < 0 or start > m.start():
            raise ConsoleError("end marker without begin marker for token %s (console garbled?)" % token)
        return int(m.group(1)), text[start + len(begin):m.start()]

    def close(self):
        if self._conn is not None:
            try:
                self._conn.shutdown(socket.SHUT_RDWR)  # wakes the reader
            except OSError:
                pass
        for s in (self._conn, self._listener):
            if s is not None:
                s.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._cond:
            if not self._log.closed:
                self._log.close()
