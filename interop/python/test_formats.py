"""The table's own names and formats, ahead of the Rust side: shard suffix formats, key
attribute names, a renamed or absent tag, counters with another sort key and attribute.
Expected shards come from the hash spec's documented vectors ("p1" mod 10 = 7; the identity
GAME#g1#SCORE#00000000000000000042#p1 mod 4 = 3), not from this module."""

import datetime as dt
import unittest

import sharded_keys as sk

FIELDS = [
    {"name": "game_id", "attribute": "gameId", "type": "string"},
    {"name": "player_id", "attribute": "playerId", "type": "string"},
    {"name": "score", "attribute": "score", "type": "u64"},
]


def spec(tag):
    return {
        "entity": "Score",
        "tag": tag,
        "fields": FIELDS,
        "pk": {"attribute": "PK", "template": "GAME#{game_id}",
               "sharding": {"kind": "hash", "fields": ["player_id"], "n": 10}, "suffix": "#SHARD_{shard}"},
        "sk": {"attribute": "SK", "template": "SCORE#{score}#{player_id}"},
        "gsis": [{
            "kind": "string", "number": 1, "index": "GSI1",
            "pk": {"attribute": "GSI1PK", "template": "PLAYER#{player_id}",
                   "sharding": {"kind": "identity", "n": 4}, "suffix": "#{shard:02}"},
            "sk": {"attribute": "GSI1SK", "template": "GAME#{game_id}"},
        }],
        "counters": [{"name": "likes", "n": 3, "suffix": "#SHARD#{shard}", "sort_key": "METADATA",
                      "attribute": "votes", "tag": None}],
    }


RECORD = {"gameId": "g1", "playerId": "p1", "score": 42}


class Suffixes(unittest.TestCase):
    def test_round_trips(self):
        for fmt, n, shard, physical in [
            ("#{shard}", 10, 7, "GAME#g1#7"),
            ("#SHARD_{shard}", 10, 7, "GAME#g1#SHARD_7"),
            ("#SHARD#{shard}", 100, 42, "GAME#g1#SHARD#42"),
            ("#{shard:02}", 10, 3, "GAME#g1#03"),
            ("#S_{shard:04}", 1000, 999, "GAME#g1#S_0999"),
        ]:
            suffix = sk.ShardSuffix(fmt)
            self.assertEqual(suffix.apply("GAME#g1", shard), physical)
            self.assertEqual(suffix.parse(physical, n), ("GAME#g1", shard))
        self.assertEqual(sk.ShardSuffix("#SHARD_{shard}").parse("GAME#42#SHARD_5", 10), ("GAME#42", 5))
        self.assertEqual(sk.ShardSuffix().parse("GAME#42#5", 10), ("GAME#42", 5))

    def test_refusals(self):
        for bad in ["SHARD_{shard}", "#S1{shard}", "#{shard:05}", "#{shard:2}", "#{shard}x", "#{shard", "#{id}", "",
                    "#{shard:00}"]:
            with self.assertRaises(sk.ShardedKeyError, msg=bad):
                sk.ShardSuffix(bad)
        for key in ["GAME#g1#3", "GAME#g1#003", "GAME#g1#10", "GAME#g1_03", "GAME#g1#"]:
            with self.assertRaises(sk.ShardedKeyError, msg=key):
                sk.ShardSuffix("#{shard:02}").parse(key, 10)
        for key in ["GAME#g1#SHARD_03", "GAME#g1#7", "GAME#g1#SHARD_", "GAME#g1#SHARD_10"]:
            with self.assertRaises(sk.ShardedKeyError, msg=key):
                sk.ShardSuffix("#SHARD_{shard}").parse(key, 10)
        with self.assertRaisesRegex(sk.ShardedKeyError, "do not fit"):
            sk.ShardSuffix("#{shard:01}").check_count(11, "pk")


