"""The initrd of a ram-root guest (Guest(ram_root=True)).

scripts/build-guest.sh makes the base, build/guest/ramroot.cpio.zst: a whole
root file system (host programs from guest-image/ramroot.list with their
libraries, the guest layer, selected modules, init and agent) that the guest
runs from RAM, without 9p. At each boot the harness puts a small uncompressed
cpio in front of it with files of the build tree (by default the test
programs, build/plain/tests/vm/progs/*) at their host paths, plus any
shared library of theirs the base lacks, so that commands naming them work
as in a 9p guest, and a rebuilt program never forces an image rebuild. Linux
unpacks concatenated archives one after the other.

    path, summary = build_initrd(dest_dir, files=default_files() + [...])
"""

import os
import stat
import subprocess

from . import paths

# Host paths whose symlinks are kept but never followed.
VIRTUAL = ("/proc", "/sys", "/dev", "/run")
PROGS = os.path.join(paths.BUILD, "plain", "tests", "vm", "progs")


def default_files():
    """The build tree's programs tests run in guests: the executables of
    build/plain/tests/vm/progs (those that exist)."""
    try:
        names = sorted(os.listdir(PROGS))
    except OSError:
        return []
    out = []
    for n in names:
        p = os.path.join(PROGS, n)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            out.append(p)
    return out


def _is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


class _Entries:
    """Archive entries in order, parents first: rel path -> ("dir", mode) |
    ("link", target) | ("file", host path)."""

    def __init__(self):
        self.items = {}
        self.errors = []

    def add_host(self, path, hops=0):
        if hops > 40:
            self.errors.append("%s: too many levels of symlinks" % path)
            return
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
            except OSError as err:
                self.errors.append("%s: %s" % (path, err))
                return
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(host)
                self.items.setdefault(rel, ("link", target))
                new = os.path.normpath(os.path.join("/" + cur, target))
                if any(new == v or new.startswith(v + "/") for v in VIRTUAL):
                    return
                self.add_host("/".join([new] + parts[i + 1:]), hops + 1)
                return
            if stat.S_ISDIR(st.st_mode):
                self.items.setdefault(rel, ("dir", stat.S_IMODE(st.st_mode)))
                cur = rel
                if i == len(parts) - 1:
                    for name in sorted(os.listdir(host)):
                        self.add_host(host + "/" + name, hops)
                continue
            if i != len(parts) - 1:
                self.errors.append("%s: %s is not a directory" % (path, host))
                return
            if stat.S_ISREG(st.st_mode):
                self.items.setdefault(rel, ("file", host))
            return


def _manifest():
    try:
        with open(paths.RAMROOT_MANIFEST) as f:
            return set(line.strip() for line in f if line.strip())
    except OSError:
        return set()


def _in_base(path, manifest):
    """Whether the base archive has host path (its directory resolved)."""
    real = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    return real.lstrip("/") in manifest or path.lstrip("/") in manifest


def _libraries(elves, manifest):
    """Host paths of the shared libraries of elves that the base lacks;
    ("missing", name) for those ldd cannot find."""
    if not elves:
        return [], []
    stage_lib = os.path.join(paths.RDMA_STAGE, "usr", "lib", "x86_64-linux-gnu")
    env = dict(os.environ, LC_ALL="C", LD_LIBRARY_PATH=stage_lib)
    p = subprocess.run(["ldd"] + elves, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env)
    libs, missing = set(), []
    for line in p.stdout.splitlines():
        words = line.split()
        if not line.startswith("\t") or not words:
            continue
        if "=>" in words:
            target = words[words.index("=>") + 1]
            if target == "not":
                missing.append(words[0])
                continue
        elif words[0].startswith("/"):
            target = words[0]
        else:
            continue
        stage = os.path.realpath(paths.RDMA_STAGE)
        if os.path.realpath(target).startswith(stage + "/"):
            continue  # the base has the whole stage
        if not _in_base(target, manifest):
            libs.add(target)
    return sorted(libs), missing


def _newc(out, ino, mode, size, name, mtime=0):
    name_b = name.encode() + b"\0"
    hdr = "070701" + "".join("%08X" % v for v in (
        ino, mode, 0, 0, 1, int(mtime), size, 0, 0, 0, 0, len(name_b), 0))
    out.write(hdr.encode() + name_b)
    out.write(b"\0" * (-(110 + len(name_b)) % 4))


def write_cpio(f, entries):
    """Write entries (an _Entries) as an uncompressed newc archive; returns
    the number of bytes of file data."""
    data = 0
    for ino, (rel, e) in enumerate(entries.items.items(), 1):
        if e[0] == "dir":
            _newc(f, ino, stat.S_IFDIR | e[1], 0, rel)
        elif e[0] == "link":
            target = e[1].encode()
            _newc(f, ino, stat.S_IFLNK | 0o777, len(target), rel)
            f.write(target + b"\0" * (-len(target) % 4))
        else:
            st = os.stat(e[1])
            _newc(f, ino, stat.S_IFREG | stat.S_IMODE(st.st_mode), st.st_size, rel, st.st_mtime)
            with open(e[1], "rb") as src:
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    f.write(chunk)
            f.write(b"\0" * (-st.st_size % 4))
            data += st.st_size
    _newc(f, 0, 0, 0, "TRAILER!!!")
    return data


def build_initrd(dest_dir, files=None):
    """Write dest_dir/initrd: a cpio of files (host paths of files or
    directories, default default_files()) with the libraries they need that
    the base lacks, followed by the base archive. Returns (path, summary)."""
    files = default_files() if files is None else list(files)
    manifest = _manifest()
    entries = _Entries()
    for p in files:
        entries.add_host(os.path.abspath(p))
    if entries.errors:
        raise OSError("ram root: cannot add: %s" % "; ".join(entries.errors))
    elves = [e[1] for e in entries.items.values() if e[0] == "file" and _is_elf(e[1])
             and not e[1].endswith(".ko")]
    libs, missing = _libraries(elves, manifest)
    for lib in libs:
        entries.add_host(lib)
    path = os.path.join(dest_dir, "initrd")
    with open(path, "wb") as f:
        data = write_cpio(f, entries)
        f.write(b"\0" * (-f.tell() % 4))
        with open(paths.RAMROOT, "rb") as base:
            while True:
                chunk = base.read(1 << 20)
                if not chunk:
                    break
                f.write(chunk)
    summary = "ram root %s + %d file(s) of the build tree (%d KiB%s)" % (
        os.path.basename(paths.RAMROOT), sum(1 for e in entries.items.values() if e[0] == "file"),
        data // 1024, ", libraries the base lacks: %s" % " ".join(libs) if libs else "")
    if missing:
        summary += "; ldd found no %s" % " ".join(sorted(set(missing)))
    return path, summary
