create 't1', 'f1'
put 't1', 'r1', 'f1:a', 'v1'
scan 't1', {FILTER => "PrefixFilter('r') AND PageFilter(1)"}
