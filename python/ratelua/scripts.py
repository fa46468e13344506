"""The scripts this package carries (the newest version of each, copied from
the repository's lua/ by make generate), by name."""

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Dict

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

    def __str__(self) -> str:
        return f"{self.name}@v{self.version}"


def load(folder: str = _FOLDER) -> Dict[str, Script]:
    """The scripts of folder/manifest.json, checked against their SHA1."""
    with open(os.path.join(folder, "manifest.json"), "rb") as f:
        manifest = json.load(f)
    scripts = {}
    for s in manifest["scripts"]:
        with open(os.path.join(folder, s["file"]), "rb") as f:
            source = f.read()
        if hashlib.sha1(source).hexdigest() != s["sha1"]:
            raise ValueError(f"ratelua: {s['file']}: its SHA1 is not the manifest's {s['sha1']}")
        scripts[s["name"]] = Script(s["name"], s["version"], s.get("state_version", s["version"]), s["sha1"],
                                    source, s["function"], s["library"])
    return scripts


def library_source(script: Script, folder: str = _FOLDER) -> bytes:
    """The Functions library that registers script's function."""
    with open(os.path.join(folder, script.library), "rb") as f:
        return f.read()


SCRIPTS = load()
