"""The build backend of the ratelua package (PEP 517 and PEP 660), with the
standard library only, so that building needs nothing to download:

    pip install ./python              # offline too: nothing to fetch
    python3 -m build python --outdir dist

It writes only the wheel or sdist it is asked for, into the folder it is
given: no build/ or ratelua.egg-info/ left next to pyproject.toml. The
archives' entries are sorted, with fixed timestamps.

It reads [project] from pyproject.toml: name, version, description,
readme, requires-python, dependencies, license (an SPDX expression) and
license-files."""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = "ratelua"
# The files of the package: its modules, the marker of its types, and the
# scripts with their manifest.
_PACKAGE_FILES = re.compile(r"^ratelua/([^/]+\.py|py\.typed|lua/[^/]+\.lua|lua/manifest\.json)$")
# What an sdist holds besides the package.
_SDIST_FILES = ("pyproject.toml", "README.md", "backend/ratelua_build.py")
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _project():
    with open(os.path.join(_ROOT, "pyproject.toml"), "rb") as f:
        text = f.read().decode("utf-8")
    try:
        import tomllib
    except ImportError:  # Python before 3.11: the few forms pyproject.toml uses
        return _parse_project(text)
    return tomllib.loads(text)["project"]


def _parse_project(text):
    """[project]'s `key = "string"` and one-line `key = ["a", "b"]` entries."""
    project, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
            continue
        m = re.match(r'^([\w-]+)\s*=\s*(.+)$', line)
        if section != "project" or not m:
            continue
        key, value = m.group(1), m.group(2).strip()
        if value.startswith("["):
            project[key] = re.findall(r'"([^"]*)"', value)
        elif value.startswith('"'):
            project[key] = value[1:value.index('"', 1)]
    return project


def _metadata():
    p = _project()
    lines = [
        "Metadata-Version: 2.4",
        f"Name: {p['name']}",
        f"Version: {p['version']}",
        f"Summary: {p.get('description', '')}",
    ]
    if p.get("license"):
        lines.append(f"License-Expression: {p['license']}")
    for name in _license_files(p):
        lines.append(f"License-File: {name}")
    if p.get("requires-python"):
        lines.append(f"Requires-Python: {p['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    readme = p.get("readme")
    body = ""
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(_ROOT, readme), encoding="utf-8") as f:
            body = f.read()
    return p, ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def _license_files(p):
    names = p.get("license-files", [])
    for name in names:
        if not os.path.isfile(os.path.join(_ROOT, name)):
            raise FileNotFoundError(f"ratelua build: license-files names {name}, which is not in {_ROOT} (make generate copies the repository's LICENSE)")
    return names


def _package_files():
    out = []
    for folder, dirs, files in os.walk(os.path.join(_ROOT, _PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            rel = os.path.relpath(os.path.join(folder, name), _ROOT).replace(os.sep, "/")
            if _PACKAGE_FILES.match(rel):
                out.append(rel)
    if not any(r.endswith("manifest.json") for r in out):
        raise FileNotFoundError(f"ratelua build: no {_PACKAGE}/lua/manifest.json in {_ROOT} (make generate writes it)")
    return sorted(out)


def _read(rel):
    with open(os.path.join(_ROOT, rel), "rb") as f:
        return f.read()


def _dist_info(p):
    return f"{p['name']}-{p['version']}.dist-info"


def _wheel(wheel_directory, files):
    """Write a py3-none-any wheel of files (archive name -> bytes)."""
    p, metadata = _metadata()
    info = _dist_info(p)
    files = dict(files)
    files[f"{info}/METADATA"] = metadata
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: ratelua_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    for name in _license_files(p):
        files[f"{info}/licenses/{name}"] = _read(name)
    record = []
    for name, data in sorted(files.items()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = f"{p['name']}-{p['version']}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as z:
        # RECORD last, as the wheel format recommends.
        for name in sorted(files, key=lambda n: (n.endswith("/RECORD"), n)):
            zi = zipfile.ZipInfo(name, _EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, files[name])
    return wheel_name


def get_requires_for_build_wheel(config_settings=None):
    """Nothing: the backend needs only the standard library."""
    return []


get_requires_for_build_sdist = get_requires_for_build_wheel
get_requires_for_build_editable = get_requires_for_build_wheel


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """The .dist-info folder, without the wheel."""
    p, metadata = _metadata()
    info = os.path.join(metadata_directory, _dist_info(p))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "wb") as f:
        f.write(metadata)
    return _dist_info(p)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """The wheel: the package's modules, py.typed and the scripts."""
    return _wheel(wheel_directory, {rel: _read(rel) for rel in _package_files()})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable wheel (pip install -e): a .pth file naming this folder."""
    return _wheel(wheel_directory, {f"__editable__.{_PACKAGE}.pth": (_ROOT + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    """The sdist: pyproject.toml, the README, the licence, this backend and
    the package, with PKG-INFO."""
    p, metadata = _metadata()
    base = f"{p['name']}-{p['version']}"
    files = {rel: _read(rel) for rel in (*_SDIST_FILES, *_license_files(p), *_package_files())}
    files["PKG-INFO"] = metadata
    name = f"{base}.tar.gz"
    with open(os.path.join(sdist_directory, name), "wb") as out:
        with tarfile.open(fileobj=out, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
            for rel in sorted(files):
                ti = tarfile.TarInfo(f"{base}/{rel}")
                ti.size, ti.mode, ti.mtime = len(files[rel]), 0o644, 315532800
                tar.addfile(ti, io.BytesIO(files[rel]))
    return name
