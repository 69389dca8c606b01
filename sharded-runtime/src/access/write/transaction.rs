//! Typed transactions: `TransactWriteItems` across entities and shards, checked before
//! sending, idempotent under retries, with cancellations mapped back to the action and key.

use std::collections::HashSet;
use std::sync::Arc;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
    Update as UpdateAction,
};

use crate::access::condition::{values_of, Condition, Names, Values};
use crate::access::entity::ShardedEntity;
use crate::access::handle::{Handle, LayoutCheck};
pub use crate::access::item_key::ItemKey;
use crate::access::placement::{marked_moved, Placement};
use crate::access::read::read_cache::{ReadCache, Written};
use crate::access::retry::RetryPolicy;
use crate::access::write::idempotent::{self, FirstSent, TokenRequest};
use crate::access::write::settle::PendingSettle;
use crate::access::write::update::{GsiRewrite, Update};
use crate::access::write::write_rules::{
    entity_guard, key_of, no_item, own_entity, physical_item, put_guard, stamp_write,
    with_condition,
};
use crate::capacity::stats::record;
use crate::capacity::units::item_size;
pub use crate::error::transaction::CanceledAction;
use crate::error::{Error, TransactionRefusal};
use crate::item::{describe_key, Item};
use crate::keys::schema::EntitySchema;

/// The most actions one `TransactWriteItems` takes.
pub const MAX_TRANSACTION_ACTIONS: usize = 100;
/// The largest total size of one transaction, in bytes (4 MB): DynamoDB counts its items,
/// keys, expressions and their attribute names and values.
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;

struct Action {
    kind: &'static str,
    entity: &'static str,
    schema: &'static EntitySchema,
    key: Item,
    /// What DynamoDB counts of it towards [`MAX_TRANSACTION_BYTES`].
    size: usize,
    item: TransactWriteItem,
}

/// A typed write transaction over one table: puts, updates, deletes and condition checks of
/// any entities, on any shards, applied all or nothing.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "USER#{user_id}")]
/// # struct Wallet { user_id: String, coins: i64 }
/// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
/// let f = Wallet::fields();
/// repo.transaction()
///     .update(Wallet::update(repo, "alice").add(f.coins, -5).condition(f.coins.ge(5)))
///     .update(Wallet::update(repo, "bob").add(f.coins, 5))
///     .commit()
///     .await?;
/// # Ok(()) }
/// ```
///
/// Checked before anything is sent ([`Error::InvalidTransaction`]): at most
/// [`MAX_TRANSACTION_ACTIONS`] actions and [`MAX_TRANSACTION_BYTES`] (items, keys, update and
/// condition expressions with their names and values, as DynamoDB counts them), and no two
/// actions on one key (DynamoDB refuses both). Puts are guarded like `Repo::put`: an item of
/// another entity under the same key is not overwritten; a versioned entity replaces only the
/// version read, and writes it + 1, as `Repo::put` does.
///
/// **During a layout transition** (`previous_n`, `legacy`) every action obeys the rule of
/// `Repo`'s writes: no write leaves a copy of its item at the previous place. A `put`,
/// `put_if`, `update`, `delete` or `delete_if` carries the guarded delete of its item's
/// previous place as an extra action, and `move_item`'s target a check that its previous
/// place is empty (so a transaction takes at most 50 such writes). Puts and the actions whose
/// condition reads the stored item (`put_if`, `update`, `delete_if`, `check`, `move_item`'s
/// source) settle their items before the commit is sent: an item still at its previous
/// place is moved to its current one (one consistent `GetItem` per such action, plus a
/// two-action transaction and a delete when the item was there, its old copy marked as
/// moved before the delete), so the condition sees it, and a put leaves no old copy for its
/// previous place's delete to remove unmarked.
///
/// **Idempotent.** Each transaction carries a `ClientRequestToken` (random, or yours with
/// [`with_token`](Self::with_token)). Its request is built once: every send, the SDK's
/// retries and ours alike, is the identical request with the same token, so a commit whose
/// answer was lost, or that another transaction conflicted with, is sent again and applied
/// at most once (DynamoDB remembers a token for 10 minutes). To retry it yourself,
/// [`prepare`](Self::prepare) it and commit the [`PreparedTransaction`] again. A failed
/// condition is [`Error::TransactionCanceled`], listing each action DynamoDB gave a reason
/// for, with its entity and key.
#[must_use = "a transaction does nothing until it is committed"]
pub struct Transaction {
    /// The repository's handle: the client, the table, its read cache (the commit is one of
    /// its writes) and its hot-key statistics (which record the commit's writes).
    handle: Arc<Handle>,
    token: Option<String>,
    actions: Vec<Action>,
    /// For each action, the position of the call that added it (`put`, `move_item`, ...):
    /// what a cancellation reports, since one call may send several actions.
    added_by: Vec<usize>,
    /// The number of calls so far.
    calls: usize,
    /// Items to settle before the commit (conditional actions during a transition).
    settles: Vec<PendingSettle>,
    /// The per-key layouts items were placed under, checked again before the commit.
    layout_checks: Vec<LayoutCheck>,
    retry: RetryPolicy,
    error: Option<Error>,
}

/// An action with what the placement of its item adds: the previous place's delete or check,
/// the settle to run before the commit, and the per-key layout it was placed under.
struct Placed {
    actions: Vec<Action>,
    settle: Option<PendingSettle>,
    layout_check: Option<LayoutCheck>,
}

