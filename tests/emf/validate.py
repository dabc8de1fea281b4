"""Validates CloudWatch embedded-metric-format lines (one JSON document per line on
stdin) against schema.json beside this file, then the rules a schema cannot state: every
dimension a directive names is a string member of the root (at most 1,024 characters,
not only whitespace), every metric it names a number or an array of at most 100 numbers
there, and the line within CloudWatch Logs' 1 MB event. Prints `OK N` or every problem,
exit 1. Needs jsonschema (cfn-lint's dependency, in the project's .venv)."""

import json
import os
import sys

import jsonschema

MAX_EVENT_BYTES = 1024 * 1024


def problems_of(line, validator):
    doc = json.loads(line)
    found = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]
    if len(line.encode()) > MAX_EVENT_BYTES:
        found.append(f"{len(line.encode())} bytes: over CloudWatch Logs' event limit")
    if found:
        return found
    for directive in doc["_aws"]["CloudWatchMetrics"]:
        for dimension in (d for ds in directive["Dimensions"] for d in ds):
            value = doc.get(dimension)
            if not isinstance(value, str) or not value.strip() or len(value) > 1024:
                found.append(f"dimension {dimension}: {value!r} is not a string value of the root")
        for metric in directive["Metrics"]:
            value = doc.get(metric["Name"])
            numbers = value if isinstance(value, list) else [value]
            if not numbers or len(numbers) > 100 or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
                found.append(f"metric {metric['Name']}: {value!r} is not a number or up to 100 numbers")
    return found


def main():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
    bad = [(n, p) for n, l in enumerate(lines, 1) for p in problems_of(l, validator)]
    for n, p in bad:
        print(f"line {n}: {p}")
    if bad or not lines:
        print("no lines" if not lines else f"{len(bad)} problems")
        return 1
    print(f"OK {len(lines)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
