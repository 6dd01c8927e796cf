//! Bigtable's column families on HBase's: GC rules, aggregate value types, and how they are
//! kept in a family's descriptor.
//!
//! A Bigtable family is an HBase family with NEW_VERSION_BEHAVIOR (Bigtable's deletes
//! remove what exists and never mask a later write). Its GC rule and value type are kept
//! exactly, protobuf-encoded in hex, in the family's METADATA (`BIGTABLE_GC_RULE`,
//! `BIGTABLE_VALUE_TYPE`), so GetTable returns what CreateTable was given. The engine
//! enforces the closest HBase retention that keeps a superset of what the rule keeps
//! (VERSIONS, TTL, MIN_VERSIONS: a union of a version limit and an age is HBase's
//! VERSIONS plus TTL; an intersection of the two is TTL plus MIN_VERSIONS), so compactions
//! never drop a cell the rule keeps; every Bigtable read applies the exact rule on top. A
//! family made through the HBase shell has no metadata: its rule is read off its VERSIONS
//! and TTL.

use basalt_bigtable_proto::google::bigtable::admin::v2::{
    gc_rule, r#type, ColumnFamily, GcRule, Type,
};
use basalt_model::descriptor::TTL_FOREVER_SECONDS;
use basalt_model::ColumnFamilyDescriptor;
use bytes::Bytes;
use prost::Message;
use tonic::Status;

use super::filter::BtCell;

const GC_RULE_KEY: &str = "BIGTABLE_GC_RULE";
const VALUE_TYPE_KEY: &str = "BIGTABLE_VALUE_TYPE";
/// HBase's largest VERSIONS: no version limit.
const ALL_VERSIONS: u32 = i32::MAX as u32;

/// How an aggregate family merges the values written to one cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregator {
    Sum,
    Min,
    Max,
}

impl Aggregator {
    /// The state after adding `input` to `state`.
    #[must_use]
    pub fn merge(self, state: i64, input: i64) -> i64 {
        match self {
            Aggregator::Sum => state.wrapping_add(input),
            Aggregator::Min => state.min(input),
            Aggregator::Max => state.max(input),
        }
    }
}

/// What the gateway needs to know of one family.
#[derive(Clone, Debug, Default)]
pub struct FamilySchema {
    pub gc: Option<GcRule>,
    pub aggregate: Option<Aggregator>,
}

impl FamilySchema {
    /// The family's Bigtable schema, from its descriptor.
    ///
    /// # Errors
    /// The metadata does not decode (written by something other than this gateway).
    pub fn of(d: &ColumnFamilyDescriptor) -> Result<FamilySchema, Status> {
        let gc = match d.metadata.get(GC_RULE_KEY) {
            Some(hex) => Some(decode::<GcRule>(hex, GC_RULE_KEY)?),
            None => rule_of_retention(d),
        };
        let aggregate = match d.metadata.get(VALUE_TYPE_KEY) {
            Some(hex) => aggregator(&decode::<Type>(hex, VALUE_TYPE_KEY)?)?,
            None => None,
        };
        Ok(FamilySchema { gc, aggregate })
    }

    /// Removes from one row's cells (Bigtable's order) those the GC rule collects.
    pub fn collect_garbage(&self, family: &[u8], cells: &mut Vec<BtCell>, now_micros: i64) {
        let Some(rule) = &self.gc else { return };
        let mut column: Option<Bytes> = None;
        let mut index = 0;
        cells.retain(|c| {
            if &c.family[..] != family {
                return true;
            }
            if column.as_ref() != Some(&c.qualifier) {
                column = Some(c.qualifier.clone());
                index = 0;
            }
            let collected = collects(rule, index, c.timestamp_micros, now_micros);
            index += 1;
            !collected
        });
    }
}

/// Whether `rule` collects the `index`-th newest version of a column, written at `ts`.
fn collects(rule: &GcRule, index: usize, ts: i64, now: i64) -> bool {
    match &rule.rule {
        None => false,
        Some(gc_rule::Rule::MaxNumVersions(n)) => index >= usize::try_from(*n).unwrap_or(0),
        Some(gc_rule::Rule::MaxAge(d)) => ts < now.saturating_sub(duration_micros(d)),
        Some(gc_rule::Rule::Union(u)) => u.rules.iter().any(|r| collects(r, index, ts, now)),
        Some(gc_rule::Rule::Intersection(i)) => {
            !i.rules.is_empty() && i.rules.iter().all(|r| collects(r, index, ts, now))
        }
    }
}

