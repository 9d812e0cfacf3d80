//! The cluster time a replica set reports: `operationTime` and `$clusterTime` on every reply,
//! so that drivers run causally consistent sessions (`afterClusterTime` on later reads).
//!
//! Rules: the time is a BSON timestamp, seconds since the epoch and an increment within the
//! second; it never goes backwards and each command gets a later one than the command before
//! it. A one-member set applies every write before it answers, so any read is already after
//! every time it has handed out: `afterClusterTime` needs no waiting. The signature is
//! MongoDB's placeholder for a set without keys (key id 0, a zero hash); drivers echo it.

use bson::{RawDocumentBuf, Timestamp, rawdoc, spec::BinarySubtype};

/// The server's side of the process's one cluster-time clock
/// (`odm_engine::changes::clock`), which also times the changes change streams report, so
/// that `startAtOperationTime: <a reply's operationTime>` means "after that reply".
#[derive(Debug, Default)]
pub struct ClusterClock;

impl ClusterClock {
    /// A time later than every one handed out before.
    pub fn tick(&self) -> Timestamp {
        odm_engine::changes::clock::tick()
    }

    /// The `$clusterTime` field of a reply at `time`, as bytes: every reply in replica-set
    /// mode carries it.
    pub fn gossip(time: Timestamp) -> RawDocumentBuf {
        rawdoc! {
            "clusterTime": time,
            "signature": {
                "hash": bson::Binary { subtype: BinarySubtype::Generic, bytes: vec![0; 20] },
                "keyId": 0_i64,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_only_go_forward() {
        let clock = ClusterClock;
        let mut before = clock.tick();
        for _ in 0..10_000 {
            let next = clock.tick();
            assert!((next.time, next.increment) > (before.time, before.increment));
            before = next;
        }
    }
}
