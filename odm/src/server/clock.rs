//! The cluster time a replica set reports: `operationTime` and `$clusterTime` on every reply,
//! so that drivers run causally consistent sessions (`afterClusterTime` on later reads).
//!
//! Rules: the time is a BSON timestamp, seconds since the epoch and an increment within the
//! second; it never goes backwards and each command gets a later one than the command before
//! it. A one-member set applies every write before it answers, so any read is already after
//! every time it has handed out: `afterClusterTime` needs no waiting. The signature is
//! MongoDB's placeholder for a set without keys (key id 0, a zero hash); drivers echo it.

use std::sync::atomic::{AtomicU64, Ordering};

use bson::{RawDocumentBuf, Timestamp, rawdoc, spec::BinarySubtype};

#[derive(Debug, Default)]
pub struct ClusterClock {
    /// Seconds in the high 32 bits, the increment in the low 32.
    last: AtomicU64,
}

impl ClusterClock {
    /// A time later than every one handed out before.
    pub fn tick(&self) -> Timestamp {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .min(u64::from(u32::MAX));
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let next = (now << 32).max(last + 1);
            match self
                .last
                .compare_exchange_weak(last, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Timestamp {
                        time: (next >> 32) as u32,
                        increment: next as u32,
                    };
                }
                Err(seen) => last = seen,
            }
        }
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
        let clock = ClusterClock::default();
        let mut before = clock.tick();
        for _ in 0..10_000 {
            let next = clock.tick();
            assert!((next.time, next.increment) > (before.time, before.increment));
            before = next;
        }
    }
}
