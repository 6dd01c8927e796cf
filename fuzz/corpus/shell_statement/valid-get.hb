get 't1', 'r1', {COLUMN => 'f1:a', VERSIONS => 3}