impl Placed {
    fn under(mut self, layout_check: Option<LayoutCheck>) -> Self {
        self.layout_check = layout_check;
        self
    }
}

impl Transaction {
    /// An empty transaction on the handle's table: what [`Repo::transaction`](crate::Repo::transaction) returns.
    pub(crate) fn new(handle: Arc<Handle>) -> Self {
        Transaction {
            handle,
            token: None,
            actions: Vec::new(),
            added_by: Vec::new(),
            calls: 0,
            settles: Vec::new(),
            layout_checks: Vec::new(),
            retry: RetryPolicy::default(),
            error: None,
        }
    }

    /// Uses `token` as the `ClientRequestToken` (1 to 36 characters, else
    /// [`Error::InvalidToken`] from `commit`) instead of a random one: a token derived from
    /// what identifies the change (an order id) lets another process that retries it learn
    /// that it was already sent ([`Error::IdempotentParameterMismatch`]) instead of applying
    /// it twice. Within one process, retry with [`PreparedTransaction::commit`].
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// How many times, and with what backoff, `commit` sends the identical request while its
    /// answer is unknown or it was canceled only for conflicts or throttles (default:
    /// [`RetryPolicy::default`]).
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    fn push(self, placed: Result<Placed, Error>) -> Self {
        self.push_call([placed])
    }

    /// Adds the actions of one call (`move_item` has two parts), all reported under that
    /// call's position if the transaction is canceled.
    fn push_call(mut self, parts: impl IntoIterator<Item = Result<Placed, Error>>) -> Self {
        let call = self.calls;
        self.calls += 1;
        for placed in parts {
            match placed {
                Ok(placed) => {
                    self.added_by
                        .extend(std::iter::repeat_n(call, placed.actions.len()));
                    self.actions.extend(placed.actions);
                    self.settles.extend(placed.settle);
                    self.layout_checks.extend(placed.layout_check);
                }
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
        }
        self
    }

    /// Puts `entity` (guarded: an existing item under its key must be of the same entity).
    /// During a transition, settled before the commit (see [`Transaction`]), with the guarded
    /// delete of its previous place.
    pub fn put<E: ShardedEntity + 'static>(self, entity: &E) -> Self {
        let placed = put_action(&self.handle, entity, PutRule::Guarded, None);
        self.push(placed)
    }

