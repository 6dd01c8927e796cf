//! The data model to `basalt.v1` and back. Decoding never panics: a malformed message is an
//! `IllegalArgument` naming the field.

use basalt_model::filter::parse_filter_bytes;
use basalt_model::ops::{
    Append, CheckAndMutate, CompareOp, Condition, Delete, Get, Increment, Mutation, Put,
    RowMutations, Scan,
};
use basalt_model::{Cell, CellParts, CellType, Durability, Error, Result, RowResult, TimeRange};
use bytes::Bytes;

use crate::pb;

fn bad(what: &str) -> Error {
    Error::illegal(format!("malformed request: {what}"))
}

/// A cell on the wire.
#[must_use]
pub fn cell_to_pb(c: &Cell) -> pb::Cell {
    cell_into_pb(c.clone())
}

/// A cell on the wire, its bytes moved rather than shared: no count taken and dropped again
/// per field, for the cells of an answer the server is done with.
#[must_use]
pub fn cell_into_pb(c: Cell) -> pb::Cell {
    let t = match c.cell_type {
        CellType::Delete => pb::CellType::Delete,
        CellType::DeleteColumn => pb::CellType::DeleteColumn,
        CellType::DeleteFamily => pb::CellType::DeleteFamily,
        CellType::DeleteFamilyVersion => pb::CellType::DeleteFamilyVersion,
        _ => pb::CellType::Put,
    };
    let c = c.into_parts();
    pb::Cell {
        row: c.row,
        family: c.family,
        qualifier: c.qualifier,
        timestamp: c.timestamp,
        r#type: t as i32,
        value: c.value,
        ttl_ms: c.ttl_ms,
    }
}

/// A cell from the wire.
pub fn cell_from_pb(c: pb::Cell) -> Result<Cell> {
    let t = match pb::CellType::try_from(c.r#type).map_err(|_| bad("cell type"))? {
        pb::CellType::Put => CellType::Put,
        pb::CellType::Delete => CellType::Delete,
        pb::CellType::DeleteColumn => CellType::DeleteColumn,
        pb::CellType::DeleteFamily => CellType::DeleteFamily,
        pb::CellType::DeleteFamilyVersion => CellType::DeleteFamilyVersion,
    };
    Ok(Cell::from(CellParts {
        row: c.row,
        family: c.family,
        qualifier: c.qualifier,
        timestamp: c.timestamp,
        cell_type: t,
        seq_id: 0,
        value: c.value,
        ttl_ms: c.ttl_ms,
    }))
}

#[must_use]
pub fn result_to_pb(r: &RowResult) -> pb::Result {
    // Not `result_into_pb(r.clone())`: that would build the cell vector twice.
    pb::Result {
        row: r.row_bytes(),
        cells: r.cells.iter().map(cell_to_pb).collect(),
        partial: r.partial,
    }
}

/// A result on the wire, its cells moved (see [`cell_into_pb`]).
#[must_use]
pub fn result_into_pb(r: RowResult) -> pb::Result {
    pb::Result {
        row: r.row_bytes(),
        cells: r.cells.into_iter().map(cell_into_pb).collect(),
        partial: r.partial,
    }
}

pub fn result_from_pb(r: pb::Result) -> Result<RowResult> {
    let cells = r
        .cells
        .into_iter()
        .map(cell_from_pb)
        .collect::<Result<_>>()?;
    let mut out = RowResult::new(r.row, cells);
    out.partial = r.partial;
    Ok(out)
}

fn range_to_pb(tr: TimeRange) -> pb::TimeRange {
    pb::TimeRange {
        min: tr.min(),
        max: tr.max(),
    }
}

fn range_from_pb(tr: Option<pb::TimeRange>) -> Result<TimeRange> {
    tr.map_or(Ok(TimeRange::all()), |t| TimeRange::new(t.min, t.max))
}

