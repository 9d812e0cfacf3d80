//! S2: histories with retention: buckets by count with range queries, removal by date and
//! compaction (S2a); a fixed window (S2b); a document per day expired by TTL (S2c).

use bson::DateTime;
use odm_patterns::{Daily, History, Window};

fn t(minute: i64) -> DateTime {
    DateTime::from_millis(1_700_000_000_000 + minute * 60_000)
}

#[test]
fn buckets_by_count_answer_ranges_and_drop_old_events() {
    let db = odm::testing::database().unwrap();
    let history: History<String> = History::open(&db, "history", 3).unwrap();
    for m in 0..10 {
        history.record("ann", t(m), &format!("e{m}")).unwrap();
    }
    history.record("bob", t(4), &"b".to_owned()).unwrap();
    let events = history.range("ann", t(3), t(7)).unwrap();
    let names: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
    assert_eq!(names, ["e3", "e4", "e5", "e6"]);
    // The $elemMatch on the event times bounds their index: only overlapping buckets are read.
    let explain = history.explain_range("ann", t(3), t(7)).unwrap();
    assert_eq!(explain.index_used(), Some("item_times"), "{explain}");
    assert_eq!(explain.docs_examined, 2, "{explain}");
    // Retention: events before minute 5 go; the buckets left empty are deleted.
    assert_eq!(history.remove_before(t(5)).unwrap(), 2);
    assert_eq!(history.range("ann", t(0), t(100)).unwrap().len(), 5);
    assert!(history.range("bob", t(0), t(100)).unwrap().is_empty());
    // Compaction repacks the five remaining events into two buckets.
    assert_eq!(history.compact("ann").unwrap(), 2);
    let names: Vec<String> = history
        .range("ann", t(0), t(100))
        .unwrap()
        .into_iter()
        .map(|e| e.data)
        .collect();
    assert_eq!(names, ["e5", "e6", "e7", "e8", "e9"]);
}

#[test]
fn a_window_keeps_the_newest_events_in_order() {
    let db = odm::testing::database().unwrap();
    let window: Window<i32> = Window::open(&db, "recent", 5).unwrap();
    window.record("ann", &[(t(3), 3), (t(1), 1)]).unwrap();
    window
        .record("ann", &[(t(7), 7), (t(2), 2), (t(9), 9), (t(5), 5)])
        .unwrap();
    let kept: Vec<i32> = window
        .events("ann")
        .unwrap()
        .into_iter()
        .map(|e| e.data)
        .collect();
    assert_eq!(kept, [2, 3, 5, 7, 9]);
}

#[test]
fn days_expire_whole_by_ttl_while_active_days_stay() {
    let db = odm::testing::database().unwrap();
    let daily: Daily<String> =
        Daily::open(&db, "activity", std::time::Duration::from_hours(24)).unwrap();
    let day = 1_440;
    daily.record("ann", t(0), &"monday".into()).unwrap();
    daily.record("ann", t(day), &"tuesday".into()).unwrap();
    daily
        .record("ann", t(2 * day), &"wednesday".into())
        .unwrap();
    assert_eq!(daily.days("ann").unwrap().len(), 3);
    let tuesday: Vec<String> = daily
        .day("ann", t(day + 30))
        .unwrap()
        .into_iter()
        .map(|e| e.data)
        .collect();
    assert_eq!(tuesday, ["tuesday"]);
    // A day and a half after Tuesday's event: Monday and Tuesday are past their retention.
    let now = t(2 * day + 720 + 1);
    // On MongoDB the server's own monitor expires them, on its clock.
    if let Some(engine) = db.engine() {
        assert_eq!(engine.expire(now).unwrap(), 2);
        assert_eq!(daily.days("ann").unwrap().len(), 1);
    }
}
