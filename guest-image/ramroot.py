#!/usr/bin/python3
"""Stage the ram root of a migratable test guest (run by scripts/build-guest.sh).

    ramroot.py --list guest-image/ramroot.list --layer build/guest/layer \\
               --kver 6.1.0-56-amd64 --image-src guest-image \\
               --out build/guest/ramroot.stage --manifest build/guest/ramroot.manifest

Writes into --out a complete root file system that the guest kernel unpacks
from its initramfs and runs from RAM (guest-image/init with pvo.root=ram): the
host files ramroot.list names (Debian packages, single paths) at their host
paths, each symlink on the way kept as a symlink (merged /usr: /bin -> usr/bin,
/lib64 -> usr/lib64, /etc/alternatives), the shared libraries of every ELF
file (ldd), the guest layer (rdma-core 56.1 with our provider, which hides the
host's rdma-core libraries at the same paths), the kernel modules ramroot.list
names with their dependencies and a depmod index, init at /init and the agent
at /pvo/agent. ELF files of the layer lose their debug info (objcopy
--strip-debug); host files are Debian's, already stripped.

--manifest gets one archive path per line (no leading /): the harness adds
build-tree programs at boot and skips the libraries the base already has.
"""

import argparse
import os
import shutil
import stat
import subprocess
import sys
import tempfile

# Host paths never taken from a package's file list.
EXCLUDE = ("/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/locale/",
           "/usr/share/lintian/", "/usr/share/bug/", "/usr/share/bash-completion/",
           "/usr/share/zsh/", "/usr/share/fish/", "/usr/share/menu/", "/usr/share/gdb/",
           "/usr/share/pixmaps/", "/usr/lib/systemd/", "/lib/systemd/", "/etc/init.d/",
           "/usr/include/", "/etc/cron.d/", "/etc/cron.daily/", "/etc/logrotate.d/")
# Symlinks into these are kept as symlinks; nothing below them is copied.
VIRTUAL = ("/proc", "/sys", "/dev", "/run")
# Parts of the layer the guest does not need (relative paths).
LAYER_EXCLUDE = ("usr/include/", "usr/share/man/", "usr/share/doc/",
                 "usr/lib/x86_64-linux-gnu/pkgconfig/", "usr/lib/modules/")
# The module tree's own files depmod reads (besides the modules).
MODULE_META = ("modules.order", "modules.builtin", "modules.builtin.modinfo")
# Empty directories of the root (mode).
ROOT_DIRS = {"dev": 0o755, "proc": 0o555, "sys": 0o555, "run": 0o755, "tmp": 0o1777,
             "root": 0o700, "mnt": 0o755, "var": 0o755, "var/tmp": 0o1777, "pvo": 0o755}

HOST, LAYER = 0, 1


def die(msg):
    sys.stderr.write("guest: error: ram root: %s\n" % msg)
    sys.exit(1)


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


