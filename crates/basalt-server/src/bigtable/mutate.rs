//! Bigtable's mutations as HBase writes of one row.
//!
//! A request's mutations apply in order and all or nothing. They become one HBase
//! `RowMutations` (atomic in the engine): the Puts and the delete markers of one write share
//! a sequence id, so on a NEW_VERSION_BEHAVIOR family a marker masks only what was there
//! before the request, and a delete that follows a SetCell of the same request removes that
//! SetCell here, before anything is written. Deletes of the whole row, a family or a column
//! (from the beginning of time) are markers at the largest timestamp, so they reach cells
//! with timestamps in the future too. A delete of a time range that starts after zero,
//! AddToCell and MergeToCell depend on what the row holds: [`Plan::needs_read`] says so, and
//! the caller then reads the row and writes only if it is unchanged.

use basalt_bigtable_proto::google::bigtable::v2::{mutation, value, Mutation, TimestampRange};
use basalt_model::ops::{Delete, Put, RowMutations};
use basalt_model::Cell;
use bytes::Bytes;
use tonic::Status;

use super::schema::Aggregator;
use super::TableSchema;

/// The timestamp of Bigtable's deletes: above every cell a client can write.
pub const FOREVER_MS: i64 = i64::MAX - 1;
/// Bigtable's limits on a row key and on the mutations of one request.
pub const MAX_ROW_KEY_BYTES: usize = 4096;
pub const MAX_MUTATIONS: usize = 100_000;

fn invalid(msg: impl Into<String>) -> Status {
    Status::invalid_argument(msg.into())
}

/// A Bigtable timestamp as HBase's milliseconds; -1 is the server's time (`now_ms`).
///
/// # Errors
/// INVALID_ARGUMENT for a negative time other than -1, or one not a whole millisecond.
pub fn timestamp_ms(micros: i64, now_ms: i64) -> Result<i64, Status> {
    match micros {
        -1 => Ok(now_ms),
        m if m < -1 => Err(invalid(format!(
            "Timestamp cannot be negative (other than -1, the server's time), got {m}"
        ))),
        m if m % 1000 != 0 => Err(invalid(format!(
            "Timestamp granularity mismatch. Expected a multiple of 1000 (millisecond granularity), but got {m}"
        ))),
        m => Ok(m / 1000),
    }
}

/// Checks a row key against Bigtable's rules.
///
/// # Errors
/// INVALID_ARGUMENT for an empty or oversized key.
pub fn check_row_key(key: &[u8]) -> Result<(), Status> {
    if key.is_empty() {
        return Err(invalid("Row keys must be non-empty"));
    }
    if key.len() > MAX_ROW_KEY_BYTES {
        return Err(invalid(format!(
            "Row keys must be at most {MAX_ROW_KEY_BYTES} bytes, got {}",
            key.len()
        )));
    }
    Ok(())
}

/// One mutation, checked against the request's table.
#[derive(Clone, Debug)]
enum Step {
    Set(Cell),
    DeleteRow,
    DeleteFamily(Bytes),
    /// Every version of a column in `[start, end)` milliseconds (`end` `None`: no end).
    DeleteColumn {
        family: Bytes,
        qualifier: Bytes,
        start: i64,
        end: Option<i64>,
    },
    Aggregate {
        family: Bytes,
        qualifier: Bytes,
        ts: i64,
        input: i64,
        how: Aggregator,
    },
}

/// A request's mutations of one row, checked and ready to become writes.
#[derive(Clone, Debug)]
pub struct Plan {
    row: Bytes,
    steps: Vec<Step>,
}

