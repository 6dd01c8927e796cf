use basalt_bigtable_proto::google::bigtable::admin::v2::r#type::{aggregate, Aggregate, Int64};

use super::*;

fn versions(n: i32) -> GcRule {
    GcRule {
        rule: Some(gc_rule::Rule::MaxNumVersions(n)),
    }
}

fn age(seconds: i64) -> GcRule {
    GcRule {
        rule: Some(gc_rule::Rule::MaxAge(prost_types::Duration {
            seconds,
            nanos: 0,
        })),
    }
}

fn union(rules: Vec<GcRule>) -> GcRule {
    GcRule {
        rule: Some(gc_rule::Rule::Union(gc_rule::Union { rules })),
    }
}

fn intersection(rules: Vec<GcRule>) -> GcRule {
    GcRule {
        rule: Some(gc_rule::Rule::Intersection(gc_rule::Intersection { rules })),
    }
}

fn family(rule: GcRule) -> ColumnFamilyDescriptor {
    family_descriptor(
        "cf",
        &ColumnFamily {
            gc_rule: Some(rule),
            value_type: None,
        },
    )
    .unwrap()
}

#[test]
fn rules_map_to_the_hbase_retention_that_keeps_at_least_as_much() {
    let d = family(versions(3));
    assert_eq!(
        (d.max_versions, d.ttl_seconds, d.min_versions),
        (3, TTL_FOREVER_SECONDS, 0)
    );
    let d = family(union(vec![versions(2), age(90)]));
    assert_eq!((d.max_versions, d.ttl_seconds, d.min_versions), (2, 90, 0));
    let d = family(intersection(vec![age(60), versions(5)]));
    assert_eq!(
        (d.max_versions, d.ttl_seconds, d.min_versions),
        (ALL_VERSIONS, 60, 5)
    );
    // A nested rule HBase cannot express keeps everything in the engine.
    let d = family(intersection(vec![
        union(vec![versions(1), age(1)]),
        versions(4),
    ]));
    assert_eq!(
        (d.max_versions, d.ttl_seconds),
        (ALL_VERSIONS, TTL_FOREVER_SECONDS)
    );
    assert!(d.new_version_behavior);
}

#[test]
fn the_exact_rule_survives_the_descriptor_and_applies_on_reads() {
    let rule = intersection(vec![union(vec![versions(1), age(1)]), versions(2)]);
    let d = family(rule.clone());
    let back = column_family(&d).unwrap();
    assert_eq!(back.gc_rule, Some(rule));
    let schema = FamilySchema::of(&d).unwrap();
    let now = 100_000_000;
    let cell = |ts: i64| BtCell {
        family: Bytes::from_static(b"cf"),
        qualifier: Bytes::from_static(b"q"),
        timestamp_micros: ts,
        value: Bytes::new(),
        labels: Vec::new(),
    };
    // Versions 0 and 1 are kept by "beyond 2 versions"; version 2 is old and beyond 2.
    let mut cells = vec![
        cell(now),
        cell(now - 10),
        cell(now - 20),
        cell(now - 5_000_000),
    ];
    schema.collect_garbage(b"cf", &mut cells, now);
    let kept: Vec<i64> = cells.iter().map(|c| c.timestamp_micros).collect();
    assert_eq!(kept, [now, now - 10]);
}

#[test]
fn families_made_elsewhere_have_the_rule_their_retention_gives() {
    let d = ColumnFamilyDescriptor::new("f")
        .with_max_versions(3)
        .with_ttl_seconds(60);
    assert_eq!(
        column_family(&d).unwrap().gc_rule,
        Some(union(vec![versions(3), age(60)]))
    );
    let d = ColumnFamilyDescriptor::new("f").with_max_versions(ALL_VERSIONS);
    assert_eq!(column_family(&d).unwrap().gc_rule, None);
}

#[test]
fn bad_rules_and_types_are_refused() {
    let refused = |cf: ColumnFamily| {
        let e = family_descriptor("cf", &cf).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    };
    refused(ColumnFamily {
        gc_rule: Some(versions(0)),
        value_type: None,
    });
    refused(ColumnFamily {
        gc_rule: Some(union(vec![age(0)])),
        value_type: None,
    });
    let hll = Type {
        kind: Some(r#type::Kind::AggregateType(Box::new(Aggregate {
            input_type: Some(Box::new(Type {
                kind: Some(r#type::Kind::Int64Type(Int64::default())),
            })),
            state_type: None,
            aggregator: Some(aggregate::Aggregator::HllppUniqueCount(
                aggregate::HyperLogLogPlusPlusUniqueCount {},
            )),
        }))),
    };
    refused(ColumnFamily {
        gc_rule: None,
        value_type: Some(hll),
    });
}

#[test]
fn int64_aggregates_merge() {
    let sum = Type {
        kind: Some(r#type::Kind::AggregateType(Box::new(Aggregate {
            input_type: Some(Box::new(Type {
                kind: Some(r#type::Kind::Int64Type(Int64::default())),
            })),
            state_type: None,
            aggregator: Some(aggregate::Aggregator::Sum(aggregate::Sum {})),
        }))),
    };
    let d = family_descriptor(
        "cf",
        &ColumnFamily {
            gc_rule: None,
            value_type: Some(sum),
        },
    )
    .unwrap();
    let s = FamilySchema::of(&d).unwrap();
    assert_eq!(s.aggregate, Some(Aggregator::Sum));
    assert_eq!(Aggregator::Sum.merge(5, -7), -2);
    assert_eq!(Aggregator::Min.merge(5, -7), -7);
    assert_eq!(Aggregator::Max.merge(5, -7), 5);
}
