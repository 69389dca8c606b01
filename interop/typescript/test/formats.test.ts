// The table's own names and formats, by hand beside the vectors: shard suffix formats, key
// attribute names, a renamed or absent tag, each recognition, counters with another sort key
// and attribute, specs that contradict their table.
// Expected shards come from the hash spec's documented vectors ("p1" mod 10 = 7; the identity
// GAME#g1#SCORE#00000000000000000042#p1 mod 4 = 3), not from this module.

import { test } from "node:test";
import assert from "node:assert/strict";

import {
  Counter,
  Entity,
  NotOurs,
  ShardSuffix,
  ShardedKeyError,
  Timestamp,
  decodeTimestamp,
  encodeTimestamp,
  timestampAttribute,
  type DynamoItem,
  type EntitySpec,
  type Recognition,
  type TableSpec,
} from "../src/sharded-keys.js";

const fields: EntitySpec["fields"] = [
  { name: "game_id", attribute: "gameId", type: "string" },
  { name: "player_id", attribute: "playerId", type: "string" },
  { name: "score", attribute: "score", type: "u64" },
];

/** A PK/SK table with GSI1 over GSI1PK/GSI1SK, tagged in `tag` (or not at all). */
function table(tag: string | null, recognition: Recognition = tag === null ? "key" : "tag"): TableSpec {
  return {
    declared_by: "Leaderboards",
    name: "Leaderboards",
    partition_key: "PK",
    sort_key: "SK",
    tag,
    recognition,
    indexes: [{ number: 1, index: "GSI1", partition_key: "GSI1PK", sort_key: "GSI1SK" }],
  };
}

function spec(t: TableSpec): EntitySpec {
  return {
    entity: "Score",
    table: t,
    fields,
    pk: { attribute: "PK", template: "GAME#{game_id}", sharding: { kind: "hash", fields: ["player_id"], n: 10 }, suffix: "#SHARD_{shard}", previous: null },
    sk: { attribute: "SK", template: "SCORE#{score}#{player_id}" },
    gsis: [
      {
        kind: "string",
        number: 1,
        index: "GSI1",
        pk: { attribute: "GSI1PK", template: "PLAYER#{player_id}", sharding: { kind: "identity", n: 4 }, suffix: "#{shard:02}", previous: null },
        sk: { attribute: "GSI1SK", template: "GAME#{game_id}" },
      },
    ],
    counters: [{ name: "likes", n: 3, suffix: "#SHARD#{shard}", sort_key: "METADATA", attribute: "votes", tag: t.tag === null ? null : { attribute: t.tag, value: "ShardedCounter" } }],
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
  const entity = new Entity(spec(table("type")));
  assert.deepEqual(entity.item(record), {
    gameId: "g1",
    playerId: "p1",
    score: 42n,
    PK: "GAME#g1#SHARD_7",
    SK: "SCORE#00000000000000000042#p1",
    GSI1PK: "PLAYER#p1#03",
    GSI1SK: "GAME#g1",
    type: "Score",
  });
  assert.deepEqual(entity.parsePartitionKey("GAME#g1#SHARD_7"), { values: { gameId: "g1" }, shard: 7 });
  assert.deepEqual(entity.parsePartitionKey("PLAYER#p1#03", 1), { values: { playerId: "p1" }, shard: 3 });
  assert.deepEqual(entity.partitions({ gameId: "g1" }).slice(0, 2), ["GAME#g1#SHARD_0", "GAME#g1#SHARD_1"]);
  assert.deepEqual(entity.partitions({ playerId: "p1" }, 1), ["PLAYER#p1#00", "PLAYER#p1#01", "PLAYER#p1#02", "PLAYER#p1#03"]);
  assert.deepEqual(entity.dynamoItem(record).type, { S: "Score" });
  assert.deepEqual(entity.record(entity.dynamoItem(record)), record);
});

test("no tag: the item has no tag attribute", () => {
  const item = new Entity(spec(table(null))).item(record);
  assert.equal(Object.keys(item).length, 7);
  assert.ok(!("_entity" in item) && !("type" in item));
});

/** Why `entity.record(item)` refuses `item`, or "ours". */
function verdict(entity: Entity, item: DynamoItem): string {
  try {
    entity.record(item);
    return "ours";
  } catch (e) {
    if (e instanceof NotOurs) return e.reason;
    throw e;
  }
}