pub(crate) fn durability_to_pb(d: Durability) -> i32 {
    (match d {
        Durability::UseDefault => pb::Durability::UseDefault,
        Durability::SkipWal => pb::Durability::SkipWal,
        Durability::AsyncWal => pb::Durability::AsyncWal,
        Durability::SyncWal => pb::Durability::SyncWal,
        Durability::FsyncWal => pb::Durability::FsyncWal,
    }) as i32
}

pub(crate) fn durability_from_pb(d: i32) -> Result<Durability> {
    Ok(
        match pb::Durability::try_from(d).map_err(|_| bad("durability"))? {
            pb::Durability::UseDefault => Durability::UseDefault,
            pb::Durability::SkipWal => Durability::SkipWal,
            pb::Durability::AsyncWal => Durability::AsyncWal,
            pb::Durability::SyncWal => Durability::SyncWal,
            pb::Durability::FsyncWal => Durability::FsyncWal,
        },
    )
}

fn op_to_pb(op: CompareOp) -> i32 {
    (match op {
        CompareOp::Less => pb::CompareOp::Less,
        CompareOp::LessOrEqual => pb::CompareOp::LessOrEqual,
        CompareOp::Equal => pb::CompareOp::Equal,
        CompareOp::NotEqual => pb::CompareOp::NotEqual,
        CompareOp::GreaterOrEqual => pb::CompareOp::GreaterOrEqual,
        CompareOp::Greater => pb::CompareOp::Greater,
    }) as i32
}

fn op_from_pb(op: i32) -> Result<CompareOp> {
    Ok(
        match pb::CompareOp::try_from(op).map_err(|_| bad("compare op"))? {
            pb::CompareOp::Less => CompareOp::Less,
            pb::CompareOp::LessOrEqual => CompareOp::LessOrEqual,
            pb::CompareOp::Equal => CompareOp::Equal,
            pb::CompareOp::NotEqual => CompareOp::NotEqual,
            pb::CompareOp::GreaterOrEqual => CompareOp::GreaterOrEqual,
            pb::CompareOp::Greater => CompareOp::Greater,
        },
    )
}

fn columns_to_pb(c: &basalt_model::ops::Columns) -> Vec<pb::Column> {
    let mut out = Vec::new();
    for f in c.families() {
        match c.qualifiers(f) {
            None => out.push(pb::Column {
                family: f.clone(),
                qualifier: None,
            }),
            Some(qs) => out.extend(qs.iter().map(|q| pb::Column {
                family: f.clone(),
                qualifier: Some(q.clone()),
            })),
        }
    }
    out
}

fn family_ranges_to_pb(
    m: &std::collections::BTreeMap<Bytes, TimeRange>,
) -> Vec<pb::FamilyTimeRange> {
    m.iter()
        .map(|(f, tr)| pb::FamilyTimeRange {
            family: f.clone(),
            range: Some(range_to_pb(*tr)),
        })
        .collect()
}

fn family_ranges_from_pb(
    v: Vec<pb::FamilyTimeRange>,
) -> Result<std::collections::BTreeMap<Bytes, TimeRange>> {
    v.into_iter()
        .map(|f| Ok((f.family, range_from_pb(f.range)?)))
        .collect()
}

#[must_use]
pub fn get_to_pb(g: &Get) -> pb::Get {
    pb::Get {
        row: g.row.clone(),
        columns: columns_to_pb(&g.columns),
        max_versions: g.max_versions,
        time_range: Some(range_to_pb(g.time_range)),
        family_time_ranges: family_ranges_to_pb(&g.family_time_ranges),
        filter: g.filter.as_ref().map(|f| Bytes::from(f.to_filter_string())),
        cache_blocks: g.cache_blocks,
    }
}

pub fn get_from_pb(g: pb::Get) -> Result<Get> {
    let mut out = Get::new(g.row);
    for c in g.columns {
        out = match c.qualifier {
            Some(q) => out.add_column(c.family, q),
            None => out.add_family(c.family),
        };
    }
    out.max_versions = g.max_versions;
    out.time_range = range_from_pb(g.time_range)?;
    out.family_time_ranges = family_ranges_from_pb(g.family_time_ranges)?;
    out.filter = g.filter.map(|f| parse_filter_bytes(&f)).transpose()?;
    out.cache_blocks = g.cache_blocks;
    Ok(out)
}

