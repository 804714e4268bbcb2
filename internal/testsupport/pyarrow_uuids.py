"""Reads the file sink's Parquet output with pyarrow, as an analyst would,
and prints what it holds: {"uuids": {uuid: count}, "hours": {hour dir: rows},
"files": n}. Files and directories starting with "_" or "." are skipped, as
pyarrow.dataset does.

usage: pyarrow_uuids.py s3 ENDPOINT REGION BUCKET PREFIX   (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)
       pyarrow_uuids.py local DIR
"""
import json
import os
import sys
from urllib.parse import urlparse

import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

if sys.argv[1] == "s3":
    endpoint, region, bucket, prefix = sys.argv[2:6]
    u = urlparse(endpoint)
    fs = pafs.S3FileSystem(endpoint_override=u.netloc, scheme=u.scheme, region=region,
                           access_key=os.environ["AWS_ACCESS_KEY_ID"],
                           secret_key=os.environ["AWS_SECRET_ACCESS_KEY"])
    base = f"{bucket}/{prefix}".rstrip("/")
else:
    fs = pafs.LocalFileSystem()
    base = sys.argv[2].rstrip("/")
dataset = ds.dataset(base, filesystem=fs, format="parquet", partitioning="hive")
uuids, hours = {}, {}
for path in dataset.files:
    col = pq.read_table(path, filesystem=fs, columns=["uuid"]).column("uuid").to_pylist()
    hour = os.path.dirname(path[len(base) + 1:])
    hours[hour] = hours.get(hour, 0) + len(col)
    for x in col:
        uuids[x] = uuids.get(x, 0) + 1
print(json.dumps({"uuids": uuids, "hours": hours, "files": len(dataset.files)}))
