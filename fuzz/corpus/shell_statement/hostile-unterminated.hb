put 't1', 'r1', 'f1:a', 'never ends
