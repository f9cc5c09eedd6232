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


class _Link:
    """One QEMU's end of the console: the socket we listen on, the connection
    QEMU makes, the thread that reads it, and what it read while the link
    was not yet the active one (a migration's destination)."""

    def __init__(self, sock_path):
        self.path = sock_path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(sock_path)
        self.listener.listen(1)
        self.conn = None
        self.thread = None
        self.pending = []
        self.eof = False

    def accept(self, timeout, alive):
        self.listener.settimeout(0.2)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.conn, _ = self.listener.accept()
                break
            except socket.timeout:
                if not alive():
                    raise ConsoleError("QEMU exited before connecting its serial console")
                if time.monotonic() > deadline:
                    raise ConsoleError("QEMU did not connect its serial console within %ds" % timeout)
        self.conn.settimeout(None)
        self.listener.close()

    def close(self):
        if self.conn is not None:
            try:
                self.conn.shutdown(socket.SHUT_RDWR)  # wakes the reader
            except OSError:
                pass
        for s in (self.conn, self.listener):
            if s is not None:
                s.close()
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(timeout=5)


class Console:
    """The guest's console: one transcript and one log, fed by the QEMU that
    runs the guest. A live migration hands it over to the destination QEMU
    (listen_next, accept_next, then begin_switch / finish_switch, or
    abandon_next): the destination's bytes wait until the source's
    connection has ended, so the transcript stays in order and complete,
    even for a command whose output straddles the switch."""

    def __init__(self, sock_path, log_path):
        self.log_path = log_path
        self._link = _Link(sock_path)
        self._next = None
        self._switching = False
        self._log = open(log_path, "wb")
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._text = ""
        self._closed = False
        self._cond = threading.Condition()
        # held while a migration ends: input sent to a stopped source QEMU
        # would be lost, so other threads' commands wait for the switch
        self._input = threading.RLock()
        self._seq = 0

    def accept(self, timeout, alive):
        """Wait for QEMU to connect; alive() says whether QEMU still runs."""
        self._link.accept(timeout, alive)
        self._start_reader(self._link)

    def _start_reader(self, link):
        link.thread = threading.Thread(target=self._read_loop, args=(link,), daemon=True,
                                       name="console-" + os.path.basename(self.log_path))
        link.thread.start()

    def _read_loop(self, link):
        while True:
            try:
                data = link.conn.recv(65536)
            except OSError:
                data = b""
            with self._cond:
                if not data:
                    link.eof = True
                    if link is self._link and not self._switching:
                        self._closed = True
                    self._cond.notify_all()
                    return
                if link is self._link:
                    self._append(data)
                else:
                    link.pending.append(data)

    def _append(self, data):
        """Log and transcribe console bytes (with self._cond held)."""
        if not self._log.closed:
            self._log.write(data)
            self._log.flush()
        self._text += self._decoder.decode(data)
        self._cond.notify_all()

    # -- migration: hand the console over to another QEMU -------------------

    def listen_next(self, sock_path):
        """Listen on sock_path for the destination QEMU's serial console."""
        if self._next is not None:
            raise ConsoleError("a console handover is already prepared")
        self._next = _Link(sock_path)

    def accept_next(self, timeout, alive):
        """Wait for the destination QEMU to connect; what it sends is held
        back until finish_switch()."""
        self._next.accept(timeout, alive)
        self._start_reader(self._next)

    def hold_input(self):
        """A context manager: other threads' send() waits until it is left
        (the holder's own sends go through)."""
        return self._input

    def begin_switch(self):
        """From now on the end of the source's connection (its QEMU is
        about to be stopped) does not close the console."""
        with self._cond:
            self._switching = True

    def finish_switch(self, note, timeout=10):
        """Make the destination's connection the console: waits (up to
        timeout) for the source's connection to end, so that every byte
        the source QEMU passed on is in the transcript, then writes the
        harness line note and the destination's bytes so far."""
        old = self._link
        if old.thread is not None:
            old.thread.join(timeout)
        old.close()  # no-op if it ended; else cut it (its reader returns)
        with self._cond:
            self._note_locked(note)
            new, self._next = self._next, None
            self._link = new
            for data in new.pending:
                self._append(data)
            new.pending = []
            if new.eof:
                self._closed = True
            self._switching = False
            self._cond.notify_all()

    def abandon_next(self):
        """Drop the destination's connection (migration failed or was
        cancelled): the source's stays the console."""
        nxt = self._next
        if nxt is not None:
            nxt.close()
        with self._cond:
            self._next = None
            self._switching = False
            if self._link.eof:
                self._closed = True
            self._cond.notify_all()

    def note(self, msg):
        """Add a harness line to the log (not to the transcript)."""
        with self._cond:
            self._note_locked(msg)

    def _note_locked(self, msg):
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
            with self._input:
                self._link.conn.sendall(data.encode())
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
        for link in (self._next, self._link):
            if link is not None:
                link.close()
        self._next = None
        with self._cond:
            if not self._log.closed:
                self._log.close()
