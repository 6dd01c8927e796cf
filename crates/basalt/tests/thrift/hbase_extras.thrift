// The methods HBase 2's Hbase.thrift added after the IDL happybase bundles: just what the
// tests call, declared with HBase's field ids and types so the same service answers them;
// and one method Hbase does not have.

exception IOError {
  1: string message
  2: bool canRetry
}

enum TThriftServerType {
  ONE = 1,
  TWO = 2
}

enum TPermissionScope {
  TABLE = 0,
  NAMESPACE = 1
}

struct TAccessControlEntity {
  1: required string username
  2: required TPermissionScope scope
  4: required string actions
  5: optional binary tableName
  6: optional string nsName
}

service Hbase {
  map<binary, bool> getTableNamesWithIsTableEnabled() throws (1: IOError io)
  TThriftServerType getThriftServerType()
  string getClusterId()
  bool grant(1: required TAccessControlEntity info) throws (1: IOError io)
  bool revoke(1: required TAccessControlEntity info) throws (1: IOError io)
  // Not a method of Hbase: the gateway must answer it with an error and stay in step.
  string noSuchMethod(1: string text, 2: list<string> more)
}
