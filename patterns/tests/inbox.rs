//! S1c: the bucketed inbox in both variants: order and paging across buckets, the bucket size
//! kept with the data, marking and deleting, reads touching one or two buckets, concurrent
//! senders.

use odm::Database;
use odm_patterns::{Inbox, InboxVariant, PatternError};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Note {
    text: String,
}

fn note(i: usize) -> Note {
    Note {
        text: format!("note {i}"),
    }
}

fn texts(inbox: &Inbox<Note>, owner: &str, offset: usize, limit: usize) -> Vec<String> {
    inbox
        .latest(owner, offset, limit)
        .unwrap()
        .into_iter()
        .map(|e| e.message.text)
        .collect()
}

#[test]
fn both_variants_read_newest_first_across_buckets_with_paging() {
    for variant in [InboxVariant::OpenBucket, InboxVariant::Sequence] {
        let db = odm::testing::database().unwrap();
        let inbox: Inbox<Note> = Inbox::open(&db, "inbox", 3, variant).unwrap();
        for i in 1..=8 {
            inbox.send("sam", &["ann", "bob"], &note(i)).unwrap();
        }
        inbox.send("sam", &["bob"], &note(9)).unwrap();
        assert_eq!(
            texts(&inbox, "ann", 0, 5),
            ["note 8", "note 7", "note 6", "note 5", "note 4"],
            "{variant:?}"
        );
        assert_eq!(texts(&inbox, "ann", 5, 5), ["note 3", "note 2", "note 1"]);
        assert_eq!(texts(&inbox, "bob", 0, 2), ["note 9", "note 8"]);
        assert!(texts(&inbox, "cy", 0, 5).is_empty());
        // Eight messages in buckets of three: three buckets for ann.
        let buckets = inbox.buckets().collection();
        assert_eq!(buckets.count(bson::doc! { "owner": "ann" }).unwrap(), 3);
    }
}

#[test]
fn the_bucket_size_is_kept_with_the_data() {
    let db = odm::testing::database().unwrap();
    Inbox::<Note>::open(&db, "inbox", 50, InboxVariant::OpenBucket).unwrap();
    let err = Inbox::<Note>::open(&db, "inbox", 20, InboxVariant::OpenBucket).unwrap_err();
    assert!(
        matches!(err, PatternError::ParametersChanged { .. }),
        "{err}"
    );
    assert!(err.to_string().contains(r#"{ "max_items": 50 }"#), "{err}");
    let err = Inbox::<Note>::open(&db, "inbox", 50, InboxVariant::Sequence).unwrap_err();
    assert!(
        matches!(err, PatternError::ParametersChanged { .. }),
        "{err}"
    );
    // The same parameters reopen it.
    Inbox::<Note>::open(&db, "inbox", 50, InboxVariant::OpenBucket).unwrap();
}

#[test]
fn messages_are_marked_and_deleted_without_reordering() {
    let db = odm::testing::database().unwrap();
    let inbox: Inbox<Note> = Inbox::open(&db, "inbox", 2, InboxVariant::OpenBucket).unwrap();
    let ids: Vec<_> = (1..=5)
        .map(|i| inbox.send("sam", &["ann"], &note(i)).unwrap())
        .collect();
    assert!(inbox.mark_read("ann", ids[1]).unwrap());
    assert!(!inbox.mark_read("bob", ids[1]).unwrap());
    assert!(inbox.delete("ann", ids[2]).unwrap());
    assert!(!inbox.delete("ann", ids[2]).unwrap());
    // A message sent after the deletion still comes first: no bucket reopened.
    inbox.send("sam", &["ann"], &note(6)).unwrap();
    let latest = inbox.latest("ann", 0, 10).unwrap();
    let shown: Vec<(&str, bool)> = latest
        .iter()
        .map(|e| (e.message.text.as_str(), e.read))
        .collect();
    assert_eq!(
        shown,
        [
            ("note 6", false),
            ("note 5", false),
            ("note 4", false),
            ("note 2", true),
            ("note 1", false)
        ]
    );
}

#[test]
fn a_page_of_the_bucket_size_reads_one_or_two_buckets() {
    let db = odm::testing::database().unwrap();
    let inbox: Inbox<Note> = Inbox::open(&db, "inbox", 50, InboxVariant::Sequence).unwrap();
    for i in 0..260 {
        inbox.send("sam", &["ann"], &note(i)).unwrap();
    }
    let explain = inbox.explain_latest("ann", 50).unwrap();
    assert_eq!(explain.index_used(), Some("owner_1_seq_1"), "{explain}");
    assert!(explain.docs_examined <= 2, "{explain}");
    assert_eq!(inbox.latest("ann", 0, 50).unwrap().len(), 50);
}

#[test]
fn concurrent_senders_never_open_two_buckets() {
    let dir = std::env::temp_dir().join(format!("odm-inbox-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = if odm::testing::remote() {
        odm::testing::database().unwrap()
    } else {
        Database::open(dir.join("inbox.redb")).unwrap()
    };
    let inbox: Inbox<Note> = Inbox::open(&db, "inbox", 10, InboxVariant::OpenBucket).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let inbox = inbox.clone();
            scope.spawn(move || {
                for i in 0..25 {
                    inbox.send("sam", &["ann"], &note(t * 100 + i)).unwrap();
                }
            });
        }
    });
    let all = inbox.latest("ann", 0, 1_000).unwrap();
    assert_eq!(all.len(), 100);
    let buckets = inbox.buckets().collection();
    assert_eq!(buckets.count(bson::doc! { "owner": "ann" }).unwrap(), 10);
    let part_full = bson::doc! { "owner": "ann", "count": { "$lt": 10 } };
    assert_eq!(buckets.count(part_full).unwrap(), 0);
    drop(inbox);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Live delivery: a subscriber gets each new message of its own inbox once, in order, across
/// new buckets, and nothing of other owners, marks or deletes; a reader in another thread
/// waits for a sender instead of polling.
#[test]
fn a_subscriber_receives_its_new_messages_live() {
    for variant in [InboxVariant::OpenBucket, InboxVariant::Sequence] {
        let db = odm::testing::database().unwrap();
        let inbox: Inbox<Note> = Inbox::open(&db, "inbox", 3, variant).unwrap();
        let before = inbox.send("sam", &["ann"], &note(0)).unwrap();
        let mut ann = inbox.subscribe("ann").unwrap();
        assert!(
            ann.try_next().unwrap().is_none(),
            "earlier messages are not delivered"
        );
        for i in 1..=7 {
            inbox.send("sam", &["ann", "bob"], &note(i)).unwrap();
            inbox.send("sam", &["bob"], &note(100 + i)).unwrap();
        }
        assert!(inbox.mark_read("ann", before).unwrap());
        inbox.delete("ann", before).unwrap();
        inbox.send("sam", &["ann"], &note(8)).unwrap();
        let mut got = Vec::new();
        while let Some(envelope) = ann
            .next_timeout(std::time::Duration::from_millis(500))
            .unwrap()
        {
            got.push(envelope.message.text);
        }
        let expected: Vec<String> = (1..=8).map(|i| format!("note {i}")).collect();
        assert_eq!(got, expected, "{variant:?}");
        // A reader thread waits for the next message.
        let reader = std::thread::spawn(move || {
            ann.next_timeout(std::time::Duration::from_secs(20))
                .unwrap()
                .map(|e| e.message.text)
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        inbox.send("sam", &["ann"], &note(9)).unwrap();
        assert_eq!(reader.join().unwrap().as_deref(), Some("note 9"));
    }
}
