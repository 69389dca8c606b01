// A TypeScript service writing the leaderboard that `sharded` (Rust) reads: keys, shards and
// tag from sharded-keys.ts and the entity's spec, written by hand as a service would, sent
// with the AWS SDK v3's low-level client. Prints every record it wrote as one JSON line.
//
//   node dist/src/writer.js --endpoint http://127.0.0.1:8000 --table scores --count 60 --seed 7
//
// Credentials and region come from the SDK's usual environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION); DynamoDB Local accepts any, but keeps one database per
// access key and region, so use the ones the other side uses.

import { DynamoDBClient, PutItemCommand } from "@aws-sdk/client-dynamodb";

import { Entity, Timestamp, timestampAttribute, type EntitySpec } from "./sharded-keys.js";

/** The Rust declaration, as a spec:
 *  #[pk(template = "GAME#{game_id}", shard = "hash(player_id)", n = 10)]
 *  #[sk(template = "SCORE#{score}#{player_id}")]
 *  struct Score { game_id: String, player_id: String, score: u64, at: DateTime<Utc> } */
export const SCORE: EntitySpec = {
  entity: "Score",
  tag: { attribute: "_entity", value: "Score" },
  fields: [
    { name: "game_id", attribute: "game_id", type: "string" },
    { name: "player_id", attribute: "player_id", type: "string" },
    { name: "score", attribute: "score", type: "u64" },
    { name: "at", attribute: "at", type: "datetime" },
  ],
  pk: { attribute: "pk", template: "GAME#{game_id}", sharding: { kind: "hash", fields: ["player_id"], n: 10 }, suffix: "#{shard}" },
  sk: { attribute: "sk", template: "SCORE#{score}#{player_id}" },
  gsis: [],
};

function argument(name: string): string {
  const at = process.argv.indexOf(`--${name}`);
  const value = at < 0 ? undefined : process.argv[at + 1];
  if (value === undefined) throw new Error(`missing --${name}`);
  return value;
}

/** A small seeded generator (mulberry32), so a run can be repeated. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const GAMES = ["g1", "g 2#"];
const PLAYERS = ["p1", "p#1", "über", "a b", "$", "player-7", "日本", "🎮"];

async function main(): Promise<void> {
  const endpoint = argument("endpoint");
  const table = argument("table");
  const count = Number(argument("count"));
  const random = generator(Number(argument("seed")));
  const pick = <T>(list: T[]): T => list[Math.floor(random() * list.length)];
  const entity = new Entity(SCORE);
  const client = new DynamoDBClient({ endpoint });
  for (let i = 0; i < count; i++) {
    // Scores above 2^53 on purpose: a u64 is a bigint here, never a rounded number.
    const score = random() < 0.2 ? 18_446_744_073_709_551_615n - BigInt(i) : BigInt(Math.floor(random() * 1000));
    const record = {
      game_id: pick(GAMES),
      player_id: `${pick(PLAYERS)}-${i}`,
      score,
      at: new Timestamp(1_782_090_000n + BigInt(i), Math.floor(random() * 1000) * 1_000_000),
    };
    await client.send(new PutItemCommand({ TableName: table, Item: entity.dynamoItem(record) }));
    const printed = { ...record, score: record.score.toString(), at: timestampAttribute(record.at) };
    process.stdout.write(`${JSON.stringify(printed)}\n`);
  }
  client.destroy();
}

main().catch((error: unknown) => {
  process.stderr.write(`writer: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
