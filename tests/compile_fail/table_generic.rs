use sharded::ShardedTable;

#[derive(ShardedTable)]
#[table(pk = "PK")]
struct Leaderboards<T>(std::marker::PhantomData<T>);

fn main() {}