fn duration_micros(d: &prost_types::Duration) -> i64 {
    d.seconds
        .saturating_mul(1_000_000)
        .saturating_add(i64::from(d.nanos) / 1000)
}

/// Checks a GC rule as Bigtable does: version counts at least 1, ages positive.
///
/// # Errors
/// INVALID_ARGUMENT naming the part that is wrong.
pub fn check_rule(rule: &GcRule) -> Result<(), Status> {
    match &rule.rule {
        None => Ok(()),
        Some(gc_rule::Rule::MaxNumVersions(n)) if *n >= 1 => Ok(()),
        Some(gc_rule::Rule::MaxNumVersions(n)) => Err(Status::invalid_argument(format!(
            "GC rule max_num_versions must be at least 1, got {n}"
        ))),
        Some(gc_rule::Rule::MaxAge(d))
            if d.seconds >= 0 && d.nanos >= 0 && duration_micros(d) >= 1000 =>
        {
            Ok(())
        }
        Some(gc_rule::Rule::MaxAge(d)) => Err(Status::invalid_argument(format!(
            "GC rule max_age must be at least 1 millisecond, got {}s {}ns",
            d.seconds, d.nanos
        ))),
        Some(gc_rule::Rule::Union(u)) => u.rules.iter().try_for_each(check_rule),
        Some(gc_rule::Rule::Intersection(i)) => i.rules.iter().try_for_each(check_rule),
    }
}

/// HBase retention that keeps at least what `rule` keeps: (VERSIONS, TTL s, MIN_VERSIONS).
fn retention_of(rule: Option<&GcRule>) -> (u32, u32, u32) {
    let keep_all = (ALL_VERSIONS, TTL_FOREVER_SECONDS, 0);
    let Some(rule) = rule.and_then(|r| r.rule.as_ref()) else {
        return keep_all;
    };
    match rule {
        gc_rule::Rule::MaxNumVersions(n) => (u32::try_from(*n).unwrap_or(1).max(1), keep_all.1, 0),
        gc_rule::Rule::MaxAge(d) => (ALL_VERSIONS, ttl_seconds(d), 0),
        // Collected when any part collects: each simple part bounds on its own.
        // A part kept by MIN_VERSIONS cannot be combined: it is left to the read (which
        // keeps more, never less).
        gc_rule::Rule::Union(u) => {
            u.rules
                .iter()
                .fold(keep_all, |acc, r| match retention_of(Some(r)) {
                    (v, t, 0) => (acc.0.min(v), acc.1.min(t), 0),
                    _ => acc,
                })
        }
        // Collected only when every part collects: an age with a version count is HBase's
        // TTL with MIN_VERSIONS; anything else keeps everything.
        gc_rule::Rule::Intersection(i) => match i.rules.as_slice() {
            [one] => retention_of(Some(one)),
            [a, b] => match (&a.rule, &b.rule) {
                (Some(gc_rule::Rule::MaxAge(d)), Some(gc_rule::Rule::MaxNumVersions(n)))
                | (Some(gc_rule::Rule::MaxNumVersions(n)), Some(gc_rule::Rule::MaxAge(d))) => {
                    (ALL_VERSIONS, ttl_seconds(d), u32::try_from(*n).unwrap_or(0))
                }
                _ => keep_all,
            },
            _ => keep_all,
        },
    }
}

/// An age as HBase's TTL: whole seconds, rounded up (so no sooner than the rule).
fn ttl_seconds(d: &prost_types::Duration) -> u32 {
    let micros = duration_micros(d).max(1);
    let secs = (micros + 999_999) / 1_000_000;
    u32::try_from(secs).map_or(TTL_FOREVER_SECONDS, |s| s.min(TTL_FOREVER_SECONDS - 1))
}

