// The table's own names and formats, ahead of the Rust side: shard suffix formats, key
// attribute names, a renamed or absent tag, counters with another sort key and attribute.
// Expected shards come from the hash spec's documented vectors ("p1" mod 10 = 7; the identity
// GAME#g1#SCORE#00000000000000000042#p1 mod 4 = 3), not from this module.

import { test } from "node:test";
import assert from "node:assert/strict";

import {
  Counter,
  Entity,
  ShardSuffix,
  ShardedKeyError,
  Timestamp,
  decodeTimestamp,
  encodeTimestamp,
  timestampAttribute,
  type EntitySpec,
} from "../src/sharded-keys.js";

const fields: EntitySpec["fields"] = [
  { name: "game_id", attribute: "gameId", type: "string" },
  { name: "player_id", attribute: "playerId", type: "string" },
  { name: "score", attribute: "score", type: "u64" },
];

function spec(tag: EntitySpec["tag"]): EntitySpec {
  return {
    entity: "Score",
    tag,
    fields,
    pk: { attribute: "PK", template: "GAME#{game_id}", sharding: { kind: "hash", fields: ["player_id"], n: 10 }, suffix: "#SHARD_{shard}" },
    sk: { attribute: "SK", template: "SCORE#{score}#{player_id}" },
    gsis: [
      {
        kind: "string",
        number: 1,
        index: "GSI1",
        pk: { attribute: "GSI1PK", template: "PLAYER#{player_id}", sharding: { kind: "identity", n: 4 }, suffix: "#{shard:02}" },
        sk: { attribute: "GSI1SK", template: "GAME#{game_id}" },
      },
    ],
    counters: [{ name: "likes", n: 3, suffix: "#SHARD#{shard}", sort_key: "METADATA", attribute: "votes", tag: null }],
  };
}

const record = { gameId: "g1", playerId: "p1", score: 42n };

test("suffix formats round trip", () => {
  const cases: [string, number, number, string][] = [
    ["#{shard}", 10, 7, "GAME#g1#7"],
    ["#SHARD_{shard}", 10, 7, "GAME#g1#SHARD_7"],
    ["#SHARD#{shard}", 100, 42, "GAME#g1#SHARD#42"],
    ["#{shard:02}", 10, 3, "GAME#g1#03"],
    ["#S_{shard:04}", 1000, 999, "GAME#g1#S_0999"],
  ];
  for (const [format, n, shard, physical] of cases) {
    const suffix = new ShardSuffix(format);
    assert.equal(suffix.apply("GAME#g1", shard), physical);
    assert.deepEqual(suffix.parse(physical, n), { logical: "GAME#g1", shard });
  }
  // A logical key that ends in digits keeps them: only the digits after the literal are the shard.
  assert.deepEqual(new ShardSuffix("#SHARD_{shard}").parse("GAME#42#SHARD_5", 10), { logical: "GAME#42", shard: 5 });
  assert.deepEqual(new ShardSuffix().parse("GAME#42#5", 10), { logical: "GAME#42", shard: 5 });
});

test("suffix formats and keys that are refused", () => {
  for (const bad of ["SHARD_{shard}", "#S1{shard}", "#{shard:05}", "#{shard:2}", "#{shard}x", "#{shard", "#{id}", "", "#{shard:00}"]) {
    assert.throws(() => new ShardSuffix(bad), ShardedKeyError, bad);
  }
  const padded = new ShardSuffix("#{shard:02}");
  for (const key of ["GAME#g1#3", "GAME#g1#003", "GAME#g1#10", "GAME#g1_03", "GAME#g1#"]) {
    assert.throws(() => padded.parse(key, 10), ShardedKeyError, key);
  }
  const plain = new ShardSuffix("#SHARD_{shard}");
  for (const key of ["GAME#g1#SHARD_03", "GAME#g1#7", "GAME#g1#SHARD_", "GAME#g1#SHARD_10"]) {
    assert.throws(() => plain.parse(key, 10), ShardedKeyError, key);
  }
  assert.throws(() => new ShardSuffix("#{shard:01}").checkCount(11, "pk"), /do not fit/);
});

