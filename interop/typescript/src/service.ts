// A TypeScript service sharing a table with `sharded` (Rust): keys, shards, tag and
// recognition from sharded-keys.ts and the entity's spec (as the Rust side generates it in
// interop/vectors.json), sent with the AWS SDK v3's low-level client. The shared-table test
// (tests/dynamodb/interop.rs) runs it both ways:
//
//   node dist/src/service.js write --endpoint URL --table T --entity ActivePlayer < records
//     Each line on stdin is a record's fields in DynamoDB JSON (as serde stores them); each is
//     written as the item the module builds (PutItem). Prints how many it wrote.
//   node dist/src/service.js read --endpoint URL --table T --entity Score \
//       --partition '{"game_id":{"S":"g1"}}' [--counter likes]
//     Queries every partition of the logical key (each shard, newest sort keys first, page
//     after page), keeps the entity's items by the table's recognition (others are skipped
//     and counted on stderr), merges the shards by sort key, and prints one JSON line per
//     record: {"item": the item the module would write, "counters": {"likes": "3"}}.
//
// Credentials and region come from the SDK's usual environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION); DynamoDB Local keeps one database per access key and
// region, so use the ones the other side uses.

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

import { BatchGetItemCommand, DynamoDBClient, PutItemCommand, QueryCommand, type AttributeValue as SdkValue } from "@aws-sdk/client-dynamodb";

import { Entity, NotOurs, toDynamoItem, type DynamoItem, type EntitySpec } from "./sharded-keys.js";

function argument(name: string, fallback?: string): string {
  const at = process.argv.indexOf(`--${name}`);
  const value = at < 0 ? fallback : process.argv[at + 1];
  if (value === undefined) throw new Error(`missing --${name}`);
  return value;
}

/** The spec of `name` among the entities of the vectors file. */
function entitySpec(vectors: string, name: string): EntitySpec {
  const all = JSON.parse(readFileSync(vectors, "utf8")).entities as { spec: EntitySpec }[];
  const found = all.find((e) => e.spec.entity === name);
  if (found === undefined) throw new Error(`no entity ${name} in ${vectors}`);
  return found.spec;
}

/** The SDK's attribute values are the same DynamoDB JSON the module writes and reads. */
const asSdk = (item: DynamoItem) => item as Record<string, SdkValue>;
const fromSdk = (item: Record<string, SdkValue>) => item as DynamoItem;

async function write(client: DynamoDBClient, table: string, entity: Entity): Promise<void> {
  let written = 0;
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim() === "") continue;
    const record = entity.decode(JSON.parse(line) as DynamoItem);
    await client.send(new PutItemCommand({ TableName: table, Item: asSdk(entity.dynamoItem(record)) }));
    written++;
  }
  process.stdout.write(`${JSON.stringify({ written })}\n`);
}

/** Every item of one partition, largest sort key first, page after page. */
async function* partition(client: DynamoDBClient, table: string, pkAttribute: string, pk: string): AsyncGenerator<DynamoItem> {
  let start: Record<string, SdkValue> | undefined;
  do {
    const page = await client.send(new QueryCommand({
      TableName: table,
      KeyConditionExpression: "#pk = :pk",
      ExpressionAttributeNames: { "#pk": pkAttribute },
      ExpressionAttributeValues: { ":pk": { S: pk } },
      ScanIndexForward: false,
      ExclusiveStartKey: start,
    }));
    for (const item of page.Items ?? []) yield fromSdk(item);
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
}

/** DynamoDB orders string sort keys by their UTF-8 bytes (JavaScript's `<` compares UTF-16
 * code units, which differ above U+FFFF). */
function byBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

async function batchGet(client: DynamoDBClient, table: string, keys: DynamoItem[]): Promise<DynamoItem[]> {
  const items: DynamoItem[] = [];
  let request: Record<string, { Keys: Record<string, SdkValue>[] }> | undefined = { [table]: { Keys: keys.map(asSdk) } };
  while (request !== undefined && Object.keys(request).length > 0) {
    const got = await client.send(new BatchGetItemCommand({ RequestItems: request }));
    items.push(...(got.Responses?.[table] ?? []).map(fromSdk));
    request = got.UnprocessedKeys as typeof request;
  }
  return items;
}

async function read(client: DynamoDBClient, table: string, entity: Entity): Promise<void> {
  const values = entity.decode(JSON.parse(argument("partition")) as DynamoItem, true);
  const counter = process.argv.includes("--counter") ? argument("counter") : null;
  const sk = entity.spec.sk?.attribute ?? null;
  // Each shard's items in descending order; the merge takes the largest head each time. The
  // shards are read whole first: a test's partitions are small.
  const shards: DynamoItem[][] = [];
  let foreign = 0;
  for (const pk of entity.partitions(values)) {
    const ours: DynamoItem[] = [];
    for await (const item of partition(client, table, entity.spec.pk.attribute, pk)) {
      try {
        ours.push(entity.dynamoItem(entity.record(item)));
      } catch (e) {
        if (!(e instanceof NotOurs)) throw e;
        if (e.reason !== "other_entity") foreign++;
      }
    }
    shards.push(ours);
  }
  const heads = shards.map(() => 0);
  for (;;) {
    let best = -1;
    for (let s = 0; s < shards.length; s++) {
      if (heads[s] >= shards[s].length) continue;
      const key = sk === null ? "" : (shards[s][heads[s]][sk] as { S: string }).S;
      if (best < 0 || byBytes(key, sk === null ? "" : (shards[best][heads[best]][sk] as { S: string }).S) > 0) best = s;
    }
    if (best < 0) break;
    const item = shards[best][heads[best]++];
    const counters: Record<string, string> = {};
    if (counter !== null) {
      const c = entity.counter(counter, entity.record(item));
      counters[counter] = c.total(await batchGet(client, table, c.keys().map(toDynamoItem))).toString();
    }
    process.stdout.write(`${JSON.stringify({ item, counters }, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v))}\n`);
  }
  process.stderr.write(`service.ts: ${foreign} foreign items skipped\n`);
}

async function main(): Promise<void> {
  const command = process.argv[2];
  const entity = new Entity(entitySpec(argument("vectors", new URL("../../../vectors.json", import.meta.url).pathname), argument("entity")));
  const client = new DynamoDBClient({ endpoint: argument("endpoint") });
  try {
    if (command === "write") await write(client, argument("table"), entity);
    else if (command === "read") await read(client, argument("table"), entity);
    else throw new Error(`unknown command ${JSON.stringify(command)}: expected write or read`);
  } finally {
    client.destroy();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`service.ts: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
  process.exit(1);
});
