//! `help`, `help 'command'` and `help 'group'`.

use crate::args::Args;
use crate::commands::COMMANDS;
use crate::{Returned, Shell, ShellError};

/// The groups in the order `help` lists them.
const GROUPS: [&str; 5] = ["general", "ddl", "namespace", "dml", "tools"];

/// `table_help`: what a table reference (`t = get_table 't'`) can do.
pub const TABLE_HELP: &str = "Help for table-reference commands.

You can either create a table via 'create' and then manipulate the table via commands like 'put', 'get', etc.
However, using the table reference you can call the same commands on the table directly:

  hbase> t = create 't', 'cf'

or, if the table already exists:

  hbase> t = get_table 't'

Then you can call put, get, scan, delete, deleteall, incr, get_counter, count, append,
flush, and describe on 't':

  hbase> t.put 'r', 'cf:q', 'v'
  hbase> t.scan";

/// Each command's help text: its syntax and examples (every command has one; a test checks).
const HELP: &[(&str, &str)] = &[
    ("create", "Creates a table. Pass a table name, and a set of column family
specifications (at least one), and, optionally, table configuration.
Examples:

  hbase> create 'ns1:t1', {NAME => 'f1', VERSIONS => 5}
  hbase> create 't1', 'f1', 'f2', 'f3'
  hbase> create 't1', 'f1', SPLITS => ['10', '20', '30', '40']
  hbase> create 't1', 'f1', SPLITS_FILE => 'splits.txt'
  hbase> create 't1', 'f1', {NUMREGIONS => 15, SPLITALGO => 'HexStringSplit'}"),
    ("alter", "Alter a table. Add or modify a column family, delete one, or change table attributes:

  hbase> alter 't1', NAME => 'f1', VERSIONS => 5
  hbase> alter 'ns1:t1', NAME => 'f1', METHOD => 'delete'
  hbase> alter 'ns1:t1', 'delete' => 'f1'
  hbase> alter 't1', MAX_FILESIZE => '134217728'
  hbase> alter 't1', METHOD => 'table_att_unset', NAME => 'MAX_FILESIZE'"),
    ("put", "Put a cell 'value' at specified table/row/column and optionally
timestamp coordinates. To put a cell value into table 'ns1:t1' or 't1'
at row 'r1' under column 'c1' marked with the time 'ts1', do:

  hbase> put 'ns1:t1', 'r1', 'c1', 'value'
  hbase> put 't1', 'r1', 'c1', 'value', ts1
  hbase> put 't1', 'r1', 'c1', 'value', {TTL => 100000}"),
    ("get", "Get row or cell contents; pass table name, row, and optionally
a dictionary of column(s), timestamp, timerange, versions and filter. Examples:

  hbase> get 'ns1:t1', 'r1'
  hbase> get 't1', 'r1', {COLUMN => 'c1'}
  hbase> get 't1', 'r1', {COLUMN => ['c1', 'c2', 'c3']}
  hbase> get 't1', 'r1', {COLUMN => 'c1', TIMESTAMP => ts1}
  hbase> get 't1', 'r1', {COLUMN => 'c1', TIMERANGE => [ts1, ts2], VERSIONS => 4}
  hbase> get 't1', 'r1', {FILTER => \"ValueFilter(=, 'binary:abc')\"}
  hbase> get 't1', 'r1', 'c1', 'c2'
  hbase> get 't1', 'r1', ['c1', 'c2']"),
    ("scan", "Scan a table; pass table name and optionally a dictionary of scanner
specifications: TIMERANGE, FILTER, LIMIT, STARTROW, STOPROW, ROWPREFIXFILTER, TIMESTAMP,
COLUMNS, CACHE_BLOCKS, RAW, VERSIONS, REVERSED, BATCH. Examples:

  hbase> scan 'hbase:meta'
  hbase> scan 'ns1:t1', {COLUMNS => ['c1', 'c2'], LIMIT => 10, STARTROW => 'xyz'}
  hbase> scan 't1', {COLUMNS => 'c1', TIMERANGE => [1303668804000, 1303668904000]}
  hbase> scan 't1', {REVERSED => true}
  hbase> scan 't1', {RAW => true, VERSIONS => 10}
  hbase> scan 't1', {ROWPREFIXFILTER => 'row2', FILTER => \"(QualifierFilter (>=, 'binary:xyz')) AND (TimestampsFilter ( 123, 456))\"}"),
    ("delete", "Put a delete cell value at specified table/row/column and optionally
timestamp coordinates. Deletes must match the deleted cell's
coordinates exactly. Examples:

  hbase> delete 'ns1:t1', 'r1', 'c1', ts1
  hbase> delete 't1', 'r1', 'c1'"),
    ("deleteall", "Delete all cells in a given row; pass a table name, row, and optionally
a column and timestamp. Deleteall also supports a row prefix. Examples:

  hbase> deleteall 'ns1:t1', 'r1'
  hbase> deleteall 't1', 'r1', 'c1'
  hbase> deleteall 't1', 'r1', 'c1', ts1
  hbase> deleteall 't1', {ROWPREFIXFILTER => 'prefix'}"),
    ("incr", "Increments a cell 'value' at specified table/row/column coordinates:

  hbase> incr 'ns1:t1', 'r1', 'c1'
  hbase> incr 't1', 'r1', 'c1', 10"),
    ("count", "Count the number of rows in a table. The current count is shown every
1000 rows by default; the interval may be given:

  hbase> count 'ns1:t1'
  hbase> count 't1', INTERVAL => 100000
  hbase> count 't1', {FILTER => \"PrefixFilter('r')\"}"),
    ("split", "Split an entire table or pass a region to split an individual region. With the
second parameter, you can specify an explicit split key for the region:

  hbase> split 'tableName'
  hbase> split 'regionName' # format: 'tableName,startKey,id'
  hbase> split 'tableName', 'splitKey'
  hbase> split 'regionName', 'splitKey'"),
    ("merge_region", "Merge two or more adjacent regions. Pass their encoded names (the hash in a
region name) or full names:

  hbase> merge_region 'FULL_REGIONNAME', 'FULL_REGIONNAME'
  hbase> merge_region 'ENCODED_REGIONNAME', 'ENCODED_REGIONNAME'
  hbase> merge_region ['ENCODED_REGIONNAME', 'ENCODED_REGIONNAME', 'ENCODED_REGIONNAME']"),
    ("status", "Show cluster status: 'summary' (the default), 'simple' (servers and their loads)\nor 'detailed' (each server's regions too).\n\n  hbase> status\n  hbase> status 'simple'\n  hbase> status 'detailed'"),
    ("version", "Output this HBase (Basalt) version.\n\n  hbase> version"),
    ("whoami", "Show the current hbase user.\n\n  hbase> whoami"),
    ("assign", "Assign a region: open it on a live server if it is not open on one.\n\n  hbase> assign 'REGIONNAME'\n  hbase> assign 'ENCODED_REGIONNAME'"),
    ("unassign", "Unassign a region: close it (flushed) and leave it closed until assigned.\n\n  hbase> unassign 'REGIONNAME'\n  hbase> unassign 'ENCODED_REGIONNAME', true"),
    ("move", "Move a region to a server, or, without one, to the server with the fewest regions.\nThe server name is host,port,startcode (see status 'simple').\n\n  hbase> move 'ENCODED_REGIONNAME'\n  hbase> move 'ENCODED_REGIONNAME', 'SERVER_NAME'"),
    ("balancer", "Run the balancer: regions move until every server holds within one of the others.\nPrints whether it ran (not while switched off).\n\n  hbase> balancer"),
    ("balance_switch", "Switch the balancer on or off; prints the previous state.\n\n  hbase> balance_switch true\n  hbase> balance_switch false"),
    ("decommission_regionservers", "Decommission region servers: no region is assigned to them, and with offload\n(the default) their regions move to the other servers first.\n\n  hbase> decommission_regionservers 'server'\n  hbase> decommission_regionservers ['server1', 'server2'], true"),
    ("recommission_regionserver", "Put a decommissioned region server back into assignment, moving the named regions to it.\n\n  hbase> recommission_regionserver 'server'\n  hbase> recommission_regionserver 'server', ['ENCODED_REGIONNAME']"),
    ("list_decommissioned_regionservers", "List the decommissioned region servers.\n\n  hbase> list_decommissioned_regionservers"),
    ("table_help", "Help for table-reference commands (t = get_table 't'; t.put ...).\n\n  hbase> table_help"),
    ("help", "Show the command groups, a group's commands, or one command's help.\n\n  hbase> help\n  hbase> help 'dml'\n  hbase> help 'get'"),
    ("describe", "Describe the named table: its state, attributes and column families.\n\n  hbase> describe 't1'\n  hbase> describe 'ns1:t1'"),
    ("desc", "Describe the named table (alias of describe).\n\n  hbase> desc 't1'"),
    ("disable", "Start disable of named table:\n\n  hbase> disable 't1'\n  hbase> disable 'ns1:t1'"),
    ("drop", "Drop the named table. Table must first be disabled:\n\n  hbase> drop 't1'\n  hbase> drop 'ns1:t1'"),
    ("enable", "Start enable of named table:\n\n  hbase> enable 't1'\n  hbase> enable 'ns1:t1'"),
    ("exists", "Does the named table exist?\n\n  hbase> exists 't1'\n  hbase> exists 'ns1:t1'"),
    ("get_table", "Get the given table name and return it as an actual object to be manipulated by the user.\n\n  hbase> t1 = get_table 't1'\n  hbase> t1.scan"),
    ("is_disabled", "Is named table disabled? For example:\n\n  hbase> is_disabled 't1'"),
    ("is_enabled", "Is named table enabled? For example:\n\n  hbase> is_enabled 't1'"),
    ("list", "List all user tables in hbase. Optional regular expression parameter could be used to filter the output:\n\n  hbase> list\n  hbase> list 'abc.*'\n  hbase> list 'ns:abc.*'\n  hbase> list 'ns:.*'"),
    ("list_regions", "List the regions of a table, with their names and key ranges:\n\n  hbase> list_regions 'table_name'"),
    ("show_filters", "Show all the filters in hbase. Example:\n\n  hbase> show_filters"),
    ("create_namespace", "Create namespace; pass namespace name, and optionally a dictionary of namespace configuration.\n\n  hbase> create_namespace 'ns1'\n  hbase> create_namespace 'ns1', {'PROPERTY_NAME'=>'PROPERTY_VALUE'}"),
    ("drop_namespace", "Drop the named namespace. The namespace must be empty.\n\n  hbase> drop_namespace 'ns1'"),
    ("alter_namespace", "Alter namespace properties.\n\n  hbase> alter_namespace 'ns1', {METHOD => 'set', 'PROPERTY_NAME' => 'PROPERTY_VALUE'}\n  hbase> alter_namespace 'ns1', {METHOD => 'unset', NAME=>'PROPERTY_NAME'}"),
    ("describe_namespace", "Describe the named namespace. For example:\n\n  hbase> describe_namespace 'ns1'"),
    ("list_namespace", "List all namespaces in hbase.\n\n  hbase> list_namespace"),
    ("list_namespace_tables", "List all tables that are members of the namespace.\n\n  hbase> list_namespace_tables 'ns1'"),
    ("append", "Appends a cell 'value' at specified table/row/column coordinates.\n\n  hbase> append 't1', 'r1', 'c1', 'value'"),
    ("get_counter", "Return a counter cell value at specified table/row/column coordinates. A counter cell should be managed with atomic increment functions on HBase and the data should be binary encoded (as long value).\n\n  hbase> get_counter 'ns1:t1', 'r1', 'c1'"),
    ("get_splits", "Get the splits of the named table:\n\n  hbase> get_splits 't1'\n  hbase> get_splits 'ns1:t1'"),
    ("truncate", "Disables, drops and recreates the specified table.\n\n  hbase> truncate 't1'"),
    ("truncate_preserve", "Disables, drops and recreates the specified table while still maintaining the previous region boundaries.\n\n  hbase> truncate_preserve 't1'"),
    ("catalogjanitor_run", "Catalog janitor command to run the (garbage collection) scan from command line.\n\n  hbase> catalogjanitor_run"),
    ("compact", "Compact all regions in a table, or all of a column family's stores:\n\n  hbase> compact 't1'\n  hbase> compact 'ns1:t1'\n  hbase> compact 't1', 'c1'"),
    ("flush", "Flush all regions in passed table:\n\n  hbase> flush 'TABLENAME'\n  hbase> flush 'NAMESPACE_NAME:TABLENAME'"),
    ("major_compact", "Run major compaction on passed table, or on a column family within it:\n\n  hbase> major_compact 't1'\n  hbase> major_compact 'ns1:t1'\n  hbase> major_compact 't1', 'c1'"),
];

/// The help text of `command` (empty for no such command).
fn text(command: &str) -> &'static str {
    HELP.iter()
        .find(|(n, _)| *n == command)
        .map_or("", |(_, t)| t)
}

pub fn help(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    if a.is_empty() {
        return overview(sh);
    }
    let topic = a.string("command")?;
    if GROUPS.contains(&topic.as_str()) {
        sh.println(format!("Command: {topic}"))?;
        for (name, group, _) in COMMANDS {
            if *group == topic {
                sh.println(format!("Command: {name}"))?;
                sh.println(text(name))?;
                sh.println("")?;
            }
        }
        return Ok(Returned::Nothing);
    }
    if crate::commands::find(&topic).is_none() {
        return Err(ShellError::usage(format!(
            "Unknown command {topic}. Try 'help'."
        )));
    }
    sh.println(text(&topic))?;
    Ok(Returned::Nothing)
}

fn overview(sh: &mut Shell<'_>) -> Result<Returned, ShellError> {
    sh.println(format!(
        "HBase Shell (Basalt {}), HBase 2.5 compatible",
        env!("CARGO_PKG_VERSION")
    ))?;
    sh.println("Type 'help \"COMMAND\"', (e.g. 'help \"get\"' -- the quotes are necessary) for help on a specific command.")?;
    sh.println("Commands are grouped. Type 'help \"COMMAND_GROUP\"', (e.g. 'help \"general\"') for help on a command group.")?;
    sh.println("")?;
    sh.println("COMMAND GROUPS:")?;
    for g in GROUPS {
        let mut names: Vec<&str> = COMMANDS
            .iter()
            .filter(|(_, group, _)| *group == g)
            .map(|(n, _, _)| *n)
            .collect();
        names.sort_unstable();
        sh.println(format!("  Group name: {g}"))?;
        sh.println(format!("  Commands: {}", names.join(", ")))?;
        sh.println("")?;
    }
    sh.println("SHELL USAGE:")?;
    sh.println("Quote all names in HBase Shell such as table and column names.  Commas delimit")?;
    sh.println("command parameters.  Type <RETURN> after entering a command to run it.")?;
    sh.println("Dictionaries of configuration used in the creation and alteration of tables are")?;
    sh.println("Ruby Hashes. They look like this:")?;
    sh.println("")?;
    sh.println("  {'key1' => 'value1', 'key2' => 'value2', ...}")?;
    Ok(Returned::Nothing)
}
