//! Generated signatures do not depend on how a field type is spelled: a `$ty:ty` fragment (an
//! invisible group to the derive), a parenthesised type and a qualified path get the same
//! parameters as the plain spelling.

use serde::{Deserialize, Serialize};
use sharded::ShardedEntity;

macro_rules! entity {
    ($name:ident { $($field:ident: $ty:ty),* $(,)? }) => {
        #[derive(ShardedEntity, Serialize, Deserialize)]
        #[pk(template = "X#{a}")]
        #[sk(template = "V#{v}")]
        struct $name {
            $($field: $ty),*
        }
    };
}

entity!(X { a: String, v: u8 });

#[derive(ShardedEntity, Serialize, Deserialize)]
#[pk(template = "Y#{a}#{b}")]
#[sk(template = "V#{v}")]
struct Y {
    a: std::string::String,
    b: ::core::primitive::u64,
    v: (u8),
}

fn main() {
    assert_eq!(X::sk(7u8).unwrap(), "V#007");
    assert_eq!(X::pk("a").unwrap(), "X#a");
    assert_eq!(Y::pk("a", 5u64).unwrap(), "Y#a#00000000000000000005");
    assert_eq!(Y::sk(7u8).unwrap(), "V#007");
}