impl Plan {
    /// Checks `mutations` of `row` against `schema`.
    ///
    /// # Errors
    /// INVALID_ARGUMENT for a malformed mutation; NOT_FOUND for an unknown family.
    pub fn new(
        schema: &TableSchema,
        row: &Bytes,
        mutations: &[Mutation],
        now_ms: i64,
    ) -> Result<Plan, Status> {
        check_row_key(row)?;
        if mutations.is_empty() {
            return Err(invalid("No mutations provided"));
        }
        if mutations.len() > MAX_MUTATIONS {
            return Err(invalid(format!(
                "Too many mutations: {} (at most {MAX_MUTATIONS})",
                mutations.len()
            )));
        }
        let steps = mutations
            .iter()
            .map(|m| step(schema, row, m, now_ms))
            .collect::<Result<_, _>>()?;
        Ok(Plan {
            row: row.clone(),
            steps,
        })
    }

    /// Whether the writes depend on what the row holds.
    #[must_use]
    pub fn needs_read(&self) -> bool {
        self.steps.iter().any(|s| match s {
            Step::DeleteColumn { start, .. } => *start > 0,
            Step::Aggregate { .. } => true,
            _ => false,
        })
    }

    /// Whether a delete of a time range that starts after zero needs every Put the row
    /// stores ([`Plan::writes_over`]).
    #[must_use]
    pub fn deletes_a_range(&self) -> bool {
        self.steps
            .iter()
            .any(|s| matches!(s, Step::DeleteColumn { start, .. } if *start > 0))
    }

    /// The writes, given the row's current cells when [`Plan::needs_read`] (HBase's
    /// milliseconds, as read with every version).
    #[must_use]
    pub fn writes(&self, current: &[Cell]) -> RowMutations {
        self.writes_over(current, &[])
    }

    /// [`Plan::writes`], with `stored` the Puts a raw read of the row found: a range delete
    /// marks those in its range too. A read shows at most the family's VERSIONS, and a
    /// version past them that the delete left unmarked would show again once the versions
    /// above it are deleted, inside the deleted range.
    #[must_use]
    pub fn writes_over(&self, current: &[Cell], stored: &[Cell]) -> RowMutations {
        let mut w = Writes {
            state: current.to_vec(),
            stored: stored.to_vec(),
            puts: Vec::new(),
            markers: Delete::at(self.row.clone(), FOREVER_MS),
            row_deleted: false,
        };
        for s in &self.steps {
            w.apply(&self.row, s);
        }
        let mut rm = RowMutations::new(self.row.clone());
        if w.row_deleted {
            // A row delete is a Delete without markers: every family, at its timestamp.
            rm.mutations
                .push(Delete::at(self.row.clone(), FOREVER_MS).into());
        } else if !w.markers.markers.is_empty() {
            rm.mutations.push(w.markers.into());
        }
        if !w.puts.is_empty() {
            let mut put = Put::new(self.row.clone());
            put.cells = w.puts;
            rm.mutations.push(put.into());
        }
        rm
    }
}

/// The writes of a plan as its steps are applied in order.
struct Writes {
    /// What the row holds, as the steps so far leave it (for range deletes and aggregates).
    state: Vec<Cell>,
    /// Every Put the row stores, past VERSIONS too (for range deletes only).
    stored: Vec<Cell>,
    puts: Vec<Cell>,
    markers: Delete,
    /// A DeleteFromRow came: it masks everything before it, so earlier markers are moot.
    row_deleted: bool,
}

