use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "PK", sk = "SK", tag = "_type", recognize = "key")]
struct ElectionData;

fn main() {}
