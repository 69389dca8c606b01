pub use sharded_runtime::*;