impl Writes {
    fn apply(&mut self, row: &Bytes, s: &Step) {
        match s {
            Step::Set(c) => self.put(c.clone()),
            Step::DeleteRow => {
                self.puts.clear();
                self.state.clear();
                self.stored.clear();
                self.markers.markers.clear();
                self.row_deleted = true;
            }
            Step::DeleteFamily(f) => {
                self.puts.retain(|p| p.family != *f);
                self.state.retain(|p| p.family != *f);
                self.stored.retain(|p| p.family != *f);
                if !self.row_deleted {
                    let d =
                        std::mem::replace(&mut self.markers, Delete::at(row.clone(), FOREVER_MS));
                    self.markers = d.add_family_at(f.clone(), FOREVER_MS);
                }
            }
            Step::DeleteColumn {
                family,
                qualifier,
                start,
                end,
            } => self.delete_column(row, family, qualifier, *start, *end),
            Step::Aggregate {
                family,
                qualifier,
                ts,
                input,
                how,
            } => {
                let at = |c: &&Cell| {
                    c.family == *family && c.qualifier() == *qualifier && c.timestamp == *ts
                };
                let old = self
                    .puts
                    .iter()
                    .rev()
                    .find(at)
                    .or_else(|| self.state.iter().find(at))
                    .and_then(|c| int64(c.value()));
                let merged = old.map_or(*input, |o| how.merge(o, *input));
                let value = Bytes::copy_from_slice(&merged.to_be_bytes());
                self.put(Cell::put(
                    row.clone(),
                    family.clone(),
                    qualifier.clone(),
                    *ts,
                    value,
                ));
            }
        }
    }

    fn put(&mut self, c: Cell) {
        self.puts.retain(|p| !same_cell(p, &c));
        self.puts.push(c);
    }

    fn delete_column(
        &mut self,
        row: &Bytes,
        family: &Bytes,
        qualifier: &Bytes,
        start: i64,
        end: Option<i64>,
    ) {
        let covers = |c: &Cell| {
            c.family == *family
                && c.qualifier() == *qualifier
                && c.timestamp >= start
                && end.is_none_or(|e| c.timestamp < e)
        };
        self.puts.retain(|p| !covers(p));
        if !self.row_deleted {
            let mut d = std::mem::replace(&mut self.markers, Delete::at(row.clone(), FOREVER_MS));
            if start == 0 {
                // From the beginning of time: one marker, no read needed.
                let upto = end.map_or(FOREVER_MS, |e| e - 1);
                if upto >= 0 {
                    d = d.add_columns_at(family.clone(), qualifier.clone(), upto);
                }
            } else {
                let versions: std::collections::BTreeSet<i64> = self
                    .state
                    .iter()
                    .chain(&self.stored)
                    .filter(|c| covers(c))
                    .map(|c| c.timestamp)
                    .collect();
                for ts in versions {
                    d = d.add_column_at(family.clone(), qualifier.clone(), ts);
                }
            }
            self.markers = d;
        }
        self.state.retain(|c| !covers(c));
        self.stored.retain(|c| !covers(c));
    }
}

/// Whether two cells are the same cell (one column, one timestamp): the later write wins.
fn same_cell(a: &Cell, b: &Cell) -> bool {
    a.timestamp == b.timestamp && a.family == b.family && a.qualifier() == b.qualifier()
}

/// A stored aggregate: 8 bytes, big-endian.
#[must_use]
pub fn int64(v: &[u8]) -> Option<i64> {
    <[u8; 8]>::try_from(v).ok().map(i64::from_be_bytes)
}

fn family_of<'a>(
    schema: &'a TableSchema,
    name: &str,
) -> Result<(Bytes, &'a super::FamilySchema), Status> {
    if name.is_empty() {
        return Err(invalid("A mutation must name a column family"));
    }
    let family = Bytes::copy_from_slice(name.as_bytes());
    match schema.families.get(&family) {
        Some(f) => Ok((family, f)),
        None => Err(Status::not_found(format!(
            "Column family {name:?} not found in table {}",
            schema.table.name()
        ))),
    }
}