    /// Puts `entity` only if `condition` holds for the stored item (and the guard). During a
    /// transition the item is settled before the commit, and its previous place deleted.
    pub fn put_if<E: ShardedEntity + 'static>(self, entity: &E, condition: Condition<E>) -> Self {
        let placed = put_action(&self.handle, entity, PutRule::Guarded, Some(condition));
        self.push(placed)
    }

    /// Applies a typed update (built with the entity's generated `update`).
    ///
    /// It acts on the item's current place, which must hold the item (an update never creates
    /// one). During a layout transition the item is settled before the commit (moved to its
    /// current place if it is still at its previous one, as `Update::send` does), and the
    /// guarded delete of its previous place is an extra action.
    pub fn update<E: ShardedEntity + GsiRewrite + 'static>(self, update: Update<E>) -> Self {
        let table = self.handle.table().to_owned();
        let layouts = self.handle.cached_layouts(E::SCHEMA);
        let placed = update
            .build_in(layouts.as_deref())
            .and_then(|(built, layout_check)| {
                let size = request_size(
                    &built.key,
                    &[&built.expression, &built.condition],
                    &built.names,
                    &built.values,
                );
                let item = TransactWriteItem::builder()
                    .update(
                        UpdateAction::builder()
                            .table_name(&table)
                            .set_key(Some(built.key.clone()))
                            .update_expression(built.expression)
                            .condition_expression(built.condition)
                            .set_expression_attribute_names(Some(built.names))
                            .set_expression_attribute_values(values_of(built.values))
                            .return_values_on_condition_check_failure(
                                ReturnValuesOnConditionCheckFailure::AllOld,
                            )
                            .build()
                            .map_err(Error::build("an action"))?,
                    )
                    .build();
                let action = Action {
                    kind: "update",
                    entity: E::SCHEMA.entity,
                    schema: E::SCHEMA,
                    key: built.key,
                    size,
                    item,
                };
                placed::<E>(&table, action, &built.placement, Previous::Delete, true)
                    .map(|placed| placed.under(layout_check))
            });
        self.push(placed)
    }

    /// Deletes the item `entity` identifies (its key), if it is of this entity. During a
    /// layout transition (`previous_n`, `legacy`) the copy at the item's previous place is
    /// deleted too, as a second action, so the item cannot come back from there.
    pub fn delete<E: ShardedEntity + 'static>(self, entity: &E) -> Self {
        let placed = keyed_action(&self.handle, entity, Kind::Delete, None);
        self.push(placed)
    }

    /// Deletes the item `entity` identifies only if `condition` holds for it. During a
    /// transition the item is settled before the commit, and its previous place deleted too.
    pub fn delete_if<E: ShardedEntity + 'static>(
        self,
        entity: &E,
        condition: Condition<E>,
    ) -> Self {
        let placed = keyed_action(&self.handle, entity, Kind::Delete, Some(condition));
        self.push(placed)
    }

    /// Requires `condition` to hold for the item `entity` identifies, without writing it.
    /// During a transition the item is settled before the commit, so the check sees it.
    pub fn check<E: ShardedEntity + 'static>(self, entity: &E, condition: Condition<E>) -> Self {
        let placed = keyed_action(&self.handle, entity, Kind::Check, Some(condition));
        self.push(placed)
    }

    /// Moves an item to a new key: deletes `from` (which must exist, as this entity) and puts
    /// `to` (whose key must be free), atomically. The way to change a key field.
    ///
    /// During a layout transition, `from` is settled before the commit and its previous place
    /// deleted too, and `to`'s previous place must be empty (an item not yet migrated there is
    /// not replaced).
    pub fn move_item<E: ShardedEntity + 'static>(self, from: &E, to: &E) -> Self {
        let delete = keyed_action(&self.handle, from, Kind::DeleteExisting, None);
        let put = put_action(&self.handle, to, PutRule::New, None);
        self.push_call([delete, put])
    }

    /// The number of actions so far (with the previous places' deletes and checks during a
    /// layout transition).
    pub fn len(&self) -> usize {
        self.actions.len()
    }

    /// Whether the transaction has no action yet.
    pub fn is_empty(&self) -> bool {
        self.actions.is_empty()
    }

    /// Checks the transaction, settles the items of its conditional actions during a layout
    /// transition, and sends it as one `TransactWriteItems`: [`prepare`](Self::prepare), then
    /// [`PreparedTransaction::commit`] once.
    ///
    /// An answer that never came, a cancellation only for conflicts with other transactions
    /// (`TransactionConflict`) or throttles, and an earlier send still in progress are sent
    /// again, the identical request under the same token, within the [`RetryPolicy`]. An
    /// `Err` other than [`Error::TransactionCanceled`] for a failed condition may leave the
    /// outcome unknown: to retry it yourself, `prepare` and commit the prepared transaction
    /// again (never a rebuilt one: see [`PreparedTransaction`]).
    pub async fn commit(self) -> Result<(), Error> {
        let span = transaction_span(self.handle.table(), self.actions.len());
        crate::telemetry::within(
            span,
            None,
            async move { self.prepare().await?.commit().await },
        )
        .await
    }

    /// Checks the transaction and settles the items of its conditional actions (during a
    /// layout transition), then fixes the request: its items with their timestamps and
    /// versions, and its token. The [`PreparedTransaction`] can be committed again after an
    /// error, sending the identical request, so that DynamoDB applies it at most once.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "USER#{user_id}")]
    /// # struct Wallet { user_id: String, coins: i64 }
    /// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
    /// let f = Wallet::fields();
    /// let transfer = repo.transaction()
    ///     .update(Wallet::update(repo, "alice").add(f.coins, -5).condition(f.coins.ge(5)))
    ///     .update(Wallet::update(repo, "bob").add(f.coins, 5))
    ///     .prepare()
    ///     .await?;
    /// let mut outcome = transfer.commit().await;
    /// for _ in 0..3 {
    ///     match &outcome {
    ///         // Unknown outcome (the network, a 5xx, still in progress): the same request
    ///         // again is safe, DynamoDB applies it at most once.
    ///         Err(e) if e.outcome_unknown() => outcome = transfer.commit().await,
    ///         _ => break,
    ///     }
    /// }
    /// outcome?;
    /// # Ok(()) }
    /// ```
    pub async fn prepare(self) -> Result<PreparedTransaction, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        check(&self.actions, &self.added_by)?;
        self.handle.verify_layouts(&self.layout_checks).await?;
        if !self.settles.is_empty() {
            // A settle moves an item between the places the actions name.
            let _written = writing(
                self.handle.read_cache(),
                self.actions.iter().map(|a| (a.schema, &a.key)),
            );
            for settle in &self.settles {
                settle
                    .run(self.handle.client(), self.handle.table())
                    .await?;
            }
        }
        let items = self.actions.iter().map(|a| a.item.clone()).collect();
        let request = match self.token {
            Some(token) => TokenRequest::with_token(items, token)?,
            None => TokenRequest::new(items),
        };
        let actions = self
            .actions
            .into_iter()
            .zip(self.added_by)
            .map(|(action, index)| ActionLabel {
                index,
                kind: action.kind,
                entity: action.entity,
                schema: action.schema,
                key: action.key,
            })
            .collect();
        Ok(PreparedTransaction {
            handle: self.handle,
            request,
            actions,
            retry: self.retry,
            first_sent: FirstSent::default(),
        })
    }
}

/// What a cancellation reports of one action.
struct ActionLabel {
    index: usize,
    kind: &'static str,
    entity: &'static str,
    schema: &'static EntitySchema,
    key: Item,
}

