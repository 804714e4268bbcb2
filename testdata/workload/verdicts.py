#!/usr/bin/env python3
"""verdicts.py < out.jsonl

Counts the verdicts in the output of `eventlogging process --from ... --to -`
(one JSON record {"topic", "key", "value"} a line) and prints them with the
workload README's digest: sha256 of the sorted uuids of the valid events,
32 lower-case hex each, concatenated.

A valid event appears twice, in eventlogging_<Schema> and in the mixed topic
(eventlogging-valid-mixed); it is counted once, from its schema topic. An
invalid one is one record in eventlogging_EventError. Python 3 standard
library only.
"""

import hashlib
import json
import sys

ERROR_TOPIC = "eventlogging_EventError"
MIXED_TOPIC = "eventlogging-valid-mixed"


def main():
    valid_by_schema = {}
    uuids = []
    invalid = mixed = 0
    for line in sys.stdin.buffer:
        rec = json.loads(line)
        topic, value = rec["topic"], rec["value"]
        if topic == ERROR_TOPIC:
            invalid += 1
        elif topic == MIXED_TOPIC:
            mixed += 1
        else:
            valid_by_schema[value["schema"]] = \
                valid_by_schema.get(value["schema"], 0) + 1
            uuids.append(value["uuid"])
    uuids.sort()
    if len(set(uuids)) != len(uuids):
        sys.stderr.write("verdicts: duplicate uuids\n")
    result = {
        "valid": len(uuids),
        "invalid": invalid,
        "mixed": mixed,
        "valid_by_schema": valid_by_schema,
        "valid_uuid_sha256": hashlib.sha256(
            "".join(uuids).encode("ascii")).hexdigest(),
    }
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
