#!/usr/bin/env python3
"""Reads the file sink's Parquet output with DuckDB, a reader nobody here wrote.

  duckdb_check.py ROOT TOPIC UUID MIXED_TOPIC

Prints one JSON object with the answers of the queries below; the Go test
(TestDuckDB) checks them.
"""
import json
import sys

import duckdb


def main():
    root, topic, uuid, mixed = sys.argv[1:5]
    con = duckdb.connect()
    glob = f"{root}/{topic}/**/*.parquet"
    out = {"duckdb": duckdb.__version__}

    count, distinct = con.execute(
        "SELECT count(*), count(DISTINCT uuid) FROM read_parquet(?, hive_partitioning=true)",
        [glob]).fetchone()
    out["count"], out["distinct"] = count, distinct

    row = con.execute(
        "SELECT event.nested.depth.level, event.nested.label, event.count, event.ratio, event.ok, "
        "event.tags, year, month, day, hour "
        "FROM read_parquet(?, hive_partitioning=true) WHERE uuid = ?", [glob, uuid]).fetchone()
    out["row"] = list(row) if row else None

    out["per_hour"] = con.execute(
        "SELECT hour, count(*) FROM read_parquet(?, hive_partitioning=true) GROUP BY hour ORDER BY hour",
        [glob]).fetchall()

    # Zero-padded partition values ("08") are read as VARCHAR unless typed.
    out["typed_hours"] = con.execute(
        "SELECT min(hour), max(hour), typeof(min(hour)) FROM read_parquet(?, hive_partitioning=true, "
        "hive_types={'year': INTEGER, 'month': INTEGER, 'day': INTEGER, 'hour': INTEGER})",
        [glob]).fetchone()

    out["types"] = dict(con.execute(
        "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?, hive_partitioning=true))",
        [glob]).fetchall())

    out["stats"] = [list(r) for r in con.execute(
        "SELECT path_in_schema, stats_min_value, stats_max_value, stats_null_count "
        "FROM parquet_metadata(?) WHERE path_in_schema IN ('event, count', 'uuid', 'event, nested, label')",
        [glob]).fetchall()]

    m = con.execute(
        "SELECT count(*), count(event.added), count(DISTINCT revision) "
        "FROM read_parquet(?, hive_partitioning=true, union_by_name=true)",
        [f"{root}/{mixed}/**/*.parquet"]).fetchone()
    out["mixed"] = list(m)

    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()