/// A transaction whose request is fixed: its items (timestamps and versions stamped once), its
/// settles done, its `ClientRequestToken` chosen. [`commit`](Self::commit) sends it, and can be
/// called again after an error: every send is the identical request under the same token, so
/// DynamoDB applies it at most once.
///
/// **Why not rebuild and resend?** A rebuilt transaction stamps new `created_at`/`updated_at`
/// values (and a new version of a versioned put): under the same token, DynamoDB refuses it
/// with [`Error::IdempotentParameterMismatch`] (if the first request got through) instead of
/// confirming the first one; under a new token it may apply the change twice.
///
/// **The 10-minute window.** DynamoDB remembers a token for 10 minutes
/// ([`IDEMPOTENCY_WINDOW`](crate::access::write::idempotent::IDEMPOTENCY_WINDOW)). A prepared
/// transaction first sent more than 9 minutes earlier is not sent again
/// ([`Error::TokenExpired`]): read the items to see whether it was applied.
///
/// Across processes, give the transaction a token of your own
/// ([`Transaction::with_token`]) derived from what identifies the change (an order id): a
/// process that retries it rebuilds it with new timestamps, so DynamoDB answers
/// [`Error::IdempotentParameterMismatch`] when the first process's request got through:
/// a typed answer that says "already sent", never a double application.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "USER#{user_id}")]
/// # struct Wallet { user_id: String, coins: i64 }
/// # async fn demo(repo: &Repo<Wallet>, wallet: Wallet) -> Result<(), Error> {
/// let prepared = repo.transaction().put(&wallet).prepare().await?;
/// println!("token {}", prepared.token());
/// if let Err(e) = prepared.commit().await {
///     if e.outcome_unknown() {
///         prepared.commit().await?; // the identical request: applied at most once
///     }
/// }
/// # Ok(()) }
/// ```
#[must_use = "a prepared transaction does nothing until it is committed"]
pub struct PreparedTransaction {
    handle: Arc<Handle>,
    request: TokenRequest,
    actions: Vec<ActionLabel>,
    retry: RetryPolicy,
    first_sent: FirstSent,
}

impl std::fmt::Debug for PreparedTransaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedTransaction")
            .field("table", &self.handle.table())
            .field("token", &self.request.token)
            .field("actions", &self.actions.len())
            .finish()
    }
}

impl PreparedTransaction {
    /// The `ClientRequestToken` every send carries.
    pub fn token(&self) -> &str {
        &self.request.token
    }

    /// The number of actions sent (with the previous places' deletes and checks during a
    /// layout transition).
    pub fn len(&self) -> usize {
        self.request.items.len()
    }

    /// Whether there are no actions (never: an empty transaction is refused by `prepare`).
    pub fn is_empty(&self) -> bool {
        self.request.items.is_empty()
    }

    /// Sends the transaction, and sends it again (identical, same token) while its answer is
    /// unknown or it was canceled only for conflicts or throttles, within the
    /// [`RetryPolicy`]. Can be called again after an `Err`; refused with
    /// [`Error::TokenExpired`] once the first send is more than 9 minutes old.
    ///
    /// A failed condition is [`Error::TransactionCanceled`], listing each action DynamoDB
    /// gave a reason for, with its entity and key.
    pub async fn commit(&self) -> Result<(), Error> {
        if self.first_sent.past_horizon() {
            return Err(Error::TokenExpired {
                token: self.request.token.clone(),
            });
        }
        // However the send ends (an error may leave it applied), it was a write of the
        // repository to every partition its actions name.
        let _written = writing(
            self.handle.read_cache(),
            self.actions.iter().map(|a| (a.schema, &a.key)),
        );
        let result = idempotent::send(
            self.handle.client(),
            &self.request,
            &self.retry,
            &self.first_sent,
        )
        .await;
        match result {
            Ok(_) => {
                for (action, write) in self.actions.iter().zip(&self.request.items) {
                    record::transaction_write(self.handle.stats(), action.schema, write);
                }
                Ok(())
            }
            Err(e) => match e.into_service_error() {
                TransactWriteItemsError::TransactionCanceledException(canceled) => {
                    let passes = idempotent::cancellation_passes(canceled.cancellation_reasons());
                    let canceled = Error::TransactionCanceled {
                        actions: self.canceled_actions(canceled.cancellation_reasons()),
                    };
                    Err(idempotent::after_sends(
                        &self.first_sent,
                        &self.request.token,
                        passes,
                        canceled,
                    ))
                }
                other => Err(idempotent::sent_error(
                    self.handle.table(),
                    &self.request.token,
                    &self.first_sent,
                    other,
                )),
            },
        }
    }

    /// The actions DynamoDB gave a reason for, labelled with the call that added each.
    fn canceled_actions(
        &self,
        reasons: &[aws_sdk_dynamodb::types::CancellationReason],
    ) -> Vec<CanceledAction> {
        self.actions
            .iter()
            .zip(reasons)
            .filter_map(|(action, reason)| {
                let code = reason.code()?;
                (code != "None").then(|| CanceledAction {
                    index: action.index,
                    kind: action.kind,
                    entity: action.entity,
                    key: describe_key(action.schema, &action.key),
                    code: code.to_owned(),
                    message: reason.message().map(str::to_owned),
                    current: reason.item().cloned(),
                })
            })
            .collect()
    }
}

/// The repository's write hook ([`ReadCache::writing`]) over the partitions of the actions'
/// `keys`, for a transaction built by a repository (`cache`).
fn writing<'a>(
    cache: &'a ReadCache,
    keys: impl Iterator<Item = (&'a EntitySchema, &'a Item)>,
) -> Written<'a> {
    cache.writing(keys.filter_map(|(schema, key)| {
        key.get(schema.pk.attribute)?
            .as_s()
            .ok()
            .map(String::as_str)
    }))
}

/// What an action adds at its item's previous place during a transition.
#[derive(Clone, Copy, PartialEq)]
enum Previous {
    /// Its guarded delete: the write leaves no copy behind.
    Delete,
    /// A check that it is empty: the write creates its item.
    Vacant,
}

