"""Reads the file sink's Parquet files on S3 with pyarrow, as an analyst
would: every data file under s3://BUCKET/PREFIX (files and directories
starting with "_" or "." skipped, as pyarrow.dataset does), the uuid
column of each, and the hour partition from its Hive path.

usage: pyarrow_s3_check.py ENDPOINT REGION BUCKET PREFIX
(credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)
prints {"uuids": {uuid: count}, "hours": {"topic/year=/month=/day=/hour=": rows}, "files": n}
"""
import json
import os
import sys
from urllib.parse import urlparse

import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

endpoint, region, bucket, prefix = sys.argv[1:5]
u = urlparse(endpoint)
fs = pafs.S3FileSystem(
    endpoint_override=u.netloc,
    scheme=u.scheme,
    region=region,
    access_key=os.environ["AWS_ACCESS_KEY_ID"],
    secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
)
base = f"{bucket}/{prefix}".rstrip("/")
dataset = ds.dataset(base, filesystem=fs, format="parquet", partitioning="hive")
uuids, hours = {}, {}
for path in dataset.files:
    col = pq.read_table(path, filesystem=fs, columns=["uuid"]).column("uuid").to_pylist()
    hour = os.path.dirname(path[len(base) + 1:])
    hours[hour] = hours.get(hour, 0) + len(col)
    for x in col:
        uuids[x] = uuids.get(x, 0) + 1
print(json.dumps({"uuids": uuids, "hours": hours, "files": len(dataset.files)}))
