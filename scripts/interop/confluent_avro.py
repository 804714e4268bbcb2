#!/usr/bin/env python3
"""Confluent's Python client against our schema registry and Kafka.

  produce  --registry URL --brokers B --topic T --schema-file F --record JSON
      registers F (Avro) for subject T-value through our registry, serialises
      RECORD with AvroSerializer and produces it to T; prints {"id": N}.
  consume  --registry URL --brokers B --topic T --count N [--timeout S]
      reads N records of T from the beginning and deserialises each with
      AvroDeserializer (schema fetched from our registry by the id in the wire
      header); prints one JSON line per record.
"""
import argparse
import json
import sys
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def produce(args):
    sr = SchemaRegistryClient({"url": args.registry})
    with open(args.schema_file) as f:
        schema_str = f.read()
    ser = AvroSerializer(sr, schema_str, conf={"auto.register.schemas": True})
    record = json.loads(args.record)
    value = ser(record, SerializationContext(args.topic, MessageField.VALUE))
    p = Producer({"bootstrap.servers": args.brokers, "acks": "all", "enable.idempotence": True})
    errors = []
    p.produce(args.topic, value=value, on_delivery=lambda err, msg: errors.append(err) if err else None)
    p.flush(30)
    if errors:
        sys.exit(f"produce failed: {errors}")
    schema_id = int.from_bytes(value[1:5], "big")
    print(json.dumps({"id": schema_id}))


def consume(args):
    sr = SchemaRegistryClient({"url": args.registry})
    deser = AvroDeserializer(sr)
    c = Consumer({
        "bootstrap.servers": args.brokers,
        "group.id": f"interop-{time.time_ns()}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    c.subscribe([args.topic])
    got = 0
    deadline = time.time() + args.timeout
    try:
        while got < args.count and time.time() < deadline:
            msg = c.poll(1.0)
            if msg is None:
                continue
            if msg.error():
                sys.exit(f"consume error: {msg.error()}")
            value = deser(msg.value(), SerializationContext(args.topic, MessageField.VALUE))
            print(json.dumps(value, sort_keys=True, default=str))
            got += 1
    finally:
        c.close()
    if got < args.count:
        sys.exit(f"read {got} of {args.count} records before the timeout")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("produce", "consume"):
        p = sub.add_parser(name)
        p.add_argument("--registry", required=True)
        p.add_argument("--brokers", required=True)
        p.add_argument("--topic", required=True)
        if name == "produce":
            p.add_argument("--schema-file", required=True)
            p.add_argument("--record", required=True)
        else:
            p.add_argument("--count", type=int, default=1)
            p.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    produce(args) if args.cmd == "produce" else consume(args)


if __name__ == "__main__":
    main()