#[must_use]
pub fn scan_to_pb(s: &Scan) -> pb::Scan {
    pb::Scan {
        start_row: s.start_row.clone(),
        include_start_row: s.include_start_row,
        stop_row: s.stop_row.clone(),
        include_stop_row: s.include_stop_row,
        columns: columns_to_pb(&s.columns),
        max_versions: s.max_versions,
        time_range: Some(range_to_pb(s.time_range)),
        family_time_ranges: family_ranges_to_pb(&s.family_time_ranges),
        filter: s.filter.as_ref().map(|f| Bytes::from(f.to_filter_string())),
        raw: s.raw,
        reversed: s.reversed,
        limit: s.limit,
        batch: s.batch,
        cache_blocks: s.cache_blocks,
    }
}

pub fn scan_from_pb(s: pb::Scan) -> Result<Scan> {
    let mut out = Scan::new();
    for c in s.columns {
        out = match c.qualifier {
            Some(q) => out.add_column(c.family, q),
            None => out.add_family(c.family),
        };
    }
    out.start_row = s.start_row;
    out.include_start_row = s.include_start_row;
    out.stop_row = s.stop_row;
    out.include_stop_row = s.include_stop_row;
    out.max_versions = s.max_versions;
    out.time_range = range_from_pb(s.time_range)?;
    out.family_time_ranges = family_ranges_from_pb(s.family_time_ranges)?;
    out.filter = s.filter.map(|f| parse_filter_bytes(&f)).transpose()?;
    out.raw = s.raw;
    out.reversed = s.reversed;
    out.limit = s.limit;
    out.batch = s.batch;
    out.cache_blocks = s.cache_blocks;
    Ok(out)
}

#[must_use]
pub fn mutation_to_pb(m: &Mutation) -> pb::Mutation {
    use pb::mutation::Kind;
    let kind = match m {
        Mutation::Put(p) => Kind::Put(pb::Put {
            row: p.row.clone(),
            cells: p.cells.iter().map(cell_to_pb).collect(),
            durability: durability_to_pb(p.durability),
            ttl_ms: p.ttl_ms,
        }),
        Mutation::Delete(d) => Kind::Delete(pb::Delete {
            row: d.row.clone(),
            timestamp: d.timestamp,
            markers: d.markers.iter().map(cell_to_pb).collect(),
            durability: durability_to_pb(d.durability),
        }),
        Mutation::Increment(i) => Kind::Increment(pb::Increment {
            row: i.row.clone(),
            columns: i
                .columns
                .iter()
                .map(|(f, q, n)| pb::ColumnAmount {
                    family: f.clone(),
                    qualifier: q.clone(),
                    amount: *n,
                })
                .collect(),
            timestamp: i.timestamp,
            time_range: Some(range_to_pb(i.time_range)),
            ttl_ms: i.ttl_ms,
            return_results: i.return_results,
            durability: durability_to_pb(i.durability),
        }),
        Mutation::Append(a) => Kind::Append(pb::Append {
            row: a.row.clone(),
            columns: a
                .columns
                .iter()
                .map(|(f, q, v)| pb::ColumnValue {
                    family: f.clone(),
                    qualifier: q.clone(),
                    value: v.clone(),
                })
                .collect(),
            timestamp: a.timestamp,
            time_range: Some(range_to_pb(a.time_range)),
            ttl_ms: a.ttl_ms,
            return_results: a.return_results,
            durability: durability_to_pb(a.durability),
        }),
    };
    pb::Mutation { kind: Some(kind) }
}

