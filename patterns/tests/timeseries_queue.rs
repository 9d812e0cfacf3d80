//! Time series buckets skipping what a range does not need; S13 counters; S10 queue.

use std::time::Duration;

use bson::DateTime;
use odm_patterns::{Counters, Queue, TimeSeries};
use serde::{Deserialize, Serialize};

fn at(minute: i64) -> DateTime {
    DateTime::from_millis(1_700_000_000_000 / 3_600_000 * 3_600_000 + minute * 60_000)
}

/// The start of the current hour, in milliseconds. A series with a retention gets its samples
/// from there, within the retention on the server's clock: on MongoDB a TTL monitor may run at
/// any moment of the test and would delete buckets of a date long past.
fn this_hour() -> i64 {
    DateTime::now().timestamp_millis() / 3_600_000 * 3_600_000
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Sensor {
    room: String,
}

#[test]
fn time_series_ranges_read_only_overlapping_buckets() {
    let start = this_hour();
    let at = |minute: i64| DateTime::from_millis(start + minute * 60_000);
    let db = odm::testing::database().unwrap();
    let series: TimeSeries<Sensor, f64> = TimeSeries::open(
        &db,
        "temperatures",
        Duration::from_hours(1),
        1_000,
        Some(Duration::from_hours(48)),
    )
    .unwrap();
    let kitchen = Sensor {
        room: "kitchen".into(),
    };
    let hall = Sensor {
        room: "hall".into(),
    };
    for m in 0..(6 * 60) {
        series
            .insert(&kitchen, at(m), &(20.0 + m as f64 / 100.0))
            .unwrap();
        if m % 10 == 0 {
            series.insert(&hall, at(m), &18.0).unwrap();
        }
    }
    // Two and a half hours of kitchen samples: three of its six hourly buckets.
    let samples = series.range(Some(&kitchen), at(90), at(240)).unwrap();
    assert_eq!(samples.len(), 150);
    assert_eq!(samples[0].at, at(90));
    let explain = series
        .explain_range(Some(&kitchen), at(90), at(240))
        .unwrap();
    assert_eq!(
        explain.index_used(),
        Some("owner_1_start_1_closed_1"),
        "{explain}"
    );
    assert!(explain.docs_examined <= 5, "{explain}");
    assert_eq!(series.range(None, at(0), at(30)).unwrap().len(), 33);
    // Retention: two days after the last sample, every bucket has expired.
    let later = DateTime::from_millis(at(6 * 60).timestamp_millis() + 49 * 3_600_000);
    // On MongoDB the server's own monitor expires them, on its clock.
    if let Some(engine) = db.engine() {
        assert_eq!(engine.expire(later).unwrap(), 12);
    }
}

#[test]
fn counters_record_one_event_with_one_upsert() {
    let db = odm::testing::database().unwrap();
    let counters = Counters::open(&db, "views").unwrap();
    counters.record("dune", at(5), 1).unwrap();
    counters.record("dune", at(5), 2).unwrap();
    counters.record("dune", at(61), 1).unwrap();
    let day = counters.day("dune", at(0)).unwrap();
    assert_eq!(day.total, 4);
    let hour = |m: i64| {
        usize::try_from(at(m).timestamp_millis().rem_euclid(86_400_000) / 3_600_000).unwrap()
    };
    assert_eq!(day.hours[hour(5)], 3);
    assert_eq!(day.hours[hour(61)], 1);
    assert_eq!(day.minutes.iter().sum::<i64>(), 4);
    assert_eq!(counters.day("emma", at(0)).unwrap().total, 0);
}

#[test]
fn the_queue_hands_out_the_most_urgent_job_once_and_requeues_timeouts() {
    let db = odm::testing::database().unwrap();
    let queue: Queue<String> = Queue::open(&db, "loans").unwrap();
    queue.push(&"low".to_owned(), 1, at(0)).unwrap();
    queue.push(&"urgent".to_owned(), 9, at(1)).unwrap();
    queue.push(&"urgent later".to_owned(), 9, at(2)).unwrap();
    let (first, job) = queue.take(at(10)).unwrap().unwrap();
    assert_eq!(job, "urgent");
    let (_, job) = queue.take(at(11)).unwrap().unwrap();
    assert_eq!(job, "urgent later");
    assert!(queue.complete(first).unwrap());
    // Seven days later the unfinished one goes back and is taken again.
    let week = DateTime::from_millis(at(11).timestamp_millis() + 7 * 86_400_000 + 1);
    assert_eq!(
        queue
            .requeue_expired(week, Duration::from_hours(7 * 24))
            .unwrap(),
        1
    );
    assert_eq!(queue.take(week).unwrap().unwrap().1, "urgent later");
    assert_eq!(queue.take(week).unwrap().unwrap().1, "low");
    assert!(queue.take(week).unwrap().is_none());
}