test("attribute names, a renamed tag, padded GSI shards", () => {
  const entity = new Entity(spec({ attribute: "type", value: "SCORE" }));
  assert.deepEqual(entity.item(record), {
    gameId: "g1",
    playerId: "p1",
    score: 42n,
    PK: "GAME#g1#SHARD_7",
    SK: "SCORE#00000000000000000042#p1",
    GSI1PK: "PLAYER#p1#03",
    GSI1SK: "GAME#g1",
    type: "SCORE",
  });
  assert.deepEqual(entity.parsePartitionKey("GAME#g1#SHARD_7"), { values: { gameId: "g1" }, shard: 7 });
  assert.deepEqual(entity.parsePartitionKey("PLAYER#p1#03", 1), { values: { playerId: "p1" }, shard: 3 });
  assert.deepEqual(entity.partitions({ gameId: "g1" }).slice(0, 2), ["GAME#g1#SHARD_0", "GAME#g1#SHARD_1"]);
  assert.deepEqual(entity.partitions({ playerId: "p1" }, 1), ["PLAYER#p1#00", "PLAYER#p1#01", "PLAYER#p1#02", "PLAYER#p1#03"]);
  assert.deepEqual(entity.dynamoItem(record).type, { S: "SCORE" });
  assert.deepEqual(entity.record(entity.dynamoItem(record)), record);
  assert.throws(() => entity.record({ ...entity.dynamoItem(record), type: { S: "OTHER" } }), /not a Score/);
});

test("no tag: the item has no tag attribute", () => {
  const item = new Entity(spec(null)).item(record);
  assert.equal(Object.keys(item).length, 7);
  assert.ok(!("_entity" in item) && !("type" in item));
});

test("a spec whose names clash is refused", () => {
  assert.throws(() => new Entity(spec({ attribute: "PK", value: "x" })), /share a name/);
  assert.throws(() => new Entity({ ...spec(null), fields: [...fields.slice(0, 2), { name: "score", attribute: "SK", type: "u64" }] }), /key attribute/);
});

test("records are refused with the field named, never coerced", () => {
  const entity = new Entity(spec(null));
  assert.throws(() => entity.item({ ...record, score: "42" }), /field `score`: a u64 must be a bigint/);
  assert.throws(() => entity.item({ ...record, score: -1n }), /field `score`: -1 is outside/);
  assert.throws(() => entity.item({ ...record, playerId: "" }), /field `playerId`: the value is empty/);
  assert.throws(() => entity.item({ gameId: "g1", playerId: "p1" }), /field `score`: is missing/);
  assert.throws(() => entity.item({ ...record, extra: 1 }), /field `extra`: is not a field/);
  assert.throws(() => entity.item({ ...record, PK: "x" }), /field `PK`: is a key attribute/);
  assert.throws(() => entity.item({ ...record, score: 2 ** 60 }), /no larger than 2\^53/);
});

test("counters with another suffix, sort key, attribute, no tag", () => {
  const counter = new Entity(spec(null)).counter("likes", record);
  assert.equal(counter.logicalKey, "COUNTER#likes#GAME#g1#p1#SCORE#00000000000000000042#p1");
  assert.deepEqual(counter.key(2), { PK: "COUNTER#likes#GAME#g1#p1#SCORE#00000000000000000042#p1#SHARD#2", SK: "METADATA" });
  const add = counter.increment(1, 0);
  assert.equal(add.UpdateExpression, "ADD #count :by");
  assert.deepEqual(add.ExpressionAttributeNames, { "#count": "votes" });
  const plain = new Counter({ logical_key: "VOTES#a", n: 10, attribute: "votes", sort_key: "METADATA", suffix: "#{shard:02}" });
  assert.deepEqual(plain.key(7), { pk: "VOTES#a#07", sk: "METADATA" });
  assert.equal(plain.total([{ votes: { N: "3" } }, { votes: { N: "-1" } }, {}]), 2n);
  assert.equal(plain.tokenShard("vote-7f3a2c"), plain.tokenShard("vote-7f3a2c"));
  assert.ok(plain.tokenShard("vote-7f3a2c") < 10);
});

test("a JavaScript Date becomes a key with nine fraction digits", () => {
  const date = new Date("2026-06-22T01:00:00.123Z");
  assert.equal(encodeTimestamp(date), "2026-06-22T01:00:00.123000000Z");
  assert.equal(timestampAttribute(date), "2026-06-22T01:00:00.123Z");
  // toISOString() has three digits: not a key.
  assert.throws(() => decodeTimestamp(date.toISOString()), ShardedKeyError);
  assert.deepEqual(Timestamp.fromDate(date).toDate(), date);
  assert.throws(() => new Timestamp(0n, 1).toDate(), /precision/);
  assert.throws(() => encodeTimestamp(new Date(Number.NaN)), /invalid/);
  assert.equal(encodeTimestamp(new Date(-1)), "1969-12-31T23:59:59.999000000Z");
});