pub fn mutation_from_pb(m: pb::Mutation) -> Result<Mutation> {
    use pb::mutation::Kind;
    Ok(
        match m.kind.ok_or_else(|| bad("mutation without a kind"))? {
            Kind::Put(p) => {
                let mut put = Put::new(p.row);
                put.cells = p
                    .cells
                    .into_iter()
                    .map(cell_from_pb)
                    .collect::<Result<_>>()?;
                put.durability = durability_from_pb(p.durability)?;
                put.ttl_ms = p.ttl_ms;
                Mutation::Put(put)
            }
            Kind::Delete(d) => {
                let mut del = Delete::at(d.row, d.timestamp);
                del.markers = d
                    .markers
                    .into_iter()
                    .map(cell_from_pb)
                    .collect::<Result<_>>()?;
                del.durability = durability_from_pb(d.durability)?;
                Mutation::Delete(del)
            }
            Kind::Increment(i) => Mutation::Increment(Increment {
                row: i.row,
                columns: i
                    .columns
                    .into_iter()
                    .map(|c| (c.family, c.qualifier, c.amount))
                    .collect(),
                timestamp: i.timestamp,
                time_range: range_from_pb(i.time_range)?,
                ttl_ms: i.ttl_ms,
                return_results: i.return_results,
                durability: durability_from_pb(i.durability)?,
            }),
            Kind::Append(a) => Mutation::Append(Append {
                row: a.row,
                columns: a
                    .columns
                    .into_iter()
                    .map(|c| (c.family, c.qualifier, c.value))
                    .collect(),
                timestamp: a.timestamp,
                time_range: range_from_pb(a.time_range)?,
                ttl_ms: a.ttl_ms,
                return_results: a.return_results,
                durability: durability_from_pb(a.durability)?,
            }),
        },
    )
}

#[must_use]
pub fn row_mutations_to_pb(rm: &RowMutations) -> pb::RowMutations {
    pb::RowMutations {
        row: rm.row.clone(),
        mutations: rm.mutations.iter().map(mutation_to_pb).collect(),
    }
}

pub fn row_mutations_from_pb(rm: pb::RowMutations) -> Result<RowMutations> {
    let mut out = RowMutations::new(rm.row);
    for m in rm.mutations {
        out.add(mutation_from_pb(m)?)?;
    }
    Ok(out)
}

#[must_use]
pub fn check_and_mutate_to_pb(table: &str, cam: &CheckAndMutate) -> pb::CheckAndMutateRequest {
    use pb::check_and_mutate_request::Condition as C;
    let (condition, tr) = match &cam.condition {
        Condition::Column {
            family,
            qualifier,
            op,
            value,
            time_range,
        } => (
            C::Column(pb::ColumnCondition {
                family: family.clone(),
                qualifier: qualifier.clone(),
                op: op_to_pb(*op),
                value: value.clone(),
            }),
            *time_range,
        ),
        Condition::Filter { filter, time_range } => (
            C::Filter(Bytes::from(filter.to_filter_string())),
            *time_range,
        ),
        Condition::Unchanged { digest } => (
            C::Unchanged(Bytes::copy_from_slice(digest)),
            TimeRange::all(),
        ),
    };
    pb::CheckAndMutateRequest {
        table: table.to_owned(),
        row: cam.row.clone(),
        condition: Some(condition),
        time_range: Some(range_to_pb(tr)),
        action: Some(row_mutations_to_pb(&cam.action)),
        region: None,
    }
}

pub fn check_and_mutate_from_pb(r: pb::CheckAndMutateRequest) -> Result<CheckAndMutate> {
    use pb::check_and_mutate_request::Condition as C;
    let time_range = range_from_pb(r.time_range)?;
    let condition = match r
        .condition
        .ok_or_else(|| bad("check-and-mutate without a condition"))?
    {
        C::Column(c) => Condition::Column {
            family: c.family,
            qualifier: c.qualifier,
            op: op_from_pb(c.op)?,
            value: c.value,
            time_range,
        },
        C::Filter(f) => Condition::Filter {
            filter: parse_filter_bytes(&f)?,
            time_range,
        },
        C::Unchanged(d) => Condition::Unchanged {
            digest: d[..]
                .try_into()
                .map_err(|_| bad("a row digest is 16 bytes"))?,
        },
    };
    let action = row_mutations_from_pb(
        r.action
            .ok_or_else(|| bad("check-and-mutate without an action"))?,
    )?;
    Ok(CheckAndMutate {
        row: r.row,
        condition,
        action,
    })
}

