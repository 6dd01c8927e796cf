//! Checkers the failover tests end with: after killing servers, moving regions and retrying
//! through it all, a test must decide whether what its clients saw is something a correct
//! database could have answered.
//!
//! - [`linearizability`] checks a recorded history of calls and answers per row (or per
//!   cell): some order of the operations, each placed between its call and its answer,
//!   must explain every answer. Retries and timeouts are where failover bugs hide, so
//!   operations that got no answer are allowed to have taken effect or not.
//! - [`linked_list`] writes a big linked list in the manner of HBase's
//!   IntegrationTestBigLinkedList: each node names the one written before it, so a full scan
//!   at the end finds any acknowledged write that was lost as a reference to a missing node.
//!   It needs no record of timings and scales to millions of writes.

pub mod linearizability;
pub mod linked_list;
