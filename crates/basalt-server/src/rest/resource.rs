//! Which of HBase REST's resources a path names, decided once (Jersey's routing of
//! `RootResource` and `TableResource`), so the server and its memory-only fast path agree.

/// A resource of the gateway, from a path without its leading `/` (still percent-encoded).
#[derive(Debug, PartialEq, Eq)]
pub enum Resource<'a> {
    /// `/`: the table list.
    Tables,
    /// `/version`, `/version/rest`.
    Version,
    /// `/version/cluster`.
    ClusterVersion,
    /// `/status/cluster`.
    ClusterStatus,
    /// `/namespaces[/NS[/tables]]`: what follows `namespaces/`.
    Namespaces(&'a str),
    /// Anything else names a table (still percent-encoded) and one of its resources.
    Table(&'a str, TableResource<'a>),
}

/// A resource under a table.
#[derive(Debug, PartialEq, Eq)]
pub enum TableResource<'a> {
    Exists,
    Regions,
    Schema,
    /// `scanner`: a new scanner.
    ScannerOpen,
    /// `scanner/ID`.
    Scanner(&'a str),
    /// `multiget[...]`, as written.
    Multiget(&'a str),
    /// A table path with no row.
    NoRow,
    /// `prefix*` (or `*`): the stateless scan.
    Scan(&'a str),
    /// A `*` anywhere but at the end of the row part.
    BadGlob,
    /// A row spec, `row[,end][/cols][/ts | /start,end]` or a `prefix*/cols` glob, as written.
    Row(&'a str),
}

impl<'a> Resource<'a> {
    pub fn of(path: &'a str) -> Resource<'a> {
        let (first, rest) = path.split_once('/').unwrap_or((path, ""));
        match (first, rest) {
            ("", _) => Resource::Tables,
            ("version", "" | "rest") => Resource::Version,
            ("version", "cluster") => Resource::ClusterVersion,
            ("status", "cluster") => Resource::ClusterStatus,
            ("namespaces", ns) => Resource::Namespaces(ns),
            (table, rest) => Resource::Table(table, TableResource::of(rest)),
        }
    }
}

impl<'a> TableResource<'a> {
    fn of(rest: &'a str) -> TableResource<'a> {
        match rest.trim_end_matches('/') {
            "exists" => TableResource::Exists,
            "regions" => TableResource::Regions,
            "schema" => TableResource::Schema,
            "scanner" => TableResource::ScannerOpen,
            r if r.starts_with("scanner/") => TableResource::Scanner(&r["scanner/".len()..]),
            r if r.starts_with("multiget") => TableResource::Multiget(r),
            "" => TableResource::NoRow,
            r if r.contains("*/") && !r.ends_with("*/") => TableResource::Row(rest),
            r if r.ends_with('*') => TableResource::Scan(r),
            r if r.contains('*') => TableResource::BadGlob,
            _ => TableResource::Row(rest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Resource as R, TableResource as T};

    #[test]
    fn every_path_names_one_resource_as_hbase_routes_it() {
        let cases = [
            ("", R::Tables),
            ("version", R::Version),
            ("version/rest", R::Version),
            ("version/cluster", R::ClusterVersion),
            ("status/cluster", R::ClusterStatus),
            ("namespaces", R::Namespaces("")),
            ("namespaces/ns/tables", R::Namespaces("ns/tables")),
            // A table may be called `version` or `status`.
            ("version/r1", R::Table("version", T::Row("r1"))),
            ("status/r1", R::Table("status", T::Row("r1"))),
            ("t/exists", R::Table("t", T::Exists)),
            ("t/regions/", R::Table("t", T::Regions)),
            ("t/schema", R::Table("t", T::Schema)),
            ("t/scanner", R::Table("t", T::ScannerOpen)),
            ("t/scanner/12", R::Table("t", T::Scanner("12"))),
            ("t/multiget/cf", R::Table("t", T::Multiget("multiget/cf"))),
            ("t", R::Table("t", T::NoRow)),
            ("t/", R::Table("t", T::NoRow)),
            ("t/ab*", R::Table("t", T::Scan("ab*"))),
            ("t/ab*/cf", R::Table("t", T::Row("ab*/cf"))),
            ("t/a*b", R::Table("t", T::BadGlob)),
            ("t/r1/cf:q/5", R::Table("t", T::Row("r1/cf:q/5"))),
            ("t/r1,r9", R::Table("t", T::Row("r1,r9"))),
        ];
        for (path, expected) in cases {
            assert_eq!(R::of(path), expected, "{path:?}");
        }
    }
}
