"""A minimal QMP (QEMU Machine Protocol) client over a unix socket."""

import json
import socket
import time


class QmpError(Exception):
    pass


class Qmp:
    def __init__(self, path, timeout=30):
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError) as err:
                if time.monotonic() > deadline:
                    raise QmpError("cannot connect to QMP at %s: %s" % (path, err)) from err
                time.sleep(0.1)
        self._file = self._sock.makefile("rwb")
        self.events = []
        greeting = self._read()
        if "QMP" not in greeting:
            raise QmpError("unexpected QMP greeting: %r" % greeting)
        self.command("qmp_capabilities")

    def _read(self):
        line = self._file.readline()
        if not line:
            raise QmpError("QMP connection closed")
        return json.loads(line)

    def command(self, name, **arguments):
        """Execute a command; returns its "return" value, raises on "error".
        Events that arrive meanwhile are kept in self.events."""
        msg = {"execute": name}
        if arguments:
            msg["arguments"] = arguments
        self._file.write(json.dumps(msg).encode() + b"\n")
        self._file.flush()
        while True:
            reply = self._read()
            if "event" in reply:
                self.events.append(reply)
            elif "error" in reply:
                raise QmpError("%s: %s" % (name, reply["error"].get("desc", reply["error"])))
            elif "return" in reply:
                return reply["return"]

    def close(self):
        try:
            self._file.close()
            self._sock.close()
        except OSError:
            pass
