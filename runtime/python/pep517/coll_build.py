"""coll_build.py - the PEP 517 build backend of the coll package (pyproject.toml).

Plain Python (zipfile, hashlib): it needs no setuptools or wheel package,
so `pip install runtime/python` works offline, pip's isolated build
environment having nothing to fetch (pyproject.toml: requires = []).

The wheel holds:
  coll/*.py                      the package (runtime/python/coll)
  coll/libcollrt.so              the runtime, and its plugins libcollrt_mpi.so and
  coll/libcollrt_{mpi,ibverbs}.so libcollrt_ibverbs.so, where libcollrt looks for
                                 them first (beside the object holding libcollrt)
  coll/_coll_torch.so            the torch.distributed backend
each native part only where `make` built it, in the source tree's build/
(or the directory given as `--config-settings build=DIR`).  They sit
beside the package's files because that is where _native.py and
distributed.py look first.  A wheel without native parts is pure Python
(py3-none-any) and finds libcollrt.so the usual ways (_native.py); one
with libcollrt.so is for this platform, and one with the torch backend for
this interpreter's ABI too (the extension was compiled against one
Python's headers).

Hooks: build_wheel, build_editable (a .pth that puts runtime/python on
sys.path, so the package and the source tree's build/ are used in place),
get_requires_for_build_wheel and _editable (nothing), and
prepare_metadata_for_build_wheel.  pip runs them with the working directory
at runtime/python (PEP 517), which is how the source tree is found.
"""

import base64
import hashlib
import os
import re
import sys
import sysconfig
import zipfile

NAME = "coll"
SUMMARY = 'Python binding of libcollrt (coll\'s runtime) and the torch.distributed backend "coll"'
NATIVE = [("libcollrt.so", ""), ("libcollrt_mpi.so", ""), ("libcollrt_ibverbs.so", ""),
          ("_coll_torch.so", "python")]   # (file, its folder under the build directory)


def _project():
    """runtime/python: where pip runs the hooks."""
    here = os.path.abspath(os.getcwd())
    if not os.path.isfile(os.path.join(here, "coll", "__init__.py")):
        raise RuntimeError("coll_build: run from runtime/python (found no coll/__init__.py in %s)" % here)
    return here


def _version(project):
    """MAJOR.MINOR of runtime/include/coll.h, as pkg-config's coll.pc has it."""
    path = os.path.join(project, "..", "include", "coll.h")
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise RuntimeError("coll_build: cannot read the version from %s: %s" % (path, e.strerror)) from None
    nums = [re.search(r"#define COLL_VERSION_%s (\d+)" % part, text) for part in ("MAJOR", "MINOR")]
    if not all(nums):
        raise RuntimeError("coll_build: %s has no COLL_VERSION_MAJOR / COLL_VERSION_MINOR" % path)
    return "%s.%s" % (nums[0].group(1), nums[1].group(1))


def _native_parts(project, config_settings):
    """[(path on disk, name in coll/)] of the native parts that exist."""
    given = (config_settings or {}).get("build")
    if given and not os.path.isabs(given):
        # pip runs the hooks in runtime/python, not where it was started
        raise RuntimeError("coll_build: build=%s: give an absolute path (--config-settings build=$PWD/%s)"
                           % (given, given))
    build = os.path.abspath(given or os.path.join(project, "..", "..", "build"))
    if given and not os.path.isdir(build):
        raise RuntimeError("coll_build: build=%s is not a directory" % build)
    out = []
    for name, sub in NATIVE:
        p = os.path.join(build, sub, name)
        if os.path.isfile(p):
            out.append((p, name))
    return out


def _tag(native):
    names = {n for _, n in native}
    if not names:
        return "py3-none-any"
    plat = re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())
    if "_coll_torch.so" in names:
        py = "cp%d%d" % sys.version_info[:2]
        return "%s-%s-%s" % (py, py, plat)
    return "py3-none-%s" % plat


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: >=3.8\n\n"
            "The coll package: a ctypes binding of libcollrt and the torch.distributed backend\n"
            "\"coll\".  numpy and torch are optional and come from the system (Debian's python3-numpy\n"
            "and python3-torch; make the venv with --system-site-packages).  See runtime/README.md\n"
            "of the coll repository, \"Python and PyTorch\".\n" % (NAME, version, SUMMARY))


def _wheel_text(tag):
    purelib = "true" if tag.endswith("-any") else "false"
    return "Wheel-Version: 1.0\nGenerator: coll_build\nRoot-Is-Purelib: %s\nTag: %s\n" % (purelib, tag)


class _Wheel:
    """A zip that records every file for RECORD (PEP 427)."""

    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records = []

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))   # reproducible
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.records.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))

    def close(self, dist_info):
        record = dist_info + "/RECORD"
        text = "\n".join(self.records + [record + ",,"]) + "\n"
        info = zipfile.ZipInfo(record, date_time=(1980, 1, 1, 0, 0, 0))
        info.external_attr = 0o100644 << 16
        self.zip.writestr(info, text)
        self.zip.close()


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _write_dist_info(add, version, tag):
    dist_info = "%s-%s.dist-info" % (NAME, version)
    add(dist_info + "/METADATA", _metadata(version).encode())
    add(dist_info + "/WHEEL", _wheel_text(tag).encode())
    add(dist_info + "/top_level.txt", (NAME + "\n").encode())
    return dist_info


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    version = _version(project)
    tag = _tag(_native_parts(project, config_settings))

    def add(arcname, data):
        p = os.path.join(metadata_directory, arcname)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    return _write_dist_info(add, version, tag)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """The wheel: the package, the native parts that exist, .dist-info."""
    project = _project()
    version = _version(project)
    native = _native_parts(project, config_settings)
    tag = _tag(native)
    name = "%s-%s-%s.whl" % (NAME, version, tag)
    w = _Wheel(os.path.join(wheel_directory, name))
    pkg = os.path.join(project, NAME)
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py"):
            w.add("%s/%s" % (NAME, f), _read(os.path.join(pkg, f)))
    for path, base in native:
        w.add("%s/%s" % (NAME, base), _read(path), 0o755)
    w.close(_write_dist_info(w.add, version, tag))
    return name


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install (pip install -e): a .pth naming runtime/python, so
    the package runs from the tree and finds the tree's build/."""
    project = _project()
    version = _version(project)
    tag = "py3-none-any"
    name = "%s-%s-%s.whl" % (NAME, version, tag)
    w = _Wheel(os.path.join(wheel_directory, name))
    w.add("__editable__.%s.pth" % NAME, (project + "\n").encode())
    w.close(_write_dist_info(w.add, version, tag))
    return name
