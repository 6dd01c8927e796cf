//! The shell's commands by group, each a function of the session and its arguments.

mod cluster;
mod ddl;
mod dml;
mod namespace;
mod read;
pub(crate) mod schema;
mod tools;

use crate::args::Args;
use crate::{Returned, Shell, ShellError};

/// A command's implementation.
pub type Command = fn(&mut Shell<'_>, Args) -> Result<Returned, ShellError>;

/// Every command: name, group, implementation.
pub const COMMANDS: &[(&str, &str, Command)] = &[
    ("status", "general", cluster::status),
    ("version", "general", tools::version),
    ("whoami", "general", tools::whoami),
    ("table_help", "general", tools::table_help),
    ("help", "general", crate::help::help),
    ("alter", "ddl", ddl::alter),
    ("create", "ddl", ddl::create),
    ("describe", "ddl", ddl::describe),
    ("desc", "ddl", ddl::describe),
    ("disable", "ddl", ddl::disable),
    ("drop", "ddl", ddl::drop),
    ("enable", "ddl", ddl::enable),
    ("exists", "ddl", ddl::exists),
    ("get_table", "ddl", ddl::get_table),
    ("is_disabled", "ddl", ddl::is_disabled),
    ("is_enabled", "ddl", ddl::is_enabled),
    ("list", "ddl", ddl::list),
    ("list_regions", "ddl", tools::list_regions),
    ("show_filters", "ddl", tools::show_filters),
    ("create_namespace", "namespace", namespace::create),
    ("drop_namespace", "namespace", namespace::drop),
    ("alter_namespace", "namespace", namespace::alter),
    ("describe_namespace", "namespace", namespace::describe),
    ("list_namespace", "namespace", namespace::list),
    ("list_namespace_tables", "namespace", namespace::list_tables),
    ("append", "dml", dml::append),
    ("count", "dml", read::count),
    ("delete", "dml", dml::delete),
    ("deleteall", "dml", dml::deleteall),
    ("get", "dml", read::get),
    ("get_counter", "dml", read::get_counter),
    ("get_splits", "dml", tools::get_splits),
    ("incr", "dml", dml::incr),
    ("put", "dml", dml::put),
    ("scan", "dml", read::scan),
    ("truncate", "dml", ddl::truncate),
    ("truncate_preserve", "dml", ddl::truncate_preserve),
    ("catalogjanitor_run", "tools", tools::catalogjanitor_run),
    ("compact", "tools", tools::compact),
    ("flush", "tools", tools::flush),
    ("major_compact", "tools", tools::major_compact),
    ("merge_region", "tools", tools::merge_region),
    ("split", "tools", tools::split),
    ("assign", "tools", cluster::assign),
    ("balance_switch", "tools", cluster::balance_switch),
    ("balancer", "tools", cluster::balancer),
    ("decommission_regionservers", "tools", cluster::decommission),
    (
        "list_decommissioned_regionservers",
        "tools",
        cluster::list_decommissioned,
    ),
    ("move", "tools", cluster::move_region),
    ("recommission_regionserver", "tools", cluster::recommission),
    ("unassign", "tools", cluster::unassign),
];

/// The command named `name`.
pub fn find(name: &str) -> Option<Command> {
    COMMANDS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, f)| *f)
}

/// Every command name, sorted.
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&str> = COMMANDS.iter().map(|(n, _, _)| *n).collect();
    v.sort_unstable();
    v.dedup();
    v
}
