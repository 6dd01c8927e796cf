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

/// One command's help text: its syntax and examples.
fn text(command: &str) -> &'static str {
    match command {
        "create" => "Creates a table. Pass a table name, and a set of column family
specifications (at least one), and, optionally, table configuration.
Examples:

  hbase> create 'ns1:t1', {NAME => 'f1', VERSIONS => 5}
  hbase> create 't1', 'f1', 'f2', 'f3'
  hbase> create 't1', 'f1', SPLITS => ['10', '20', '30', '40']
  hbase> create 't1', 'f1', SPLITS_FILE => 'splits.txt'
  hbase> create 't1', 'f1', {NUMREGIONS => 15, SPLITALGO => 'HexStringSplit'}",
        "alter" => "Alter a table. Add or modify a column family, delete one, or change table attributes:

  hbase> alter 't1', NAME => 'f1', VERSIONS => 5
  hbase> alter 'ns1:t1', NAME => 'f1', METHOD => 'delete'
  hbase> alter 'ns1:t1', 'delete' => 'f1'
  hbase> alter 't1', MAX_FILESIZE => '134217728'
  hbase> alter 't1', METHOD => 'table_att_unset', NAME => 'MAX_FILESIZE'",
        "put" => "Put a cell 'value' at specified table/row/column and optionally
timestamp coordinates. To put a cell value into table 'ns1:t1' or 't1'
at row 'r1' under column 'c1' marked with the time 'ts1', do:

  hbase> put 'ns1:t1', 'r1', 'c1', 'value'
  hbase> put 't1', 'r1', 'c1', 'value', ts1
  hbase> put 't1', 'r1', 'c1', 'value', {TTL => 100000}",
        "get" => "Get row or cell contents; pass table name, row, and optionally
a dictionary of column(s), timestamp, timerange, versions and filter. Examples:

  hbase> get 'ns1:t1', 'r1'
  hbase> get 't1', 'r1', {COLUMN => 'c1'}
  hbase> get 't1', 'r1', {COLUMN => ['c1', 'c2', 'c3']}
  hbase> get 't1', 'r1', {COLUMN => 'c1', TIMESTAMP => ts1}
  hbase> get 't1', 'r1', {COLUMN => 'c1', TIMERANGE => [ts1, ts2], VERSIONS => 4}
  hbase> get 't1', 'r1', {FILTER => \"ValueFilter(=, 'binary:abc')\"}
  hbase> get 't1', 'r1', 'c1', 'c2'
  hbase> get 't1', 'r1', ['c1', 'c2']",
        "scan" => "Scan a table; pass table name and optionally a dictionary of scanner
specifications: TIMERANGE, FILTER, LIMIT, STARTROW, STOPROW, ROWPREFIXFILTER, TIMESTAMP,
COLUMNS, CACHE_BLOCKS, RAW, VERSIONS, REVERSED, BATCH. Examples:

  hbase> scan 'hbase:meta'
  hbase> scan 'ns1:t1', {COLUMNS => ['c1', 'c2'], LIMIT => 10, STARTROW => 'xyz'}
  hbase> scan 't1', {COLUMNS => 'c1', TIMERANGE => [1303668804000, 1303668904000]}
  hbase> scan 't1', {REVERSED => true}
  hbase> scan 't1', {RAW => true, VERSIONS => 10}
  hbase> scan 't1', {ROWPREFIXFILTER => 'row2', FILTER => \"(QualifierFilter (>=, 'binary:xyz')) AND (TimestampsFilter ( 123, 456))\"}",
        "delete" => "Put a delete cell value at specified table/row/column and optionally
timestamp coordinates. Deletes must match the deleted cell's
coordinates exactly. Examples:

  hbase> delete 'ns1:t1', 'r1', 'c1', ts1
  hbase> delete 't1', 'r1', 'c1'",
        "deleteall" => "Delete all cells in a given row; pass a table name, row, and optionally
a column and timestamp. Deleteall also supports a row prefix. Examples:

  hbase> deleteall 'ns1:t1', 'r1'
  hbase> deleteall 't1', 'r1', 'c1'
  hbase> deleteall 't1', 'r1', 'c1', ts1
  hbase> deleteall 't1', {ROWPREFIXFILTER => 'prefix'}",
        "incr" => "Increments a cell 'value' at specified table/row/column coordinates:

  hbase> incr 'ns1:t1', 'r1', 'c1'
  hbase> incr 't1', 'r1', 'c1', 10",
        "count" => "Count the number of rows in a table. The current count is shown every
1000 rows by default; the interval may be given:

  hbase> count 'ns1:t1'
  hbase> count 't1', INTERVAL => 100000
  hbase> count 't1', {FILTER => \"PrefixFilter('r')\"}",
        "split" => "Split an entire table or pass a region to split an individual region. With the
second parameter, you can specify an explicit split key for the region:

  hbase> split 'tableName'
  hbase> split 'regionName' # format: 'tableName,startKey,id'
  hbase> split 'tableName', 'splitKey'
  hbase> split 'regionName', 'splitKey'",
        "merge_region" => "Merge two or more adjacent regions. Pass their encoded names (the hash in a
region name) or full names:

  hbase> merge_region 'FULL_REGIONNAME', 'FULL_REGIONNAME'
  hbase> merge_region 'ENCODED_REGIONNAME', 'ENCODED_REGIONNAME'
  hbase> merge_region ['ENCODED_REGIONNAME', 'ENCODED_REGIONNAME', 'ENCODED_REGIONNAME']",
        _ => "",
    }
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
                let t = text(name);
                if !t.is_empty() {
                    sh.println(t)?;
                }
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
    let t = text(&topic);
    sh.println(if t.is_empty() {
        format!("{topic}: see 'help' for the command groups.")
    } else {
        t.to_owned()
    })?;
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
