"""A Python service sharing a table with `sharded` (Rust): keys, shards, tag and recognition
from sharded_keys.py and the entity's spec (as the Rust side generates it in
interop/vectors.json), sent with boto3's low-level client. The shared-table test
(tests/dynamodb/interop.rs) runs it both ways:

    python service.py write --endpoint URL --table T --entity ActivePlayer < records
        Each line on stdin is a record's fields in DynamoDB JSON (as serde stores them); each
        is written as the item the module builds (PutItem). Prints how many it wrote.
    python service.py read --endpoint URL --table T --entity Score \\
            --partition '{"game_id": {"S": "g1"}}' [--counter likes]
        Queries every partition of the logical key (each shard, largest sort keys first, page
        after page), keeps the entity's items by the table's recognition (others are skipped
        and counted on stderr), merges the shards by sort key (a k-way merge), and prints one
        JSON line per record: {"item": the item the module would write, "counters": {..}}.

Credentials and region come from boto3's usual environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION)."""

import argparse
import heapq
import json
import pathlib
import sys

import boto3

import sharded_keys as sk

VECTORS = pathlib.Path(__file__).resolve().parent.parent / "vectors.json"


def entity_spec(vectors: pathlib.Path, name: str):
    """The spec of ``name`` among the entities of the vectors file."""
    for entry in json.loads(vectors.read_text("utf-8"))["entities"]:
        if entry["spec"]["entity"] == name:
            return entry["spec"]
    raise SystemExit(f"no entity {name} in {vectors}")


def write(client, table: str, entity: sk.Entity) -> None:
    written = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        record = entity.decode(json.loads(line))
        client.put_item(TableName=table, Item=entity.dynamo_item(record))
        written += 1
    print(json.dumps({"written": written}))


def partition_items(client, table: str, pk_attribute: str, partition: str):
    """Every item of one partition, largest sort key first, page after page."""
    kwargs = {
        "TableName": table,
        "KeyConditionExpression": "#pk = :pk",
        "ExpressionAttributeNames": {"#pk": pk_attribute},
        "ExpressionAttributeValues": {":pk": {"S": partition}},
        "ScanIndexForward": False,
    }
    while True:
        page = client.query(**kwargs)
        yield from page["Items"]
        if "LastEvaluatedKey" not in page:
            return
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def batch_get(client, table: str, keys):
    """Every item of ``keys`` that exists, asking again for what DynamoDB left unprocessed."""
    items, request = [], {table: {"Keys": keys}}
    while request:
        got = client.batch_get_item(RequestItems=request)
        items += got["Responses"].get(table, [])
        request = got.get("UnprocessedKeys") or {}
    return items


def read(client, table: str, entity: sk.Entity, partition: str, counter) -> None:
    values = entity.decode(json.loads(partition), partial=True)
    sk_attribute = entity.spec["sk"]["attribute"] if entity.spec.get("sk") else None
    foreign = 0

    def ours(pk: str):
        nonlocal foreign
        for item in partition_items(client, table, entity.spec["pk"]["attribute"], pk):
            try:
                yield entity.dynamo_item(entity.record(item))
            except sk.NotOurs as e:
                if e.reason != "other_entity":
                    foreign += 1

    # DynamoDB orders string sort keys by their UTF-8 bytes; so does comparing the encodings.
    def by_bytes(item):
        return item[sk_attribute]["S"].encode("utf-8") if sk_attribute else b""

    shards = [ours(pk) for pk in entity.partitions(values)]
    for item in heapq.merge(*shards, key=by_bytes, reverse=True):
        counters = {}
        if counter:
            c = entity.counter(counter, entity.record(item))
            counters[counter] = str(c.total(batch_get(client, table, [sk.to_dynamo_item(k) for k in c.keys()])))
        print(json.dumps({"item": item, "counters": counters}, ensure_ascii=False))
    print(f"service.py: {foreign} foreign items skipped", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["write", "read"])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--entity", required=True)
    parser.add_argument("--vectors", type=pathlib.Path, default=VECTORS)
    parser.add_argument("--partition", help="read: the partition key's fields, in DynamoDB JSON")
    parser.add_argument("--counter", help="read: a counter of each record to total")
    args = parser.parse_args()
    client = boto3.client("dynamodb", endpoint_url=args.endpoint)
    entity = sk.Entity(entity_spec(args.vectors, args.entity))
    if args.command == "write":
        write(client, args.table, entity)
    else:
        if args.partition is None:
            parser.error("read needs --partition")
        read(client, args.table, entity, args.partition, args.counter)
    return 0


if __name__ == "__main__":
    sys.exit(main())