class Tree:
    """The root being assembled: archive path (relative, no leading /) ->
    ("dir", mode) | ("link", target) | ("file", source path, strip)."""

    def __init__(self, layer):
        self.layer = layer
        self.entries = {}
        self.prio = {}
        self.warnings = []

    def put(self, rel, entry, prio):
        old = self.entries.get(rel)
        if old is not None:
            if old[0] == "dir" and entry[0] == "dir":
                return
            if self.prio[rel] > prio:
                return
            if self.prio[rel] == prio and old != entry and prio == HOST:
                # the same host path reached twice resolves the same way
                return
        self.entries[rel] = entry
        self.prio[rel] = prio

    def warn(self, msg):
        self.warnings.append(msg)

    def add_host(self, path, hops=0):
        """Add host path with every symlink on the way. False if missing."""
        if hops > 40:
            self.warn("%s: too many levels of symlinks" % path)
            return False
        parts = [p for p in path.split("/") if p and p != "."]
        cur = ""
        for i, part in enumerate(parts):
            if part == "..":
                cur = os.path.dirname(cur)
                continue
            rel = cur + "/" + part if cur else part
            host = "/" + rel
            try:
                st = os.lstat(host)
            except OSError:
                self.warn("%s: missing on the host" % path)
                return False
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(host)
                self.put(rel, ("link", target), HOST)
                new = os.path.normpath(os.path.join("/" + cur, target))
                if any(new == v or new.startswith(v + "/") for v in VIRTUAL):
                    return True
                return self.add_host("/".join([new] + parts[i + 1:]), hops + 1)
            if stat.S_ISDIR(st.st_mode):
                self.put(rel, ("dir", stat.S_IMODE(st.st_mode)), HOST)
                cur = rel
                continue
            if i != len(parts) - 1:
                self.warn("%s: %s is not a directory" % (path, host))
                return False
            if stat.S_ISREG(st.st_mode):
                self.put(rel, ("file", host, False), HOST)
            else:
                self.warn("%s: not a regular file, skipped" % host)
                return False
        return True

    def add_package(self, name):
        p = subprocess.run(["dpkg-query", "-L", name], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            die("Debian package %s is not installed (make deps installs what the ram "
                "root needs; add missing ones to scripts/deps.sh): %s" % (name, p.stderr.strip()))
        for line in p.stdout.splitlines():
            if not line.startswith("/") or line == "/.":
                continue  # "diverted by ..." lines
            if any(line.startswith(e) or line + "/" == e for e in EXCLUDE):
                continue
            if os.path.isdir(line) and not os.path.islink(line):
                # listed directories come without their contents: only
                # those on the way to a file are needed
                continue
            self.add_host(line)

    def add_layer(self):
        for dirpath, dirnames, filenames in os.walk(self.layer):
            reldir = os.path.relpath(dirpath, self.layer)
            reldir = "" if reldir == "." else reldir
            keep = []
            for d in sorted(dirnames):
                rel = os.path.join(reldir, d)
                full = os.path.join(dirpath, d)
                if any((rel + "/").startswith(e) for e in LAYER_EXCLUDE):
                    continue
                if os.path.islink(full):
                    self.put(rel, ("link", os.readlink(full)), LAYER)
                    continue
                self.put(rel, ("dir", stat.S_IMODE(os.lstat(full).st_mode)), LAYER)
                keep.append(d)
            dirnames[:] = keep
            for f in sorted(filenames):
                rel = os.path.join(reldir, f)
                full = os.path.join(dirpath, f)
                if any(rel.startswith(e) for e in LAYER_EXCLUDE) or f.endswith(".a"):
                    continue
                if os.path.islink(full):
                    self.put(rel, ("link", os.readlink(full)), LAYER)
                else:
                    self.put(rel, ("file", full, is_elf(full)), LAYER)

    def add_modules(self, kver, roots):
        """The modules of roots with their dependencies, from the layer."""
        tree = os.path.join(self.layer, "usr/lib/modules", kver)
        dest = "usr/lib/modules/" + kver
        with tempfile.TemporaryDirectory(prefix="ramroot-kmod-") as base:
            os.makedirs(os.path.join(base, "lib/modules"))
            os.symlink(tree, os.path.join(base, "lib/modules", kver))
            prefix = os.path.join(base, "lib/modules", kver) + "/"
            count = 0
            for name, optional in roots:
                p = subprocess.run(["modprobe", "-d", base, "-S", kver, "--show-depends", name],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if p.returncode != 0:
                    if optional:
                        print("guest: ram root: notice: module %s not in the layer, skipped" % name)
                        continue
                    die("module %s: %s" % (name, p.stderr.strip()))
                for line in p.stdout.splitlines():
                    words = line.split()
                    if len(words) < 2 or words[0] != "insmod":
                        continue  # "builtin NAME"
                    if not words[1].startswith(prefix):
                        die("modprobe answered a module outside the tree: %s" % line)
                    rel = words[1][len(prefix):]
                    if dest + "/" + rel not in self.entries:
                        count += 1
                    self.put_path_dirs(dest + "/" + rel)
                    self.put(dest + "/" + rel, ("file", os.path.join(tree, rel), True), LAYER)
        for meta in MODULE_META:
            src = os.path.join(tree, meta)
            if os.path.exists(src):
                self.put(dest + "/" + meta, ("file", src, False), LAYER)
        self.put_path_dirs(dest + "/modules.order")
        return count

    def put_path_dirs(self, rel):
        """Directory entries for the parents of rel (real directories)."""
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            self.put("/".join(parts[:i]), ("dir", 0o755), LAYER)

    def add_libraries(self):
        """Add the shared libraries (ldd) of every ELF file in the tree."""
        elves = sorted(rel for rel, e in self.entries.items()
                       if e[0] == "file" and not rel.startswith("usr/lib/modules/")
                       and is_elf(e[1]))
        libdir = os.path.join(self.layer, "usr/lib/x86_64-linux-gnu")
        env = dict(os.environ, LC_ALL="C", LD_LIBRARY_PATH=libdir)
        needed = set()
        for i in range(0, len(elves), 64):
            batch = [self.entries[rel][1] for rel in elves[i:i + 64]]
            p = subprocess.run(["ldd"] + batch, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, env=env)
            current = None
            for line in p.stdout.splitlines():
                if not line.startswith("\t"):
                    current = line.rstrip(":")
                    continue
                words = line.split()
                if "=>" in words:
                    target = words[words.index("=>") + 1]
                    if target == "not":
                        self.warn("%s: %s not found" % (current, words[0]))
                        continue
                elif words and words[0].startswith("/"):
                    target = words[0]  # the dynamic loader
                else:
                    continue  # linux-vdso.so.1, "statically linked", ...
                needed.add(target)
        for path in sorted(needed):
            if path.startswith(self.layer + "/"):
                continue  # the layer is in the tree whole
            self.add_host(path)
        return len(elves)

    def materialize(self, out):
        for rel in sorted(self.entries):
            e = self.entries[rel]
            dst = os.path.join(out, rel)
            if e[0] == "dir":
                os.makedirs(dst, exist_ok=True)
                os.chmod(dst, e[1])
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if e[0] == "link":
                os.symlink(e[1], dst)
            elif e[2] and is_elf(e[1]):
                subprocess.run(["objcopy", "--strip-debug", e[1], dst], check=True)
                shutil.copystat(e[1], dst)
            else:
                shutil.copy2(e[1], dst)


def parse_list(path):
    pkgs, paths, modules = [], [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            kind, _, arg = line.partition(" ")
            arg = arg.strip()
            if kind == "pkg":
                pkgs.append(arg)
            elif kind == "path":
                paths.append(arg)
            elif kind in ("module", "module?"):
                modules.append((arg, kind == "module?"))
            else:
                die("%s:%d: unknown kind %r (pkg, path, module, module?)" % (path, n, kind))
    return pkgs, paths, modules


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", required=True)
    ap.add_argument("--layer", required=True)
    ap.add_argument("--kver", required=True)
    ap.add_argument("--image-src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--manifest", required=True)
    args = ap.parse_args()
    layer = os.path.abspath(args.layer)
    if not os.path.isdir(os.path.join(layer, "usr/lib/modules", args.kver)):
        die("%s has no usr/lib/modules/%s" % (layer, args.kver))
    pkgs, paths, modules = parse_list(args.list)

    tree = Tree(layer)
    for p in pkgs:
        tree.add_package(p)
    for p in paths:
        if not tree.add_host(p):
            die("%s (listed in %s) is missing on the host" % (p, args.list))
    tree.add_layer()
    nmods = tree.add_modules(args.kver, modules)
    nelf = tree.add_libraries()
    for rel, mode in ROOT_DIRS.items():
        tree.put(rel, ("dir", mode), LAYER)
    tree.put("init", ("file", os.path.join(args.image_src, "init"), False), LAYER)
    tree.put("pvo/agent", ("file", os.path.join(args.image_src, "agent"), False), LAYER)

    out = os.path.abspath(args.out)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    tree.materialize(out)
    os.chmod(os.path.join(out, "init"), 0o755)
    os.chmod(os.path.join(out, "pvo/agent"), 0o755)
    try:
        # init has its stdio from the start (needs root; harmless without)
        os.mknod(os.path.join(out, "dev/console"), 0o600 | stat.S_IFCHR, os.makedev(5, 1))
    except PermissionError:
        pass

    # the module index, for the selected modules only
    with tempfile.TemporaryDirectory(prefix="ramroot-depmod-") as base:
        os.makedirs(os.path.join(base, "lib/modules"))
        os.symlink(os.path.join(out, "usr/lib/modules", args.kver),
                   os.path.join(base, "lib/modules", args.kver))
        subprocess.run(["depmod", "-b", base, args.kver], check=True)

    with open(args.manifest, "w") as f:
        for dirpath, dirnames, filenames in os.walk(out):
            for name in dirnames + filenames:
                f.write(os.path.relpath(os.path.join(dirpath, name), out) + "\n")
    for w in tree.warnings:
        print("guest: ram root: notice: %s" % w)
    print("guest: ram root: %d packages, %d ELF files with their libraries, %d modules, %d entries"
          % (len(pkgs), nelf, nmods, len(tree.entries)))


if __name__ == "__main__":
    main()
