//! The patterns for async code (`odm_patterns::aio`) on the back end `odm::testing::database()`
//! chooses: each pattern's async operations give what its sync ones give (a property over
//! random sends for the inbox), and an inbox subscription streams new messages.

use std::time::Duration;

use bson::DateTime;
use odm_patterns::aio::Async;
use odm_patterns::{
    Bucket, BucketOptions, History, Inbox, InboxVariant, PatternError, Queue, TimeSeries, Tree,
    TreeVariant,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, odm::Embedded)]
struct Reading {
    value: i64,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

async fn database() -> odm::aio::Database {
    let db = odm::aio::run(odm::testing::database)
        .await
        .expect("a database");
    odm::aio::Database::from_sync(db)
}

const OWNERS: [&str; 3] = ["ann", "bob", "cy"];

/// The pages the sync inbox and the async one (each on a collection of its own) read after
/// the same sends.
async fn pages_after(
    sends: &[(usize, Vec<usize>)],
    size: u32,
    variant: InboxVariant,
) -> Result<Vec<(Vec<u32>, Vec<u32>)>, PatternError> {
    let db = database().await;
    let sync: Inbox<u32> = Inbox::open(db.blocking(), "sync", size, variant)?;
    let inbox: Async<Inbox<u32>> =
        Async::open(&db, move |db| Inbox::open(db, "async", size, variant)).await?;
    for (n, (from, to)) in sends.iter().enumerate() {
        let to: Vec<&str> = to.iter().map(|&t| OWNERS[t]).collect();
        sync.send(OWNERS[*from], &to, &(n as u32))?;
        inbox.send(OWNERS[*from], &to, n as u32).await?;
    }
    let messages =
        |page: Vec<odm_patterns::Envelope<u32>>| page.into_iter().map(|e| e.message).collect();
    let mut pages = Vec::new();
    for owner in OWNERS {
        for (offset, limit) in [(0, 5), (2, 7), (0, 100)] {
            pages.push((
                messages(sync.latest(owner, offset, limit)?),
                messages(inbox.latest(owner, offset, limit).await?),
            ));
        }
    }
    Ok(pages)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// The same sends, made through the async inbox and the sync one, read back the same pages.
    #[test]
    fn the_async_inbox_reads_what_the_sync_one_reads(
        sends in prop::collection::vec((0..3usize, prop::collection::vec(0..3usize, 1..3)), 1..40),
        size in 1u32..6,
        sequence in any::<bool>(),
    ) {
        let variant = if sequence { InboxVariant::Sequence } else { InboxVariant::OpenBucket };
        let pages = runtime().block_on(pages_after(&sends, size, variant));
        for (sync, async_) in pages.map_err(|e| TestCaseError::fail(e.to_string()))? {
            prop_assert_eq!(async_, sync);
        }
    }
}

#[test]
fn an_inbox_subscription_streams_new_messages_and_marks_and_deletes() -> Result<(), PatternError> {
    runtime().block_on(async {
        let db = database().await;
        let inbox: Async<Inbox<String>> = Async::open(&db, |db| {
            Inbox::open(db, "inbox", 2, InboxVariant::OpenBucket)
        })
        .await?;
        inbox.send("sam", &["ann"], "before".into()).await?;
        let mut feed = inbox.subscribe("ann").await?;
        let mut sent = Vec::new();
        for n in 0..5 {
            sent.push(inbox.send("sam", &["ann", "bob"], format!("m{n}")).await?);
        }
        for n in 0..5 {
            let message = tokio::time::timeout(Duration::from_secs(10), feed.next())
                .await
                .expect("a message within 10 s")
                .expect("the feed goes on")?;
            assert_eq!(message.message, format!("m{n}"));
        }
        assert!(inbox.mark_read("ann", sent[0]).await?);
        assert!(inbox.delete("bob", sent[1]).await?);
        assert!(!inbox.delete("bob", sent[1]).await?);
        let ann = inbox.latest("ann", 0, 10).await?;
        assert_eq!(ann.len(), 6);
        assert!(ann.iter().find(|e| e.id == sent[0]).is_some_and(|e| e.read));
        assert_eq!(inbox.latest("bob", 0, 10).await?.len(), 4);
        Ok(())
    })
}

#[test]
fn queue_tree_series_history_and_buckets_answer_as_their_sync_forms() -> Result<(), PatternError> {
    runtime().block_on(async {
        let db = database().await;
        let at = |s: i64| DateTime::from_millis(1_700_000_000_000 + s * 1000);

        let queue: Async<Queue<String>> = Async::open(&db, |db| Queue::open(db, "jobs")).await?;
        queue.push("low".into(), 1, at(0)).await?;
        let high = queue.push("high".into(), 9, at(1)).await?;
        let (taken, job) = queue.take(at(2)).await?.expect("a job");
        assert_eq!((taken, job.as_str()), (high, "high"));
        assert!(queue.complete(taken).await?);
        assert_eq!(
            queue
                .requeue_expired(at(100), Duration::from_secs(1))
                .await?,
            0
        );

        let tree: Async<Tree<u8>> =
            Async::open(&db, |db| Tree::open(db, "topics", TreeVariant::Ancestors)).await?;
        tree.insert("a", None, 1).await?;
        tree.insert("b", Some("a"), 2).await?;
        tree.insert("c", Some("b"), 3).await?;
        let below: Vec<String> = tree
            .descendants("a")
            .await?
            .into_iter()
            .map(|n| n.id)
            .collect();
        assert_eq!(below, ["b", "c"]);
        assert_eq!(tree.move_subtree("b", None).await?, 2);
        assert_eq!(tree.get("c").await?.map(|n| n.path).as_deref(), Some("b/c"));
        assert_eq!(tree.ancestors("c").await?.len(), 1);
        assert_eq!(tree.children("b").await?.len(), 1);
        assert_eq!(tree.delete_subtree("b").await?, 2);

        let series: Async<TimeSeries<String, f64>> = Async::open(&db, |db| {
            TimeSeries::open(db, "temps", Duration::from_mins(1), 10, None)
        })
        .await?;
        for s in 0..30 {
            series.insert("t1".into(), at(s * 10), s as f64).await?;
        }
        let window = series.range(Some("t1".into()), at(50), at(120)).await?;
        assert_eq!(
            window.iter().map(|s| s.value).collect::<Vec<_>>(),
            [5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]
        );

        let history: Async<History<String>> =
            Async::open(&db, |db| History::open(db, "events", 4)).await?;
        for s in 0..10 {
            history.record("ann", at(s), format!("e{s}")).await?;
        }
        assert_eq!(history.range("ann", at(3), at(6)).await?.len(), 3);
        assert_eq!(history.remove_before(at(100)).await?, 3);

        let buckets: Async<Bucket<String, Reading>> = Async::open(&db, |db| {
            Bucket::open(db, "readings", BucketOptions::new().max_items(3))
        })
        .await?;
        for value in 0..7 {
            buckets.push("s1".into(), Reading { value }).await?;
        }
        assert_eq!(buckets.count("s1".into()).await?, 7);
        let newest = buckets.newest("s1".into(), 1, 2).await?;
        assert_eq!(newest, [Reading { value: 5 }, Reading { value: 4 }]);
        Ok(())
    })
}
