//! The settings two builders share, written once: a query's (`Query`, `RangeQuery`) and a
//! table read's (`Scan`, `Migration`).
//!
//! Each pair keeps its settings in one struct here, and one `macro_rules!` writes the
//! documented setters into each builder's `impl`: the same code and the same first paragraph
//! of documentation for both, plus what is the builder's own (its defaults, what it ignores)
//! and an example that runs against the builder itself. A macro rather than a trait with
//! provided methods, so that the setters stay inherent: callers need no trait import, and
//! rustdoc lists them with the builder's other methods.

use crate::access::engine::cursor::CursorKey;

/// The settings of a query, shared by [`Query`](crate::access::read::query::Query) and
/// [`RangeQuery`](crate::access::read::range::RangeQuery), written by [`read_setters!`].
#[derive(Debug, Clone, Default)]
pub(crate) struct ReadOptions {
    /// At most this many items (the top ones in the query's order).
    pub(crate) limit: Option<usize>,
    /// Largest to smallest sort key.
    pub(crate) descending: bool,
    /// Each shard request's `Limit`.
    pub(crate) page_size: Option<u32>,
    /// Strongly consistent reads.
    pub(crate) consistent: bool,
    /// The key sealing the query's cursors.
    pub(crate) seal: Option<CursorKey>,
}