fn step(schema: &TableSchema, row: &Bytes, m: &Mutation, now_ms: i64) -> Result<Step, Status> {
    use mutation::Mutation as M;
    let Some(m) = &m.mutation else {
        return Err(invalid("A Mutation must set one of its kinds"));
    };
    Ok(match m {
        M::SetCell(s) => {
            let (family, f) = family_of(schema, &s.family_name)?;
            if f.aggregate.is_some() {
                return Err(invalid(format!(
                    "SetCell cannot write to aggregate column family {:?}; use AddToCell",
                    s.family_name
                )));
            }
            let ts = timestamp_ms(s.timestamp_micros, now_ms)?;
            Step::Set(Cell::put(
                row.clone(),
                family,
                s.column_qualifier.clone(),
                ts,
                s.value.clone(),
            ))
        }
        M::DeleteFromRow(_) => Step::DeleteRow,
        M::DeleteFromFamily(d) => Step::DeleteFamily(family_of(schema, &d.family_name)?.0),
        M::DeleteFromColumn(d) => {
            let (family, _) = family_of(schema, &d.family_name)?;
            let (start, end) = delete_range(d.time_range.as_ref())?;
            Step::DeleteColumn {
                family,
                qualifier: d.column_qualifier.clone(),
                start,
                end,
            }
        }
        M::AddToCell(a) => aggregate_step(
            schema,
            &a.family_name,
            a.column_qualifier.as_ref(),
            a.timestamp.as_ref(),
            a.input.as_ref(),
            false,
        )?,
        M::MergeToCell(a) => aggregate_step(
            schema,
            &a.family_name,
            a.column_qualifier.as_ref(),
            a.timestamp.as_ref(),
            a.input.as_ref(),
            true,
        )?,
    })
}

/// A DeleteFromColumn's range as milliseconds `[start, end)`.
fn delete_range(r: Option<&TimestampRange>) -> Result<(i64, Option<i64>), Status> {
    let Some(r) = r else { return Ok((0, None)) };
    let (start, end) = (r.start_timestamp_micros, r.end_timestamp_micros);
    if start < 0 || end < 0 {
        return Err(invalid("DeleteFromColumn: timestamps must not be negative"));
    }
    if end != 0 && end < start {
        return Err(invalid(format!(
            "DeleteFromColumn: end timestamp {end} is before start timestamp {start}"
        )));
    }
    // Whole milliseconds: a cell at t ms is in the range when start <= t * 1000 < end.
    let start_ms = start.div_euclid(1000) + i64::from(start.rem_euclid(1000) != 0);
    let end_ms = (end != 0).then(|| end.div_euclid(1000) + i64::from(end.rem_euclid(1000) != 0));
    Ok((start_ms, end_ms))
}

fn aggregate_step(
    schema: &TableSchema,
    family_name: &str,
    qualifier: Option<&basalt_bigtable_proto::google::bigtable::v2::Value>,
    timestamp: Option<&basalt_bigtable_proto::google::bigtable::v2::Value>,
    input: Option<&basalt_bigtable_proto::google::bigtable::v2::Value>,
    merge: bool,
) -> Result<Step, Status> {
    let (family, f) = family_of(schema, family_name)?;
    let Some(how) = f.aggregate else {
        return Err(invalid(format!(
            "AddToCell and MergeToCell need an aggregate column family; {family_name:?} is not one"
        )));
    };
    let qualifier = match qualifier.and_then(|v| v.kind.as_ref()) {
        Some(value::Kind::RawValue(q)) => q.clone(),
        _ => return Err(invalid("AddToCell: column_qualifier must be a raw_value")),
    };
    let ts = match timestamp.and_then(|v| v.kind.as_ref()) {
        Some(value::Kind::RawTimestampMicros(t)) if *t >= 0 => timestamp_ms(*t, 0)?,
        _ => {
            return Err(invalid(
                "AddToCell: timestamp must be a non-negative raw_timestamp_micros",
            ))
        }
    };
    let input = match (input.and_then(|v| v.kind.as_ref()), merge) {
        (Some(value::Kind::IntValue(i)), false) => *i,
        (Some(value::Kind::RawValue(v)), true) => int64(v).ok_or_else(|| {
            invalid("MergeToCell: input must be an 8-byte big-endian int64 state")
        })?,
        _ if merge => return Err(invalid("MergeToCell: input must be a raw_value")),
        _ => return Err(invalid("AddToCell: input must be an int_value")),
    };
    Ok(Step::Aggregate {
        family,
        qualifier,
        ts,
        input,
        how,
    })
}
