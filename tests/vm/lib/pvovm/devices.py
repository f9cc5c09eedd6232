"""QEMU arguments for the project's devices, for Guest(extra_args=...)."""


def pvrdma_overlay(socket_path, dev_id="pvo0", **props):
    """A pvrdma-overlay device connected to the back-end's vhost-user socket
    (pvrdma-overlayd must be listening on socket_path). props are more device
    properties, e.g. doorbells=4."""
    device = "pvrdma-overlay,id=%s,chardev=%s-chr" % (dev_id, dev_id)
    for key, value in props.items():
        device += ",%s=%s" % (key.replace("_", "-"), value)
    return ["-chardev", "socket,id=%s-chr,path=%s" % (dev_id, socket_path),
            "-device", device]
