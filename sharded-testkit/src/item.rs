//! Items in DynamoDB's JSON wire form (`{"pk": {"S": "GAME#g1"}, "n": {"N": "3"}}`) as the
//! SDK's [`AttributeValue`]s, so the runtime's rules (item size, units) apply to what a
//! request carries instead of being written again for JSON.

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

/// The item a request carries (`Item` of a `PutItem`, `Key` of a `GetItem`, ...). Attributes
/// whose value is not a DynamoDB-JSON value are left out; DynamoDB Local refuses the request
/// anyway.
pub(crate) fn item_from_json(item: &Value) -> HashMap<String, AttributeValue> {
    item.as_object()
        .map(|attributes| {
            attributes
                .iter()
                .filter_map(|(name, value)| Some((name.clone(), attribute_from_json(value)?)))
                .collect()
        })
        .unwrap_or_default()
}

/// One DynamoDB-JSON value: `{"S": ..}`, `{"N": ..}`, `{"B": <base64>}`, `{"BOOL": ..}`,
/// `{"NULL": true}`, `{"L": [..]}`, `{"M": {..}}`, `{"SS": [..]}`, `{"NS": [..]}` or
/// `{"BS": [<base64>..]}`.
fn attribute_from_json(value: &Value) -> Option<AttributeValue> {
    let (tag, inner) = value.as_object()?.iter().next()?;
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let binary = |v: &Value| Some(Blob::new(STANDARD.decode(v.as_str()?).ok()?));
    let list = |v: &Value| v.as_array().map(Vec::as_slice).unwrap_or_default().to_vec();
    Some(match tag.as_str() {
        "S" => AttributeValue::S(text(inner)?),
        "N" => AttributeValue::N(text(inner)?),
        "B" => AttributeValue::B(binary(inner)?),
        "BOOL" => AttributeValue::Bool(inner.as_bool()?),
        "NULL" => AttributeValue::Null(inner.as_bool()?),
        "L" => AttributeValue::L(list(inner).iter().filter_map(attribute_from_json).collect()),
        "M" => AttributeValue::M(item_from_json(inner)),
        "SS" => AttributeValue::Ss(list(inner).iter().filter_map(text).collect()),
        "NS" => AttributeValue::Ns(list(inner).iter().filter_map(text).collect()),
        "BS" => AttributeValue::Bs(list(inner).iter().filter_map(binary).collect()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn converts_every_type() {
        let item = item_from_json(&json!({
            "s": {"S": "héllo"},
            "n": {"N": "12345"},
            "b": {"B": "AAEC"},
            "t": {"BOOL": true},
            "z": {"NULL": true},
            "l": {"L": [{"S": "ab"}, {"N": "1"}]},
            "m": {"M": {"k": {"S": "v"}}},
            "ss": {"SS": ["a", "b"]},
            "ns": {"NS": ["1", "2"]},
            "bs": {"BS": ["AA==", "AAE="]},
            "bad": {"X": 1},
        }));
        let s = |v: &str| AttributeValue::S(v.into());
        let n = |v: &str| AttributeValue::N(v.into());
        assert_eq!(item["s"], s("héllo"));
        assert_eq!(item["n"], n("12345"));
        assert_eq!(item["b"], AttributeValue::B(Blob::new(vec![0, 1, 2])));
        assert_eq!(item["t"], AttributeValue::Bool(true));
        assert_eq!(item["z"], AttributeValue::Null(true));
        assert_eq!(item["l"], AttributeValue::L(vec![s("ab"), n("1")]));
        assert_eq!(
            item["m"],
            AttributeValue::M([("k".to_owned(), s("v"))].into_iter().collect())
        );
        assert_eq!(item["ss"], AttributeValue::Ss(vec!["a".into(), "b".into()]));
        assert_eq!(item["ns"], AttributeValue::Ns(vec!["1".into(), "2".into()]));
        assert_eq!(
            item["bs"],
            AttributeValue::Bs(vec![Blob::new(vec![0]), Blob::new(vec![0, 1])])
        );
        assert!(!item.contains_key("bad"));
    }
}
