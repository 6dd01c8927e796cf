//! Reads and writes of single rows and row lists.

use basalt_model::descriptor::Durability;
use basalt_model::ops::{
    Append, CheckAndMutate, CompareOp, Delete, Get, Increment, Mutation as Op, Put,
};
use basalt_model::{Error, TimeRange, LATEST_TIMESTAMP};
use bytes::Bytes;
use hbase_thrift::hbase::{BatchMutation, Mutation, TAppend, TCell, TIncrement, TRowResult, Text};

use super::Handler;
use crate::thrift::convert::{self, application, illegal, io, io_or_illegal, parse_column};

/// HBase sets SYNC_WAL or SKIP_WAL on each mutation from its `writeToWAL` flag.
fn durability(m: &Mutation) -> Durability {
    if m.write_to_w_a_l.unwrap_or(true) {
        Durability::SyncWal
    } else {
        Durability::SkipWal
    }
}

/// The Delete and the Put one row's Thrift mutations make, as HBase builds them: deletes of
/// a family or of every version of a column at or before `ts`, puts at `ts`. A put naming
/// only a family is skipped, or refused when `strict` (as `mutateRows` refuses it).
fn row_mutations(
    row: &Bytes,
    mutations: &[Mutation],
    ts: i64,
    strict: bool,
) -> thrift::Result<(Option<Delete>, Option<Put>)> {
    let mut delete = Delete::new(row.clone());
    let mut put = Put::at(row.clone(), ts);
    for m in mutations {
        let c = parse_column(m.column.as_deref().unwrap_or_default());
        if m.is_delete.unwrap_or(false) {
            delete = match c.qualifier {
                Some(q) => delete.add_columns_at(c.family, q, ts),
                None => delete.add_family_at(c.family, ts),
            }
            .with_durability(durability(m));
        } else if let Some(q) = c.qualifier {
            let value = Bytes::from(m.value.clone().unwrap_or_default());
            put = put.add(c.family, q, value).with_durability(durability(m));
        } else if strict {
            return Err(illegal("Invalid famAndQf provided."));
        } else {
            tracing::warn!("No column qualifier specified. Delete is the only mutation supported over the whole column family.");
        }
    }
    let delete = (!delete.markers.is_empty()).then_some(delete);
    let put = (!put.cells.is_empty()).then_some(put);
    Ok((delete, put))
}

/// A read bounded by a Thrift timestamp: `[0, ts)`.
fn before(ts: i64) -> thrift::Result<TimeRange> {
    TimeRange::new(0, ts).map_err(|e| io(&e))
}

fn qualified(c: convert::Column) -> thrift::Result<(Bytes, Bytes)> {
    match c.qualifier {
        Some(q) => Ok((c.family, q)),
        None => Err(application("Invalid familyAndQualifier provided.")),
    }
}

impl Handler {
    /// `get`, `getVer`, `getVerTs`: the versions of one column (or family), newest first.
    pub(super) fn get_cells(
        &self,
        table: &[u8],
        row: Text,
        column: &[u8],
        versions: i32,
        ts: Option<i64>,
    ) -> thrift::Result<Vec<TCell>> {
        let versions = u32::try_from(versions)
            .ok()
            .filter(|v| *v > 0)
            .ok_or_else(|| io(&Error::DoNotRetry("versions must be positive".to_owned())))?;
        let t = self.table(table).map_err(|e| io(&e))?;
        let mut get =
            convert::get_columns(Get::new(row), &[column.to_vec()]).with_max_versions(versions);
        if let Some(ts) = ts {
            get = get.with_time_range(before(ts)?);
        }
        let r = t.get(get).map_err(|e| io(&e))?;
        Ok(convert::cells(&r))
    }

    /// The `getRow*` and `getRows*` methods: the newest version of each column.
    pub(super) fn get_rows(
        &self,
        table: &[u8],
        rows: Vec<Text>,
        columns: Option<&[Text]>,
        ts: Option<i64>,
    ) -> thrift::Result<Vec<TRowResult>> {
        let t = self.table(table).map_err(|e| io(&e))?;
        let range = ts.map(before).transpose()?;
        let mut results = Vec::with_capacity(rows.len());
        for row in rows {
            let mut get = convert::get_columns(Get::new(row), columns.unwrap_or_default());
            if let Some(r) = range {
                get = get.with_time_range(r);
            }
            results.push(t.get(get).map_err(|e| io(&e))?);
        }
        Ok(convert::row_results(&results, false))
    }

    /// `mutateRow(Ts)`: the row's deletes, then its puts.
    pub(super) fn mutate_row(
        &self,
        table: &[u8],
        row: Text,
        mutations: &[Mutation],
        ts: Option<i64>,
    ) -> thrift::Result<()> {
        let ts = ts.unwrap_or(LATEST_TIMESTAMP);
        let (delete, put) = row_mutations(&Bytes::from(row), mutations, ts, false)?;
        let t = self.table(table).map_err(|e| io(&e))?;
        if let (Some(d), Some(p)) = (&delete, &put) {
            // Two writes in turn: refuse before the first if the second would be refused.
            let (d, p) = (Op::Delete(d.clone()), Op::Put(p.clone()));
            t.check(&d)
                .and_then(|()| t.check(&p))
                .map_err(|e| io_or_illegal(&e))?;
        }
        if let Some(d) = delete {
            t.delete(d).map_err(|e| io_or_illegal(&e))?;
        }
        if let Some(p) = put {
            t.put(p).map_err(|e| io_or_illegal(&e))?;
        }
        Ok(())
    }

