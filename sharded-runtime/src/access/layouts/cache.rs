//! What one process knows of the layout directories: per entity, the directory as read, and
//! when. A request uses it only within its lease; half way through, it is read again in the
//! background (see the module above for why the lease is what makes a change safe).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::Client;

use super::{directory_key, from_item, KeyEntry, KeyState, LayoutTiming, Stored};
use crate::capacity::{Clock, SystemClock};
use crate::error::Error;
use crate::keys::schema::{EntitySchema, KeyLayout};

/// The wall clock: what a step's time is written in, so that another machine can tell how
/// long ago it was.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> Duration {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
    }
}

/// One entity's directory as this process read it.
#[derive(Debug)]
pub(crate) struct Snapshot {
    stored: Stored,
    /// When the read was sent, by the lease clock: the lease runs from there.
    read_at: Duration,
    /// The declared `n`: the layout of every key the directory does not list.
    default_n: u32,
}

impl Snapshot {
    /// The layout of logical key `key`.
    pub(crate) fn layout(&self, key: &str) -> KeyLayout {
        self.state(key).layout
    }

    /// How logical key `key` is written and read (see [`KeyState`]).
    pub(crate) fn state(&self, key: &str) -> KeyState {
        self.stored
            .entries
            .get(key)
            .map_or(KeyState::steady(self.default_n), KeyEntry::state)
    }

    /// Whether some key is read at two counts: a GSI query then checks each old copy.
    pub(crate) fn any_changing(&self) -> bool {
        self.stored
            .entries
            .values()
            .any(|entry| entry.layout().previous.is_some())
    }
}

/// The directories one repository (and its clones) reads keys' layouts from.
pub(crate) struct Directory {
    timing: LayoutTiming,
    /// Measures leases: monotonic in production.
    lease_clock: Arc<dyn Clock>,
    /// Stamps and checks steps: the wall clock in production.
    step_clock: Arc<dyn Clock>,
    snapshots: Mutex<HashMap<&'static str, Arc<Snapshot>>>,
    /// One read at a time when a lease ran out (single flight).
    reading: tokio::sync::Mutex<()>,
    /// A background refresh is under way.
    refreshing: AtomicBool,
}

impl std::fmt::Debug for Directory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Directory")
            .field("timing", &self.timing)
            .finish_non_exhaustive()
    }
}

impl Default for Directory {
    fn default() -> Self {
        Directory::new(
            LayoutTiming::default(),
            Arc::new(SystemClock::new()),
            Arc::new(WallClock),
        )
    }
}

impl Directory {
    pub(crate) fn new(
        timing: LayoutTiming,
        lease_clock: Arc<dyn Clock>,
        step_clock: Arc<dyn Clock>,
    ) -> Self {
        Directory {
            timing,
            lease_clock,
            step_clock,
            snapshots: Mutex::new(HashMap::new()),
            reading: tokio::sync::Mutex::new(()),
            refreshing: AtomicBool::new(false),
        }
    }

    pub(crate) fn timing(&self) -> LayoutTiming {
        self.timing
    }

    /// The wall-clock time steps are stamped and checked with.
    pub(crate) fn step_now(&self) -> Duration {
        self.step_clock.now()
    }

    pub(crate) fn cached(&self, entity: &'static str) -> Option<Arc<Snapshot>> {
        self.snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(entity)
            .cloned()
    }

    /// Forgets what was read of `entity`'s directory: the next request reads it again (a step
    /// this process wrote is then seen at once).
    pub(crate) fn forget(&self, entity: &'static str) {
        self.snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(entity);
    }

    /// `schema`'s directory, read at most a lease ago: the cached copy while its lease runs
    /// (refreshed in the background past half of it), otherwise read now.
    pub(crate) async fn snapshot(
        self: &Arc<Self>,
        client: &Client,
        table: &str,
        schema: &'static EntitySchema,
    ) -> Result<Arc<Snapshot>, Error> {
        let now = self.lease_clock.now();
        if let Some(snapshot) = self.cached(schema.entity) {
            let age = now.saturating_sub(snapshot.read_at);
            if age < self.timing.lease {
                if self.timing.refresh_ahead && age >= self.timing.lease / 2 {
                    self.refresh_in_background(client, table, schema);
                }
                return Ok(snapshot);
            }
        }
        let _one_read = self.reading.lock().await;
        // Another request may have read it while this one waited.
        if let Some(snapshot) = self.cached(schema.entity) {
            if self.lease_clock.now().saturating_sub(snapshot.read_at) < self.timing.lease {
                return Ok(snapshot);
            }
        }
        self.read(client, table, schema).await
    }

    fn refresh_in_background(
        self: &Arc<Self>,
        client: &Client,
        table: &str,
        schema: &'static EntitySchema,
    ) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (directory, client, table) = (Arc::clone(self), client.clone(), table.to_owned());
        runtime.spawn(async move {
            // A failed refresh is retried by the next request (the cached copy keeps its
            // lease; once that runs out the request reads, and reports the failure).
            let _ = directory.read(&client, &table, schema).await;
            directory.refreshing.store(false, Ordering::Release);
        });
    }

    /// Reads `schema`'s directory now (consistently) and caches it.
    pub(crate) async fn read(
        &self,
        client: &Client,
        table: &str,
        schema: &'static EntitySchema,
    ) -> Result<Arc<Snapshot>, Error> {
        // The lease counts from before the read: the copy is at least that recent.
        let read_at = self.lease_clock.now();
        let stored = read_stored(client, table, schema).await?;
        let snapshot = Arc::new(Snapshot {
            stored,
            read_at,
            default_n: schema.pk.sharding.shard_count().unwrap_or(1),
        });
        let mut snapshots = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A slower read never replaces a newer one.
        let newer = snapshots
            .get(schema.entity)
            .is_some_and(|cached| cached.read_at > read_at);
        if !newer {
            snapshots.insert(schema.entity, Arc::clone(&snapshot));
        }
        Ok(snapshot)
    }
}

/// Reads the stored directory of `schema` (consistently): empty when there is no item.
pub(crate) async fn read_stored(
    client: &Client,
    table: &str,
    schema: &'static EntitySchema,
) -> Result<Stored, Error> {
    let output = client
        .get_item()
        .table_name(table)
        .set_key(Some(directory_key(schema)))
        .consistent_read(true)
        .send()
        .await
        .map_err(|e| Error::dynamo("GetItem", table, e))?;
    match output.item {
        Some(item) => Ok(from_item(schema, &item)?),
        None => Ok(Stored::default()),
    }
}

/// `base` with one key's `layout` (see `PartitionKeySchema::in_layout`), as a schema the
/// query engine plans with: made once per entity and layout, and kept (a process sees few
/// layouts: a key's count and, while it changes, its previous one).
pub(crate) fn layout_schema(
    base: &'static EntitySchema,
    layout: KeyLayout,
) -> &'static EntitySchema {
    type Schemas = Mutex<HashMap<(usize, KeyLayout), &'static EntitySchema>>;
    static SCHEMAS: std::sync::OnceLock<Schemas> = std::sync::OnceLock::new();
    let mut schemas = SCHEMAS
        .get_or_init(Schemas::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let key = (std::ptr::from_ref(base) as usize, layout);
    schemas.entry(key).or_insert_with(|| {
        let mut schema = *base;
        schema.pk = base.pk.in_layout(layout);
        // Bounded by the layouts a process uses: at most a handful per entity.
        Box::leak(Box::new(schema))
    })
}
