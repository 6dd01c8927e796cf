alter 't1', NAME => 'f2', VERSIONS => 5
