"""The scripts this package carries (every released version, copied from the
repository's lua/ by make generate), by name and version. The newest
version of each script is the default; an older one can be pinned with a
limiter's version option, as Go's Options.Version."""

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from .errors import LimitError

_FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lua")


@dataclass(frozen=True)
class Script:
    """One released script version: its contract's names and exact bytes."""

    name: str
    version: int
    state_version: int
    sha1: str
    source: bytes
    function: str
    library: str
    #: The contract's ARGV lines (the manifest's "argv").
    argv: Tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.name}@v{self.version}"


def load(folder: str = _FOLDER) -> Dict[Tuple[str, int], Script]:
    """The scripts of folder/manifest.json, checked against their SHA1."""
    with open(os.path.join(folder, "manifest.json"), "rb") as f:
        manifest = json.load(f)
    scripts = {}
    for s in manifest["scripts"]:
        with open(os.path.join(folder, s["file"]), "rb") as f:
            source = f.read()
        if hashlib.sha1(source).hexdigest() != s["sha1"]:
            raise ValueError(f"ratelua: {s['file']}: its SHA1 is not the manifest's {s['sha1']}")
        scripts[(s["name"], s["version"])] = Script(s["name"], s["version"], s.get("state_version", s["version"]), s["sha1"],
                                    source, s["function"], s["library"], tuple(s.get("argv", ())))
    return scripts


def library_source(script: Script, folder: str = _FOLDER) -> bytes:
    """The Functions library that registers script's function."""
    with open(os.path.join(folder, script.library), "rb") as f:
        return f.read()


SCRIPTS = load()


def versions(name: str) -> list:
    """The versions of script name this package carries, oldest first."""
    return sorted(v for (n, v) in SCRIPTS if n == name)


def lookup(name: str, version: Optional[int] = None) -> Script:
    """Script name at version; None (or 0) is the newest. A version this
    package does not carry is a LimitError naming the field Version."""
    known = versions(name)
    if version is None or (version == 0 and not isinstance(version, bool)):
        return SCRIPTS[(name, known[-1])]
    if not isinstance(version, int) or isinstance(version, bool) or version not in known:
        raise LimitError(-1, "Version", f"{name} has versions {', '.join(map(str, known))} (None: the newest), got {version!r}")
    return SCRIPTS[(name, version)]
