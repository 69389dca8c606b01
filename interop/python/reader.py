"""A Python service reading the leaderboard that `sharded` (Rust) wrote: its own scatter-gather
over every shard of a game (keys from sharded_keys.py and the entity's spec, written by hand as a
service would), a k-way merge by sort key, newest-best first, and each score's `likes` counter
summed over its shards. Prints one JSON line per record, in merged order.

    python reader.py --endpoint http://127.0.0.1:8000 --table scores --game g1 --game "g 2#"

Credentials and region come from boto3's usual environment (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION)."""

import argparse
import heapq
import json
import sys

import boto3

import sharded_keys as sk

# The Rust declaration, as a spec:
#   #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
#   #[sk(template = "SCORE#{score}#{player_id}")]
#   #[counter(name = "likes", n = 4)]
#   struct Score { game_id: String, player_id: String, score: u64, at: DateTime<Utc> }
SCORE = {
    "entity": "Score",
    "tag": {"attribute": "_entity", "value": "Score"},
    "fields": [
        {"name": "game_id", "attribute": "game_id", "type": "string"},
        {"name": "player_id", "attribute": "player_id", "type": "string"},
        {"name": "score", "attribute": "score", "type": "u64"},
        {"name": "at", "attribute": "at", "type": "datetime"},
    ],
    "pk": {"attribute": "pk", "template": "GAME#{game_id}",
           "sharding": {"kind": "hash", "fields": ["player_id"], "n": 10}, "suffix": "#{shard}"},
    "sk": {"attribute": "sk", "template": "SCORE#{score}#{player_id}"},
    "gsis": [],
    "counters": [{"name": "likes", "n": 4}],
}


def shard_items(client, table, pk_attribute, partition):
    """Every item of one partition, best first (descending sort key), page after page."""
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


def batch_get(client, table, keys):
    """Every item of ``keys`` that exists, asking again for what DynamoDB left unprocessed."""
    items, request = [], {table: {"Keys": keys}}
    while request:
        got = client.batch_get_item(RequestItems=request)
        items += got["Responses"].get(table, [])
        request = got.get("UnprocessedKeys") or {}
    return items


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--game", action="append", required=True)
    args = parser.parse_args()
    client = boto3.client("dynamodb", endpoint_url=args.endpoint)
    entity = sk.Entity(SCORE)
    sk_attribute = SCORE["sk"]["attribute"]
    tag = SCORE["tag"]
    for game in args.game:
        partitions = entity.partitions({"game_id": game})
        # Items of other entities may share a partition: only the tag says which are ours.
        shards = [
            (item for item in shard_items(client, args.table, SCORE["pk"]["attribute"], p)
             if item.get(tag["attribute"]) == {"S": tag["value"]})
            for p in partitions
        ]
        # A k-way merge of the descending shards: DynamoDB orders sort keys by UTF-8 bytes,
        # which for text is code point order, Python's string order.
        for item in heapq.merge(*shards, key=lambda i: i[sk_attribute]["S"], reverse=True):
            record = entity.record(item)
            counter = entity.counter("likes", record)
            likes = counter.total(batch_get(client, args.table, [sk.to_dynamo_item(k) for k in counter.keys()]))
            print(json.dumps({
                "game_id": record["game_id"],
                "player_id": record["player_id"],
                "score": str(record["score"]),
                "at": sk.timestamp_attribute(record["at"]),
                "likes": likes,
            }, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