test("recognition: by the tag, by the tag or the keys, by the keys alone", () => {
  const keysOnly = { PK: { S: "GAME#g1#SHARD_7" }, SK: { S: "SCORE#00000000000000000042#p1" } };
  const tagged = new Entity(spec(table("type")));
  const item = tagged.dynamoItem(record);
  assert.equal(verdict(tagged, item), "ours");
  assert.equal(verdict(tagged, { ...item, type: { S: "Other" } }), "other_entity");
  assert.equal(verdict(tagged, { ...item, type: { N: "1" } }), "bad_tag");
  assert.equal(verdict(tagged, keysOnly), "untagged");
  // tag_or_key: an untagged item with the entity's keys is the entity's, its key fields read
  // from the keys; another spelling of the shard, or fields that disagree with the keys, are not.
  const either = new Entity(spec(table("type", "tag_or_key")));
  assert.deepEqual(either.record(keysOnly), record);
  assert.equal(verdict(either, { ...keysOnly, PK: { S: "GAME#g1#SHARD_07" } }), "other_keys");
  assert.equal(verdict(either, { ...keysOnly, PK: { S: "GAME#g1#7" } }), "other_keys");
  assert.equal(verdict(either, { ...keysOnly, SK: { S: "SCORE#42#p1" } }), "other_keys");
  assert.equal(verdict(either, { ...keysOnly, gameId: { S: "g2" } }), "unreadable");
  // key: no tag at all; a tag-like attribute is just an attribute.
  const keyed = new Entity(spec(table(null)));
  assert.deepEqual(keyed.record(keysOnly), record);
  assert.deepEqual(keyed.record({ ...keysOnly, type: { S: "Other" } }), record);
  assert.equal(verdict(keyed, { PK: { S: "CANDIDATE#A#SHARD_3" }, SK: { S: "METADATA" } }), "other_keys");
});

test("a spec that contradicts its table, or leaves a name out, is refused", () => {
  assert.throws(() => new Entity(spec(table("PK"))), /share a name/);
  assert.throws(() => new Entity({ ...spec(table(null)), fields: [...fields.slice(0, 2), { name: "score", attribute: "SK", type: "u64" }] }), /key attribute/);
  assert.throws(() => new Entity({ ...spec(table(null)), table: { ...table(null), partition_key: "pk" } }), /partition key is `PK`, but table Leaderboards's is `pk`/);
  assert.throws(() => new Entity({ ...spec(table(null)), table: { ...table(null), indexes: [{ number: 1, index: "byPlayer", partition_key: "GSI1PK", sort_key: "GSI1SK" }] } }), /names it `byPlayer`/);
  assert.throws(() => new Entity(spec(table(null, "tag"))), /no tag exactly when/);
  const { suffix: _, ...noSuffix } = spec(table(null)).pk;
  assert.throws(() => new Entity({ ...spec(table(null)), pk: noSuffix as EntitySpec["pk"] }), /needs its `suffix`/);
  const { tag: __, ...untold } = table("type");
  assert.throws(() => new Entity({ ...spec(table("type")), table: untold as TableSpec }), /needs `tag`/);
});

test("records are refused with the field named, never coerced", () => {
  const entity = new Entity(spec(table(null)));
  assert.throws(() => entity.item({ ...record, score: "42" }), /field `score`: a u64 must be a bigint/);
  assert.throws(() => entity.item({ ...record, score: -1n }), /field `score`: -1 is outside/);
  assert.throws(() => entity.item({ ...record, playerId: "" }), /field `playerId`: the value is empty/);
  assert.throws(() => entity.item({ gameId: "g1", playerId: "p1" }), /field `score`: is missing/);
  assert.throws(() => entity.item({ ...record, extra: 1 }), /field `extra`: is not a field/);
  assert.throws(() => entity.item({ ...record, PK: "x" }), /field `PK`: is a key attribute/);
  assert.throws(() => entity.item({ ...record, score: 2 ** 60 }), /no larger than 2\^53/);
});

test("counters with another suffix, sort key, attribute, no tag", () => {
  const counter = new Entity(spec(table(null))).counter("likes", record);
  assert.equal(counter.logicalKey, "COUNTER#likes#GAME#g1#p1#SCORE#00000000000000000042#p1");
  assert.deepEqual(counter.key(2), { PK: "COUNTER#likes#GAME#g1#p1#SCORE#00000000000000000042#p1#SHARD#2", SK: "METADATA" });
  const add = counter.increment(1, 0);
  assert.equal(add.UpdateExpression, "ADD #count :by");
  assert.deepEqual(add.ExpressionAttributeNames, { "#count": "votes" });
  // The vote counter of a tagged PK/SK table: its items carry the table's tag.
  const votes = Counter.inTable(table("__edb_e__"), { logical_key: "CANDIDATE#A", n: 10, sort_key: "METADATA", attribute: "votes" });
  assert.deepEqual(votes.key(7), { PK: "CANDIDATE#A#7", SK: "METADATA" });
  assert.equal(votes.increment(1, 7).UpdateExpression, "ADD #count :by SET #et = :et");
  assert.deepEqual(votes.increment(1, 7).ExpressionAttributeNames, { "#count": "votes", "#et": "__edb_e__" });
  const plain = Counter.inTable({ ...table(null), partition_key: "pk", sort_key: "sk" }, { logical_key: "VOTES#a", n: 10, attribute: "votes", sort_key: "METADATA", suffix: "#{shard:02}" });
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
