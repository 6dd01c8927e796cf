disable 'hbase:meta'
drop 'hbase:meta'
truncate 'hbase:meta'
