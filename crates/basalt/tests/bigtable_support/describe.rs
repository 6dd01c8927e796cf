//! Requests in one line each, in a notation close to Bigtable's documentation, for failure
//! messages a reader can replay by hand.

use basalt_bigtable_proto::google::bigtable::v2::{
    column_range, mutation, read_modify_write_rule, row_filter, row_range, value_range, Mutation,
    RowFilter, RowSet, TimestampRange,
};

use super::ops::Op;

fn text(b: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(b))
}

fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    items.iter().map(f).collect::<Vec<_>>().join(", ")
}

fn times(r: &TimestampRange) -> String {
    format!("[{}, {})", r.start_timestamp_micros, r.end_timestamp_micros)
}

pub fn filter(f: &RowFilter) -> String {
    use row_filter::Filter as F;
    let Some(f) = &f.filter else {
        return "{}".into();
    };
    match f {
        F::Chain(c) => format!("chain({})", list(&c.filters, filter)),
        F::Interleave(i) => format!("interleave({})", list(&i.filters, filter)),
        F::Condition(c) => {
            let part = |p: &Option<Box<RowFilter>>| p.as_deref().map_or("-".into(), filter);
            format!(
                "condition({} ? {} : {})",
                part(&c.predicate_filter),
                part(&c.true_filter),
                part(&c.false_filter)
            )
        }
        F::Sink(_) => "sink".into(),
        F::PassAllFilter(_) => "pass_all".into(),
        F::BlockAllFilter(_) => "block_all".into(),
        F::RowKeyRegexFilter(r) => format!("row_key({})", text(r)),
        F::RowSampleFilter(p) => format!("sample({p})"),
        F::FamilyNameRegexFilter(r) => format!("family({r:?})"),
        F::ColumnQualifierRegexFilter(r) => format!("qualifier({})", text(r)),
        F::ColumnRangeFilter(r) => {
            use column_range::{EndQualifier as E, StartQualifier as S};
            let start = match &r.start_qualifier {
                None => "(".into(),
                Some(S::StartQualifierClosed(q)) => format!("[{}", text(q)),
                Some(S::StartQualifierOpen(q)) => format!("({}", text(q)),
            };
            let end = match &r.end_qualifier {
                None => ")".into(),
                Some(E::EndQualifierClosed(q)) => format!("{}]", text(q)),
                Some(E::EndQualifierOpen(q)) => format!("{})", text(q)),
            };
            format!("columns({}:{start}..{end})", r.family_name)
        }
        F::TimestampRangeFilter(r) => format!("timestamps{}", times(r)),
        F::ValueRegexFilter(r) => format!("value({})", text(r)),
        F::ValueRangeFilter(r) => {
            use value_range::{EndValue as E, StartValue as S};
            let start = match &r.start_value {
                None => "(".into(),
                Some(S::StartValueClosed(v)) => format!("[{}", text(v)),
                Some(S::StartValueOpen(v)) => format!("({}", text(v)),
            };
            let end = match &r.end_value {
                None => ")".into(),
                Some(E::EndValueClosed(v)) => format!("{}]", text(v)),
                Some(E::EndValueOpen(v)) => format!("{})", text(v)),
            };
            format!("values{start}..{end}")
        }
        F::CellsPerRowOffsetFilter(n) => format!("row_offset({n})"),
        F::CellsPerRowLimitFilter(n) => format!("row_limit({n})"),
        F::CellsPerColumnLimitFilter(n) => format!("column_limit({n})"),
        F::StripValueTransformer(_) => "strip".into(),
        F::ApplyLabelTransformer(l) => format!("label({l:?})"),
    }
}

pub fn mutation(m: &Mutation) -> String {
    use mutation::Mutation as M;
    match &m.mutation {
        None => "{}".into(),
        Some(M::SetCell(s)) => format!(
            "set {}:{}@{}={}",
            s.family_name,
            text(&s.column_qualifier),
            s.timestamp_micros,
            text(&s.value)
        ),
        Some(M::DeleteFromColumn(d)) => format!(
            "delete {}:{}{}",
            d.family_name,
            text(&d.column_qualifier),
            d.time_range.as_ref().map_or(String::new(), times)
        ),
        Some(M::DeleteFromFamily(d)) => format!("delete family {}", d.family_name),
        Some(M::DeleteFromRow(_)) => "delete row".into(),
        Some(other) => format!("{other:?}"),
    }
}

fn rows(r: Option<&RowSet>) -> String {
    use row_range::{EndKey as E, StartKey as S};
    let Some(r) = r else { return "all".into() };
    let ranges = list(&r.row_ranges, |r| {
        let start = match &r.start_key {
            None => "(".into(),
            Some(S::StartKeyClosed(k)) => format!("[{}", text(k)),
            Some(S::StartKeyOpen(k)) => format!("({}", text(k)),
        };
        let end = match &r.end_key {
            None => ")".into(),
            Some(E::EndKeyClosed(k)) => format!("{}]", text(k)),
            Some(E::EndKeyOpen(k)) => format!("{})", text(k)),
        };
        format!("{start}..{end}")
    });
    format!(
        "keys [{}] ranges [{ranges}]",
        list(&r.row_keys, |k| text(k))
    )
}

/// One request, in one line.
pub fn op(op: &Op) -> String {
    match op {
        Op::MutateRow(r) => format!(
            "MutateRow {} [{}]",
            text(&r.row_key),
            list(&r.mutations, mutation)
        ),
        Op::MutateRows(r) => format!(
            "MutateRows {}",
            list(&r.entries, |e| format!(
                "{} [{}]",
                text(&e.row_key),
                list(&e.mutations, mutation)
            ))
        ),
        Op::CheckAndMutate(r) => format!(
            "CheckAndMutateRow {} if {} then [{}] else [{}]",
            text(&r.row_key),
            r.predicate_filter.as_ref().map_or("-".into(), filter),
            list(&r.true_mutations, mutation),
            list(&r.false_mutations, mutation)
        ),
        Op::ReadModifyWrite(r) => format!(
            "ReadModifyWriteRow {} [{}]",
            text(&r.row_key),
            list(&r.rules, |rule| {
                use read_modify_write_rule::Rule;
                let what = match &rule.rule {
                    Some(Rule::AppendValue(v)) => format!("append {}", text(v)),
                    Some(Rule::IncrementAmount(n)) => format!("increment {n}"),
                    None => "-".into(),
                };
                format!(
                    "{}:{} {what}",
                    rule.family_name,
                    text(&rule.column_qualifier)
                )
            })
        ),
        Op::ReadRows(r) => format!(
            "ReadRows {} limit {}{} filter {}",
            rows(r.rows.as_ref()),
            r.rows_limit,
            if r.reversed { " reversed" } else { "" },
            r.filter.as_ref().map_or("-".into(), filter)
        ),
    }
}
