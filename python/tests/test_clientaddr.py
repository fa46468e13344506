"""Every case of testdata/clientaddr.json, written by Go's clientaddr: the
Python resolver (ratelua.clientaddr, which the ASGI middleware uses) gives
the same key, or refuses the same option. No server needed."""

import json
import os

import pytest

from ratelua.clientaddr import OptionError, Resolver

VECTORS = os.environ.get("RATELUA_CLIENTADDR_VECTORS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata", "clientaddr.json")

with open(VECTORS, encoding="utf-8") as f:
    CASES = json.load(f)["cases"]


def answer(case):
    """What the Python resolver answers to a case, in the table's form."""
    o = case["options"]
    try:
        r = Resolver(trusted_proxies=o["trusted_proxies"] or [], proxy_header=o["proxy_header"],
                     ipv4_prefix=o["ipv4_prefix"], ipv6_prefix=o["ipv6_prefix"])
    except OptionError as err:
        return {"key": "", "error": {"option": err.option, "index": err.index}}
    return {"key": r.key(case["peer"], case["fields"])}


def test_the_table_covers_the_issues():
    names = [c["name"] for c in CASES]
    assert sum(n.startswith("H1") for n in names) >= 3
    assert {c["options"]["ipv6_prefix"] for c in CASES if c["name"].startswith("IPv6 /")} == set(range(1, 129))
    assert any(n.startswith("mapped ::ffff:0.0.0.0/96") for n in names)


@pytest.mark.parametrize("case", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_case(case):
    want = {"key": case["key"]}
    if case.get("error"):
        want = {"key": "", "error": case["error"]}
    assert answer(case) == want, case["name"]