class Names(unittest.TestCase):
    def test_attribute_names_renamed_tag_padded_gsi_shards(self):
        entity = sk.Entity(spec({"attribute": "type", "value": "SCORE"}))
        self.assertEqual(entity.item(RECORD), {
            "gameId": "g1", "playerId": "p1", "score": 42,
            "PK": "GAME#g1#SHARD_7", "SK": "SCORE#00000000000000000042#p1",
            "GSI1PK": "PLAYER#p1#03", "GSI1SK": "GAME#g1", "type": "SCORE",
        })
        self.assertEqual(entity.parse_partition_key("GAME#g1#SHARD_7"), ({"gameId": "g1"}, 7))
        self.assertEqual(entity.parse_partition_key("PLAYER#p1#03", 1), ({"playerId": "p1"}, 3))
        self.assertEqual(entity.partitions({"playerId": "p1"}, 1),
                         ["PLAYER#p1#00", "PLAYER#p1#01", "PLAYER#p1#02", "PLAYER#p1#03"])
        self.assertEqual(entity.record(entity.dynamo_item(RECORD)), RECORD)
        with self.assertRaisesRegex(sk.ShardedKeyError, "not a Score"):
            entity.record({**entity.dynamo_item(RECORD), "type": {"S": "OTHER"}})

    def test_no_tag(self):
        item = sk.Entity(spec(None)).item(RECORD)
        self.assertEqual(len(item), 7)
        self.assertNotIn("_entity", item)

    def test_clashing_names_are_refused(self):
        with self.assertRaisesRegex(sk.ShardedKeyError, "share a name"):
            sk.Entity(spec({"attribute": "PK", "value": "x"}))

    def test_records_are_refused_with_the_field_named(self):
        entity = sk.Entity(spec(None))
        for bad, message in [
            ({**RECORD, "score": "42"}, "field `score`: a u64 must be an int"),
            ({**RECORD, "score": -1}, "field `score`: -1 is outside"),
            ({**RECORD, "score": True}, "field `score`: a u64 must be an int"),
            ({**RECORD, "playerId": ""}, "field `playerId`: the value is empty"),
            ({"gameId": "g1", "playerId": "p1"}, "field `score`: is missing"),
            ({**RECORD, "extra": 1}, "field `extra`: is not a field"),
            ({**RECORD, "PK": "x"}, "field `PK`: is a key attribute"),
        ]:
            with self.assertRaisesRegex(sk.ShardedKeyError, message):
                entity.item(bad)


class Counters(unittest.TestCase):
    def test_other_suffix_sort_key_attribute_no_tag(self):
        counter = sk.Entity(spec(None)).counter("likes", RECORD)
        self.assertEqual(counter.logical_key, "COUNTER#likes#GAME#g1#p1#SCORE#00000000000000000042#p1")
        self.assertEqual(counter.key(2), {"PK": counter.logical_key + "#SHARD#2", "SK": "METADATA"})
        add = counter.increment(1, 0)
        self.assertEqual(add["UpdateExpression"], "ADD #count :by")
        plain = sk.Counter("VOTES#a", 10, attribute="votes", sort_key="METADATA", suffix="#{shard:02}")
        self.assertEqual(plain.key(7), {"pk": "VOTES#a#07", "sk": "METADATA"})
        self.assertEqual(plain.total([{"votes": {"N": "3"}}, {"votes": {"N": "-1"}}, {}]), 2)
        self.assertLess(plain.token_shard("vote-7f3a2c"), 10)


class Datetimes(unittest.TestCase):
    def test_aware_datetimes_become_keys_naive_ones_are_refused(self):
        t = dt.datetime(2026, 6, 22, 3, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
        self.assertEqual(sk.encode_timestamp(t), "2026-06-22T01:00:00.123456000Z")
        self.assertEqual(sk.timestamp_attribute(t), "2026-06-22T01:00:00.123456Z")
        with self.assertRaisesRegex(sk.ShardedKeyError, "naive"):
            sk.encode_timestamp(dt.datetime(2026, 6, 22))
        with self.assertRaises(sk.ShardedKeyError):
            sk.decode_timestamp(t.isoformat())
        self.assertEqual(sk.Timestamp.from_datetime(t).to_datetime(), t)
        with self.assertRaisesRegex(sk.ShardedKeyError, "precision"):
            sk.Timestamp(0, 1).to_datetime()
        self.assertEqual(sk.encode_date(dt.date(2026, 6, 22)), "2026-06-22")
        with self.assertRaises(sk.ShardedKeyError):
            sk.encode_date(dt.datetime(2026, 6, 22, tzinfo=dt.timezone.utc))


if __name__ == "__main__":
    unittest.main()
