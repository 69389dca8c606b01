"""The table's own names and formats, by hand beside the vectors: shard suffix formats, key
attribute names, a renamed or absent tag, each recognition, counters with another sort key and
attribute, specs that contradict their table.
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


def table(tag, recognition=None):
    """A PK/SK table with GSI1 over GSI1PK/GSI1SK, tagged in ``tag`` (or not at all)."""
    return {
        "declared_by": "Leaderboards", "name": "Leaderboards", "partition_key": "PK", "sort_key": "SK",
        "tag": tag, "recognition": recognition or ("key" if tag is None else "tag"),
        "indexes": [{"number": 1, "index": "GSI1", "partition_key": "GSI1PK", "sort_key": "GSI1SK"}],
    }


def spec(t):
    return {
        "entity": "Score",
        "table": t,
        "fields": FIELDS,
        "pk": {"attribute": "PK", "template": "GAME#{game_id}",
               "sharding": {"kind": "hash", "fields": ["player_id"], "n": 10}, "suffix": "#SHARD_{shard}",
               "previous": None},
        "sk": {"attribute": "SK", "template": "SCORE#{score}#{player_id}"},
        "gsis": [{
            "kind": "string", "number": 1, "index": "GSI1",
            "pk": {"attribute": "GSI1PK", "template": "PLAYER#{player_id}",
                   "sharding": {"kind": "identity", "n": 4}, "suffix": "#{shard:02}", "previous": None},
            "sk": {"attribute": "GSI1SK", "template": "GAME#{game_id}"},
        }],
        "counters": [{"name": "likes", "n": 3, "suffix": "#SHARD#{shard}", "sort_key": "METADATA",
                      "attribute": "votes",
                      "tag": None if t["tag"] is None else {"attribute": t["tag"], "value": "ShardedCounter"}}],
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
        entity = sk.Entity(spec(table("type")))
        self.assertEqual(entity.item(RECORD), {
            "gameId": "g1", "playerId": "p1", "score": 42,
            "PK": "GAME#g1#SHARD_7", "SK": "SCORE#00000000000000000042#p1",
            "GSI1PK": "PLAYER#p1#03", "GSI1SK": "GAME#g1", "type": "Score",
        })
        self.assertEqual(entity.parse_partition_key("GAME#g1#SHARD_7"), ({"gameId": "g1"}, 7))
        self.assertEqual(entity.parse_partition_key("PLAYER#p1#03", 1), ({"playerId": "p1"}, 3))
        self.assertEqual(entity.partitions({"playerId": "p1"}, 1),
                         ["PLAYER#p1#00", "PLAYER#p1#01", "PLAYER#p1#02", "PLAYER#p1#03"])
        self.assertEqual(entity.record(entity.dynamo_item(RECORD)), RECORD)

    def test_no_tag(self):
        item = sk.Entity(spec(table(None))).item(RECORD)
        self.assertEqual(len(item), 7)
        self.assertNotIn("_entity", item)

    def test_a_spec_that_contradicts_its_table_is_refused(self):
        for bad, message in [
            (spec(table("PK")), "share a name"),
            ({**spec(table(None)), "table": {**table(None), "partition_key": "pk"}}, "partition key is `PK`, but"),
            ({**spec(table(None)), "table": {**table(None), "indexes": [
                {"number": 1, "index": "byPlayer", "partition_key": "GSI1PK", "sort_key": "GSI1SK"}]}}, "names it `byPlayer`"),
            (spec(table(None, "tag")), "no tag exactly when"),
            ({**spec(table(None)), "pk": {k: v for k, v in spec(table(None))["pk"].items() if k != "suffix"}}, "needs its `suffix`"),
            ({**spec(table("type")), "table": {k: v for k, v in table("type").items() if k != "tag"}}, "needs `tag`"),
        ]:
            with self.assertRaisesRegex(sk.ShardedKeyError, message):
                sk.Entity(bad)


def verdict(entity, item):
    """Why ``entity.record(item)`` refuses ``item``, or "ours"."""
    try:
        entity.record(item)
        return "ours"
    except sk.NotOurs as e:
        return e.reason


class Recognition(unittest.TestCase):
    KEYS_ONLY = {"PK": {"S": "GAME#g1#SHARD_7"}, "SK": {"S": "SCORE#00000000000000000042#p1"}}

    def test_by_the_tag(self):
        entity = sk.Entity(spec(table("type")))
        item = entity.dynamo_item(RECORD)
        self.assertEqual(verdict(entity, item), "ours")
        self.assertEqual(verdict(entity, {**item, "type": {"S": "Other"}}), "other_entity")
        self.assertEqual(verdict(entity, {**item, "type": {"N": "1"}}), "bad_tag")
        self.assertEqual(verdict(entity, self.KEYS_ONLY), "untagged")

    def test_by_the_tag_or_the_keys(self):
        entity = sk.Entity(spec(table("type", "tag_or_key")))
        self.assertEqual(entity.record(self.KEYS_ONLY), RECORD)
        self.assertEqual(verdict(entity, {**self.KEYS_ONLY, "PK": {"S": "GAME#g1#SHARD_07"}}), "other_keys")
        self.assertEqual(verdict(entity, {**self.KEYS_ONLY, "PK": {"S": "GAME#g1#7"}}), "other_keys")
        self.assertEqual(verdict(entity, {**self.KEYS_ONLY, "SK": {"S": "SCORE#42#p1"}}), "other_keys")
        self.assertEqual(verdict(entity, {**self.KEYS_ONLY, "gameId": {"S": "g2"}}), "unreadable")

    def test_by_the_keys_alone(self):
        entity = sk.Entity(spec(table(None)))
        self.assertEqual(entity.record(self.KEYS_ONLY), RECORD)
        self.assertEqual(entity.record({**self.KEYS_ONLY, "type": {"S": "Other"}}), RECORD)
        self.assertEqual(verdict(entity, {"PK": {"S": "CANDIDATE#A#SHARD_3"}, "SK": {"S": "METADATA"}}), "other_keys")

    def test_records_are_refused_with_the_field_named(self):
        entity = sk.Entity(spec(table(None)))
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
        counter = sk.Entity(spec(table(None))).counter("likes", RECORD)
        self.assertEqual(counter.logical_key, "COUNTER#likes#GAME#g1#p1#SCORE#00000000000000000042#p1")
        self.assertEqual(counter.key(2), {"PK": counter.logical_key + "#SHARD#2", "SK": "METADATA"})
        add = counter.increment(1, 0)
        self.assertEqual(add["UpdateExpression"], "ADD #count :by")
        # The vote counter of a tagged PK/SK table: its items carry the table's tag.
        votes = sk.Counter.in_table(table("__edb_e__"), "CANDIDATE#A", 10, sort_key="METADATA", attribute="votes")
        self.assertEqual(votes.key(7), {"PK": "CANDIDATE#A#7", "SK": "METADATA"})
        self.assertEqual(votes.increment(1, 7)["UpdateExpression"], "ADD #count :by SET #et = :et")
        plain = sk.Counter.in_table({**table(None), "partition_key": "pk", "sort_key": "sk"}, "VOTES#a", 10,
                                    attribute="votes", sort_key="METADATA", suffix="#{shard:02}")
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