/// `action` with what its placement adds: the previous place's delete or check, and, for an
/// action whose condition reads the stored item (`settle`), the settle before the commit.
fn placed<E: ShardedEntity + 'static>(
    table: &str,
    action: Action,
    placement: &Placement,
    previous: Previous,
    settle: bool,
) -> Result<Placed, Error> {
    let schema = E::SCHEMA;
    let extra = match previous {
        Previous::Delete => placement.previous_delete(table)?.map(|(key, delete)| {
            (
                "delete",
                key,
                TransactWriteItem::builder().delete(delete).build(),
            )
        }),
        Previous::Vacant => placement.previous_vacancy(table)?.map(|(key, check)| {
            (
                "check",
                key,
                TransactWriteItem::builder().condition_check(check).build(),
            )
        }),
    }
    .map(|(kind, key, item)| Action {
        kind,
        entity: schema.entity,
        schema,
        size: item_size(&key),
        key,
        item,
    });
    // An old copy at a previous shard of unknown placement is moved to the current place
    // before the commit, whatever the action: the transaction cannot name where it is.
    let settle = if settle || placement.previous_unknown() {
        placement.pending_settle::<E>()
    } else {
        None
    };
    Ok(Placed {
        actions: std::iter::once(action).chain(extra).collect(),
        settle,
        layout_check: None,
    })
}

/// What a put requires of the item already under its key.
enum PutRule {
    /// Nothing, or an item of this entity (replaced).
    Guarded,
    /// Nothing: the key must be free (the new half of a move).
    New,
}

fn put_action<E: ShardedEntity + 'static>(
    handle: &Handle,
    entity: &E,
    rule: PutRule,
    condition: Option<Condition<E>>,
) -> Result<Placed, Error> {
    let table = handle.table();
    let schema = E::SCHEMA;
    let (placement, layout_check) = handle.place_cached(entity)?;
    let mut item = physical_item(entity, &placement)?;
    // As `Repo::put`: the version read is checked and bumped, the times stamped.
    let read_version = stamp_write(schema, &mut item)?;
    let key = key_of(schema, &item);
    let (mut names, mut values) = (Names::new(), Values::new());
    let (base, previous, settle) = match rule {
        PutRule::Guarded => {
            // A condition on the stored item (the user's, or the version) needs it settled; so
            // does any put during a transition: an item still at its previous place is moved
            // first, its old copy marked before its delete (the previous place's delete below,
            // which a transaction cannot precede with a mark, then finds it empty).
            let reads = condition.is_some() || schema.version.is_some() || placement.has_previous();
            let guard = put_guard(
                schema,
                placement.pk(),
                read_version,
                &mut names,
                &mut values,
            );
            (guard, Previous::Delete, reads)
        }
        PutRule::New => (
            no_item(schema, &mut names).to_owned(),
            Previous::Vacant,
            false,
        ),
    };
    let expression = with_condition(&base, condition, &mut names, &mut values)?;
    let size = request_size(&item, &[&expression], &names, &values);
    let put = Put::builder()
        .table_name(table)
        .set_item(Some(item))
        .condition_expression(expression)
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(values_of(values))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(Error::build("an action"))?;
    let action = Action {
        kind: "put",
        entity: schema.entity,
        schema,
        key,
        size,
        item: TransactWriteItem::builder().put(put).build(),
    };
    placed::<E>(table, action, &placement, previous, settle).map(|p| p.under(layout_check))
}

/// A keyed action: what it does, and what it requires of the stored item.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Delete: no item, or one of this entity.
    Delete,
    /// Delete an item that must exist, as this entity (the old half of a move).
    DeleteExisting,
    /// Condition check: the item must be of this entity.
    Check,
}

fn keyed_action<E: ShardedEntity + 'static>(
    handle: &Handle,
    entity: &E,
    kind: Kind,
    condition: Option<Condition<E>>,
) -> Result<Placed, Error> {
    let table = handle.table();
    let schema = E::SCHEMA;
    let (placement, layout_check) = handle.place_cached(entity)?;
    let key = placement.current_key()?;
    let (mut names, mut values) = (Names::new(), Values::new());
    // Never touch another entity's item under the same key.
    let base = match kind {
        Kind::Delete => entity_guard(schema, placement.pk(), &mut names, &mut values),
        Kind::DeleteExisting | Kind::Check => {
            own_entity(schema, placement.pk(), &mut names, &mut values)
        }
    };
    // A condition on the stored item (the user's, or "it exists") needs it settled.
    let settle = condition.is_some() || kind != Kind::Delete;
    let expression = with_condition(&base, condition, &mut names, &mut values)?;
    let size = request_size(&key, &[&expression], &names, &values);
    let on_failure = ReturnValuesOnConditionCheckFailure::AllOld;
    let item = if kind == Kind::Check {
        let check = ConditionCheck::builder()
            .table_name(table)
            .set_key(Some(key.clone()))
            .condition_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values_of(values))
            .return_values_on_condition_check_failure(on_failure)
            .build()
            .map_err(Error::build("an action"))?;
        TransactWriteItem::builder().condition_check(check).build()
    } else {
        let delete = Delete::builder()
            .table_name(table)
            .set_key(Some(key.clone()))
            .condition_expression(expression)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values_of(values))
            .return_values_on_condition_check_failure(on_failure)
            .build()
            .map_err(Error::build("an action"))?;
        TransactWriteItem::builder().delete(delete).build()
    };
    let action = Action {
        kind: match kind {
            Kind::Check => "check",
            _ => "delete",
        },
        entity: schema.entity,
        schema,
        key,
        size,
        item,
    };
    // A check writes nothing, so it leaves nothing behind: settled, it needs no extra action.
    let previous = if kind == Kind::Check {
        None
    } else {
        Some(Previous::Delete)
    };
    match previous {
        Some(previous) => placed::<E>(table, action, &placement, previous, settle),
        None => Ok(Placed {
            actions: vec![action],
            settle: if settle {
                placement.pending_settle::<E>()
            } else {
                None
            },
            layout_check: None,
        }),
    }
    .map(|placed| placed.under(layout_check))
}

