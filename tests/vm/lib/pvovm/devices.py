"""QEMU arguments for the project's devices, for Guest(extra_args=...)."""


def pvrdma_overlay(socket_path, dev_id="pvo0", reconnect_ms=None, **props):
    """A pvrdma-overlay device connected to the back-end's vhost-user socket
    (pvrdma-overlayd must be listening on socket_path). reconnect_ms: QEMU
    reconnects to a back-end that went away, trying every that many ms.
    props are more device properties, e.g. doorbells=4."""
    device = "pvrdma-overlay,id=%s,chardev=%s-chr" % (dev_id, dev_id)
    for key, value in props.items():
        device += ",%s=%s" % (key.replace("_", "-"), value)
    chardev = "socket,id=%s-chr,path=%s" % (dev_id, socket_path)
    if reconnect_ms:
        chardev += ",reconnect-ms=%d" % reconnect_ms
    return ["-chardev", chardev, "-device", device]


def with_socket(socket_path, dev_id="pvo0"):
    """For Guest.migrate(extra_args=...): a function that returns a copy of
    the source's extra args with dev_id's chardev on socket_path (another
    back-end's socket). Without it the destination connects to the
    source's socket path (the same back-end)."""
    def rewrite(args):
        out = list(args)
        prefix = "socket,id=%s-chr," % dev_id
        for i, a in enumerate(out):
            if a.startswith(prefix):
                opts = [o for o in a.split(",") if not o.startswith("path=")]
                out[i] = ",".join(opts + ["path=%s" % socket_path])
                break
        else:
            raise ValueError("no chardev %s-chr in %r" % (dev_id, args))
        return out
    return rewrite
