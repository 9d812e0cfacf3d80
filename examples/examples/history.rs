//! S2 histories with retention and S13 pre-aggregated counters, plus time-series buckets.
//!
//! `cargo run --release --example history`

use std::time::Duration;

use bson::DateTime;
use odm::Database;
use odm_patterns::{Counters, Daily, History, TimeSeries, Window};

fn minute(m: i64) -> DateTime {
    DateTime::from_millis(1_767_225_600_000 + m * 60_000)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let db = Database::in_memory()?;

    println!("S2a: events in buckets of 50, queried by time with $elemMatch");
    let history: History<String> = History::open(&db, "history", 50)?;
    for m in 0..1_000 {
        history.record("ann", minute(m), &format!("event {m}"))?;
    }
    let explain = history.explain_range("ann", minute(400), minute(460))?;
    println!(
        "  60 minutes out of 1000 events: {} events from {} bucket(s) of {}, via {}",
        history.range("ann", minute(400), minute(460))?.len(),
        explain.docs_examined,
        1_000 / 50,
        explain.index_used().unwrap_or("a scan")
    );
    let deleted = history.remove_before(minute(730))?;
    println!("  retention: events before minute 730 pulled, {deleted} emptied bucket(s) deleted");
    println!(
        "  compaction: {} full bucket(s) after repacking",
        history.compact("ann")?
    );

    println!("S2b: the newest 5 events in one document ($push with $each, $sort, $slice)");
    let window: Window<i32> = Window::open(&db, "recent", 5)?;
    window.record("ann", &[(minute(3), 3), (minute(1), 1), (minute(8), 8)])?;
    window.record("ann", &[(minute(2), 2), (minute(9), 9), (minute(7), 7)])?;
    let kept: Vec<i32> = window.events("ann")?.into_iter().map(|e| e.data).collect();
    println!("  kept {kept:?}");

    println!("S2c: a bucket per user per day, a TTL index on its latest event");
    let daily: Daily<String> = Daily::open(&db, "activity", Duration::from_hours(24 * 365))?;
    for day in 0..3 {
        daily.record("ann", minute(day * 1_440), &format!("day {day}"))?;
    }
    let year_later = DateTime::from_millis(minute(1_440).timestamp_millis() + 365 * 86_400_000 + 1);
    let expired = db
        .engine()
        .expect("an embedded database")
        .expire(year_later)?;
    println!(
        "  a year after day 1: {expired} day(s) expired, {} left",
        daily.days("ann")?.len()
    );

    println!("Time series: hourly buckets per sensor with their min and max times");
    let series: TimeSeries<String, f64> =
        TimeSeries::open(&db, "temperatures", Duration::from_hours(1), 500, None)?;
    for m in 0..(24 * 60) {
        series.insert(
            &"kitchen".to_owned(),
            minute(m),
            &(19.0 + (m % 120) as f64 / 60.0),
        )?;
    }
    let explain = series.explain_range(Some(&"kitchen".to_owned()), minute(600), minute(690))?;
    println!(
        "  90 minutes of 24 hours: {} samples from {} of 24 buckets",
        series
            .range(Some(&"kitchen".to_owned()), minute(600), minute(690))?
            .len(),
        explain.docs_examined
    );

    println!("S13: views per book per day, minutes nested in hours, one upsert per view");
    let views = Counters::open(&db, "views")?;
    for m in [5, 5, 61, 1_439] {
        views.record("dune", minute(m), 1)?;
    }
    let day = views.day("dune", minute(0))?;
    println!(
        "  total {}, hour 0: {}, hour 1: {}, hour 23: {}",
        day.total, day.hours[0], day.hours[1], day.hours[23]
    );
    Ok(())
}