/// What DynamoDB counts of one action towards a transaction's 4 MB: its item (a put) or key,
/// its expressions, and their attribute names and values.
fn request_size(item: &Item, expressions: &[&str], names: &Names, values: &Values) -> usize {
    let values_size: usize = values
        .iter()
        .map(|(placeholder, value)| {
            placeholder.len() + item_size(&Item::from([(String::new(), value.clone())]))
        })
        .sum();
    item_size(item)
        + expressions.iter().map(|e| e.len()).sum::<usize>()
        + names.iter().map(|(p, n)| p.len() + n.len()).sum::<usize>()
        + values_size
}

fn check(actions: &[Action], added_by: &[usize]) -> Result<(), Error> {
    if actions.is_empty() {
        return Err(TransactionRefusal::Empty.into());
    }
    if actions.len() > MAX_TRANSACTION_ACTIONS {
        let (actions, max) = (actions.len(), MAX_TRANSACTION_ACTIONS);
        return Err(TransactionRefusal::TooManyActions { actions, max }.into());
    }
    let bytes: usize = actions.iter().map(|a| a.size).sum();
    if bytes > MAX_TRANSACTION_BYTES {
        let max = MAX_TRANSACTION_BYTES;
        return Err(TransactionRefusal::TooLarge { bytes, max }.into());
    }
    let mut seen = HashSet::new();
    for (action, index) in actions.iter().zip(added_by) {
        let mut key: Vec<(String, String)> = action
            .key
            .iter()
            .map(|(k, v)| (k.clone(), format!("{v:?}")))
            .collect();
        key.sort();
        if !seen.insert(key) {
            return Err(TransactionRefusal::SameKey {
                index: *index,
                kind: action.kind,
                entity: action.entity,
                key: describe_key(action.schema, &action.key),
            }
            .into());
        }
    }
    Ok(())
}

/// A transactional read of up to 100 items of any entities and shards: one
/// `TransactGetItems`, a snapshot no concurrent transaction is half-applied in.
///
/// Started from the repository ([`Repo::transact_get`](crate::Repo::transact_get)(crate::Repo::transact_get)); each item is added with its key
/// and taken from the answer with the same key.
///
/// ```no_run
/// # use serde::{Deserialize, Serialize};
/// # use sharded::{Error, Repo, ShardedEntity};
/// # #[derive(ShardedEntity, Serialize, Deserialize)]
/// # #[pk(template = "USER#{user_id}")]
/// # struct Wallet { user_id: String, coins: i64 }
/// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
/// let (alice, bob) = (Wallet::key("alice")?, Wallet::key("bob")?);
/// let mut answer = repo.transact_get().get(&alice).get(&bob).send().await?;
/// let total = answer.take(&alice)?.map_or(0, |w| w.coins) + answer.take(&bob)?.map_or(0, |w| w.coins);
/// # Ok(()) }
/// ```
pub struct TransactGet {
    handle: Arc<Handle>,
    /// Per item, the keys to read in order (current place first, then the previous one
    /// during a transition) and the entity schema, to adopt an untagged legacy item.
    slots: Vec<(Vec<Item>, &'static EntitySchema)>,
    /// Per item, the key it was added with: what the answer finds it by.
    added: Vec<(&'static str, String, Option<String>)>,
    /// The per-key layouts items were placed under, checked again before sending.
    layout_checks: Vec<LayoutCheck>,
    error: Option<Error>,
}

impl TransactGet {
    /// An empty read on the handle's table: what [`Repo::transact_get`](crate::Repo::transact_get) returns.
    pub(crate) fn new(handle: Arc<Handle>) -> Self {
        TransactGet {
            handle,
            slots: Vec::new(),
            added: Vec::new(),
            layout_checks: Vec::new(),
            error: None,
        }
    }

    /// Adds the item `key` names; its result is taken from the answer with the same key
    /// ([`TransactGetAnswer::take`]). Adding one key twice is [`Error::InvalidTransaction`]
    /// from [`send`](Self::send) (DynamoDB allows one get per item).
    ///
    /// During a layout transition (`previous_n`, `legacy`) the item's previous place is read
    /// too, in the same snapshot: an item not yet migrated is found there, and the copy at
    /// the current place wins. Such an item takes two of the read's 100 gets.
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "USER#{user_id}")]
    /// # struct Wallet { user_id: String, coins: i64 }
    /// # async fn demo(repo: &Repo<Wallet>, users: &[&str]) -> Result<(), Error> {
    /// let keys = users.iter().map(|u| Wallet::key(u)).collect::<Result<Vec<_>, _>>()?;
    /// let read = keys.iter().fold(repo.transact_get(), |read, key| read.get(key));
    /// let mut answer = read.send().await?;
    /// for key in &keys {
    ///     println!("{:?}", answer.take(key)?.map(|w| w.coins));
    /// }
    /// # Ok(()) }
    /// ```
    pub fn get<E: ShardedEntity>(mut self, key: &ItemKey<E>) -> Self {
        let (placement, layout_check) = self.handle.place_key_cached(key);
        self.layout_checks.extend(layout_check);
        let keys = match placement.read_keys() {
            Ok(keys) => keys,
            Err(e) => {
                self.error.get_or_insert(e);
                Vec::new()
            }
        };
        let added = (E::SCHEMA.entity, key.pk.clone(), key.sk.clone());
        if self.added.contains(&added) {
            let (entity, pk, sk) = added.clone();
            let twice = TransactionRefusal::ReadTwice { entity, pk, sk };
            self.error.get_or_insert(twice.into());
        }
        self.slots.push((keys, E::SCHEMA));
        self.added.push(added);
        self
    }

