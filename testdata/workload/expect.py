#!/usr/bin/env python3
"""expect.py GEN_RAW N SEED > expected.json

What the standard workload generator made, line by line: runs GEN_RAW
(gen_raw.py) in-process for N and SEED, recording which builder and which
invalid kind each line got, and prints the verdicts a correct processor
must reach, as JSON:

  lines, raw_bytes, raw_sha256   of the generated output (= raw.tsv)
  valid, invalid                 line counts
  valid_by_schema                valid lines per schema
  invalid_by_kind                invalid lines per kind
  invalid_lines                  [{line (1-based), kind, schema}] in order
  valid_uuid_sha256              sha256 of the sorted uuids of the valid
                                 lines, 32 lower-case hex each, concatenated

The uuid is DESIGN §3's uuid5(NAMESPACE_URL,
"event://<recvFrom>/?seqId=<seqId>&timestamp=<epoch seconds of %t>"),
computed here with Python's uuid module, independently of the Go code.
gen_raw.py is not changed: its builders and spoil() are wrapped.
Python 3 standard library only.
"""

import calendar
import hashlib
import importlib.util
import io
import json
import sys
import time
import uuid


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    spec = importlib.util.spec_from_file_location("gen_raw", argv[1])
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)

    schemas = []  # schema name of line i
    kinds = {}    # line i -> invalid kind

    def wrap_builder(name, build):
        def wrapped(r):
            schemas.append(name)
            return build(r)
        return wrapped

    for name, build in list(gen.BUILDERS.items()):
        gen.BUILDERS[name] = wrap_builder(name, build)
    spoil = gen.spoil

    def wrapped_spoil(kind, schema, revision, event, r):
        kinds[len(schemas) - 1] = kind
        return spoil(kind, schema, revision, event, r)

    gen.spoil = wrapped_spoil

    out = io.StringIO()
    real_stdout, real_stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, io.StringIO()
    try:
        rc = gen.main(["gen_raw.py", argv[2], argv[3]])
    finally:
        sys.stdout, sys.stderr = real_stdout, real_stderr
    if rc != 0:
        return rc
    raw = out.getvalue().encode("utf-8")
    lines = raw.decode("utf-8").split("\n")[:-1]
    if len(lines) != len(schemas):
        sys.stderr.write("expect: %d lines but %d events built\n"
                         % (len(lines), len(schemas)))
        return 1

    valid_by_schema = {}
    invalid_by_kind = {}
    invalid_lines = []
    uuids = []
    for i, line in enumerate(lines):
        if i in kinds:
            invalid_by_kind[kinds[i]] = invalid_by_kind.get(kinds[i], 0) + 1
            invalid_lines.append({"line": i + 1, "kind": kinds[i],
                                  "schema": schemas[i]})
            continue
        valid_by_schema[schemas[i]] = valid_by_schema.get(schemas[i], 0) + 1
        fields = line.split("\t")
        recv_from, seq_id, ts = fields[1], int(fields[2]), fields[3]
        epoch = calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%S"))
        url = "event://%s/?seqId=%d&timestamp=%s" % (recv_from, seq_id,
                                                    str(epoch)[:10])
        uuids.append(uuid.uuid5(uuid.NAMESPACE_URL, url).hex)
    uuids.sort()

    result = {
        "generator": "gen_raw.py %s %s" % (argv[2], argv[3]),
        "lines": len(lines),
        "raw_bytes": len(raw),
        "raw_sha256": hashlib.sha256(raw).hexdigest(),
        "valid": len(lines) - len(invalid_lines),
        "invalid": len(invalid_lines),
        "valid_by_schema": valid_by_schema,
        "invalid_by_kind": invalid_by_kind,
        "valid_uuid_sha256": hashlib.sha256(
            "".join(uuids).encode("ascii")).hexdigest(),
        "invalid_lines": invalid_lines,
    }
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