    /// `mutateRows(Ts)`: every row's puts, then every row's deletes (HBase's order; a client
    /// that deletes and then puts the same row in one batch must split it).
    pub(super) fn mutate_rows(
        &self,
        table: &[u8],
        batches: Vec<BatchMutation>,
        ts: Option<i64>,
    ) -> thrift::Result<()> {
        let ts = ts.unwrap_or(LATEST_TIMESTAMP);
        let mut puts = Vec::new();
        let mut deletes = Vec::new();
        for b in batches {
            let row = Bytes::from(b.row.unwrap_or_default());
            let (d, p) = row_mutations(&row, b.mutations.as_deref().unwrap_or_default(), ts, true)?;
            deletes.extend(d.map(Op::Delete));
            puts.extend(p.map(Op::Put));
        }
        let t = self.table(table).map_err(|e| io(&e))?;
        // HBase builds and checks every Put and Delete before sending any: a bad row or an
        // oversized cell refuses them all. Basalt also checks what the server would refuse
        // (an unknown family) up front, so a refused call never writes part of the rows.
        if let Some(e) = puts.iter().chain(&deletes).find_map(|m| t.check(m).err()) {
            return Err(io_or_illegal(&e));
        }
        for batch in [puts, deletes] {
            if batch.is_empty() {
                continue;
            }
            if let Some(Err(e)) = t.batch(batch).into_iter().find(Result::is_err) {
                return Err(io_or_illegal(&e));
            }
        }
        Ok(())
    }

    /// `atomicIncrement`: the counter's new value; a bare family means its empty qualifier.
    pub(super) fn atomic_increment(
        &self,
        table: &[u8],
        row: Text,
        column: &[u8],
        amount: i64,
    ) -> thrift::Result<i64> {
        let c = parse_column(column);
        let t = self.table(table).map_err(|e| io(&e))?;
        let q = c.qualifier.unwrap_or_default();
        t.increment_column_value(row.into(), c.family, q, amount)
            .map_err(|e| io_or_illegal(&e))
    }

    /// `deleteAll(Ts)` (a column or family) and `deleteAllRow(Ts)`: every version at or
    /// before `ts`, or before now.
    pub(super) fn delete_all(
        &self,
        table: &[u8],
        row: Text,
        column: Option<&[u8]>,
        ts: Option<i64>,
    ) -> thrift::Result<()> {
        let ts = ts.unwrap_or(LATEST_TIMESTAMP);
        let mut delete = Delete::at(row, ts);
        if let Some(column) = column {
            let c = parse_column(column);
            delete = match c.qualifier {
                Some(q) => delete.add_columns_at(c.family, q, ts),
                None => delete.add_family_at(c.family, ts),
            };
        }
        let t = self.table(table).map_err(|e| io(&e))?;
        t.delete(delete).map_err(|e| io(&e))
    }

    /// `increment` (and each of `incrementRows`).
    pub(super) fn increment(&self, inc: TIncrement) -> thrift::Result<()> {
        let table = inc.table.unwrap_or_default();
        let row = inc.row.unwrap_or_default();
        if table.is_empty() || row.is_empty() {
            return Err(application(
                "Must supply a table and a row key; can't increment",
            ));
        }
        let (family, qualifier) =
            qualified(parse_column(inc.column.as_deref().unwrap_or_default()))?;
        let t = self.table(&table).map_err(|e| io(&e))?;
        let amount = inc.ammount.unwrap_or(0);
        t.increment(Increment::new(row).add(family, qualifier, amount))
            .map(drop)
            .map_err(|e| io(&e))
    }

    /// `append`: the appended cells' new values, in column order.
    pub(super) fn append(&self, app: TAppend) -> thrift::Result<Vec<TCell>> {
        let table = app.table.unwrap_or_default();
        let row = app.row.unwrap_or_default();
        if table.is_empty() || row.is_empty() {
            return Err(application(
                "Must supply a table and a row key; can't append",
            ));
        }
        let columns = app.columns.unwrap_or_default();
        let values = app.values.unwrap_or_default();
        if columns.len() != values.len() {
            return Err(application(
                "Sizes of columns and values in tappend object are not matching",
            ));
        }
        let mut a = Append::new(row);
        for (c, v) in columns.iter().zip(values) {
            let (family, qualifier) = qualified(parse_column(c))?;
            a = a.add(family, qualifier, v);
        }
        let t = self.table(&table).map_err(|e| io(&e))?;
        let r = t.append(a).map_err(|e| io(&e))?;
        Ok(convert::cells(&r))
    }

    /// `checkAndPut`: puts `mput` when the column holds `expected`, or when it does not
    /// exist if no value was given.
    pub(super) fn check_and_put(
        &self,
        table: &[u8],
        row: Text,
        column: &[u8],
        expected: Option<Text>,
        mput: &Mutation,
    ) -> thrift::Result<bool> {
        let row = Bytes::from(row);
        let target = parse_column(mput.column.as_deref().unwrap_or_default());
        let Some(q) = target.qualifier else {
            return Err(illegal("Invalid famAndQf provided."));
        };
        let value = Bytes::from(mput.value.clone().unwrap_or_default());
        let put = Put::new(row.clone())
            .add(target.family, q, value)
            .with_durability(durability(mput));
        let check = parse_column(column);
        let Some(cq) = check.qualifier else {
            return Err(illegal("Invalid familyAndQualifier provided."));
        };
        let cam = match expected {
            Some(v) => CheckAndMutate::if_matches(row, check.family, cq, CompareOp::Equal, v),
            None => CheckAndMutate::if_not_exists(row, check.family, cq),
        }
        .then_put(put);
        let t = self.table(table).map_err(|e| io(&e))?;
        t.check_and_mutate(cam).map_err(|e| io_or_illegal(&e))
    }
}