    /// Sends the read. At most [`MAX_TRANSACTION_ACTIONS`] gets, counting an item's previous
    /// place during a layout transition ([`Error::InvalidTransaction`] otherwise, before
    /// sending). A read canceled only because a write transaction held one of its items
    /// (`TransactionConflict`), or throttled, is sent again within [`RetryPolicy::default`].
    pub async fn send(self) -> Result<TransactGetAnswer, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        self.handle.verify_layouts(&self.layout_checks).await?;
        let gets_count: usize = self.slots.iter().map(|(keys, _)| keys.len()).sum();
        if self.slots.is_empty() || gets_count > MAX_TRANSACTION_ACTIONS {
            let (gets, max) = (gets_count, MAX_TRANSACTION_ACTIONS);
            return Err(TransactionRefusal::Gets { gets, max }.into());
        }
        let gets: Vec<aws_sdk_dynamodb::types::TransactGetItem> = self
            .slots
            .iter()
            .flat_map(|(keys, _)| keys)
            .map(|key| {
                aws_sdk_dynamodb::types::Get::builder()
                    .table_name(self.handle.table())
                    .set_key(Some(key.clone()))
                    .build()
                    .map(|get| {
                        aws_sdk_dynamodb::types::TransactGetItem::builder()
                            .get(get)
                            .build()
                    })
                    .map_err(Error::build("an action"))
            })
            .collect::<Result<_, _>>()?;
        // A read changes nothing, so a read canceled only because a write transaction held
        // one of its items (or for a throttle) is simply sent again, within the policy.
        let retry = RetryPolicy::default();
        let mut attempt = 0;
        let output = loop {
            let result = self
                .handle
                .client()
                .transact_get_items()
                .set_transact_items(Some(gets.clone()))
                .send()
                .await;
            attempt += 1;
            match result {
                Ok(output) => break output,
                Err(e) if attempt < retry.max_attempts && read_canceled_for_passing_reasons(&e) => {
                    tokio::time::sleep(retry.backoff(attempt - 1)).await;
                }
                Err(e) => return Err(Error::dynamo("TransactGetItems", self.handle.table(), e)),
            }
        };
        let mut responses = output
            .responses
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.item.filter(|item| !item.is_empty()));
        let items = self
            .slots
            .iter()
            .map(|(keys, schema)| {
                // Every answer of the slot is taken (the next slot's follow), the current
                // place first: its copy wins over the previous place's. A copy marked `moved`
                // stands for nothing (in this snapshot its item is at its other place, or was
                // deleted after the move).
                let slot: Vec<Option<Item>> = responses.by_ref().take(keys.len()).collect();
                slot.into_iter()
                    .flatten()
                    .find(|item| !marked_moved(schema.move_attribute(), item))
            })
            .collect();
        Ok(TransactGetAnswer {
            items,
            added: self.added,
        })
    }
}

/// Whether a transactional read was canceled only for reasons that pass: a conflict with a
/// write transaction on one of its items, or a throttle.
fn read_canceled_for_passing_reasons(
    error: &aws_sdk_dynamodb::error::SdkError<
        aws_sdk_dynamodb::operation::transact_get_items::TransactGetItemsError,
    >,
) -> bool {
    use aws_sdk_dynamodb::operation::transact_get_items::TransactGetItemsError;
    match error.as_service_error() {
        Some(TransactGetItemsError::TransactionCanceledException(canceled)) => {
            idempotent::cancellation_passes(canceled.cancellation_reasons())
        }
        _ => false,
    }
}