#[cfg(test)]
mod tests {
    use basalt_model::filter::parse_filter;
    use basalt_model::ops::{Append, CheckAndMutate, CompareOp, Delete, Get, Increment, Put, Scan};
    use basalt_model::TimeRange;

    use super::*;

    /// Round trips compare by `Debug`: the model's operations carry no `PartialEq`.
    fn same<T: std::fmt::Debug>(a: &T, b: &T) {
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn reads_round_trip() {
        let g = Get::new("r1")
            .add_column("f", "q")
            .add_family("g")
            .with_max_versions(3)
            .with_time_range(TimeRange::new(5, 9).unwrap())
            .with_filter(parse_filter("ValueFilter(=, 'binary:\u{1}x')").unwrap());
        same(&get_from_pb(get_to_pb(&g)).unwrap(), &g);
        let s = Scan::new()
            .with_start_row("a", false)
            .with_stop_row("z", true)
            .with_limit(7)
            .with_batch(2)
            .reversed()
            .raw()
            .with_filter(parse_filter("PageFilter(3) AND PrefixFilter('a')").unwrap());
        same(&scan_from_pb(scan_to_pb(&s)).unwrap(), &s);
    }

    #[test]
    fn results_cross_the_same_whether_borrowed_or_moved() {
        let mut delete = Cell::put("r1", "f", "b", 4, "");
        delete.cell_type = CellType::DeleteColumn;
        let mut r = RowResult::new(
            Bytes::from_static(b"r1"),
            vec![Cell::put("r1", "f", "a", 7, "v1"), delete],
        );
        r.partial = true;
        let borrowed = result_to_pb(&r);
        assert_eq!(borrowed, result_into_pb(r.clone()));
        same(&result_from_pb(borrowed).unwrap(), &r);
    }

    #[test]
    fn mutations_round_trip() {
        let cases: Vec<Mutation> = vec![
            Put::new("r")
                .add_at("f", "q", 5, "v")
                .with_ttl_ms(100)
                .into(),
            Delete::new("r")
                .add_column("f", "q")
                .add_family_version("g", 3)
                .into(),
            Delete::at("r", 9).into(),
            Increment::new("r").add("f", "n", -4).into(),
            Append::new("r").add("f", "s", "tail").into(),
        ];
        for m in cases {
            same(&mutation_from_pb(mutation_to_pb(&m)).unwrap(), &m);
        }
        let cam = CheckAndMutate::if_matches("r", "f", "q", CompareOp::Greater, "1")
            .then_put(Put::new("r").add("f", "q", "2"));
        same(
            &check_and_mutate_from_pb(check_and_mutate_to_pb("t", &cam)).unwrap(),
            &cam,
        );
    }

    #[test]
    fn malformed_messages_are_refused_not_panicked_on() {
        let e = mutation_from_pb(pb::Mutation { kind: None }).unwrap_err();
        assert!(e.to_string().contains("mutation without a kind"), "{e}");
        let bad_cell = pb::Cell {
            r#type: 99,
            ..pb::Cell::default()
        };
        assert!(cell_from_pb(bad_cell).is_err());
        let bad_range = pb::Get {
            time_range: Some(pb::TimeRange { min: 9, max: 1 }),
            ..pb::Get::default()
        };
        assert!(get_from_pb(bad_range).is_err());
        let bad_filter = pb::Scan {
            filter: Some(Bytes::from_static(b"NoSuchFilter()")),
            ..pb::Scan::default()
        };
        assert!(scan_from_pb(bad_filter).is_err());
    }
}
