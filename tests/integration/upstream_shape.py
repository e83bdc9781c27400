# SPDX-License-Identifier: MIT
"""The shape of a JSON reply, for tests/integration/upstream-cli.sh and its fixtures.

    python3 upstream_shape.py shape <doc.json        # print the shape (to write a fixture)
    python3 upstream_shape.py check FIXTURE <doc.json  # exit 1 naming each difference

A shape is the document with every scalar replaced by its type ("<string>", "<number>",
"<bool>", "<null>"), except the stable fields of STABLE at the top level (status, exit_code,
kind, ...), which keep their values; a list is the shape of its first element (an empty list
matches any list); free-form objects (attributes, details, env) are "<object>". Ids, times,
sizes and trace ids thus drop out and what stays is the keys and the types.

Checking: the keys of every object must be the fixture's; a key written "name?" in the fixture
may be missing. A fixture value "<null>", or a null in the document, matches any type (a field
that is null in one run and set in another: a version, a sample). A placeholder matches any
value of its type; any other fixture value must be equal.
"""
import json
import sys

STABLE = {"status", "exit_code", "kind", "implicit_session", "ok", "final", "format", "complete"}
OPAQUE = {"attributes", "details", "env", "args"}


def scalar_type(v):
    if v is None:
        return "<null>"
    if isinstance(v, bool):
        return "<bool>"
    if isinstance(v, (int, float)):
        return "<number>"
    if isinstance(v, str):
        return "<string>"
    return "<object>"


def shape(v, top=True):
    if isinstance(v, dict):
        out = {}
        for k in sorted(v):
            if k in OPAQUE and isinstance(v[k], dict):
                out[k] = "<object>"
            elif top and k in STABLE and not isinstance(v[k], (dict, list)):
                out[k] = v[k]
            else:
                out[k] = shape(v[k], top=False)
        return out
    if isinstance(v, list):
        return [shape(v[0], top=False)] if v else []
    return scalar_type(v)


def is_placeholder(v):
    return isinstance(v, str) and v.startswith("<") and v.endswith(">")


def compare(fix, got, path, errors):
    if fix == "<null>" or got == "<null>" or got is None:
        return
    if isinstance(fix, dict):
        if not isinstance(got, dict):
            errors.append(f"{path}: an object in the fixture, {json.dumps(got)} here")
            return
        want = {k.rstrip("?"): k.endswith("?") for k in fix}
        for k in sorted(set(got) - set(want)):
            errors.append(f"{path}.{k}: not in the fixture")
        for k, optional in sorted(want.items()):
            if k not in got:
                if not optional:
                    errors.append(f"{path}.{k}: missing")
                continue
            compare(fix[k + "?" if optional else k], got[k], f"{path}.{k}", errors)
        return
    if isinstance(fix, list):
        if not isinstance(got, list):
            errors.append(f"{path}: a list in the fixture, {json.dumps(got)} here")
        elif fix and got:
            compare(fix[0], got[0], f"{path}[0]", errors)
        return
    if is_placeholder(fix):
        if fix != (got if is_placeholder(got) else scalar_type(got)):
            errors.append(f"{path}: {fix} in the fixture, {json.dumps(got)} here")
        return
    if fix != got:
        errors.append(f"{path}: {json.dumps(fix)} in the fixture, {json.dumps(got)} here")


def main():
    doc = json.load(sys.stdin)
    if sys.argv[1] == "shape":
        print(json.dumps(shape(doc), indent=2, sort_keys=True))
        return 0
    with open(sys.argv[2]) as f:
        fixture = json.load(f)
    errors = []
    compare(fixture, shape(doc), "$", errors)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