/// The answer of a [`TransactGet`]: take each item with the key it was added with.
#[derive(Debug)]
pub struct TransactGetAnswer {
    items: Vec<Option<Item>>,
    /// The key each item was added with, in order.
    added: Vec<(&'static str, String, Option<String>)>,
}

impl TransactGetAnswer {
    /// The item of `key`, `None` when there is none (or `key` was not added to the read); an
    /// item of another entity under that key is [`Error::WrongEntity`]. Each item is taken
    /// once (a second take is `None`).
    ///
    /// ```no_run
    /// # use serde::{Deserialize, Serialize};
    /// # use sharded::{Error, Repo, ShardedEntity};
    /// # #[derive(ShardedEntity, Serialize, Deserialize)]
    /// # #[pk(template = "USER#{user_id}")]
    /// # struct Wallet { user_id: String, coins: i64 }
    /// # async fn demo(repo: &Repo<Wallet>) -> Result<(), Error> {
    /// let alice = Wallet::key("alice")?;
    /// let mut answer = repo.transact_get().get(&alice).send().await?;
    /// let coins = answer.take(&alice)?.map_or(0, |w| w.coins);
    /// # Ok(()) }
    /// ```
    pub fn take<E: ShardedEntity>(&mut self, key: &ItemKey<E>) -> Result<Option<E>, Error> {
        let index = self.added.iter().position(|(entity, pk, sk)| {
            *entity == E::SCHEMA.entity && *pk == key.pk && *sk == key.sk
        });
        match index
            .and_then(|i| self.items.get_mut(i))
            .and_then(Option::take)
        {
            Some(item) => E::from_item(item).map(Some),
            None => Ok(None),
        }
    }
}

/// The span of one write transaction's commit
/// ([`TRANSACTION_SPAN`](crate::telemetry::TRANSACTION_SPAN)): its settling reads, its
/// `TransactWriteItems` and the resends are its children.
fn transaction_span(table: &str, actions: usize) -> tracing::Span {
    use crate::telemetry::*;
    tracing::info_span!(
        "sharded.transaction",
        { DB_SYSTEM_NAME } = DB_SYSTEM_NAME_VALUE,
        { TABLE_NAMES } = table,
        { ITEMS_EMITTED } = actions,
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use aws_sdk_dynamodb::config::{BehaviorVersion, Region};
    use aws_sdk_dynamodb::types::AttributeValue;
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::access::condition::{Data, Field};
    use crate::access::entity::ItemKeys;
    use crate::access::write::update::UpdateKey;
    use crate::error::KeyError;
    use crate::keys::schema::{KeyTemplate, PartitionKeySchema, Segment, Sharding};

    static PK: KeyTemplate = KeyTemplate::new(
        "NOTE#{id}",
        &[Segment::literal("NOTE#"), Segment::field("id")],
    );
    static SCHEMA: EntitySchema = EntitySchema::new(
        "Note",
        None,
        PartitionKeySchema::new("pk", &PK, Sharding::None),
        None,
        &[],
    );

    #[derive(Serialize, Deserialize)]
    struct Note {
        id: String,
        text: String,
    }

    impl ShardedEntity for Note {
        const SCHEMA: &'static EntitySchema = &SCHEMA;
        type __PartitionTypes = (String,);
        fn item_keys(&self) -> Result<ItemKeys, KeyError> {
            Ok(ItemKeys::new(format!("NOTE#{}", self.id), None, Vec::new()))
        }
    }

    impl GsiRewrite for Note {
        fn gsi_keys(
            _: &HashMap<&'static str, AttributeValue>,
            _: &[&'static str],
        ) -> Result<Vec<(&'static str, String)>, Error> {
            Ok(Vec::new())
        }
    }

    fn handle() -> Arc<Handle> {
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .build();
        Arc::new(Handle::new(
            aws_sdk_dynamodb::Client::from_conf(config),
            "notes".to_owned(),
        ))
    }

    fn update(handle: &Arc<Handle>, id: &str, text: String) -> Update<Note> {
        let key = UpdateKey {
            pk: format!("NOTE#{id}"),
            sk: None,
            key_values: HashMap::new(),
            previous: None,
            shard_input: None,
        };
        let text_field: Field<Note, String, Data> = Field::new("text");
        Update::with_handle(Arc::clone(handle), Ok(key)).set(text_field, text)
    }

    #[test]
    fn the_size_check_counts_update_values() {
        let handle = handle();
        // Eleven updates of 390 KB values: 4.3 MB that DynamoDB counts, in tiny keys.
        let mut transaction = Transaction::new(Arc::clone(&handle));
        for i in 0..11 {
            transaction =
                transaction.update(update(&handle, &format!("n{i}"), "x".repeat(390_000)));
        }
        let err = check(&transaction.actions, &transaction.added_by).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::InvalidTransaction(TransactionRefusal::TooLarge { bytes, max })
                    if *bytes > MAX_TRANSACTION_BYTES && *max == MAX_TRANSACTION_BYTES
            ),
            "{err}"
        );
        // Ten fit.
        let mut transaction = Transaction::new(Arc::clone(&handle));
        for i in 0..10 {
            transaction =
                transaction.update(update(&handle, &format!("n{i}"), "x".repeat(390_000)));
        }
        check(&transaction.actions, &transaction.added_by).unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_prepared_transaction_is_not_sent_again_past_the_window() {
        let note = Note {
            id: "n1".into(),
            text: "t".into(),
        };
        let prepared = Transaction::new(handle())
            .put(&note)
            .prepare()
            .await
            .unwrap();
        prepared.first_sent.sent_now();
        tokio::time::advance(idempotent::RESEND_HORIZON).await;
        let err = prepared.commit().await.unwrap_err();
        assert!(
            matches!(&err, Error::TokenExpired { token } if token == prepared.token()),
            "{err:?}"
        );
    }

    #[test]
    fn the_size_check_counts_condition_values() {
        let handle = handle();
        let text: Field<Note, String, Data> = Field::new("text");
        let mut transaction = Transaction::new(Arc::clone(&handle));
        for i in 0..11 {
            let note = Note {
                id: format!("n{i}"),
                text: String::new(),
            };
            transaction = transaction.delete_if(&note, text.eq("y".repeat(390_000)));
        }
        let err = check(&transaction.actions, &transaction.added_by).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::InvalidTransaction(TransactionRefusal::TooLarge { .. })
            ),
            "{err}"
        );
    }
}