/// The rule a family without Bigtable metadata has: its VERSIONS, its TTL, or both.
fn rule_of_retention(d: &ColumnFamilyDescriptor) -> Option<GcRule> {
    let versions = (d.max_versions < ALL_VERSIONS).then(|| GcRule {
        rule: Some(gc_rule::Rule::MaxNumVersions(
            i32::try_from(d.max_versions).unwrap_or(i32::MAX),
        )),
    });
    let age = d.has_ttl().then(|| GcRule {
        rule: Some(gc_rule::Rule::MaxAge(prost_types::Duration {
            seconds: i64::from(d.ttl_seconds),
            nanos: 0,
        })),
    });
    match (versions, age) {
        (None, None) => None,
        (Some(r), None) | (None, Some(r)) => Some(r),
        (Some(v), Some(a)) => Some(GcRule {
            rule: Some(gc_rule::Rule::Union(gc_rule::Union { rules: vec![v, a] })),
        }),
    }
}

/// The aggregator of a value type, `None` for a plain family.
///
/// # Errors
/// INVALID_ARGUMENT for a type Basalt does not aggregate (only int64 sum, min and max).
pub fn aggregator(t: &Type) -> Result<Option<Aggregator>, Status> {
    use r#type::aggregate::Aggregator as A;
    match &t.kind {
        None | Some(r#type::Kind::BytesType(_)) => Ok(None),
        Some(r#type::Kind::AggregateType(a)) => {
            let int64 = matches!(
                a.input_type.as_deref().and_then(|t| t.kind.as_ref()),
                Some(r#type::Kind::Int64Type(_))
            );
            match (&a.aggregator, int64) {
                (Some(A::Sum(_)), true) => Ok(Some(Aggregator::Sum)),
                (Some(A::Min(_)), true) => Ok(Some(Aggregator::Min)),
                (Some(A::Max(_)), true) => Ok(Some(Aggregator::Max)),
                _ => Err(Status::invalid_argument(
                    "an aggregate family must aggregate int64 values with sum, min or max",
                )),
            }
        }
        Some(_) => Err(Status::invalid_argument(
            "a column family's value_type must be bytes or an int64 aggregate",
        )),
    }
}

/// A new family's descriptor: NEW_VERSION_BEHAVIOR, the retention the rule allows, and the
/// rule and value type kept exactly.
///
/// # Errors
/// INVALID_ARGUMENT for a bad rule or value type.
pub fn family_descriptor(name: &str, cf: &ColumnFamily) -> Result<ColumnFamilyDescriptor, Status> {
    let mut d = ColumnFamilyDescriptor::new(Bytes::copy_from_slice(name.as_bytes()));
    apply_family(&mut d, cf)?;
    d.new_version_behavior = true;
    Ok(d)
}

/// Sets a family's GC rule and value type.
///
/// # Errors
/// INVALID_ARGUMENT for a bad rule or value type.
pub fn apply_family(d: &mut ColumnFamilyDescriptor, cf: &ColumnFamily) -> Result<(), Status> {
    if let Some(rule) = &cf.gc_rule {
        check_rule(rule)?;
    }
    let (versions, ttl, min_versions) = retention_of(cf.gc_rule.as_ref());
    d.max_versions = versions;
    d.ttl_seconds = ttl;
    d.min_versions = min_versions;
    match cf.gc_rule.as_ref().filter(|r| r.rule.is_some()) {
        Some(rule) => d
            .metadata
            .insert(GC_RULE_KEY.into(), hex(&rule.encode_to_vec())),
        None => d.metadata.remove(GC_RULE_KEY),
    };
    if let Some(t) = &cf.value_type {
        aggregator(t)?;
        d.metadata
            .insert(VALUE_TYPE_KEY.into(), hex(&t.encode_to_vec()));
    }
    Ok(())
}

/// A family as GetTable shows it.
///
/// # Errors
/// The family's metadata does not decode.
pub fn column_family(d: &ColumnFamilyDescriptor) -> Result<ColumnFamily, Status> {
    let value_type = d
        .metadata
        .get(VALUE_TYPE_KEY)
        .map(|h| decode::<Type>(h, VALUE_TYPE_KEY))
        .transpose()?;
    Ok(ColumnFamily {
        gc_rule: FamilySchema::of(d)?.gc,
        value_type,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode<M: Message + Default>(hex: &str, key: &str) -> Result<M, Status> {
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
        })
        .collect();
    bytes
        .and_then(|b| M::decode(&b[..]).ok())
        .ok_or_else(|| Status::internal(format!("the family's {key} metadata does not decode")))
}

#[cfg(test)]
mod tests;
