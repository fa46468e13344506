"""The Python side of TestClientAddrDifferential: reads cases (JSON, one a
line, as in testdata/clientaddr.json) from stdin and writes what
ratelua.clientaddr answers, one a line; a line {"flush": true} flushes."""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from ratelua.clientaddr import OptionError, Resolver  # noqa: E402


def answer(case):
    o = case["options"]
    try:
        r = Resolver(trusted_proxies=o["trusted_proxies"] or [], proxy_header=o["proxy_header"],
                     ipv4_prefix=o["ipv4_prefix"], ipv6_prefix=o["ipv6_prefix"])
    except OptionError as err:
        return {"key": "", "error": {"option": err.option, "index": err.index}}
    return {"key": r.key(case["peer"], case["fields"])}


def main():
    out = sys.stdout
    for line in sys.stdin:
        case = json.loads(line)
        if case.get("flush"):
            out.flush()
            continue
        try:
            a = answer(case)
        except Exception as err:  # an exception is an answer Go compares
            a = {"key": "", "exception": f"{type(err).__name__}: {err}"}
        out.write(json.dumps(a) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