/// The setters of [`ReadOptions`], for a builder with a field `options: ReadOptions`.
///
/// `$demo` is the signature of the examples' function, taking the builder as `q`; each
/// `[..]` holds the builder's own doc paragraphs for that setter, appended to the shared ones.
macro_rules! read_setters {
    (
        demo = $demo:literal,
        limit = [$(#[$limit:meta])*],
        descending = [$(#[$descending:meta])*],
        page_size = [$(#[$page_size:meta])*],
        consistent_read = [$(#[$consistent:meta])*],
        seal_cursors = [$(#[$seal:meta])*] $(,)?
    ) => {
        /// Returns at most `n` items (the first `n` in the query's order: the top `n` when
        /// [`descending`](Self::descending)). The limit is what `collect` and `stream`
        /// return; a count counts every item of the query, and a `page` holds the size it is
        /// asked for.
        $(#[$limit])*
        ///
        #[doc = concat!("```no_run\n", $demo, "\nlet top_10 = q.descending().limit(10).collect().await?;\n# Ok(()) }\n```")]
        pub fn limit(mut self, n: usize) -> Self {
            self.options.limit = Some(n);
            self
        }

        /// Largest to smallest sort key (DynamoDB's `ScanIndexForward = false`).
        $(#[$descending])*
        ///
        #[doc = concat!("```no_run\n", $demo, "\nlet newest_first = q.descending().collect().await?;\n# Ok(()) }\n```")]
        pub fn descending(mut self) -> Self {
            self.options.descending = true;
            self
        }

        /// Smallest to largest sort key (the default).
        ///
        #[doc = concat!("```no_run\n", $demo, "\nlet oldest_first = q.ascending().collect().await?;\n# Ok(()) }\n```")]
        pub fn ascending(mut self) -> Self {
            self.options.descending = false;
            self
        }

        /// Sets each shard request's `Limit` to `n` (less when the query can use less), every
        /// request included: `n` also caps the growth after pages a filter emptied.
        $(#[$page_size])*
        ///
        #[doc = concat!("```no_run\n", $demo, "\nlet all = q.page_size(100).collect().await?;\n# Ok(()) }\n```")]
        pub fn page_size(mut self, n: u32) -> Self {
            self.options.page_size = Some(n.max(1));
            self
        }

        /// Strongly consistent reads (base table only: DynamoDB indexes are eventually
        /// consistent, and a GSI query asked for it fails with
        /// [`Error::InvalidQuery`](crate::error::Error::InvalidQuery) when it runs).
        $(#[$consistent])*
        ///
        #[doc = concat!("```no_run\n", $demo, "\nlet fresh = q.consistent_read(true).collect().await?;\n# Ok(()) }\n```")]
        pub fn consistent_read(mut self, consistent: bool) -> Self {
            self.options.consistent = consistent;
            self
        }

        /// Seals the cursors of [`page`](Self::page) with `key` (HMAC-SHA256), and accepts
        /// only cursors sealed with it (or with an older key it accepts during a rotation:
        /// [`CursorKey::accepting`](crate::access::engine::cursor::CursorKey::accepting)): for cursors handed to
        /// untrusted clients as API page tokens.
        ///
        /// The seal covers the token and everything that shapes the query's answer (entity,
        /// index, key or range, sort-key condition, filter with its values, projection, order,
        /// expired items, layout): a cursor is accepted only by the very query that issued it.
        /// A cursor that was edited, made up, sealed with another key, issued by another query,
        /// or not sealed at all is refused
        /// ([`CursorError::Unverified`](crate::access::engine::cursor::CursorError::Unverified),
        /// [`CursorError::WrongQuery`](crate::access::engine::cursor::CursorError::WrongQuery),
        /// [`CursorError::NotSealed`](crate::access::engine::cursor::CursorError::NotSealed)) before any request is
        /// sent. What sealing adds and what it does not (it authenticates, it does not
        /// encrypt) is on [`Cursor`](crate::access::engine::cursor::Cursor).
        $(#[$seal])*
        ///
        #[doc = concat!("```no_run\n", $demo, "\nlet key = sharded::cursor::CursorKey::new(b\"32 random bytes from your secrets manager\")?;\nlet token: Option<String> = None; // the client's page token, as it sent it\nlet cursor = token.map(sharded::Cursor::from);\nlet page = q.seal_cursors(&key).page(20, cursor.as_ref()).await?;\nlet next_token: Option<String> = page.cursor.map(|c| c.to_string());\n# Ok(()) }\n```")]
        pub fn seal_cursors(mut self, key: &$crate::access::engine::cursor::CursorKey) -> Self {
            self.options.seal = Some(key.clone());
            self
        }
    };
}
pub(crate) use read_setters;

/// The settings of a read of the whole table, shared by [`Scan`](crate::access::read::scan::Scan) and
/// the migration (`sharded-ops`' `Migration`, through `__ops`), written by [`scan_setters!`].
/// `None` is the builder's default.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanOptions {
    /// DynamoDB's `TotalSegments`.
    pub segments: Option<u32>,
    /// Requests in flight at once.
    pub concurrency: Option<usize>,
    /// Each request's `Limit`.
    pub page_size: Option<u32>,
    /// The read-unit budget per second.
    pub read_units_per_second: Option<f64>,
}

/// The setters of [`ScanOptions`], for a builder with a field `options: ScanOptions`.
///
/// `$demo` is the signature of the examples' function, taking a repository `repo`; `$start`
/// starts the builder from it and `$run` runs it; each `[..]` holds the builder's own doc
/// paragraphs (its default first) for that setter, appended to the shared ones. The builder's
/// module must have `Error` (the crate's) in scope: the docs link to it.
///
/// Exported (hidden) because the migration builder of `sharded-ops` writes the same setters;
/// `__ops::scan_setters` is its path there.
#[doc(hidden)]
#[macro_export]
macro_rules! __scan_setters {
    (
        demo = $demo:literal,
        start = $start:literal,
        run = $run:literal,
        segments = [$(#[$segments:meta])*],
        concurrency = [$(#[$concurrency:meta])*],
        page_size = [$(#[$page_size:meta])*],
        read_units_per_second = [$(#[$read_units:meta])*] $(,)?
    ) => {
        /// Splits the table scan into `n` segments (DynamoDB's `TotalSegments`), read in
        /// parallel. DynamoDB allows 1 to 1,000,000; any other value is
        /// [`Error::InvalidQuery`](Error::InvalidQuery) when it runs, before any
        /// request. More segments than [`concurrency`](Self::concurrency) is fine (they wait
        /// their turn) and keeps each segment small; a segment costs at least one request
        /// even when it is empty.
        $(#[$segments])*
        ///
        #[doc = concat!("```no_run\n", $demo, "\n", $start, ".segments(16)", $run, ";\n# Ok(()) }\n```")]
        pub fn segments(mut self, n: u32) -> Self {
            self.options.segments = Some(n);
            self
        }

        /// At most `c` requests in flight at once (each segment has at most one). At least 1:
        /// `0` is [`Error::InvalidQuery`](Error::InvalidQuery) when it runs.
        $(#[$concurrency])*
        ///
        #[doc = concat!("```no_run\n", $demo, "\n// 64 small segments, 8 requests at a time.\n", $start, ".segments(64).concurrency(8)", $run, ";\n# Ok(()) }\n```")]
        pub fn concurrency(mut self, c: usize) -> Self {
            self.options.concurrency = Some(c);
            self
        }

        /// Sets each request's `Limit`: at most `p` items read per request (before the entity
        /// filter, as DynamoDB applies it). Smaller pages mean more requests, smaller steps for
        /// a rate limit and less memory per segment in flight. 1 to 2,147,483,647 (DynamoDB's
        /// bound); anything else is [`Error::InvalidQuery`](Error::InvalidQuery) when it
        /// runs.
        $(#[$page_size])*
        ///
        #[doc = concat!("```no_run\n", $demo, "\n", $start, ".page_size(100)", $run, ";\n# Ok(()) }\n```")]
        pub fn page_size(mut self, p: u32) -> Self {
            self.options.page_size = Some(p);
            self
        }

        /// Reads at most about `r` read capacity units per second, over all segments
        /// together: a background job that leaves the table's capacity to the service. A rate
        /// that is not a positive, finite number is
        /// [`Error::InvalidQuery`](Error::InvalidQuery) when it runs.
        $(#[$read_units])*
        ///
        #[doc = concat!("```no_run\n", $demo, "\n// At most about 50 read units/s of the table, 100 items a request.\n", $start, ".read_units_per_second(50.0).page_size(100)", $run, ";\n# Ok(()) }\n```")]
        pub fn read_units_per_second(mut self, r: f64) -> Self {
            self.options.read_units_per_second = Some(r);
            self
        }
    };
}
pub(crate) use crate::__scan_setters as scan_setters;
