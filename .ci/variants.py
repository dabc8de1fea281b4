#!/usr/bin/env python3
"""One variant of each crate, but for the function's own: reads the `--message-format=json`
lines of two cargo builds, the test build (the CLI's world: core, lab, CLI, tests, with
the CLI's features) and the function's build (`-p s3sweep-lambda`, as it ships and as
`cargo lambda watch` builds it), and fails naming every crate the function's build
compiled in a variant the test build does not have, except ALLOWED: aws-config without
`sso` and `credentials-process`, and our two crates above it (s3sweep-aws, the
function). Any other second variant (a feature one build turns on and the other does
not) would be compiled again, in the middle of a test run, for nothing. The core must
be shared: it has no aws-config (about 17 s of a clean build's CPU when it had).

Fresh and compiled units both print their artifacts, so the check holds on a warm tree
as on a clean one: a unit's variant is its file name's hash (`-C metadata`).

    python3 .ci/variants.py TEST_BUILD.json FUNCTION_BUILD.json
"""

import json
import os
import sys

# The function's build differs from the CLI's here, and only here: aws-config without
# the SSO providers, and what is compiled against it.
ALLOWED = {"aws-config", "s3sweep-aws", "s3sweep-lambda"}
# ...and it must differ there, or the function carries the CLI's SSO providers.
MUST_DIFFER = {"aws-config"}


def variants(path):
    """{package name: {artifact file name}} of every unit a build printed."""
    out = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if msg.get("reason") != "compiler-artifact":
                continue
            # "registry+https://...#name@1.2.3" or "path+file:///...#name@0.1.0"
            pid = msg["package_id"]
            name = pid.rsplit("#", 1)[-1].split("@")[0]
            if "/" in name:  # "path+file:///x/name#0.1.0": the folder's name
                name = pid.split("#")[0].rstrip("/").rsplit("/", 1)[-1]
            if msg["target"]["kind"] == ["custom-build"] or msg["profile"]["test"]:
                continue
            files = {os.path.basename(f) for f in msg["filenames"] if "/deps/" in f or f.endswith((".rlib", ".rmeta", ".so"))}
            out.setdefault(name, set()).update(files)
    return out


def main():
    test_build, function_build = (variants(p) for p in sys.argv[1:3])
    if not function_build:
        sys.exit(f"{sys.argv[2]}: no artifacts read")
    extra = sorted(
        name for name, files in function_build.items() if name in test_build and not files <= test_build[name]
    )
    bad = [n for n in extra if n not in ALLOWED]
    same = sorted(MUST_DIFFER - set(extra))
    if bad:
        print(
            "make test: the function's build (cargo build -p s3sweep-lambda, what cargo lambda watch builds) "
            "compiles a second variant of these crates, whose features differ from the test build's: "
            "give them the same features (one entry in [workspace.dependencies]): " + ", ".join(bad)
        )
    if "s3sweep-core" in bad:
        print("make test: the core is compiled twice: it must not depend on aws-config "
              "(s3sweep-aws loads the shared configuration for it)")
    if same:
        print("make test: the function's build shares the CLI's variant of " + ", ".join(same)
              + ": it carries the CLI's SSO providers (aws-config's `sso` feature)")
    if bad or same:
        sys.exit(1)
    print(f"make test: one variant of each crate; the function's own: {', '.join(extra)}")


if __name__ == "__main__":
    main()
