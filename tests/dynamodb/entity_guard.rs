//! Writes guarded by entity: two entities whose templates produce the same physical key
//! cannot overwrite each other's items through `put`, `put_new` or `delete`. Batch writes
//! carry no conditions and are the documented exception.

use aws_sdk_dynamodb::types::AttributeValue;
use serde::{Deserialize, Serialize};
use sharded::{Error, Repo, ShardedEntity};

use crate::support::repo;

/// `ORG#{org}` over 4 shards: org `acme` lives on `ORG#acme#0` .. `ORG#acme#3`.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "ORG#{org}", shard = "hash(id)", n = 4)]
#[sk(template = "MEMBER#{id}")]
struct Member {
    org: String,
    id: String,
    role: String,
}

/// `ORG#{org}#{team}`, unsharded: team `3` of `acme` is `ORG#acme#3`, a `Member` shard.
#[derive(ShardedEntity, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[pk(template = "ORG#{org}#{team}")]
#[sk(template = "MEMBER#{id}")]
struct TeamMember {
    org: String,
    team: String,
    id: String,
}

/// A member, and the team member whose keys are the member's, on one table.
async fn colliding() -> (Repo<Member>, Repo<TeamMember>, Member, TeamMember) {
    let members = repo::<Member>("guard").await;
    let teams: Repo<TeamMember> = members.for_entity();
    let member = Member {
        org: "acme".into(),
        id: "m1".into(),
        role: "admin".into(),
    };
    let team = TeamMember {
        org: "acme".into(),
        team: Member::shard_for("m1").unwrap().to_string(),
        id: "m1".into(),
    };
    assert_eq!(member.item_keys().unwrap().pk, team.item_keys().unwrap().pk);
    assert_eq!(member.item_keys().unwrap().sk, team.item_keys().unwrap().sk);
    (members, teams, member, team)
}

fn taken_by(result: Result<(), Error>, operation: &str) -> Option<String> {
    match result {
        Err(Error::KeyTakenByOtherEntity {
            operation: op,
            entity,
            other,
            key,
        }) => {
            assert_eq!((op, entity), (operation, "TeamMember"));
            assert!(key
                .pk
                .as_deref()
                .is_some_and(|pk| pk.starts_with("ORG#acme#")));
            other
        }
        other => panic!("expected KeyTakenByOtherEntity, got {other:?}"),
    }
}

#[tokio::test]
async fn a_put_cannot_overwrite_another_entitys_item() {
    let (members, teams, member, team) = colliding().await;
    members.put(&member).await.unwrap();

    let refused = teams.put(&team).await;
    let message = refused.as_ref().unwrap_err().to_string();
    assert!(message.contains("distinct literal prefixes"), "{message}");
    assert_eq!(taken_by(refused, "PutItem").as_deref(), Some("Member"));
    assert_eq!(
        taken_by(teams.put_new(&team).await, "PutItem").as_deref(),
        Some("Member"),
        "put_new names the other entity too, not AlreadyExists"
    );
    assert_eq!(
        taken_by(
            TeamMember::delete(&teams, "acme", &team.team, "m1").await,
            "DeleteItem"
        )
        .as_deref(),
        Some("Member")
    );
    assert_eq!(
        Member::get(&members, "acme", "m1").await.unwrap(),
        Some(member.clone()),
        "the member is intact"
    );

    // The guard lets an entity replace and delete its own items.
    let mut promoted = member.clone();
    promoted.role = "owner".into();
    members.put(&promoted).await.unwrap();
    assert_eq!(
        Member::get(&members, "acme", "m1").await.unwrap(),
        Some(promoted)
    );
    Member::delete(&members, "acme", "m1").await.unwrap();
    Member::delete(&members, "acme", "m1").await.unwrap();
    assert_eq!(Member::get(&members, "acme", "m1").await.unwrap(), None);
    teams.put(&team).await.unwrap();
}

#[tokio::test]
async fn an_item_without_an_entity_attribute_is_not_overwritten() {
    let (members, _, member, _) = colliding().await;
    let keys = member.item_keys().unwrap();
    let foreign = [
        ("pk", AttributeValue::S(keys.pk.clone())),
        ("sk", AttributeValue::S(keys.sk.clone().unwrap())),
        (
            "note",
            AttributeValue::S("written by another service".into()),
        ),
    ];
    members
        .client()
        .put_item()
        .table_name(members.table())
        .set_item(Some(
            foreign
                .iter()
                .map(|(n, v)| ((*n).to_owned(), v.clone()))
                .collect(),
        ))
        .send()
        .await
        .unwrap();
    match members.put(&member).await {
        Err(Error::KeyTakenByOtherEntity {
            entity: "Member",
            other: None,
            ..
        }) => {}
        other => panic!("expected KeyTakenByOtherEntity without an entity, got {other:?}"),
    }
}

#[tokio::test]
async fn batch_writes_are_not_guarded() {
    // Documented: BatchWriteItem takes no condition, so a batch put overwrites whatever
    // holds the key. This test pins that down, so a change of it is a decision.
    let (members, teams, member, team) = colliding().await;
    members.put(&member).await.unwrap();
    teams.batch_put([&team]).await.unwrap();
    assert!(matches!(
        Member::get(&members, "acme", "m1").await,
        Err(Error::WrongEntity { .. })
    ));
}
